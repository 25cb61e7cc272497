"""multireduce.dask on a local distributed cluster (2 worker processes, 1 thread each) against the
one-process mr.* call on the whole (concatenated) array, element by element: every dtype and
operator, N-d arrays with odd chunks (empty chunks, chunks shorter than the window), NaN, ties
across chunk boundaries; exact where docs/dask.md promises bits, within its bounds for float sums;
match_all byte for byte. CuPy chunks where there is a GPU (skipped elsewhere)."""

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

dask = pytest.importorskip("dask")
pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402
from dask.delayed import Delayed  # noqa: E402

import multireduce as mr  # noqa: E402
import multireduce.dask as mrd  # noqa: E402
import reference as ref  # noqa: E402
from conftest import GPU_FRAMEWORKS  # noqa: E402

ALL_DTYPES = ref.INT_DTYPES + ref.FLOAT_DTYPES
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes of 1 thread (the active client for the module's tests)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
        yield c


def random_array(rng, dtype, shape, small=False):
    d = np.dtype(dtype)
    if d.kind == "f":
        return rng.standard_normal(shape).astype(d)
    if small:  # few distinct values: many ties
        return rng.integers(0, 5, size=shape).astype(d)
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, size=shape, dtype=d, endpoint=True)


def odd_chunks(rng, n, pieces):
    """`pieces` chunk sizes summing to n, uneven, some empty."""
    cuts = np.sort(rng.integers(0, n + 1, pieces - 1))
    return tuple(int(c) for c in np.diff(np.concatenate([[0], cuts, [n]])))


def sum_bound(x, axis, rdtype):
    """docs/dask.md's bound of a float sum: (log2(n) + 32) eps sum|x| over the whole array or the
    last axis (pairwise sums), (n + 32) eps sum|x| over another axis (rows added one after another)."""
    a = np.abs(x.astype(np.float64))
    if axis is None:
        n, total = x.size, a.sum()
        depth = math.log2(max(n, 1)) + 32
    else:
        n, total = x.shape[axis], a.sum(axis=axis)
        depth = (math.log2(max(n, 1)) if axis in (-1, x.ndim - 1) else n) + 32
    return depth * float(np.finfo(rdtype).eps) * total


def assert_reduced(got, want, x, op, axis):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (op, axis, got.dtype, want.dtype, got.shape)
    if want.dtype.kind == "f" and op == "sum":
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bound = sum_bound(x, axis, want.dtype)
        same_nan = np.isnan(got) == np.isnan(want)
        assert same_nan.all(), (op, axis)
        assert (err[~np.isnan(want)] <= np.broadcast_to(bound, err.shape)[~np.isnan(want)]).all(), (op, axis)
    elif want.dtype.kind == "f" and op == "prod":  # (data near 1 here) n eps |product|
        n = x.size if axis is None else x.shape[axis]
        bound = n * float(np.finfo(want.dtype).eps) * np.abs(want.astype(np.float64)) + 1e-300
        np.testing.assert_array_less(np.abs(got.astype(np.float64) - want.astype(np.float64)), bound * 1.0000001)
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{op} axis={axis}")


# ---- reduce ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_whole_1d_every_op(client, rng, dtype):
    n = int(rng.integers(900, 1300))
    chunks = odd_chunks(rng, n, 7)
    x = random_array(rng, dtype, n, small=dtype.startswith("int8"))
    if np.dtype(dtype).kind == "f":
        x[[3, n - 5]] = np.nan  # two NaNs: the first wins argmin/argmax
    ops = ref.ops_for(dtype)
    if np.dtype(dtype).kind == "f":
        ops = [op for op in ops if op != "prod"]
    dx = da.from_array(x, chunks=(chunks,))
    lazy = [mrd.reduce(dx, op, compute=False) for op in ops]
    for op, got in zip(ops, dask.compute(*lazy)):
        assert isinstance(got, np.ndarray) and got.shape == ()
        assert_reduced(got, mr.reduce(x, op), x, op, None)


@pytest.mark.parametrize("dtype", ("int16", "uint64", "float16", "float32"))
def test_reduce_nd_axes_ties_and_nan(client, rng, dtype):
    shape = (37, 29, 11)
    x = random_array(rng, dtype, shape, small=True)
    if np.dtype(dtype).kind == "f":
        x = np.round(x * 2).astype(dtype)  # ties of whole halves
        x.reshape(-1)[rng.choice(x.size, 20, replace=False)] = np.nan
    chunks = (odd_chunks(rng, 37, 5), (10, 0, 19), odd_chunks(rng, 11, 3))
    dx = da.from_array(x, chunks=chunks)
    ops = [op for op in ref.ops_for(dtype) if op != "prod" and op not in ("and", "or", "xor")]
    cases = [(op, axis) for op in ops for axis in (None, 0, 1, -1)]
    got = dask.compute(*[mrd.reduce(dx, op, axis, compute=False, split_every=3) for op, axis in cases])
    for (op, axis), g in zip(cases, got):
        assert_reduced(g, mr.reduce(x, op, axis), x, op, axis)


def test_ties_and_nan_across_chunk_boundaries(client):
    x = np.array([5, 1, 7, 1, 9, 9, 0.5, 0.5, 9], np.float32)  # chunks (2, 2, 3, 2): ties straddle them
    dx = da.from_array(x, chunks=((2, 2, 3, 2),))
    assert int(mrd.reduce(dx, "argmin")) == 6 and int(mrd.reduce(dx, "argmax")) == 4
    y = x.copy()
    y[[5, 8]] = np.nan
    dy = da.from_array(y, chunks=((2, 2, 3, 2),))
    for op in ("argmin", "argmax", "min", "max"):
        np.testing.assert_array_equal(mrd.reduce(dy, op), mr.reduce(y, op))
    assert int(mrd.reduce(dy, "argmin")) == 5
    z = np.array([[0.0, 1.0], [-0.0, 1.0]])  # signed zeros: the first in flat order, as the whole array's
    dz = da.from_array(z, chunks=1)
    for op in ("min", "argmin"):
        got, want = mrd.reduce(dz, op), mr.reduce(z, op)
        assert got.tobytes() == want.tobytes()
    # 2-D chunking: block order is not flat order, indices are still global flat ones
    w = np.zeros((4, 4), np.int32)
    w[0, 3] = w[1, 0] = -1
    assert int(mrd.reduce(da.from_array(w, chunks=2), "argmin")) == 3


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_float_sums_and_products_within_the_bound(client, rng, dtype):
    n = 20011
    x = rng.standard_normal(n).astype(dtype)
    dx = da.from_array(x, chunks=(odd_chunks(rng, n, 13),))
    assert_reduced(mrd.reduce(dx, "sum"), mr.reduce(x, "sum"), x, "sum", None)
    p = (1 + 0.01 * rng.standard_normal(2001)).astype(dtype)
    assert_reduced(mrd.reduce(da.from_array(p, chunks=97), "prod"), mr.reduce(p, "prod"), p, "prod", None)
    m = rng.standard_normal((301, 67)).astype(dtype)
    dm = da.from_array(m, chunks=(41, 20))
    for axis in (0, 1):
        for op in ("sum", "prod"):
            mm = m if op == "sum" else (1 + 0.01 * m).astype(dtype)
            got = mrd.reduce(da.from_array(mm, chunks=dm.chunks), op, axis)
            assert_reduced(got, mr.reduce(mm, op, axis), mm, op, axis)


def assert_numpy_special(got, want, what):
    """got is NumPy's answer where it is not finite: inf with its sign, NaN where NumPy has NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    special = ~np.isfinite(want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    np.testing.assert_array_equal(got[special & ~np.isnan(want)], want[special & ~np.isnan(want)], err_msg=what)
    assert np.isfinite(got[~special]).all(), what


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_float_sums_of_infinities_and_overflow_are_numpys(client, rng, dtype):
    """inf stays inf with its sign, inf + -inf and NaN give NaN, a sum past the dtype's range is inf,
    whatever the number of chunks: the expected value is np.sum of the whole array in its dtype."""
    big = float(np.finfo(dtype).max)
    n = 41
    cases = []  # (what, array, axis, chunks)
    for what in ("inf", "-inf", "both", "nan", "overflow", "-overflow"):
        x = rng.standard_normal(n).astype(dtype)
        where = rng.choice(n, 3, replace=False)
        if what in ("inf", "-inf"):
            x[where] = float(what)
        elif what == "both":
            x[where[:2]], x[where[2]] = np.inf, -np.inf
        elif what == "nan":
            x[where[0]], x[where[1]] = np.inf, np.nan
        else:  # finite values whose sum overflows in any order: same-signed, each past half the range
            sign = -1.0 if what.startswith("-") else 1.0
            x[where] = (sign * big * rng.uniform(0.6, 1.0, 3)).astype(dtype)
        cases += [(what, x, None, chunks) for chunks in (1, 2, 5, 17, n)]  # 41 chunks to 1
    # The reported cases, and along an axis.
    cases.append(("[inf, 1, 2, 3]", np.array([np.inf, 1, 2, 3], dtype), None, 1))
    cases.append(("[-inf, 1, 2, 3]", np.array([-np.inf, 1, 2, 3], dtype), None, 2))
    cases.append(("[[inf, 1], [2, 3]]", np.array([[np.inf, 1], [2, 3]], dtype), 0, 1))
    if dtype == "float32":
        cases.append(("[3e38, 3e38, -3e38, 3e38]", np.array([3e38, 3e38, -3e38, 3e38], dtype), None, 2))
    for axis in (0, 1):
        m = rng.standard_normal((13, 11)).astype(dtype)
        m[rng.integers(0, 13, 4), rng.integers(0, 11, 4)] = [np.inf, -np.inf, np.nan, np.inf]
        m[:, 5] = (big * rng.uniform(0.6, 1.0, 13)).astype(dtype)  # a column and a row that overflow
        m[7, :] = (-big * rng.uniform(0.6, 1.0, 11)).astype(dtype)
        cases += [("a matrix", m, axis, chunks) for chunks in (1, 4, 13)]
    lazy = [mrd.reduce(da.from_array(x, chunks=chunks), "sum", axis, compute=False, split_every=3)
            for _, x, axis, chunks in cases]
    for (what, x, axis, chunks), got in zip(cases, dask.compute(*lazy)):
        label = f"{what}, {dtype}, axis {axis}, chunks of {chunks}"
        with np.errstate(over="ignore", invalid="ignore"):
            want = np.asarray(np.sum(x, axis=axis, dtype=dtype))
        np.testing.assert_array_equal(mr.reduce(x, "sum", axis), want, err_msg=label)  # (mr.reduce: NumPy's)
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, label
        assert not np.isfinite(want).all(), label
        special = ~np.isfinite(want)
        np.testing.assert_array_equal(got[special], want[special], err_msg=label)  # inf with its sign; NaN as NaN
        assert np.isfinite(got[~special]).all(), label
        if (~special).any():  # (2-D arrays) the rest within the bound of finite sums
            kept = np.compress(~special, x, axis=1 - axis)
            assert_reduced(got[~special], want[~special], kept, "sum", axis)


def test_empty_and_zero_d(client):
    for shape in ((0,), (3, 0)):
        x = np.empty(shape, np.float32)
        for op in ("sum", "min", "argmax"):
            np.testing.assert_array_equal(mrd.reduce(da.from_array(x), op), mr.reduce(x, op))
            np.testing.assert_array_equal(mrd.reduce(da.from_array(x), op, axis=0), mr.reduce(x, op, axis=0))
    s = mrd.statistics(da.from_array(np.empty(0, np.int16)))
    for name, v in s._asdict().items():
        np.testing.assert_array_equal(v, getattr(mr.statistics(np.empty(0, np.int16)), name))
    z = np.array(2.5)
    np.testing.assert_array_equal(mrd.reduce(da.from_array(z), "sum"), mr.reduce(z, "sum"))


def test_lazy_results_and_the_default_scheduler(rng):
    """compute=False gives dask arrays / delayed objects; they compute on any scheduler."""
    x = rng.integers(-100, 100, 1000).astype(np.int32)
    dx = da.from_array(x, chunks=77)
    r = mrd.reduce(dx, "argmax", compute=False)
    w = mrd.window_reduce(dx, 9, "max", compute=False)
    s = mrd.statistics(dx, compute=False)
    assert isinstance(r, da.Array) and r.shape == () and isinstance(w, da.Array) and w.shape == (992,)
    assert isinstance(s, Delayed)
    got_r, got_w, got_s = dask.compute(r, w, s, scheduler="sync")
    np.testing.assert_array_equal(got_r, mr.reduce(x, "argmax"))
    np.testing.assert_array_equal(got_w, mr.window_reduce(x, 9, "max"))
    assert int(got_s.sum) == int(x.sum())


# ---- statistics --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_statistics(client, rng, dtype):
    shape = (53, 41)
    x = random_array(rng, dtype, shape, small=dtype in ("int8", "uint8"))
    if dtype == "float32":
        x = (1e4 + x).astype(dtype)  # a large mean: Chan's merge keeps the variance
    dx = da.from_array(x, chunks=(odd_chunks(rng, 53, 6), (17, 24)))
    got, want = mrd.statistics(dx), mr.statistics(x)
    assert type(got) is type(want)
    kind = np.dtype(dtype).kind
    exact = ("count", "min", "argmin", "max", "argmax") + (("sum",) if kind in "iu" else ())
    fits = 2.0**62 if kind == "i" else 2.0**63
    if kind in "iu" and abs(float(want.mean) * x.size) < fits:
        exact += ("mean",)  # the integer sum over the count, where the sum cannot have wrapped
    for name in exact:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert g.dtype == w.dtype and g.shape == () and g.tobytes() == w.tobytes(), (name, g, w)
    n = x.size
    eps = float(np.finfo(np.float64).eps) * (n + 32)
    h = x.astype(np.float64)
    l1 = np.abs(h).sum()
    spread = float(h.max() - h.min()) ** 2
    bounds = dict(sum=eps * l1, l1=eps * l1, mean=eps * l1 / n, var=4 * eps * spread,
                  l2=eps * float(want.l2), std=math.sqrt(4 * eps * spread))
    for name, bound in bounds.items():
        g, w = float(getattr(got, name)), float(getattr(want, name))
        assert np.asarray(getattr(got, name)).dtype == np.asarray(getattr(want, name)).dtype
        assert abs(g - w) <= bound, (name, g, w, bound)


@pytest.mark.parametrize("split_every", [2, 3, 32])
def test_statistics_trees_of_any_fan_in(client, rng, split_every):
    # 40 chunks: two or more levels below the last task for fan-ins 2 and 3, one task for 32.
    x = rng.integers(-1000, 1000, 4000).astype(np.int32)
    x[[5, 3999]] = 1000  # the maximum twice: the first index wins
    dx = da.from_array(x, chunks=100)
    want = mr.statistics(x)
    for lazy in (False, True):
        got = mrd.statistics(dx, split_every=split_every, compute=not lazy)
        got = got.compute() if lazy else got
        for name in ("count", "sum", "mean", "min", "argmin", "max", "argmax"):
            assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(want, name)).tobytes(), name
        assert abs(float(got.var) - float(want.var)) <= 1e-9 * float(want.var)


def test_statistics_nan_and_wrapping_integer_sums(client):
    x = np.arange(20, dtype=np.float64)
    x[[7, 15]] = np.nan
    got, want = mrd.statistics(da.from_array(x, chunks=6)), mr.statistics(x)
    for name in want._fields:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    big = np.array([2**63 - 1, 1, -2**63, -1] * 3 + [2**62] * 5, np.int64)
    got, want = mrd.statistics(da.from_array(big, chunks=3)), mr.statistics(big)
    for name in ("count", "sum", "min", "argmin", "max", "argmax"):
        assert np.asarray(getattr(got, name)).tobytes() == np.asarray(getattr(want, name)).tobytes(), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_statistics_of_infinities_nan_and_overflow_are_numpys(client, dtype):
    # Each case, in every chunking: count, sum, mean, var as NumPy's (inf with its sign, NaN only
    # from a NaN or inf with -inf), min, max and their indices as NumPy's.
    big = float(np.finfo(dtype).max) / 2 if dtype == np.float32 else 1e308
    cases = {"inf": [1, np.inf, 2, 3, 4, 5], "-inf": [1, 2, -np.inf, 3, 4, 5], "both": [np.inf, 1, 2, -np.inf, 3, 4],
             "nan": [1, 2, 3, np.nan, 4, 5], "overflow": [big, 1, 2, big, big, 3],
             "negative overflow": [-big, -big, 1, -big, 2, 3]}
    for label, values in cases.items():
        x = np.array(values, dtype)
        with np.errstate(all="ignore"):
            sum_, mean, var = np.sum(x, dtype=np.float64), np.mean(x, dtype=np.float64), np.var(x, dtype=np.float64)
        for chunks in (1, 2, 3, 6):
            got = mrd.statistics(da.from_array(x, chunks=chunks))
            where = f"{label}, chunks of {chunks}"
            assert int(got.count) == 6, where
            np.testing.assert_allclose(float(got.sum), sum_, rtol=1e-12, err_msg=where)
            np.testing.assert_allclose(float(got.mean), mean, rtol=1e-12, err_msg=where)
            np.testing.assert_allclose(float(got.var), var, rtol=1e-9, err_msg=where)
            for name, want in (("min", np.min(x)), ("argmin", np.argmin(x)), ("max", np.max(x)),
                               ("argmax", np.argmax(x))):
                np.testing.assert_array_equal(np.asarray(getattr(got, name)), want, err_msg=f"{where}: {name}")
            one = mr.statistics(x)
            for name in ("sum", "mean", "min", "argmin", "max", "argmax"):
                np.testing.assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(one, name)),
                                              err_msg=f"{where}: {name} against mr.statistics")


# ---- window_reduce -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_window_reduce(client, rng, dtype):
    n = int(rng.integers(400, 700))
    x = random_array(rng, dtype, n, small=dtype in ("int8", "uint8", "int16"))
    if np.dtype(dtype).kind == "f":
        x[rng.choice(n, 3, replace=False)] = np.nan
    cases = []
    for window in (1, 2, 5, 33, 200):
        ops = ("sum", "min", "max", "argmin", "argmax")
        chunks = odd_chunks(rng, n, 9)  # many chunks shorter than window - 1
        dx = da.from_array(x, chunks=(chunks,))
        cases += [(window, op, chunks, mrd.window_reduce(dx, window, op, compute=False)) for op in ops]
    for (window, op, chunks, _), got in zip(cases, dask.compute(*[c[3] for c in cases])):
        want = mr.window_reduce(x, window, op)
        assert got.dtype == want.dtype and got.shape == want.shape, (window, op)
        if want.dtype.kind == "f" and op == "sum":
            # docs/dask.md: (W + 2) eps sum|x| over the window
            a = np.abs(np.nan_to_num(x.astype(np.float64)))
            span = np.lib.stride_tricks.sliding_window_view(a, window).sum(-1)
            bound = (window + 2) * float(np.finfo(want.dtype).eps) * span
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            ok = ~np.isnan(want)
            assert (np.abs(got[ok].astype(np.float64) - want[ok].astype(np.float64)) <= bound[ok]).all(), \
                (window, chunks)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"window {window} {op} chunks {chunks}")


def test_window_longer_than_the_array(client):
    x = np.arange(5, dtype=np.int32)
    for window in (5, 6, 100):
        np.testing.assert_array_equal(mrd.window_reduce(da.from_array(x, chunks=2), window, "max"),
                                      mr.window_reduce(x, window, "max"))


# ---- match_all ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", (dict(), dict(ratio=0.8), dict(cross_check=True), dict(margin=3, max_distance=110),
                                  dict(ratio=0.9, cross_check=True)), ids=str)
def test_match_all_is_byte_identical(client, rng, rule):
    images = [rng.integers(0, 256, (int(rng.integers(50, 301)), 32), dtype=np.uint8) for _ in range(7)]
    images[2] = np.empty((0, 32), np.uint8)  # an image without descriptors
    pair_list = np.array([[5, 1], [0, 6], [3, 4], [1, 5], [2, 6], [6, 0], [4, 3]])
    for pairs in (dict(), dict(sequential=2), dict(pairs=pair_list)):
        got = mrd.match_all(images, block_images=3, **pairs, **rule)
        want = mr.match_all(images, **pairs, **rule)
        assert type(got) is type(want)
        for name in want._fields:
            g, w = getattr(got, name), getattr(want, name)
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes(), (name, pairs, rule)


def test_match_all_of_delayed_images(client, rng):
    images = [rng.integers(0, 256, (int(n), 64), dtype=np.uint8) for n in rng.integers(50, 200, 5)]
    lazy = [dask.delayed(np.copy)(a) for a in images]
    got = mrd.match_all(lazy, block_images=2, ratio=0.8)
    want = mr.match_all(images, ratio=0.8)
    for name in want._fields:
        assert getattr(got, name).tobytes() == getattr(want, name).tobytes(), name


# ---- errors ------------------------------------------------------------------------------------------


def test_errors_are_mr_errors():
    x = da.from_array(np.arange(10, dtype=np.float32), chunks=3)
    with pytest.raises(TypeError, match="dask array"):
        mrd.reduce(np.arange(3), "sum")
    with pytest.raises(TypeError, match="dask array"):
        mrd.statistics([1, 2, 3])
    with pytest.raises(TypeError, match="bool"):
        mrd.reduce(da.from_array(np.zeros(4, bool)), "sum")
    with pytest.raises(TypeError, match="integer dtype"):
        mrd.reduce(x, "and")
    with pytest.raises(ValueError, match="op must be"):
        mrd.reduce(x, "mean")
    with pytest.raises(ValueError, match="out of bounds"):
        mrd.reduce(x, "sum", axis=1)
    with pytest.raises(TypeError, match="bool"):
        mrd.statistics(da.from_array(np.zeros(4, bool)))
    with pytest.raises(ValueError, match="window must be at least 1"):
        mrd.window_reduce(x, 0)
    with pytest.raises(ValueError, match="1-D"):
        mrd.window_reduce(da.zeros((3, 3), chunks=2), 2)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        mrd.reduce(x[x > 3], "sum")
    with pytest.raises(ValueError, match="split_every"):
        mrd.reduce(x, "sum", split_every=1)
    d = [np.zeros((3, 32), np.uint8)] * 3
    with pytest.raises(ValueError, match="empty"):
        mrd.match_all([])
    with pytest.raises(TypeError, match="uint8"):
        mrd.match_all(d[:2] + [np.zeros((3, 32), np.uint16)])
    with pytest.raises(ValueError, match="widths differ"):
        mrd.match_all(d[:2] + [np.zeros((3, 64), np.uint8)])
    with pytest.raises(ValueError, match="ratio"):
        mrd.match_all(d, ratio=1.5)
    with pytest.raises(ValueError, match="itself"):
        mrd.match_all(d, pairs=[[1, 1]])
    with pytest.raises(ValueError, match="block_images"):
        mrd.match_all(d, block_images=0)


def test_a_chunk_of_another_dtype_is_named(client):
    """A chunk whose dtype is not the one the dask array declares: a TypeError naming the chunk and
    both dtypes, from every function that reads chunks, not NumPy's cast error (or a silent result)."""
    def widen_second(block, block_info=None):
        return block.astype(np.float64) if block_info[0]["chunk-location"] == (1,) else block

    x = da.from_array(np.arange(12, dtype=np.int32), chunks=4).map_blocks(widen_second, dtype=np.int32)
    message = r"chunk \(1,\) of the dask array is float64, but the array's declared dtype is int32"
    for call in (lambda: mrd.reduce(x, "sum"), lambda: mrd.reduce(x, "max"), lambda: mrd.statistics(x),
                 lambda: mrd.window_reduce(x, 3, "sum")):
        with pytest.raises(TypeError, match=message):
            call()
    with pytest.raises(TypeError, match=r"chunk \(0, 1\) of the dask array is float64"):
        mrd.reduce(x[None, :], "sum", axis=1)
    m = da.from_array(np.ones((4, 6), np.float32), chunks=(2, 3)).map_blocks(
        lambda b, block_info=None: b.astype(np.float16) if block_info[0]["chunk-location"] == (1, 0) else b,
        dtype=np.float32)
    with pytest.raises(TypeError, match=r"chunk \(1, 0\) of the dask array is float16, .* declared dtype is float32"):
        mrd.reduce(m, "sum", axis=0)


# ---- CuPy chunks -------------------------------------------------------------------------------------

HAS_CUPY = any(name == "cupy" for name, _, _ in GPU_FRAMEWORKS)


@pytest.fixture(scope="module")
def gpu_client():
    """dask_cuda's LocalCUDACluster where dask_cuda imports, else a LocalCluster of one worker."""
    try:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=1, dashboard_address=":0")
    except ImportError:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.skipif(not HAS_CUPY, reason="no CuPy with a GPU here")
def test_cupy_chunks(gpu_client, rng):
    import cupy

    x = rng.standard_normal((301, 67)).astype(np.float32)
    x[5, 6] = np.nan
    dx = da.from_array(cupy.asarray(x), chunks=(41, 20), asarray=False)
    for op in ("sum", "min", "argmax"):
        for axis in (None, 0, 1):
            got = mrd.reduce(dx, op, axis)
            assert isinstance(got, cupy.ndarray)
            assert_reduced(cupy.asnumpy(got), mr.reduce(x, op, axis), x, op, axis)
    s = mrd.statistics(dx)
    assert isinstance(s.sum, cupy.ndarray) and int(s.argmin) == int(mr.statistics(x).argmin)
    v = rng.integers(-50, 50, 1000).astype(np.int32)
    got = mrd.window_reduce(da.from_array(cupy.asarray(v), chunks=7, asarray=False), 33, "max")
    np.testing.assert_array_equal(cupy.asnumpy(got), mr.window_reduce(v, 33, "max"))
    images = [rng.integers(0, 256, (n, 32), dtype=np.uint8) for n in (60, 120, 90, 30)]
    got = mrd.match_all([cupy.asarray(a) for a in images], block_images=2, ratio=0.8)
    want = mr.match_all(images, ratio=0.8)
    for name in want._fields:
        assert cupy.asnumpy(getattr(got, name)).tobytes() == getattr(want, name).tobytes(), name


# ---- the example -------------------------------------------------------------------------------------


def test_example_dask_statistics_runs():
    script = REPO / "examples" / "dask_statistics.py"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(mr.__file__)),
                                                    env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agrees" in done.stdout
