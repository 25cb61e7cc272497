"""The functions of the multireduce package (see the package's doc and docs/python.md)."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from . import _core, _interop
from ._interop import Imported

CudaError = _core.CudaError

_BACKENDS = ("auto", "cpu", "cuda")
_GPU_BACKENDS = ("auto", "cuda")  # what a device array's call may take the direct path with
_SLABBED = ("torch", "cupy")  # frameworks whose whole-array results come from scalar_slabs


class Statistics(NamedTuple):
    """All statistics of an array from one pass (0-d arrays of the input's framework). var is the
    population variance (NumPy's ``var()``, ddof=0) and std its square root; l1 = sum |x|,
    l2 = sqrt(sum x^2). Integer sums wrap as NumPy's do; float16 data is summed in float64."""

    count: Any
    sum: Any
    mean: Any
    var: Any
    std: Any
    min: Any
    argmin: Any
    max: Any
    argmax: Any
    l1: Any
    l2: Any


def cuda_available() -> bool:
    """True when this build has the CUDA backend and the process sees a GPU."""
    return _core.cuda_device_count() > 0


def trace(algorithm: str = "select-merge", batches: int = 4, width: int = 8) -> str:
    """The lane table of a multi-reduction, as ``multireduce trace`` prints it: which partial
    reduction every lane holds after every step, run on the host warp emulator (no GPU needed).
    algorithm: "butterfly", "select-merge", "swap", "order-preserving" or "shared-exchange";
    batches: 1..16, 32 or 64 independent reductions; width: a logical warp of 2, 4, 8, 16 or 32."""
    return _core.trace(str(algorithm), _integer(batches, "batches"), _integer(width, "width"))


# ---- helpers -------------------------------------------------------------------------------------


def _integer(value, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def _check_backend(backend) -> str:
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', not {backend!r}")
    return backend


def _unsupported(reason: str, dtype: str) -> Exception:
    """backend='cuda' for a job the GPU does not run: TypeError when the dtype is why."""
    message = f"backend='cuda': {reason}"
    return TypeError(message) if dtype in reason or "dtype" in reason else ValueError(message)


def _run(a: Imported, backend: str, on, host_copies=None, host_auto: str = "cpu"):
    """Runs on(where_backend, copies) where backend says. copies is None when the job reads the
    arrays where they are, else NumPy copies of device arrays (host_copies(), default a's): a host
    array runs as asked ('auto': host_auto -- the CPU, where the data lives, or for the matcher the
    runtime's own choice, the GPU when it runs the job); a device array on its GPU, or for 'cpu' on
    host copies, or for 'auto' on host copies when the GPU cannot run the job."""
    if a.device < 0:
        try:
            return on(host_auto if backend == "auto" else backend, None)
        except _core.Unsupported as e:
            raise _unsupported(str(e), a.dtype) from None
    copies = host_copies or (lambda: _interop.to_host(a))
    if backend == "cpu":
        return on("cpu", copies())
    try:
        return on("cuda", None)
    except _core.Unsupported as e:
        if backend == "cuda":
            raise _unsupported(str(e), a.dtype) from None
        return on("cpu", copies())


def _result(out, a: Imported, shape: Tuple[int, ...], dtype: str, stream: int, on_host: bool):
    """(the array the results go to, its address): out= checked, or a new one (a NumPy array when
    the job runs on a host copy of a device array)."""
    if on_host and a.device >= 0:
        if out is not None:
            _interop.check_out(out, a, shape, dtype, stream)
        r = np.empty(shape, dtype=dtype)
        return r, r.ctypes.data
    if out is not None:
        return _interop.check_out(out, a, shape, dtype, stream)
    r = _interop.empty(a, shape, dtype)
    return r, _interop.address_of(r)


def _deliver(result, out, a: Imported, on_host: bool):
    """A result computed on the host for a device array goes back to the device (into out= if
    given); every result ends up in the input's framework."""
    if on_host and a.device >= 0:
        if out is not None:
            out[...] = _interop.to_framework(result, a)
            return out
        return _interop.like_input(result, a)
    if out is not None:
        return out
    return _interop.finish(result, a)


@functools.lru_cache(maxsize=None)
def _result_dtype(op: str, dtype: str) -> str:
    """The result's dtype name (raises for bad pairs, which are never cached)."""
    return _core.result_dtype(op, dtype)


def _reduce_job(a: Imported, op: str, shape: str, length: int, segments: int, inner: int, out_shape, offsets,
                out, backend: str, stream: int, check_offsets: bool = True):
    rdtype = _result_dtype(op, a.dtype)

    def on(where_backend: str, host_copy: Optional[np.ndarray]):
        on_host = host_copy is not None  # a host copy of a device array
        target, address = _result(out, a, out_shape, rdtype, stream, on_host)
        x_address, device, off = a.address, a.device, 0 if offsets is None else offsets.address
        if on_host:
            x_address, device = host_copy.ctypes.data, -1
            if offsets is not None:
                host_offsets = _interop.to_host(offsets)
                off = host_offsets.ctypes.data
        # new_output: bad device offsets may then be found after the reduction (see _core.reduce)
        _core.reduce(x_address, a.dtype, a.size, device, op, shape, length, segments, inner, off, address,
                     where_backend, stream, out is None, check_offsets)
        return _deliver(target, out, a, on_host)

    return _run(a, backend, on)


# ---- reduce, segmented_reduce, window_reduce -------------------------------------------------------


def reduce(x, op: str = "sum", axis: Optional[int] = None, *, out=None, backend: str = "auto", stream=None):
    """Reduces the whole array (axis=None) or one axis of it with `op`: "sum", "prod", "min",
    "max", "argmin", "argmax", "and", "or" or "xor" (the last three for integers).

    Results have NumPy's dtypes and values: integer sums and products in int64 (uint64 for
    unsigned), float sums pairwise as NumPy's on the CPU; a NaN wins min/max and argmin/argmax (the
    first NaN); ties give the first index; an empty array gives the operator's identity (argmin and
    argmax: -1). A whole-array result is a 0-d array of the input's framework (on the GPU, not
    synchronised). axis may be negative; the result has the other axes in order.

    backend "auto" runs where the data is (the GPU for device arrays, the CPU for host arrays);
    "cpu" and "cuda" force a side (a host array is then uploaded, a device array copied to the
    host). stream: None (the producer's current stream), an int cudaStream_t or an object with
    ``__cuda_stream__``."""
    if axis is None and out is None and stream is None and backend in _GPU_BACKENDS and type(op) is str:
        operand = _interop.direct_operand(x)  # the hot path: a small reduction's time is mostly host time
        if operand is not None:
            result = _whole_on_gpu(x, operand, op, backend)
            if result is not None:
                return result
    _check_backend(backend)
    a, handle = _interop.import_array(x, "x", stream)
    op = str(op)
    if axis is None:
        if out is None and a.device >= 0 and backend != "cpu" and a.framework in _SLABBED:
            result = _whole_on_gpu(x, (a.framework, a.address, a.dtype, a.size, len(a.shape), a.device, handle), op,
                                   backend)
            if result is not None:
                return result
        return _reduce_job(a, op, "whole", 0, 0, 1, (), None, out, backend, handle)
    axis = _integer(axis, "axis")
    ndim = len(a.shape)
    if ndim == 0 or not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of {ndim} dimension(s)")
    axis %= ndim
    outer, length, inner = math.prod(a.shape[:axis]), a.shape[axis], math.prod(a.shape[axis + 1:])
    out_shape = a.shape[:axis] + a.shape[axis + 1:]
    return _reduce_job(a, op, "axis", length, outer, inner, out_shape, None, out, backend, handle)


def segmented_reduce(x, op: str = "sum", *, offsets=None, segment_length: Optional[int] = None, out=None,
                     backend: str = "auto", stream=None, check_offsets: bool = True):
    """Reduces consecutive segments of the 1-D array x: segment s is x[offsets[s]:offsets[s+1]]
    (offsets: S + 1 non-decreasing integers, on x's device or the host), or each run of
    segment_length elements (len(x) a multiple of it). Empty segments give the operator's identity
    (argmin/argmax: -1; indices are within the segment). Other rules as reduce().

    Offsets in GPU memory are checked on the GPU and the verdict read back, so the call waits for
    the GPU (a bad offset raises ValueError). check_offsets=False vouches for them instead, as
    PyTorch's ``segment_reduce(..., unsafe=True)``: no read-back and no wait. Bad offsets then give
    unspecified values, in `out` too (the kernel clamps every offset into x, so it never reads
    outside x). Where that kernel does not run (a mean segment length over 40, or a GPU older than
    Hopper) the offsets are still checked; offsets on the host are always checked."""
    if out is None and stream is None and backend in _GPU_BACKENDS and type(op) is str:
        operand = _interop.direct_operand(x)  # the hot path, as reduce()'s
        if operand is not None and segment_length is None:
            o = _interop.direct_operand(offsets)
            if o is not None:
                result = _offsets_on_gpu(x, operand, o, op, backend, bool(check_offsets))
                if result is not None:
                    return result
        elif operand is not None and offsets is None and type(segment_length) is int:
            result = _fixed_on_gpu(x, operand, segment_length, op, backend)
            if result is not None:
                return result
    _check_backend(backend)
    a, handle = _interop.import_array(x, "x", stream)
    op = str(op)
    if len(a.shape) != 1:
        raise ValueError(f"x must be 1-D, not of shape {a.shape}")
    if (offsets is None) == (segment_length is None):
        raise ValueError("give exactly one of offsets and segment_length")
    if segment_length is not None:
        length = _integer(segment_length, "segment_length")
        if length < 0:
            raise ValueError(f"segment_length must not be negative, got {length}")
        if length == 0:
            if a.size != 0:
                raise ValueError("segment_length 0 needs an empty x")
            segments = 0
        else:
            if a.size % length != 0:
                raise ValueError(f"len(x) = {a.size} is not a multiple of segment_length = {length}")
            segments = a.size // length
        return _reduce_job(a, op, "fixed", length, segments, 1, (segments,), None, out, backend, handle)
    o = _offsets(offsets, a, handle)
    segments = o.size - 1
    return _reduce_job(a, op, "offsets", 0, segments, 1, (segments,), o, out, backend, handle, bool(check_offsets))


def _whole_on_gpu(x, operand: tuple, op: str, backend: str):
    """reduce(x, op) of a PyTorch or CuPy device array (operand: direct_operand's tuple) queued on
    its stream, its result a slot of a slab (scalar_slabs) whose 0-d view is taken after the
    launch; None when the GPU does not run it (backend "auto": the general path then runs it on a host
    copy)."""
    framework, address, dtype, size, _, device, handle = operand
    views, i, result = _interop.scalar_slabs.reserve(x, framework, device, _result_dtype(op, dtype), handle)
    try:
        _core.reduce_whole(address, dtype, size, device, op, result, handle)
    except _core.Unsupported as e:
        if backend == "cuda":
            raise _unsupported(str(e), dtype) from None
        return None
    return views[i]


def _fixed_on_gpu(x, operand: tuple, length: int, op: str, backend: str):
    """segmented_reduce(x, op, segment_length=length) of a 1-D PyTorch or CuPy device array
    (direct_operand's tuple) whose length is a multiple of `length` >= 1, queued on its stream into a
    new array; None for anything else or when the GPU does not run the job (the general path then
    decides, with its errors)."""
    framework, address, dtype, size, ndim, device, handle = operand
    if ndim != 1 or length < 1 or size % length != 0:
        return None
    segments = size // length
    result = _interop.new_array(x, framework, device, (segments,), _result_dtype(op, dtype))
    try:
        _core.reduce(address, dtype, size, device, op, "fixed", length, segments, 1, 0, _interop.address_of(result),
                     "cuda", handle, True, True)
    except _core.Unsupported as e:
        if backend == "cuda":
            raise _unsupported(str(e), dtype) from None
        return None
    return result


def _offsets_on_gpu(x, operand: tuple, offsets: tuple, op: str, backend: str, check_offsets: bool):
    """segmented_reduce(x, op, offsets=...) of a 1-D PyTorch or CuPy device array with int64
    offsets of its framework on its device (both direct_operand's tuples), queued on its stream
    into a new array; None for other arrays or when the GPU does not run the job (the general path
    then decides, with its errors)."""
    framework, address, dtype, size, ndim, device, handle = operand
    o_framework, o_address, o_dtype, o_size, o_ndim, o_device, _ = offsets
    if ndim != 1 or o_ndim != 1 or o_size < 1 or o_dtype != "int64" or (o_framework, o_device) != (framework, device):
        return None
    segments = o_size - 1
    result = _interop.new_array(x, framework, device, (segments,), _result_dtype(op, dtype))
    try:
        _core.reduce(address, dtype, size, device, op, "offsets", 0, segments, 1, o_address,
                     _interop.address_of(result), "cuda", handle, True, check_offsets)
    except _core.Unsupported as e:
        if backend == "cuda":
            raise _unsupported(str(e), dtype) from None
        return None
    return result


def _offsets(offsets, a: Imported, stream: int) -> Imported:
    """offsets as int64 on x's device (converted from any integer dtype, moved from the host)."""
    o, _ = _interop.import_array(offsets, "offsets", stream)
    if len(o.shape) != 1 or o.size < 1:
        raise ValueError(f"offsets must be 1-D with S + 1 >= 1 entries, not of shape {o.shape}")
    if not o.dtype.startswith(("int", "uint")):
        raise TypeError(f"offsets must be integers, not {o.dtype}")
    if o.device == a.device and o.dtype == "int64":
        return o
    if o.device >= 0 and o.device != a.device:
        raise ValueError(f"offsets are on GPU {o.device}, x on {'the host' if a.device < 0 else f'GPU {a.device}'}")
    if o.device >= 0:
        host = _interop.to_host(o)
    elif o.framework == "numpy":
        host = np.asarray(o.obj)
    else:
        host = np.from_dlpack(o.obj)
    if host.dtype == np.uint64 and host.size and int(host.max()) > np.iinfo(np.int64).max:
        raise ValueError("offsets do not fit int64")
    converted = np.ascontiguousarray(host, dtype=np.int64)
    if a.device < 0:
        imported, _ = _interop.import_array(converted, "offsets", None)
        return imported
    moved = _interop.to_framework(converted, a)
    imported, _ = _interop.import_array(moved, "offsets", stream)
    imported.keep = (imported.keep, moved)
    return imported


def window_reduce(x, window: int, op: str = "sum", *, out=None, backend: str = "auto", stream=None):
    """Reduces every window of `window` consecutive elements of the 1-D array x:
    ``numpy.lib.stride_tricks.sliding_window_view(x, window).<op>(-1)``, max(0, len(x) - window + 1)
    results (an empty result where NumPy would refuse a window longer than x). window >= 1.
    argmin/argmax give positions within each window. Other rules as reduce()."""
    _check_backend(backend)
    a, handle = _interop.import_array(x, "x", stream)
    if len(a.shape) != 1:
        raise ValueError(f"x must be 1-D, not of shape {a.shape}")
    w = _integer(window, "window")
    if w < 1:
        raise ValueError(f"window must be at least 1, got {w}")
    outputs = max(0, a.size - w + 1)
    return _reduce_job(a, str(op), "window", w, 0, 1, (outputs,), None, out, backend, handle)


# ---- statistics --------------------------------------------------------------------------------------


def statistics(x, *, backend: str = "auto", stream=None) -> Statistics:
    """count, sum, mean, var, std, min, argmin, max, argmax, l1 and l2 of the whole array in one
    pass (see Statistics). An empty array gives count 0, sum 0, NaN moments and -1 indices."""
    if stream is None and backend in _GPU_BACKENDS:
        operand = _interop.direct_operand(x)  # the hot path, as reduce()'s
        if operand is not None:
            result = _statistics_on_gpu(x, operand, backend)
            if result is not None:
                return result
    _check_backend(backend)
    a, handle = _interop.import_array(x, "x", stream)
    fields, nbytes = _statistics_layout(a.dtype)

    def on(where_backend: str, host_copy: Optional[np.ndarray]):
        on_host = host_copy is not None or a.device < 0
        if on_host:
            buffer = np.empty(nbytes, dtype=np.uint8)
            x_address = a.address if host_copy is None else host_copy.__array_interface__["data"][0]
            _core.statistics(x_address, a.dtype, a.size, -1, buffer.__array_interface__["data"][0], where_backend,
                             handle)
            values = [buffer[o:o + np.dtype(t).itemsize].view(t).reshape(()) for _, o, t in fields]
            if a.dtype == "float16":
                values[5], values[7] = values[5].astype(np.float16), values[7].astype(np.float16)
            return Statistics(*[_interop.like_input(v, a) for v in values])
        buffer = _interop.empty(a, (nbytes,), "uint8")
        _core.statistics(a.address, a.dtype, a.size, a.device, _interop.address_of(buffer), where_backend, handle)
        return _statistics_views(buffer, fields, a)

    return _run(a, backend, on)


def _statistics_on_gpu(x, operand: tuple, backend: str):
    """statistics(x) of a PyTorch or CuPy device array (operand: direct_operand's tuple) queued on
    its stream into a record of a slab (_interop.record_slabs), whose fields' views are taken
    after the launch; None when the GPU does not run it (the general path then decides)."""
    framework, address, dtype, size, _, device, handle = operand
    fields, nbytes = _statistics_layout(dtype)
    if nbytes > _interop.record_slabs.stride:
        return None
    slab, offset, result = _interop.record_slabs.reserve(x, framework, device, handle)
    try:
        _core.statistics(address, dtype, size, device, result, "cuda", handle)
    except _core.Unsupported as e:
        if backend == "cuda":
            raise _unsupported(str(e), dtype) from None
        return None
    return _statistics_views(slab[offset:offset + nbytes], fields, None)


@functools.lru_cache(maxsize=None)
def _statistics_layout(dtype: str):
    """(fields, bytes) of multireduce::statistics<T> for an input dtype, asked of the core once;
    each field as (name, byte offset, dtype name)."""
    return _core.statistics_layout(dtype)


def _statistics_views(buffer, fields, a: Optional[Imported]) -> Statistics:
    """The fields of a statistics struct in a uint8 device array (PyTorch or CuPy) as 0-d views of
    it, in a's framework (None: the buffer's): one typed view of the whole buffer per dtype,
    indexed (every field is aligned to its size), rather than a slice, a view and a reshape per
    field."""
    torch_buffer = hasattr(buffer, "data_ptr")  # (a JAX array's device results may be PyTorch's)
    typed = {}
    values = []
    for _, offset, dtype in fields:
        view = typed.get(dtype)
        if view is None:
            view = typed[dtype] = buffer.view(_interop._torch_dtype(dtype) if torch_buffer else dtype)
        values.append(view[offset // view.itemsize])
    if a is not None and a.framework == "jax":
        values = [_interop.finish(v, a) for v in values]
    return Statistics(*values)


# ---- binary descriptors -------------------------------------------------------------------------------


def _descriptors(query, train, stream):
    q, handle = _interop.import_array(query, "query", stream)
    t, _ = _interop.import_array(train, "train", stream)
    for name, d in (("query", q), ("train", t)):
        if d.dtype != "uint8":
            raise TypeError(f"{name} must be uint8 descriptors (rows of bytes), not {d.dtype}")
        if len(d.shape) != 2:
            raise ValueError(f"{name} must be 2-D (descriptors x bytes), not of shape {d.shape}")
    if q.shape[1] != t.shape[1]:
        raise ValueError(f"query rows are {q.shape[1]} bytes, train rows {t.shape[1]}: the widths differ")
    if q.device != t.device or q.framework != t.framework:
        raise ValueError("query and train must be arrays of one framework on one device")
    return q, t, handle


def knn_hamming(query, train, k: int = 2, *, backend: str = "auto", stream=None):
    """The k nearest training descriptors of every query by Hamming distance: (dist, idx), each an
    int32 array (len(query), k) of the input's framework, nearest first in OpenCV's order
    (distance, then the lower training index); -1 where train has fewer than k rows. Descriptors
    are uint8 arrays (N, bytes), bytes a multiple of 4; k is 1..8. backend "auto" takes the GPU
    when there is one (the search is compute-bound: a host array's upload is cheap beside it)."""
    q, t, handle = _descriptors(query, train, stream)
    k = _integer(k, "k")
    _check_backend(backend)
    nq, nt, width = q.shape[0], t.shape[0], q.shape[1]

    def on(where_backend: str, copies):
        if copies is None and q.device >= 0:
            idx, dist = _interop.empty(q, (nq, k), "int32"), _interop.empty(q, (nq, k), "int32")
            _core.knn(q.address, nq, t.address, nt, width, k, q.device, _interop.address_of(idx),
                      _interop.address_of(dist), 0, where_backend, handle)
            return _interop.finish(dist, q), _interop.finish(idx, q)
        qa, ta = (q.address, t.address) if copies is None else (copies[0].ctypes.data, copies[1].ctypes.data)
        idx, dist = np.empty((nq, k), np.int32), np.empty((nq, k), np.int32)
        _core.knn(qa, nq, ta, nt, width, k, -1, idx.ctypes.data, dist.ctypes.data, 0, where_backend, 0)
        return _interop.like_input(dist, q), _interop.like_input(idx, q)

    return _run(q, backend, on, lambda: (_interop.to_host(q), _interop.to_host(t)), host_auto="auto")


def match(query, train, *, ratio: Optional[float] = None, margin: Optional[int] = None,
          max_distance: Optional[int] = None, cross_check: bool = False, backend: str = "auto", stream=None):
    """The matches of a brute-force Hamming matcher: an int32 array (M, 3) of (query index, train
    index, distance) rows in query order, of the input's framework. Rules (all that are given
    must hold): ratio -- nearest < ratio * second nearest (Lowe's test, 0 < ratio <= 1); margin --
    second nearest - nearest > margin (the paper's rule); max_distance -- nearest <= max_distance;
    cross_check -- the query is its nearest training descriptor's nearest query. With no rule,
    every query's nearest neighbour. The same matches as OpenCV's BFMatcher with NORM_HAMMING."""
    q, t, handle = _descriptors(query, train, stream)
    r = 0.0 if ratio is None else float(ratio)  # 0: no ratio test
    if ratio is not None and not (0 < r <= 1):
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    m = -1 if margin is None else _integer(margin, "margin")
    d = -1 if max_distance is None else _integer(max_distance, "max_distance")
    if margin is not None and m < 0:
        raise ValueError(f"margin must not be negative, got {m}")
    if max_distance is not None and d < 0:
        raise ValueError(f"max_distance must not be negative, got {d}")
    cross = bool(cross_check)
    k = 2 if (ratio is not None or margin is not None) else 1
    _core.check_match_rule(r, m, d, cross)
    _check_backend(backend)
    nq, nt, width = q.shape[0], t.shape[0], q.shape[1]

    reverse_needed = cross and nq > 0 and nt > 0  # (an empty set keeps no matches: no reverse search)

    def on(where_backend: str, copies):
        reverse = np.empty(nt, np.int32) if reverse_needed else None
        if copies is None and q.device >= 0:  # the searches on the GPU, their lists read back
            didx, ddist = _interop.empty(q, (nq, k), "int32"), _interop.empty(q, (nq, k), "int32")
            _core.knn(q.address, nq, t.address, nt, width, k, q.device, _interop.address_of(didx),
                      _interop.address_of(ddist), 0, where_backend, handle)
            if reverse_needed:
                ridx, rdist = _interop.empty(q, (nt, 1), "int32"), _interop.empty(q, (nt, 1), "int32")
                _core.knn(t.address, nt, q.address, nq, width, 1, q.device, _interop.address_of(ridx),
                          _interop.address_of(rdist), 0, where_backend, handle)
                reverse = _interop.to_numpy(ridx).reshape(-1)
            idx, dist = _interop.to_numpy(didx), _interop.to_numpy(ddist)
        else:
            idx, dist = np.empty((nq, k), np.int32), np.empty((nq, k), np.int32)
            qa, ta = (q.address, t.address) if copies is None else (copies[0].ctypes.data, copies[1].ctypes.data)
            _core.knn(qa, nq, ta, nt, width, k, -1, idx.ctypes.data, dist.ctypes.data,
                      reverse.ctypes.data if reverse_needed else 0, where_backend, 0)
        rows = np.empty((nq, 3), np.int32)
        kept = _core.accept(idx.ctypes.data, dist.ctypes.data, nq, k, r, m, d, cross,
                            reverse.ctypes.data if reverse_needed else 0, rows.ctypes.data)
        return _interop.like_input(np.ascontiguousarray(rows[:kept]), q)

    return _run(q, backend, on, lambda: (_interop.to_host(q), _interop.to_host(t)), host_auto="auto")
