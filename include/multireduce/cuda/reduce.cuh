// multireduce/cuda/reduce.cuh -- device-wide reduction of one array: one launch for every size.
//
// Design (thread -> warp -> block -> device):
//  - thread: a grid-stride loop over 16-byte vectors of the input (4 in flight per thread), with a
//    scalar head and tail for unaligned pointers; random-access iterators use scalar loads.
//  - block: block_reduce (multireduce's warp shuffles, one barrier).
//  - device: every block writes its partial, the last block to finish (an atomic ticket) folds the
//    partials in block order and writes the result. One launch; no second kernel, no host sync.
// Operators that are not commutative (is_commutative_v false) take an ordered path: each block
// folds a contiguous range tile by tile, so the result is the left-to-right fold.
//
// Determinism: the partition depends only on n and the device's multiprocessor count, and every
// fold happens in a fixed order, so the same input gives bitwise the same result on every run on
// the same GPU (not across GPUs with different SM counts).
//
// The ticket lives in the temporary storage and must start at zero; the last block resets it. The
// CUB-style entry point therefore clears it with one cudaMemsetAsync when more than one block runs;
// `workspace` (below) keeps its storage zeroed between calls and launches nothing else.
#pragma once

#include <cstdint>

#include "../block_reduce.hpp"
#include "../cuda_lane.cuh"
#include "common.cuh"

namespace multireduce::cuda {

/// Converts an input element to the accumulator type (the default transform).
template <class Acc>
struct convert_to {
  template <class T>
  __host__ __device__ __forceinline__ Acc operator()(const T& x, std::int64_t) const {
    return static_cast<Acc>(x);
  }
};

/// Pairs an element with its position: the transform of argmin and argmax.
template <class T>
struct with_index {
  __host__ __device__ __forceinline__ key_value<T> operator()(const T& x, std::int64_t i) const {
    return key_value<T>{x, i};
  }
};

namespace detail {

inline constexpr int reduce_block_threads = 512;
inline constexpr int reduce_blocks_per_sm = 4;
inline constexpr int reduce_vectors_in_flight = 4;
inline constexpr std::size_t ticket_bytes = 256;

/// Blocks for n elements: enough that each thread loads a few vectors, at most 4 per SM.
template <class T>
inline int reduce_grid_size(std::int64_t n, int sms) {
  const std::int64_t per_block = std::int64_t(reduce_block_threads) * vector_elements<T> * reduce_vectors_in_flight * 2;
  std::int64_t blocks = (n + per_block - 1) / per_block;
  const std::int64_t most = std::int64_t(sms) * reduce_blocks_per_sm;
  if (blocks > most) blocks = most;
  return blocks < 1 ? 1 : static_cast<int>(blocks);
}

/// One thread's share, commutative operators: a grid-stride loop over vectors.
template <int BlockThreads, class It, class Acc, class Op, class Transform>
__device__ __forceinline__ typename partial<Acc, Op>::type thread_reduce_strided(It in, std::int64_t n, const Op& op,
                                                                                 const Transform& transform) {
  using P = partial<Acc, Op>;
  const partial_op<Acc, Op> pop{op};
  typename P::type acc = P::empty();
  for_each_strided<BlockThreads, reduce_vectors_in_flight>(
      in, n,
      [&](const auto& v, std::int64_t first) {
        constexpr int V = std::extent_v<std::remove_reference_t<decltype(v)>>;
#pragma unroll
        for (int k = 0; k < V; ++k) acc = pop(acc, P::of(transform(v[k], first + k)));
      },
      [&](const auto& x, std::int64_t i) { acc = pop(acc, P::of(transform(x, i))); });
  return acc;
}

/// The device-wide step shared by reduce-like kernels: block partial -> the last block folds them.
/// @return true in thread 0 of the last block, with `total` the fold of all blocks in block order.
template <int BlockThreads, class Part, class PartOp>
__device__ bool fold_block_partials(cuda_lane& lane, Part block_partial, const PartOp& pop, Part* partials,
                                    unsigned* ticket, block_reduce_storage<maybe<Part>, BlockThreads>& storage,
                                    Part& total) {
  __shared__ bool is_last;
  if (gridDim.x == 1) {
    total = block_partial;
    return lane.thread_rank() == 0;
  }
  if (lane.thread_rank() == 0) {
    partials[blockIdx.x] = block_partial;
    // Release (the partial is visible before the ticket moves) and acquire (the last block sees
    // every partial) in the atomic itself: no separate, slower sequentially consistent fences.
    is_last = ticket_add_acq_rel(ticket) == gridDim.x - 1;
  }
  __syncthreads();  // orders thread 0's acquire before the other threads' reads of the partials
  if (!is_last) return false;
  // Thread t folds a contiguous run of partials, then the block folds the runs in thread order.
  const int blocks = static_cast<int>(gridDim.x);
  const int per_thread = (blocks + BlockThreads - 1) / BlockThreads;
  const int first = lane.thread_rank() * per_thread;
  const int last = first + per_thread < blocks ? first + per_thread : blocks;
  Part mine{};
  bool have = false;
  for (int b = first; b < last; ++b) {
    const Part p = load_coherent(partials + b);
    mine = have ? pop(mine, p) : p;
    have = true;
  }
  __syncthreads();  // the storage may still be in use by the block's first reduction
  const maybe<Part> folded = block_reduce<BlockThreads>(lane, maybe<Part>{mine, have ? 1 : 0}, maybe_op<PartOp>{pop}, storage);
  if (lane.thread_rank() == 0) {
    total = folded.value;
    *ticket = 0;  // ready for the next launch on this storage
  }
  return lane.thread_rank() == 0;
}

/// Shared memory of a reduce-like kernel: the block reduction, then the fold of block partials
/// (raw bytes: partials may have non-trivial default constructors, which a union would delete).
template <class Part, int BlockThreads>
struct reduce_shared_storage {
  using first_type = block_reduce_storage<Part, BlockThreads>;
  using second_type = block_reduce_storage<maybe<Part>, BlockThreads>;
  alignas(16) unsigned char bytes[sizeof(first_type) > sizeof(second_type) ? sizeof(first_type) : sizeof(second_type)];
  __device__ first_type& first() { return *reinterpret_cast<first_type*>(bytes); }
  __device__ second_type& second() { return *reinterpret_cast<second_type*>(bytes); }
};

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
    // Ordered: block b owns a contiguous range; tiles of BlockThreads x 4 items, each thread folds
    // 4 consecutive items, the block folds threads in order, thread 0 folds tiles in order.
    constexpr int items = 4;
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
  Part total;
  if (fold_block_partials<BlockThreads>(lane, block_partial, pop, partials, ticket, storage.second(), total))
    *out = n == 0 ? empty_result : P::finish(op, init, total);
}

template <class It, class Acc, class Op, class Transform>
cudaError_t reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out, std::int64_t n, Op op, Acc init,
                   Acc empty_result, Transform transform, cudaStream_t stream, bool ticket_is_zero) {
  using Part = typename partial<Acc, Op>::type;
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::reduce: op must be callable as Acc op(Acc, Acc), Acc = the type of init");
  if (n < 0) return cudaErrorInvalidValue;
  const int blocks = reduce_grid_size<T>(n, sm_count());
  const std::size_t needed = ticket_bytes + round_up(sizeof(Part) * static_cast<std::size_t>(blocks));
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  auto* ticket = static_cast<unsigned*>(temp_storage);
  auto* partials = reinterpret_cast<Part*>(static_cast<char*>(temp_storage) + ticket_bytes);
  if (blocks > 1 && !ticket_is_zero) {
    if (const cudaError_t e = cudaMemsetAsync(ticket, 0, sizeof(unsigned), stream); e != cudaSuccess) return e;
  }
  reduce_kernel<reduce_block_threads><<<blocks, reduce_block_threads, 0, stream>>>(in, n, out, op, init, empty_result,
                                                                                   transform, partials, ticket);
  return cudaPeekAtLastError();
}

}  // namespace detail

/// Reduces n elements into *out = op(init, op(in[0], ..., in[n-1])) (init when n == 0), CUB style:
/// call with temp_storage == nullptr to get temp_bytes, then again with that much device memory.
/// Acc (the type of init) is the accumulator: each element is converted with static_cast<Acc>.
/// @return cudaSuccess, cudaErrorInvalidValue for n < 0 or too little temporary storage, or the
/// launch error. Asynchronous on `stream`.
template <class It, class Acc, class Op>
cudaError_t reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out, std::int64_t n, Op op, Acc init,
                   cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, op, init, init, convert_to<Acc>{}, stream, false);
}

/// Like reduce, but each element first goes through transform(x, index) -> Acc.
template <class It, class Acc, class Op, class Transform>
cudaError_t transform_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out, std::int64_t n, Op op,
                             Acc init, Transform transform, cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, op, init, init, transform, stream, false);
}

/// The smallest element and its index (the first among equals; a NaN wins, the first NaN).
/// n == 0 gives {identity, -1}.
template <class T>
cudaError_t argmin(void* temp_storage, std::size_t& temp_bytes, const T* in, key_value<T>* out, std::int64_t n,
                   cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, multireduce::argmin{},
                        multireduce::argmin::identity<key_value<T>>(), key_value<T>{minimum::identity<T>(), -1},
                        with_index<T>{}, stream, false);
}

/// The largest element and its index (the first among equals; a NaN wins, the first NaN).
template <class T>
cudaError_t argmax(void* temp_storage, std::size_t& temp_bytes, const T* in, key_value<T>* out, std::int64_t n,
                   cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, multireduce::argmax{},
                        multireduce::argmax::identity<key_value<T>>(), key_value<T>{maximum::identity<T>(), -1},
                        with_index<T>{}, stream, false);
}

}  // namespace multireduce::cuda
