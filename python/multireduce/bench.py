"""multireduce from Python against what Python users use instead, in one process: on the GPU PyTorch
and CuPy (each result verified against the peer's before either is timed; medians of CUDA events
around one call, so the host cost of a call counts; per-call host cost: wall time over many
back-to-back calls), on the CPU NumPy and OpenCV's BFMatcher (wall-time medians).

    python -m multireduce.bench [--json OUT.json] [--quick] [--cpu]

The cases: eleven statistics of 2^28 floats; 2M segments of 0..64 floats; a sliding max,
W = 1000, over 2^26 floats; 65,536 x 65,536 256-bit descriptors matched (k = 2); a whole-array
sum of 2^14 floats (call overhead; and replayed from a CUDA graph of 100 calls), beside the floor of
any GPU call from Python (an empty kernel launched through CuPy).
"""

from __future__ import annotations

import argparse
import json
import statistics as pystats
import sys
import time

import numpy as np

import multireduce as mr
from multireduce._backends import HOST_BACKEND


def wall_median(fn, runs=7, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return pystats.median(times)


def cpu_main(args):
    """The CPU bars: a 2^26-float sum against numpy.sum, the matcher against cv2.BFMatcher."""
    import os
    import pathlib

    rows = []
    rng = np.random.default_rng(18)
    x = rng.standard_normal(1 << (20 if args.quick else 26)).astype(np.float32)
    assert mr.reduce(x).tobytes() == np.sum(x).tobytes()
    peer, ours = wall_median(lambda: np.sum(x), runs=21), wall_median(lambda: mr.reduce(x), runs=21)
    rows.append(dict(case=f"sum of 2^{x.size.bit_length() - 1} float32 (NumPy array)", peer="numpy.sum",
                     peer_us=peer, multireduce_us=ours, speedup=peer / ours, note=""))
    try:
        import cv2
    except ImportError:
        cv2 = None
    d = pathlib.Path(args.data)
    if cv2 is not None and (d / "query_orb256.npy").exists():
        for kind in ("orb256", "brisk512"):
            q, t = np.load(d / f"query_{kind}.npy"), np.load(d / f"train_{kind}.npy")
            bf = cv2.BFMatcher(cv2.NORM_HAMMING)

            def opencv():
                kept = []
                for pair in bf.knnMatch(q, t, k=2):
                    if len(pair) == 2 and pair[0].distance < 0.8 * pair[1].distance:
                        kept.append((pair[0].queryIdx, pair[0].trainIdx, int(pair[0].distance)))
                return np.array(kept, np.int32).reshape(-1, 3)

            want = opencv()
            got = mr.match(q, t, ratio=0.8, backend=HOST_BACKEND)
            assert np.array_equal(got, want), "matches differ from OpenCV's"
            peer = wall_median(opencv, runs=5)
            ours = wall_median(lambda: mr.match(q, t, ratio=0.8, backend=HOST_BACKEND), runs=5)
            rows.append(dict(case=f"match, ratio 0.8, {len(q)} x {len(t)} {kind}", peer=f"cv2.BFMatcher {cv2.__version__}",
                             peer_us=peer, multireduce_us=ours, speedup=peer / ours,
                             note=f"{len(got)} matches, {os.cpu_count()} CPU threads"))
        rows.append(collection_row(args, cv2, rng))
    else:
        print("bench: no cv2 (pip install opencv-python-headless) or no sample pair: matcher row left out",
              file=sys.stderr)
    for r in rows:
        print(f"{r['case']:<50} {r['peer']:<24} {r['peer_us']:>12.1f} us {r['multireduce_us']:>12.1f} us "
              f"{r['speedup']:>7.2f}x  {r['note']}")
    return rows


def collection_row(args, cv2, rng):
    """A collection matched on the CPU: 50 images x 2000 random ORB-256 descriptors, every pair, the
    ratio test (0.8), mr.match_all against cv2.BFMatcher.knnMatch (k = 2) pair by pair; every pair's
    matches checked equal first."""
    import os

    images, rows = (10, 500) if args.quick else (50, 2000)
    descriptors = [rng.integers(0, 256, (rows, 32), dtype=np.uint8) for _ in range(images)]
    bf = cv2.BFMatcher(cv2.NORM_HAMMING)

    def opencv():
        found = []
        for i in range(images):
            for j in range(i + 1, images):
                kept = [(m.queryIdx, m.trainIdx, int(m.distance)) for m, n in bf.knnMatch(descriptors[i], descriptors[j], k=2)
                        if m.distance < 0.8 * n.distance]
                found.append(np.array(kept, np.int32).reshape(-1, 3))
        return found

    want = opencv()
    got = mr.match_all(descriptors, ratio=0.8, backend=HOST_BACKEND)
    for p, rows_p in enumerate(want):
        assert np.array_equal(got.matches[got.offsets[p]:got.offsets[p + 1]], rows_p), "matches differ from OpenCV's"
    peer = wall_median(opencv, runs=3, warmup=0)
    ours = wall_median(lambda: mr.match_all(descriptors, ratio=0.8, backend=HOST_BACKEND), runs=3)
    pairs = images * (images - 1) // 2
    return dict(case=f"match_all, ratio 0.8, {images} images x {rows} orb256 ({pairs} pairs)",
                peer=f"cv2.BFMatcher {cv2.__version__} per pair", peer_us=peer, multireduce_us=ours,
                speedup=peer / ours, note=f"{len(got.matches)} matches, {os.cpu_count()} CPU threads")


def event_median(fn, stream, runs=20, warmup=3):
    import torch

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        fn()
        stop.record(stream)
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)  # us
    return pystats.median(times)


def graph_of(fn, calls=100):
    """(a torch.cuda.CUDAGraph of `calls` calls of fn, their results), captured as PyTorch's docs
    say: warmed up on a side stream first."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        results = [fn() for _ in range(calls)]
    return graph, results


def call_overhead(fn, calls=2000):
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best.append((time.perf_counter() - t0) / calls * 1e6)
    return pystats.median(best)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    parser.add_argument("--data", default="tests/data/match/astronaut_warp",
                        help="the sample image pair's descriptors (the repository's, from its root)")
    parser.add_argument("--profile", action="store_true", help="also time the pieces of one call (host time)")
    parser.add_argument("--cpu", action="store_true", help="the CPU rows only (NumPy, OpenCV): no GPU needed")
    args = parser.parse_args()
    if args.cpu:
        rows = cpu_main(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(machine="cpu", numpy=np.__version__, multireduce=mr.__version__,
                               date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)
        return 0

    try:
        import cupy
        import torch
    except ImportError as e:
        print(f"peers: needs PyTorch and CuPy with CUDA ({e}); --cpu times the CPU rows", file=sys.stderr)
        return 1
    if not torch.cuda.is_available() or not mr.cuda_available():
        print("peers: needs a GPU with PyTorch and multireduce's CUDA backend; --cpu times the CPU rows", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    stream = torch.cuda.current_stream()
    g = torch.Generator(device=dev).manual_seed(18)
    rows = []

    def row(case, peer, peer_us, ours_us, note=""):
        rows.append(dict(case=case, peer=peer, peer_us=peer_us, multireduce_us=ours_us, speedup=peer_us / ours_us,
                         note=note))
        print(f"{case:<44} {peer:<34} {peer_us:>11.1f} us {ours_us:>10.1f} us {peer_us / ours_us:>8.1f}x  {note}")

    print(f"peers on {torch.cuda.get_device_name()}, torch {torch.__version__}, cupy {cupy.__version__}, "
          f"multireduce {mr.__version__}")
    print(f"{'case':<44} {'peer':<34} {'peer':>14} {'multireduce':>13} {'speedup':>9}")

    # The host-bound rows first, over more calls: one call's event-timed figure spreads widely with
    # the host (see docs/python.md, "Speed").
    host_bound = dict(runs=200, warmup=20)
    # The floor of any GPU call from Python on this host: one launch of an empty kernel through
    # CuPy's binding of the driver (no argument handling, no result), event-timed the same way.
    try:
        empty = cupy.RawKernel('extern "C" __global__ void empty() {}', "empty")
        empty((1,), (1,), ())  # compiled and loaded before it is timed
        function, raw_stream = empty.kernel.ptr, stream.cuda_stream
        floor_us = event_median(lambda: cupy.cuda.driver.launchKernel(function, 1, 1, 1, 1, 1, 1, 0, raw_stream, 0, 0),
                                stream, **host_bound)
        print(f"{'floor: an empty kernel launched from Python':<44} {'(the least any GPU call costs)':<34} "
              f"{floor_us:>11.1f} us")
    except Exception as e:  # (a CuPy without NVRTC or the driver binding: the row is left out)
        floor_us = None
        print(f"floor: not measured ({type(e).__name__}: {e})")
    # whole-array sums: event-timed around one call (the anchor's method), then the host cost
    # of back-to-back calls at 2^14
    for p in (14, 22, 28):
        x = torch.randn(1 << p, device=dev, generator=g)
        xc = cupy.asarray(x)
        assert abs(float(mr.reduce(x)) - float(x.sum())) <= 1e-3 * max(1.0, abs(float(x.sum())))
        row(f"sum of 2^{p} float32", "torch.sum", event_median(lambda: torch.sum(x), stream, **host_bound),
            event_median(lambda: mr.reduce(x), stream, **host_bound))
        row(f"sum of 2^{p} float32", "cupy.sum", event_median(lambda: cupy.sum(xc), stream, **host_bound),
            event_median(lambda: mr.reduce(xc), stream, **host_bound))
    x = torch.randn(1 << 14, device=dev, generator=g)
    xc = cupy.asarray(x)
    row("sum of 2^14 float32 (per call, back to back)", "torch.sum", call_overhead(lambda: torch.sum(x)),
        call_overhead(lambda: mr.reduce(x)))
    if args.profile:  # where a call's host time goes (no peer: each piece alone)
        from . import _api, _arrays, _backends, _core, _results

        gpu_backend = _backends.reader_of_dlpack(_arrays.DL_CUDA).name  # the backend that reads x in place
        a = _arrays.operand(x)
        whole, _ = _api._whole("sum", a.dtype)  # the cached whole-array Job, as mr.reduce passes it
        slab = torch.empty(1024, dtype=torch.float32, device=dev)
        out = slab.data_ptr()
        pieces = {
            "mr.reduce (torch input)": lambda: mr.reduce(x),
            "operand (torch, its fast reader)": lambda: _arrays.operand(x),
            "operand (CuPy, its fast reader)": lambda: _arrays.operand(xc),
            "import_general (torch)": lambda: _arrays.import_general(x, "x", None),
            "scalar_slabs.reserve": lambda: _results.scalar_slabs.reserve(a, a.dtype),
            "slab[7]": lambda: slab[7],
            "_core.reduce alone (whole Job)": lambda: _core.reduce(a, whole, out, gpu_backend),
            "_core.device_count (a bare call)": lambda: _core.device_count(gpu_backend),
            "x.new_empty((2000000,))": lambda: x.new_empty((2_000_000,)),
            "x.__dlpack__(stream)": lambda: x.__dlpack__(stream=1),
        }
        for label, fn in pieces.items():
            print(f"  profile: {label:<38} {call_overhead(fn):8.2f} us per call")

    row("sum of 2^14 float32 (per call, back to back)", "cupy.sum", call_overhead(lambda: cupy.sum(xc)),
        call_overhead(lambda: mr.reduce(xc)))
    # The same calls captured into a CUDA graph (torch.cuda.graph) of 100 calls and replayed with new
    # data: a replay's event time over 100, what a call costs once Python and the launches are gone.
    ours_graph, ours_results = graph_of(lambda: mr.reduce(x))
    torch_graph, torch_results = graph_of(lambda: torch.sum(x))
    x.copy_(torch.randn(1 << 14, device=dev, generator=g))  # new data in the captured input
    ours_graph.replay()
    torch_graph.replay()
    assert torch.equal(ours_results[-1], mr.reduce(x)), "a replayed sum differs from an eager call's"
    assert torch.equal(torch_results[-1], torch.sum(x))
    row("sum of 2^14 float32 (CUDA graph of 100 calls, per call)", "torch.sum",
        event_median(torch_graph.replay, stream) / 100, event_median(ours_graph.replay, stream) / 100,
        "torch.cuda.graph, replayed")

    # 2M segments of 0..64 floats
    segments = (1 << 16) if args.quick else 2_000_000
    lengths = torch.randint(0, 65, (segments,), device=dev, generator=g)
    offsets = torch.zeros(segments + 1, dtype=torch.int64, device=dev)
    offsets[1:] = torch.cumsum(lengths, 0)
    total = int(offsets[-1])
    data = torch.randn(total, device=dev, generator=g)
    want = torch.segment_reduce(data, "sum", lengths=lengths, unsafe=True)
    torch.testing.assert_close(mr.segmented_reduce(data, "sum", offsets=offsets), want, rtol=1e-4, atol=1e-4)
    assert torch.equal(mr.segmented_reduce(data, "sum", offsets=offsets, check_offsets=False),
                       mr.segmented_reduce(data, "sum", offsets=offsets))
    # like with like: both check the offsets (and wait for the GPU to say so), or neither does
    row(f"{segments} segments of 0..64 float32 (sum)", "torch.segment_reduce(unsafe=False)",
        event_median(lambda: torch.segment_reduce(data, "sum", lengths=lengths), stream, **host_bound),
        event_median(lambda: mr.segmented_reduce(data, "sum", offsets=offsets), stream, **host_bound),
        "both check the offsets on the GPU and read the verdict back")
    row(f"{segments} segments of 0..64 float32 (sum)", "torch.segment_reduce(unsafe=True)",
        event_median(lambda: torch.segment_reduce(data, "sum", lengths=lengths, unsafe=True), stream, **host_bound),
        event_median(lambda: mr.segmented_reduce(data, "sum", offsets=offsets, check_offsets=False), stream, **host_bound),
        "neither checks: mr.segmented_reduce(..., check_offsets=False)")

    # eleven statistics of 2^28 floats
    n = 1 << (22 if args.quick else 28)
    x = torch.randn(n, device=dev, generator=g)

    def torch_stats():  # the anchor's calls: sum, var_mean, aminmax, argmin, argmax, abs-sum, norm
        var, mean = torch.var_mean(x, unbiased=False)
        lo, hi = torch.aminmax(x)
        return x.sum(), mean, var, lo, x.argmin(), hi, x.argmax(), x.abs().sum(), x.norm()

    ours = mr.statistics(x)
    s, mean, var, lo, amin, hi, amax, l1, l2 = torch_stats()
    assert int(ours.count) == n and int(ours.argmin) == int(amin) and int(ours.argmax) == int(amax)
    assert float(ours.min) == float(lo) and float(ours.max) == float(hi)
    for a, b in zip((ours.sum, ours.mean, ours.var, ours.l1, ours.l2), (s, mean, var, l1, l2)):
        assert abs(float(a) - float(b)) <= 1e-3 * max(1.0, abs(float(b))), (float(a), float(b))
    row(f"11 statistics of 2^{n.bit_length() - 1} float32", "torch, 7 calls", event_median(torch_stats, stream),
        event_median(lambda: mr.statistics(x), stream))
    xc = cupy.asarray(x)
    row(f"11 statistics of 2^{n.bit_length() - 1} float32", "(the same, on a CuPy array)", event_median(torch_stats, stream),
        event_median(lambda: mr.statistics(xc), stream))

    # fixed-length segments of 2^26 floats
    n = 1 << (20 if args.quick else 26)
    x = torch.randn(n, device=dev, generator=g)
    xc = cupy.asarray(x)
    for length in (1, 4, 32, 1024):
        want = x.view(-1, length).sum(1)
        torch.testing.assert_close(mr.segmented_reduce(x, "sum", segment_length=length), want, rtol=1e-4, atol=1e-4)
        ours_us = event_median(lambda: mr.segmented_reduce(x, "sum", segment_length=length), stream)
        row(f"2^{n.bit_length() - 1} float32, segments of L = {length} (sum)", "x.view(-1, L).sum(1)",
            event_median(lambda: x.view(-1, length).sum(1), stream), ours_us)
        row(f"2^{n.bit_length() - 1} float32, segments of L = {length} (sum)", "cupy x.reshape(-1, L).sum(1)",
            event_median(lambda: xc.reshape(-1, length).sum(1), stream),
            event_median(lambda: mr.segmented_reduce(xc, "sum", segment_length=length), stream))

    # sliding max, W = 3 / 32 / 1000, over 2^26 floats
    n = 1 << (20 if args.quick else 26)
    x = torch.randn(n, device=dev, generator=g)
    xc = cupy.asarray(x)
    from cupy.lib.stride_tricks import sliding_window_view

    for w in (3, 32, 1000):
        want = x.unfold(0, w, 1).amax(-1)
        assert torch.equal(mr.window_reduce(x, w, "max"), want)
        assert bool((mr.window_reduce(xc, w, "max") == sliding_window_view(xc, w).max(-1)).all())
        row(f"sliding max W={w} over 2^{n.bit_length() - 1} float32", "x.unfold(0, W, 1).amax(-1)",
            event_median(lambda: x.unfold(0, w, 1).amax(-1), stream, runs=10),
            event_median(lambda: mr.window_reduce(x, w, "max"), stream))
        row(f"sliding max W={w} over 2^{n.bit_length() - 1} float32", "cupy sliding_window_view().max(-1)",
            event_median(lambda: sliding_window_view(xc, w).max(-1), stream, runs=5),
            event_median(lambda: mr.window_reduce(xc, w, "max"), stream))

    # the matcher: 65,536 x 65,536 256- and 512-bit descriptors, k = 2
    m = 8192 if args.quick else 65536
    shifts = torch.arange(8, device=dev, dtype=torch.uint8)

    def signs(d):  # bits as +-1 int8: hamming = (bits - <a, b>) / 2
        bits = (d.unsqueeze(-1) >> shifts) & 1
        return (bits.reshape(d.shape[0], -1).to(torch.int8) * 2 - 1).contiguous()

    for width in (32, 64):
        q = torch.randint(0, 256, (m, width), dtype=torch.uint8, device=dev, generator=g)
        t = torch.randint(0, 256, (m, width), dtype=torch.uint8, device=dev, generator=g)
        qs, ts_t = signs(q), signs(t).t().contiguous()

        def torch_knn():
            dists, idxs = [], []
            for first in range(0, m, 8192):
                dot = torch._int_mm(qs[first:first + 8192], ts_t)
                top, idx = torch.topk(dot, 2, dim=1)
                dists.append((8 * width - top) // 2)
                idxs.append(idx)
            return torch.cat(dists), torch.cat(idxs)

        want_dist, _ = torch_knn()
        dist, idx = mr.knn_hamming(q, t, 2)
        assert torch.equal(dist, want_dist.to(torch.int32)), "distances differ from PyTorch's"
        peer_us = event_median(torch_knn, stream, runs=5, warmup=1)
        ours_us = event_median(lambda: mr.knn_hamming(q, t, 2), stream, runs=5, warmup=1)
        comparisons = m * m
        row(f"knn k=2, {m} x {m} {8 * width}-bit", "torch._int_mm + topk (int8 bits)", peer_us, ours_us,
            f"{comparisons / peer_us / 1e6:.3f} vs {comparisons / ours_us / 1e6:.2f} T comparisons/s")
        del qs, ts_t

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, cupy=cupy.__version__,
                           multireduce=mr.__version__, date=time.strftime("%Y-%m-%d"),
                           floor_one_gpu_call_us=floor_us, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
