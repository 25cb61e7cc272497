"""Statistics of a chunked array on a local Dask cluster with multireduce.dask: one pass over the
chunks for all eleven statistics, a sliding-window maximum across chunk boundaries, and a check
against Dask's own reductions.

    PYTHONPATH=build/<preset>/python python examples/dask_statistics.py
(on a GPU machine: dask_cuda.LocalCUDACluster() and CuPy chunks, x.map_blocks(cupy.asarray))
"""

import numpy as np
import dask
import dask.array as da
from distributed import Client, LocalCluster

import multireduce.dask as mrd


def main():
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster):
        rs = da.random.RandomState(2026)
        x = rs.normal(10.0, 2.0, size=4_000_000, chunks=250_000).astype(np.float32)
        x = x.persist()  # the chunks stay on the workers for both jobs

        # one graph: statistics and a 1001-sample moving maximum, computed together
        stats, peaks = dask.compute(mrd.statistics(x, compute=False), mrd.window_reduce(x, 1001, "max", compute=False))
        print(f"n={int(stats.count)} mean={float(stats.mean):.6f} std={float(stats.std):.6f} "
              f"min={float(stats.min):.4f}@{int(stats.argmin)} max={float(stats.max):.4f}@{int(stats.argmax)}")
        print(f"{peaks.size} window maxima, the first {peaks[:3]}")

        # the same figures from Dask's own reductions (several passes)
        mean, std, lo, hi, arg = dask.compute(x.mean(dtype=np.float64), x.std(dtype=np.float64), x.min(), x.max(),
                                              x.argmin())
        assert np.isclose(float(stats.mean), mean, rtol=1e-12) and np.isclose(float(stats.std), std, rtol=1e-9)
        assert stats.min == lo and stats.max == hi and int(stats.argmin) == int(arg)
        assert float(peaks.max()) == float(hi)
        print("multireduce.dask agrees with dask.array")


if __name__ == "__main__":
    main()
