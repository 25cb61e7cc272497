"""multireduce on Dask arrays: reduce, statistics, window_reduce and match_all over chunked data,
on the default scheduler or the active ``distributed.Client`` (docs/dask.md).

    >>> import dask.array as da, multireduce.dask as mrd
    >>> x = da.arange(10, dtype="float32", chunks=3)
    >>> float(mrd.reduce(x, "sum")), mrd.window_reduce(x, 3, "max").tolist()
    (45.0, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])

Every chunk (a NumPy or CuPy array) is reduced by the mr.* function where it lives, and the
partial results are combined in a fixed tree over the chunks in chunk order (at most `split_every`
partials per task), so a result depends only on the data and its chunks, never on the scheduler
or the workers. Integer results, min/max and argmin/argmax are bitwise those of the mr.* call on
the whole array (argmin/argmax carry global indices: ties give the lowest index, the first NaN
wins); float sums agree within the bounds of docs/dask.md; match_all is byte-identical.

``compute=True`` (the default) returns what the mr.* function returns (arrays of the chunks'
framework); ``compute=False`` returns a dask array (reduce, window_reduce) or a ``dask.delayed``
object (statistics, match_all) to compute later, with other work, or to persist.
"""

from __future__ import annotations

import functools
import math
from typing import Any, List, Optional, Sequence

import numpy as np

import dask
import dask.array as da

from ._api import Statistics, reduce as _mr_reduce, statistics as _mr_statistics, window_reduce as _mr_window
from ._backends import HOST_BACKEND
from ._calls import INT32_MAX, bounded, integer
from ._match import MatchAllResult, match_all as _mr_match_all

__all__ = ["reduce", "statistics", "window_reduce", "match_all", "SPLIT_EVERY"]

# Partials combined per task, the tree's fan-in: they are a few hundred bytes each, and what bounds
# these calls is Dask's cost per task (on 2 H100s, statistics of 32 CuPy chunks: 96 ms for about 38
# tasks, the GPUs' share about 5 ms), so a flat tree.
SPLIT_EVERY = 32

_FLOAT_KINDS = "f"
_ARG_OPS = ("argmin", "argmax")
_MINMAX = ("min", "max")


# ---- helpers -----------------------------------------------------------------------------------------


def _xp(a):
    """numpy or cupy, whichever module `a` (an array or a dask meta) belongs to."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


def _host(a) -> np.ndarray:
    """a as a NumPy array (a CuPy array copied to the host)."""
    if _xp(a) is not np:
        return a.get()
    return np.asarray(a)


def _check_dask(x, name: str = "x"):
    if not isinstance(x, da.Array):
        raise TypeError(f"{name} must be a dask array (dask.array.Array), not {type(x).__name__}; "
                        "wrap NumPy or CuPy data with dask.array.from_array(a, chunks=...)")
    if any(math.isnan(c) for dim in x.chunks for c in dim):
        raise ValueError(f"{name} has unknown chunk sizes; call {name}.compute_chunk_sizes() first")


def _chunk_of_its_dtype(block, declared, block_info=None):
    """A chunk as it is, once its dtype is the dask array's declared one; else TypeError naming the
    chunk (its block index) and both dtypes."""
    if np.dtype(block.dtype) != declared:
        where = block_info[0]["chunk-location"] if block_info and 0 in block_info else "?"
        raise TypeError(f"chunk {tuple(where)} of the dask array is {np.dtype(block.dtype)}, but the array's declared "
                        f"dtype is {declared}: the chunks must have the dtype the array declares (map_blocks or "
                        "from_delayed with another dtype= or meta=?); cast them with x.astype(...) or declare "
                        "the dtype they have")
    return block


def _checked_chunks(x):
    """x whose chunks are checked against its declared dtype where they are computed (every chunk's
    partial relies on it: mixed dtypes would not combine)."""
    return x.map_blocks(_chunk_of_its_dtype, declared=np.dtype(x.dtype), dtype=x.dtype, meta=x._meta)


def _empty_like_meta(x, shape=(0,)):
    """An empty array of x's chunk framework and dtype (checks of dtypes and arguments run on it)."""
    xp = _xp(x._meta)
    return xp.empty(shape, dtype=x.dtype)


def _meta(x, dtype, ndim: int):
    xp = _xp(x._meta)
    return xp.empty((0,) * ndim, dtype=dtype)


def _tree(parts: List[Any], combine, split_every: int, last=None):
    """Delayed partials combined by `combine(list)` in a fixed tree over their order: groups of
    `split_every` consecutive partials, level after level, to one. `last(list)`, if given, is the
    tree's top task (the final combine and whatever follows it, in one task)."""
    if not parts:
        raise ValueError("nothing to combine")
    while len(parts) > (split_every if last is not None else 1):
        parts = [dask.delayed(combine, pure=True)(parts[i:i + split_every]) if len(parts[i:i + split_every]) > 1
                 else parts[i] for i in range(0, len(parts), split_every)]
    return dask.delayed(last, pure=True)(parts) if last is not None else parts[0]


def _split_every(split_every) -> int:
    if split_every is None:
        return SPLIT_EVERY
    return bounded(split_every, "split_every", 2, INT32_MAX)


def _block_starts(chunks) -> List[List[int]]:
    """Per axis, the start of each block."""
    out = []
    for dim in chunks:
        starts, s = [], 0
        for c in dim:
            starts.append(s)
            s += c
        out.append(starts)
    return out


# ---- partials of reduce ------------------------------------------------------------------------------
#
# sum/prod/and/or/xor of integers: the result dtype's values, combined with NumPy's wrapping array
# arithmetic (addition and multiplication modulo 2**64, the bit operators: all exact and
# associative, so any tree gives the whole array's bits). Float sums: (s, c) float64 pairs of a
# compensated (Neumaier) sum, rounded to the result dtype once at the end (an infinite partial sum
# carries no compensation: an infinity, or a sum past the dtype's range, stays inf with its sign,
# inf + -inf and a NaN give NaN, as NumPy's sum). Float products: float64.
# min/max/argmin/argmax: (value, global index) pairs, the better of two by value with NumPy's rules
# (a NaN wins) and then by the lower index: the whole array's answer whatever the tree.


def _two_sum(xp, a, b):
    """s = a + b rounded and its rounding error e (Knuth's TwoSum). Where s is an infinity (an
    infinite part, or finite parts whose sum overflows) or a NaN, the formula's inf - inf would make
    e a NaN: e is 0 there instead, so that s + c is s, as the plain sum would be (NaN only from a NaN
    or inf + -inf in the data)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        z = s - a
        e = (a - (s - z)) + (b - z)
    return s, xp.where(xp.isfinite(e), e, 0.0)


def _better(xp, op: str, va, ia, vb, ib):
    """Where (vb, ib) beats (va, ia) for min/argmin ("min") or max/argmax ("max"): a NaN wins
    (float data), then the smaller (larger) value, then the lower index; index -1 (an empty part)
    never wins and always loses."""
    kind = np.dtype(va.dtype).kind
    if kind == "f":
        na, nb = xp.isnan(va), xp.isnan(vb)
    else:
        na = nb = xp.zeros(np.shape(va), dtype=bool) if xp is np else xp.zeros(va.shape, dtype=bool)
    strictly = (vb < va) if op == "min" else (vb > va)
    equal = vb == va
    wins = (nb & ~na) | (~na & ~nb & (strictly | (equal & (ib < ia)))) | (nb & na & (ib < ia))
    wins = wins & (ib >= 0)
    wins = wins | ((ia < 0) & (ib >= 0))
    return wins


def _combine_reduce(kind: str, op: str, parts):
    """One level of the tree: `parts` (a list, in chunk order) combined into one partial."""
    if kind == "int":
        xp = _xp(parts[0])
        out = parts[0].copy()
        for p in parts[1:]:
            if op == "sum":
                xp.add(out, p, out=out)
            elif op == "prod":
                xp.multiply(out, p, out=out)
            elif op == "and":
                xp.bitwise_and(out, p, out=out)
            elif op == "or":
                xp.bitwise_or(out, p, out=out)
            else:
                xp.bitwise_xor(out, p, out=out)
        return out
    if kind == "fsum":
        s, c = parts[0]
        xp = _xp(s)
        for s2, c2 in parts[1:]:
            s, e = _two_sum(xp, s, s2)
            c = c + c2 + e
        return s, c
    if kind == "fprod":
        out = parts[0]
        for p in parts[1:]:
            out = out * p
        return out
    # extremes: (value, index)
    which = "min" if op in ("min", "argmin") else "max"
    v, i = parts[0]
    xp = _xp(v)
    for v2, i2 in parts[1:]:
        wins = _better(xp, which, v, i, v2, i2)
        v = xp.where(wins, v2, v)
        i = xp.where(wins, i2, i)
    return v, i


def _kind(op: str, dtype) -> str:
    if op in _ARG_OPS or op in _MINMAX:
        return "ext"
    if np.dtype(dtype).kind == _FLOAT_KINDS:
        return "fsum" if op == "sum" else "fprod"
    return "int"


def _whole_partial(block, op: str, kind: str, starts, shape, backend: str):
    """A chunk's partial for a whole-array reduction, on the host (a few bytes)."""
    if kind == "ext":
        arg = "argmin" if op in ("min", "argmin") else "argmax"
        i = int(_host(_mr_reduce(block, arg, backend=backend)))
        if i < 0:
            return np.zeros((), block.dtype), np.array(-1, np.int64)
        value = _host(block.reshape(-1)[i:i + 1]).reshape(())
        glob = 0
        if shape:
            local = np.unravel_index(i, block.shape)
            glob = np.ravel_multi_index(tuple(int(l) + s for l, s in zip(local, starts)), shape)
        return value, np.array(glob, np.int64)
    r = _host(_mr_reduce(block, op, backend=backend))
    if kind == "fsum":
        return r.astype(np.float64), np.zeros((), np.float64)
    if kind == "fprod":
        return r.astype(np.float64)
    return r


def _axis_partial(block, op: str, kind: str, axis: int, start: int, backend: str):
    """A chunk's partial for a reduction along `axis` (arrays of the chunk's framework)."""
    xp = _xp(block)
    if kind == "ext":
        if op in _ARG_OPS:
            i = _mr_reduce(block, op, axis, backend=backend)
            v = xp.take_along_axis(block, xp.expand_dims(xp.maximum(i, 0), axis), axis=axis).squeeze(axis)
            return v, xp.where(i >= 0, i + start, -1).astype(np.int64)
        v = _mr_reduce(block, op, axis, backend=backend)
        return v, xp.full(v.shape, start, dtype=np.int64)  # (a fold in axis order: first among equals)
    r = _mr_reduce(block, op, axis, backend=backend)
    if kind == "fsum":
        return r.astype(np.float64), xp.zeros(r.shape, np.float64)
    if kind == "fprod":
        return r.astype(np.float64)
    return r


def _finish_reduce(partial, op: str, kind: str, rdtype, framework_meta):
    """The final partial as mr.reduce's result: an array of the result dtype in the chunks' framework."""
    if kind == "fsum":
        s, c = partial
        with np.errstate(over="ignore"):  # a sum past the dtype's range is inf, without a warning (as mr.reduce)
            out = (s + c).astype(rdtype)
    elif kind == "fprod":
        out = partial.astype(rdtype)
    elif kind == "ext":
        v, i = partial
        out = i if op in _ARG_OPS else v
        out = out.astype(rdtype)
    else:
        out = partial
    xp = _xp(framework_meta)
    return xp.asarray(out)


def reduce(x, op: str = "sum", axis: Optional[int] = None, *, compute: bool = True, split_every: Optional[int] = None,
           backend: str = "auto"):
    """mr.reduce(x, op, axis) of the dask array x (NumPy or CuPy chunks): each chunk reduced by
    mr.reduce where it lives, the partials combined in a fixed tree in chunk order. Integer results,
    min, max, argmin and argmax (global indices; ties: the lowest index; the first NaN wins) are
    bitwise mr.reduce's of the whole array; float sums and products within docs/dask.md's bounds.
    compute=False: a dask array (0-d for axis=None). split_every: partials per combining task (8)."""
    _check_dask(x)
    if type(op) is not str:
        op = str(op)
    _mr_reduce(_empty_like_meta(x), op, backend=backend)  # dtype, op and backend: mr.reduce's errors
    rdtype = np.dtype(_mr_reduce(np.empty(0, x.dtype), op).dtype)
    every = _split_every(split_every)
    x = _checked_chunks(x)
    kind = _kind(op, x.dtype)
    meta = x._meta
    if axis is None:
        return _reduce_whole(x, op, kind, rdtype, every, compute, backend, meta)
    ax = integer(axis, "axis")
    if x.ndim == 0 or not -x.ndim <= ax < x.ndim:
        raise ValueError(f"axis {ax} is out of bounds for an array of {x.ndim} dimension(s)")
    ax %= x.ndim
    return _reduce_axis(x, op, kind, rdtype, ax, every, compute, backend, meta)


def _nonempty_blocks(x):
    """(delayed block, the global index of its first element in each dimension) for every block of
    x that holds elements, in C order of the blocks (chunk order)."""
    blocks = x.to_delayed()
    starts = _block_starts(x.chunks)
    for index in np.ndindex(*blocks.shape):
        if any(x.chunks[d][k] == 0 for d, k in enumerate(index)):
            continue  # an empty block: nothing to add
        yield blocks[index], tuple(starts[d][k] for d, k in enumerate(index))


def _reduce_whole(x, op, kind, rdtype, every, compute, backend, meta):
    if x.size == 0:
        whole = dask.delayed(_empty_result, pure=True)(meta, x.shape, x.dtype, op, None, backend)
    else:
        parts = [dask.delayed(_whole_partial, pure=True)(block, op, kind, s, x.shape, backend)
                 for block, s in _nonempty_blocks(x)]
        top = _tree(parts, _Combiner(kind, op), every)
        whole = dask.delayed(_finish_reduce, pure=True)(top, op, kind, rdtype, meta)
    result = da.from_delayed(whole, shape=(), dtype=rdtype, meta=_meta(x, rdtype, 0))
    return result.compute() if compute else result


def _empty_result(meta, shape, dtype, op, axis, backend):
    xp = _xp(meta)
    return _mr_reduce(xp.empty(shape, dtype=dtype), op, axis, backend=backend)


class _Combiner:
    """combine(list) of one kind and operator (a picklable callable with a stable token)."""

    def __init__(self, kind: str, op: str):
        self.kind, self.op = kind, op

    def __call__(self, parts):
        return _combine_reduce(self.kind, self.op, parts)

    def __dask_tokenize__(self):
        return ("multireduce.dask._Combiner", self.kind, self.op)

    def __reduce__(self):
        return (_Combiner, (self.kind, self.op))


def _reduce_axis(x, op, kind, rdtype, ax, every, compute, backend, meta):
    out_shape = x.shape[:ax] + x.shape[ax + 1:]
    out_chunks = x.chunks[:ax] + x.chunks[ax + 1:]
    if x.shape[ax] == 0 or x.size == 0:
        whole = dask.delayed(_empty_result, pure=True)(meta, x.shape, x.dtype, op, ax, backend)
        result = da.from_delayed(whole, shape=out_shape, dtype=rdtype, meta=_meta(x, rdtype, len(out_shape)))
        return result.compute() if compute else result
    blocks = x.to_delayed()
    starts = _block_starts(x.chunks)[ax]
    combiner = _Combiner(kind, op)
    grid = blocks.shape[:ax] + blocks.shape[ax + 1:]
    outs = np.empty(grid, dtype=object)
    for index in np.ndindex(*grid):
        parts = []
        for k in range(blocks.shape[ax]):
            if x.chunks[ax][k] == 0:
                continue
            b = blocks[index[:ax] + (k,) + index[ax:]]
            parts.append(dask.delayed(_axis_partial, pure=True)(b, op, kind, ax, starts[k], backend))
        top = _tree(parts, combiner, every)
        shape = tuple(out_chunks[d][i] for d, i in enumerate(index))
        value = dask.delayed(_finish_reduce, pure=True)(top, op, kind, rdtype, meta)
        outs[index] = da.from_delayed(value, shape=shape, dtype=rdtype, meta=_meta(x, rdtype, len(shape)))
    result = outs[()] if outs.ndim == 0 else da.block(outs.tolist())
    return result.compute() if compute else result


# ---- statistics --------------------------------------------------------------------------------------


def _stat_partial(block, starts, shape, backend: str):
    """A chunk's statistics as a mergeable state on the host (as the core's of_result): count,
    sum, mean, m2 = var * count, l1, sum of squares = l2**2, and (value, global index) extremes."""
    s = _mr_statistics(block, backend=backend)
    h = {name: _host(getattr(s, name)) for name in Statistics._fields}
    count = int(h["count"])

    def glob(i):
        i = int(i)
        if i < 0:
            return -1
        if not shape:
            return 0
        local = np.unravel_index(i, block.shape)
        return int(np.ravel_multi_index(tuple(int(l) + o for l, o in zip(local, starts)), shape))

    return dict(count=count, sum=h["sum"].reshape(()), mean=float(h["mean"]) if count else 0.0,
                m2=float(h["var"]) * count if count else 0.0, l1=float(h["l1"]), sumsq=float(h["l2"]) ** 2,
                min=h["min"].reshape(()), argmin=glob(h["argmin"]), max=h["max"].reshape(()),
                argmax=glob(h["argmax"]))


def _stat_merge(parts):
    """Chan et al.'s merge of states in order (as the core's statistics_accumulator::merge)."""
    a = dict(parts[0])
    for b in parts[1:]:
        if b["count"] == 0:
            continue
        if a["count"] == 0:
            a = dict(b)
            continue
        na, nb = float(a["count"]), float(b["count"])
        n = na + nb
        with np.errstate(invalid="ignore", over="ignore"):
            delta = b["mean"] - a["mean"]
            # (False for an infinite or NaN delta: infinite or NaN data, a chunk whose sum overflowed,
            # finite means whose difference leaves double's range)
            finite = delta - delta == 0
            s = dict(a)
            s["count"] = a["count"] + b["count"]
            s["sum"] = np.add(a["sum"].reshape(1), b["sum"].reshape(1)).reshape(())  # (arrays wrap silently)
            # Not finite: the means weighted (NumPy's mean, no overflow); M2 inf for finite data, NaN
            # where it is NaN already (data with an inf or a NaN), as the core's merge.
            s["mean"] = a["mean"] + delta * (nb / n) if finite else a["mean"] * (na / n) + b["mean"] * (nb / n)
            s["m2"] = a["m2"] + b["m2"] + (delta * delta * (na * nb / n) if finite else math.inf)
        s["l1"] = a["l1"] + b["l1"]
        s["sumsq"] = a["sumsq"] + b["sumsq"]
        for which in ("min", "max"):
            arg = "arg" + which
            wins = _better(np, which, np.asarray(a[which]), np.int64(a[arg]), np.asarray(b[which]), np.int64(b[arg]))
            if bool(wins):
                s[which], s[arg] = b[which], b[arg]
        a = s
    return a


def _stat_finish(state, dtype, meta) -> Statistics:
    """The merged state as mr.statistics' result (0-d arrays of the chunks' framework)."""
    dtype = np.dtype(dtype)
    count = state["count"]
    nan = math.nan
    if count > 0:
        mean = state["mean"]
        if dtype.kind in "iu":  # the core's mean_value: the integer sum over the count where it cannot have wrapped
            fits = 4611686018427387904.0 if dtype.kind == "i" else 9223372036854775808.0
            total = mean * float(count)
            if total < fits and -total < fits:
                mean = float(np.float64(state["sum"]) / np.float64(count))
        var = state["m2"] / float(count)
        total = float(state["sum"]) if dtype.kind == "f" else 0.0
        if not math.isfinite(total):  # a float sum of inf or NaN: NumPy's mean sum / count, as the core's result
            mean = total / float(count)
            var = nan if math.isnan(mean) or math.isnan(state["m2"]) else math.inf
        std = math.sqrt(var) if not math.isnan(var) else nan
    else:
        mean = var = std = nan
    sum_dtype = np.int64 if dtype.kind == "i" else np.uint64 if dtype.kind == "u" else np.float64
    values = [np.asarray(count, np.int64), np.asarray(state["sum"], sum_dtype), np.asarray(mean, np.float64),
              np.asarray(var, np.float64), np.asarray(std, np.float64), np.asarray(state["min"], dtype),
              np.asarray(state["argmin"], np.int64), np.asarray(state["max"], dtype),
              np.asarray(state["argmax"], np.int64), np.asarray(state["l1"], np.float64),
              np.asarray(math.sqrt(state["sumsq"]), np.float64)]
    return _in_framework(Statistics._make(values), meta)


def _stat_merge_finish(parts, dtype, meta) -> Statistics:
    """The last merge and the result, in one task."""
    return _stat_finish(_stat_merge(parts), dtype, meta)


def _in_framework(host: Statistics, meta) -> Statistics:
    """Host statistics as 0-d arrays of meta's framework."""
    xp = _xp(meta)
    return Statistics._make([xp.asarray(v) for v in host])


def statistics(x, *, compute: bool = True, split_every: Optional[int] = None, backend: str = "auto"):
    """mr.statistics(x) of the dask array x: each chunk's statistics by mr.statistics, merged in
    chunk order with Chan et al.'s formulas (as the core merges its own chunks). count, the integer
    sum, min, max, argmin and argmax (global flat indices) are bitwise mr.statistics' of the whole
    array, and so is the mean of integers wherever the integer sum cannot have wrapped; float
    fields within docs/dask.md's bounds. compute=False: a dask.delayed of the Statistics."""
    _check_dask(x)
    empty = _mr_statistics(_empty_like_meta(x), backend=backend)  # dtype and backend: mr.statistics' errors
    x = _checked_chunks(x)
    meta = x._meta
    if x.size == 0:
        value = dask.delayed(_identity, pure=True)(empty)
    else:
        parts = [dask.delayed(_stat_partial, pure=True)(block, s, x.shape, backend)
                 for block, s in _nonempty_blocks(x)]
        every = _split_every(split_every)
        if compute:  # NumPy values back from the workers, made CuPy here (no device arrays to ship)
            last = functools.partial(_stat_merge_finish, dtype=x.dtype, meta=np.empty(0))
            return _in_framework(_tree(parts, _stat_merge, every, last).compute(), meta)
        value = _tree(parts, _stat_merge, every, functools.partial(_stat_merge_finish, dtype=x.dtype, meta=meta))
    return value.compute() if compute else value


def _identity(v):
    return v


# ---- window_reduce -----------------------------------------------------------------------------------


def _window_chunks(chunks: Sequence[int], need: int) -> tuple:
    """Chunks of at least `need` elements (merging runs of smaller ones; a short tail joins the
    chunk before it), so that each chunk's right overlap of `need` elements comes from its neighbour."""
    out: List[int] = []
    run = 0
    for c in chunks:
        run += c
        if run >= max(need, 1):
            out.append(run)
            run = 0
    if run:
        if out:
            out[-1] += run
        else:
            out.append(run)
    return tuple(out) if out else (0,)


def _window_block(block, window: int, op: str, backend: str):
    return _mr_window(block, window, op, backend=backend)


def window_reduce(x, window: int, op: str = "sum", *, compute: bool = True, backend: str = "auto"):
    """mr.window_reduce(x, window, op) of the 1-D dask array x: every chunk with the next
    window - 1 elements (dask.array.map_overlap, depth window - 1 to the right, no boundary) gives
    the windows that start in it. Chunks shorter than window - 1 are merged first (rechunk).
    max(0, n - window + 1) results as mr.window_reduce's: integer, min/max and arg* results bitwise,
    float sums within docs/dask.md's bound. compute=False: a dask array."""
    _check_dask(x)
    if x.ndim != 1:
        raise ValueError(f"x must be 1-D, not of shape {tuple(x.shape)}")
    if type(op) is not str:
        op = str(op)
    probe = _mr_window(_empty_like_meta(x), window, op, backend=backend)  # window, op, dtype: mr's errors
    w = integer(window, "window")
    rdtype = probe.dtype
    n = x.shape[0]
    outputs = max(0, n - w + 1)
    if outputs == 0:
        result = da.from_delayed(dask.delayed(_window_block, pure=True)(_empty_like_meta(x), w, op, backend),
                                 shape=(0,), dtype=rdtype, meta=_meta(x, rdtype, 1))
        return result.compute() if compute else result
    x = _checked_chunks(x)  # (before any rechunk: the error names the caller's chunk)
    chunks = _window_chunks(x.chunks[0], w - 1)
    if chunks != x.chunks[0]:
        x = x.rechunk({0: chunks})
    starts = _block_starts((chunks,))[0]
    out_chunks = tuple(max(0, min(c, outputs - s)) for c, s in zip(chunks, starts))
    func = functools.partial(_window_block, window=w, op=op, backend=backend)
    if w == 1:
        result = x.map_blocks(func, dtype=rdtype, meta=_meta(x, rdtype, 1))
    else:
        result = da.map_overlap(func, x, depth={0: (0, w - 1)}, boundary="none",
                                trim=False, chunks=(out_chunks,), dtype=rdtype, meta=_meta(x, rdtype, 1),
                                allow_rechunk=False)
    return result.compute() if compute else result


# ---- match_all ---------------------------------------------------------------------------------------


def _match_block_pair(images, local_pairs, rule, backend):
    """mr.match_all of one block pair's images on its pairs (local indices): its pairs' matches."""
    ratio, margin, max_distance, cross_check = rule
    found = _mr_match_all(list(images), pairs=np.asarray(local_pairs, np.int64).reshape(-1, 2), ratio=ratio,
                          margin=margin, max_distance=max_distance, cross_check=cross_check, backend=backend)
    return found.offsets, found.matches


def _assemble(pair_rows, owners, parts, framework):
    """The block pairs' matches in pair order: MatchAllResult like mr.match_all's (of `framework`,
    "numpy" or "cupy"; None: that of the block pairs' results, NumPy when there is none)."""
    if framework is None:
        framework = "cupy" if parts and _xp(parts[0][1]) is not np else "numpy"
    if framework == "cupy":
        import cupy as xp
    else:
        xp = np
    host_offsets = [np.asarray(_host(o), np.int64) for o, _ in parts]
    pieces = []
    counts = np.zeros(len(pair_rows), np.int64)
    for p, (task, local) in enumerate(owners):
        o = host_offsets[task]
        a, b = int(o[local]), int(o[local + 1])
        counts[p] = b - a
        pieces.append(parts[task][1][a:b])
    offsets = np.zeros(len(pair_rows) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    if pieces:
        matches = xp.concatenate([xp.asarray(m) for m in pieces]).astype(np.int32, copy=False)
    else:
        matches = xp.empty((0, 3), np.int32)
    matches = xp.ascontiguousarray(matches.reshape(-1, 3))
    return MatchAllResult(xp.asarray(np.ascontiguousarray(pair_rows, np.int32)), xp.asarray(offsets), matches)


def _check_images(descriptors):
    """mr.match_all's checks of the arrays given as arrays (delayed ones are checked where they run)."""
    from ._arrays import operand

    first = None
    for n, x in enumerate(descriptors):
        if isinstance(x, (da.Array,)) or dask.is_dask_collection(x):
            if isinstance(x, da.Array):
                if x.dtype != np.uint8:
                    raise TypeError(f"descriptors[{n}] must be uint8 descriptors (rows of bytes), not {x.dtype}")
                if x.ndim != 2:
                    raise ValueError(f"descriptors[{n}] must be 2-D (descriptors x bytes), not of shape {x.shape}")
            continue
        d = operand(x, f"descriptors[{n}]", None)
        if d.dtype != "uint8":
            raise TypeError(f"descriptors[{n}] must be uint8 descriptors (rows of bytes), not {d.dtype}")
        if len(d.shape) != 2:
            raise ValueError(f"descriptors[{n}] must be 2-D (descriptors x bytes), not of shape {tuple(d.shape)}")
        if first is None:
            first = (n, d)
        elif d.shape[1] != first[1].shape[1]:
            raise ValueError(f"descriptors[{n}] rows are {d.shape[1]} bytes, descriptors[{first[0]}]'s "
                             f"{first[1].shape[1]}: the widths differ")
        elif (d.memory, d.device, d.framework) != (first[1].memory, first[1].device, first[1].framework):
            raise ValueError("the descriptors must be arrays of one framework on one device")
    return None if first is None else descriptors[first[0]]


def match_all(descriptors, *, pairs=None, sequential: Optional[int] = None, ratio: Optional[float] = None,
              margin: Optional[int] = None, max_distance: Optional[int] = None, cross_check: bool = False,
              block_images: int = 64, compute: bool = True, backend: str = "auto"):
    """mr.match_all over a cluster: the images (a list of uint8 (N_i, bytes) arrays -- NumPy,
    CuPy, or dask delayed objects / dask arrays that compute to them) go in blocks of
    `block_images`; one task per block pair (i <= j) runs mr.match_all on the two blocks' images,
    restricted to the pairs that fall in that block pair; the results are put together in pair order.
    The same MatchAllResult as mr.match_all(descriptors, ...) with the same keywords, byte for byte
    (each pair is matched exactly as mr.match(descriptors[i], descriptors[j], ...)).
    compute=False: a dask.delayed of the MatchAllResult."""
    if isinstance(descriptors, (str, bytes)) or not hasattr(descriptors, "__len__"):
        raise TypeError("descriptors must be a list of arrays, one per image")
    descriptors = list(descriptors)
    if len(descriptors) == 0:
        raise ValueError("descriptors is empty: a collection needs at least one image")
    like = _check_images(descriptors)
    per_block = bounded(block_images, "block_images", 1, INT32_MAX)
    # The rule, backend and pair list exactly as mr.match_all checks and orders them: its answer for
    # the same number of images without descriptors (no search runs).
    none = np.empty((0, 4), np.uint8)
    pair_rows = np.asarray(_mr_match_all([none] * len(descriptors), pairs=pairs, sequential=sequential, ratio=ratio,
                                         margin=margin, max_distance=max_distance, cross_check=cross_check,
                                         backend=HOST_BACKEND if backend == "auto" else backend).pairs)
    images = [x if dask.is_dask_collection(x) else dask.delayed(x, pure=True) for x in descriptors]
    rule = (ratio, margin, max_distance, cross_check)

    # pairs by block pair, in pair order within each
    groups = {}
    owners = []
    for i, j in pair_rows.tolist():
        key = (i // per_block, j // per_block)
        group = groups.setdefault(key, [])
        owners.append((key, len(group)))
        group.append((i, j))
    tasks, task_of = [], {}
    for key in sorted(groups):
        bi, bj = key
        members = list(range(bi * per_block, min((bi + 1) * per_block, len(images))))
        if bj != bi:
            members += list(range(bj * per_block, min((bj + 1) * per_block, len(images))))
        local = {g: n for n, g in enumerate(members)}
        local_pairs = [(local[i], local[j]) for i, j in groups[key]]
        task_of[key] = len(tasks)
        tasks.append(dask.delayed(_match_block_pair, pure=True)([images[g] for g in members], local_pairs, rule,
                                                                backend))
    owners = [(task_of[key], local) for key, local in owners]
    framework = None if like is None else "cupy" if _xp(like) is not np else "numpy"  # (None: delayed images only)
    value = dask.delayed(_assemble, pure=True)(pair_rows, owners, tasks, framework)
    return value.compute() if compute else value
