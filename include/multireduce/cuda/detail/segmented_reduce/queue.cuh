// multireduce/cuda/detail/segmented_reduce/queue.cuh -- the queue of long segments: segments
// longer than long_segment_min are appended by whichever kernel meets them (one atomicAdd each)
// and folded, cut into pieces, by the long-segment kernel.
#pragma once

#include <cstdint>

#include "../../../cuda_lane.cuh"
#include "../ptx.cuh"
#include "../segments/folds.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// The queue header's fields (see try_queue): segments above queue_piece_bits, pieces below.
inline constexpr int queue_piece_bits = 40;
inline constexpr unsigned long long queue_piece_mask = (1ull << queue_piece_bits) - 1;
/// Capacities, and the most pieces one atomicAdd reserves, that keep both fields from wrapping.
inline constexpr std::int64_t queue_slots_max = std::int64_t(1) << 22;
inline constexpr std::int64_t queue_pieces_max = std::int64_t(1) << 38;
inline constexpr std::int64_t queue_add_max_pieces = std::int64_t(1) << 18;

/// A queued long segment; `first_piece` is its first slot among all pieces.
struct alignas(16) long_segment {
  std::int64_t segment, begin, end;
  std::int64_t first_piece;
};

/// Queue header: count of segments (high 24 bits) and of pieces (low 40 bits), in one word so
/// that first_piece grows with the queue position; `readers` counts the long-segment kernel's
/// blocks that have read it, so that the last one sets both back to zero: a call leaves its header
/// zero, and the next call on the same header needs no zeroing kernel (workspace keeps one).
struct long_queue {
  unsigned long long packed;
  unsigned readers;
};

/// Where a kernel that may queue long segments finds the queue (zero when the call's first kernel
/// starts: kept so, or zeroed by zero_queue_kernel just before it). capacity <= queue_slots_max,
/// piece_capacity <= queue_pieces_max.
struct queue_ref {
  long_queue* queue;
  long_segment* queued;
  unsigned* tickets;  // one per queued segment, zeroed when the segment is queued
  std::int64_t capacity, piece_capacity;
  bool check_room;  // whether reservations could wrap the header without a read first (see try_queue)
};

/// Zeroes the queue header. The kernel after it is an overlapped launch: it waits for this one
/// only before it first queues a segment.
static __global__ void zero_queue_kernel(long_queue* queue) {  // static: one copy per translation unit
  allow_next_grid();
  queue->packed = 0;
  queue->readers = 0;
}

/// Segments longer than long_segment_min go through the queue and the long-segment kernel.
__host__ __device__ constexpr bool is_long_segment(std::int64_t begin, std::int64_t end) {
  return end - begin > segmented_reduce_tuning::long_segment_min;
}
/// The pieces of a segment [begin, end) in the queue.
__host__ __device__ constexpr std::int64_t pieces_of(std::int64_t begin, std::int64_t end) {
  return (end - begin + segmented_reduce_tuning::long_segment_piece - 1) / segmented_reduce_tuning::long_segment_piece;
}
__host__ __device__ constexpr std::int64_t pieces_of(const long_segment& seg) { return pieces_of(seg.begin, seg.end); }

/// Appends a long segment unless the queue is full (then the caller reduces it itself). One
/// atomicAdd reserves the slot and the pieces (a compare-and-swap loop for every segment made many
/// queueing warps retry one another: measured on the H200). Neither field of the header may wrap
/// into the other. When all the call's segments together cannot wrap them (q.check_room false:
/// fewer than 2^24 segments, each of at most n elements, whose pieces add up to less than 2^40),
/// the atomicAdd goes first. Otherwise a reservation is made only after a read shows room for
/// it (+0.5 us on the H200), so past a full queue only the reservations that raced with that read
/// add to the header (one per resident thread at most, fewer than 2^20), each at most
/// queue_add_max_pieces (so the pieces stay below 2^38 + 2^38 of 2^40) and one slot (below 2^22 +
/// 2^20 of 2^24). A longer segment (more than 2^33 elements) reserves with a compare-and-swap
/// that checks the room exactly. A reservation
/// past either capacity is left unused: its slot, if it exists, is marked with segment -1, and
/// the long-segment kernel skips pieces that no written slot owns.
__device__ inline bool try_queue(const queue_ref& q, std::int64_t s, std::int64_t begin, std::int64_t end) {
  wait_for_previous_grid();  // the queue header has been zeroed
  const std::int64_t pieces = pieces_of(begin, end);
  auto has_room = [&](unsigned long long header) {
    return static_cast<std::int64_t>(header >> queue_piece_bits) < q.capacity &&
           static_cast<std::int64_t>(header & queue_piece_mask) + pieces <= q.piece_capacity;
  };
  const unsigned long long add = (1ull << queue_piece_bits) + static_cast<unsigned long long>(pieces);
  unsigned long long old = 0;
  if (q.check_room || pieces > queue_add_max_pieces) {
    old = *static_cast<volatile unsigned long long*>(&q.queue->packed);
    if (!has_room(old)) return false;
  }
  if (pieces <= queue_add_max_pieces) {
    old = atomicAdd(&q.queue->packed, add);
  } else {
    for (unsigned long long seen; (seen = atomicCAS(&q.queue->packed, old, old + add)) != old;) {
      old = seen;
      if (!has_room(old)) return false;
    }
  }
  const auto slot = static_cast<std::int64_t>(old >> queue_piece_bits), first_piece = static_cast<std::int64_t>(old & queue_piece_mask);
  if (slot >= q.capacity) return false;
  q.tickets[slot] = 0;
  if (first_piece + pieces > q.piece_capacity) {
    q.queued[slot] = long_segment{-1, 0, 0, first_piece};
    return false;
  }
  q.queued[slot] = long_segment{s, begin, end, first_piece};
  return true;
}

/// A warp reduces segment s = [begin, end) into out[s], or queues it for the long-segment kernel
/// when it is long.
template <class It, class Out, class Acc, class Op>
__device__ __forceinline__ void fold_or_queue(cuda_lane& lane, It in, Out out, std::int64_t s, std::int64_t begin,
                                              std::int64_t end, const Op& op, const Acc& init, const queue_ref& q) {
  int queued_here = 0;
  if (lane.id() == 0 && is_long_segment(begin, end)) queued_here = try_queue(q, s, begin, end);
  if (shuffle_idx(lane, queued_here, 0, 32) == 0) warp_fold_segment(lane, in, out, s, begin, end, op, init);
}

}  // namespace multireduce::cuda::detail
