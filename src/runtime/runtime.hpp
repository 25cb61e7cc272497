// runtime/runtime.hpp -- host arrays in, typed results out: the jobs that the command-line tool and
// the Python binding run, on the CPU (multireduce/cpu.hpp) or a GPU (multireduce/cuda.cuh).
//
// A job names a type-erased array (its dtype, its memory, host or a CUDA device), an operator from
// the one table (ops.hpp) and a shape (the whole array, one axis of an N-d array, fixed-length
// segments, offsets, sliding windows); results have NumPy's dtypes and, on the CPU, NumPy's values:
// float sums are NumPy's pairwise sums, bit for bit, and an axis that is not the last one is summed
// one row after another, as NumPy does. Each call picks its backend and device itself (no state is
// kept between calls and none is shared between threads): `automatic` runs on the GPU when it
// supports the job, else on the CPU and says why. Inputs are never modified.
//
// Arrays too large for memory are read as an array_source, front to back in pieces (a memory-mapped
// file, a pipe), and outputs go to an output_sink as they are produced: a job then holds one piece
// (and one segment, window or row) at a time, on the CPU and through the GPU alike.
//
// Arrays in GPU memory with their outputs in GPU memory (the Python binding's device arrays) are
// queued on exec.stream, temporary storage from the stream-ordered allocator, and the call returns
// without waiting for them (report.seconds is then 0): nothing synchronises the device, except
// the check of offsets in GPU memory, whose verdict (one integer) is read back.
//
// Errors: std::invalid_argument for arguments that cannot be right (negative sizes, W = 0,
// decreasing offsets, ...), dtype_error for element types an operator does not take,
// unsupported_error when the backend asked for cannot run the job, device_memory_error when the
// GPU is out of memory with no way to stream, device_error for any other CUDA failure; whatever a
// source or a sink throws goes through to the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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
/// shape the GPU does not take); what() says why, `backend` names the backend ("cuda", "cpu").
struct unsupported_error : std::runtime_error {
  unsupported_error(std::string_view backend_name, const std::string& why)
      : std::runtime_error(why), backend(backend_name) {}
  std::string backend;
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

/// Where an array's memory is.
enum class memory { host, cuda };

/// A flat, C-order array that a job reads: `count` elements of `type` at `data`.
struct array_view {
  dtype type = dtype::float32;
  const void* data = nullptr;
  std::int64_t count = 0;
  memory where = memory::host;
  int device = 0;  ///< the CUDA device of `data` when where == memory::cuda
};

/// A flat array that a job writes (allocated by the caller, `count` elements of `type`).
struct output_view {
  dtype type = dtype::float32;
  void* data = nullptr;
  std::int64_t count = 0;
  memory where = memory::host;
  int device = 0;
};

/// What a job reduces: the whole array (any number of dimensions, taken flat in C order); one axis
/// of an array seen as (outer, length, inner) in C order; consecutive segments of one length;
/// segments between offsets; every window of W consecutive elements.
enum class shape_kind { whole, axis, fixed_segments, offsets, window };

/// One reduction of an array (flat, C order).
struct reduce_job {
  array_view input;
  op_kind op = op_kind::sum;
  shape_kind shape = shape_kind::whole;
  std::int64_t length = 0;    ///< axis: the axis' length; fixed_segments: the segment length L; window: W >= 1
  std::int64_t segments = 0;  ///< axis: the product of the axes before it; fixed_segments, offsets: the outputs
  std::int64_t inner = 1;     ///< axis: the product of the axes after it
  const std::int64_t* offsets = nullptr;  ///< offsets: segments + 1 offsets; segment s is [o[s], o[s+1])
  memory offsets_where = memory::host;    ///< memory::cuda: on the input's GPU (device-memory jobs only)
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
/// The k nearest training descriptors of every query, everything in the memory of one GPU:
/// idx and dist are queries x k int32 (-1 past the training set).
struct knn_device_job : knn_sets {
  std::int32_t* idx = nullptr;
  std::int32_t* dist = nullptr;
};
struct knn_result {
  std::vector<std::int32_t> idx, dist;     ///< queries x k; -1 past the training set
  std::vector<std::int32_t> reverse_nearest;  ///< trains, when the job asked for it
  std::int64_t streamed_chunk = 0;         ///< > 0: the training set went through the GPU this many rows at a time
  std::int64_t device_bytes = 0;           ///< GPU memory the search allocated
};

// ---- backends and calls -------------------------------------------------------------------------

enum class backend { automatic, cpu, cuda };
constexpr std::string_view to_string(backend b) {
  return b == backend::cpu ? "cpu" : b == backend::cuda ? "cuda" : "auto";
}
/// "auto", "cpu" or "cuda"; nullopt otherwise.
std::optional<backend> parse_backend(std::string_view name);

/// Where a call runs.
struct execution {
  backend requested = backend::automatic;
  int device = 0;          ///< CUDA device ordinal
  void* stream = nullptr;  ///< cudaStream_t for the GPU's work (nullptr: the default stream)
  /// Called between pieces with the work done so far and the whole (input elements; for the
  /// matcher, query x training comparisons), on the calling thread; may be empty.
  std::function<void(std::int64_t done, std::int64_t total)> progress;
};

/// How a call ran.
struct report {
  backend used = backend::cpu;
  std::string not_cuda;      ///< why the CPU ran although the GPU was not ruled out ("" otherwise)
  int device = -1;           ///< the GPU's ordinal, when it ran
  std::string device_name;   ///< the GPU's name, when it ran
  int cpu_threads = 0;       ///< the CPU's threads, when it ran
  double seconds = 0;        ///< the algorithm's time: device time by CUDA events, or CPU wall time
  double transfer_seconds = 0;  ///< host <-> GPU copies
  std::int64_t bytes_read = 0;     ///< input bytes the algorithm read (offsets included)
  std::int64_t bytes_written = 0;  ///< output bytes it wrote
};

/// CUDA devices this process sees: 0 without CUDA in this build or without a usable GPU.
int cuda_device_count();
/// "" when the GPU `device` can run the job; otherwise why not, in words.
std::string cuda_unsupported_reason(const reduce_job& job, int device);
std::string cuda_unsupported_reason_for_statistics(dtype type, int device);
std::string cuda_unsupported_reason_for_knn(int bytes, int device);

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
/// The same search with everything on the GPU exec.device (queued on exec.stream, not waited for).
report knn(const knn_device_job& job, const execution& exec = {});

}  // namespace multireduce::runtime
