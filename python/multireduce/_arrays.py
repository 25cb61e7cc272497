"""How multireduce meets arrays: NumPy, anything with ``__dlpack__`` (CuPy, PyTorch, JAX, ...),
``__cuda_array_interface__`` (Numba, ...) as a fallback, and PyOpenCL's arrays (read in place by the
backend whose memory is DLPack's kDLOpenCL, on their queue: _from_pyopencl). Which backend's memory
an array is in comes from the runtime's table, by DLPack device type (_backends).

operand() imports an array as an Operand (_records): its address, dtype name, shape, memory, device
and stream, and the objects that keep it alive. C-contiguous arrays are used in place; any other
layout (Fortran order, a slice with a step, a transposed view, negative strides) is copied once into
a C-contiguous array of its own framework on its own device (contiguous_copy), and the copy is read:
the one copy docs/python.md names ("Strided and Fortran-order arrays").

operand() takes a fast path first: a reader for the exact type of the array (NumPy arrays always;
PyTorch tensors and CuPy arrays once import_general() has read one of their type), which reads a
contiguous array of a dtype met before on its framework's current stream in a few attribute reads --
a small call's time on the GPU is mostly its host time before the launch. Anything else, and
whatever a reader declines, goes to import_general(), with its errors.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _backends, _core
from ._records import HOST, Operand, make_record

DTYPES = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
)

# DLPack's device types (DLDeviceType) of the memory the frameworks here hand over.
DL_CUDA, DL_OPENCL, DL_CUDA_MANAGED = 2, 4, 13
# Those whose __dlpack__(stream=...) orders the producer's work before a stream of ours (DLPack's
# stream rule): a capsule of device memory is read in place only then.
_DL_ORDERED_BY_STREAM = (DL_CUDA, DL_CUDA_MANAGED)
# The memory the core takes arrays in CUDA memory (PyTorch's, CuPy's, the CUDA array interface's)
# and PyOpenCL's buffers as: the table's (None where no backend reads it).
_CUDA_MEMORY = _backends.memory_of_dlpack(DL_CUDA)
_OPENCL_MEMORY = _backends.memory_of_dlpack(DL_OPENCL)

_FRAMEWORKS = {np.ndarray: "numpy"}  # type -> framework, filled as types are met


def framework_of(x) -> str:
    t = type(x)
    known = _FRAMEWORKS.get(t)
    if known is not None:
        return known
    if isinstance(x, (np.ndarray, np.generic)):
        return "numpy"
    root = t.__module__.split(".")[0]
    found = root if root in ("cupy", "torch", "pyopencl") else "jax" if root in ("jax", "jaxlib") else "other"
    _FRAMEWORKS[t] = found
    return found


# ---- streams -------------------------------------------------------------------------------------


def stream_handle(stream, x, framework: str, device: int) -> int:
    """The cudaStream_t (an int) that the work runs on: `stream` as given (an int, an object with
    ``__cuda_stream__``, a ``torch.cuda.Stream`` or a ``cupy.cuda.Stream``), or for None the
    producer's current stream (PyTorch's or CuPy's), else the default stream (0)."""
    if stream is None:
        if device < 0:
            return 0
        if framework == "torch":
            return _torch_current_stream(device)
        if framework == "cupy":
            return _cupy_current_stream(device)
        return 0
    if isinstance(stream, bool):
        raise TypeError("stream must be None, an int handle or an object with __cuda_stream__, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream handle must not be negative, got {stream}")
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream)
    if type(stream).__module__.split(".")[0] == "cupy" and hasattr(stream, "ptr"):
        return int(stream.ptr)
    raise TypeError(
        f"stream must be None, an int handle or an object with __cuda_stream__, not {type(stream).__name__}"
    )


def _torch_current_stream(device: int) -> int:
    global _torch_current_stream
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # the handle alone, without a Stream object
    if raw is None:
        def current(device: int) -> int:
            return int(torch.cuda.current_stream(device).cuda_stream)
    else:
        current = raw
    _torch_current_stream = current  # found once: later calls go straight to it
    return current(device)


def _cupy_current_stream(device: int) -> int:
    global _cupy_current_stream
    import cupy

    get = cupy.cuda.get_current_stream
    try:
        handle = get(device).ptr  # CuPy 13 and later: any device's

        def current(device: int) -> int:
            return get(device).ptr
    except TypeError:
        def current(device: int) -> int:
            with cupy.cuda.Device(device):
                return get().ptr

        handle = current(device)
    _cupy_current_stream = current  # found once: later calls go straight to it
    return handle


def _dlpack_stream(handle: int) -> int:
    # DLPack names the legacy default stream 1 (0 is not allowed for CUDA).
    return 1 if handle == 0 else handle


def _current_stream_or_none(stream, x, framework: str, device: int) -> Optional[int]:
    """The stream handle the work runs on when it is the producer's current stream (then the array
    can be read directly: nothing to order), else None (DLPack's __dlpack__(stream=...) orders it)."""
    current = stream_handle(None, x, framework, device)
    if stream is None:
        return current
    return current if stream_handle(stream, x, framework, device) == current else None


# ---- checks --------------------------------------------------------------------------------------


def _c_contiguous(shape: Sequence[int], strides: Optional[Sequence[int]]) -> bool:
    """strides in elements (None: C order): whether the layout is C-contiguous."""
    if strides is None or math.prod(shape) == 0:
        return True
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def contiguous_copy(x, framework: str, name: str):
    """A C-contiguous copy of the strided array x in its own framework and on its own device (queued
    on the framework's current stream; a DLPack export of it orders that stream before the call's):
    numpy.ascontiguousarray, tensor.contiguous(), cupy.ascontiguousarray. A host array of any other
    framework is read through NumPy (numpy.from_dlpack); a device array of another framework raises
    ValueError naming the copy to pass."""
    if framework == "numpy":
        return np.ascontiguousarray(x)
    if framework == "torch":
        return x.contiguous()
    if framework == "cupy":
        import cupy

        with cupy.cuda.Device(x.data.device_id):
            return cupy.ascontiguousarray(x)
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.array(x, copy=True)
    device_type = int(x.__dlpack_device__()[0]) if hasattr(x, "__dlpack_device__") else DL_CUDA
    if _backends.memory_of_dlpack(device_type) == HOST:
        return np.ascontiguousarray(np.from_dlpack(x))
    raise ValueError(f"{name} is a strided {type(x).__name__} in device memory, which multireduce cannot copy "
                     f"for you: pass a C-contiguous copy of it (or a CuPy/PyTorch view of it)")


def _check_dtype(name: str, dtype: str) -> str:
    if dtype not in DTYPES:
        raise TypeError(f"{name} has dtype {dtype}; multireduce takes {', '.join(DTYPES)}")
    return dtype


_NUMPY_NAMES = {}  # numpy.dtype -> its name, for the native dtypes multireduce takes (filled as met)
_TORCH_NAMES = {}  # torch.dtype -> its name, likewise


def _check_numpy_like(a, name: str) -> str:
    """The dtype name of a NumPy or CuPy array; TypeError for a foreign byte order or a dtype
    multireduce does not take."""
    dtype = _NUMPY_NAMES.get(a.dtype)  # (dtype.name is slow to make: a few us)
    if dtype is None:
        if not a.dtype.isnative:
            raise TypeError(f"{name} has non-native byte order ({a.dtype.str}); pass a.astype(a.dtype.newbyteorder('='))")
        dtype = _check_dtype(name, a.dtype.name)
        _NUMPY_NAMES[a.dtype] = dtype
    return dtype


def _layout_is_c(a) -> bool:
    """Whether a NumPy or CuPy array is C-contiguous (or empty)."""
    contiguous = getattr(a, "_c_contiguous", None)  # CuPy's own flag: a.flags makes an object (0.4 us)
    if contiguous is None:
        contiguous = a.flags.c_contiguous
    return contiguous or a.size == 0


# ---- the fast readers: type -> reader(x) -> Operand, or None to leave x to import_general -------------


def _numpy_fast(x) -> Optional[Operand]:
    dtype = _NUMPY_NAMES.get(x.dtype)
    if dtype is None or not x.flags.c_contiguous:
        return None
    # (values in _records.OPERAND_ORDER)
    return make_record(Operand, ("numpy", x, numpy_address(x), dtype, x.shape, x.size, HOST, -1, 0, None))


def numpy_address(a: np.ndarray) -> int:
    """The data address of a NumPy array, read from its DLPack capsule (0.45 us on the development
    VM against 1.6 us for __array_interface__), or where NumPy exports no capsule (a read-only
    array) from __array_interface__."""
    try:
        return _core.dlpack_info(a.__dlpack__())[0]  # (the address: the first of dlpack_info's fields)
    except BufferError:
        return a.__array_interface__["data"][0]


def _torch_fast(x) -> Optional[Operand]:
    dtype = _TORCH_NAMES.get(x.dtype)
    if dtype is None or not x.is_cuda or not x.is_contiguous() or _CUDA_MEMORY is None:
        return None
    device = x.get_device()
    return make_record(Operand, ("torch", x, x.data_ptr(), dtype, x.shape, x.numel(), _CUDA_MEMORY, device,
                                 _torch_current_stream(device), None))


def _cupy_fast(x) -> Optional[Operand]:
    dtype = _NUMPY_NAMES.get(x.dtype)
    if dtype is None or not x._c_contiguous or _CUDA_MEMORY is None:
        return None
    data = x.data  # a MemoryPointer: the address and its device without making a Device object
    device = data.device_id
    return make_record(Operand, ("cupy", x, data.ptr, dtype, x.shape, x.size, _CUDA_MEMORY, device,
                                 _cupy_current_stream(device), None))


# NumPy arrays from the start; PyTorch tensors and CuPy arrays once import_general has read one
_FAST_READERS = {np.ndarray: _numpy_fast}


def operand(x, name: str = "x", stream=None) -> Operand:
    """x as an Operand, on `stream` (None: the producer's current stream). Raises TypeError for what
    is not an array of a dtype multireduce takes; a strided array is read from one C-contiguous
    copy (contiguous_copy)."""
    if stream is None:
        reader = _FAST_READERS.get(type(x))
        if reader is not None:
            a = reader(x)
            if a is not None:
                return a
    return import_general(x, name, stream)


# ---- the general import ------------------------------------------------------------------------------


def import_general(x, name: str, stream) -> Operand:
    """operand() without the fast readers: every kind of array, every stream, and the errors."""
    framework = framework_of(x)
    if framework == "numpy":
        a = np.asarray(x)
        return _from_numpy(a, name, x, stream_handle(stream, x, framework, -1))
    if framework == "torch" and type(x).__name__ in ("Tensor", "Parameter"):
        read = _from_torch(x, name, stream)
        if read is not None:
            _FAST_READERS.setdefault(type(x), _torch_fast)
            return read
    if framework == "cupy" and type(x).__name__ == "ndarray":
        read = _from_cupy(x, name, stream)
        if read is not None:
            if hasattr(x, "_c_contiguous"):  # (CuPy's own flag; older versions read the slower flags)
                _FAST_READERS.setdefault(type(x), _cupy_fast)
            return read
    if framework == "pyopencl" and hasattr(x, "base_data"):
        return _from_pyopencl(x, name, stream)
    if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
        return _from_dlpack(x, name, framework, stream)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(x, cai, name, framework, stream)
    if isinstance(x, (list, tuple, int, float)):
        a = np.asarray(x)
        return _from_numpy(a, name, a, stream_handle(stream, x, "numpy", -1))
    raise TypeError(
        f"{name} must be an array: a NumPy array, a list, tuple or scalar (read as numpy.asarray does), or an array "
        f"with __dlpack__ or __cuda_array_interface__ (CuPy, PyTorch, JAX, ...) or a PyOpenCL array; "
        f"not {type(x).__name__}"
    )


def _from_numpy(a: np.ndarray, name: str, obj, stream: int) -> Operand:
    dtype = _check_numpy_like(a, name)
    if not _layout_is_c(a):
        a = obj = np.ascontiguousarray(a)
    return Operand(framework="numpy", obj=obj, address=numpy_address(a), dtype=dtype,
                   shape=a.shape, size=a.size, memory=HOST, device=-1, stream=stream, keep=a)


def host_operand(a: np.ndarray, name: str) -> Operand:
    """A NumPy array the front made (a host copy, converted offsets) as an Operand."""
    return _from_numpy(a, name, a, 0)


def _from_torch(x, name: str, stream) -> Optional[Operand]:
    """A PyTorch tensor read directly (its pointer, dtype, shape), when the work runs on its current
    stream: nothing to order, so no DLPack capsule is needed. None otherwise (DLPack orders it)."""
    if x.is_cuda:
        device, memory = x.get_device(), _in_cuda_memory(name)
        handle = _torch_current_stream(device) if stream is None else _current_stream_or_none(stream, x, "torch", device)
        if handle is None:
            return None
    elif x.device.type == "cpu":
        device, memory, handle = -1, HOST, stream_handle(stream, x, "torch", -1)
    else:
        return None
    dtype = _TORCH_NAMES.get(x.dtype)
    if dtype is None:
        dtype = _check_dtype(name, str(x.dtype).replace("torch.", ""))
        _TORCH_NAMES[x.dtype] = dtype
    if not x.is_contiguous():
        x = x.contiguous()  # (on the current stream, the one the work goes on)
    return Operand(framework="torch", obj=x, address=x.data_ptr(), dtype=dtype, shape=tuple(x.shape),
                   size=x.numel(), memory=memory, device=device, stream=handle, keep=None)


def _from_cupy(x, name: str, stream) -> Optional[Operand]:
    """A CuPy array read directly, when the work runs on CuPy's current stream (as _from_torch)."""
    data = x.data
    device = data.device_id
    handle = _cupy_current_stream(device) if stream is None else _current_stream_or_none(stream, x, "cupy", device)
    if handle is None:
        return None
    dtype = _check_numpy_like(x, name)
    memory = _in_cuda_memory(name)
    if not _layout_is_c(x):
        x = contiguous_copy(x, "cupy", name)  # (on CuPy's current stream, the one the work goes on)
        data = x.data
    return Operand(framework="cupy", obj=x, address=data.ptr, dtype=dtype, shape=x.shape, size=x.size,
                   memory=memory, device=device, stream=handle, keep=None)


def _in_cuda_memory(name: str) -> str:
    """The memory of an array in CUDA memory, as the table names it; TypeError where no backend of
    the table reads it."""
    if _CUDA_MEMORY is None:
        raise TypeError(f"{name} is in CUDA memory, which no backend of this build reads (DLPack device type "
                        f"{DL_CUDA}); pass a host copy")
    return _CUDA_MEMORY


def _from_dlpack(x, name: str, framework: str, stream) -> Operand:
    """Any array with __dlpack__: its capsule, read by the core and kept (unconsumed) while the
    Operand lives; a device array's producer orders its pending work before our stream."""
    device_type, device_id = x.__dlpack_device__()
    device_type = int(device_type)
    memory = _backends.memory_of_dlpack(device_type)
    if memory == HOST:
        device, handle = -1, stream_handle(stream, x, framework, -1)
        capsule = x.__dlpack__()
    elif memory is not None and device_type in _DL_ORDERED_BY_STREAM:
        device = int(device_id)
        handle = stream_handle(stream, x, framework, device)
        capsule = x.__dlpack__(stream=_dlpack_stream(handle))
    else:
        raise TypeError(f"{name} is on a device multireduce does not run on (DLPack device type {device_type})")
    info = _DLPackInfo._make(_core.dlpack_info(capsule))
    _check_dtype(name, info.dtype)
    if not _c_contiguous(info.shape, info.strides):
        copy = contiguous_copy(x, framework, name)
        return _from_dlpack(copy, name, framework_of(copy), stream)
    return Operand(framework=framework, obj=x, address=info.address, dtype=info.dtype, shape=info.shape,
                   size=math.prod(info.shape), memory=memory, device=device, stream=handle, keep=capsule)


# What _core.dlpack_info(capsule) returns, by name (ints; strides in elements or None).
_DLPackInfo = namedtuple("_DLPackInfo", "address dtype shape strides device_type device_id read_only")


def _from_cai(x, cai: dict, name: str, framework: str, stream) -> Operand:
    """An array with __cuda_array_interface__ (device memory): the interface's stream, if it names
    one, is made to come before ours."""
    dtype = _check_dtype(name, np.dtype(cai["typestr"]).name)
    if not np.dtype(cai["typestr"]).isnative:
        raise TypeError(f"{name} has non-native byte order")
    itemsize = np.dtype(dtype).itemsize
    strides = cai.get("strides")
    if not _c_contiguous(cai["shape"], None if strides is None else [s // itemsize for s in strides]):
        try:
            import cupy
        except ImportError:
            raise ValueError(f"{name} is a strided {type(x).__name__} in device memory; multireduce copies strided "
                             f"device arrays with CuPy, which is not installed: pass a C-contiguous copy") from None
        view = cupy.asarray(x)  # (a view of x: CuPy reads the interface, its stream included)
        return _from_cupy(contiguous_copy(view, "cupy", name), name, None)
    device = _cai_device(cai["data"][0])
    handle = stream_handle(stream, x, framework, device)
    producer = cai.get("stream")
    if producer not in (None, handle):
        _wait_for(producer, handle, device)
    shape = tuple(int(d) for d in cai["shape"])
    return Operand(framework=framework, obj=x, address=int(cai["data"][0]), dtype=dtype, shape=shape,
                   size=math.prod(shape), memory=_in_cuda_memory(name), device=device, stream=handle, keep=None)


def _cai_device(address: int) -> int:
    if address == 0:
        return 0
    try:
        import cupy

        return int(cupy.cuda.runtime.pointerGetAttributes(address).device)
    except Exception:  # noqa: BLE001 -- no CuPy: the current device
        return 0


def _wait_for(producer: int, consumer: int, device: int) -> None:
    """Orders `consumer` after the work queued so far on `producer` (CUDA array interface streams)."""
    import cupy

    with cupy.cuda.Device(device):
        event = cupy.cuda.Event(disable_timing=True)
        event.record(cupy.cuda.ExternalStream(producer))
        cupy.cuda.ExternalStream(consumer).wait_event(event)


# ---- PyOpenCL ------------------------------------------------------------------------------------------


class OpenCLHandles(NamedTuple):
    """What a PyOpenCL operand's handles need kept: the buffer the core reads (the array's own, a
    sub-buffer of it, or a copy), the queue the work goes on, and whether the call made that queue
    (an array without one): the call then waits for it (settle)."""

    buffer: Any
    queue: Any
    own_queue: bool


def pyopencl_queue(x):
    """The queue a PyOpenCL array's work goes on: its own, or for an array without one a new queue
    of its context (on the context's first device)."""
    if x.queue is not None:
        return x.queue
    import pyopencl as cl

    return cl.CommandQueue(x.context)


def pyopencl_alignment(x) -> int:
    """The bytes a PyOpenCL array's offset must be a multiple of to be read as a sub-buffer: the
    largest CL_DEVICE_MEM_BASE_ADDR_ALIGN of its context's devices (given in bits). Not cached: a
    cache would keep the contexts alive."""
    return max(d.mem_base_addr_align for d in x.context.devices) // 8


def _from_pyopencl(x, name: str, stream) -> Operand:
    """A pyopencl.array.Array, read in place on its queue: its buffer, or for a view at an offset
    a sub-buffer where the offset is a multiple of the context's base address alignment, else a
    copy made on the device (clEnqueueCopyBuffer on the same queue: no host trip). A non-contiguous
    array is an error, as other frameworks' are. stream= must be None or the array's queue (the
    work goes on the array's queue: x.with_queue(q) puts it on another)."""
    import pyopencl as cl

    queue = pyopencl_queue(x)
    if stream is not None and not (isinstance(stream, int) and stream == queue.int_ptr) and stream is not queue:
        raise TypeError(f"stream= does not apply to PyOpenCL arrays: the work goes on {name}'s queue "
                        f"(pass {name}.with_queue(queue) for another queue)")
    dtype = _NUMPY_NAMES.get(x.dtype)
    if dtype is None:
        if not x.dtype.isnative:
            raise TypeError(f"{name} has non-native byte order ({x.dtype.str})")
        dtype = _check_dtype(name, x.dtype.name)
        _NUMPY_NAMES[x.dtype] = dtype
    if not x.flags.c_contiguous and x.size > 0:
        raise ValueError(f"{name} is a strided PyOpenCL array (strides {x.strides} for shape {x.shape}), which "
                         f"PyOpenCL cannot copy on the device: pass a C-contiguous PyOpenCL array")
    reader = _backends.reader_of_dlpack(DL_OPENCL)
    device = _core.device_of_stream(reader.name, queue.int_ptr) if reader is not None else -1
    if device < 0:
        how = f"backend {reader.name!r}: {reader.summary}" if reader is not None else "no backend reads OpenCL buffers"
        raise TypeError(f"{name} is a PyOpenCL array, and this build of multireduce reads none in place ({how}); "
                        f"pass {name}.get()")
    buffer = None
    if x.size > 0:
        nbytes = x.size * x.dtype.itemsize
        base = x.base_data
        if not isinstance(base, cl.Buffer):
            raise TypeError(f"{name} is not in an OpenCL buffer ({type(base).__name__}: shared virtual memory?); "
                            f"multireduce reads PyOpenCL arrays allocated as buffers")
        try:
            if x.offset == 0:
                buffer = base
            elif x.offset % pyopencl_alignment(x) == 0:
                buffer = base.get_sub_region(x.offset, nbytes)
            else:
                buffer = cl.Buffer(x.context, cl.mem_flags.READ_WRITE, nbytes)
                # waited for: the call's work may go on another queue (x is then not the call's x)
                cl.enqueue_copy(queue, buffer, base, byte_count=nbytes, src_offset=x.offset,
                                wait_for=x.events or None).wait()
        except cl.MemoryError as e:
            raise MemoryError(f"{name}: no device memory for a copy of the view ({e})") from None
        except cl.Error as e:
            raise ValueError(f"{name}'s view at byte offset {x.offset} cannot be read ({e})") from None
    address = 0 if buffer is None else buffer.int_ptr
    return Operand(framework="pyopencl", obj=x, address=address, dtype=dtype, shape=tuple(x.shape), size=x.size,
                   memory=_OPENCL_MEMORY, device=device, stream=queue.int_ptr,
                   keep=OpenCLHandles(buffer, queue, x.queue is None))


def order_before(a: Operand, call: Operand) -> None:
    """A PyOpenCL operand `a` of a call whose work goes on `call`'s queue: where a's queue is
    another, what is queued there (a's producers) is waited for, so that the call reads a whole."""
    if a.framework == "pyopencl" and call.framework == "pyopencl" and a.stream != call.stream:
        a.keep.queue.finish()


def settle(a: Operand, out=None) -> None:
    """After a call on PyOpenCL arrays (nothing for other frameworks): waits for the call's queue
    where the call made it (a PyOpenCL array without a queue), so that its results are there for
    any queue; otherwise the work stays queued, and an out= of another queue (or none) gets the
    call's completion among its events (PyOpenCL waits for them before it reads or writes out)."""
    if a.framework != "pyopencl":
        return
    if a.keep.own_queue:
        a.keep.queue.finish()
        return
    if out is not None and framework_of(out) == "pyopencl" and (out.queue is None or out.queue.int_ptr != a.stream):
        import pyopencl as cl

        out.add_event(cl.enqueue_marker(a.keep.queue))
        a.keep.queue.flush()
