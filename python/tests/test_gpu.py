"""Device arrays (CuPy, PyTorch; JAX when it has a GPU): used in place, results in the input's
framework on its device, equal to the NumPy references. Skipped without a GPU."""

import numpy as np
import pytest

import multireduce as mr
import reference as ref
from conftest import gpu_params
from test_numpy import assert_same, random_array

FW = gpu_params()


def is_device_array(a, name):
    if name == "cupy":
        import cupy

        return isinstance(a, cupy.ndarray)
    import torch

    return isinstance(a, torch.Tensor) and a.is_cuda


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("int8", "int32", "int64", "uint16", "uint64", "float32", "float64"))
@pytest.mark.parametrize("n", (0, 1, 1000, 1_000_003))
def test_whole_array_on_the_gpu(rng, fw, dtype, n):
    name, to_device, to_numpy = fw
    if name == "torch" and dtype in ("uint16", "uint64"):
        pytest.skip("PyTorch has few unsigned kernels (used here only to make the input)")
    x = random_array(rng, dtype, n)
    d = to_device(x)
    for op in ref.ops_for(dtype):
        got = mr.reduce(d, op)
        assert is_device_array(got, name) and tuple(got.shape) == ()
        assert_same(to_numpy(got), ref.reduce(x, op), dtype, op, exact=False, terms=64, scale=float(np.abs(x).max(initial=1)) * 8)
    np.testing.assert_array_equal(to_numpy(d), x)


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("int32", "int64", "float32", "float64"))
def test_shapes_on_the_gpu(rng, fw, dtype):
    name, to_device, to_numpy = fw
    x = random_array(rng, dtype, 50_000)
    d = to_device(x)
    lengths = rng.integers(0, 65, size=2000)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    offsets = offsets[offsets <= len(x)]
    for op in ("sum", "min", "max"):
        got = mr.segmented_reduce(d, op, offsets=to_device(offsets))
        assert is_device_array(got, name)
        assert_same(to_numpy(got), ref.segmented(x, op, offsets), dtype, op, exact=False, terms=64)
        got = mr.segmented_reduce(d, op, offsets=offsets.astype(np.int32))  # host int32 offsets: moved
        assert_same(to_numpy(got), ref.segmented(x, op, offsets), dtype, op, exact=False, terms=64)
        got = mr.segmented_reduce(d, op, segment_length=50)
        assert_same(to_numpy(got), ref.reduce(x.reshape(-1, 50), op, axis=1), dtype, op, exact=False, terms=50)
        for w in (1, 7, 1000):
            got = mr.window_reduce(d, w, op)
            assert_same(to_numpy(got), ref.window(x, w, op), dtype, op, exact=False, terms=w)
        got = mr.reduce(d.reshape(500, 100), op, axis=-1)
        assert_same(to_numpy(got), ref.reduce(x.reshape(500, 100), op, axis=-1), dtype, op, exact=False, terms=100)


@pytest.mark.parametrize("fw", FW)
def test_jobs_the_gpu_does_not_run_fall_back_for_auto(rng, fw):
    name, to_device, to_numpy = fw
    x = random_array(rng, "float16", 1001)
    d = to_device(x)
    got = mr.reduce(d, "max")
    assert is_device_array(got, name) and to_numpy(got) == x.max()
    with pytest.raises(TypeError, match="backend='cuda'.*float16"):
        mr.reduce(d, "max", backend="cuda")
    y = random_array(rng, "float32", (40, 30))
    got = mr.reduce(to_device(y), "sum", axis=0)  # not the last axis: NumPy's order, on the CPU
    assert is_device_array(got, name)
    assert to_numpy(got).tobytes() == y.sum(axis=0).tobytes()


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("int32", "uint8", "float32", "float64"))
def test_statistics_on_the_gpu(rng, fw, dtype):
    name, to_device, to_numpy = fw
    x = random_array(rng, dtype, 300_001)
    got = mr.statistics(to_device(x))
    want = ref.statistics(x)
    for field, value in want.items():
        g = getattr(got, field)
        assert is_device_array(g, name) and tuple(g.shape) == (), field
        g = to_numpy(g)
        if field in ("count", "argmin", "argmax", "min", "max") or (field == "sum" and dtype[0] in "iu"):
            assert g == value, field
        else:
            np.testing.assert_allclose(float(g), float(value), rtol=1e-9, err_msg=field)


@pytest.mark.parametrize("fw", FW)
def test_device_offsets_are_checked(fw):
    name, to_device, _ = fw
    d = to_device(np.arange(100, dtype=np.float32))
    for bad, message in (([0, 50, 40, 100], "non-decreasing.*offsets\\[1\\] = 50 > offsets\\[2\\] = 40"),
                         ([0, 101], "past the end"), ([-3, 10], "negative")):
        with pytest.raises(ValueError, match=message):
            mr.segmented_reduce(d, "sum", offsets=to_device(np.array(bad, np.int64)))


def many_short_segments(rng, dtype, to_device):
    """x (200,000 random elements), its device copy, and offsets of about 8,000 segments of 0..39."""
    x = random_array(rng, dtype, 200_000)
    good = np.concatenate([[0], np.cumsum(rng.integers(0, 40, size=8000))])
    good = good[good <= len(x)]
    return x, to_device(x), good, len(good) - 1


def wild_offsets(good, n):
    """good with one offset made wild: huge mid-way, very negative, a negative first, past the end."""
    segments = len(good) - 1
    for s, value in ((4000, 10**12), (2500, -(10**12)), (0, -5), (segments, n + 1)):
        bad = good.copy()
        bad[s] = value
        yield bad


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("float32", "int64"))
def test_bad_device_offsets_among_many_short_segments(rng, fw, dtype):
    """Many short segments take the kernel that checks offsets as it reads them (no out=): wild
    offsets give the first bad one's ValueError, no fault, and the next call is right; with out=
    they are checked before anything runs, and out keeps what it held."""
    _, to_device, to_numpy = fw
    x, d, good, segments = many_short_segments(rng, dtype, to_device)
    messages = ("past the end|non-decreasing", "non-decreasing", "negative", "past the end")
    for bad, message in zip(wild_offsets(good, len(x)), messages):
        with pytest.raises(ValueError, match=message):
            mr.segmented_reduce(d, "sum", offsets=to_device(bad))
        got = mr.segmented_reduce(d, "sum", offsets=to_device(good))  # the check's mark is clear again
        assert_same(to_numpy(got), ref.segmented(x, "sum", good), dtype, "sum", exact=False, terms=40)
        out = to_device(np.full(segments, 7, dtype=ref.result_dtype("sum", dtype)))
        with pytest.raises(ValueError, match=message):
            mr.segmented_reduce(d, "sum", offsets=to_device(bad), out=out)
        assert (to_numpy(out) == 7).all()
    np.testing.assert_array_equal(to_numpy(d), x)


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("float32", "int64"))
def test_vouched_device_offsets(rng, fw, dtype):
    """check_offsets=False: good offsets give the checked call's result bit for bit, with or
    without out=; wild ones raise nothing and fault nothing (the kernel clamps them), leave the
    check's mark clear for the next checked call, and x untouched. Few long segments are still
    checked."""
    _, to_device, to_numpy = fw
    x, d, good, segments = many_short_segments(rng, dtype, to_device)
    want = to_numpy(mr.segmented_reduce(d, "sum", offsets=to_device(good)))
    assert_same(want, ref.segmented(x, "sum", good), dtype, "sum", exact=False, terms=40)
    np.testing.assert_array_equal(to_numpy(mr.segmented_reduce(d, "sum", offsets=to_device(good), check_offsets=False)),
                                  want)
    out = to_device(np.full(segments, 7, dtype=ref.result_dtype("sum", dtype)))
    assert mr.segmented_reduce(d, "sum", offsets=to_device(good), out=out, check_offsets=False) is out
    np.testing.assert_array_equal(to_numpy(out), want)
    for bad in wild_offsets(good, len(x)):
        got = mr.segmented_reduce(d, "sum", offsets=to_device(bad), check_offsets=False)
        assert tuple(got.shape) == (segments,)
        to_numpy(got)  # waits for the kernel: a fault would surface here as CudaError
        np.testing.assert_array_equal(to_numpy(mr.segmented_reduce(d, "sum", offsets=to_device(good))), want)
    long_bad = np.array([0, 150_000, 100_000, len(x)], np.int64)  # mean length over 40: checked anyway
    with pytest.raises(ValueError, match="non-decreasing"):
        mr.segmented_reduce(d, "sum", offsets=to_device(long_bad), check_offsets=False)
    np.testing.assert_array_equal(to_numpy(d), x)


def current_stream_handle(name):
    if name == "torch":
        import torch

        return torch.cuda.current_stream().cuda_stream
    import cupy

    return cupy.cuda.get_current_stream().ptr


@pytest.mark.parametrize("fw", FW)
def test_direct_path_agrees_with_the_general_path(rng, fw, monkeypatch):
    """Once a framework's array type has been met, a whole-array reduce, the statistics, a
    fixed-length segmented reduce, or an offsets job with int64 offsets of the same framework, of
    contiguous device arrays on the current stream reads them by the import's fast path (no
    import_general): bit for bit the general import's result (taken here by naming the stream),
    and what the fast path does not take still gets the general import's answer or error."""
    name, to_device, to_numpy = fw
    x, d, good, segments = many_short_segments(rng, "float32", to_device)
    i = to_device(random_array(rng, "int32", 5000))
    off = to_device(good)
    mr.reduce(d), mr.reduce(i), mr.segmented_reduce(d, offsets=off)  # the types are met
    handle = current_stream_handle(name)
    arrays = {"float32": d, "int32": i}
    general = {(op, y): to_numpy(mr.reduce(arrays[y], op, stream=handle)).tobytes()
               for op in ("sum", "min", "argmax") for y in arrays}
    general["segments"] = to_numpy(mr.segmented_reduce(d, "max", offsets=off, stream=handle)).tobytes()
    general_stats = {y: [to_numpy(v).tobytes() for v in mr.statistics(arrays[y], stream=handle)] for y in arrays}
    general_fixed = {(op, y): to_numpy(mr.segmented_reduce(arrays[y], op, segment_length=40, stream=handle)).tobytes()
                     for op in ("sum", "min", "max") for y in arrays}  # (what the GPU runs)
    imports = []
    real_import = mr._arrays.import_general

    def counted(*args):
        imports.append(args[1])
        return real_import(*args)

    monkeypatch.setattr(mr._arrays, "import_general", counted)
    for (op, y), want in list(general.items())[:-1]:
        assert to_numpy(mr.reduce(arrays[y], op)).tobytes() == want, (op, y)
    assert to_numpy(mr.segmented_reduce(d, "max", offsets=off)).tobytes() == general["segments"]
    assert to_numpy(mr.segmented_reduce(d, "max", offsets=off, check_offsets=False)).tobytes() == general["segments"]
    for y, want in general_stats.items():
        for _ in range(3):  # (records of one slab, one after another)
            got = mr.statistics(arrays[y])
            assert all(is_device_array(v, name) and tuple(v.shape) == () for v in got)
            assert [to_numpy(v).tobytes() for v in got] == want, y
    for (op, y), want in general_fixed.items():
        assert to_numpy(mr.segmented_reduce(arrays[y], op, segment_length=40)).tobytes() == want, (op, y)
    assert imports == []
    # int32 or host offsets (converted to int64 on the host), and errors; x is still read by the
    # import's fast path (one call path: there is no other path for x to take)
    assert to_numpy(mr.segmented_reduce(d, "max", offsets=to_device(good.astype(np.int32)))).tobytes() == general["segments"]
    assert to_numpy(mr.segmented_reduce(d, "max", offsets=good)).tobytes() == general["segments"]
    assert "x" not in imports
    with pytest.raises(ValueError, match="1-D"):
        mr.segmented_reduce(d.reshape(1000, 200), offsets=to_device(np.array([0, 1000], np.int64)))
    with pytest.raises(ValueError, match="1-D"):
        mr.segmented_reduce(d.reshape(1000, 200), segment_length=10)
    with pytest.raises(ValueError, match="multiple"):
        mr.segmented_reduce(d, segment_length=7)
    with pytest.raises(ValueError, match="negative"):
        mr.segmented_reduce(d, segment_length=-1)
    with pytest.raises(ValueError, match="empty"):
        mr.segmented_reduce(d, segment_length=0)
    np.testing.assert_array_equal(to_numpy(mr.reduce(d.reshape(1000, 200).T, "max", 1)), x.reshape(1000, 200).max(0))
    with pytest.raises(ValueError, match="op must be one of"):
        mr.reduce(d, "mean")
    with pytest.raises(TypeError, match="integer"):
        mr.reduce(d, "xor")
    with pytest.raises(ValueError, match="backend"):
        mr.reduce(d, backend="gpu")


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("k", (1, 2, 8))
def test_knn_and_match_on_the_gpu(rng, fw, k):
    name, to_device, to_numpy = fw
    q = rng.integers(0, 256, (1000, 32), dtype=np.uint8)
    t = np.concatenate([q[::2] ^ (rng.random((500, 32)) < 0.02).astype(np.uint8),
                        rng.integers(0, 256, (3000, 32), dtype=np.uint8)])
    dist, idx = mr.knn_hamming(to_device(q), to_device(t), k)
    assert is_device_array(dist, name) and is_device_array(idx, name)
    want_dist, want_idx = ref.knn(q, t, k)
    np.testing.assert_array_equal(to_numpy(dist), want_dist)
    np.testing.assert_array_equal(to_numpy(idx), want_idx)
    for rule in (dict(ratio=0.8), dict(cross_check=True), dict(margin=3, max_distance=60)):
        got = mr.match(to_device(q), to_device(t), **rule)
        assert is_device_array(got, name)
        np.testing.assert_array_equal(to_numpy(got), ref.match(q, t, **rule))
    # host arrays take the GPU too (auto), with the same answer
    np.testing.assert_array_equal(mr.knn_hamming(q, t, k)[1], want_idx)


@pytest.mark.parametrize("fw", FW)
def test_out_and_streams(rng, fw):
    name, to_device, to_numpy = fw
    x = random_array(rng, "float32", (64, 1000))
    d = to_device(x)
    out = to_device(np.full(64, np.nan, np.float32))
    assert mr.reduce(d, "max", axis=1, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), x.max(axis=1))
    if name == "torch":
        import torch

        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            y = d * 2  # queued on s; the reduction must come after it (the current stream)
            got = mr.reduce(y, "max")
        s.synchronize()
        assert to_numpy(got) == np.float32(x.max() * 2)
        got = mr.reduce(d, "min", stream=s)
        s.synchronize()
        assert to_numpy(got) == x.min()
    else:
        import cupy

        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            y = d * 2
            got = mr.reduce(y, "max")
        s.synchronize()
        assert to_numpy(got) == np.float32(x.max() * 2)
        got = mr.reduce(d, "min", stream=s.ptr)
        s.synchronize()
        assert to_numpy(got) == x.min()


@pytest.mark.parametrize("fw", FW)
def test_non_contiguous_device_arrays_are_read_from_a_copy(fw):
    _, to_device, to_numpy = fw
    x = np.arange(100, dtype=np.float32).reshape(10, 10)
    d = to_device(x)
    np.testing.assert_array_equal(to_numpy(mr.reduce(d.T, "sum", 1)), x.T.sum(1))


def test_jax_arrays_when_jax_has_a_gpu(rng):
    jax = pytest.importorskip("jax")
    try:
        devices = jax.devices("gpu")
    except RuntimeError:
        devices = []
    if not devices or not mr.cuda_available():
        pytest.skip("JAX has no GPU here")
    x = random_array(rng, "float32", 100_000)
    d = jax.device_put(x, devices[0])
    got = mr.reduce(d, "max")
    assert isinstance(got, jax.Array) and float(got) == x.max()
    s = mr.statistics(d)
    assert isinstance(s.mean, jax.Array) and abs(float(s.mean) - x.astype(np.float64).mean()) < 1e-9
    w = mr.window_reduce(d, 10, "min")
    np.testing.assert_array_equal(np.asarray(w), ref.window(x, 10, "min"))


@pytest.mark.parametrize("fw", FW)
@pytest.mark.parametrize("dtype", ("int32", "int64", "float32", "float64"))
def test_device_arrays_give_the_host_path_gpu_answers_bit_for_bit(rng, fw, dtype):
    """The CLI's GPU backend takes host arrays; device arrays must give the same bits."""
    _, to_device, to_numpy = fw
    x = random_array(rng, dtype, 3_000_000)
    d = to_device(x)
    for op in ("sum", "min", "max", "argmin", "argmax") + (("xor",) if dtype[0] == "i" else ()):
        assert to_numpy(mr.reduce(d, op)).tobytes() == mr.reduce(x, op, backend="cuda").tobytes(), op
    for w in (1, 32, 1000):
        assert to_numpy(mr.window_reduce(d, w, "sum")).tobytes() == mr.window_reduce(x, w, "sum", backend="cuda").tobytes()
    assert (to_numpy(mr.segmented_reduce(d, "max", segment_length=1000)).tobytes()
            == mr.segmented_reduce(x, "max", segment_length=1000, backend="cuda").tobytes())


@pytest.mark.parametrize("fw", FW)
def test_many_whole_array_results_stay_apart(fw):
    """Whole-array results are slots of shared slabs: 2,500 of them (past two slabs), of two result
    dtypes, each keep their own value after every later call."""
    name, to_device, to_numpy = fw
    ints = [to_device(np.full(7, i, np.int32)) for i in range(50)]
    floats = [to_device(np.full(5, i, np.float32)) for i in range(50)]
    results = [(mr.reduce(ints[i % 50], "sum"), mr.reduce(floats[i % 50], "max")) for i in range(2500)]
    for i, (total, largest) in enumerate(results):
        assert is_device_array(total, name) and tuple(total.shape) == ()
        assert int(to_numpy(total)) == 7 * (i % 50) and float(to_numpy(largest)) == i % 50, i


@pytest.mark.parametrize("fw", FW)
def test_zero_copy(rng, fw):
    """The input is read in place: no allocation of its size in the framework's memory."""
    name, to_device, _ = fw
    x = random_array(rng, "float32", 1 << 24)  # 64 MiB
    d = to_device(x)
    if name == "torch":
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        results = (mr.reduce(d, "max"), mr.statistics(d), mr.segmented_reduce(d, "min", segment_length=1024))
        torch.cuda.synchronize()
        grown = torch.cuda.max_memory_allocated() - before
        del results
    else:
        import cupy

        pool = cupy.get_default_memory_pool()
        before = pool.used_bytes()
        results = (mr.reduce(d, "max"), mr.statistics(d))
        grown = pool.used_bytes() - before
        del results
    assert grown < x.nbytes // 4, f"{grown} bytes allocated for a {x.nbytes}-byte input"


def test_past_two_to_the_31_elements():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not mr.cuda_available():
        pytest.skip("no GPU")
    n = (1 << 31) + 5
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    x[-1] = 3
    assert int(mr.reduce(x, "sum")) == n + 2
    assert int(mr.reduce(x, "argmax")) == n - 1
    s = mr.statistics(x)
    assert int(s.count) == n and int(s.argmax) == n - 1
    del x
    torch.cuda.empty_cache()


# ---- CUDA graphs: calls captured once, replayed on new data ---------------------------------------

GRAPH_N, GRAPH_ROWS, GRAPH_L, GRAPH_SEGMENTS, GRAPH_REPLAYS = 100_000, 100, 50, 4000, 100


def graph_data(rng):
    """Host data for the captured inputs: x (float32, also seen as GRAPH_ROWS rows), xi (int32),
    int64 offsets of GRAPH_SEGMENTS segments of x (a mean length of 25: the kernel that takes
    unchecked offsets under capture), and 256-bit descriptors q and t."""
    offsets = np.sort(rng.integers(0, GRAPH_N + 1, GRAPH_SEGMENTS + 1)).astype(np.int64)
    return dict(x=random_array(rng, "float32", GRAPH_N), xi=random_array(rng, "int32", GRAPH_N), o=offsets,
                q=rng.integers(0, 256, (300, 32), dtype=np.uint8), t=rng.integers(0, 256, (2000, 32), dtype=np.uint8))


def graph_calls(d):
    """The calls that are captured (and run eagerly to check each replay) on the device arrays d
    (graph_data's, by name): (label, result) pairs."""
    x = d["x"]
    calls = [("sum", mr.reduce(x)), ("argmin", mr.reduce(x, "argmin")), ("max", mr.reduce(x, "max")),
             ("int sum", mr.reduce(d["xi"])), ("rows", mr.reduce(x.reshape(GRAPH_ROWS, -1), axis=-1))]
    calls += [(f"statistics.{name}", value) for name, value in zip(mr.Statistics._fields, mr.statistics(x))]
    calls += [("fixed", mr.segmented_reduce(x, segment_length=GRAPH_L)),
              ("offsets", mr.segmented_reduce(x, offsets=d["o"], check_offsets=False)),
              ("window", mr.window_reduce(x, 7, "max"))]
    dist, idx = mr.knn_hamming(d["q"], d["t"], 2)
    return calls + [("knn dist", dist), ("knn idx", idx)]


def check_replays(rng, d, captured, refill, replay, to_numpy):
    """GRAPH_REPLAYS times: new data into d's buffers in place (refill), the graph replayed, and every
    captured result (graph_calls' pairs) equal, bit for bit, to an eager call's on that data."""
    for r in range(GRAPH_REPLAYS):
        refill(graph_data(rng))
        replay()
        eager = graph_calls(d)
        assert [label for label, _ in eager] == [label for label, _ in captured]
        for (label, got), (_, want) in zip(captured, eager):
            got, want = to_numpy(got), to_numpy(want)
            assert got.dtype == want.dtype and got.shape == want.shape, label
            assert got.tobytes() == want.tobytes(), (r, label)


def torch_with_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not mr.cuda_available():
        pytest.skip("no GPU for PyTorch here")
    return torch


def cupy_with_gpu():
    cupy = pytest.importorskip("cupy")
    try:
        ok = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 -- CuPy without a driver
        ok = False
    if not ok or not mr.cuda_available():
        pytest.skip("no GPU for CuPy here")
    return cupy


def test_cuda_graph_capture_torch(rng):
    """Every function captured into a torch.cuda.graph (its results allocated from the graph's
    pool during capture), replayed on new data written into the captured inputs."""
    torch = torch_with_gpu()
    d = {name: torch.from_numpy(a).cuda() for name, a in graph_data(rng).items()}
    graph_calls(d)  # eager first: everything loaded before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = graph_calls(d)

    def refill(host):
        for name, a in host.items():
            d[name].copy_(torch.from_numpy(a))

    check_replays(rng, d, captured, refill, graph.replay, lambda t: t.cpu().numpy())


def test_cuda_graph_capture_cupy(rng):
    """The same with cupy.cuda.Graph: captured by begin_capture()/end_capture() on a non-default
    stream, replayed there on new data."""
    cupy = cupy_with_gpu()
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        d = {name: cupy.asarray(a) for name, a in graph_data(rng).items()}
        graph_calls(d)  # eager first, on the stream
        stream.synchronize()
        stream.begin_capture()
        try:
            captured = graph_calls(d)
        finally:
            graph = stream.end_capture()
        assert not stream.is_capturing()

        def refill(host):
            for name, a in host.items():
                d[name][...] = cupy.asarray(a)

        check_replays(rng, d, captured, refill, lambda: graph.launch(stream=stream), cupy.asnumpy)


def test_checked_offsets_under_capture_are_refused_torch(rng):
    """Offsets checked on the GPU need a read-back, which capture cannot do: ValueError saying to
    pass check_offsets=False, the capture ending cleanly (the graph's other work replays)."""
    torch = torch_with_gpu()
    host = graph_data(rng)
    x, o = torch.from_numpy(host["x"]).cuda(), torch.from_numpy(host["o"]).cuda()
    mr.reduce(x), mr.segmented_reduce(x, offsets=o, check_offsets=False)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total = mr.reduce(x)
        with pytest.raises(ValueError, match="check_offsets=False"):
            mr.segmented_reduce(x, offsets=o)
    assert not torch.cuda.is_current_stream_capturing()
    x.copy_(torch.from_numpy(host["x"][::-1].copy()))
    graph.replay()
    assert to_bytes(total.cpu().numpy()) == to_bytes(mr.reduce(x).cpu().numpy())


def test_checked_offsets_under_capture_are_refused_cupy(rng):
    cupy = cupy_with_gpu()
    host = graph_data(rng)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x, o = cupy.asarray(host["x"]), cupy.asarray(host["o"])
        mr.reduce(x), mr.segmented_reduce(x, offsets=o, check_offsets=False)
        stream.synchronize()
        stream.begin_capture()
        try:
            total = mr.reduce(x)
            with pytest.raises(ValueError, match="check_offsets=False"):
                mr.segmented_reduce(x, offsets=o)
        finally:
            graph = stream.end_capture()
        assert not stream.is_capturing()
        x[...] = cupy.asarray(host["x"][::-1].copy())
        graph.launch(stream=stream)
        assert to_bytes(cupy.asnumpy(total)) == to_bytes(cupy.asnumpy(mr.reduce(x)))


def to_bytes(a):
    return np.asarray(a).tobytes()


@pytest.mark.parametrize("fw", FW)
def test_match_all_on_the_gpu(rng, fw):
    name, to_device, to_numpy = fw
    images = [rng.integers(0, 256, (n, 32), dtype=np.uint8) for n in (300, 0, 1, 129, 257, 40)]
    images[4][:100] = images[0][:100] ^ (rng.random((100, 32)) < 0.02).astype(np.uint8)  # true matches
    for rule in (dict(ratio=0.8), dict(ratio=0.9, cross_check=True), dict(max_distance=60)):
        got = mr.match_all([to_device(d) for d in images], **rule)
        assert all(is_device_array(a, name) for a in got)
        offsets, matches = to_numpy(got.offsets), to_numpy(got.matches)
        for p, (i, j) in enumerate(to_numpy(got.pairs)):
            np.testing.assert_array_equal(matches[offsets[p]:offsets[p + 1]], ref.match(images[i], images[j], **rule))
        np.testing.assert_array_equal(to_numpy(got.pair(0, 4)), ref.match(images[0], images[4], **rule))
    # backend "cpu" takes host copies; the same answer in the input's framework
    got = mr.match_all([to_device(d) for d in images], ratio=0.8, backend="cpu")
    np.testing.assert_array_equal(to_numpy(got.matches), mr.match_all(images, ratio=0.8).matches)
