"""What NumPy users pass every day: strided and Fortran-order arrays to every function, on the CPU
and the GPU, and NumPy's keywords of reduce (axis tuples, keepdims, dtype, where), each against
NumPy itself on a C-contiguous copy, element by element."""

import os

import numpy as np
import pytest

import multireduce as mr
import reference as ref
from conftest import gpu_params
from test_numpy import assert_same, random_array


def _strided_views(base):
    """Views of a 2-D array that are not C-contiguous: Fortran order, a step, a transpose,
    negative strides, a column slice."""
    return {
        "fortran": np.asfortranarray(base),
        "step": base[:, ::2],
        "transposed": base.T,
        "reversed": base[::-1, ::-3],
        "column": base[:, 1:2],
    }


@pytest.mark.parametrize("dtype", ("int16", "uint32", "float32", "float64"))
def test_strided_inputs_of_reduce_give_numpys_answers(rng, dtype):
    base = random_array(rng, dtype, (37, 54))
    for name, view in _strided_views(base).items():
        assert not view.flags.c_contiguous, name
        keep = view.copy()
        copy = np.ascontiguousarray(view)
        for op in ref.ops_for(dtype):
            assert_same(mr.reduce(view, op), mr.reduce(copy, op), dtype, op)
            assert_same(mr.reduce(view, op), ref.reduce(copy, op), dtype, op, exact=op != "prod", terms=copy.size)
            for axis in (0, 1, -1):
                assert_same(mr.reduce(view, op, axis), ref.reduce(copy, op, axis), dtype, op,
                            exact=op != "prod", terms=copy.shape[axis % 2])
        np.testing.assert_array_equal(view, keep)  # the input is never modified


def test_strided_inputs_of_every_other_function(rng):
    x = rng.standard_normal(4001).astype(np.float32)
    view = x[::3]
    copy = np.ascontiguousarray(view)
    got, want = mr.statistics(view), mr.statistics(copy)
    for field in mr.Statistics._fields:
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    np.testing.assert_array_equal(mr.window_reduce(view, 7, "max"), ref.window(copy, 7, "max"))
    np.testing.assert_array_equal(mr.segmented_reduce(view, "min", segment_length=23),
                                  ref.reduce(copy.reshape(-1, 23), "min", axis=1))
    offsets = np.array([0, 5, 5, 100, copy.size], np.int64)
    np.testing.assert_array_equal(mr.segmented_reduce(view, "argmax", offsets=offsets[::1]),
                                  ref.segmented(copy, "argmax", offsets))
    np.testing.assert_array_equal(mr.segmented_reduce(view, "max", offsets=np.repeat(offsets, 2)[::2]),
                                  ref.segmented(copy, "max", offsets))  # strided offsets too


def test_strided_descriptors_match_as_their_copies(rng):
    q = rng.integers(0, 256, size=(300, 64), dtype=np.uint8)
    t = rng.integers(0, 256, size=(500, 64), dtype=np.uint8)
    qf, tf = np.asfortranarray(q), t[::-1]
    dist, idx = mr.knn_hamming(qf, tf, 2)
    want_dist, want_idx = mr.knn_hamming(q, np.ascontiguousarray(tf), 2)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(dist, want_dist)
    np.testing.assert_array_equal(mr.match(qf, tf, ratio=0.9), mr.match(q, np.ascontiguousarray(tf), ratio=0.9))
    # the opening example of docs/python.md: a strided image among the collection
    got = mr.match_all([q, t, q[::2]], ratio=0.8)
    want = mr.match_all([q, t, np.ascontiguousarray(q[::2])], ratio=0.8)
    for field in ("pairs", "offsets", "matches"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    # the 32 wide columns of 64-byte rows: a view whose rows are not adjacent
    half = q[:, :32]
    np.testing.assert_array_equal(mr.knn_hamming(half, half, 1)[1][:, 0], np.arange(300))


@pytest.mark.parametrize("fw", gpu_params())
def test_strided_device_arrays_give_numpys_answers(rng, fw):
    _, to_device, to_numpy = fw
    base = random_array(rng, "float32", (64, 96))
    d = to_device(base)
    for view, host in ((d.T, base.T), (d[:, ::2], base[:, ::2]), (d[1::3], base[1::3])):
        for op in ("sum", "min", "argmax"):
            for axis in (None, 0, 1):
                got = to_numpy(mr.reduce(view, op, axis))
                assert_same(got, ref.reduce(np.ascontiguousarray(host), op, axis), "float32", op,
                            exact=op != "sum", terms=host.size)
        assert to_numpy(mr.statistics(view).max) == host.max()
    np.testing.assert_array_equal(to_numpy(d), base)  # the input is never modified
    q = rng.integers(0, 256, size=(200, 64), dtype=np.uint8)
    dq = to_device(q)
    dist, idx = mr.knn_hamming(dq[::2], dq[1::2], 2)
    want = mr.knn_hamming(q[::2], q[1::2], 2, backend="cpu")
    np.testing.assert_array_equal(to_numpy(dist), want[0])
    np.testing.assert_array_equal(to_numpy(idx), want[1])


# ---- NumPy's keywords ------------------------------------------------------------------------------


def _numpy(x, op, axis=None, **kw):
    """NumPy's own call for an op, with its keywords."""
    if op in ("and", "or", "xor"):
        ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return ufunc.reduce(x, axis=axis, **kw)
    f = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "argmin": np.argmin, "argmax": np.argmax}[op]
    with np.errstate(all="ignore"):
        return f(x, axis=axis, **kw)


AXES = (None, 0, 1, 2, -1, (0,), (0, 1), (1, 2), (0, 2), (0, 1, 2), (2, 0), ())


@pytest.mark.parametrize("dtype", ("int8", "uint16", "int64", "float32", "float64"))
def test_axis_tuples_and_keepdims_against_numpy(rng, dtype):
    x = random_array(rng, dtype, (5, 6, 7))
    if np.dtype(dtype).kind == "f":
        x = np.round(x * 8) / 8  # (few bits: float sums in any order are exact, so the comparison is exact)
    for op in ref.ops_for(dtype):
        for axis in AXES:
            if op in ("argmin", "argmax") and isinstance(axis, tuple):
                with pytest.raises(TypeError, match="tuple"):
                    mr.reduce(x, op, axis)
                continue
            for keepdims in (False, True):
                want = _numpy(x, op, axis, keepdims=keepdims, **({"dtype": ref.result_dtype(op, dtype)}
                                                                 if op in ("sum", "prod") else {}))
                got = mr.reduce(x, op, axis, keepdims=keepdims)
                if op in ("argmin", "argmax"):
                    want = want.astype(np.int64)
                assert got.shape == np.shape(want), (op, axis, keepdims)
                assert got.dtype == np.asarray(want).dtype, (op, axis, keepdims)
                if op == "prod" and np.dtype(dtype).kind == "f":
                    np.testing.assert_allclose(got, want, rtol=1e-12)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis} keepdims={keepdims}")


def test_dtype_is_the_type_elements_are_reduced_in(rng):
    i8 = rng.integers(-128, 128, size=(40, 30), dtype=np.int8)
    for target in ("int8", "int16", "uint8", "int32", "uint64", "float32", "float64"):
        for op in ("sum", "prod") if target.startswith(("int", "uint")) else ("sum",):  # (float products: order)
            for axis in (None, 0, (0, 1)):
                want = _numpy(i8, op, axis, dtype=target)
                got = mr.reduce(i8, op, axis, dtype=target)
                assert got.dtype == np.dtype(target), (op, target)
                np.testing.assert_array_equal(got, want, err_msg=f"{op} {target} axis={axis}")
    f = rng.standard_normal(5000).astype(np.float32) * 1e3
    np.testing.assert_array_equal(mr.reduce(f, dtype="float64"), np.sum(f, dtype=np.float64))  # pairwise both
    np.testing.assert_array_equal(mr.reduce(f, dtype=np.int64), np.sum(f, dtype=np.int64))  # each truncated
    np.testing.assert_array_equal(mr.reduce(f[:200] / 64, dtype="float16"), np.sum(f[:200] / 64, dtype=np.float16))
    np.testing.assert_array_equal(mr.reduce(i8, "xor", 1, dtype=np.int64), np.bitwise_xor.reduce(i8, 1, dtype=np.int64))


def test_where_masks_like_numpys(rng):
    x = rng.integers(-50, 50, size=(8, 9), dtype=np.int32)
    mask = rng.random((8, 9)) < 0.6
    row_mask = rng.random(9) < 0.5  # broadcast over the rows
    for op in ("sum", "prod", "and", "or", "xor"):
        for axis in (None, 0, 1, (0, 1)):
            for m in (mask, row_mask):
                want = _numpy(x, op, axis, where=m, **({"dtype": np.int64} if op in ("sum", "prod") else {}))
                np.testing.assert_array_equal(mr.reduce(x, op, axis, where=m), want, err_msg=f"{op} {axis}")
    f = rng.standard_normal((30, 40))
    fm = rng.random((30, 40)) < 0.3
    # (NumPy adds masked elements one after another, the core pairwise: equal to rounding)
    np.testing.assert_allclose(mr.reduce(f, "sum", 1, where=fm), np.sum(f, axis=1, where=fm), rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match="identity.*initial"):
        mr.reduce(x, "min", where=mask)
    with pytest.raises(TypeError, match="where"):
        mr.reduce(x, "argmax", where=mask)
    with pytest.raises(ValueError, match="broadcast"):
        mr.reduce(x, where=np.ones((3, 8, 9), bool))
    with pytest.raises(TypeError, match="boolean"):
        mr.reduce(x, where=np.ones((8, 9), np.int32))


def test_out_with_keywords(rng):
    x = rng.integers(0, 100, size=(4, 5, 6), dtype=np.int16)
    out = np.full((4, 1, 6), -7, np.int32)
    assert mr.reduce(x, "sum", 1, keepdims=True, dtype="int32", out=out) is out
    np.testing.assert_array_equal(out, np.sum(x, axis=1, keepdims=True, dtype=np.int32))
    with pytest.raises(ValueError, match="shape"):
        mr.reduce(x, "sum", 1, keepdims=True, dtype="int32", out=np.empty((4, 6), np.int32))
    with pytest.raises(TypeError, match="dtype"):
        mr.reduce(x, "sum", (0, 2), out=np.empty(5, np.int32))


def test_keyword_errors_name_numpys_way():
    x = np.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        mr.reduce(x, "sum", (1, -2))
    with pytest.raises(ValueError, match="out of bounds"):
        mr.reduce(x, "sum", (0, 3))
    with pytest.raises(TypeError, match="dtype= applies to sum"):
        mr.reduce(x, "max", dtype="float32")
    with pytest.raises(TypeError, match="bool"):
        mr.reduce(x, dtype=bool)
    with pytest.raises(TypeError, match="keepdims must be True or False"):
        mr.reduce(x, keepdims="yes")
    with pytest.raises(ValueError, match=r"x\.mean\(axis"):
        mr.statistics(x, axis=1)
    got = mr.statistics(x, axis=(0, 1, 2))  # every axis: the whole array
    assert got.sum == x.sum()


def test_lists_are_arrays_and_the_message_says_so():
    assert mr.reduce([1, 2, 3]) == 6
    np.testing.assert_array_equal(mr.reduce([[1.0, 2.0], [3.0, 4.0]], "max", 0), [3.0, 4.0])
    with pytest.raises(TypeError, match="a list, tuple or scalar"):
        mr.reduce({1, 2})


# ---- float window sums: the rule docs/python.md states, against the exact sums ---------------------

def _exact_windows(x, w):
    """Each window's exact sum (math.fsum: correctly rounded to float64) and its sum of |x|."""
    import math

    v = x.astype(np.float64).tolist()
    a = np.abs(x.astype(np.float64))
    exact = np.array([math.fsum(v[i:i + w]) for i in range(len(v) - w + 1)])
    absolute = np.convolve(a, np.ones(w), "valid")
    return exact, absolute


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_float_window_sums_keep_the_stated_bound(rng, dtype):
    w = 1000
    x = (rng.standard_normal(5000) + 0.25).astype(dtype)
    got = mr.window_reduce(x, w)
    exact, s = _exact_windows(x, w)
    err = np.abs(got.astype(np.float64) - exact)
    ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    numpy_err = np.abs(np.lib.stride_tricks.sliding_window_view(x, w).sum(-1).astype(np.float64) - exact)
    if dtype == "float32":  # float64 accumulation, one rounding: half an ulp plus W 2^-53 S
        assert np.all(err <= 0.5 * ulp + w * 2.0**-53 * s), err.max()
        assert err.max() <= numpy_err.max()
    elif dtype == "float16":  # float32 accumulation, one rounding to float16
        assert np.all(err <= 0.5 * ulp + w * 2.0**-24 * s), err.max()
    else:  # in the type: (W - 1) eps S
        assert np.all(err <= (w - 1) * 2.0**-53 * s), err.max()
    cli = os.environ.get("MULTIREDUCE_CLI")
    if cli and dtype == "float32":  # the tool follows the same rule, bit for bit with the module
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            np.save(f"{tmp}/x.npy", x)
            subprocess.run([cli, "reduce", f"{tmp}/x.npy", "--op", "sum", "--window", str(w), "-o", f"{tmp}/w.npy",
                            "--backend", "cpu"], check=True)
            np.testing.assert_array_equal(np.load(f"{tmp}/w.npy"), got)
