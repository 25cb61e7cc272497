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


def test_non_contiguous_inputs_say_how_to_fix_them():
    x = np.arange(20, dtype=np.float32)
    with pytest.raises(ValueError, match="ascontiguousarray"):
        mr.reduce(x[::2])
    with pytest.raises(ValueError, match="contiguous"):
        mr.reduce(np.arange(12.0).reshape(3, 4).T)


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
