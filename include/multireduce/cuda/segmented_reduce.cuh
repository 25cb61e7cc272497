// multireduce/cuda/segmented_reduce.cuh -- many reductions at once: segments of one array given
// by offsets (CUB's DeviceSegmentedReduce). Fixed-length segments: fixed_segmented_reduce.cuh.
//
// out[s] = op(init, fold of in[begin_offsets[s], end_offsets[s])); an empty segment gives init.
// A one-thread kernel zeroes the long-segment queue (unless the caller keeps its header zero: a
// workspace does, and every call leaves it so); every kernel after it overlaps the tail of the
// one before (sm_90):
//  - one offsets array (end_offsets == begin_offsets + 1, CSR) over a pointer with a short mean
//    length, sm_90: the staged kernel folds tiles of consecutive segments from shared memory
//    (bulk copies) and queues the long segments it meets; then the long-segment kernel;
//  - otherwise: a thread per segment queues the long ones; the long-segment kernel folds them;
//    groups of G lanes fold the short ones in the SMs the long-segment kernel leaves free.
// Queued segments are cut into pieces; each block of the long-segment kernel folds a contiguous
// run of pieces (load balance for skewed lengths), and the block that completes a segment's
// pieces folds them in order. Kernels: detail/segmented_reduce/; shapes and thresholds with their
// measurements: detail/segmented_reduce/tuning.cuh.
// Non-commutative operators: lanes and threads take contiguous runs, folded in order.
// Deterministic: every piece's fold and every segment's final fold depend only on the arguments
// and the device's SM count, not on which block folded what.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/launch.cuh"
#include "detail/segmented_reduce/kernels.cuh"
#include "detail/temporary_storage.cuh"

namespace multireduce::cuda {
namespace detail {

/// Whether a call takes the staged kernel (one offsets array over pointers with a short mean
/// length, sm_90): the one path that can check offsets as it reads them (see below).
template <class It, class OffIt>
bool segmented_reduce_is_staged(It in, std::int64_t n, std::int64_t segments, OffIt begin_offsets,
                                OffIt end_offsets) {
  return segments > 0 && n / segments <= segmented_reduce_tuning::staged_mean_max &&
         staged_offsets_apply(in, begin_offsets, end_offsets);
}

/// The host function: size the queue for the call, carve the temporary storage (the queue header,
/// a ticket per queued segment, the queue, the pieces' folds), then launch the kernels in order.
/// bad_offset non-null (only where segmented_reduce_is_staged): the offsets are unchecked; the
/// staged kernel marks there the first bad one and reads only inside the input whatever they say
/// (*bad_offset must be ~0 before; it stays so when they are good).
/// kept_zero_queue non-null: a queue header that is zero, used instead of the one in temporary
/// storage; the call leaves it zero, so no zeroing kernel runs (the first kernel is then an
/// ordinary launch, which waits for everything before it in the stream).
template <class It, class Out, class OffIt, class Acc, class Op>
cudaError_t segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, Out out,
                             std::int64_t segments, OffIt begin_offsets, OffIt end_offsets, Op op, Acc init,
                             cudaStream_t stream, unsigned long long* bad_offset = nullptr,
                             long_queue* kept_zero_queue = nullptr) {
  using tuning = segmented_reduce_tuning;
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::segmented_reduce: op must be callable as Acc op(Acc, Acc)");
  if (segments < 0 || n < 0) return cudaErrorInvalidValue;
  // Disjoint segments have at most n / long_segment_min long ones and 2n / piece pieces; beyond
  // that (only possible with overlapping segments) a segment is reduced by its group directly.
  std::int64_t most_long = n / tuning::long_segment_min + 64;
  if (most_long > segments) most_long = segments;
  if (most_long > queue_slots_max) most_long = queue_slots_max;
  std::int64_t most_pieces = n / tuning::long_segment_piece + most_long + 64;
  if (most_pieces > queue_pieces_max) most_pieces = queue_pieces_max;
  temporary_storage<4> temp{{sizeof(long_queue), sizeof(unsigned) * std::size_t(most_long + 1),
                             sizeof(long_segment) * std::size_t(most_long + 1),
                             sizeof(Acc) * std::size_t(most_pieces + 1)}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  if (segments == 0) return cudaSuccess;
  // Without a read before each reservation, the header's fields could wrap only if every segment
  // were long and their pieces added up to 2^40 (see try_queue).
  const bool check_room = segments >= (std::int64_t(1) << 24) ||
                          double(segments) * double(n / tuning::long_segment_piece + 1) >= double(std::int64_t(1) << 40);
  const queue_ref q{kept_zero_queue != nullptr ? kept_zero_queue : temp.get<long_queue>(0), temp.get<long_segment>(2),
                    temp.get<unsigned>(1), most_long, most_pieces, check_room};
  Acc* pieces = temp.get<Acc>(3);
  const bool after_zeroing = kept_zero_queue == nullptr;  // the first kernel overlaps the zeroing kernel's launch
  if (after_zeroing)
    if (const cudaError_t e = launch(zero_queue_kernel, 1, 1, 0, stream, q.queue); e != cudaSuccess) return e;
  auto long_kernel = long_segments_kernel<tuning::long_segment_threads, It, Out, Acc, Op>;
  auto fold_long = [&] {
    // One wave of resident blocks: a grid of 8 per SM with only 5 resident (48 registers) left the
    // last 40% of blocks to start after the first ones had done all their pieces (H200).
    return launch_overlapped(long_kernel, resident_grid(long_kernel, tuning::long_segment_threads),
                             tuning::long_segment_threads, 0, stream, in, out, op, init, q, pieces);
  };
  const std::int64_t mean = n / segments;
  if (cudaError_t e; mean <= tuning::staged_mean_max &&
                     launch_staged_offsets(in, n, out, segments, begin_offsets, end_offsets, op, init, q, stream,
                                           bad_offset, after_zeroing, e)) {
    if (e != cudaSuccess) return e;
    return fold_long();
  }
  if (bad_offset != nullptr) return cudaErrorInvalidValue;  // unchecked offsets: the staged kernel only
  auto queue_kernel = queue_long_segments_kernel<It, Out, OffIt, Acc, Op>;
  constexpr int queue_threads = tuning::queue_threads;
  if (const cudaError_t e = launch_overlapped_if(after_zeroing, queue_kernel,
                                                 grid_for(segments, queue_threads, resident_grid(queue_kernel, queue_threads)),
                                                 queue_threads, 0, stream, in, out, segments, begin_offsets, end_offsets,
                                                 op, init, q);
      e != cudaSuccess)
    return e;
  if (const cudaError_t e = fold_long(); e != cudaSuccess) return e;
  constexpr std::int64_t short_max = tuning::long_segment_min;
  auto fold_short = [&](auto lanes) {
    return launch_group_segments<decltype(lanes)::value, short_max>(in, out, segments, begin_offsets, end_offsets, op,
                                                                   init, stream);
  };
  switch (tuning::group_lanes_for_mean(mean)) {
    case 1: return fold_short(std::integral_constant<int, 1>{});
    case 4: return fold_short(std::integral_constant<int, 4>{});
    case 8: return fold_short(std::integral_constant<int, 8>{});
    case 16: return fold_short(std::integral_constant<int, 16>{});
    default: return fold_short(std::integral_constant<int, 2>{});
  }
}

}  // namespace detail

/// Reduces segments [begin_offsets[s], end_offsets[s]) of in[0, n) (CUB's convention; empty
/// segments give init). Offsets are int32 or int64, on the device, valid (0 <= begin <= end <= n);
/// the caller checks untrusted offsets (the CLI does). Long segments are spread over all blocks.
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
/// @return cudaSuccess, cudaErrorInvalidValue for negative counts or too little temporary
/// storage, or a launch error.
template <class It, class Out, class OffIt, class Acc, class Op>
[[nodiscard]] cudaError_t segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n,
                                           Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets,
                                           Op op, Acc init, cudaStream_t stream = 0) {
  return detail::segmented_reduce(temp_storage, temp_bytes, in, n, out, segments, begin_offsets, end_offsets, op, init,
                                  stream);
}

}  // namespace multireduce::cuda
