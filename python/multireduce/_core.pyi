# Type stubs of multireduce._core (python/src/core.cpp). Arrays and jobs are passed as the front's
# records (multireduce._records): an Operand (fields: operand_fields) and a Job (fields: job_fields),
# named tuples that the core reads by position. Results are written at an address (an int) in the
# memory of the operand they are of. backend is one of backends() (multireduce.backends()):
# "auto", then the runtime's backends in the order "auto" tries them.
from typing import List, NamedTuple, Optional, Sequence, Tuple

__version__: str
match_max_k: int
operand_fields: Tuple[str, ...]  # ("framework", "obj", "address", "dtype", "shape", "size", "memory", "device", "stream", "keep")
job_fields: Tuple[str, ...]  # ("op", "shape", "length", "segments", "inner", "offsets", "check_offsets", "new_output")
shapes: Tuple[str, ...]  # ("whole", "axis", "fixed_segments", "offsets", "window")
# ("name", "summary", "noun", "memory", "device_noun", "splits_over_devices", "dlpack_device_types",
#  "automatic_for_host_data"): the fields of each backend_table() entry (src/runtime/backend.hpp)
backend_fields: Tuple[str, ...]
host_memory: str  # an operand's memory in host memory ("host")

class Unsupported(RuntimeError): ...  # the backend does not run the job; the message starts "backend='NAME': "
class UnsupportedDtype(Unsupported, TypeError): ...  # ... because of the element type
class UnsupportedJob(Unsupported, ValueError): ...  # ... for any other reason
class CudaError(RuntimeError): ...

class _Operand(NamedTuple):  # (multireduce._records.Operand)
    framework: str
    obj: object
    address: int
    dtype: str
    shape: Tuple[int, ...]
    size: int
    memory: str  # host_memory, or a backend_table() entry's memory
    device: int  # -1 for host memory
    stream: int  # a cudaStream_t; 0: the default stream
    keep: object

class _Job(NamedTuple):  # (multireduce._records.Job)
    op: str
    shape: str  # one of shapes
    length: int
    segments: int
    inner: int
    offsets: Optional[_Operand]  # int64
    check_offsets: bool
    new_output: bool

def dlpack_info(capsule: object) -> Tuple[int, str, Tuple[int, ...], Optional[Tuple[int, ...]], int, int, bool]: ...
def backends() -> List[str]: ...
def backend_table() -> List[Tuple[str, str, str, str, str, bool, Tuple[int, ...], bool]]: ...
def numbering_devices_for(backend: str) -> Optional[str]: ...
def splitting_devices_for(backend: str) -> Optional[str]: ...
def device_count(backend: str) -> int: ...
def device_of_stream(backend: str, stream: int) -> int: ...
def result_dtype(op: str, dtype: str) -> str: ...
def reduce(x: _Operand, job: _Job, out: int, backend: str, devices: Sequence[int] = ()) -> None: ...
def statistics(x: _Operand, out: int, backend: str, devices: Sequence[int] = ()) -> None: ...
def statistics_layout(dtype: str) -> Tuple[List[Tuple[str, int, str]], int]: ...
def knn(query: _Operand, train: _Operand, bytes: int, k: int, idx: int, dist: int, reverse_out: int,
        backend: str, devices: Sequence[int] = ()) -> Tuple[str, str]: ...
def accept(idx: int, dist: int, queries: int, k: int, ratio: float, margin: int, max_distance: int,
           cross_check: bool, reverse_nearest: int, out: int) -> int: ...
def check_match_rule(ratio: float, margin: int, max_distance: int, cross_check: bool) -> None: ...
def match_all(rows: _Operand, offsets: int, images: int, pairs: int, pair_count: int, bytes: int, k: int,
              ratio: float, margin: int, max_distance: int, cross_check: bool, memory_budget: int,
              backend: str, devices: Sequence[int] = ()) -> Tuple[bytes, bytes, Tuple[str, str]]: ...
def trace(algorithm: str, batches: int, width: int) -> str: ...
