// multireduce/block/block_reduce.hpp -- reductions over a thread block, built on the warp level.
//
// BlockThreads is the block's thread count (a multiple of the warp size, at most 1024);
// the thread with lane.thread_rank() == 0 is "thread 0". All threads of the block must call.
// Storage lives in shared memory (CUDA: declare it __shared__); call lane.barrier() before reusing it.
//
// Performance notes: one warp-level step per warp, one barrier, then one warp-level step over the
// per-warp partials (block_reduce) or a per-thread fold of each batch over the warps
// (block_multi_reduce), which reads NumWarps values per result.
#pragma once

#include <type_traits>

#include "../warp/warp_multi_reduce.hpp"
#include "../warp/warp_reduce.hpp"

namespace multireduce {

namespace detail {
template <int BlockThreads, int WarpThreads, class Lane>
MULTIREDUCE_HOST_DEVICE constexpr void check_block_threads() {
  static_assert(WarpThreads == 32 || WarpThreads == 64,
                "multireduce: WarpThreads must be 32 (or 64 on the emulator and wave64 AMD GPUs)");
  static_assert(WarpThreads <= Lane::max_warp_size,
                "multireduce: WarpThreads is wider than this lane's warp (a CUDA warp has 32 lanes, an AMD wavefront "
                "32 or 64)");
  static_assert(BlockThreads >= WarpThreads && BlockThreads <= 1024 && BlockThreads % WarpThreads == 0,
                "multireduce: BlockThreads must be a multiple of the warp size, at most 1024");
}
}  // namespace detail

/// Shared memory for block_reduce and block_all_reduce.
template <class T, int BlockThreads, int WarpThreads = 32>
struct block_reduce_storage {
  T warp_results[BlockThreads / WarpThreads];
  T result;
};

/// Reduces one value per thread over the block.
/// @return the reduction, in lane order of thread rank, in thread 0 (other threads: partials).
template <int BlockThreads, int WarpThreads = 32, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE T block_reduce(Lane& lane, T value, Op op,
                                       block_reduce_storage<T, BlockThreads, WarpThreads>& storage) {
  detail::check_block_threads<BlockThreads, WarpThreads, Lane>();
  constexpr int warps = BlockThreads / WarpThreads;
  T partial = warp_reduce<WarpThreads>(lane, value, op);
  if constexpr (warps == 1) {
    return partial;
  } else {
    if (lane.id() == 0) storage.warp_results[lane.warp_id()] = partial;
    lane.barrier();
    if (lane.warp_id() == 0) {
      const T mine = storage.warp_results[lane.id() < warps ? lane.id() : 0];
      partial = warp_reduce<WarpThreads>(lane, mine, op, warps);
    }
    return partial;
  }
}

/// Reduces one value per thread over the block. @return the reduction in every thread.
template <int BlockThreads, int WarpThreads = 32, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE T block_all_reduce(Lane& lane, T value, Op op,
                                           block_reduce_storage<T, BlockThreads, WarpThreads>& storage) {
  const T reduced = block_reduce<BlockThreads, WarpThreads>(lane, value, op, storage);
  if (lane.thread_rank() == 0) storage.result = reduced;
  lane.barrier();
  return storage.result;
}

/// Shared memory for block_multi_reduce.
template <class T, int Batches, int BlockThreads, multi_reduce_algorithm Algorithm = multi_reduce_algorithm::select_merge,
          int WarpThreads = 32>
struct block_multi_reduce_storage {
  static constexpr int warps = BlockThreads / WarpThreads;
  T warp_results[warps][Batches > 0 ? Batches : 1];
  std::conditional_t<Algorithm == multi_reduce_algorithm::shared_exchange, warp_exchange_storage<T, WarpThreads>[warps],
                     detail::no_storage>
      exchange;
};

/// Results per thread of block_multi_reduce: ceil(Batches / BlockThreads).
template <int Batches, int BlockThreads>
inline constexpr int block_results_per_thread = (Batches + BlockThreads - 1) / BlockThreads;

/// `Batches` independent reductions over the block: each warp multi-reduces its lanes with
/// `Algorithm`, then batch b's warp results are folded in warp order.
/// @return striped over threads: slot j of thread t holds batch j * BlockThreads + t (when that is
/// < Batches). Lane order is kept when Algorithm is order_preserving.
template <int Batches, int BlockThreads, multi_reduce_algorithm Algorithm = multi_reduce_algorithm::select_merge,
          int WarpThreads = 32, lane Lane, class T, int N, class Op>
MULTIREDUCE_HOST_DEVICE array<T, block_results_per_thread<Batches, BlockThreads>> block_multi_reduce(
    Lane& lane, const array<T, N>& values, Op op,
    block_multi_reduce_storage<T, Batches, BlockThreads, Algorithm, WarpThreads>& storage) {
  detail::check_block_threads<BlockThreads, WarpThreads, Lane>();
  static_assert(N == Batches, "multireduce::block_multi_reduce: the values array must have exactly Batches elements");
  constexpr int warps = BlockThreads / WarpThreads;
  constexpr int warp_slots = results_per_lane<Batches, WarpThreads>;
  array<T, warp_slots> warp_result;
  if constexpr (Algorithm == multi_reduce_algorithm::shared_exchange) {
    warp_result = warp_multi_reduce<Batches, WarpThreads>(lane, values, op, storage.exchange[lane.warp_id()]);
  } else {
    warp_result = warp_multi_reduce<Batches, WarpThreads, Algorithm>(lane, values, op);
  }
MULTIREDUCE_UNROLL
  for (int j = 0; j < warp_slots; ++j) {
    const int batch = j * WarpThreads + lane.id();  // striped: the lane's own batch in slot j
    if (batch < Batches && batch_in_lane(Batches, WarpThreads, result_layout::striped, lane.id(), j) == batch)
      storage.warp_results[lane.warp_id()][batch] = warp_result[j];
  }
  lane.barrier();
  constexpr int R = block_results_per_thread<Batches, BlockThreads>;
  array<T, R> out{};  // value-initialised: a thread past the last batch holds no result
MULTIREDUCE_UNROLL
  for (int j = 0; j < R; ++j) {
    const int batch = j * BlockThreads + lane.thread_rank();
    if (batch < Batches) {
      T acc = storage.warp_results[0][batch];
      for (int w = 1; w < warps; ++w) acc = lane.apply(op, acc, storage.warp_results[w][batch]);
      out[j] = acc;
    }
  }
  return out;
}

}  // namespace multireduce
