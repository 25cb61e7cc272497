"""How multireduce meets arrays: NumPy, anything with ``__dlpack__`` (CuPy, PyTorch, JAX, ...), and
``__cuda_array_interface__`` (Numba, ...) as a fallback.

An imported array is an :class:`Imported`: its address, dtype name, shape and device (-1 for host
memory), and the object it came from (kept alive for as long as the call needs its memory). Device
arrays are used in place; nothing here copies an input, and a non-contiguous one is an error.

Results are made in the input's framework (NumPy, CuPy, PyTorch, JAX) and on its device.
"""

from __future__ import annotations

import functools
import itertools
import math
import sys
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _core

DTYPES = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
)

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


class Imported:
    """One imported array (see the module's doc). address, device and the shape's extents are
    Python ints (callers convert what their source gives)."""

    __slots__ = ("obj", "framework", "address", "dtype", "shape", "size", "device", "keep")

    def __init__(self, obj, framework, address, dtype, shape, device, keep=None):
        self.obj = obj
        self.framework = framework  # "numpy", "cupy", "torch", "jax" or "other"
        self.address = address
        self.dtype = dtype
        self.shape = shape  # a tuple of ints
        self.size = math.prod(shape)
        self.device = device  # -1: host memory
        self.keep = keep  # the DLPack capsule, alive for as long as this is


_FRAMEWORKS = {np.ndarray: "numpy"}  # type -> framework, filled as types are met


def framework_of(x) -> str:
    t = type(x)
    known = _FRAMEWORKS.get(t)
    if known is not None:
        return known
    if isinstance(x, (np.ndarray, np.generic)):
        return "numpy"
    root = t.__module__.split(".")[0]
    found = root if root in ("cupy", "torch") else "jax" if root in ("jax", "jaxlib") else "other"
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


# ---- importing -----------------------------------------------------------------------------------


def _check_contiguous(name: str, shape: Sequence[int], strides: Optional[Sequence[int]]) -> None:
    """strides in elements (None: C order). Raises ValueError unless C-contiguous."""
    if strides is None or math.prod(shape) == 0:
        return
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            raise ValueError(
                f"{name} is not C-contiguous (strides {tuple(strides)} for shape {tuple(shape)}); "
                f"pass a contiguous copy (numpy.ascontiguousarray, cupy.ascontiguousarray, tensor.contiguous())"
            )
        expected *= extent


def _check_dtype(name: str, dtype: str) -> str:
    if dtype not in DTYPES:
        raise TypeError(f"{name} has dtype {dtype}; multireduce takes {', '.join(DTYPES)}")
    return dtype


_NUMPY_NAMES = {}  # numpy.dtype -> its name, for the native dtypes multireduce takes (filled as met)


def _check_numpy_like(a, name: str, module: str) -> str:
    """The dtype name of a NumPy or CuPy array; TypeError for a foreign byte order or a dtype
    multireduce does not take, ValueError unless C-contiguous."""
    dtype = _NUMPY_NAMES.get(a.dtype)  # (dtype.name is slow to make: a few us)
    if dtype is None:
        if not a.dtype.isnative:
            raise TypeError(f"{name} has non-native byte order ({a.dtype.str}); pass a.astype(a.dtype.newbyteorder('='))")
        dtype = _check_dtype(name, a.dtype.name)
        _NUMPY_NAMES[a.dtype] = dtype
    contiguous = getattr(a, "_c_contiguous", None)  # CuPy's own flag: a.flags makes an object (0.4 us)
    if contiguous is None:
        contiguous = a.flags.c_contiguous
    if not contiguous and a.size > 0:
        raise ValueError(f"{name} is not C-contiguous (strides {a.strides} for shape {a.shape}); "
                         f"pass {module}.ascontiguousarray({name})")
    return dtype


def _from_numpy(a: np.ndarray, name: str, framework: str, obj) -> Imported:
    dtype = _check_numpy_like(a, name, "numpy")
    return Imported(obj, framework, a.__array_interface__["data"][0], dtype, a.shape, -1, keep=a)


def _current_stream_or_none(stream, x, framework: str, device: int) -> Optional[int]:
    """The stream handle the work runs on when it is the producer's current stream (then the array
    can be read directly: nothing to order), else None (DLPack's __dlpack__(stream=...) orders it)."""
    current = stream_handle(None, x, framework, device)
    if stream is None:
        return current
    return current if stream_handle(stream, x, framework, device) == current else None


_TORCH_NAMES = {}  # torch.dtype -> its name, for the dtypes multireduce takes (filled as they are met)


def _from_torch(x, name: str, stream) -> Optional[Tuple[Imported, int]]:
    """A PyTorch tensor read directly (its pointer, dtype, shape), when the work runs on its current
    stream: nothing to order, so no DLPack capsule is needed. None otherwise (DLPack orders it)."""
    if x.is_cuda:
        device = x.get_device()
        handle = _torch_current_stream(device) if stream is None else _current_stream_or_none(stream, x, "torch", device)
        if handle is None:
            return None
    elif x.device.type == "cpu":
        device, handle = -1, stream_handle(stream, x, "torch", -1)
    else:
        return None
    dtype = _TORCH_NAMES.get(x.dtype)
    if dtype is None:
        dtype = _check_dtype(name, str(x.dtype).replace("torch.", ""))
        _TORCH_NAMES[x.dtype] = dtype
    if not x.is_contiguous():
        raise ValueError(f"{name} is not contiguous (strides {tuple(x.stride())} for shape {tuple(x.shape)}); "
                         f"pass {name}.contiguous()")
    return Imported(x, "torch", x.data_ptr(), dtype, tuple(x.shape), device), handle


def _from_cupy(x, name: str, stream) -> Optional[Tuple[Imported, int]]:
    """A CuPy array read directly, when the work runs on CuPy's current stream (as _from_torch)."""
    data = x.data  # a MemoryPointer: the address and its device without making a Device object
    device = data.device_id
    handle = _cupy_current_stream(device) if stream is None else _current_stream_or_none(stream, x, "cupy", device)
    if handle is None:
        return None
    dtype = _check_numpy_like(x, name, "cupy")
    return Imported(x, "cupy", data.ptr, dtype, x.shape, device), handle


# ---- the direct path: what a small call on a device array needs, without an Imported ------------------

# type -> reader(x) -> direct_operand's tuple or None; filled by import_array as it reads PyTorch
# tensors and CuPy arrays directly (those exact types only)
_DIRECT_READERS = {}


def direct_operand(x) -> Optional[tuple]:
    """(framework, address, dtype name, element count, ndim, device, stream handle) of `x` when it
    is a contiguous PyTorch CUDA tensor or CuPy array of a dtype that import_array has met and
    accepted before, read in place on its framework's current stream: what import_array would
    find, in fewer steps and as a plain tuple (a small call's time on the GPU is mostly its host
    time before the launch). None for anything else, which import_array then decides, with its
    errors."""
    reader = _DIRECT_READERS.get(type(x))
    return None if reader is None else reader(x)


def _torch_direct(x) -> Optional[tuple]:
    dtype = _TORCH_NAMES.get(x.dtype)
    if dtype is None or not x.is_cuda or not x.is_contiguous():
        return None
    device = x.get_device()
    return "torch", x.data_ptr(), dtype, x.numel(), x.dim(), device, _torch_current_stream(device)


def _cupy_direct(x) -> Optional[tuple]:
    dtype = _NUMPY_NAMES.get(x.dtype)
    if dtype is None or not x._c_contiguous:
        return None
    data = x.data
    device = data.device_id
    return "cupy", data.ptr, dtype, x.size, x.ndim, device, _cupy_current_stream(device)


def import_array(x, name: str, stream) -> Tuple[Imported, int]:
    """(the array, the stream handle the work goes on). Raises TypeError for what is not an array
    of a dtype multireduce takes, ValueError for non-contiguous arrays."""
    framework = framework_of(x)
    if framework == "numpy":
        a = np.asarray(x)
        return _from_numpy(a, name, "numpy", x), stream_handle(stream, x, framework, -1)
    if framework == "torch" and type(x).__name__ in ("Tensor", "Parameter"):
        direct = _from_torch(x, name, stream)
        if direct is not None:
            _DIRECT_READERS.setdefault(type(x), _torch_direct)
            return direct
    if framework == "cupy" and type(x).__name__ == "ndarray":
        direct = _from_cupy(x, name, stream)
        if direct is not None:
            if hasattr(x, "_c_contiguous"):  # (CuPy's own flag; older versions read the slower flags)
                _DIRECT_READERS.setdefault(type(x), _cupy_direct)
            return direct
    if hasattr(x, "__dlpack_device__") and hasattr(x, "__dlpack__"):
        device_type, device_id = x.__dlpack_device__()
        device_type = int(device_type)
        if device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
            device = int(device_id)
            handle = stream_handle(stream, x, framework, device)
            capsule = x.__dlpack__(stream=_dlpack_stream(handle))
        elif device_type in (_DL_CPU, _DL_CUDA_HOST):
            device, handle = -1, stream_handle(stream, x, framework, -1)
            capsule = x.__dlpack__()
        else:
            raise TypeError(f"{name} is on a device multireduce does not run on (DLPack device type {device_type})")
        address, dtype, shape, strides, _, _, _ = _core.dlpack_info(capsule)  # (ints)
        _check_dtype(name, dtype)
        _check_contiguous(name, shape, strides)
        return Imported(x, framework, address, dtype, shape, device, keep=capsule), handle
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = _check_dtype(name, np.dtype(cai["typestr"]).name)
        if not np.dtype(cai["typestr"]).isnative:
            raise TypeError(f"{name} has non-native byte order")
        itemsize = np.dtype(dtype).itemsize
        strides = cai.get("strides")
        _check_contiguous(name, cai["shape"], None if strides is None else [s // itemsize for s in strides])
        device = _cai_device(cai["data"][0])
        handle = stream_handle(stream, x, framework, device)
        producer = cai.get("stream")
        if producer not in (None, handle):
            _wait_for(producer, handle, device)
        return Imported(x, framework, int(cai["data"][0]), dtype, tuple(int(d) for d in cai["shape"]), device), handle
    if isinstance(x, (list, tuple, int, float)):
        a = np.asarray(x)
        return _from_numpy(a, name, "numpy", a), stream_handle(stream, x, "numpy", -1)
    raise TypeError(
        f"{name} must be a NumPy array or an array with __dlpack__ or __cuda_array_interface__, not {type(x).__name__}"
    )


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


# ---- results in the input's framework --------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _torch_dtype(dtype: str):
    """torch's dtype of a dtype name."""
    import torch

    return getattr(torch, dtype)


@functools.lru_cache(maxsize=None)
def _numpy_dtype(dtype: str):
    """NumPy's dtype of a dtype name (np.dtype() parses the name each time)."""
    return np.dtype(dtype)


def empty(like: Imported, shape: Tuple[int, ...], dtype: str):
    """A new array for results, of `like`'s framework and on its device (host results of a JAX or
    other host array are NumPy arrays here; finish() converts them)."""
    return new_array(like.obj, like.framework, like.device, shape, dtype)


def new_array(obj, framework: str, device: int, shape: Tuple[int, ...], dtype: str):
    """empty() for an array `obj` of `framework` on `device` (-1: the host)."""
    if framework == "torch":  # new_empty: obj's device, without parsing one (a microsecond less)
        return obj.new_empty(shape, dtype=_torch_dtype(dtype))
    if device < 0:
        return np.empty(shape, dtype=dtype)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        if cupy.cuda.runtime.getDevice() == device:
            return cupy.empty(shape, dtype=_numpy_dtype(dtype))
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=_numpy_dtype(dtype))
    if "torch" in sys.modules or framework == "jax":
        import torch

        return torch.empty(shape, dtype=_torch_dtype(dtype), device=f"cuda:{device}")
    raise TypeError(
        f"results on the GPU for {framework} arrays are made with CuPy or PyTorch; install one of them"
    )


class _ScalarSlabs:
    """0-d results of whole-array reductions on a GPU, as views of slabs of `slab` elements, one
    slab per (framework, device, dtype, stream) at a time: indexing a slab costs about half of
    allocating a 0-d array (PyTorch: 1.2 against 2.3 us on the H200 host), and a small reduction's
    call is mostly host time. PyTorch's views are made `torch_views` at a time by one unbind()
    (0.7-1.1 us each against 1.2-2.5 us for slab[i], H200 hosts, 2026-11-24). A slab lives while any of its results does; it is made on the stream
    its results are written on, so the allocator's stream order covers them. Taking a slot is one
    next() on an itertools.count, atomic under the GIL: threads never share a slot."""

    # (on the H200's host, 2026-11-24: slab[i] 1.2-2.2 us, x.new_empty(()) 2.3-3.7 us)

    slab = 1024
    torch_views = 64  # PyTorch: 0-d views made this many at a time, by one unbind()

    def __init__(self):
        self._current = {}

    def reserve(self, obj, framework: str, device: int, dtype: str, stream: int):
        """(views, index, address) of a fresh slot for a result of the array `obj` (of
        `framework`, on GPU `device`): the kernel is given the address, and the caller takes
        views[index], the result's 0-d view, after the launch (views: a tuple of PyTorch views, or
        the CuPy slab itself)."""
        key = (framework, device, dtype, stream)
        entry = self._current.get(key)
        i = 0 if entry is None else next(entry[1])
        if entry is None or i >= self.slab:
            slab = new_array(obj, framework, device, (self.slab,), dtype)
            chunks = [None] * (self.slab // self.torch_views) if framework == "torch" else None
            entry = (slab, itertools.count(1), address_of(slab), _numpy_dtype(dtype).itemsize, chunks)
            self._current[key] = entry
            i = 0
        slab, _, base, itemsize, chunks = entry
        if chunks is None:
            return slab, i, base + i * itemsize
        c, j = divmod(i, self.torch_views)
        views = chunks[c]
        if views is None:  # (two threads may both make it: each takes its own slot's view)
            views = chunks[c] = slab[c * self.torch_views:(c + 1) * self.torch_views].unbind(0)
        return views, j, base + i * itemsize


scalar_slabs = _ScalarSlabs()


class _RecordSlabs:
    """Results of a fixed size up to `stride` bytes (a statistics struct) on a GPU, as records of
    uint8 slabs, one slab per (framework, device, stream) at a time: the kernel is given a record's
    address and the caller slices the record out after the launch, so that no allocation comes
    before it. Records are `stride`-byte aligned; a slab lives while any of its results does and
    is made on the stream they are written on; taking a record is atomic under the GIL, as for
    scalar_slabs."""

    records = 512
    stride = 128

    def __init__(self):
        self._current = {}

    def reserve(self, obj, framework: str, device: int, stream: int):
        """(slab, byte offset, address) of a fresh record for a result of the array `obj`."""
        key = (framework, device, stream)
        entry = self._current.get(key)
        i = 0 if entry is None else next(entry[1])
        if entry is None or i >= self.records:
            slab = new_array(obj, framework, device, (self.records * self.stride,), "uint8")
            entry = (slab, itertools.count(1), address_of(slab))
            self._current[key] = entry
            i = 0
        slab, _, base = entry
        return slab, i * self.stride, base + i * self.stride


record_slabs = _RecordSlabs()


def finish(result, like: Imported):
    """`result` (made by empty() or to_framework()) as an array of like's framework."""
    if like.framework == "jax":
        import jax

        if like.device < 0:
            return jax.numpy.asarray(result)
        return jax.dlpack.from_dlpack(result)
    return result  # other frameworks' device results: CuPy or PyTorch arrays (DLPack, CUDA array interface)


def address_of(result) -> int:
    """The data address of an array made by empty() (NumPy, PyTorch or CuPy)."""
    if isinstance(result, np.ndarray):
        return result.__array_interface__["data"][0]
    data_ptr = getattr(result, "data_ptr", None)  # torch
    if data_ptr is not None:
        return data_ptr()
    return result.data.ptr  # cupy


def to_numpy(x) -> np.ndarray:
    """A NumPy copy of a device array of any framework (CuPy and PyTorch directly, JAX by its own
    conversion, others through CuPy and the CUDA array interface)."""
    framework = framework_of(x)
    if framework == "torch":
        return x.detach().cpu().numpy()
    if framework == "cupy":
        return x.get()
    if framework == "jax":
        return np.asarray(x)
    import cupy

    return cupy.asarray(x).get()


def to_host(a: Imported) -> np.ndarray:
    """A NumPy copy of an imported device array (the CPU fallback of a job the GPU cannot run)."""
    return to_numpy(a.obj)


def like_input(host: np.ndarray, like: Imported):
    """A NumPy result as an array of like's framework, on like's device."""
    return finish(to_framework(host, like), like)


def to_framework(host: np.ndarray, like: Imported):
    """A host result as an array of like's framework, on its device."""
    if like.device < 0:
        if like.framework == "torch":
            import torch

            return torch.from_numpy(np.asarray(host, order="C"))
        return host
    target = empty(like, host.shape, host.dtype.name)
    if type(target).__module__.split(".")[0] == "torch":
        import torch

        target.copy_(torch.from_numpy(np.asarray(host, order="C")))
    else:
        target.set(np.asarray(host, order="C"))
    return target


def check_out(out, like: Imported, shape: Tuple[int, ...], dtype: str, stream) -> Tuple[Any, int]:
    """out= as given: of like's framework and device, `shape` and `dtype`, C-contiguous, writable.
    Returns it and its address."""
    if like.framework == "jax":
        raise TypeError("out= cannot be a JAX array (JAX arrays are immutable)")
    o, _ = import_array(out, "out", stream)
    if o.framework != like.framework or o.device != like.device:
        raise TypeError(
            f"out is a {o.framework} array on {_where(o.device)}, the input a {like.framework} array on {_where(like.device)}"
        )
    if o.dtype != dtype:
        raise TypeError(f"out has dtype {o.dtype}; this result is {dtype}")
    if o.shape != tuple(shape):
        raise ValueError(f"out has shape {o.shape}; this result has shape {tuple(shape)}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is read-only")
    return out, o.address


def _where(device: int) -> str:
    return "the host" if device < 0 else f"GPU {device}"
