"""The reductions and statistics of the multireduce package (see the package's doc and docs/python.md).

Every call takes one path: the input imported as an Operand (_arrays.operand), a Job (_records),
one call of the core (_core.reduce or _core.statistics) with the result's address, the result in
the input's framework. Host arrays run on the CPU for backend "auto" (where the data is); device
arrays on their backend, or on host copies for "cpu" and, for "auto", when the core says the
backend does not run the job (_core.Unsupported). Whole-array results and statistics of PyTorch
and CuPy device arrays are slots of slabs made ahead (_results.scalar_slabs, record_slabs).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _arrays, _backends, _core, _keywords
from ._arrays import host_operand, operand, order_before, settle
from ._backends import HOST_BACKEND
from ._calls import (BACKENDS, INT32_MAX, INT64_MAX, bounded, check_backend, devices_of, flag, integer,
                     result_dtype)
from ._records import AXIS, FIXED_SEGMENTS, HOST, OFFSETS, WHOLE, WINDOW, Job, Operand, make_record
from ._results import (address_of, check_out, deliver_host, empty, finish, host_copy, like_input, new_array,
                       numpy_dtype, record_slabs, scalar_slabs, to_numpy, torch_dtype)

CudaError = _core.CudaError

_SLABBED = ("torch", "cupy")  # frameworks whose device results of the small calls come from slabs


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
    """True when this build has the backend that reads CUDA memory and the process sees a GPU."""
    reader = _backends.reader_of_dlpack(_arrays.DL_CUDA)
    return reader is not None and _core.device_count(reader.name) > 0


def backends() -> list:
    """The names backend= takes: "auto", then the runtime's backends in the order "auto" tries them
    (the runtime's table, as _core.backend_table() gives it)."""
    return _core.backends()


def trace(algorithm: str = "select-merge", batches: int = 4, width: int = 8) -> str:
    """The lane table of a multi-reduction, as ``multireduce trace`` prints it: which partial
    reduction every lane holds after every step, run on the host warp emulator (no GPU needed).
    algorithm: "butterfly", "select-merge", "swap", "order-preserving" or "shared-exchange";
    batches: 1..16, 32 or 64 independent reductions; width: a logical warp of 2, 4, 8, 16 or 32."""
    return _core.trace(str(algorithm), bounded(batches, "batches", 0, INT32_MAX), bounded(width, "width", 0, INT32_MAX))


# ---- reduce, segmented_reduce, window_reduce -------------------------------------------------------

_WHOLE = {}  # (op, dtype) -> (the whole-array Job of a new output, the result's dtype): constant, made once


def _whole(op: str, dtype: str):
    entry = _WHOLE.get((op, dtype))
    if entry is None:
        rdtype = _core.result_dtype(op, dtype)  # (raises for a bad pair, which is never cached)
        job = Job(op=op, shape=WHOLE, length=0, segments=0, inner=1, offsets=None, check_offsets=True,
                  new_output=True)
        entry = _WHOLE[(op, dtype)] = (job, rdtype)
    return entry


def reduce(x, op: str = "sum", axis=None, *, dtype=None, keepdims: bool = False, where=None, out=None,
           backend: str = "auto", stream=None, devices=None):
    """Reduces the whole array (axis=None) or one axis of it with `op`: "sum", "prod", "min",
    "max", "argmin", "argmax", "and", "or" or "xor" (the last three for integers).

    Results have NumPy's dtypes and values: integer sums and products in int64 (uint64 for
    unsigned), float sums pairwise as NumPy's on the CPU (windows: window_reduce); a NaN wins min/max and argmin/argmax (the
    first NaN); ties give the first index; an empty array gives the operator's identity (argmin and
    argmax: -1). A whole-array result is a 0-d array of the input's framework (on the GPU, not
    synchronised). axis may be negative; the result has the other axes in order.

    backend "auto" runs where the data is (the GPU for device arrays, the OpenCL device for
    PyOpenCL arrays, on their queue; the CPU for host arrays);
    "cpu" and "cuda" force a side (a host array is then uploaded, a device array copied to the
    host); multireduce.backends() lists the names. stream: None (the producer's current stream), an
    int cudaStream_t or an object with ``__cuda_stream__``.

    devices: several GPUs ("all" or a list such as [0, 1]) for a whole-array reduction of a host
    array: the array's pieces are reduced on the GPUs at the same time (docs/scale-out.md)."""
    if backend not in BACKENDS:
        check_backend(backend)
    ordinals, backend = devices_of(devices, backend)
    a = operand(x, "x", stream)
    if type(op) is not str:
        op = str(op)
    if dtype is not None or keepdims is not False or where is not None or type(axis) is tuple:
        return _reduce_with_keywords(a, op, axis, dtype, keepdims, where, out, backend, stream, devices)
    if axis is None:
        if out is None:
            if a.memory != HOST and backend != HOST_BACKEND and a.framework in _SLABBED and not ordinals:
                return _whole_in_slab(a, op, backend)  # the small call's path: a slot, one core call
            return _reduce(a, _whole(op, a.dtype)[0], (), None, backend, ordinals)
        job = Job(op=op, shape=WHOLE, length=0, segments=0, inner=1, offsets=None, check_offsets=True,
                  new_output=False)
        return _reduce(a, job, (), out, backend, ordinals)
    axis = integer(axis, "axis")
    ndim = len(a.shape)
    if ndim == 0 or not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of {ndim} dimension(s)")
    axis %= ndim
    shape = tuple(a.shape)
    job = Job(op=op, shape=AXIS, length=shape[axis], segments=math.prod(shape[:axis]),
              inner=math.prod(shape[axis + 1:]), offsets=None, check_offsets=True, new_output=out is None)
    return _reduce(a, job, shape[:axis] + shape[axis + 1:], out, backend, ordinals)


def _reduce_with_keywords(a: Operand, op: str, axis, dtype, keepdims, where, out, backend: str, stream, devices):
    """reduce() with NumPy's keywords (_keywords.plan): the masked or converted copy of x, the runs
    of reduced axes one after another, the result converted, reshaped to the kept dimensions and
    written into out= (checked against the final shape and dtype before any work)."""
    keep = flag(keepdims, "keepdims")
    if where is not None and a.framework == "pyopencl":
        raise TypeError("where= is not taken for PyOpenCL arrays: pass x[mask] (a flat reduction) instead")
    p = _keywords.plan(op, tuple(a.shape), a.dtype, axis, keep, dtype, where is not None)
    x = a.obj
    if p.convert_input is not None:
        x = _keywords.astype(x, p.convert_input)
    reduced_dtype = p.convert_input or a.dtype
    final_dtype = p.convert_result or result_dtype(op, reduced_dtype)
    final_shape = p.kept_shape if keep else p.shape
    if out is not None:
        check_out(out, a, final_shape, final_dtype, (("x", a),))
    if where is not None:
        x = _keywords.masked(x, where, op, reduced_dtype)
    calls = dict(backend=backend, stream=stream)
    if p.runs is None:
        r = reduce(x, op, devices=devices, **calls)
    else:
        if devices is not None:
            raise ValueError("devices= reduces a whole array (axis=None)")
        r = x if p.runs else _keywords.astype(x, result_dtype(op, reduced_dtype))  # (axis=(): each element alone)
        for first, last in p.runs:
            if first != last:  # adjacent axes: one axis of a view that merges them (x is C-contiguous)
                shape = tuple(r.shape)
                r = r.reshape(shape[:first] + (math.prod(shape[first:last + 1]),) + shape[last + 1:])
            r = reduce(r, op, first, **calls)
    if p.convert_result is not None and p.convert_result != result_dtype(op, reduced_dtype):
        r = _keywords.astype(r, p.convert_result)
    if keep:
        r = r.reshape(p.kept_shape)
    if out is not None:
        _keywords.copy_into(out, r)
        return out
    return r


def _whole_in_slab(a: Operand, op: str, backend: str):
    """reduce(x, op) of a PyTorch or CuPy device array, queued on its stream, its result a slot of
    a slab (_results.scalar_slabs) whose 0-d view is taken after the launch."""
    job, rdtype = _WHOLE.get((op, a.dtype)) or _whole(op, a.dtype)
    views, i, address = scalar_slabs.reserve(a, rdtype)
    try:
        _core.reduce(a, job, address, backend)
    except _core.Unsupported:
        if backend != "auto":
            raise
        return _on_host(a, job, (), None)
    return views[i]


def _reduce(a: Operand, job: Job, out_shape, out, backend: str, devices=()):
    """job on a, into out= or a new array of a's framework: where a is (a host array on the CPU
    for "auto"), or for a device array on host copies (_on_host) with "cpu", or with "auto" when
    its backend does not run the job."""
    rdtype = result_dtype(job.op, a.dtype)
    host = a.memory == HOST
    if host or backend != HOST_BACKEND:
        if out is None:
            target = new_array(a.obj, a.framework, a.device, out_shape, rdtype)
            address = address_of(target)
        else:
            # (target: out's Operand, which keeps what its address needs alive through the call)
            target, address = check_out(out, a, out_shape, rdtype, (("x", a), ("offsets", job.offsets)))
        try:
            _core.reduce(a, job, address, HOST_BACKEND if host and backend == "auto" else backend, devices)
        except _core.Unsupported:
            if host or backend != "auto" or devices:
                raise
        else:
            settle(a, out)
            if out is not None:
                return out
            return target if a.framework != "jax" else finish(target, a)
    return _on_host(a, job, out_shape, out)


def _on_host(a: Operand, job: Job, out_shape, out):
    """job on host copies of the device array a (and of its offsets), on the CPU; the result back
    on a's device (into out= if given)."""
    rdtype = result_dtype(job.op, a.dtype)
    if out is not None:
        check_out(out, a, out_shape, rdtype, (("x", a), ("offsets", job.offsets)))
    offsets = job.offsets
    if offsets is not None and offsets.memory != HOST:
        offsets = host_copy(offsets)
    x = host_copy(a)
    result = np.empty(out_shape, dtype=rdtype)
    _core.reduce(x, job._replace(offsets=offsets, new_output=True), address_of(result), HOST_BACKEND)
    return deliver_host(result, out, a)


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
    Hopper) the offsets are still checked; offsets on the host are always checked, and so are
    offsets of PyOpenCL arrays (read back once: those calls wait for the queue). While a CUDA
    graph is captured on the stream, device offsets need check_offsets=False."""
    if backend not in BACKENDS:
        check_backend(backend)
    a = operand(x, "x", stream)
    if type(op) is not str:
        op = str(op)
    if len(a.shape) != 1:
        raise ValueError(f"x must be 1-D, not of shape {tuple(a.shape)}")
    if (offsets is None) == (segment_length is None):
        raise ValueError("give exactly one of offsets and segment_length")
    if segment_length is not None:
        length = segment_length if type(segment_length) is int else integer(segment_length, "segment_length")
        if length < 0:
            raise ValueError(f"segment_length must not be negative, got {length}")
        if length > INT64_MAX:
            bounded(length, "segment_length", 0, INT64_MAX)
        if length == 0:
            if a.size != 0:
                raise ValueError("segment_length 0 needs an empty x")
            segments = 0
        else:
            if a.size % length != 0:
                raise ValueError(f"len(x) = {a.size} is not a multiple of segment_length = {length}")
            segments = a.size // length
        # (values in _records.JOB_ORDER: op, shape, length, segments, inner, offsets, check_offsets, new_output)
        job = make_record(Job, (op, FIXED_SEGMENTS, length, segments, 1, None, True, out is None))
        return _reduce(a, job, (segments,), out, backend)
    o = operand(offsets, "offsets", stream)
    order_before(o, a)
    if o.dtype != "int64" or o.memory != a.memory or o.device != a.device or len(o.shape) != 1 or o.size < 1:
        o = _offsets(o, a)  # (checked, converted)
    segments = o.size - 1
    check = check_offsets if check_offsets is True else flag(check_offsets, "check_offsets")
    job = make_record(Job, (op, OFFSETS, 0, segments, 1, o, check, out is None))
    return _reduce(a, job, (segments,), out, backend)


def _offsets(o: Operand, a: Operand) -> Operand:
    """The imported offsets o as int64 in x's memory, or converted to int64 on the host (any
    integer dtype; the core checks host offsets there and uploads them for device arrays)."""
    if len(o.shape) != 1 or o.size < 1:
        raise ValueError(f"offsets must be 1-D with S + 1 >= 1 entries, not of shape {tuple(o.shape)}")
    if o.dtype == "int64" and o.memory == a.memory and o.device == a.device:
        return o
    if not o.dtype.startswith(("int", "uint")):
        raise TypeError(f"offsets must be integers, not {o.dtype}")
    if o.memory != HOST and (o.memory != a.memory or o.device != a.device):
        def where(b: Operand) -> str:
            return "the host" if b.memory == HOST else f"{b.memory} device {b.device}"

        raise ValueError(f"offsets are on {where(o)}, x on {where(a)}: put them on x's device or the host")
    if o.memory != HOST:
        host = to_numpy(o.obj)
    elif o.framework == "numpy":
        host = np.asarray(o.obj)
    else:
        host = np.from_dlpack(o.obj)
    if host.dtype == np.uint64 and host.size and int(host.max()) > np.iinfo(np.int64).max:
        raise ValueError("offsets do not fit int64")
    return host_operand(np.ascontiguousarray(host, dtype=np.int64), "offsets")


def window_reduce(x, window: int, op: str = "sum", *, out=None, backend: str = "auto", stream=None):
    """Reduces every window of `window` consecutive elements of the 1-D array x:
    ``numpy.lib.stride_tricks.sliding_window_view(x, window).<op>(-1)``, max(0, len(x) - window + 1)
    results (an empty result where NumPy would refuse a window longer than x). window >= 1.
    argmin/argmax give positions within each window. Float sums are not pairwise: float32 windows
    on the CPU are summed in float64 and rounded once, float16 in float32; float64 windows, and
    windows on a GPU or OpenCL device, are within (W - 1) eps sum|x| of the exact sums
    (docs/python.md, "Window sums of floats"). Other rules as reduce()."""
    if backend not in BACKENDS:
        check_backend(backend)
    a = operand(x, "x", stream)
    if len(a.shape) != 1:
        raise ValueError(f"x must be 1-D, not of shape {tuple(a.shape)}")
    w = integer(window, "window")
    if w < 1:
        raise ValueError(f"window must be at least 1, got {w}")
    if w > INT64_MAX:
        bounded(w, "window", 1, INT64_MAX)
    outputs = max(0, a.size - w + 1)
    job = Job(op=str(op), shape=WINDOW, length=w, segments=0, inner=1, offsets=None, check_offsets=True,
              new_output=out is None)
    return _reduce(a, job, (outputs,), out, backend)


# ---- statistics --------------------------------------------------------------------------------------


def statistics(x, *, axis=None, backend: str = "auto", stream=None, devices=None) -> Statistics:
    """count, sum, mean, var, std, min, argmin, max, argmax, l1 and l2 of the whole array in one
    pass (see Statistics). An empty array gives count 0, sum 0, NaN moments and -1 indices.
    axis: None or every axis (a tuple of all of them); statistics along some axes are NumPy's
    x.mean(axis), x.var(axis), ... (or mr.reduce(x, op, axis) for sum, min, max and the others).
    devices: several GPUs ("all" or a list) for a host array, its pieces read by the GPUs at the
    same time; the result is the one GPU's, bit for bit (docs/scale-out.md)."""
    if backend not in BACKENDS:
        check_backend(backend)
    ordinals, backend = devices_of(devices, backend)
    a = operand(x, "x", stream)
    if axis is not None and _keywords.axes_of(axis, len(a.shape), "sum") != tuple(range(len(a.shape))):
        raise ValueError(f"statistics reduces the whole array (axis=None), not axis={axis!r}: for statistics along "
                         f"axes use numpy's x.mean(axis=...), x.var(axis=...), x.std(...), x.min(...), or "
                         f"mr.reduce(x, op, axis) for sum, prod, min, max, argmin and argmax")
    if a.memory == HOST:
        return _statistics_on_host(a, a, HOST_BACKEND if backend == "auto" else backend, ordinals)
    if backend != HOST_BACKEND:
        fields, nbytes = _statistics_layout(a.dtype)
        if a.framework in _SLABBED and nbytes <= record_slabs.stride:  # a record of a slab: no allocation
            buffer, address = record_slabs.reserve(a)
        else:
            buffer = empty(a, (nbytes,), "uint8")
            address = address_of(buffer)
        try:
            _core.statistics(a, address, backend, ordinals)
        except _core.Unsupported:
            if backend != "auto" or ordinals:
                raise
        else:
            settle(a)
            return _statistics_views(buffer, fields, a)
    return _statistics_on_host(host_copy(a), a, HOST_BACKEND)


@functools.lru_cache(maxsize=None)
def _statistics_layout(dtype: str):
    """(fields, bytes) of multireduce::statistics<T> for an input dtype, asked of the core once;
    each field as (name, byte offset, dtype name), in Statistics' order (checked)."""
    fields, nbytes = _core.statistics_layout(dtype)
    if tuple(name for name, _, _ in fields) != Statistics._fields:
        raise RuntimeError(f"the core's statistics fields {[f[0] for f in fields]} are not Statistics' "
                           f"{Statistics._fields}: the compiled core and the Python files are of different versions")
    return fields, nbytes


def _statistics_on_host(x: Operand, a: Operand, where: str, devices=()) -> Statistics:
    """The statistics of the host array x (a, or a host copy of the device array a), each field a
    0-d array of a's framework on a's device."""
    record, nbytes = _host_record(x.dtype)
    buffer = np.empty(nbytes, dtype=np.uint8)
    _core.statistics(x, address_of(buffer), where, devices)
    view = buffer.view(record).reshape(())
    values = {name: view[name] for name in Statistics._fields}  # (0-d views of the buffer)
    if x.dtype == "float16":  # (the record holds float16 data's min and max as float32)
        values["min"], values["max"] = values["min"].astype(np.float16), values["max"].astype(np.float16)
    return Statistics._make([like_input(v, a) for v in values.values()])


@functools.lru_cache(maxsize=None)
def _host_record(dtype: str):
    """(the statistics record of an input dtype as a NumPy structured dtype, its bytes)."""
    fields, nbytes = _statistics_layout(dtype)
    record = np.dtype({"names": [f[0] for f in fields], "formats": [f[2] for f in fields],
                       "offsets": [f[1] for f in fields], "itemsize": nbytes})
    return record, nbytes


def _statistics_views(buffer, fields, a: Operand) -> Statistics:
    """The fields of a statistics record in a uint8 device array (PyTorch or CuPy; the record at
    its start, as the core's layout places them) as 0-d views of it, in a's framework: one typed
    view of the whole buffer per dtype, indexed (every field is aligned to its size), rather than a
    slice, a view and a reshape per field."""
    torch_buffer = hasattr(buffer, "data_ptr")  # (a JAX array's device results may be PyTorch's)
    typed = {}
    values = []
    for _, offset, dtype in fields:
        view = typed.get(dtype)
        if view is None:
            view = typed[dtype] = buffer.view(torch_dtype(dtype) if torch_buffer else dtype)
        values.append(view[offset // numpy_dtype(dtype).itemsize])
    if a.framework == "jax":
        values = [finish(v, a) for v in values]
    return Statistics._make(values)  # (fields in Statistics' order: _statistics_layout checks it)
