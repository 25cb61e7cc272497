"""multireduce from Python against what Python users use instead, in one process: on the GPU PyTorch
and CuPy (each result verified against the peer's before either is timed; medians of CUDA events
around one call, so the host cost of a call counts; per-call host cost: wall time over many
back-to-back calls), on the CPU NumPy and OpenCV's BFMatcher (wall-time medians).

 timing (see docs/python.md, "Speed").python -m multireduce.bench [--json OUT.json] [--quick] [--cpu]

The cases are those of issue 18 and ../shared/anchors.md ("Python peers"): eleven statistics of
2^28 floats; 2M segments of 0..64 floats; a sliding max, W = 1000, over 2^26 floats; 65,536 x
65,536 256-bit descriptors matched (k = 2); a whole-array sum of 2^14 floats (call overhead).
"""

from __future__ import annotations

import argparse
import json
import statistics as pystats
import sys
import time

import numpy as np

import multireduce as mr


def wall_median(fn, runs=7, warmup=1):
 timing (see docs/python.md, "Speed").for _ in range(warmup):
 timing (see docs/python.md, "Speed").    fn()
 timing (see docs/python.md, "Speed").times = []
 timing (see docs/python.md, "Speed").for _ in range(runs):
 timing (see docs/python.md, "Speed").    t0 = time.perf_counter()
 timing (see docs/python.md, "Speed").    fn()
 timing (see docs/python.md, "Speed").    times.append((time.perf_counter() - t0) * 1e6)
 timing (see docs/python.md, "Speed").return pystats.median(times)


def cpu_main(args):
 timing (see docs/python.md, "Speed")."""The CPU bars: a 2^26-float sum against numpy.sum, the matcher against cv2.BFMatcher."""
 timing (see docs/python.md, "Speed").import os
 timing (see docs/python.md, "Speed").import pathlib

 timing (see docs/python.md, "Speed").rows = []
 timing (see docs/python.md, "Speed").rng = np.random.default_rng(18)
 timing (see docs/python.md, "Speed").x = rng.standard_normal(1 << (20 if args.quick else 26)).astype(np.float32)
 timing (see docs/python.md, "Speed").assert mr.reduce(x).tobytes() == np.sum(x).tobytes()
 timing (see docs/python.md, "Speed").peer, ours = wall_median(lambda: np.sum(x), runs=21), wall_median(lambda: mr.reduce(x), runs=21)
 timing (see docs/python.md, "Speed").rows.append(dict(case=f"sum of 2^{x.size.bit_length() - 1} float32 (NumPy array)", peer="numpy.sum",
 timing (see docs/python.md, "Speed").                 peer_us=peer, multireduce_us=ours, speedup=peer / ours, note=""))
 timing (see docs/python.md, "Speed").try:
 timing (see docs/python.md, "Speed").    import cv2
 timing (see docs/python.md, "Speed").except ImportError:
 timing (see docs/python.md, "Speed").    cv2 = None
 timing (see docs/python.md, "Speed").d = pathlib.Path(args.data)
 timing (see docs/python.md, "Speed").if cv2 is not None and (d / "query_orb256.npy").exists():
 timing (see docs/python.md, "Speed").    for kind in ("orb256", "brisk512"):
 timing (see docs/python.md, "Speed").        q, t = np.load(d / f"query_{kind}.npy"), np.load(d / f"train_{kind}.npy")
 timing (see docs/python.md, "Speed").        bf = cv2.BFMatcher(cv2.NORM_HAMMING)

 timing (see docs/python.md, "Speed").        def opencv():
 timing (see docs/python.md, "Speed").            kept = []
 timing (see docs/python.md, "Speed").            for pair in bf.knnMatch(q, t, k=2):
 timing (see docs/python.md, "Speed").                if len(pair) == 2 and pair[0].distance < 0.8 * pair[1].distance:
 timing (see docs/python.md, "Speed").                    kept.append((pair[0].queryIdx, pair[0].trainIdx, int(pair[0].distance)))
 timing (see docs/python.md, "Speed").            return np.array(kept, np.int32).reshape(-1, 3)

 timing (see docs/python.md, "Speed").        want = opencv()
 timing (see docs/python.md, "Speed").        got = mr.match(q, t, ratio=0.8, backend="cpu")
 timing (see docs/python.md, "Speed").        assert np.array_equal(got, want), "matches differ from OpenCV's"
 timing (see docs/python.md, "Speed").        peer = wall_median(opencv, runs=5)
 timing (see docs/python.md, "Speed").        ours = wall_median(lambda: mr.match(q, t, ratio=0.8, backend="cpu"), runs=5)
 timing (see docs/python.md, "Speed").        rows.append(dict(case=f"match, ratio 0.8, {len(q)} x {len(t)} {kind}", peer=f"cv2.BFMatcher {cv2.__version__}",
 timing (see docs/python.md, "Speed").                         peer_us=peer, multireduce_us=ours, speedup=peer / ours,
 timing (see docs/python.md, "Speed").                         note=f"{len(got)} matches, {os.cpu_count()} CPU threads"))
 timing (see docs/python.md, "Speed").else:
 timing (see docs/python.md, "Speed").    print("bench: no cv2 (pip install opencv-python-headless) or no sample pair: matcher row left out",
 timing (see docs/python.md, "Speed").          file=sys.stderr)
 timing (see docs/python.md, "Speed").for r in rows:
 timing (see docs/python.md, "Speed").    print(f"{r['case']:<50} {r['peer']:<24} {r['peer_us']:>12.1f} us {r['multireduce_us']:>12.1f} us "
 timing (see docs/python.md, "Speed").          f"{r['speedup']:>7.2f}x  {r['note']}")
 timing (see docs/python.md, "Speed").return rows


def event_median(fn, stream, runs=20, warmup=3):
 timing (see docs/python.md, "Speed").import torch

 timing (see docs/python.md, "Speed").for _ in range(warmup):
 timing (see docs/python.md, "Speed").    fn()
 timing (see docs/python.md, "Speed").times = []
 timing (see docs/python.md, "Speed").for _ in range(runs):
 timing (see docs/python.md, "Speed").    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
 timing (see docs/python.md, "Speed").    start.record(stream)
 timing (see docs/python.md, "Speed").    fn()
 timing (see docs/python.md, "Speed").    stop.record(stream)
 timing (see docs/python.md, "Speed").    stop.synchronize()
 timing (see docs/python.md, "Speed").    times.append(start.elapsed_time(stop) * 1e3)  # us
 timing (see docs/python.md, "Speed").return pystats.median(times)


def call_overhead(fn, calls=2000):
 timing (see docs/python.md, "Speed").import torch

 timing (see docs/python.md, "Speed").for _ in range(50):
 timing (see docs/python.md, "Speed").    fn()
 timing (see docs/python.md, "Speed").torch.cuda.synchronize()
 timing (see docs/python.md, "Speed").best = []
 timing (see docs/python.md, "Speed").for _ in range(5):
 timing (see docs/python.md, "Speed").    t0 = time.perf_counter()
 timing (see docs/python.md, "Speed").    for _ in range(calls):
 timing (see docs/python.md, "Speed").        fn()
 timing (see docs/python.md, "Speed").    torch.cuda.synchronize()
 timing (see docs/python.md, "Speed").    best.append((time.perf_counter() - t0) / calls * 1e6)
 timing (see docs/python.md, "Speed").return pystats.median(best)


def main():
 timing (see docs/python.md, "Speed").parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
 timing (see docs/python.md, "Speed").parser.add_argument("--json", help="write the figures here")
 timing (see docs/python.md, "Speed").parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
 timing (see docs/python.md, "Speed").parser.add_argument("--data", default="tests/data/match/astronaut_warp",
 timing (see docs/python.md, "Speed").                    help="the sample image pair's descriptors (the repository's, from its root)")
 timing (see docs/python.md, "Speed").parser.add_argument("--profile", action="store_true", help="also time the pieces of one call (host time)")
 timing (see docs/python.md, "Speed").parser.add_argument("--cpu", action="store_true", help="the CPU rows only (NumPy, OpenCV): no GPU needed")
 timing (see docs/python.md, "Speed").args = parser.parse_args()
 timing (see docs/python.md, "Speed").if args.cpu:
 timing (see docs/python.md, "Speed").    rows = cpu_main(args)
 timing (see docs/python.md, "Speed").    if args.json:
 timing (see docs/python.md, "Speed").        with open(args.json, "w") as f:
 timing (see docs/python.md, "Speed").            json.dump(dict(machine="cpu", numpy=np.__version__, multireduce=mr.__version__,
 timing (see docs/python.md, "Speed").                           date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)
 timing (see docs/python.md, "Speed").    return 0

 timing (see docs/python.md, "Speed").import cupy
 timing (see docs/python.md, "Speed").import torch

 timing (see docs/python.md, "Speed").if not torch.cuda.is_available() or not mr.cuda_available():
 timing (see docs/python.md, "Speed").    print("peers: needs a GPU with PyTorch and multireduce's CUDA backend", file=sys.stderr)
 timing (see docs/python.md, "Speed").    return 1
 timing (see docs/python.md, "Speed").dev = torch.device("cuda")
 timing (see docs/python.md, "Speed").stream = torch.cuda.current_stream()
 timing (see docs/python.md, "Speed").g = torch.Generator(device=dev).manual_seed(18)
 timing (see docs/python.md, "Speed").rows = []

 timing (see docs/python.md, "Speed").def row(case, peer, peer_us, ours_us, note=""):
 timing (see docs/python.md, "Speed").    rows.append(dict(case=case, peer=peer, peer_us=peer_us, multireduce_us=ours_us, speedup=peer_us / ours_us,
 timing (see docs/python.md, "Speed").                     note=note))
 timing (see docs/python.md, "Speed").    print(f"{case:<44} {peer:<34} {peer_us:>11.1f} us {ours_us:>10.1f} us {peer_us / ours_us:>8.1f}x  {note}")

 timing (see docs/python.md, "Speed").print(f"peers on {torch.cuda.get_device_name()}, torch {torch.__version__}, cupy {cupy.__version__}, "
 timing (see docs/python.md, "Speed").      f"multireduce {mr.__version__}")
 timing (see docs/python.md, "Speed").print(f"{'case':<44} {'peer':<34} {'peer':>14} {'multireduce':>13} {'speedup':>9}")

 timing (see docs/python.md, "Speed").# The host-bound rows first, with more calls: one call's time spreads widely with the host's
 timing (see docs/python.md, "Speed").# timing (see docs/python.md, "Speed").
 timing (see docs/python.md, "Speed").host_bound = dict(runs=200, warmup=20)
 timing (see docs/python.md, "Speed").# whole-array sums: event-timed around one call (the anchor's method), then the host cost
 timing (see docs/python.md, "Speed").# of back-to-back calls at 2^14
 timing (see docs/python.md, "Speed").for p in (14, 22, 28):
 timing (see docs/python.md, "Speed").    x = torch.randn(1 << p, device=dev, generator=g)
 timing (see docs/python.md, "Speed").    xc = cupy.asarray(x)
 timing (see docs/python.md, "Speed").    assert abs(float(mr.reduce(x)) - float(x.sum())) <= 1e-3 * max(1.0, abs(float(x.sum())))
 timing (see docs/python.md, "Speed").    row(f"sum of 2^{p} float32", "torch.sum", event_median(lambda: torch.sum(x), stream, **host_bound),
 timing (see docs/python.md, "Speed").        event_median(lambda: mr.reduce(x), stream, **host_bound))
 timing (see docs/python.md, "Speed").    row(f"sum of 2^{p} float32", "cupy.sum", event_median(lambda: cupy.sum(xc), stream, **host_bound),
 timing (see docs/python.md, "Speed").        event_median(lambda: mr.reduce(xc), stream, **host_bound))
 timing (see docs/python.md, "Speed").x = torch.randn(1 << 14, device=dev, generator=g)
 timing (see docs/python.md, "Speed").xc = cupy.asarray(x)
 timing (see docs/python.md, "Speed").row("sum of 2^14 float32 (per call, back to back)", "torch.sum", call_overhead(lambda: torch.sum(x)),
 timing (see docs/python.md, "Speed").    call_overhead(lambda: mr.reduce(x)))
 timing (see docs/python.md, "Speed").if args.profile:  # where a call's host time goes (no peer: each piece alone)
 timing (see docs/python.md, "Speed").    from . import _core, _interop

 timing (see docs/python.md, "Speed").    operand = _interop.direct_operand(x)
 timing (see docs/python.md, "Speed").    framework, address, dtype, size, _, device, handle = operand
 timing (see docs/python.md, "Speed").    slab = torch.empty(1024, dtype=torch.float32, device=dev)
 timing (see docs/python.md, "Speed").    out = slab.data_ptr()
 timing (see docs/python.md, "Speed").    pieces = {
 timing (see docs/python.md, "Speed").        "mr.reduce (torch input)": lambda: mr.reduce(x),
 timing (see docs/python.md, "Speed").        "direct_operand (torch)": lambda: _interop.direct_operand(x),
 timing (see docs/python.md, "Speed").        "direct_operand (CuPy)": lambda: _interop.direct_operand(xc),
 timing (see docs/python.md, "Speed").        "import_array (torch)": lambda: _interop.import_array(x, "x", None),
 timing (see docs/python.md, "Speed").        "scalar_slabs.reserve": lambda: _interop.scalar_slabs.reserve(x, framework, device, dtype, handle),
 timing (see docs/python.md, "Speed").        "slab[7]": lambda: slab[7],
 timing (see docs/python.md, "Speed").        "_core.reduce_whole alone": lambda: _core.reduce_whole(address, dtype, size, device, "sum", out, handle),
 timing (see docs/python.md, "Speed").        "_core.cuda_device_count (a bare call)": lambda: _core.cuda_device_count(),
 timing (see docs/python.md, "Speed").        "x.new_empty((2000000,))": lambda: x.new_empty((2_000_000,)),
 timing (see docs/python.md, "Speed").        "x.__dlpack__(stream)": lambda: x.__dlpack__(stream=1),
 timing (see docs/python.md, "Speed").    }
 timing (see docs/python.md, "Speed").    for label, fn in pieces.items():
 timing (see docs/python.md, "Speed").        print(f"  profile: {label:<38} {call_overhead(fn):8.2f} us per call")

 timing (see docs/python.md, "Speed").row("sum of 2^14 float32 (per call, back to back)", "cupy.sum", call_overhead(lambda: cupy.sum(xc)),
 timing (see docs/python.md, "Speed").    call_overhead(lambda: mr.reduce(xc)))

 timing (see docs/python.md, "Speed").# 2M segments of 0..64 floats
 timing (see docs/python.md, "Speed").segments = (1 << 16) if args.quick else 2_000_000
 timing (see docs/python.md, "Speed").lengths = torch.randint(0, 65, (segments,), device=dev, generator=g)
 timing (see docs/python.md, "Speed").offsets = torch.zeros(segments + 1, dtype=torch.int64, device=dev)
 timing (see docs/python.md, "Speed").offsets[1:] = torch.cumsum(lengths, 0)
 timing (see docs/python.md, "Speed").total = int(offsets[-1])
 timing (see docs/python.md, "Speed").data = torch.randn(total, device=dev, generator=g)
 timing (see docs/python.md, "Speed").want = torch.segment_reduce(data, "sum", lengths=lengths, unsafe=True)
 timing (see docs/python.md, "Speed").torch.testing.assert_close(mr.segmented_reduce(data, "sum", offsets=offsets), want, rtol=1e-4, atol=1e-4)
 timing (see docs/python.md, "Speed").assert torch.equal(mr.segmented_reduce(data, "sum", offsets=offsets, check_offsets=False),
 timing (see docs/python.md, "Speed").                   mr.segmented_reduce(data, "sum", offsets=offsets))
 timing (see docs/python.md, "Speed").# like with like: both check the offsets (and wait for the GPU to say so), or neither does
 timing (see docs/python.md, "Speed").row(f"{segments} segments of 0..64 float32 (sum)", "torch.segment_reduce(unsafe=False)",
 timing (see docs/python.md, "Speed").    event_median(lambda: torch.segment_reduce(data, "sum", lengths=lengths), stream, **host_bound),
 timing (see docs/python.md, "Speed").    event_median(lambda: mr.segmented_reduce(data, "sum", offsets=offsets), stream, **host_bound),
 timing (see docs/python.md, "Speed").    "both check the offsets on the GPU and read the verdict back")
 timing (see docs/python.md, "Speed").row(f"{segments} segments of 0..64 float32 (sum)", "torch.segment_reduce(unsafe=True)",
 timing (see docs/python.md, "Speed").    event_median(lambda: torch.segment_reduce(data, "sum", lengths=lengths, unsafe=True), stream, **host_bound),
 timing (see docs/python.md, "Speed").    event_median(lambda: mr.segmented_reduce(data, "sum", offsets=offsets, check_offsets=False), stream, **host_bound),
 timing (see docs/python.md, "Speed").    "neither checks: mr.segmented_reduce(..., check_offsets=False)")

 timing (see docs/python.md, "Speed").# eleven statistics of 2^28 floats
 timing (see docs/python.md, "Speed").n = 1 << (22 if args.quick else 28)
 timing (see docs/python.md, "Speed").x = torch.randn(n, device=dev, generator=g)

 timing (see docs/python.md, "Speed").def torch_stats():  # the anchor's calls: sum, var_mean, aminmax, argmin, argmax, abs-sum, norm
 timing (see docs/python.md, "Speed").    var, mean = torch.var_mean(x, unbiased=False)
 timing (see docs/python.md, "Speed").    lo, hi = torch.aminmax(x)
 timing (see docs/python.md, "Speed").    return x.sum(), mean, var, lo, x.argmin(), hi, x.argmax(), x.abs().sum(), x.norm()

 timing (see docs/python.md, "Speed").ours = mr.statistics(x)
 timing (see docs/python.md, "Speed").s, mean, var, lo, amin, hi, amax, l1, l2 = torch_stats()
 timing (see docs/python.md, "Speed").assert int(ours.count) == n and int(ours.argmin) == int(amin) and int(ours.argmax) == int(amax)
 timing (see docs/python.md, "Speed").assert float(ours.min) == float(lo) and float(ours.max) == float(hi)
 timing (see docs/python.md, "Speed").for a, b in zip((ours.sum, ours.mean, ours.var, ours.l1, ours.l2), (s, mean, var, l1, l2)):
 timing (see docs/python.md, "Speed").    assert abs(float(a) - float(b)) <= 1e-3 * max(1.0, abs(float(b))), (float(a), float(b))
 timing (see docs/python.md, "Speed").row(f"11 statistics of 2^{n.bit_length() - 1} float32", "torch, 7 calls", event_median(torch_stats, stream),
 timing (see docs/python.md, "Speed").    event_median(lambda: mr.statistics(x), stream))
 timing (see docs/python.md, "Speed").xc = cupy.asarray(x)
 timing (see docs/python.md, "Speed").row(f"11 statistics of 2^{n.bit_length() - 1} float32", "(the same, on a CuPy array)", event_median(torch_stats, stream),
 timing (see docs/python.md, "Speed").    event_median(lambda: mr.statistics(xc), stream))

 timing (see docs/python.md, "Speed").# fixed-length segments of 2^26 floats
 timing (see docs/python.md, "Speed").n = 1 << (20 if args.quick else 26)
 timing (see docs/python.md, "Speed").x = torch.randn(n, device=dev, generator=g)
 timing (see docs/python.md, "Speed").xc = cupy.asarray(x)
 timing (see docs/python.md, "Speed").for length in (1, 4, 32, 1024):
 timing (see docs/python.md, "Speed").    want = x.view(-1, length).sum(1)
 timing (see docs/python.md, "Speed").    torch.testing.assert_close(mr.segmented_reduce(x, "sum", segment_length=length), want, rtol=1e-4, atol=1e-4)
 timing (see docs/python.md, "Speed").    ours_us = event_median(lambda: mr.segmented_reduce(x, "sum", segment_length=length), stream)
 timing (see docs/python.md, "Speed").    row(f"2^{n.bit_length() - 1} float32, segments of L = {length} (sum)", "x.view(-1, L).sum(1)",
 timing (see docs/python.md, "Speed").        event_median(lambda: x.view(-1, length).sum(1), stream), ours_us)
 timing (see docs/python.md, "Speed").    row(f"2^{n.bit_length() - 1} float32, segments of L = {length} (sum)", "cupy x.reshape(-1, L).sum(1)",
 timing (see docs/python.md, "Speed").        event_median(lambda: xc.reshape(-1, length).sum(1), stream),
 timing (see docs/python.md, "Speed").        event_median(lambda: mr.segmented_reduce(xc, "sum", segment_length=length), stream))

 timing (see docs/python.md, "Speed").# sliding max, W = 3 / 32 / 1000, over 2^26 floats
 timing (see docs/python.md, "Speed").n = 1 << (20 if args.quick else 26)
 timing (see docs/python.md, "Speed").x = torch.randn(n, device=dev, generator=g)
 timing (see docs/python.md, "Speed").xc = cupy.asarray(x)
 timing (see docs/python.md, "Speed").from cupy.lib.stride_tricks import sliding_window_view

 timing (see docs/python.md, "Speed").for w in (3, 32, 1000):
 timing (see docs/python.md, "Speed").    want = x.unfold(0, w, 1).amax(-1)
 timing (see docs/python.md, "Speed").    assert torch.equal(mr.window_reduce(x, w, "max"), want)
 timing (see docs/python.md, "Speed").    assert bool((mr.window_reduce(xc, w, "max") == sliding_window_view(xc, w).max(-1)).all())
 timing (see docs/python.md, "Speed").    row(f"sliding max W={w} over 2^{n.bit_length() - 1} float32", "x.unfold(0, W, 1).amax(-1)",
 timing (see docs/python.md, "Speed").        event_median(lambda: x.unfold(0, w, 1).amax(-1), stream, runs=10),
 timing (see docs/python.md, "Speed").        event_median(lambda: mr.window_reduce(x, w, "max"), stream))
 timing (see docs/python.md, "Speed").    row(f"sliding max W={w} over 2^{n.bit_length() - 1} float32", "cupy sliding_window_view().max(-1)",
 timing (see docs/python.md, "Speed").        event_median(lambda: sliding_window_view(xc, w).max(-1), stream, runs=5),
 timing (see docs/python.md, "Speed").        event_median(lambda: mr.window_reduce(xc, w, "max"), stream))

 timing (see docs/python.md, "Speed").# the matcher: 65,536 x 65,536 256- and 512-bit descriptors, k = 2
 timing (see docs/python.md, "Speed").m = 8192 if args.quick else 65536
 timing (see docs/python.md, "Speed").shifts = torch.arange(8, device=dev, dtype=torch.uint8)

 timing (see docs/python.md, "Speed").def signs(d):  # bits as +-1 int8: hamming = (bits - <a, b>) / 2
 timing (see docs/python.md, "Speed").    bits = (d.unsqueeze(-1) >> shifts) & 1
 timing (see docs/python.md, "Speed").    return (bits.reshape(d.shape[0], -1).to(torch.int8) * 2 - 1).contiguous()

 timing (see docs/python.md, "Speed").for width in (32, 64):
 timing (see docs/python.md, "Speed").    q = torch.randint(0, 256, (m, width), dtype=torch.uint8, device=dev, generator=g)
 timing (see docs/python.md, "Speed").    t = torch.randint(0, 256, (m, width), dtype=torch.uint8, device=dev, generator=g)
 timing (see docs/python.md, "Speed").    qs, ts_t = signs(q), signs(t).t().contiguous()

 timing (see docs/python.md, "Speed").    def torch_knn():
 timing (see docs/python.md, "Speed").        dists, idxs = [], []
 timing (see docs/python.md, "Speed").        for first in range(0, m, 8192):
 timing (see docs/python.md, "Speed").            dot = torch._int_mm(qs[first:first + 8192], ts_t)
 timing (see docs/python.md, "Speed").            top, idx = torch.topk(dot, 2, dim=1)
 timing (see docs/python.md, "Speed").            dists.append((8 * width - top) // 2)
 timing (see docs/python.md, "Speed").            idxs.append(idx)
 timing (see docs/python.md, "Speed").        return torch.cat(dists), torch.cat(idxs)

 timing (see docs/python.md, "Speed").    want_dist, _ = torch_knn()
 timing (see docs/python.md, "Speed").    dist, idx = mr.knn_hamming(q, t, 2)
 timing (see docs/python.md, "Speed").    assert torch.equal(dist, want_dist.to(torch.int32)), "distances differ from PyTorch's"
 timing (see docs/python.md, "Speed").    peer_us = event_median(torch_knn, stream, runs=5, warmup=1)
 timing (see docs/python.md, "Speed").    ours_us = event_median(lambda: mr.knn_hamming(q, t, 2), stream, runs=5, warmup=1)
 timing (see docs/python.md, "Speed").    comparisons = m * m
 timing (see docs/python.md, "Speed").    row(f"knn k=2, {m} x {m} {8 * width}-bit", "torch._int_mm + topk (int8 bits)", peer_us, ours_us,
 timing (see docs/python.md, "Speed").        f"{comparisons / peer_us / 1e6:.3f} vs {comparisons / ours_us / 1e6:.2f} T comparisons/s")
 timing (see docs/python.md, "Speed").    del qs, ts_t

 timing (see docs/python.md, "Speed").if args.json:
 timing (see docs/python.md, "Speed").    with open(args.json, "w") as f:
 timing (see docs/python.md, "Speed").        json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, cupy=cupy.__version__,
 timing (see docs/python.md, "Speed").                       multireduce=mr.__version__, date=time.strftime("%Y-%m-%d"), rows=rows), f, indent=1)
 timing (see docs/python.md, "Speed").return 0


if __name__ == "__main__":
 timing (see docs/python.md, "Speed").sys.exit(main())
