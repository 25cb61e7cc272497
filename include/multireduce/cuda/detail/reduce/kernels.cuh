// multireduce/cuda/detail/reduce/kernels.cuh -- the one-launch reduction's kernel.
//
// thread: a grid-stride loop over 16-byte vectors (vectors_in_flight loads issued together), with
// a scalar head and tail for unaligned pointers; iterators load element by element.
// block: block_reduce. device: every block stores its partial and the last block to take the
// ticket folds the partials in block order (ticket.cuh); integer sums instead add their block
// partials atomically into one slot (add_block_sum: the same bits in any order, 1.2-1.5 us faster). Operators not declared commutative take
// an ordered path: block b folds a contiguous range tile by tile, so the result is the
// left-to-right fold.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../../block/block_reduce.hpp"
#include "../../../cuda_lane.cuh"
#include "../../../operators.hpp"
#include "../load.cuh"
#include "../partial.cuh"
#include "../ticket.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// One thread's share, commutative operators: a grid-stride loop over vectors.
template <int BlockThreads, class It, class Acc, class Op, class Transform>
__device__ __forceinline__ typename partial<Acc, Op>::type thread_reduce_strided(It in, std::int64_t n, const Op& op,
                                                                                 const Transform& transform) {
  using P = partial<Acc, Op>;
  const partial_op<Acc, Op> pop{op};
  typename P::type acc = P::empty();
  for_each_strided<BlockThreads, reduce_tuning::vectors_in_flight>(
      in, n,
      [&](const auto& v, std::int64_t first) {
        constexpr int V = std::extent_v<std::remove_reference_t<decltype(v)>>;
#pragma unroll
        for (int k = 0; k < V; ++k) acc = pop(acc, P::of(transform(v[k], first + k)));
      },
      [&](const auto& x, std::int64_t i) { acc = pop(acc, P::of(transform(x, i))); });
  return acc;
}

/// *out = op(init, fold of transform(in[i], i)) (empty_result when n == 0); one launch.
template <int BlockThreads, class It, class Acc, class Op, class Transform>
__global__ void __launch_bounds__(BlockThreads)
    reduce_kernel(It in, std::int64_t n, Acc* out, Op op, Acc init, Acc empty_result, Transform transform,
                  typename partial<Acc, Op>::type* partials, unsigned* ticket) {
  using P = partial<Acc, Op>;
  using Part = typename P::type;
  const partial_op<Acc, Op> pop{op};
  __shared__ reduce_shared_storage<Part, BlockThreads> storage;
  cuda_lane lane;
  Part block_partial;
  if constexpr (is_commutative_v<Op>) {
    const Part mine = thread_reduce_strided<BlockThreads, It, Acc>(in, n, op, transform);
    block_partial = block_reduce<BlockThreads>(lane, mine, pop, storage.first());
  } else {
    // Ordered: block b owns a contiguous range; tiles of BlockThreads x `items`, each thread folds
    // `items` consecutive ones, the block folds threads in order, thread 0 folds tiles in order.
    constexpr int items = reduce_tuning::ordered_items;
    constexpr std::int64_t tile = std::int64_t(BlockThreads) * items;
    const std::int64_t tiles = (n + tile - 1) / tile;
    const std::int64_t tiles_per_block = (tiles + gridDim.x - 1) / gridDim.x;
    const std::int64_t begin = blockIdx.x * tiles_per_block * tile;
    const std::int64_t end = begin + tiles_per_block * tile < n ? begin + tiles_per_block * tile : n;
    Part acc = P::empty();
    for (std::int64_t t = begin; t < end; t += tile) {
      Part mine = P::empty();
      const std::int64_t first = t + std::int64_t(threadIdx.x) * items;
#pragma unroll
      for (int k = 0; k < items; ++k)
        if (first + k < end) mine = pop(mine, P::of(transform(in[first + k], first + k)));
      const Part tile_partial = block_reduce<BlockThreads>(lane, mine, pop, storage.first());
      if (threadIdx.x == 0) acc = pop(acc, tile_partial);
      __syncthreads();
    }
    block_partial = acc;
  }
  // The device-wide step: integer sums add the blocks' partials atomically (the same bits in any
  // order), everything else folds them in block order in the last block (ticket.cuh).
  Part total;
  bool last = false;
  if constexpr (finishes_by_atomic_add<Acc, Op, Part>)
    last = lane.thread_rank() == 0 && add_block_sum(block_partial, ticket, total);
  else
    last = fold_block_partials<BlockThreads>(lane, block_partial, pop, partials, ticket, storage.second(), total);
  if (last) *out = n == 0 ? empty_result : P::finish(op, init, total);
}

}  // namespace multireduce::cuda::detail
