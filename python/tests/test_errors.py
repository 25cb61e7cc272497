"""Bad arguments: the right exception, a message naming the argument, and the input untouched."""

import numpy as np
import pytest

import multireduce as mr


def test_dtypes_are_type_errors():
    with pytest.raises(TypeError, match="bool"):
        mr.reduce(np.zeros(3, bool))
    with pytest.raises(TypeError, match="complex"):
        mr.reduce(np.zeros(3, np.complex64))
    with pytest.raises(TypeError, match="integer"):
        mr.reduce(np.zeros(3, np.float32), "xor")
    with pytest.raises(TypeError, match="uint8"):
        mr.knn_hamming(np.zeros((2, 4), np.int8), np.zeros((2, 4), np.int8))
    with pytest.raises(TypeError, match="byte order"):
        mr.reduce(np.zeros(3, ">f4"))
    with pytest.raises(TypeError, match="integers"):
        mr.segmented_reduce(np.zeros(4, np.float32), offsets=np.array([0.0, 4.0]))
    with pytest.raises(TypeError, match="NumPy array"):
        mr.reduce(object())
    with pytest.raises(TypeError, match="object"):
        mr.reduce(np.array([1, "a"], dtype=object))
    with pytest.raises(TypeError, match="complex"):
        mr.statistics(np.zeros(3, np.complex128))


def test_shapes_and_values_are_value_errors():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pytest.raises(ValueError, match="op must be one of"):
        mr.reduce(x, "mean")
    with pytest.raises(ValueError, match="axis 2"):
        mr.reduce(x, axis=2)
    with pytest.raises(ValueError, match="window must be at least 1"):
        mr.window_reduce(np.arange(5.0), 0)
    with pytest.raises(ValueError, match="1-D"):
        mr.window_reduce(x, 2)
    with pytest.raises(ValueError, match="non-decreasing"):
        mr.segmented_reduce(np.arange(10.0), offsets=[0, 5, 3, 10])
    with pytest.raises(ValueError, match="past the end"):
        mr.segmented_reduce(np.arange(10.0), offsets=[0, 11])
    with pytest.raises(ValueError, match="negative"):
        mr.segmented_reduce(np.arange(10.0), offsets=[-1, 5])
    with pytest.raises(ValueError, match="non-decreasing"):  # host offsets are checked whatever the caller says
        mr.segmented_reduce(np.arange(10.0), offsets=[0, 5, 3, 10], check_offsets=False)
    with pytest.raises(ValueError, match="exactly one"):
        mr.segmented_reduce(np.arange(10.0))
    with pytest.raises(ValueError, match="multiple of segment_length"):
        mr.segmented_reduce(np.arange(10.0), segment_length=3)
    with pytest.raises(ValueError, match="widths differ"):
        mr.knn_hamming(np.zeros((2, 32), np.uint8), np.zeros((2, 64), np.uint8))
    with pytest.raises(ValueError, match="k must be"):
        mr.knn_hamming(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), k=9)
    with pytest.raises(ValueError, match="multiple of 4"):
        mr.knn_hamming(np.zeros((2, 3), np.uint8), np.zeros((2, 3), np.uint8))
    for bad in (0, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="ratio"):
            mr.match(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), ratio=bad)
    with pytest.raises(ValueError, match="backend"):
        mr.reduce(x, backend="gpu")
    with pytest.raises(ValueError, match="algorithm"):
        mr.trace("nope")
    with pytest.raises(ValueError, match="batches"):
        mr.trace(batches=17)
    with pytest.raises(TypeError, match="window"):
        mr.window_reduce(np.arange(5.0), 2.5)


def test_strided_inputs_are_read_from_a_copy():
    x = np.arange(20, dtype=np.float32)
    assert mr.reduce(x[::2]) == x[::2].sum()
    np.testing.assert_array_equal(mr.reduce(np.arange(12.0).reshape(3, 4).T, "sum", 1), [12.0, 15.0, 18.0, 21.0])


def test_cuda_where_there_is_none_is_a_clear_error():
    if mr.cuda_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="backend='cuda'"):
        mr.reduce(np.arange(10.0), backend="cuda")


def test_stream_argument_is_checked():
    with pytest.raises(TypeError, match="stream"):
        mr.reduce(np.arange(3.0), stream="default")


def test_inputs_are_never_modified_even_on_error():
    x = np.arange(10, dtype=np.int32)
    keep = x.copy()
    with pytest.raises(ValueError):
        mr.segmented_reduce(x, offsets=[0, 5, 4])
    mr.window_reduce(x, 3, "max")
    mr.statistics(x)
    np.testing.assert_array_equal(x, keep)


def test_an_unknown_backend_names_every_backend():
    names = mr.backends()
    assert names[0] == "auto" and "cpu" in names and "cuda" in names
    listed = ", ".join(repr(n) for n in names)
    for call in (lambda b: mr.reduce(np.arange(3.0), backend=b), lambda b: mr.statistics(np.arange(3.0), backend=b),
                 lambda b: mr.knn_hamming(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), backend=b)):
        with pytest.raises(ValueError, match=f"backend must be one of {listed}, not 'gpu'"):
            call("gpu")


def test_the_records_are_the_cores():
    from multireduce import _core, _records

    assert _records.Operand._fields == tuple(_core.operand_fields)
    assert _records.Job._fields == tuple(_core.job_fields)
    assert [s.value for s in _records.Shape] == list(_core.shapes)
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    a = mr._arrays.operand(x)
    assert (a.framework, a.dtype, tuple(a.shape), a.size, a.memory, a.device, a.stream) == (
        "numpy", "int32", (2, 3), 6, "host", -1, 0)
    assert a.address == x.__array_interface__["data"][0] and a.obj is x


# ---- the adversary's cases: out= over an input, arguments past the core's range, numbers and flags


def test_out_overlapping_an_input_is_refused():
    n = 100
    v = np.arange(n, dtype=np.float64)
    keep = v.copy()
    with pytest.raises(ValueError, match="out overlaps x"):
        mr.window_reduce(v, 7, "sum", out=v[:n - 6])
    with pytest.raises(ValueError, match="out overlaps x"):
        mr.segmented_reduce(v, segment_length=10, out=v[90:])
    m = np.arange(12, dtype=np.int64).reshape(3, 4)
    with pytest.raises(ValueError, match="out overlaps x"):
        mr.reduce(m, "max", axis=1, out=m[0, :3])
    o = np.array([0, 2, 5, 10], dtype=np.int64)
    x = np.arange(10, dtype=np.int64)
    with pytest.raises(ValueError, match="out overlaps offsets"):
        mr.segmented_reduce(x, offsets=o, out=o[:3])
    np.testing.assert_array_equal(v, keep)
    # a separate array is fine, and so is one right beside the input
    both = np.zeros(2 * n - 6)
    both[:n] = keep
    got = mr.window_reduce(both[:n], 7, "sum", out=both[n:])
    np.testing.assert_array_equal(got, np.lib.stride_tricks.sliding_window_view(keep, 7).sum(-1))


@pytest.mark.parametrize("call, message", [
    (lambda: mr.window_reduce(np.arange(5.0), 2**63), r"window must be an integer from 1 to 2\*\*63 - 1"),
    (lambda: mr.segmented_reduce(np.arange(0.0), segment_length=2**64), r"segment_length must be an integer from 0"),
    (lambda: mr.match(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), max_distance=2**40),
     r"max_distance must be an integer from 0 to 2\*\*31 - 1"),
    (lambda: mr.match(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), margin=2**31),
     r"margin must be an integer from 0 to 2\*\*31 - 1"),
    (lambda: mr.knn_hamming(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), k=-1),
     r"k must be an integer from 1 to 8, got -1"),
    (lambda: mr.knn_hamming(np.zeros((2, 32), np.uint8), np.zeros((2, 32), np.uint8), k=0),
     r"k must be an integer from 1 to 8, got 0"),
    (lambda: mr.trace(batches=2**40), r"batches must be an integer from 0 to 2\*\*31 - 1"),
])
def test_arguments_past_the_cores_range_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_numbers_must_be_numbers_and_flags_bools():
    q = np.zeros((2, 32), np.uint8)
    with pytest.raises(TypeError, match="ratio must be a number, not str"):
        mr.match(q, q, ratio="0.8")
    with pytest.raises(TypeError, match="ratio must be a number, not bool"):
        mr.match(q, q, ratio=True)
    with pytest.raises(TypeError, match="margin must be an integer, not str"):
        mr.match(q, q, margin="5")
    with pytest.raises(TypeError, match="cross_check must be True or False, not 'no'"):
        mr.match(q, q, cross_check="no")
    with pytest.raises(TypeError, match="cross_check must be True or False, not 1"):
        mr.match(q, q, cross_check=1)
    with pytest.raises(TypeError, match="check_offsets must be True or False"):
        mr.segmented_reduce(np.arange(4.0), offsets=[0, 4], check_offsets="yes")
    assert mr.match(q, q, ratio=np.float32(0.8), cross_check=np.bool_(True)).shape[1] == 3


def test_the_mean_of_integers_is_their_sum_over_the_count():
    x = np.array([2**63 - 1, 1, -2**63, -1], dtype=np.int64)
    s = mr.statistics(x)
    assert int(s.sum) == -1 and int(s.count) == 4
    assert float(s.mean) == float(np.mean(x)) == -0.25
    wraps = np.array([2**62, 2**62, 2**62, 2**62 + 5], dtype=np.int64)  # the sum wraps (NumPy's too)
    s = mr.statistics(wraps)
    assert int(s.sum) == int(wraps.sum()) == 5
    assert float(s.mean) == pytest.approx(float(np.mean(wraps)), rel=1e-12)


def test_every_exception_class_is_exported_where_users_catch_it():
    import pickle
    from multireduce import _core
    for name in ("CudaError", "Unsupported", "UnsupportedDtype", "UnsupportedJob"):
        error = getattr(mr, name)
        assert error is getattr(_core, name) and name in mr.__all__
        assert error.__module__ == "multireduce" and issubclass(error, RuntimeError)
        copy = pickle.loads(pickle.dumps(error("backend='cuda': x")))  # (as Dask's workers send them back)
        assert type(copy) is error and str(copy) == "backend='cuda': x"
    assert issubclass(mr.UnsupportedDtype, (mr.Unsupported, TypeError))
    assert issubclass(mr.UnsupportedJob, mr.Unsupported) and issubclass(mr.UnsupportedJob, ValueError)
    if not mr.cuda_available():  # the GPU backend named where there is none
        with pytest.raises(mr.Unsupported, match="backend='cuda'"):
            mr.reduce(np.ones(3, np.float32), backend="cuda")


def test_the_colmap_module_lists_its_own_names():
    names = dir(mr.colmap)
    assert names == sorted(mr.colmap.__all__ + ["MAX_IMAGES", "SCHEMA_VERSION"])
    for leaked in ("os", "re", "np", "sqlite3", "socket", "Optional"):
        assert leaked not in names
    assert all(hasattr(mr.colmap, n) for n in names)
