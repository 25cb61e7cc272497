"""backend="opencl" on NumPy arrays: every function on the first OpenCL device (PoCL on the CPU in
CI, NVIDIA's OpenCL on a GPU machine) against NumPy, element by element (float sums within a
bound). Skipped where the build has no OpenCL backend or no OpenCL device is found."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import multireduce as mr
from multireduce import _core


def _opencl_here():
    if "opencl" not in mr.backends():
        return "no OpenCL backend"
    try:
        mr.reduce(np.ones(4, np.float32), backend="opencl")
    except _core.Unsupported as e:
        return str(e)
    return ""


WHY = _opencl_here()
pytestmark = pytest.mark.skipif(WHY != "", reason=f"OpenCL: {WHY}")

SEED = 20261127


def close(got, want, terms):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        eps = np.finfo(want.dtype).eps
        np.testing.assert_allclose(got, want, rtol=0, atol=float((terms + 2) * eps * 64 * max(1.0, np.abs(want).max(initial=0))))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 33, (1 << 20) + 7])
def test_reduce_like_numpy(dtype, n):
    print("seed", SEED)
    rng = np.random.default_rng([SEED, n])
    x = rng.integers(-20, 21, n).astype(dtype) if np.dtype(dtype).kind != "f" else rng.standard_normal(n).astype(dtype)
    before = x.copy()
    want_sum = x.sum() if np.dtype(dtype).kind == "f" else x.sum(dtype=np.int64 if np.dtype(dtype).kind == "i" else np.uint64)
    close(mr.reduce(x, "sum", backend="opencl"), want_sum, n)
    if n:
        assert mr.reduce(x, "argmax", backend="opencl") == np.argmax(x)
        assert mr.reduce(x, "min", backend="opencl") == x.min()
    np.testing.assert_array_equal(x, before)  # inputs are never modified


def test_axes_windows_segments_and_statistics():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((37, 1000, 3)).astype(np.float32)
    for axis in (0, 1, 2):
        close(mr.reduce(x, "sum", axis=axis, backend="opencl"), x.sum(axis=axis), x.shape[axis])
        np.testing.assert_array_equal(mr.reduce(x, "argmin", axis=axis, backend="opencl"), x.argmin(axis=axis))
    flat = x.ravel()
    for w in (1, 17, 1000):
        close(mr.window_reduce(flat, w, "sum", backend="opencl"), sliding_window_view(flat, w).sum(-1), w)
        np.testing.assert_array_equal(mr.window_reduce(flat, w, "max", backend="opencl"), sliding_window_view(flat, w).max(-1))
    offsets = np.concatenate([[0], np.sort(rng.integers(0, flat.size, 500)), [flat.size]]).astype(np.int64)
    got = mr.segmented_reduce(flat, "max", offsets=offsets, backend="opencl")
    want = np.array([flat[a:b].max() if b > a else -np.inf for a, b in zip(offsets[:-1], offsets[1:])], np.float32)
    np.testing.assert_array_equal(got, want)
    s = mr.statistics(flat, backend="opencl")
    assert s.count == flat.size and s.argmax == flat.argmax() and s.min == flat.min()
    np.testing.assert_allclose(s.mean, flat.astype(np.float64).mean(), rtol=1e-9)
    np.testing.assert_allclose(s.var, flat.astype(np.float64).var(), rtol=1e-9)


def test_knn_hamming_like_the_cpu_backend():
    rng = np.random.default_rng(SEED)
    q = rng.integers(0, 256, (500, 32), dtype=np.uint8)
    t = rng.integers(0, 256, (900, 32), dtype=np.uint8)
    t[::50] = q[0]  # ties
    for k in (1, 2, 5):
        d1, i1 = mr.knn_hamming(q, t, k, backend="opencl")
        d2, i2 = mr.knn_hamming(q, t, k, backend="cpu")
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(i1, i2)
