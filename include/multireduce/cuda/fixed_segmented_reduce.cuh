// multireduce/cuda/fixed_segmented_reduce.cuh -- many reductions at once: segments of one fixed
// length L (the rows of a row-major matrix). Segments given by offsets: segmented_reduce.cuh.
//
// out[s] = op(init, fold of in[s*L, (s+1)*L)); L = 0 gives init everywhere. The kernel is chosen
// by L (detail/fixed_segmented_reduce/kernels.cuh; the thresholds and shapes, with their
// measurements, in its tuning.cuh):
//  - L = 1, 2, 4, 8, 16 over a 16-byte-aligned pointer, "direct": each thread folds 16-byte
//    vectors straight from registers; neighbouring threads' results are neighbours;
//  - other L <= 16, "tile": a block stages whole segments in shared memory, then every thread
//    reduces whole segments there and the outputs leave coalesced;
//  - L <= 2048, "group": G = 4..32 lanes per segment (a logical warp), 16-byte vector loads when
//    aligned, then warp_reduce<G>;
//  - larger L, "block": a block per segment; when there are too few segments to fill the GPU,
//    each segment is cut into pieces, a block each, and a group pass folds each segment's pieces
//    in order.
// Non-commutative operators: lanes and threads take contiguous runs, folded in order.
// Deterministic: the partition depends only on the arguments and the device's SM count.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/fixed_segmented_reduce/kernels.cuh"
#include "detail/launch.cuh"
#include "detail/temporary_storage.cuh"

namespace multireduce::cuda {
namespace detail {

/// The host function: short L launch one kernel and need no temporary storage; long L plan the
/// pieces, keep their folds in the temporary storage and fold each segment's pieces in order.
template <class It, class Out, class Acc, class Op>
cudaError_t fixed_segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Out out,
                                   std::int64_t segments, std::int64_t length, Op op, Acc init, cudaStream_t stream) {
  using tuning = fixed_segmented_reduce_tuning;
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::fixed_segmented_reduce: op must be callable as Acc op(Acc, Acc)");
  if (segments < 0 || length < 0) return cudaErrorInvalidValue;
  constexpr int threads = tuning::block_threads;
  auto block_kernel = block_fixed_segments_kernel<threads, It, Out, Acc, Op>;
  const bool block_path = length > tuning::group_max_length;
  const int resident = block_path ? resident_grid(block_kernel, threads) : 0;
  const int pieces = block_path ? pieces_for(segments, length, resident) : 1;
  temporary_storage<1> temp{{pieces > 1 ? sizeof(Acc) * std::size_t(segments) * pieces : 0}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  if (segments == 0) return cudaSuccess;
  if (!block_path) return launch_short_fixed(in, out, segments, length, op, init, stream);
  Acc* partials = pieces > 1 ? temp.get<Acc>(0) : nullptr;
  if (const cudaError_t e = launch(block_kernel, grid_for(segments * pieces, 1, resident), threads, 0, stream, in, out,
                                   partials, segments, length, pieces, op, init);
      e != cudaSuccess || pieces == 1)
    return e;
  // Fold each segment's pieces in order (pieces <= the resident blocks <= group_max_length).
  return launch_short_fixed(static_cast<const Acc*>(partials), out, segments, std::int64_t(pieces), op, init, stream);
}

}  // namespace detail

/// Reduces fixed-length segments: out[s] = op(init, in[s*L], ..., in[s*L + L-1]) for s < segments
/// (L = 0: every out[s] = init). Rows of a row-major matrix are segments of length = columns.
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
/// @return cudaSuccess, cudaErrorInvalidValue for negative counts or too little temporary
/// storage, or a launch error.
template <class It, class Out, class Acc, class Op>
[[nodiscard]] cudaError_t fixed_segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Out out,
                                                 std::int64_t segments, std::int64_t segment_length, Op op, Acc init,
                                                 cudaStream_t stream = 0) {
  return detail::fixed_segmented_reduce(temp_storage, temp_bytes, in, out, segments, segment_length, op, init, stream);
}

}  // namespace multireduce::cuda
