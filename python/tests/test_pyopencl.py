"""PyOpenCL arrays read in place by the OpenCL backend: every function on pyopencl.array.Array inputs
on the first OpenCL device (PoCL on the CPU in CI, NVIDIA's OpenCL on a GPU machine) against NumPy,
every element; results are PyOpenCL arrays of the input's context and queue, inputs unchanged,
out= poisoned first. Skipped where PyOpenCL, the OpenCL backend or an OpenCL device is missing."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import multireduce as mr
from multireduce import _core

try:
    import pyopencl as cl
    import pyopencl.array as cla
except ImportError as e:  # absent, or present without a loadable ICD loader
    pytest.skip(f"PyOpenCL: {e}", allow_module_level=True)


def _first_device():
    """(context, queue) of the first OpenCL device PyOpenCL lists, or the reason there is none."""
    if "opencl" not in mr.backends() or _core.device_count("opencl") == 0:
        return None, "the build has no OpenCL backend, or it sees no device"
    try:
        platforms = cl.get_platforms()
        device = next(d for p in platforms for d in p.get_devices())
    except (cl.Error, StopIteration) as e:
        return None, f"PyOpenCL finds no OpenCL device ({e})"
    context = cl.Context([device])
    return (context, cl.CommandQueue(context)), ""


FIRST, WHY = _first_device()
pytestmark = pytest.mark.skipif(FIRST is None, reason=f"OpenCL: {WHY}")

FP64 = FIRST is not None and FIRST[0].devices[0].double_fp_config != 0
DTYPES = ["int8", "uint16", "int32", "int64", "uint64", "float32"] + (["float64"] if FP64 else [])
SIZES = [0, 1, 33, (1 << 20) + 7]


@pytest.fixture
def queue():
    return FIRST[1]


def _data(rng, dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    low = -20 if dtype.kind == "i" else 0
    return rng.integers(low, 21, n).astype(dtype)


def _poisoned(queue, shape, dtype):
    """A PyOpenCL out= array filled with a value no result has."""
    dtype = np.dtype(dtype)
    fill = np.nan if dtype.kind == "f" else np.iinfo(dtype).max
    return cla.to_device(queue, np.full(shape, fill, dtype))


def _check_result(r, queue, want, terms):
    """r: a PyOpenCL array of queue's context, on queue, equal to NumPy's `want` (float sums within
    a bound that grows with the terms)."""
    assert isinstance(r, cla.Array)
    assert r.context == queue.context and r.queue is queue
    got, want = r.get(), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        eps = np.finfo(want.dtype).eps
        bound = float((terms + 2) * eps * 64 * max(1.0, np.abs(want[np.isfinite(want)]).max(initial=0)))
        np.testing.assert_allclose(got, want, rtol=0, atol=bound)
    else:
        np.testing.assert_array_equal(got, want)


def _sum_of(x, axis=None):
    kind = x.dtype.kind
    return x.sum(axis=axis, dtype=np.int64 if kind == "i" else np.uint64 if kind == "u" else None)


def _unchanged(a, before):
    np.testing.assert_array_equal(a.get(), before)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reduce_whole(queue, rng, dtype, n):
    x = _data(rng, dtype, n)
    a = cla.to_device(queue, x)
    _check_result(mr.reduce(a, "sum"), queue, _sum_of(x), n)
    if n:
        _check_result(mr.reduce(a, "min"), queue, x.min(), 1)
        _check_result(mr.reduce(a, "argmax"), queue, np.int64(np.argmax(x)), 1)
    else:
        _check_result(mr.reduce(a, "argmax"), queue, np.int64(-1), 1)
    if np.dtype(dtype).kind != "f":
        out = _poisoned(queue, (), _sum_of(x).dtype)
        assert mr.reduce(a, "xor", out=_poisoned(queue, (), dtype)).get() == np.bitwise_xor.reduce(x, initial=0)
        assert mr.reduce(a, "sum", out=out) is out
        _check_result(out, queue, _sum_of(x), n)
    _unchanged(a, x)


@pytest.mark.parametrize("n", SIZES)
def test_float16(queue, rng, n):
    """float16: reduced in float32 on the device, its outputs rounded back to float16 (through the host
    for segments and windows)."""
    x = _data(rng, "float16", n)
    a = cla.to_device(queue, x)
    if n:
        _check_result(mr.reduce(a, "max"), queue, x.max(), 1)
        _check_result(mr.reduce(a, "argmin"), queue, np.int64(x.argmin()), 1)
    windows = max(0, n - 16)
    want = sliding_window_view(x, 17).min(-1) if windows else np.empty(0, np.float16)
    out = _poisoned(queue, windows, "float16")
    assert mr.window_reduce(a, 17, "min", out=out) is out
    _check_result(out, queue, want, 1)
    if n % 11 == 0:
        _check_result(mr.segmented_reduce(a, "max", segment_length=11), queue, x.reshape(-1, 11).max(-1), 1)
    _unchanged(a, x)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_reduce_axes(queue, rng, dtype):
    x = _data(rng, dtype, 37 * 100 * 3).reshape(37, 100, 3)
    a = cla.to_device(queue, x)
    for axis in (0, 1, 2, -1):
        _check_result(mr.reduce(a, "sum", axis=axis), queue, _sum_of(x, axis), x.shape[axis])
        out = _poisoned(queue, np.delete(x.shape, axis % 3), "int64")
        assert mr.reduce(a, "argmin", axis=axis, out=out) is out
        _check_result(out, queue, x.argmin(axis=axis), 1)
    _unchanged(a, x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["int8", "int64", "float32"])
def test_segmented_reduce(queue, rng, dtype, n):
    x = _data(rng, dtype, n)
    a = cla.to_device(queue, x)
    offsets = np.concatenate([[0], np.sort(rng.integers(0, n + 1, min(n, 300))), [n]]).astype(np.int64)
    bounds = list(zip(offsets[:-1], offsets[1:]))
    want_max = np.array([x[s:e].max() if e > s else mr.reduce(x[:0], "max") for s, e in bounds], x.dtype)
    want_sum = np.array([_sum_of(x[s:e]) for s, e in bounds], _sum_of(x[:0]).dtype)
    for o in (offsets, cla.to_device(queue, offsets)):  # offsets on the host, and beside x
        _check_result(mr.segmented_reduce(a, "max", offsets=o), queue, want_max, 1)
        out = _poisoned(queue, len(bounds), want_sum.dtype)
        assert mr.segmented_reduce(a, "sum", offsets=o, out=out) is out
        _check_result(out, queue, want_sum, max((e - s for s, e in bounds), default=0))
    if n % 11 == 0:
        _check_result(mr.segmented_reduce(a, "argmin", segment_length=11), queue,
                      x.reshape(-1, 11).argmin(axis=1) if n else np.empty(0, np.int64), 1)
    _unchanged(a, x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["uint16", "int32", "float32"])
def test_window_reduce(queue, rng, dtype, n):
    x = _data(rng, dtype, n)
    a = cla.to_device(queue, x)
    for w in (1, 17, 1000):
        windows = max(0, n - w + 1)
        view = sliding_window_view(x, w) if windows else np.empty((0, w), x.dtype)
        _check_result(mr.window_reduce(a, w, "max"), queue, view.max(-1) if windows else np.empty(0, x.dtype), 1)
        want = _sum_of(view, -1) if windows else np.empty(0, _sum_of(x[:0]).dtype)
        out = _poisoned(queue, windows, want.dtype)
        assert mr.window_reduce(a, w, "sum", out=out) is out
        _check_result(out, queue, want, w)
    _unchanged(a, x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_statistics(queue, rng, dtype, n):
    x = _data(rng, dtype, n)
    a = cla.to_device(queue, x)
    s = mr.statistics(a)
    for field in s:
        assert isinstance(field, cla.Array) and field.shape == () and field.context == queue.context
    host = mr.statistics(x, backend="cpu")  # the CPU backend's, itself tested against NumPy
    assert int(s.count.get()) == n
    for name in ("argmin", "argmax"):
        assert int(getattr(s, name).get()) == int(getattr(host, name))
    if n:
        assert s.min.get() == x.min() and s.max.get() == x.max()
        wide = x.astype(np.float64)
        np.testing.assert_allclose(float(s.mean.get()), wide.mean(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(float(s.var.get()), wide.var(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(float(s.l1.get()), np.abs(wide).sum(), rtol=1e-9)
        np.testing.assert_allclose(float(s.l2.get()), np.sqrt((wide * wide).sum()), rtol=1e-9)
    _unchanged(a, x)


@pytest.mark.parametrize("elements", [1, 3, 256])
def test_views_at_an_offset(queue, rng, elements):
    """Views into a bigger buffer: a sub-buffer where the offset is a multiple of the device's base
    address alignment (256 float32 = 1024 bytes: a multiple of PoCL's 128 and NVIDIA's 512), a copy
    on the device otherwise."""
    from multireduce._arrays import operand, pyopencl_alignment

    x = rng.standard_normal(5000).astype(np.float32)
    a = cla.to_device(queue, x)
    v = a[elements:elements + 4000]
    assert v.offset == 4 * elements
    taken = operand(v).keep.buffer  # what the core reads: a sub-buffer of a's, or a copy
    parent = taken.associated_memobject
    assert (parent is not None and parent.int_ptr == a.base_data.int_ptr) == (v.offset % pyopencl_alignment(v) == 0)
    assert (elements == 256) == (v.offset % pyopencl_alignment(v) == 0)
    part = x[elements:elements + 4000]
    _check_result(mr.reduce(v, "sum"), queue, part.sum(), part.size)
    _check_result(mr.reduce(v, "argmax"), queue, np.int64(part.argmax()), 1)
    _check_result(mr.window_reduce(v, 5, "min"), queue, sliding_window_view(part, 5).min(-1), 1)
    _check_result(mr.segmented_reduce(v, "max", segment_length=40), queue, part.reshape(-1, 40).max(-1), 1)
    assert int(mr.statistics(v).argmin.get()) == part.argmin()
    _unchanged(a, x)


def test_out_at_an_aligned_offset_and_overlap(queue):
    x = np.arange(1000, dtype=np.float32)
    a = cla.to_device(queue, x)
    big = _poisoned(queue, 2000, "float32")
    out = big[256:256 + 996]  # 1024 bytes in: a sub-buffer
    assert mr.window_reduce(a, 5, "sum", out=out) is out
    got = big.get()
    np.testing.assert_array_equal(got[256:256 + 996], sliding_window_view(x, 5).sum(-1))
    assert np.isnan(got[:256]).all() and np.isnan(got[256 + 996:]).all()
    # out= of another queue of x's context: written on x's queue, the call's completion among its
    # events, so that out.get() on its own queue waits for it
    other_queue = cl.CommandQueue(queue.context)
    out = _poisoned(other_queue, 996, "float32")
    events_before = len(out.events)
    assert mr.window_reduce(a, 5, "sum", out=out) is out
    assert len(out.events) == events_before + 1
    _check_result(out, other_queue, sliding_window_view(x, 5).sum(-1), 5)
    with pytest.raises(ValueError, match="alignment"):
        mr.window_reduce(a, 5, "sum", out=big[1:997])
    with pytest.raises(ValueError, match="overlaps"):
        mr.window_reduce(a[:999], 4, "sum", out=a[:996])


def test_operands_of_another_queue(queue, rng):
    """Offsets, a training set (and the unaligned views copied for them) on another queue of the
    context than the call's: that queue is finished first, so the call reads them whole."""
    other_queue = cl.CommandQueue(queue.context)
    x = rng.standard_normal(3000).astype(np.float32)
    a = cla.to_device(queue, x)
    cuts = np.sort(rng.integers(0, 3000, 40)).astype(np.int64)
    offsets = np.concatenate([[0], cuts, [3000]]).astype(np.int64)
    big = cla.to_device(other_queue, np.concatenate([[7], offsets]).astype(np.int64))
    o = big[1:]  # 8 bytes in: copied on the device
    want = np.array([x[b:e].max() if e > b else mr.reduce(x[:0], "max") for b, e in zip(offsets[:-1], offsets[1:])],
                    np.float32)
    _check_result(mr.segmented_reduce(a, "max", offsets=o), queue, want, 1)
    q = rng.integers(0, 256, (50, 32), dtype=np.uint8)
    t = rng.integers(0, 256, (300, 32), dtype=np.uint8)
    dist, idx = mr.knn_hamming(cla.to_device(queue, q), cla.to_device(other_queue, t), k=2)
    want_dist, want_idx = mr.knn_hamming(q, t, k=2)
    np.testing.assert_array_equal(dist.get(), want_dist)
    np.testing.assert_array_equal(idx.get(), want_idx)


def test_auto_runs_on_the_arrays_device(queue, monkeypatch):
    """backend="auto" takes the OpenCL backend for PyOpenCL arrays, not host copies on the CPU."""
    import multireduce._api as api

    def no_host_copies(*args, **kwargs):
        raise AssertionError("auto ran on host copies")

    monkeypatch.setattr(api, "_on_host", no_host_copies)
    monkeypatch.setattr(api, "_statistics_on_host", no_host_copies)
    x = np.arange(100, dtype=np.int32)
    a = cla.to_device(queue, x)
    assert mr.reduce(a, "sum").get() == x.sum()
    assert int(mr.statistics(a).count.get()) == 100
    # backend="cpu" still runs on host copies, the result back in the array's context
    monkeypatch.undo()
    _check_result(mr.reduce(a, "sum", backend="cpu"), queue, np.int64(x.sum()), 1)


def test_an_array_without_a_queue(queue):
    """A queue of the array's context is made for the call, and waited for; results have no queue."""
    x = np.arange(300, dtype=np.float32)
    a = cla.Array(queue.context, x.shape, x.dtype)
    a.set(x, queue=queue)
    queue.finish()
    r = mr.window_reduce(a, 3, "sum")
    assert r.queue is None and r.context == queue.context
    np.testing.assert_array_equal(r.get(queue=queue), sliding_window_view(x, 3).sum(-1))
    assert mr.reduce(a, "max").get(queue=queue) == 299


def test_knn_hamming_and_match(queue, rng):
    q = rng.integers(0, 256, (300, 32), dtype=np.uint8)
    t = rng.integers(0, 256, (500, 32), dtype=np.uint8)
    t[::50] = q[0]  # ties
    qd, td = cla.to_device(queue, q), cla.to_device(queue, t)
    for k in (1, 2, 5):
        dist, idx = mr.knn_hamming(qd, td, k)
        want_dist, want_idx = mr.knn_hamming(q, t, k, backend="cpu")
        _check_result(dist, queue, want_dist, 1)
        _check_result(idx, queue, want_idx, 1)
    _check_result(mr.match(qd, td, ratio=0.9, cross_check=True), queue,
                  mr.match(q, t, ratio=0.9, cross_check=True, backend="cpu"), 1)
    _unchanged(qd, q)


def test_what_the_backend_cannot_take_is_a_clear_error(queue):
    x = np.arange(64, dtype=np.float32)
    a = cla.to_device(queue, x)
    with pytest.raises(ValueError, match="strided PyOpenCL array"):
        mr.reduce(a[::2])
    with pytest.raises(TypeError, match="out is a numpy array"):
        mr.window_reduce(a, 3, out=np.empty(62, np.float32))
    other = cl.Context(queue.context.devices)
    other_queue = cl.CommandQueue(other)
    with pytest.raises(ValueError, match="another OpenCL context"):
        mr.window_reduce(a, 3, out=cla.empty(other_queue, 62, np.float32))
    with pytest.raises(ValueError, match="another OpenCL context"):
        mr.segmented_reduce(a, offsets=cla.to_device(other_queue, np.array([0, 10, 64])))
    with pytest.raises(ValueError, match="offsets are on opencl"):
        mr.segmented_reduce(x, offsets=cla.to_device(queue, np.array([0, 10, 64])))
    with pytest.raises(ValueError, match="non-decreasing"):
        mr.segmented_reduce(a, offsets=cla.to_device(queue, np.array([0, 30, 20, 64])))
    with pytest.raises(ValueError, match="past the end"):
        mr.segmented_reduce(a, offsets=cla.to_device(queue, np.array([0, 30, 65])))
    with pytest.raises(ValueError, match="fewer than the 256"):  # an array bigger than its buffer
        mr.reduce(cla.Array(queue, (64,), np.float32, data=cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 16)))
    with pytest.raises(TypeError, match="stream= does not apply"):
        mr.reduce(a, stream=1)
    with pytest.raises(_core.UnsupportedJob, match="only the opencl backend reads"):
        mr.reduce(a, backend="cuda")
    with pytest.raises(ValueError, match="one framework"):
        mr.knn_hamming(cla.to_device(queue, np.zeros((4, 32), np.uint8)), np.zeros((4, 32), np.uint8))
    try:
        out_of_order = cl.CommandQueue(queue.context,
                                       properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
    except cl.Error:  # a device without out-of-order queues
        out_of_order = None
    if out_of_order is not None:
        with pytest.raises(ValueError, match="out of order"):
            mr.reduce(a.with_queue(out_of_order))
    if not FP64:
        with pytest.raises(_core.UnsupportedDtype, match="float64"):
            mr.reduce(cla.to_device(queue, x.astype(np.float64)), backend="opencl")
    _unchanged(a, x)
