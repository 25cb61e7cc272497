"""The runtime's table of backends as the package reads it: the one module that knows what a backend
declares (src/runtime/backend.hpp), so that no other module names a backend. Each entry of
``_core.backend_table()`` is a :data:`Backend`: its name, its summary, what it is in a sentence, its
memory ("host", or the memory it reads in place), how one of its devices is named ("" where it
numbers none), whether it splits a job over several devices, the DLPack device types of its memory,
and whether "auto" runs host data on it.

The package routes arrays by DLPack device type, the vocabulary every framework shares: an array in
memory of a type the table lists is handed to the core as in that backend's memory (a PyTorch or
CuPy array in CUDA memory is DLPack's kDLCUDA, a PyOpenCL array's buffer kDLOpenCL).

The table is read once, at import: the runtime registers its backends before any call.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Optional

from . import _core

Backend = namedtuple("Backend", _core.backend_fields, module=__name__)

HOST = _core.host_memory  # an Operand's memory in host memory

TABLE = tuple(Backend._make(entry) for entry in _core.backend_table())

_BY_NAME = {b.name: b for b in TABLE}
_MEMORY_OF_DLPACK = {}  # DLPack device type -> the memory a backend of the table reads it as (the first)
for _b in TABLE:
    for _t in _b.dlpack_device_types:
        _MEMORY_OF_DLPACK.setdefault(_t, _b.memory)
del _b, _t

# The backend that computes in host memory (the CPU's): where host copies of device arrays run,
# and where "auto" runs host data without a device set.
HOST_BACKEND = next(b.name for b in TABLE if b.memory == HOST)


def entry(name: str) -> Optional[Backend]:
    """The table's entry for backend `name` (None for "auto" or an unknown name)."""
    return _BY_NAME.get(name)


def memory_of_dlpack(device_type: int) -> Optional[str]:
    """The memory an array of DLPack device type `device_type` is in, as the core takes it (HOST, or
    the memory a backend reads in place); None where no backend of the table reads that memory."""
    return _MEMORY_OF_DLPACK.get(device_type)


def reader_of(memory: str) -> Optional[Backend]:
    """The backend that reads `memory` in place (the last of the table, as the runtime chooses),
    None for host memory or memory none reads."""
    found = None
    for b in TABLE:
        if b.memory == memory and memory != HOST:
            found = b
    return found


def reader_of_dlpack(device_type: int) -> Optional[Backend]:
    """The backend that reads memory of DLPack device type `device_type` in place (None for host
    memory, or memory no backend of the table reads)."""
    memory = memory_of_dlpack(device_type)
    return None if memory is None else reader_of(memory)


def device_words(memory: str, device: int) -> str:
    """Where an array is, in words: "the host", "CUDA device 1", "OpenCL device 0"."""
    if memory == HOST:
        return "the host"
    b = reader_of(memory)
    noun = b.device_noun if b is not None and b.device_noun else f"{memory} device"
    return f"{noun} {device}"


def splitting(backend: str) -> Optional[Backend]:
    """The backend whose devices a set of several (devices=) names on a call to `backend` (the named
    one where it splits a job over devices, else the first of the table that does; None where none
    does)."""
    name = _core.splitting_devices_for(backend)
    return None if name is None else _BY_NAME.get(name)


def automatic_with_devices() -> Optional[Backend]:
    """The backend that a device number names for "auto": the first of the table that numbers its
    devices and that "auto" runs host data on."""
    name = _core.numbering_devices_for("auto")
    return None if name is None else _BY_NAME.get(name)
