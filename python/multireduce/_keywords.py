"""NumPy's keywords of reduce(): axis= as a tuple, dtype=, keepdims= and where=, as numpy.sum,
numpy.prod, numpy.min, numpy.max, numpy.argmin and numpy.argmax take them.

The plan is made here without touching data (plan()); reduce() carries it out with the core's jobs:
a where= mask becomes the operator's identity in the masked places (one masked copy), dtype= is the
type the elements are reduced in (one converted copy, except between integer types, whose sums,
products and bit operations wrap: the core's int64 result converted gives the same bits), and the
reduced axes are reduced one run of adjacent axes at a time, the last run first (a run of adjacent
axes is one job of the core: their elements are one block of a C-order array).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import numpy as np

from ._arrays import DTYPES, framework_of
from ._calls import integer

_POSITIONAL = ("argmin", "argmax")
_WITH_IDENTITY = ("sum", "prod", "and", "or", "xor")  # ops a where= mask can leave out
_TYPED = ("sum", "prod", "and", "or", "xor")  # ops dtype= applies to (NumPy's ufunc reductions)


class Plan(NamedTuple):
    """What reduce() does with NumPy's keywords: the axes' runs to reduce one after another (each
    (first, last) in the shape left by the runs after it; None: the whole array in one job), the
    dtype the elements are reduced in (None: their own), whether the result is converted to dtype
    afterwards (integer to integer), the result's shape without and with the kept dimensions."""

    runs: Optional[Tuple[Tuple[int, int], ...]]
    convert_input: Optional[str]
    convert_result: Optional[str]
    shape: Tuple[int, ...]
    kept_shape: Tuple[int, ...]


def _dtype_name(dtype) -> str:
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype).replace("torch.", "")  # a torch.dtype
        if name not in DTYPES:
            raise TypeError(f"dtype must be a NumPy dtype (or its name), not {dtype!r}") from None
    if name not in DTYPES:
        raise TypeError(f"dtype {name} is not one multireduce reduces in; it takes {', '.join(DTYPES)}")
    return name


def axes_of(axis, ndim: int, op: str) -> Tuple[int, ...]:
    """The reduced axes, sorted and in range: every axis for None, else axis (an int or a tuple of
    ints, negative from the end) as NumPy reads it; argmin and argmax take None or one int."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        if op in _POSITIONAL:
            raise TypeError(f"{op} takes axis=None or one axis (an int), not a tuple, as numpy.{op} does")
        given = [integer(a, "axis") for a in axis]
    else:
        given = [integer(axis, "axis")]
    axes = []
    for a in given:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for an array of {ndim} dimension(s)")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise ValueError(f"duplicate value in 'axis' ({axis!r})")
    return tuple(sorted(axes))


def plan(op: str, shape: Tuple[int, ...], dtype: str, axis, keep: bool, to_dtype, masked: bool) -> Plan:
    """The plan of reduce(x of `shape` and `dtype`, op, axis, dtype=to_dtype, keepdims=keep,
    where=<a mask> if masked). Raises as NumPy does for what NumPy refuses, and names NumPy's way
    for what multireduce does not take."""
    ndim = len(shape)
    axes = axes_of(axis, ndim, op)
    convert_input = convert_result = None
    if to_dtype is not None:
        if op not in _TYPED:
            raise TypeError(f"dtype= applies to sum, prod, and, or and xor (numpy.{_numpy_name(op)} has no dtype=); "
                            f"for {op} in another type pass x.astype(dtype)")
        target = _dtype_name(to_dtype)
        integral = dtype.startswith(("int", "uint")) and target.startswith(("int", "uint"))
        if op in ("and", "or", "xor") and not target.startswith(("int", "uint")):
            raise TypeError(f"{op} reduces integers; dtype={target} is not one")
        if integral:
            convert_result = target  # (the core's wrapped int64/uint64 result, converted: the same bits)
        elif target != dtype:
            convert_input = target
    if masked:
        if op in _POSITIONAL:
            raise TypeError(f"{op} takes no where= (numpy.{op} has none)")
        if op not in _WITH_IDENTITY:
            raise ValueError(f"reduction operation '{_numpy_name(op)}' does not have an identity, so to use a where "
                             f"mask one has to specify 'initial' (as NumPy says); multireduce takes no initial=: "
                             f"pass x[mask] for a flat {op}, or numpy.{_numpy_name(op)}(x, where=mask, initial=...)")
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    left = tuple(n for i, n in enumerate(shape) if i not in axes)
    if len(axes) == ndim:
        runs = None
    else:
        runs = []
        for a in axes:
            if runs and runs[-1][1] == a - 1:
                runs[-1][1] = a
            else:
                runs.append([a, a])
        runs = tuple((first, last) for first, last in reversed(runs))  # the last run first: the others keep their axes
    return Plan(runs=runs, convert_input=convert_input, convert_result=convert_result, shape=left, kept_shape=kept)


def _numpy_name(op: str) -> str:
    return {"min": "min", "max": "max", "and": "bitwise_and.reduce", "or": "bitwise_or.reduce",
            "xor": "bitwise_xor.reduce"}.get(op, op)


# ---- what the plan does to arrays, in the array's own framework ---------------------------------------


def _xp(obj):
    framework = framework_of(obj)
    if framework == "torch":
        import torch

        return torch
    if framework == "cupy":
        import cupy

        return cupy
    if framework == "jax":
        import jax.numpy

        return jax.numpy
    if framework == "numpy":
        return np
    raise TypeError(f"where= and dtype= take NumPy, CuPy, PyTorch and JAX arrays, not {type(obj).__name__}")


def astype(obj, dtype: str):
    """obj converted to dtype: always a new array of its framework, on its device (NumPy's casts)."""
    if framework_of(obj) == "torch":
        import torch

        return obj.to(getattr(torch, dtype), copy=True)
    return obj.astype(dtype)


def identity(op: str, dtype: str):
    """The identity of an op with one, as a NumPy scalar of dtype."""
    if op == "sum" or op in ("or", "xor"):
        return np.zeros((), dtype=dtype)[()]
    if op == "prod":
        return np.ones((), dtype=dtype)[()]
    return np.array(-1).astype(dtype)[()]  # and: every bit set (the cast wraps for unsigned types)


def masked(obj, mask, op: str, dtype: str):
    """obj with op's identity where the mask (broadcast to obj's shape) is False: one new array."""
    xp = _xp(obj)
    if framework_of(obj) == "torch":
        import torch

        m = mask if framework_of(mask) == "torch" else torch.as_tensor(np.asarray(mask), device=obj.device)
        check_mask_shape(m.shape, obj.shape)
        if m.dtype != torch.bool:
            raise TypeError(f"where= must be a boolean mask, not {m.dtype}")
        fill = torch.tensor(identity(op, dtype).item(), dtype=obj.dtype, device=obj.device)
        return torch.where(m, obj, fill)
    m = xp.asarray(mask)
    check_mask_shape(m.shape, obj.shape)
    if m.dtype != bool:
        raise TypeError(f"where= must be a boolean mask, not {m.dtype}")
    return xp.where(m, obj, xp.asarray(identity(op, dtype)))


def check_mask_shape(mask_shape, shape) -> None:
    """NumPy's rule: the mask broadcasts to x's shape (x's shape is not broadcast to the mask's)."""
    try:
        ok = np.broadcast_shapes(tuple(mask_shape), tuple(shape)) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"where= of shape {tuple(mask_shape)} does not broadcast to x's shape {tuple(shape)}")


def copy_into(out, result) -> None:
    """Writes result into out= (same framework, shape and dtype: checked before)."""
    if framework_of(out) == "torch":
        out.copy_(result)
    else:
        out[...] = result
