#!/usr/bin/env python3
"""Regenerates the .npy fixtures of tests/host/test_npy.cpp with real NumPy.

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy && /tmp/np/bin/python make_fixtures.py

The build and the tests never need NumPy: the files are committed. The values written here are
repeated in test_npy.cpp; change both together. Committed files were made with NumPy 2.4.
"""
import os

import numpy as np
from numpy.lib import format as npy_format

here = os.path.dirname(os.path.abspath(__file__))


def save(name, a, version=None):
    path = os.path.join(here, name)
    if version is None:
        np.save(path, a, allow_pickle=a.dtype.hasobject)
    else:
        with open(path, "wb") as f:
            npy_format.write_array(f, a, version=version)
    assert os.path.getsize(path) < 2048, name


# Readable, and byte for byte what npy::write produces (little-endian, C order, version 1.0).
save("float32_3x4.npy", np.arange(12, dtype="<f4").reshape(3, 4) * np.float32(0.5))
save("int64_scalar.npy", np.array(-1234567890123, dtype="<i8"))
save("float16_2x2.npy", np.array([[1.0, -2.5], [65504.0, 2.0**-24]], dtype="<f2"))
save("int32_2x0x3.npy", np.zeros((2, 0, 3), dtype="<i4"))
save("uint8_5.npy", np.array([0, 1, 127, 128, 255], dtype="|u1"))
save("int8_0.npy", np.zeros((0,), dtype="|i1"))
save("uint64_3.npy", np.array([0, 1, 2**64 - 1], dtype="<u8"))

# Readable, byte-swapped on reading.
save("float64_be_5.npy", np.array([1.5, -2.25, 0.0, 1e300, -1e-300], dtype=">f8"))
save("int16_be_2x3.npy", (np.arange(-3, 3) * 1000).reshape(2, 3).astype(">i2"))
save("uint32_be_4.npy", np.array([0, 1, 0xDEADBEEF, 0xFFFFFFFF], dtype=">u4"))

# Readable, newer header versions (4-byte header length; 3.0 is UTF-8).
save("uint16_v2_4.npy", np.array([1, 2, 3, 65535], dtype="<u2"), version=(2, 0))
save("int32_v3_3.npy", np.array([-1, 0, 1], dtype="<i4"), version=(3, 0))

# Rejected, each with its own message.
save("fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<i4").reshape(2, 3)))
save("object_2.npy", np.array([1, "a"], dtype=object))
save("structured_2.npy", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]))
save("bool_3.npy", np.array([True, False, True]))
