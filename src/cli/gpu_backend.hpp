// gpu_backend.hpp -- what `multireduce reduce|stats` asks of the GPU (src/cli/gpu_backend.cu; a
// build without CUDA links gpu_backend_none.cpp, which says so). Host arrays in, host arrays out:
// the backend uploads, runs multireduce::cuda, downloads, and streams inputs larger than the GPU's
// free memory through it in chunks where the algorithm allows (whole-array reduce and stats).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <multireduce/statistics.hpp>

#include "npy/npy.hpp"

namespace multireduce::cli {

enum class op_kind { sum, prod, min, max, bit_and, bit_or, bit_xor, argmin, argmax };
enum class shape_kind { whole, fixed_segments, offsets, window };

/// One reduction of a C-order host array (native byte order).
struct reduce_job {
  npy::dtype type = npy::dtype::float32;
  const void* data = nullptr;
  std::int64_t n = 0;
  op_kind op = op_kind::sum;
  shape_kind shape = shape_kind::whole;
  std::int64_t length = 0;                 ///< fixed_segments: segment length; window: W (>= 1)
  std::int64_t segments = 0;               ///< fixed_segments / offsets: number of outputs
  const std::int64_t* offsets = nullptr;   ///< offsets: segments + 1 validated offsets
};

/// Results in NumPy's dtype: sum/prod of signed integers -> int64, unsigned -> uint64, floats keep
/// their type; min/max/bitwise keep the input type; argmin/argmax -> int64, the index within the
/// segment or window (the first extreme; a NaN wins). Empty segment: the identity (argmin/argmax: -1).
struct reduce_output {
  npy::dtype type = npy::dtype::int64;
  std::vector<std::byte> data;  ///< count elements of `type`
  std::int64_t count = 0;
};

struct gpu_timing {
  double seconds = 0;        ///< device time of the algorithm (CUDA events), transfers excluded
  double transfer_seconds = 0;
  std::int64_t bytes = 0;    ///< bytes the algorithm read and wrote on the device
  std::string device_name;
};

/// "" when the GPU backend can run this job; otherwise why not (no CUDA in this build, no device,
/// device N missing, or this dtype/operator/shape combination is CPU-only).
std::string gpu_unsupported_reason(const reduce_job& job, int device);
std::string gpu_unsupported_reason_for_stats(npy::dtype type, int device);

/// Runs the job on GPU `device`. Throws std::runtime_error with a clear message (out of memory etc.).
reduce_output gpu_reduce(const reduce_job& job, int device, gpu_timing* timing);

/// All statistics of n elements of T on GPU `device` (T: any npy dtype's C++ type except float16).
template <class T>
statistics<T> gpu_statistics(const T* data, std::int64_t n, int device, gpu_timing* timing);

/// Calls X(T) for every element type the statistics functions are built for (all npy dtypes but
/// float16): one list for the explicit instantiations of both backends.
#define MULTIREDUCE_CLI_STATISTICS_TYPES(X)                                                          \
  X(std::int8_t) X(std::int16_t) X(std::int32_t) X(std::int64_t) X(std::uint8_t) X(std::uint16_t) \
  X(std::uint32_t) X(std::uint64_t) X(float) X(double)

/// What `multireduce match` gets from the GPU: the k nearest of every query (queries x k, -1 past
/// the training set) and, when asked, every training descriptor's nearest query (the cross-check).
struct knn_output {
  std::vector<std::int32_t> idx, dist, reverse_nearest;
  double seconds = 0;             ///< device time of the searches (CUDA events), transfers excluded unless streamed
  std::int64_t device_bytes = 0;  ///< GPU memory the searches allocated (inputs, outputs, temporary)
  std::int64_t streamed_chunk = 0;  ///< > 0: the training set went through the GPU this many rows at a time
  std::string device_name;
};

/// "" when GPU `device` can match `bytes`-wide descriptors; otherwise why not.
std::string gpu_match_unsupported_reason(int bytes, int device);

/// Brute-force Hamming k-NN of host descriptor rows on GPU `device` (multireduce::cuda::knn_hamming).
/// A training set that does not fit in the free GPU memory, or any with train_chunk > 0, is
/// streamed through the GPU train_chunk rows at a time (0: chunks sized by the free memory).
knn_output gpu_knn(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                   int bytes, int k, bool reverse, int device, std::int64_t train_chunk = 0);

}  // namespace multireduce::cli
