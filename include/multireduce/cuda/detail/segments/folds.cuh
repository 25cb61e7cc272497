// multireduce/cuda/detail/segments/folds.cuh -- what both segmented reductions (offsets and
// fixed lengths) fold segments with: a logical warp of G lanes, a warp or a whole block per
// segment, and the group kernel (G lanes per segment, 32/G segments per warp at a time).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "../../../block/block_reduce.hpp"
#include "../../../cuda_lane.cuh"
#include "../../../operators.hpp"
#include "../../../warp/warp_reduce.hpp"
#include "../launch.cuh"
#include "../load.cuh"
#include "../partial.cuh"
#include "../ptx.cuh"

namespace multireduce::cuda::detail {

/// The group kernel's shape (shared by both segmented reductions):
///  - block_threads = 256: blocks of 64 or 128 for the short segments among long ones (so that one
///    fits beside the long-segment kernel's blocks sooner) ran at 80.5 us against 79.9 (H200,
///    2026-11-21, offsets with power-law lengths).
///  - max_blocks_per_sm = 128: a cap on the grid, not a tuned value, so that any call of up to
///    about 10^6 segments (G = 4, 132 SMs) is one pass of the grid-stride loop.
struct segment_group_tuning {
  static constexpr int block_threads = 256, max_blocks_per_sm = 128;
};

/// ShortMax of the group kernel that takes every segment.
inline constexpr std::int64_t every_length = std::numeric_limits<std::int64_t>::max();

/// The fold of in[begin, end) by one logical warp of G lanes; the result is valid in logical lane 0.
template <int G, class It, class Acc, class Op>
__device__ __forceinline__ typename partial<Acc, Op>::type group_fold(cuda_lane& lane, It in, std::int64_t begin,
                                                                      std::int64_t end, const Op& op) {
  using P = partial<Acc, Op>;
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  const partial_op<Acc, Op> pop{op};
  const int g = lane.id() & (G - 1);
  typename P::type acc = P::empty();
  if constexpr (is_commutative_v<Op>) {
    std::int64_t i = begin;
    if constexpr (std::is_pointer_v<It> && vector_elements<T> > 1) {
      constexpr int V = vector_elements<T>;
      const std::int64_t head = elements_to_alignment(in + begin, end - begin);
      if (head >= 0) {
        if constexpr (G >= V) {  // head < V
          if (g < head) acc = pop(acc, P::of(static_cast<Acc>(in[begin + g])));
        } else {
          for (std::int64_t k = g; k < head; k += G) acc = pop(acc, P::of(static_cast<Acc>(in[begin + k])));
        }
        const std::int64_t vectors = (end - begin - head) / V;
        const auto* body = reinterpret_cast<const vector16<T>*>(in + begin + head);
        std::int64_t k = g;
        for (; k + G < vectors; k += 2 * G) {
          const vector16<T> a = load_vector(body + k), b = load_vector(body + k + G);
#pragma unroll
          for (int j = 0; j < V; ++j) acc = pop(acc, P::of(static_cast<Acc>(a.v[j])));
#pragma unroll
          for (int j = 0; j < V; ++j) acc = pop(acc, P::of(static_cast<Acc>(b.v[j])));
        }
        if (k < vectors) {
          const vector16<T> a = load_vector(body + k);
#pragma unroll
          for (int j = 0; j < V; ++j) acc = pop(acc, P::of(static_cast<Acc>(a.v[j])));
        }
        i = begin + head + vectors * V;
      }
    }
#pragma unroll 4
    for (std::int64_t k = i + g; k < end; k += G) acc = pop(acc, P::of(static_cast<Acc>(in[k])));
  } else {
    const std::int64_t per_lane = (end - begin + G - 1) / G;
    const std::int64_t first = begin + g * per_lane;
    const std::int64_t last = first + per_lane < end ? first + per_lane : end;
    for (std::int64_t k = first; k < last; ++k) acc = pop(acc, P::of(static_cast<Acc>(in[k])));
  }
  return warp_reduce<G>(lane, acc, pop);
}

/// The fold of in[begin, end) by a whole block: each warp folds a contiguous share with
/// group_fold<32>, block_reduce folds the warps in order (so any operator works). Valid in thread 0.
template <int BlockThreads, class It, class Acc, class Op>
__device__ typename partial<Acc, Op>::type block_fold(cuda_lane& lane, It in, std::int64_t begin, std::int64_t end,
                                                      const Op& op,
                                                      block_reduce_storage<typename partial<Acc, Op>::type, BlockThreads>& storage) {
  constexpr int warps = BlockThreads / 32;
  const std::int64_t span = (end - begin + warps - 1) / warps;
  const std::int64_t warp_begin = begin + lane.warp_id() * span < end ? begin + lane.warp_id() * span : end;
  const std::int64_t warp_end = warp_begin + span < end ? warp_begin + span : end;
  auto acc = group_fold<32, It, Acc>(lane, in, warp_begin, warp_end, op);
  if (lane.id() != 0) acc = partial<Acc, Op>::empty();  // lane 0 holds the warp's fold
  return block_reduce<BlockThreads>(lane, acc, partial_op<Acc, Op>{op}, storage);
}

/// The whole warp reduces segment s = [begin, end) into out[s] (every lane passes the same s,
/// begin and end).
template <class It, class Out, class Acc, class Op>
__device__ __forceinline__ void warp_fold_segment(cuda_lane& lane, It in, Out out, std::int64_t s, std::int64_t begin,
                                                  std::int64_t end, const Op& op, const Acc& init) {
  const auto r = group_fold<32, It, Acc>(lane, in, begin, end, op);
  if (lane.id() == 0) out[s] = partial<Acc, Op>::finish(op, init, r);
}

/// The offsets of fixed-length segments, computed: fixed_offsets{L, shift}[s] = s * L + shift, so
/// {L, 0} and {L, L} are the begin and end offsets of segments [s*L, (s+1)*L).
struct fixed_offsets {
  std::int64_t length, shift;
  __host__ __device__ std::int64_t operator[](std::int64_t s) const { return s * length + shift; }
};

/// Segments reduced by groups of G lanes, 32/G segments per warp at a time. ShortMax below
/// every_length: only the segments up to ShortMax long (other kernels take the longer ones); the
/// kernel then runs in the tail of the kernel before it (an overlapped launch) and completes after it.
template <int G, std::int64_t ShortMax, class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(segment_group_tuning::block_threads)
    group_segments_kernel(It in, Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets,
                                 Op op, Acc init) {
  cuda_lane lane;
  const std::int64_t group = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const std::int64_t groups = std::int64_t(gridDim.x) * blockDim.x / G;
  const std::int64_t warp_first = (std::int64_t(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u)) / G;
  const bool leader = (lane.id() & (G - 1)) == 0;
  for (std::int64_t base = warp_first; base < segments; base += groups) {
    const std::int64_t s = base + (group - warp_first);
    std::int64_t begin = 0, end = 0;
    if (s < segments) begin = static_cast<std::int64_t>(begin_offsets[s]), end = static_cast<std::int64_t>(end_offsets[s]);
    const bool mine = s < segments && end - begin <= ShortMax;
    // A segment far longer than its group (only among mixed lengths) is folded by the whole warp
    // after the group's turn, so that it does not hold the warp's other groups for many rounds.
    const bool by_warp = G < 32 && mine && end - begin > 32 * G;
    const auto r = group_fold<G, It, Acc>(lane, in, begin, mine && !by_warp ? end : begin, op);
    if (mine && !by_warp && leader) out[s] = partial<Acc, Op>::finish(op, init, r);
    if constexpr (G < 32) {
      for (unsigned left = __ballot_sync(0xffffffffu, by_warp && leader); left != 0; left &= left - 1) {
        const int from = __ffs(left) - 1;
        warp_fold_segment(lane, in, out, lane.shfl_idx64(s, from, 32), lane.shfl_idx64(begin, from, 32),
                          lane.shfl_idx64(end, from, 32), op, init);
      }
    }
  }
  if constexpr (ShortMax < every_length) complete_after_previous_grid();  // the call is complete when this kernel is
}

/// The group kernel, G chosen by the caller: every segment (ShortMax = every_length, an ordinary
/// launch) or only those up to ShortMax long (launched to overlap the previous kernel's tail).
template <int G, std::int64_t ShortMax = every_length, class It, class Out, class OffIt, class Acc, class Op>
cudaError_t launch_group_segments(It in, Out out, std::int64_t segments, OffIt b, OffIt e, Op op, Acc init,
                                  cudaStream_t stream) {
  using tuning = segment_group_tuning;
  constexpr int threads = tuning::block_threads;
  const int blocks = grid_for(segments * G, threads, sm_count() * tuning::max_blocks_per_sm);
  auto kernel = group_segments_kernel<G, ShortMax, It, Out, OffIt, Acc, Op>;
  if constexpr (ShortMax < every_length)
    return launch_overlapped(kernel, blocks, threads, 0, stream, in, out, segments, b, e, op, init);
  else
    return launch(kernel, blocks, threads, 0, stream, in, out, segments, b, e, op, init);
}

}  // namespace multireduce::cuda::detail
