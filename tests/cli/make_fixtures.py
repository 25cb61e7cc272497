#!/usr/bin/env python3
"""Regenerates the fixtures of the `multireduce reduce|stats` tests with real NumPy.

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy && /tmp/np/bin/python make_fixtures.py

Writes, next to this script:
  data/*.npy       the inputs (and broken files for the failure cases);
  expected/*.npy   what NumPy computes for each `reduce` case (its dtype and shape included);
  expected/*.json  NumPy's statistics for each `stats` case (non-finite values as "nan", "inf", "-inf");
  cases.cmake      one multireduce_cli_case(...) per test, read by CMakeLists.txt.
The build and the tests never need NumPy: all of these are committed. Committed files were made
with NumPy 2.x.

Deliberate differences from NumPy, spelled out where the expected values are made: min/max of an
empty array or segment give the identity (+inf/-inf, the type's max/lowest; NumPy raises), argmin/
argmax of nothing give -1 (NumPy raises).
"""
import json
import os
import shutil

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

here = os.path.dirname(os.path.abspath(__file__))
data_dir = os.path.join(here, "data")
expected_dir = os.path.join(here, "expected")
rng = np.random.default_rng(20240611)

OPS = ["sum", "prod", "min", "max", "and", "or", "xor", "argmin", "argmax"]
BITWISE = {"and", "or", "xor"}

# ---- inputs ---------------------------------------------------------------------------------------

inputs = {}


def add_input(name, a):
    inputs[name] = a
    np.save(os.path.join(data_dir, name + ".npy"), a)


def make_inputs():
    n = 100
    add_input("float32_100", rng.uniform(-1, 2, n).astype(np.float32))
    add_input("float64_100", rng.uniform(-1, 2, n).astype(np.float64))
    add_input("int32_100", rng.choice(np.array([-3, -2, -1, 1, 2, 3, 5, 7], dtype=np.int32), n))
    add_input("int64_100", rng.integers(-(2**40), 2**40, n, dtype=np.int64))
    add_input("uint8_100", rng.integers(1, 256, n, dtype=np.uint8))
    add_input("int8_50", rng.integers(-128, 128, 50, dtype=np.int8))
    add_input("int16_50", rng.integers(-(2**15), 2**15, 50, dtype=np.int16))
    add_input("uint16_50", rng.integers(0, 2**16, 50, dtype=np.uint16))
    add_input("uint32_50", rng.integers(0, 2**32, 50, dtype=np.uint32))
    add_input("uint64_50", rng.integers(0, 2**64, 50, dtype=np.uint64))
    add_input("float16_40", rng.uniform(-4, 4, 40).astype(np.float16))
    add_input("float64_be_30", rng.uniform(-1, 1, 30).astype(">f8"))
    # Ties (the first index wins), NaNs (the first NaN wins), +-inf, -0.0.
    nan = np.float32(np.nan)
    add_input("float32_nan_12", np.array([3, 1, -2, nan, 5, -2, nan, 0, -0.0, np.inf, -np.inf, 1], dtype=np.float32))
    add_input("int32_ties_10", np.array([4, -1, 7, -1, 7, 0, 7, -1, 3, 3], dtype=np.int32))
    add_input("float32_2d_5x7", rng.uniform(-1, 2, (5, 7)).astype(np.float32))
    add_input("int32_2d_4x6", rng.integers(-50, 50, (4, 6), dtype=np.int32))
    add_input("float32_2d_3x0", np.zeros((3, 0), dtype=np.float32))
    add_input("float32_empty", np.zeros((0,), dtype=np.float32))
    add_input("int32_empty", np.zeros((0,), dtype=np.int32))
    add_input("uint8_empty", np.zeros((0,), dtype=np.uint8))
    add_input("int64_scalar", np.array(-42, dtype=np.int64))
    add_input("int32_3d", np.zeros((2, 2, 2), dtype=np.int32))
    add_input("float32_3d_3x4x5", rng.uniform(-1, 2, (3, 4, 5)).astype(np.float32))
    add_input("int16_3d_2x3x4", rng.integers(-1000, 1000, (2, 3, 4), dtype=np.int16))
    # Fortran order: read as it is, axes mapped; ties in C order decide argmin/argmax.
    add_input("float32_fortran_4x6", np.asfortranarray(rng.uniform(-1, 2, (4, 6)).astype(np.float32)))
    add_input("int32_fortran_2x3x4", np.asfortranarray(rng.integers(-3, 3, (2, 3, 4), dtype=np.int32)))
    add_input("int32_fortran_ties_3x4", np.asfortranarray(np.array([[1, 0, 2, 0], [0, 1, 0, 2], [2, 2, 1, 1]], np.int32)))
    # NumPy's pairwise float sums, bit for bit: a sum that loses little, and one deep enough to split.
    add_input("float32_1e8_ones", np.array([1e8] + [1.0] * 1000, dtype=np.float32))
    add_input("float32_20011", rng.standard_normal(20011).astype(np.float32))
    # int64 sums that wrap (as NumPy's do).
    add_input("int64_wraps_4", np.array([2**62, 2**62, 2**62, 2**62 + 5], dtype=np.int64))
    # float16 printed as NumPy prints it.
    add_input("float16_print_5", np.array([0.6, 0.1, -3.754, 65504, 1e-4], dtype=np.float16))
    # Offsets into the length-100 inputs: empty segments first, in the middle and last.
    add_input("offsets_int64", np.array([0, 0, 5, 5, 20, 21, 99, 100, 100], dtype=np.int64))
    add_input("offsets_int32", np.array([0, 10, 10, 50, 100], dtype=np.int32))
    add_input("offsets_none", np.array([0], dtype=np.int64))  # zero segments
    add_input("offsets_uint64", np.array([0, 10, 10, 50, 100], dtype=np.uint64))  # any integer dtype that fits
    add_input("offsets_int8", np.array([3, 3, 99, 100], dtype=np.int8))  # starting late
    add_input("offsets_uint16", np.array([0, 100], dtype=np.uint16))
    add_input("offsets_uint64_huge", np.array([0, 2**63], dtype=np.uint64))
    add_input("offsets_nan", np.array([0, 2, 4, 4, 9, 12], dtype=np.int64))  # for float32_nan_12
    # Bad offsets.
    add_input("offsets_decreasing", np.array([0, 10, 5, 100], dtype=np.int64))
    add_input("offsets_past_end", np.array([0, 10, 101], dtype=np.int64))
    add_input("offsets_negative", np.array([-1, 10, 100], dtype=np.int32))
    add_input("offsets_float", np.array([0.0, 100.0], dtype=np.float32))
    add_input("offsets_2d", np.array([[0, 50], [50, 100]], dtype=np.int64))
    # Files npy rejects.
    np.save(os.path.join(data_dir, "fortran_2x3.npy"), np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    np.save(os.path.join(data_dir, "object_2.npy"), np.array([1, "a"], dtype=object), allow_pickle=True)
    with open(os.path.join(data_dir, "float32_100.npy"), "rb") as f:
        whole = f.read()
    with open(os.path.join(data_dir, "truncated.npy"), "wb") as f:
        f.write(whole[:-7])
    with open(os.path.join(data_dir, "not_npy.npy"), "wb") as f:
        f.write(b"x,y\n1,2\n")


# ---- NumPy's answers --------------------------------------------------------------------------------


def result_dtype(op, dtype):
    if op in ("sum", "prod") and dtype.kind in "iu":
        return np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
    if op in ("argmin", "argmax"):
        return np.dtype(np.int64)
    return dtype


def identity(op, dtype):
    """The operator's identity: what an empty reduction gives (min/max/argmin/argmax: ours, NumPy raises)."""
    out = result_dtype(op, dtype)
    if op in ("sum", "or", "xor"):
        return np.zeros((), out)
    if op == "prod":
        return np.ones((), out)
    if op == "and":
        return np.array(np.iinfo(out).max if out.kind == "u" else -1, out)
    if op in ("argmin", "argmax"):
        return np.array(-1, out)
    if out.kind == "f":
        return np.array(np.inf if op == "min" else -np.inf, out)
    info = np.iinfo(out)
    return np.array(info.max if op == "min" else info.min, out)


def reduce_rows(op, m, dtype):
    """op along the last axis of the 2-d array m (rows x L); every row is one output."""
    out = result_dtype(op, dtype)
    rows, length = m.shape
    if rows == 0:
        return np.zeros((0,), out)
    if length == 0:
        return np.full((rows,), identity(op, dtype), out)
    r = {
        "sum": lambda: np.sum(m, axis=1),
        "prod": lambda: np.prod(m, axis=1),
        "min": lambda: np.min(m, axis=1),
        "max": lambda: np.max(m, axis=1),
        "and": lambda: np.bitwise_and.reduce(m, axis=1),
        "or": lambda: np.bitwise_or.reduce(m, axis=1),
        "xor": lambda: np.bitwise_xor.reduce(m, axis=1),
        "argmin": lambda: np.argmin(m, axis=1),
        "argmax": lambda: np.argmax(m, axis=1),
    }[op]()
    assert r.dtype == out, (op, r.dtype, out)  # NumPy's own result type is the one we promise
    return r


def np_reduce(op, a, segment_length=None, offsets=None, window=None, axis=None):
    """What `multireduce reduce` must produce, computed with NumPy."""
    a = np.asarray(a)
    a = a.astype(a.dtype.newbyteorder("="), order="K")  # results are native (little-endian) anyway
    if axis is not None:
        return reduce_axis(op, a, axis)
    flat = a.reshape(-1)
    if segment_length is not None:
        return reduce_rows(op, flat.reshape(-1, segment_length), a.dtype)
    if offsets is not None:
        parts = [reduce_rows(op, flat[b:e].reshape(1, -1), a.dtype) for b, e in zip(offsets[:-1], offsets[1:])]
        return np.concatenate(parts) if parts else np.zeros((0,), result_dtype(op, a.dtype))
    if window is not None:
        if window > flat.size:
            return np.zeros((0,), result_dtype(op, a.dtype))
        return reduce_rows(op, np.ascontiguousarray(sliding_window_view(flat, window)), a.dtype)
    return reduce_whole(op, a)


def apply(op, a, axis):
    return {
        "sum": lambda: np.sum(a, axis=axis),
        "prod": lambda: np.prod(a, axis=axis),
        "min": lambda: np.min(a, axis=axis),
        "max": lambda: np.max(a, axis=axis),
        "and": lambda: np.bitwise_and.reduce(a, axis=axis),
        "or": lambda: np.bitwise_or.reduce(a, axis=axis),
        "xor": lambda: np.bitwise_xor.reduce(a, axis=axis),
        "argmin": lambda: np.argmin(a, axis=axis),
        "argmax": lambda: np.argmax(a, axis=axis),
    }[op]()


def reduce_whole(op, a):
    """op over the whole array (NumPy's a.sum(), a.argmin(): positions in C order), 0-d."""
    if a.size == 0:
        return identity(op, a.dtype)
    if op in BITWISE:
        return np.array(apply(op, a.reshape(-1), 0), result_dtype(op, a.dtype))
    r = np.asarray(apply(op, a, None))
    assert r.dtype == result_dtype(op, a.dtype), (op, r.dtype)
    return r


def reduce_axis(op, a, axis):
    """op along one axis; the result keeps the other axes (and NumPy's layout)."""
    shape = list(a.shape)
    del shape[axis]
    if a.shape[axis] == 0:
        return np.full(shape, identity(op, a.dtype), result_dtype(op, a.dtype))
    r = np.asarray(apply(op, a, axis))
    assert r.dtype == result_dtype(op, a.dtype), (op, r.dtype)
    return r


def finite_or_text(x):
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def np_stats(a):
    """count, sum, mean, var, std, min, argmin, max, argmax, l1, l2 of the flattened array."""
    a = np.asarray(a)
    flat = a.reshape(-1)
    flat = flat.astype(flat.dtype.newbyteorder("="))
    integer = flat.dtype.kind in "iu"
    wide = flat.astype(np.float64)  # the reference is computed in float64
    n = flat.size
    s = {"count": int(n)}
    if integer:
        s["sum"] = int(np.sum(flat, dtype=np.int64 if flat.dtype.kind == "i" else np.uint64))
    else:
        s["sum"] = finite_or_text(np.sum(wide))
    if n:
        s["mean"] = finite_or_text(np.mean(wide))
        s["var"] = finite_or_text(np.var(wide))
        s["std"] = finite_or_text(np.std(wide))
    else:
        s["mean"] = s["var"] = s["std"] = "nan"
    lo, hi = identity("min", flat.dtype), identity("max", flat.dtype)
    if n:
        lo, hi = np.min(flat), np.max(flat)
    # min and max print as values of the input's type: float16 with its own shortest digits.
    shortest = (lambda x: float(str(x))) if flat.dtype == np.float16 else (lambda x: x)
    s["min"] = int(lo) if integer else finite_or_text(shortest(lo))
    s["argmin"] = int(np.argmin(a)) if n else -1  # positions in C order (a Fortran array's too)
    s["max"] = int(hi) if integer else finite_or_text(shortest(hi))
    s["argmax"] = int(np.argmax(a)) if n else -1
    s["l1"] = finite_or_text(np.sum(np.abs(wide)))
    s["l2"] = finite_or_text(np.sqrt(np.sum(wide * wide)))
    return s


# ---- the cases ----------------------------------------------------------------------------------------

cases = []  # (name, mode, args, expected file or "", rtol, atol, rc, stderr regex)


def tolerance(op, dtype, backend="cpu", window=False):
    """The CPU sums floats as NumPy does, bit for bit (pairwise along a contiguous run, one row after
    another along any other axis) -- except sliding windows; products and the GPU's sums round
    differently."""
    if op not in ("sum", "prod") or dtype.kind != "f":
        return 0.0, 0.0
    if op == "sum" and backend == "cpu" and not window:
        return 0.0, 0.0
    if dtype == np.float16:
        return 2e-3, 2e-2
    if dtype == np.float32:
        return (1e-4, 0.0) if op == "prod" else (2e-5, 1e-5)
    return 1e-12, 1e-13


def reduce_case(name, input_name, op, extra=(), backend="cpu", mode="npy", **np_args):
    a = inputs[input_name]
    expected = np_reduce(op, a, **np_args)
    np.save(os.path.join(expected_dir, name + ".npy"), expected)
    rtol, atol = tolerance(op, a.dtype, backend, "window" in np_args)
    args = ["reduce", f"@DATA@/{input_name}.npy", "--op", op, *extra, "--backend", backend]
    if mode == "npy":
        args += ["-o", "@OUT@"]
    cases.append((name, mode, args, f"{name}.npy", rtol, atol, 0, ""))


def stats_case(name, input_name, json_output, backend="cpu"):
    a = inputs[input_name]
    with open(os.path.join(expected_dir, name + ".json"), "w") as f:
        json.dump(np_stats(a), f, indent=1)
        f.write("\n")
    rtol = 1e-5 if a.dtype == np.float16 else 1e-9
    args = ["stats", f"@DATA@/{input_name}.npy", "--backend", backend] + (["--json"] if json_output else [])
    cases.append((name, "stats-json" if json_output else "stats-text", args, f"{name}.json", rtol, 1e-12, 0, ""))


def fail_case(name, args, rc, regex):
    cases.append((name, "exit", args, "", 0.0, 0.0, rc, regex))


def make_cases():
    # Every operator on the main dtypes, the whole array -> 0-d.
    for input_name in ["float32_100", "int32_100", "uint8_100", "int64_100", "float64_100"]:
        a = inputs[input_name]
        for op in OPS:
            if op in BITWISE and a.dtype.kind == "f":
                fail_case(f"reduce_{input_name}_{op}_rejected",
                          ["reduce", f"@DATA@/{input_name}.npy", "--op", op, "--backend", "cpu", "-o", "@OUT@"],
                          1, f"--op {op} needs an integer dtype")
            else:
                reduce_case(f"reduce_{input_name}_{op}", input_name, op)
    # The other dtypes, a few operators each.
    for input_name in ["int8_50", "int16_50", "uint16_50", "uint32_50", "uint64_50"]:
        for op in ["sum", "prod", "max", "xor", "argmin"]:
            reduce_case(f"reduce_{input_name}_{op}", input_name, op)
    for op in ["sum", "min", "max", "argmax"]:  # float16: accumulated in float32, written as float16
        reduce_case(f"reduce_float16_40_{op}", "float16_40", op)
    reduce_case("reduce_float16_40_sum_window3", "float16_40", "sum", ["--window", "3"], window=3)
    reduce_case("reduce_float64_be_30_sum", "float64_be_30", "sum")
    reduce_case("reduce_int64_scalar_sum", "int64_scalar", "sum")
    # NaN, ties, infinities, -0.0.
    for op in ["sum", "min", "max", "argmin", "argmax"]:
        reduce_case(f"reduce_nan_{op}", "float32_nan_12", op)
    reduce_case("reduce_nan_argmin_segments", "float32_nan_12", "argmin", ["--segment-length", "3"], segment_length=3)
    reduce_case("reduce_nan_min_segments", "float32_nan_12", "min", ["--segment-length", "4"], segment_length=4)
    reduce_case("reduce_nan_argmax_offsets", "float32_nan_12", "argmax", ["--offsets", "@DATA@/offsets_nan.npy"],
                offsets=inputs["offsets_nan"])
    reduce_case("reduce_nan_min_window3", "float32_nan_12", "min", ["--window", "3"], window=3)
    reduce_case("reduce_nan_argmin_window3", "float32_nan_12", "argmin", ["--window", "3"], window=3)
    reduce_case("reduce_nan_argmax_window5", "float32_nan_12", "argmax", ["--window", "5"], window=5)
    for op in ["argmin", "argmax"]:
        reduce_case(f"reduce_ties_{op}", "int32_ties_10", op)
        reduce_case(f"reduce_ties_{op}_window6", "int32_ties_10", op, ["--window", "6"], window=6)
    # N-d: the whole array without --axis (NumPy's x.sum()), or one axis, negative ones too.
    for input_name, ops in [("float32_2d_5x7", ["sum", "prod", "min", "argmax", "argmin"]),
                            ("int32_2d_4x6", ["sum", "max", "xor", "and", "argmin"])]:
        for op in ops:
            reduce_case(f"reduce_{input_name}_{op}_whole", input_name, op)
            for axis in [-1, 0]:
                tag = "m1" if axis < 0 else str(axis)
                reduce_case(f"reduce_{input_name}_{op}_axis{tag}", input_name, op, ["--axis", str(axis)], axis=axis)
    reduce_case("reduce_int32_2d_4x6_sum_axis1", "int32_2d_4x6", "sum", ["--axis", "1"], axis=1)
    reduce_case("reduce_int32_2d_4x6_sum_axism2", "int32_2d_4x6", "sum", ["--axis", "-2"], axis=-2)
    reduce_case("reduce_float32_2d_3x0_sum", "float32_2d_3x0", "sum")
    reduce_case("reduce_float32_2d_3x0_sum_axis1", "float32_2d_3x0", "sum", ["--axis", "1"], axis=1)
    reduce_case("reduce_float32_2d_3x0_argmin_axis1", "float32_2d_3x0", "argmin", ["--axis", "1"], axis=1)
    reduce_case("reduce_float32_2d_3x0_max_axis0", "float32_2d_3x0", "max", ["--axis", "0"], axis=0)
    reduce_case("reduce_float32_100_sum_axis0", "float32_100", "sum", ["--axis", "0"], axis=0)
    reduce_case("reduce_int32_100_max_axism1", "int32_100", "max", ["--axis", "-1"], axis=-1)
    reduce_case("reduce_int64_scalar_max", "int64_scalar", "max")
    for op in ["sum", "min", "argmax", "argmin", "prod"]:
        reduce_case(f"reduce_float32_3d_{op}_whole", "float32_3d_3x4x5", op)
        for axis in [0, 1, 2, -1, -2, -3]:
            tag = f"m{-axis}" if axis < 0 else str(axis)
            reduce_case(f"reduce_float32_3d_{op}_axis{tag}", "float32_3d_3x4x5", op, ["--axis", str(axis)], axis=axis)
    for op in ["sum", "xor", "argmax", "min"]:
        reduce_case(f"reduce_int16_3d_{op}_whole", "int16_3d_2x3x4", op)
        for axis in [0, 1, 2]:
            reduce_case(f"reduce_int16_3d_{op}_axis{axis}", "int16_3d_2x3x4", op, ["--axis", str(axis)], axis=axis)
    # Fortran order: the same answers as for the C array NumPy sees (results in Fortran order too).
    for op in ["sum", "min", "argmin", "argmax"]:
        reduce_case(f"reduce_float32_fortran_{op}_whole", "float32_fortran_4x6", op)
        for axis in [0, 1, -1]:
            tag = "m1" if axis < 0 else str(axis)
            reduce_case(f"reduce_float32_fortran_{op}_axis{tag}", "float32_fortran_4x6", op, ["--axis", str(axis)],
                        axis=axis)
    for op in ["sum", "argmin", "or"]:
        for axis in [0, 1, 2]:
            reduce_case(f"reduce_int32_fortran_3d_{op}_axis{axis}", "int32_fortran_2x3x4", op, ["--axis", str(axis)],
                        axis=axis)
    for op in ["argmin", "argmax"]:
        reduce_case(f"reduce_int32_fortran_ties_{op}", "int32_fortran_ties_3x4", op)
    # Float sums: NumPy's pairwise sums, bit for bit; integer sums wrap.
    reduce_case("reduce_float32_1e8_ones_sum", "float32_1e8_ones", "sum")
    reduce_case("reduce_float32_20011_sum", "float32_20011", "sum")
    reduce_case("reduce_float32_20011_sum_seg20011", "float32_20011", "sum", ["--segment-length", "20011"],
                segment_length=20011)
    reduce_case("reduce_int64_wraps_4_sum", "int64_wraps_4", "sum")
    # Fixed-length segments.
    for input_name, length, ops in [("float32_100", 10, ["sum", "max", "argmin"]),
                                    ("int32_100", 25, ["sum", "and", "argmax", "prod"]),
                                    ("uint8_100", 1, ["sum", "argmin"]),
                                    ("float64_100", 100, ["prod", "argmax"]),
                                    ("int64_100", 4, ["min", "or"])]:
        for op in ops:
            reduce_case(f"reduce_{input_name}_{op}_seg{length}", input_name, op,
                        ["--segment-length", str(length)], segment_length=length)
    # Offsets, with empty segments.
    for input_name, offsets, ops in [("float32_100", "offsets_int64", ["sum", "prod", "min", "max", "argmin", "argmax"]),
                                     ("int32_100", "offsets_int64", ["sum", "and", "or", "xor", "argmin"]),
                                     ("int32_100", "offsets_int32", ["sum", "argmax"]),
                                     ("uint8_100", "offsets_int32", ["min", "prod"]),
                                     ("float64_100", "offsets_none", ["sum", "argmin"]),
                                     ("float32_100", "offsets_uint64", ["sum", "argmax"]),
                                     ("int32_100", "offsets_int8", ["sum", "min"]),
                                     ("uint8_100", "offsets_uint16", ["max"])]:
        for op in ops:
            reduce_case(f"reduce_{input_name}_{op}_{offsets}", input_name, op,
                        ["--offsets", f"@DATA@/{offsets}.npy"], offsets=inputs[offsets])
    # Sliding windows: W = 1, 2, a vHGW length, n, n + 1.
    for w in [1, 2, 7, 100, 101]:
        for input_name, op in [("float32_100", "sum"), ("float32_100", "min"), ("float32_100", "argmax"),
                               ("int32_100", "xor"), ("int32_100", "argmin")]:
            reduce_case(f"reduce_{input_name}_{op}_window{w}", input_name, op, ["--window", str(w)], window=w)
    reduce_case("reduce_uint8_100_prod_window2", "uint8_100", "prod", ["--window", "2"], window=2)
    reduce_case("reduce_int64_100_max_window50", "int64_100", "max", ["--window", "50"], window=50)
    reduce_case("reduce_int32_100_and_window5", "int32_100", "and", ["--window", "5"], window=5)
    # Empty inputs: the identities.
    for input_name in ["float32_empty", "int32_empty", "uint8_empty"]:
        for op in OPS:
            if op in BITWISE and inputs[input_name].dtype.kind == "f":
                continue
            reduce_case(f"reduce_{input_name}_{op}", input_name, op)
    reduce_case("reduce_float32_empty_sum_window1", "float32_empty", "sum", ["--window", "1"], window=1)
    reduce_case("reduce_int32_empty_sum_seg3", "int32_empty", "sum", ["--segment-length", "3"], segment_length=3)
    reduce_case("reduce_int32_empty_argmax_offsets_none", "int32_empty", "argmax",
                ["--offsets", "@DATA@/offsets_none.npy"], offsets=inputs["offsets_none"])
    # --backend auto must work without a GPU (and agrees with NumPy on one).
    for op in ["sum", "min", "argmax"]:
        reduce_case(f"reduce_float32_100_{op}_auto", "float32_100", op, backend="auto")
    reduce_case("reduce_int32_100_sum_seg10_auto", "int32_100", "sum", ["--segment-length", "10"], backend="auto",
                segment_length=10)
    reduce_case("reduce_float32_100_max_window7_auto", "float32_100", "max", ["--window", "7"], backend="auto", window=7)
    reduce_case("reduce_int32_100_argmin_offsets_auto", "int32_100", "argmin", ["--offsets", "@DATA@/offsets_int64.npy"],
                backend="auto", offsets=inputs["offsets_int64"])
    reduce_case("reduce_float32_2d_5x7_sum_axis0_auto", "float32_2d_5x7", "sum", ["--axis", "0"], backend="auto", axis=0)
    reduce_case("reduce_float32_2d_5x7_sum_axis1_auto", "float32_2d_5x7", "sum", ["--axis", "1"], backend="auto", axis=1)
    reduce_case("reduce_float32_3d_sum_whole_auto", "float32_3d_3x4x5", "sum", backend="auto")
    reduce_case("reduce_int32_fortran_3d_argmin_whole_auto", "int32_fortran_2x3x4", "argmin", backend="auto")
    # Printed results (no -o): one value per line, floats exact.
    for input_name, op, extra, kw in [("float32_100", "min", [], {}), ("float32_100", "max", ["--window", "3"], {"window": 3}),
                                      ("float64_100", "max", [], {}), ("int32_100", "sum", [], {}),
                                      ("uint64_50", "sum", [], {}), ("int8_50", "min", [], {}),
                                      ("float32_nan_12", "min", ["--window", "2"], {"window": 2}),
                                      ("float32_2d_5x7", "argmax", ["--axis", "0"], {"axis": 0}),
                                      ("float32_3d_3x4x5", "min", ["--axis", "1"], {"axis": 1}),
                                      ("int32_fortran_2x3x4", "sum", ["--axis", "1"], {"axis": 1}),
                                      ("float16_print_5", "max", ["--window", "1"], {"window": 1}),
                                      ("float16_40", "max", [], {}), ("float32_empty", "min", [], {}),
                                      ("float32_100", "sum", ["--window", "101"], {"window": 101})]:
        tag = "_".join(x.lstrip("-") for x in extra)
        reduce_case(f"print_{input_name}_{op}{'_' + tag if tag else ''}", input_name, op, extra, mode="print", **kw)

    # stats, text and JSON.
    for input_name in ["float32_100", "float64_100", "int32_100", "uint8_100", "int64_100", "int8_50", "uint64_50",
                       "float32_2d_5x7", "float32_nan_12", "float32_empty", "int32_empty", "float16_40",
                       "float64_be_30", "int64_scalar", "float32_fortran_4x6", "int32_fortran_ties_3x4",
                       "int64_wraps_4", "float16_print_5", "float32_3d_3x4x5"]:
        stats_case(f"stats_{input_name}_text", input_name, False)
        stats_case(f"stats_{input_name}_json", input_name, True)
    stats_case("stats_float32_100_json_auto", "float32_100", True, backend="auto")
    stats_case("stats_int32_2d_4x6_text_auto", "int32_2d_4x6", False, backend="auto")

    # Failures: a message naming the problem, exit 1 (data) or 2 (usage), no output file.
    r = ["--backend", "cpu", "-o", "@OUT@"]
    fail_case("fail_missing_file", ["reduce", "@DATA@/no_such_file.npy", "--op", "sum", *r], 1, "no_such_file.npy: no such file")
    fail_case("fail_truncated", ["reduce", "@DATA@/truncated.npy", "--op", "sum", *r], 1, "truncated.npy: truncated data")
    fail_case("fail_not_npy", ["reduce", "@DATA@/not_npy.npy", "--op", "sum", *r], 1, "not_npy.npy: not a .npy file")
    fail_case("fail_object", ["reduce", "@DATA@/object_2.npy", "--op", "sum", *r], 1, "object_2.npy: unsupported dtype")
    fail_case("fail_stats_missing_file", ["stats", "@DATA@/no_such_file.npy"], 1, "no_such_file.npy: no such file")
    fail_case("fail_stats_truncated", ["stats", "@DATA@/truncated.npy", "--json"], 1, "truncated.npy: truncated data")
    f32 = "@DATA@/float32_100.npy"
    for offsets, regex in [("offsets_decreasing", "offsets must be non-decreasing, but offsets.1. = 10 > offsets.2. = 5"),
                           ("offsets_past_end", "offsets.2. = 101 is past the end of the input .100 elements"),
                           ("offsets_negative", "offsets.0. = -1 is negative"),
                           ("offsets_float", "offsets must be integers, got float32"),
                           ("offsets_uint64_huge", "offsets.1. = 9223372036854775808 does not fit in int64"),
                           ("offsets_2d", "offsets must be a 1-d array, got shape .2, 2.")]:
        fail_case(f"fail_{offsets}", ["reduce", f32, "--op", "sum", "--offsets", f"@DATA@/{offsets}.npy", *r], 1, regex)
    fail_case("fail_offsets_missing", ["reduce", f32, "--op", "sum", "--offsets", "@DATA@/no_offsets.npy", *r], 1,
              "no_offsets.npy: no such file")
    fail_case("fail_window_0", ["reduce", f32, "--op", "sum", "--window", "0", *r], 2,
              "--window: 0 is out of range: a window length is an integer of at least 1")
    fail_case("fail_window_negative", ["reduce", f32, "--op", "sum", "--window", "-3", *r], 2, "--window: -3 is out of range")
    fail_case("fail_window_too_big", ["reduce", f32, "--op", "sum", "--window", "99999999999999999999", *r], 2,
              "--window: 99999999999999999999 is out of range")
    fail_case("fail_window_not_a_number", ["reduce", f32, "--op", "sum", "--window", "1e3", *r], 2,
              "--window: '1e3' is not an integer")
    fail_case("fail_segment_length_0", ["reduce", f32, "--op", "sum", "--segment-length", "0", *r], 2,
              "--segment-length: 0 is out of range: a segment length is an integer of at least 1")
    fail_case("fail_axis_too_big", ["reduce", f32, "--op", "sum", "--axis", "99999999999999999999", *r], 2,
              "--axis: 99999999999999999999 is out of range")
    fail_case("fail_device_missing", ["reduce", f32, "--op", "sum", "--device", "99", *r], 2, "--device")
    fail_case("fail_segment_length_not_dividing", ["reduce", f32, "--op", "sum", "--segment-length", "7", *r], 1,
              "--segment-length 7 does not divide the input's length 100")
    fail_case("fail_unknown_op", ["reduce", f32, "--op", "mean", *r], 2, "--op: mean not in")
    fail_case("fail_missing_op", ["reduce", f32, *r], 2, "--op is required")
    fail_case("fail_exclusive_window_segment", ["reduce", f32, "--op", "sum", "--window", "2", "--segment-length", "2", *r],
              2, "excludes")
    fail_case("fail_exclusive_window_offsets",
              ["reduce", f32, "--op", "sum", "--window", "2", "--offsets", "@DATA@/offsets_int64.npy", *r], 2, "excludes")
    fail_case("fail_2d_window", ["reduce", "@DATA@/float32_2d_5x7.npy", "--op", "sum", "--window", "2", *r], 1,
              "apply to 1-d input. .*float32_2d_5x7.npy has shape .5, 7.")
    fail_case("fail_3d_axis_3", ["reduce", "@DATA@/int32_3d.npy", "--op", "sum", "--axis", "3", *r], 1,
              "--axis 3: axis 3 is out of bounds for an array of 3 dimensions")
    fail_case("fail_1d_axis_1", ["reduce", f32, "--op", "sum", "--axis", "1", *r], 1,
              "--axis 1: axis 1 is out of bounds for an array of 1 dimension")
    fail_case("fail_2d_axis_m3", ["reduce", "@DATA@/int32_2d_4x6.npy", "--op", "sum", "--axis", "-3", *r], 1,
              "--axis -3: axis -3 is out of bounds for an array of 2 dimensions")
    fail_case("fail_0d_axis", ["reduce", "@DATA@/int64_scalar.npy", "--op", "sum", "--axis", "0", *r], 1,
              "--axis 0: a 0-d array has no axis")
    fail_case("fail_axis_and_window", ["reduce", f32, "--op", "sum", "--axis", "0", "--window", "2", *r], 2, "excludes")
    fail_case("fail_bad_backend", ["reduce", f32, "--op", "sum", "--backend", "gpu"], 2, "--backend: gpu not in")
    fail_case("fail_output_is_input", ["reduce", f32, "--op", "sum", "--backend", "cpu", "-o", f32], 1,
              "-o .*float32_100.npy: that is the input")
    fail_case("fail_output_is_offsets", ["reduce", f32, "--op", "sum", "--offsets", "@DATA@/offsets_int64.npy",
                                         "--backend", "cpu", "-o", "@DATA@/offsets_int64.npy"], 1, "that is --offsets")
    fail_case("fail_output_is_a_directory", ["reduce", f32, "--op", "sum", "--backend", "cpu", "-o", "@DATA@"], 1,
              "is a directory")
    fail_case("fail_output_dir_missing", ["reduce", f32, "--op", "sum", "--backend", "cpu", "-o", "@OUT@.d/out.npy"], 1,
              "does not exist")
    # --timing: the backend and the bandwidth on stderr (checked only for the CPU).
    cases.append(("timing_cpu", "exit", ["reduce", f32, "--op", "sum", "--backend", "cpu", "--timing"], "", 0.0, 0.0, 0,
                  "backend cpu .* threads.*s in all .reading, computing, writing.: 400 bytes read .[0-9.]+ GB/s., 4 written"))
    cases.append(("timing_stats_cpu", "exit", ["stats", f32, "--backend", "cpu", "--timing"], "", 0.0, 0.0, 0,
                  "backend cpu .* threads.*s in all .*400 bytes read .[0-9.]+ GB/s"))


def write_cases():
    def quote(s):
        s = str(s)
        assert not any(c in s for c in '"\\;$|'), s  # none of CMake's or the driver's special characters
        return f'"{s}"'

    lines = ["# Generated by make_fixtures.py: one `multireduce reduce|stats` run each, see CMakeLists.txt.",
             "# multireduce_cli_case(NAME MODE EXPECTED RTOL ATOL RC STDERR_REGEX ARGS...)"]
    for name, mode, args, expected, rtol, atol, rc, regex in cases:
        fields = [name, mode, expected, repr(float(rtol)), repr(float(atol)), rc, regex, *args]
        lines.append("multireduce_cli_case(" + " ".join(quote(f) for f in fields) + ")")
    with open(os.path.join(here, "cases.cmake"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    shutil.rmtree(data_dir, ignore_errors=True)
    os.makedirs(data_dir)
    # expected/ also holds the matcher's fixtures (tests/data/match/make_small.py): keep those.
    os.makedirs(expected_dir, exist_ok=True)
    for name in os.listdir(expected_dir):
        if not name.startswith("match_"):
            os.remove(os.path.join(expected_dir, name))
    make_inputs()
    make_cases()
    names = [c[0] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    write_cases()
    print(f"{len(inputs)} inputs, {len(cases)} cases")


if __name__ == "__main__":
    main()
