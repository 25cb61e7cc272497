// multireduce/cuda/detail/ticket.cuh -- the device-wide step of a one-launch reduction: every
// block stores its partial and takes a ticket; the block that takes the last ticket folds the
// partials in block order.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "../../block/block_reduce.hpp"
#include "../../cuda_lane.cuh"
#include "load.cuh"
#include "partial.cuh"

namespace multireduce::cuda::detail {

/// The bytes kept for a call's ticket (a 256-byte piece of its temporary storage). The ticket must
/// be zero when a launch starts; the last block sets it back to zero.
inline constexpr std::size_t ticket_bytes = 256;

/// atomicAdd(ticket, 1) with acquire-release semantics at device scope; returns the old value. A
/// block's "am I the last?" ticket: its earlier writes are visible before the ticket moves, and
/// the block that takes the last ticket sees everyone's (no separate __threadfence on either side).
__device__ __forceinline__ unsigned ticket_add_acq_rel(unsigned* ticket) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(ticket) : "memory");
  return old;
}

/// atomicAdd(ticket, amount) with release semantics at device scope; returns the old value. The
/// writes before it are visible to whoever later sees the ticket move; unlike ticket_add_acq_rel
/// the caller does not wait for the old value until it uses it. The thread that takes the last
/// ticket calls acquire_fence() before it reads the others' writes.
__device__ __forceinline__ unsigned ticket_add_release(unsigned* ticket, unsigned amount) {
  unsigned old;
  asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(ticket), "r"(amount) : "memory");
  return old;
}

/// The acquire half of ticket_add_release's pattern: the writes released before the tickets this
/// thread has seen are visible to its later reads.
__device__ __forceinline__ void acquire_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

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

}  // namespace multireduce::cuda::detail
