"""python -m multireduce.bench_dask: multireduce.dask.statistics on a CuPy-backed Dask array held by a
dask_cuda.LocalCUDACluster (one worker per GPU), beside dask.compute of Dask's own mean, var, min,
max, argmin and argmax of the same array on the same cluster (one pass of the graph for all six),
and the same figures on one worker. The array (2^32 float32 by default: 16 GiB, chunks of 2^27 and
of 2^28 elements) is made and persisted on the workers first; each figure is the median of 5 runs after a warm-up.
Before anything is timed, our statistics are checked against Dask's results (min, max, argmin,
argmax exactly; mean and var within 1e-6 relative).

    python -m multireduce.bench_dask [--log2 32] [--chunk-log2 27 28] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics as pystats
import sys
import time


def _median_time(fn, runs=5):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return pystats.median(times)


def _row(client, workers, log2, chunk_log2):
    import cupy as cp
    import dask
    import dask.array as da
    import distributed

    import multireduce.dask as mrd

    n, chunk = 1 << log2, 1 << chunk_log2

    def normal_chunk(block_info=None):
        (index,) = block_info[None]["chunk-location"]
        (size,) = block_info[None]["chunk-shape"]
        return cp.random.default_rng(index).standard_normal(size, dtype=cp.float32)

    x = da.map_blocks(normal_chunk, chunks=((chunk,) * (n // chunk),), dtype="float32",
                      meta=cp.empty(0, dtype=cp.float32)).persist()
    distributed.wait(x)

    ours = mrd.statistics(x)
    theirs = dask.compute(x.mean(), x.var(), x.min(), x.max(), x.argmin(), x.argmax())
    theirs = [float(v.get()) if hasattr(v, "get") else float(v) for v in theirs]
    ok = (float(ours.min) == theirs[2] and float(ours.max) == theirs[3] and int(ours.argmin) == int(theirs[4])
          and int(ours.argmax) == int(theirs[5]) and math.isclose(float(ours.mean), theirs[0], rel_tol=1e-6, abs_tol=1e-6)
          and math.isclose(float(ours.var), theirs[1], rel_tol=1e-6))
    if not ok:
        print(f"VERIFY FAILED dask: ours {ours} against Dask's {theirs}", file=sys.stderr)
    t_ours = _median_time(lambda: mrd.statistics(x))
    t_theirs = _median_time(lambda: dask.compute(x.mean(), x.var(), x.min(), x.max(), x.argmin(), x.argmax()))
    del x
    return {"workers": workers, "elements": n, "chunk": chunk, "dtype": "float32",
            "multireduce_dask_statistics_s": t_ours, "dask_six_reductions_s": t_theirs,
            "speedup": t_theirs / t_ours, "gb_per_s": 4 * n / t_ours / 1e9, "verified": ok}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=32)
    parser.add_argument("--chunk-log2", type=int, nargs="+", default=[27, 28],
                        help="chunk sizes to measure (2^27: 512 MiB of float32, 2^28: 1 GiB)")
    parser.add_argument("--json")
    args = parser.parse_args()
    from dask.distributed import Client
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        sys.exit("dask_cuda is not installed: pip install dask-cuda")
    from multireduce import _arrays, _backends, _core
    reader = _backends.reader_of_dlpack(_arrays.DL_CUDA)  # the backend of the GPUs' memory
    gpus = _core.device_count(reader.name) if reader is not None else 0
    rows = []
    for workers in sorted({1, gpus}):
        visible = ",".join(str(d) for d in range(workers))
        with LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, dashboard_address=None) as cluster, Client(cluster) as client:
            for chunk_log2 in args.chunk_log2:
                rows.append(_row(client, workers, args.log2, chunk_log2))
                _print(rows[-1], args.log2, chunk_log2)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"dask_statistics": rows}, f, indent=2)
    return 0 if all(r["verified"] for r in rows) else 1


def _print(row, log2, chunk_log2):
    workers = row["workers"]
    print(f"{workers} worker(s), 2^{log2} float32 (CuPy chunks of 2^{chunk_log2}): "
          f"multireduce.dask.statistics {row['multireduce_dask_statistics_s'] * 1e3:9.1f} ms "
          f"({row['gb_per_s']:.0f} GB/s), Dask's mean+var+min+max+argmin+argmax "
          f"{row['dask_six_reductions_s'] * 1e3:9.1f} ms: {row['speedup']:.1f}x (bar 5x)"
          + ("" if row["verified"] else "  VERIFY FAILED"))


if __name__ == "__main__":
    sys.exit(main())
