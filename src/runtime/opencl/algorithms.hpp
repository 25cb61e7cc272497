// runtime/opencl/algorithms.hpp -- the OpenCL backend's device algorithms: one host function each,
// on buffers in one device's memory, queued on its queue (private to src/runtime, its tests and the
// benchmarks). Each appends the events of its kernels to `events` when given (for timing).
//
// Accumulators and outputs (the kernels' ACC and OUT, common.cl): integer sums and products in
// uint64 (wrapping), float16 in float, argmin/argmax as (value, int64 position) pairs and int64
// positions relative to the segment or window; otherwise the element type. `init` is the
// operator's identity as an accumulator, in bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "../dtype.hpp"
#include "../ops.hpp"
#include "device.hpp"

namespace multireduce::runtime::opencl {

/// Bytes of one accumulator and of one output of `op` over `type` on the device.
std::size_t accumulator_bytes(dtype type, op_kind op);
std::size_t output_bytes(dtype type, op_kind op);
/// Whether `d` runs `op` over `type`: "" when it does, else why not (float64 without cl_khr_fp64).
std::string unsupported_type(const device& d, dtype type);

/// The build options of the programs over elements of `type` with `op` in lanes `l` (common.cl's
/// macros): loops over lanes unrolled where `unroll` (every device but a CPU), integer sums and
/// products in uint64 unless `widen` is false (the section-7 benchmark adds in the type).
std::string program_options(dtype type, op_kind op, lanes l, bool unroll, bool widen = true);
/// The statistics program's (statistics.cl: float64 sums, the extremes as argmin's pairs).
std::string statistics_options(dtype type, bool unroll);

using events = std::vector<cl::Event>;

/// The segments of a piece of n elements: `segments` of `length` elements, or between `offsets`
/// (a buffer of segments + 1 int64 offsets into the piece; `longest` its longest segment).
struct segment_shape {
  std::int64_t segments = 0;
  std::int64_t length = 0;
  const cl::Buffer* offsets = nullptr;
  std::int64_t longest = 0;
};
/// One output per segment into `out` (output_bytes each).
void reduce_segments(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                     std::int64_t n, const segment_shape& shape, const cl::Buffer& out, events* ev = nullptr);

/// The parts a whole reduction of n elements is cut into (the partials it writes).
std::int64_t whole_parts(const device& d, std::int64_t n);
/// Part g's fold into partials[g] (accumulators, positions from the piece's start), g < whole_parts.
void reduce_parts(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                  std::int64_t n, const cl::Buffer& partials, events* ev = nullptr);

/// The row parts a columns job is cut into (its partials: parts x outer x inner accumulators).
std::int64_t column_parts(std::int64_t outer, std::int64_t rows, std::int64_t inner);
/// An (outer, rows, inner) array folded along its rows: partials[(p * outer + o) * inner + i] is the
/// fold of rows [rows p / parts, rows (p + 1) / parts) of column (o, i), positions the row.
void reduce_columns(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                    std::int64_t outer, std::int64_t rows, std::int64_t inner, const cl::Buffer& partials,
                    events* ev = nullptr);

/// The n - W + 1 windows of W elements into `out` (output_bytes each); W >= 1, n >= W.
void reduce_windows(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                    std::int64_t n, std::int64_t window, const cl::Buffer& out, events* ev = nullptr);

/// The statistics' states of the parts of n elements (statistics_state_bytes each, whole_parts
/// of them with statistics' tuning): sums shifted by `shift`.
std::int64_t statistics_parts(const device& d, std::int64_t n);
std::size_t statistics_state_bytes(dtype type);
void statistics(device& d, dtype type, const cl::Buffer& in, std::int64_t n, double shift, const cl::Buffer& states,
                events* ev = nullptr);

/// The k nearest rows (Hamming distance, OpenCV's order) of `queries` rows of `bytes` bytes
/// (from row query_first of `query`) among `trains` rows (from row train_first of `train`): idx
/// and dist, queries x k int32 (-1 past the training set).
void knn_hamming(device& d, const cl::Buffer& query, std::int64_t query_first, std::int64_t queries,
                 const cl::Buffer& train, std::int64_t train_first, std::int64_t trains, int bytes, int k,
                 const cl::Buffer& idx, const cl::Buffer& dist, events* ev = nullptr);

/// The multi-reduction paper's section-7 benchmark: the sums of every WIDTH consecutive elements
/// (out[i], i < n - WIDTH + 1) of an int32, float32 or float64 array, each window by its own
/// butterfly or the windows of a warp by one multi-reduction, in the form `l`.
enum class paper_kernel { butterfly, multi_reduce };
void paper_window_sums(device& d, lanes l, paper_kernel kernel, dtype type, const cl::Buffer& in, std::int64_t n,
                       const cl::Buffer& out, int group, events* ev = nullptr);

/// Seconds between the start of the first event and the end of the last (profiling).
double elapsed_seconds(const events& ev);

}  // namespace multireduce::runtime::opencl
