"""Every function on NumPy arrays (the CPU backend) against the NumPy references, element by
element: all dtypes and operators, sizes 0, 1, odd and large, NaN, ties, axes, empty segments."""

import numpy as np
import pytest

import multireduce as mr
import reference as ref

SIZES = (0, 1, 31, 33, 1000, (1 << 20) + 7)
ALL_DTYPES = ref.INT_DTYPES + ref.FLOAT_DTYPES


def random_array(rng, dtype, shape):
    d = np.dtype(dtype)
    if d.kind == "f":
        return rng.standard_normal(shape).astype(d)
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, size=shape, dtype=d, endpoint=True)


def assert_same(got, want, dtype, op, exact=True, terms=1, scale=4.0):
    """Exact, or for float sums and products within the rounding of `terms` terms of size `scale`
    (a sliding or blocked sum rounds differently from NumPy's pairwise one)."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if exact or np.dtype(dtype).kind != "f" or op not in ("sum", "prod"):
        np.testing.assert_array_equal(got, want)
    else:
        eps = float(np.finfo(np.dtype(dtype)).eps)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5,
                                   atol=4 * eps * terms * scale)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_whole_array_every_op(rng, dtype, n):
    x = random_array(rng, dtype, n)
    keep = x.copy()
    for op in ref.ops_for(dtype):
        got = mr.reduce(x, op)
        assert isinstance(got, np.ndarray) and got.shape == ()
        # float sums are NumPy's pairwise sums bit for bit; float products agree to rounding
        assert_same(got, ref.reduce(x, op), dtype, op, exact=op != "prod")
    np.testing.assert_array_equal(x, keep)  # the input is never modified


@pytest.mark.parametrize("dtype", ("float16", "float32", "float64"))
def test_nan_wins_and_first_nan_is_found(rng, dtype):
    x = random_array(rng, dtype, 5000)
    x[[17, 4000]] = np.nan
    for op in ("min", "max", "argmin", "argmax", "sum"):
        assert_same(mr.reduce(x, op), ref.reduce(x, op), dtype, op)


@pytest.mark.parametrize("dtype", ("int32", "float32", "uint8"))
def test_ties_give_the_first_index(dtype):
    x = np.array([3, 1, 5, 1, 5, 2], dtype=dtype)
    assert int(mr.reduce(x, "argmin")) == 1 and int(mr.reduce(x, "argmax")) == 2


def test_wrapping_integer_sums_as_numpy():
    x = np.array([2**62, 2**62, 2**62, 2**62], dtype=np.int64)
    assert mr.reduce(x, "sum") == np.sum(x)
    s = mr.statistics(x).sum
    assert s.dtype == np.int64 and s == np.sum(x)


@pytest.mark.parametrize("shape", [(3, 4), (5, 0), (2, 3, 4), (4, 1, 6), (1, 7)])
@pytest.mark.parametrize("dtype", ("int16", "float32", "float64", "uint32"))
def test_every_axis_of_nd_arrays(rng, shape, dtype):
    x = random_array(rng, dtype, shape)
    for axis in range(-len(shape), len(shape)):
        for op in ("sum", "min", "argmax") + (("xor",) if dtype[0] in "iu" else ()):
            got = mr.reduce(x, op, axis=axis)
            assert_same(got, ref.reduce(x, op, axis=axis), dtype, op)


def test_whole_array_of_any_dimension(rng):
    x = random_array(rng, "float32", (3, 5, 7))
    assert_same(mr.reduce(x), ref.reduce(x, "sum"), "float32", "sum")
    assert int(mr.reduce(x, "argmin")) == int(np.argmin(x))


def test_one_big_float32_sum_is_numpys_pairwise_sum(rng):
    x = rng.standard_normal(3_000_017).astype(np.float32)
    got = mr.reduce(x)
    assert got.dtype == np.float32 and got.tobytes() == np.sum(x).tobytes()
    y = np.concatenate([[np.float32(1e8)], np.ones(1000, np.float32)])
    assert mr.reduce(y).tobytes() == np.sum(y).tobytes()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_segmented_offsets_with_empty_segments(rng, dtype):
    x = random_array(rng, dtype, 2000)
    lengths = rng.integers(0, 70, size=60)
    lengths[[0, 5, 59]] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    offsets = offsets[offsets <= len(x)]
    for op in ref.ops_for(dtype):
        got = mr.segmented_reduce(x, op, offsets=offsets)
        assert_same(got, ref.segmented(x, op, offsets), dtype, op, exact=False, terms=70)


@pytest.mark.parametrize("offset_dtype", ("int32", "int64", "uint16", "uint64", "int8"))
def test_offsets_of_any_integer_dtype(offset_dtype):
    x = np.arange(100, dtype=np.int32)
    offsets = np.array([0, 10, 10, 55, 100], dtype=offset_dtype)
    np.testing.assert_array_equal(mr.segmented_reduce(x, "sum", offsets=offsets),
                                  ref.segmented(x, "sum", offsets.astype(np.int64)))
    # a list works too
    np.testing.assert_array_equal(mr.segmented_reduce(x, "max", offsets=[0, 1, 100]), [0, 99])


@pytest.mark.parametrize("length", (1, 3, 32, 1000))
@pytest.mark.parametrize("dtype", ("int32", "int64", "float32", "float64", "uint8", "float16"))
def test_fixed_segments(rng, length, dtype):
    x = random_array(rng, dtype, length * 37)
    for op in ("sum", "min", "max", "argmin"):
        got = mr.segmented_reduce(x, op, segment_length=length)
        assert_same(got, ref.reduce(x.reshape(37, length), op, axis=1), dtype, op, exact=False, terms=length)


@pytest.mark.parametrize("w", (1, 2, 3, 32, 1000, 4001, 4002, 5000))  # 4001 = n, then W > n
@pytest.mark.parametrize("dtype", ("int32", "int64", "float32", "float64", "int8", "float16"))
def test_windows_as_sliding_window_view(rng, w, dtype):
    x = random_array(rng, dtype, 4001)
    for op in ("sum", "min", "max", "argmax") + (("or",) if dtype[0] in "iu" else ()):
        got = mr.window_reduce(x, w, op)
        assert_same(got, ref.window(x, w, op), dtype, op, exact=False, terms=w)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_statistics(rng, dtype, n):
    x = random_array(rng, dtype, n)
    got = mr.statistics(x)
    want = ref.statistics(x)
    assert isinstance(got, mr.Statistics) and got._fields == tuple(want)
    for name, value in want.items():
        g = getattr(got, name)
        assert isinstance(g, np.ndarray) and g.shape == (), name
        if name in ("count", "argmin", "argmax") or (name == "sum" and dtype[0] in "iu"):
            assert int(g) == int(value), name
        elif name in ("min", "max"):
            assert g.dtype == np.dtype(dtype), name
            np.testing.assert_array_equal(g, value)
        else:
            np.testing.assert_allclose(float(g), float(value), rtol=1e-9, atol=1e-9, err_msg=name)


def _specials(dtype):
    """Special values by case: infinities, NaN, and finite values of the dtype's largest size whose
    float64 sum (float64 data) or same-dtype sum (`reduce`) overflows whatever the order of the
    additions, or that cancel. No case mixes an overflow with an infinity of the other sign (NumPy's
    answer there depends on its order of additions)."""
    inf, nan = np.inf, np.nan
    big = 1e308 if dtype == "float64" else float(np.finfo(dtype).max)
    return {
        "+inf": [inf], "-inf": [-inf], "+inf twice": [inf, inf], "+inf and -inf": [inf, -inf], "NaN": [nan],
        "NaN and -inf": [-inf, nan], "+big twice": [big, big], "-big three times": [-big, -big, -big],
        "+big twice and +inf": [big, inf, big], "+big and -big": [big, -big], "+big, -big, -inf": [big, -big, -inf],
    }


def _close_or_same(got, want, name, top=0.0, terms=0):
    """got is want where want is not finite (the same infinity, or NaN); otherwise within 1e-9 of
    it, or within the rounding of sums of `terms` terms up to `top` in size."""
    got, want = float(got), float(want)
    if not np.isfinite(want):
        assert got == want or (np.isnan(got) and np.isnan(want)), (name, got, want)
    else:
        error = abs(got - want)
        assert np.isfinite(got) and (error <= 1e-9 * abs(want) or error <= top * (1e-12 * terms)), (name, got, want)


@pytest.mark.parametrize("dtype", ref.FLOAT_DTYPES)
@pytest.mark.parametrize("n", (3, 7, 1000, 3 * 65536 + 5))
def test_statistics_with_infinities_nan_and_overflow_as_numpy(rng, dtype, n):
    for case, values in _specials(dtype).items():
        x = rng.uniform(-1, 1, n).astype(dtype)
        at = rng.choice(n, len(values), replace=False)
        if rng.integers(3) == 0:
            at[0] = 0  # the first element (the shifted sums' shift) special too
        x[at] = values
        got, want = mr.statistics(x), ref.statistics(x)
        top = float(np.abs(x[np.isfinite(x)].astype(np.float64)).max())  # the sums' terms are up to this
        for name in ("sum", "mean", "var", "std", "l1", "l2"):
            terms = n if name in ("sum", "mean") else 0
            _close_or_same(getattr(got, name), want[name], f"{case} at {sorted(at)}: {name}", top, terms)
        for name in ("min", "max", "argmin", "argmax"):
            np.testing.assert_array_equal(getattr(got, name), want[name], err_msg=f"{case} at {sorted(at)}: {name}")
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(mr.reduce(x, "sum"), np.sum(x), err_msg=f"{case} at {sorted(at)}: reduce")


def test_statistics_of_an_overflowing_float64_sum():
    with np.errstate(all="ignore"):
        for x in ([1e308, 1, 2, 1e308], [-1e308, 1, 2, -1e308], [1e308, 1e308], [1e308, -1e308],
                  [-1e308, np.inf, 1.0], [np.inf, np.inf, -np.inf]):
            x = np.array(x)
            s = mr.statistics(x)
            for name, want in (("sum", np.sum(x)), ("mean", np.mean(x)), ("var", np.var(x)), ("std", np.std(x))):
                np.testing.assert_array_equal(getattr(s, name), want, err_msg=f"{list(x)}: {name}")
            np.testing.assert_array_equal(mr.reduce(x, "sum"), np.sum(x), err_msg=f"{list(x)}: reduce")


@pytest.mark.parametrize("k", (1, 2, 5, 8))
@pytest.mark.parametrize("sizes", [(0, 10), (10, 0), (1, 1), (300, 3), (257, 1000)])
@pytest.mark.parametrize("width", (4, 32, 64))
def test_knn_hamming_cpu(rng, k, sizes, width):
    nq, nt = sizes
    q = rng.integers(0, 256, (nq, width), dtype=np.uint8)
    t = rng.integers(0, 256, (nt, width), dtype=np.uint8)
    t[: nt // 3] = t[nt // 3: 2 * (nt // 3)]  # ties: equal training rows
    dist, idx = mr.knn_hamming(q, t, k, backend="cpu")
    want_dist, want_idx = ref.knn(q, t, k)
    assert dist.dtype == np.int32 and idx.dtype == np.int32
    np.testing.assert_array_equal(dist, want_dist)
    np.testing.assert_array_equal(idx, want_idx)


@pytest.mark.parametrize("rule", [dict(), dict(ratio=0.8), dict(margin=5), dict(max_distance=100),
                                  dict(cross_check=True), dict(ratio=0.9, cross_check=True, max_distance=120)])
def test_match_cpu(rng, rule):
    q = rng.integers(0, 256, (400, 32), dtype=np.uint8)
    t = np.concatenate([q[::2] ^ (rng.random((200, 32)) < 0.02).astype(np.uint8),
                        rng.integers(0, 256, (300, 32), dtype=np.uint8)])
    got = mr.match(q, t, backend="cpu", **rule)
    assert got.dtype == np.int32 and got.ndim == 2 and got.shape[1] == 3
    np.testing.assert_array_equal(got, ref.match(q, t, **rule))


@pytest.mark.parametrize("kind", ("orb256", "brisk512"))
@pytest.mark.parametrize("backend", ("cpu", "auto"))
def test_knn_on_the_sample_pair_is_opencvs(kind, backend):
    """../shared/data's real descriptors (copied to tests/data/match) against OpenCV's knnMatch."""
    import pathlib

    d = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "match" / "astronaut_warp"
    q, t = np.load(d / f"query_{kind}.npy"), np.load(d / f"train_{kind}.npy")
    dist, idx = mr.knn_hamming(q, t, 2, backend=backend)
    np.testing.assert_array_equal(dist, np.load(d / f"knn_{kind}_dist.npy"))
    np.testing.assert_array_equal(idx, np.load(d / f"knn_{kind}_idx.npy"))
    want_dist, want_idx = ref.knn(q[:500], t, 2)  # and the NumPy brute force, on a slice
    np.testing.assert_array_equal(dist[:500], want_dist)


def test_zero_dimensional_inputs():
    x = np.float32(2.5)
    assert mr.reduce(x) == np.float32(2.5) and mr.reduce(np.array(7, np.int16), "argmax") == 0
    assert int(mr.statistics(np.array(3.0)).count) == 1
    with pytest.raises(ValueError, match="axis"):
        mr.reduce(np.array(3.0), axis=0)


def test_a_refused_out_is_left_as_it_was():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.full(4, -7, np.float64)
    with pytest.raises(TypeError):
        mr.reduce(x, "sum", axis=0, out=out)
    np.testing.assert_array_equal(out, -7)
    out = np.full(3, -7, np.float32)
    with pytest.raises(ValueError):
        mr.reduce(x, "sum", axis=0, out=out)
    np.testing.assert_array_equal(out, -7)


def test_match_on_the_sample_pair_is_opencvs():
    import pathlib

    d = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "match" / "astronaut_warp"
    if not (d / "query_orb256.npy").exists():
        pytest.skip("no sample pair")
    q, t = np.load(d / "query_orb256.npy"), np.load(d / "train_orb256.npy")
    got = mr.match(q, t, ratio=0.8, backend="cpu")
    assert len(got) == 5627  # OpenCV's BFMatcher keeps these (README, scripts/demo.sh)


def test_cross_check_with_an_empty_set_keeps_nothing():
    q = np.zeros((0, 32), np.uint8)
    t = np.ones((5, 32), np.uint8)
    assert mr.match(q, t, cross_check=True).shape == (0, 3)
    assert mr.match(t, q, cross_check=True).shape == (0, 3)


def test_out_parameter(rng):
    x = random_array(rng, "float32", (6, 9))
    out = np.full(6, np.nan, np.float32)
    r = mr.reduce(x, "max", axis=1, out=out)
    assert r is out
    np.testing.assert_array_equal(out, x.max(axis=1))
    with pytest.raises(TypeError, match="dtype"):
        mr.reduce(x, "max", axis=1, out=np.empty(6, np.float64))
    with pytest.raises(ValueError, match="shape"):
        mr.reduce(x, "max", axis=1, out=np.empty(7, np.float32))


def test_memory_mapped_and_read_only_inputs(tmp_path, rng):
    x = random_array(rng, "float64", 12345)
    np.save(tmp_path / "x.npy", x)
    m = np.load(tmp_path / "x.npy", mmap_mode="r")
    assert mr.reduce(m).tobytes() == np.sum(x).tobytes()
    y = x.copy()
    y.flags.writeable = False
    assert int(mr.reduce(y, "argmax")) == int(np.argmax(x))


def test_trace_and_version():
    table = mr.trace("select-merge", 4, 8)
    assert "3 selects" in table and "7 shuffles" in table
    assert mr.trace("butterfly", 8, 8).startswith("multireduce trace: 8 batches")
    assert isinstance(mr.__version__, str) and mr.__version__.count(".") == 2


def test_threads_share_nothing(rng):
    import concurrent.futures

    xs = [random_array(rng, "float32", 200_000) for _ in range(8)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        sums = list(pool.map(lambda a: mr.reduce(a), xs))
    for a, s in zip(xs, sums):
        assert s.tobytes() == np.sum(a).tobytes()
