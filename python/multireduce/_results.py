"""Results in the input's framework (NumPy, CuPy, PyTorch, JAX, PyOpenCL) and on its device: new arrays, the two
slab allocators of the small calls' results, out= checks, and the copies between host and device
that a job run on the host for a device array needs.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Tuple

import numpy as np

from ._arrays import framework_of, host_operand, numpy_address, operand, pyopencl_alignment, pyopencl_queue
from ._backends import device_words
from ._records import HOST, Operand


@functools.lru_cache(maxsize=None)
def torch_dtype(dtype: str):
    """torch's dtype of a dtype name."""
    import torch

    return getattr(torch, dtype)


@functools.lru_cache(maxsize=None)
def numpy_dtype(dtype: str):
    """NumPy's dtype of a dtype name (np.dtype() parses the name each time)."""
    return np.dtype(dtype)


# ---- new arrays -------------------------------------------------------------------------------------


def empty(like: Operand, shape: Tuple[int, ...], dtype: str):
    """A new array for results, of `like`'s framework and on its device (host results of a JAX or
    other host array are NumPy arrays here; finish() converts them)."""
    return new_array(like.obj, like.framework, like.device, shape, dtype)


def new_array(obj, framework: str, device: int, shape: Tuple[int, ...], dtype: str):
    """empty() for an array `obj` of `framework` on `device` (-1: the host)."""
    if framework == "torch":  # new_empty: obj's device, without parsing one (a microsecond less)
        return obj.new_empty(shape, dtype=torch_dtype(dtype))
    if framework == "pyopencl":  # in obj's context, with its queue (or none, as obj)
        import pyopencl.array

        return pyopencl.array.empty(obj.queue if obj.queue is not None else obj.context, shape, numpy_dtype(dtype))
    if device < 0:
        return np.empty(shape, dtype=dtype)
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        if cupy.cuda.runtime.getDevice() == device:
            return cupy.empty(shape, dtype=numpy_dtype(dtype))
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=numpy_dtype(dtype))
    if "torch" in sys.modules or framework == "jax":
        import torch

        return torch.empty(shape, dtype=torch_dtype(dtype), device=f"cuda:{device}")
    raise TypeError(
        f"results on the GPU for {framework} arrays are made with CuPy or PyTorch; install one of them"
    )


def address_of(result) -> int:
    """The data address of a NumPy, PyTorch or CuPy array (one made here, or a host copy); a
    PyOpenCL array's cl_mem (one made here: at offset 0; 0 for an empty one)."""
    if isinstance(result, np.ndarray):
        return numpy_address(result)
    if hasattr(result, "base_data"):  # pyopencl
        return 0 if result.base_data is None or result.size == 0 else result.base_data.int_ptr
    data_ptr = getattr(result, "data_ptr", None)  # torch
    if data_ptr is not None:
        return data_ptr()
    return result.data.ptr  # cupy


def finish(result, like: Operand):
    """`result` (made by empty() or to_framework()) as an array of like's framework."""
    if like.framework == "jax":
        import jax

        if like.memory == HOST:
            return jax.numpy.asarray(result)
        return jax.dlpack.from_dlpack(result)
    return result  # other frameworks' device results: CuPy or PyTorch arrays (DLPack, CUDA array interface)


def check_out(out, like: Operand, shape: Tuple[int, ...], dtype: str, reads=()) -> Tuple[Any, int]:
    """out= as given: of like's framework and device, `shape` and `dtype`, C-contiguous, writable,
    and overlapping none of the arrays the call reads (`reads`: (name, Operand or None) pairs; NumPy
    refuses such an out= too, or computes into a copy: a kernel that reads and writes one buffer
    gives wrong answers). Returns it as an Operand, which keeps alive what its address needs (a
    PyOpenCL view's sub-buffer) while the caller holds it, and its address."""
    if like.framework == "jax":
        raise TypeError("out= cannot be a JAX array (JAX arrays are immutable)")
    if like.framework == "pyopencl" and framework_of(out) == "pyopencl":
        if out.context != like.obj.context:
            raise ValueError("out is in another OpenCL context than x: put the arrays of one call in one context")
        if out.offset % pyopencl_alignment(out) != 0:
            raise ValueError(f"out is a view at byte offset {out.offset}, not a multiple of the device's base address "
                             f"alignment ({pyopencl_alignment(out)} bytes): pass an array of its own")
    # (a PyOpenCL out= is written on x's queue, whatever queue it has itself)
    o = operand(out, "out", None if like.memory == HOST or like.framework == "pyopencl" else like.stream)
    if o.framework != like.framework or o.device != like.device:
        raise TypeError(
            f"out is a {o.framework} array on {_where(o)}, the input a {like.framework} array on {_where(like)}"
        )
    if o.dtype != dtype:
        raise TypeError(f"out has dtype {o.dtype}; this result is {dtype}")
    if tuple(o.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(o.shape)}; this result has shape {tuple(shape)}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("out is read-only")
    for name, r in reads:
        if r is not None and _overlap(o, r):
            raise ValueError(f"out overlaps {name} (it would be written while it is read): "
                             f"pass a separate array, or no out=")
    return o, o.address


def _overlap(a: Operand, b: Operand) -> bool:
    """Whether the memory of two imported arrays overlaps (same memory, same device, byte ranges
    that meet; empty arrays overlap nothing). PyOpenCL arrays: the same buffer, byte ranges from
    their offsets that meet."""
    if a.memory != b.memory or a.device != b.device or a.size == 0 or b.size == 0:
        return False
    (a_base, a_first), (b_base, b_first) = _origin(a), _origin(b)
    return (a_base == b_base and a_first < b_first + b.size * _itemsize(b.dtype)
            and b_first < a_first + a.size * _itemsize(a.dtype))


def _origin(a: Operand) -> Tuple[int, int]:
    """Where an imported array's bytes start: (its buffer, the byte offset in it) for a PyOpenCL
    array (a cl_mem handle is no address), (0, its address) for the others."""
    if a.framework == "pyopencl":
        return a.obj.base_data.int_ptr, a.obj.offset
    return 0, a.address


@functools.lru_cache(maxsize=None)
def _itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def _where(a: Operand) -> str:
    """"the host", or the device as its backend names it ("CUDA device 1")."""
    return device_words(a.memory, a.device)


# ---- the slabs: results of the small calls on a GPU, allocated ahead ---------------------------------


class _SlotTable:
    """Slots of slabs made ahead, one slab per key at a time, handed out by the subclasses'
    reserve(): a slab's slots (tuples, what reserve() returns) come in chunks (lists) from a
    generator; the table holds, per key, an iterator over the current chunk and the generator.
    Taking a slot is one next() on a list iterator, atomic under the GIL (threads never share a
    slot); the next chunk, and the next slab, are made under a lock (_refill)."""

    def __init__(self):
        self._current = {}  # key -> [iterator over the current chunk's slots, the slab's chunks to come]
        self._lock = threading.RLock()  # (re-entrant: a finalizer run by an allocation may call in)

    def _refill(self, key, new_chunks):
        """A slot of the key's next chunk, or of a new slab's first (new_chunks() makes the slab and
        returns the generator of its chunks)."""
        with self._lock:
            entry = self._current.get(key)
            if entry is not None:
                slot = next(entry[0], None)  # (another thread may have refilled it)
                if slot is not None:
                    return slot
                chunk = next(entry[1], None)
                if chunk is not None:
                    slots = iter(chunk)
                    slot = next(slots)
                    entry[0] = slots
                    return slot
            chunks = new_chunks()
            slots = iter(next(chunks))
            slot = next(slots)
            self._current[key] = [slots, chunks]
            return slot


class _ScalarSlabs(_SlotTable):
    """0-d results of whole-array reductions on a GPU, as views of slabs of `slab` elements, one
    slab per (framework, device, dtype, stream) at a time: indexing a slab costs about half of
    allocating a 0-d array (PyTorch: 1.2 against 2.3 us on the H200 host), and a small reduction's
    call is mostly host time. The slots, with their views (PyTorch: `per_chunk` at a time, by one
    unbind(): 0.7-1.1 us each against 1.2-2.5 us for slab[i], H200 hosts, 2026-11-24) and
    addresses, are made `per_chunk` at a time, so that taking one is a next() (_SlotTable). A slab
    lives while any of its results does; it is made on the stream its results are written on, so
    the allocator's stream order covers them (under CUDA graph capture, from the graph's pool: the
    graph writes its slots on every replay)."""

    slab = 1024
    per_chunk = 64

    def reserve(self, a: Operand, dtype: str):
        """(views, index, address) of a fresh slot for a result of dtype `dtype` of the device
        array `a` (PyTorch or CuPy): the kernel is given the address, and the caller takes
        views[index], the result's 0-d view, after the launch (views: a tuple of PyTorch views, or
        the CuPy slab itself)."""
        key = (a.framework, a.device, dtype, a.stream)
        entry = self._current.get(key)
        if entry is not None:
            slot = next(entry[0], None)
            if slot is not None:
                return slot
        return self._refill(key, lambda: self._chunks(new_array(a.obj, a.framework, a.device, (self.slab,), dtype),
                                                      a.framework == "torch", numpy_dtype(dtype).itemsize))

    def _chunks(self, slab, torch: bool, itemsize: int):
        base, per = address_of(slab), self.per_chunk
        for first in range(0, self.slab, per):
            if torch:
                views = slab[first:first + per].unbind(0)
                yield [(views, j, base + (first + j) * itemsize) for j in range(per)]
            else:
                yield [(slab, i, base + i * itemsize) for i in range(first, first + per)]


scalar_slabs = _ScalarSlabs()


class _RecordSlabs(_SlotTable):
    """Results of a fixed size up to `stride` bytes (a statistics struct) on a GPU, as records of
    uint8 slabs, one slab per (framework, device, stream) at a time: the kernel is given a record's
    address and the caller reads the record's view after the launch, so that no allocation comes
    before it. Records are `stride`-byte aligned; their views (uint8, `stride` bytes; PyTorch's by
    one unbind() a chunk) are made `per_chunk` at a time, as scalar_slabs' slots; a slab lives
    while any of its results does and is made on the stream they are written on."""

    records = 512
    stride = 128
    per_chunk = 64

    def reserve(self, a: Operand):
        """(the record's view, its address): a fresh record for a result of the device array `a`."""
        key = (a.framework, a.device, a.stream)
        entry = self._current.get(key)
        if entry is not None:
            record = next(entry[0], None)
            if record is not None:
                return record
        return self._refill(key, lambda: self._chunks(
            new_array(a.obj, a.framework, a.device, (self.records, self.stride), "uint8"), a.framework == "torch"))

    def _chunks(self, slab, torch: bool):
        base, stride, per = address_of(slab), self.stride, self.per_chunk
        for first in range(0, self.records, per):
            rows = slab[first:first + per]
            views = rows.unbind(0) if torch else [rows[j] for j in range(per)]
            yield [(views[j], base + (first + j) * stride) for j in range(per)]


record_slabs = _RecordSlabs()


# ---- between host and device ---------------------------------------------------------------------------


def to_numpy(x) -> np.ndarray:
    """A NumPy copy of a device array of any framework (CuPy and PyTorch directly, JAX by its own
    conversion, others through CuPy and the CUDA array interface)."""
    framework = framework_of(x)
    if framework == "torch":
        return x.detach().cpu().numpy()
    if framework == "pyopencl":
        return x.get(queue=pyopencl_queue(x))
    if framework == "cupy":
        return x.get()
    if framework == "jax":
        return np.asarray(x)
    import cupy

    return cupy.asarray(x).get()


def host_copy(a: Operand) -> Operand:
    """A NumPy copy of an imported device array, as an Operand (a job the GPU does not run, or
    backend="cpu", runs on it)."""
    return host_operand(np.ascontiguousarray(to_numpy(a.obj)), "x")


def to_framework(host: np.ndarray, like: Operand):
    """A host result as an array of like's framework, on its device."""
    if like.memory == HOST:
        if like.framework == "torch":
            import torch

            return torch.from_numpy(np.asarray(host, order="C"))
        return host
    target = empty(like, host.shape, host.dtype.name)
    if type(target).__module__.split(".")[0] == "torch":
        import torch

        target.copy_(torch.from_numpy(np.asarray(host, order="C")))
    elif like.framework == "pyopencl":
        target.set(np.asarray(host, order="C"), queue=pyopencl_queue(like.obj))
    else:
        target.set(np.asarray(host, order="C"))
    return target


def like_input(host: np.ndarray, like: Operand):
    """A NumPy result as an array of like's framework, on like's device."""
    return finish(to_framework(host, like), like)


def deliver_host(result: np.ndarray, out, like: Operand):
    """A result computed on the host for a device array, back on the device: into out= if given
    (already checked), else as a new array of like's framework."""
    if out is not None:
        out[...] = to_framework(result, like)
        return out
    return like_input(result, like)
