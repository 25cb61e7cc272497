"""The records the front hands to the compiled core: an array as an :data:`Operand`, a reduction as
a :data:`Job`, its shape as a :class:`Shape`. Their fields are the core's own lists
(``_core.operand_fields``, ``_core.job_fields``, ``_core.shapes``), so the core, which reads a
record's fields by position, and the front, which reads them by name, cannot disagree.

Operand fields: framework ("numpy", "torch", "cupy", "jax" or "other"), obj (the array as given),
address (an int), dtype (a name multireduce takes), shape (a tuple of ints), size (the element
count), memory (HOST, or the memory of the backend that reads it in place, as the runtime's table
names it: _backends), device (-1 for host memory), stream (the cudaStream_t, an int; 0 for the
default stream), keep (what keeps the memory alive beside obj: a DLPack capsule, a converted copy;
or None). A PyOpenCL array ("pyopencl", in the memory the table gives DLPack's kDLOpenCL) has a
cl_mem as its address, the ordinal of its queue's device as its device, the cl_command_queue as
its stream and an OpenCLHandles as keep (_arrays).

Job fields: op, shape (a Shape), length, segments, inner (the extents of runtime::reduce_job), offsets
(an int64 Operand, or None), check_offsets (the caller's check_offsets), new_output (the output was
made for this call: offsets in GPU memory may then be checked after the reduction).

Records are made by keyword, except on the paths that a small call takes (an import's fast readers,
a whole-array or segmented job), where namedtuple's keyword call would be most of the front's host
time (2.2 us against 0.3 us for a tuple on the development VM): those make them with make_record()
from values in OPERAND_ORDER and JOB_ORDER, orders which are checked against the core's below, at
import.
"""

from __future__ import annotations

import enum
from collections import namedtuple

from . import _core
from ._backends import HOST  # noqa: F401 -- Operand.memory of host memory (a device array's: its backend's)

Operand = namedtuple("Operand", _core.operand_fields, module=__name__)
Job = namedtuple("Job", _core.job_fields, module=__name__)
Shape = enum.Enum("Shape", [(name.upper(), name) for name in _core.shapes], type=str, module=__name__)
Shape.__doc__ = "The shapes of a reduction, as the core names them (a str: Shape.WHOLE == 'whole')."

# The order in which make_record() takes an Operand's and a Job's values (the fast paths' positional
# records): the core's order, or the package does not import.
OPERAND_ORDER = ("framework", "obj", "address", "dtype", "shape", "size", "memory", "device", "stream", "keep")
JOB_ORDER = ("op", "shape", "length", "segments", "inner", "offsets", "check_offsets", "new_output")
_SHAPES_USED = ("WHOLE", "AXIS", "FIXED_SEGMENTS", "OFFSETS", "WINDOW")


def _check_core() -> None:
    for what, core, front in (("operand_fields", tuple(_core.operand_fields), OPERAND_ORDER),
                              ("job_fields", tuple(_core.job_fields), JOB_ORDER)):
        if core != front:
            raise ImportError(f"multireduce._core.{what} is {core}; this front makes records of {front}: "
                              f"the compiled core and the Python files are of different versions")
    missing = [name for name in _SHAPES_USED if name not in Shape.__members__]
    if missing:
        raise ImportError(f"multireduce._core.shapes {tuple(_core.shapes)} lacks {missing}: the compiled core "
                          f"and the Python files are of different versions")


_check_core()

# The shapes as plain module constants (an Enum member's attribute lookup costs 0.2 us on Python 3.11)
WHOLE = Shape.WHOLE
AXIS = Shape.AXIS
FIXED_SEGMENTS = Shape.FIXED_SEGMENTS
OFFSETS = Shape.OFFSETS
WINDOW = Shape.WINDOW

# make_record(Operand, values in OPERAND_ORDER) or make_record(Job, values in JOB_ORDER): a record
# without namedtuple's keyword call, for the fast paths (tuple.__new__ itself: no Python frame).
make_record = tuple.__new__
