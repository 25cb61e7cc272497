// runtime/runtime.hpp -- host arrays in, typed results out: the jobs that the command-line tool and
// the Python binding run, on a backend of the table (backend.hpp): the CPU (multireduce/cpu.hpp)
// or a GPU (multireduce/cuda.cuh).
//
// A job names a type-erased array (its dtype, its memory, host or a CUDA device), an operator from
// the one table (ops.hpp) and a shape (the whole array, one axis of an N-d array, fixed-length
// segments, offsets, sliding windows); results have NumPy's dtypes and, on the CPU, NumPy's values:
// float sums are NumPy's pairwise sums, bit for bit, and an axis that is not the last one is summed
// one row after another, as NumPy does. Each call picks its backend and device itself (no state is
// kept between calls and none is shared between threads): "auto" runs on the first backend of the
// table that supports the job (the GPU before the CPU) and says why it passed the others over.
// Inputs are never modified.
//
// Arrays too large for memory are read as an array_source, front to back in pieces (a memory-mapped
// file, a pipe), and outputs go to an output_sink as they are produced: a job then holds one piece
// (and one segment, window or row) at a time, on the CPU and through the GPU alike.
//
// Arrays in a device's memory with their outputs there too (the Python binding's device arrays) are
// queued on exec.stream and the call returns without waiting for them (report.seconds is then 0):
// nothing synchronises the device, except the check of offsets in GPU memory, whose verdict (one
// integer) is read back. Such calls can be captured into a CUDA graph (docs/device.md, "CUDA
// graphs"): under capture every temporary is a stream-ordered allocation of the graph and nothing
// is read back (checked offsets are refused with the reason).
//
// Errors: std::invalid_argument for arguments that cannot be right (negative sizes, W = 0,
// decreasing offsets, ...), dtype_error for element types an operator does not take,
// unsupported_error when the backend asked for cannot run the job, device_memory_error when the
// GPU is out of memory with no way to stream, device_error for any other CUDA failure; whatever a
// source or a sink throws goes through to the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <multireduce/match/collection.hpp>
#include <multireduce/statistics.hpp>

#include "dtype.hpp"
#include "ops.hpp"

namespace multireduce::runtime {

// ---- errors ---------------------------------------------------------------------------------------

/// An element type the operation does not take (a bitwise operator on floats, ...).
struct dtype_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// The backend asked for cannot run this job (no CUDA in this build, no such device, a dtype or
/// shape the GPU does not take); what() says why, `backend` names the backend ("cuda", "cpu"),
/// `dtype` says that the element type is why (the Python package raises TypeError for it).
struct unsupported_error : std::runtime_error {
  unsupported_error(std::string_view backend_name, const std::string& why, bool dtype_is_why = false)
      : std::runtime_error(why), backend(backend_name), dtype(dtype_is_why) {}
  std::string backend;
  bool dtype = false;
};
/// A CUDA call failed; `status` is its cudaError_t as an int.
struct device_error : std::runtime_error {
  device_error(int status, const std::string& what) : std::runtime_error(what), status(status) {}
  int status;
};
/// The GPU has too little free memory for the job, and it cannot be streamed.
struct device_memory_error : device_error {
  using device_error::device_error;
};

// ---- arrays and jobs --------------------------------------------------------------------------------

/// Where an array's memory is: host memory, or the memory of a backend's devices, named by the
/// backend that reads it in place (memory::of("cuda")). A backend names its memory in the table
/// (backend::device_memory), so a new kind of device memory needs no edit here.
class memory {
 public:
  constexpr memory() = default;  ///< host memory
  static constexpr memory host() { return {}; }
  static constexpr memory of(std::string_view backend_name) {
    memory m;
    m.backend_ = backend_name;
    return m;
  }
  constexpr bool is_host() const { return backend_.empty(); }
  /// The backend whose devices hold it ("" for host memory).
  constexpr std::string_view backend() const { return backend_; }
  /// "host memory" or "cuda memory".
  std::string describe() const { return is_host() ? "host memory" : std::string(backend_) + " memory"; }
  friend constexpr bool operator==(memory, memory) = default;

 private:
  std::string_view backend_;
};

/// A flat, C-order array that a job reads: `count` elements of `type` at `data`.
struct array_view {
  dtype type = dtype::float32;
  const void* data = nullptr;
  std::int64_t count = 0;
  memory where = memory::host();
  int device = 0;  ///< the device of `data` (an ordinal of where.backend()) when it is not host memory
};
// In OpenCL memory (memory::of("opencl"), PyOpenCL's arrays) `data` is a cl_mem whose first byte is
// element 0 (a view at an offset is a sub-buffer or a copy made by the caller), `device` the ordinal
// of its queue's device (device_of_stream), and execution::stream the cl_command_queue of the
// buffer's context that the call's commands go on, in order.

/// A flat array that a job writes (allocated by the caller, `count` elements of `type`).
struct output_view {
  dtype type = dtype::float32;
  void* data = nullptr;
  std::int64_t count = 0;
  memory where = memory::host();
  int device = 0;
};

/// What a job reduces: the whole array (any number of dimensions, taken flat in C order); one axis
/// of an array seen as (outer, length, inner) in C order; consecutive segments of one length;
/// segments between offsets; every window of W consecutive elements.
enum class shape_kind { whole, axis, fixed_segments, offsets, window };
inline constexpr shape_kind all_shape_kinds[] = {shape_kind::whole, shape_kind::axis, shape_kind::fixed_segments,
                                                 shape_kind::offsets, shape_kind::window};
constexpr std::string_view to_string(shape_kind s) {
  switch (s) {
    case shape_kind::whole: return "whole";
    case shape_kind::axis: return "axis";
    case shape_kind::fixed_segments: return "fixed_segments";
    case shape_kind::offsets: return "offsets";
    case shape_kind::window: return "window";
  }
  return "?";
}
/// The shape named `name` (as to_string names it); nullopt otherwise.
constexpr std::optional<shape_kind> parse_shape(std::string_view name) {
  for (shape_kind s : all_shape_kinds)
    if (to_string(s) == name) return s;
  return std::nullopt;
}

/// One reduction of an array (flat, C order).
struct reduce_job {
  array_view input;
  op_kind op = op_kind::sum;
  shape_kind shape = shape_kind::whole;
  std::int64_t length = 0;    ///< axis: the axis' length; fixed_segments: the segment length L; window: W >= 1
  std::int64_t segments = 0;  ///< axis: the product of the axes before it; fixed_segments, offsets: the outputs
  std::int64_t inner = 1;     ///< axis: the product of the axes after it
  const std::int64_t* offsets = nullptr;  ///< offsets: segments + 1 offsets; segment s is [o[s], o[s+1])
  memory offsets_where = memory::host();  ///< or the input's device memory (device-memory jobs only)
  /// The output was made for this call, so a call that throws may leave garbage in it: offsets in
  /// GPU memory are then checked as the reduction reads them, not by a kernel and a wait before.
  bool output_is_new = false;
  /// false: the caller vouches for offsets in GPU memory (PyTorch's segment_reduce(unsafe=True)):
  /// they are not read back, so the call does not wait for the GPU. Where the reduction reads them
  /// through the staged kernel (many short segments) it clamps each into the input, so bad offsets
  /// give unspecified values in the output and never a read outside the input; on the other paths
  /// the offsets are checked anyway. Offsets on the host are always checked (on the host).
  bool check_offsets = true;
};

/// The job that reduces axis `axis` (negative: counted from the end, as in NumPy) of the C-order
/// array `input` of shape `shape` with `op`; its outputs are the array without that axis, in C
/// order. Throws std::invalid_argument naming the axis and the dimensions when there is no such
/// axis or the shape does not hold input.count elements.
reduce_job axis_job(const array_view& input, op_kind op, std::span<const std::int64_t> shape, std::int64_t axis);

/// The number of outputs of a job: 1, outer x inner, the segments, or max(0, n - W + 1) windows.
std::int64_t output_count(const reduce_job& job);
/// Their dtype: result_dtype(job.op, job.input.type). argmin/argmax give positions within the
/// segment or window (-1 for an empty one).
dtype output_dtype(const reduce_job& job);
/// Throws std::invalid_argument (dtype_error for dtypes) naming what is wrong with the job.
void validate(const reduce_job& job);

// ---- arrays read piece by piece, outputs written as produced ------------------------------------

/// A host array that a job reads front to back in pieces: a memory-mapped file, a pipe.
class array_source {
 public:
  array_source(dtype type, std::int64_t count) : type_(type), count_(count) {}
  virtual ~array_source() = default;
  array_source(const array_source&) = delete;
  array_source& operator=(const array_source&) = delete;

  dtype type() const { return type_; }
  std::int64_t count() const { return count_; }
  /// Elements per piece this source serves best (jobs read at most this many at a time unless one
  /// segment, window or row needs more).
  virtual std::int64_t piece_elements() const = 0;
  /// Elements [first, first + n) in native byte order, valid until the next call. Calls never go
  /// back: `first` is at least the previous call's `first`, and what lies before it is not asked for
  /// again (a source may release it).
  virtual const void* read(std::int64_t first, std::int64_t n) = 0;
  /// A source of its own for elements [first, first + n), read on another thread at the same time
  /// as this one and the other parts (jobs on several devices read their parts in parallel); nullptr
  /// when the source is read front to back only (a pipe). Throws what opening it throws.
  virtual std::unique_ptr<array_source> open_part(std::int64_t first, std::int64_t n) const {
    (void)first, (void)n;
    return nullptr;
  }

 private:
  dtype type_;
  std::int64_t count_;
};

/// The array_source of an array already in host memory: one piece, the whole array.
class memory_source final : public array_source {
 public:
  explicit memory_source(const array_view& a);
  std::int64_t piece_elements() const override;
  const void* read(std::int64_t first, std::int64_t n) override;
  std::unique_ptr<array_source> open_part(std::int64_t first, std::int64_t n) const override;

 private:
  const std::byte* data_;
};

/// Where a job's outputs go, in order, as they are produced (host memory).
class output_sink {
 public:
  virtual ~output_sink() = default;
  /// The next `n` outputs, of the job's output dtype.
  virtual void write(const void* values, std::int64_t n) = 0;
};

/// Statistics of an array of any dtype: float16 is widened to float32.
using any_statistics =
    std::variant<statistics<std::int8_t>, statistics<std::int16_t>, statistics<std::int32_t>, statistics<std::int64_t>,
                 statistics<std::uint8_t>, statistics<std::uint16_t>, statistics<std::uint32_t>,
                 statistics<std::uint64_t>, statistics<float>, statistics<double>>;

/// The descriptor sets of a k-NN search: `queries` and `trains` rows of `bytes` bytes, k neighbours.
struct knn_sets {
  const std::uint8_t* query = nullptr;
  std::int64_t queries = 0;
  const std::uint8_t* train = nullptr;
  std::int64_t trains = 0;
  int bytes = 0;
  int k = 2;
};
/// The k nearest training descriptors of every query (and, when `reverse`, every training
/// descriptor's nearest query: the cross-check's other direction). Host rows.
struct knn_job : knn_sets {
  bool reverse = false;
  std::int64_t train_chunk = 0;  ///< > 0: stream the training set through the GPU this many rows at a time
};
/// The k nearest training descriptors of every query, everything in the memory of one device:
/// idx and dist are queries x k int32 (-1 past the training set).
struct knn_device_job : knn_sets {
  memory where = memory::host();  ///< the device memory that holds every array (memory::of("cuda"), ...)
  std::int32_t* idx = nullptr;
  std::int32_t* dist = nullptr;
};
struct knn_result {
  std::vector<std::int32_t> idx, dist;     ///< queries x k; -1 past the training set
  std::vector<std::int32_t> reverse_nearest;  ///< trains, when the job asked for it
  std::int64_t streamed_chunk = 0;         ///< > 0: the training set went through the GPU this many rows at a time
  std::int64_t device_bytes = 0;           ///< GPU memory the search allocated
};

/// A collection of images matched pair by pair (the collection matcher, match/collection.hpp):
/// every pair as the matcher's search and rules would match it. The rows are in host memory, or
/// all in `where` (a backend's device memory).
struct collection_job {
  descriptor_collection collection;
  std::span<const image_pair> pairs;
  int k = 2;
  match_rule rule;
  memory where = memory::host();
  /// GPU: device bytes to use (0: most of the free memory); less than the collection forces the
  /// image blocks. The CPU takes no budget.
  std::size_t memory_budget = 0;
};

// ---- backends and calls -------------------------------------------------------------------------

/// The devices of one backend that a call runs on (ordinals; the first is the one a single-device
/// job uses). A set of several splits the jobs that split: the whole-array reduce and statistics of
/// a host source that can be read in parts (a memory-mapped file, host memory), the k-NN search of
/// host rows (the training set sharded) and the collection matcher (pairs handed out to the GPUs as
/// they finish: work stealing); one host thread and one stream per entry, an entry may repeat (two
/// workers on one GPU). Results do not depend on the set, except float sums of a split reduce, which
/// add the parts' sums in order (statistics merge the parts' states in order, as pieces do). Other
/// jobs refuse a set of several with the reason; an empty set is refused.
struct device_set {
  std::vector<int> ordinals{0};
  int first() const { return ordinals.empty() ? 0 : ordinals.front(); }
  bool single() const { return ordinals.size() == 1; }
  std::size_t size() const { return ordinals.size(); }
};

/// Where a call runs.
struct execution {
  /// A backend of the table by name (backend_names() lists them), or "auto": the first backend of
  /// the table that runs the job on the data where it lives (see backend.hpp).
  std::string_view backend = "auto";
  device_set devices;      ///< the backend's devices
  void* stream = nullptr;  ///< the backend's queue (cudaStream_t, nullptr: the default stream; cl_command_queue)
  /// Called between pieces with the work done so far and the whole (input elements; for the
  /// matcher, query x training comparisons), on the calling thread; may be empty.
  std::function<void(std::int64_t done, std::int64_t total)> progress;
};

/// How a call ran.
struct report {
  std::string backend;       ///< the backend that ran it ("cpu", "cuda", ...)
  /// "auto": why the backends ahead of it in the table did not run it, in words ("not the GPU: float16
  /// runs on the CPU backend only"; "" when none was passed over).
  std::string passed_over;
  int device = -1;           ///< the device's ordinal, when a device ran it (the set's first for several)
  std::vector<int> devices;  ///< every device that ran it, when a set of several did
  std::string device_name;   ///< the device's name, when a device ran it
  int cpu_threads = 0;       ///< the CPU's threads, when the CPU ran it
  double seconds = 0;        ///< the algorithm's time: device time by events, or CPU wall time
  double transfer_seconds = 0;  ///< host <-> device copies
  std::int64_t bytes_read = 0;     ///< input bytes the algorithm read (offsets included)
  std::int64_t bytes_written = 0;  ///< output bytes it wrote
};

/// The names a call takes as execution::backend: "auto", then the table's backends in order.
std::vector<std::string> backend_names();
/// The same, joined: "auto, cuda, cpu, opencl".
std::string backend_list(std::string_view separator = ", ");
/// Throws std::invalid_argument naming the registered backends unless `name` is one of backend_names().
void check_backend_name(std::string_view name);
/// Devices the backend `name` sees (0 for one without devices or not built in).
int device_count(std::string_view backend_name);
/// "" when the backend `name` can run the job on `devices`; otherwise why not, in words.
std::string unsupported_reason(std::string_view backend_name, const reduce_job& job, const device_set& devices = {});
std::string unsupported_reason_for_statistics(std::string_view backend_name, dtype type, const device_set& devices = {});
std::string unsupported_reason_for_knn(std::string_view backend_name, int bytes, const device_set& devices = {});

/// The ordinal of the device of backend `name` that runs `stream` (an OpenCL queue: its device among
/// the backend's); -1 where the backend's streams name no device. Throws std::invalid_argument for
/// an unknown name or an invalid queue, unsupported_error for a device the backend does not list.
int device_of_stream(std::string_view backend_name, void* stream);
/// What ran a call, in words, as its backend describes the device: "device 0, NVIDIA H200", "2 CPU threads".
std::string describe_device(const report& r);
/// CUDA devices this process sees: device_count("cuda").
int cuda_device_count();

/// Runs a reduction into `out` (output_count(job) elements of output_dtype(job)).
report reduce(const reduce_job& job, const output_view& out, const execution& exec = {});
/// Runs a reduction of `in`, piece by piece, writing the outputs to `out` as they are produced.
/// job.input names the dtype and the count, which must be the source's; its data is not read.
report reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec = {});
/// All statistics of an array in one pass.
report statistics(const array_view& in, any_statistics& out, const execution& exec = {});
report statistics(array_source& in, any_statistics& out, const execution& exec = {});
/// The statistics of `in` as a multireduce::statistics<T> (T: in.type, float16 read as float)
/// written to `out`, statistics_bytes(in.type) bytes (dtype uint8) in host or GPU memory.
report statistics(const array_view& in, const output_view& out, const execution& exec = {});
/// sizeof(multireduce::statistics<T>) for the statistics of an array of `type`.
std::size_t statistics_bytes(dtype type);
/// The k nearest neighbours by Hamming distance (the matcher's search; its rules are applied by
/// multireduce::accept_matches).
report knn(const knn_job& job, knn_result& out, const execution& exec = {});
/// The same search with everything in the memory of one device (queued on exec.stream, not waited for).
report knn(const knn_device_job& job, const execution& exec = {});
/// Matches every pair of a collection, handing each pair's matches to `done` (on this thread) as
/// they are ready; exec.progress, if set, hears the comparisons done after each pair.
report match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec = {});

}  // namespace multireduce::runtime
