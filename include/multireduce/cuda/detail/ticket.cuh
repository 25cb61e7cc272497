// multireduce/cuda/detail/ticket.cuh -- the device-wide step of a one-launch reduction: every
// block stores its partial and takes a ticket; the block that takes the last ticket folds the
// partials in block order.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "../../block/block_reduce.hpp"
#include "../../cuda_lane.cuh"
#include "../../operators.hpp"
#include "load.cuh"
#include "partial.cuh"

namespace multireduce::cuda::detail {

/// The bytes kept for a call's ticket (a 256-byte piece of its temporary storage). The ticket (and
/// the integer-sum slot 8 bytes after it, see add_block_sum) must be zero when a launch starts; the
/// last block sets them back to zero. ticket_clear_bytes covers both.
inline constexpr std::size_t ticket_bytes = 256;
inline constexpr std::size_t ticket_clear_bytes = 16;

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

/// Reductions whose device-wide step is an atomic add instead of the fold of block partials: sums of
/// 32- and 64-bit integers, where the order of the additions cannot change a bit of the result
/// (two's-complement addition wraps the same in any order), and the partial is the plain value.
template <class Acc, class Op, class Part>
inline constexpr bool finishes_by_atomic_add = std::is_integral_v<Acc> && !std::is_same_v<Acc, bool> &&
                                               (sizeof(Acc) == 4 || sizeof(Acc) == 8) && std::is_same_v<Op, sum> &&
                                               std::is_same_v<Part, Acc>;

/// The device-wide step of an integer sum (finishes_by_atomic_add), called by thread 0 of every
/// block: adds the block's partial to the slot 8 bytes after the ticket (relaxed), then takes the
/// ticket (acquire-release, which orders the add before it); the block that takes the last ticket
/// reads the slot and sets slot and ticket back to zero. One atomic per block and one read, where
/// fold_block_partials stores a partial per block and the last block folds them all: 1.2-1.5 us
/// less per call on the H200 (docs/tuning-log.md). 32-bit sums of fewer than 2^16 blocks need no
/// ticket: one relaxed 64-bit atomic on the slot adds 2^48 + the partial as an unsigned 32-bit
/// value, so the slot's low 48 bits hold the partials' sum (below 2^16 * 2^32: no carry out; its
/// low 32 bits are the wrapped sum) and its top 16 bits count the blocks; the block that sees the
/// count reach the last has the total in the atomic's old value plus its own add.
/// @return true in the last block, with `total`.
template <class Acc>
__device__ bool add_block_sum(Acc block_partial, unsigned* ticket, Acc& total) {
  if (gridDim.x == 1) {
    total = block_partial;
    return true;
  }
  auto* slot = reinterpret_cast<unsigned long long*>(ticket) + 1;
  if constexpr (sizeof(Acc) == 4) {
    if (gridDim.x < (1u << 16)) {
      const unsigned long long mine = (1ull << 48) + static_cast<unsigned>(block_partial);
      const unsigned long long old = atomicAdd(slot, mine);
      if ((old >> 48) != gridDim.x - 1) return false;
      total = static_cast<Acc>(static_cast<unsigned>(old + mine));
      *slot = 0;  // ready for the next launch on this storage
      return true;
    }
    atomicAdd(reinterpret_cast<unsigned*>(slot), static_cast<unsigned>(block_partial));
  } else {
    atomicAdd(slot, static_cast<unsigned long long>(block_partial));
  }
  if (ticket_add_acq_rel(ticket) != gridDim.x - 1) return false;
  if constexpr (sizeof(Acc) == 4) total = static_cast<Acc>(load_coherent(reinterpret_cast<unsigned*>(slot)));
  else total = static_cast<Acc>(load_coherent(slot));
  *slot = 0;
  *ticket = 0;  // ready for the next launch on this storage
  return true;
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
