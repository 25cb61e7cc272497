// multireduce/cuda/segmented_reduce.cuh -- many reductions at once: segments of one array.
//
// out[s] = op(init, fold of segment s); an empty segment gives init (CUB's convention).
//
// Fixed-length segments (segment s = [s*L, (s+1)*L)) pick a kernel by L:
//  - L = 1, 2, 4, 8, 16 over an aligned pointer, "direct": each thread folds 16-byte vectors
//                         (or L elements) straight from registers, no shared memory; the results
//                         of neighbouring threads are neighbours (coalesced stores).
//  - other L <= 16, "tile": a block stages 8192 elements of whole segments in shared memory with
//                         coalesced loads (32 in flight per thread), then every thread reduces
//                         whole segments there and the outputs leave coalesced.
//  - L <= 2048, "group":  G = 4..32 lanes per segment (a logical warp), 16-byte vector loads when
//                         aligned, then warp_reduce<G>: 32/G segments per warp at a time.
//  - larger L, "block":   one block per segment; when there are too few segments to fill the GPU,
//                         each segment is cut into pieces, one block each, and a second (group)
//                         pass folds the pieces of each segment in order.
// Offsets (begin_offsets[s], end_offsets[s]), after a one-thread kernel zeroes the long-segment
// queue (every kernel below overlaps the tail of the one before it on sm_90):
//  - one offsets array (end_offsets == begin_offsets + 1, CSR) over a pointer with a mean length
//    up to 40, sm_90: "staged": tiles of 128 consecutive segments, a thread each; thread 0 brings
//    each tile's elements into shared memory with one bulk copy (TMA), 2 tiles in flight per
//    block, and each thread folds its own segment there 16 bytes at a time. A tile that does not
//    fit its 24 KiB stage is folded by a warp per segment from global memory instead, the
//    segments longer than 2048 queued (one atomicAdd each);
//  - otherwise: a thread per segment queues those longer than 2048 first; then the long-segment
//    kernel runs, and a group of G lanes per segment (G chosen from the mean length; 2 when the
//    long segments make the mean) folds the short ones in the SMs that kernel leaves free at its
//    end, the whole warp taking a segment longer than 32 lanes' worth;
//  - queued segments are cut into pieces of up to 32768 elements; each block of the long-segment
//    kernel folds a contiguous run of pieces (load balance for skewed lengths); a segment of one
//    piece goes straight to out, the pieces of others are counted on the segment's ticket once
//    per segment, and the block that completes the count folds its pieces in order.
// Non-commutative operators: lanes and threads take contiguous runs, folded in order.
// Deterministic: partitions depend only on the arguments and the device's SM count.
#pragma once

#include <cstdint>

#include "../block_reduce.hpp"
#include "../cuda_lane.cuh"
#include "../warp_reduce.hpp"
#include "common.cuh"

namespace multireduce::cuda {
namespace detail {

inline constexpr int segment_tile_max_length = 16;
inline constexpr int segment_group_max_length = 2048;
/// Offsets: the long-segment kernel's pieces, and its blocks. H200, power-law lengths, the whole
/// call: 78.7 us with pieces of 16384 and blocks of 256 threads, 77.5 with 32768 and 256, 78.7
/// with 16384 and 128, 76.8 with 32768 and 128, 93.4 with 65536 and 128 (fewer, larger pieces
/// drain the blocks' loads less often; smaller blocks balance the larger pieces).
inline constexpr std::int64_t long_segment_piece = 32768;
inline constexpr int long_segment_threads = 128;
/// Offsets: segments longer than this are queued for the long-segment kernel (a block per piece)
/// rather than folded by one group of lanes.
inline constexpr std::int64_t long_segment_min = 2048;
/// The queue header's fields (see try_queue): segments above queue_piece_bits, pieces below.
inline constexpr int queue_piece_bits = 40;
inline constexpr unsigned long long queue_piece_mask = (1ull << queue_piece_bits) - 1;
/// Capacities, and the most pieces one atomicAdd reserves, that keep both fields from wrapping.
inline constexpr std::int64_t queue_slots_max = std::int64_t(1) << 22;
inline constexpr std::int64_t queue_pieces_max = std::int64_t(1) << 38;
inline constexpr std::int64_t queue_add_max_pieces = std::int64_t(1) << 18;


/// L <= 16: a block stages a tile of whole segments (up to BlockThreads * Items elements) in
/// shared memory, all its loads in flight at once and coalesced, then every thread reduces whole
/// segments there (thread t: segments t, t + BlockThreads, ...) and the outputs leave coalesced.
template <int BlockThreads, int Items, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    tile_segments_kernel(It in, Out out, std::int64_t segments, int length, Op op, Acc init) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* tile = reinterpret_cast<T*>(shared_bytes);
  const int tile_segments = BlockThreads * Items / length;
  for (std::int64_t first = std::int64_t(blockIdx.x) * tile_segments; first < segments;
       first += std::int64_t(gridDim.x) * tile_segments) {
    const int count = segments - first < tile_segments ? static_cast<int>(segments - first) : tile_segments;
    const int elements = count * length;
    const std::int64_t base = first * length;
    T staged[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int i = k * BlockThreads + threadIdx.x;
      if (i < elements) staged[k] = in[base + i];
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int i = k * BlockThreads + threadIdx.x;
      if (i < elements) tile[padded(i)] = staged[k];
    }
    __syncthreads();
    for (int s = threadIdx.x; s < count; s += BlockThreads) {
      Acc acc = init;
      for (int j = 0; j < length; ++j) acc = op(acc, static_cast<Acc>(tile[padded(s * length + j)]));
      out[first + s] = acc;
    }
    __syncthreads();
  }
}

/// K values of T stored with one instruction when K * sizeof(T) is 8 or 16 bytes.
template <class T, int K>
struct alignas((K * sizeof(T) == 8 || K * sizeof(T) == 16) ? K * sizeof(T) : alignof(T)) value_pack {
  T v[K];
};

/// L = 1, 2, 4, 8 or 16 over a 16-byte-aligned array: no staging. A thread's row is one 16-byte
/// vector, or L elements when that is more; it loads Rows rows (a grid stride apart, all in
/// flight), folds each into its row/L segment results and stores those next to its neighbours'
/// (one 8- or 16-byte store when VectorOut: `out` is an aligned Acc array). Leftover segments
/// (less than one row) go element-wise.
template <int BlockThreads, int L, bool VectorOut, class T, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    direct_segments_kernel(const T* in, Out out, std::int64_t segments, Op op, Acc init) {
  constexpr int V = vector_elements<T>;
  constexpr int row = V > L ? V : L, vectors = row / V, per_row = row / L, rows_in_flight = 4;
  static_assert(V > 1 && row % V == 0 && row % L == 0);
  const std::int64_t rows = segments / per_row;
  const std::int64_t stride = std::int64_t(gridDim.x) * BlockThreads;
  const auto* vin = reinterpret_cast<const vector16<T>*>(in);
  for (std::int64_t r0 = std::int64_t(blockIdx.x) * BlockThreads + threadIdx.x; r0 < rows;
       r0 += rows_in_flight * stride) {
    vector16<T> v[rows_in_flight][vectors];
#pragma unroll
    for (int q = 0; q < rows_in_flight; ++q)
      if (r0 + q * stride < rows) {
#pragma unroll
        for (int u = 0; u < vectors; ++u) v[q][u] = load_vector(vin + (r0 + q * stride) * vectors + u);
      }
#pragma unroll
    for (int q = 0; q < rows_in_flight; ++q) {
      const std::int64_t r = r0 + q * stride;
      if (r >= rows) break;
      value_pack<Acc, per_row> results;
#pragma unroll
      for (int k = 0; k < per_row; ++k) {
        Acc acc = init;
#pragma unroll
        for (int j = 0; j < L; ++j) acc = op(acc, static_cast<Acc>(v[q][(k * L + j) / V].v[(k * L + j) % V]));
        results.v[k] = acc;
      }
      if constexpr (VectorOut) {
        *reinterpret_cast<value_pack<Acc, per_row>*>(&out[r * per_row]) = results;
      } else {
#pragma unroll
        for (int k = 0; k < per_row; ++k) out[r * per_row + k] = results.v[k];
      }
    }
  }
  const std::int64_t done = rows * per_row;
  if (blockIdx.x == 0 && threadIdx.x < segments - done) {
    const std::int64_t s = done + threadIdx.x;
    Acc acc = init;
    for (int j = 0; j < L; ++j) acc = op(acc, static_cast<Acc>(in[s * L + j]));
    out[s] = acc;
  }
}

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

/// The offsets of fixed-length segments, computed: fixed_offsets{L, shift}[s] = s * L + shift, so
/// {L, 0} and {L, L} are the begin and end offsets of segments [s*L, (s+1)*L).
struct fixed_offsets {
  std::int64_t length, shift;
  __host__ __device__ std::int64_t operator[](std::int64_t s) const { return s * length + shift; }
};

/// One block per piece: segment s = blockIdx / pieces covers [s*length, (s+1)*length); piece p of
/// it is [length*p/pieces, length*(p+1)/pieces). pieces == 1: writes op(init, fold) to out[s];
/// otherwise the piece's fold (no init) to partials[blockIdx].
template <int BlockThreads, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    block_fixed_segments_kernel(It in, Out out, Acc* partials, std::int64_t segments, std::int64_t length,
                                int pieces, Op op, Acc init) {
  using P = partial<Acc, Op>;
  __shared__ block_reduce_storage<typename P::type, BlockThreads> storage;
  cuda_lane lane;
  for (std::int64_t b = blockIdx.x; b < segments * pieces; b += gridDim.x) {
    const std::int64_t s = b / pieces, p = b % pieces;
    const std::int64_t begin = s * length + length * p / pieces, end = s * length + length * (p + 1) / pieces;
    const auto r = block_fold<BlockThreads, It, Acc>(lane, in, begin, end, op, storage);
    if (threadIdx.x == 0) {
      if (pieces == 1) out[s] = P::finish(op, init, r);
      else partials[b] = P::value(r);  // pieces are never empty
    }
    __syncthreads();
  }
}

template <class Out, class Acc>
__global__ void fill_kernel(Out out, std::int64_t count, Acc value) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

inline int grid_for(std::int64_t work_items, int per_block, int max_blocks) {
  const std::int64_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<int>(blocks < 1 ? 1 : blocks > max_blocks ? max_blocks : blocks);
}

/// Pieces per segment for the block kernel, given the blocks that are resident at once. With at
/// least half as many segments, none. With fewer, as many as fit that one wave (rounded down, so
/// that no SM gets a piece to do after the others are done; measured: 3 pieces of 2^18 -> 5.8
/// blocks per SM, 83-86% of copy; 17 smaller pieces, 88%; 4 pieces, the one wave, see
/// docs/results.md).
inline int pieces_for(std::int64_t segments, std::int64_t length, int resident) {
  if (segments >= std::int64_t(resident) / 2) return 1;
  std::int64_t pieces = std::int64_t(resident) / segments;
  const std::int64_t most = length / 4096;  // pieces of at least 4096 elements
  if (pieces > most) pieces = most;
  return pieces < 1 ? 1 : static_cast<int>(pieces);
}

// ---- offsets ------------------------------------------------------------------------------------

/// A queued long segment; `first_piece` is its first slot among all pieces.
struct alignas(16) long_segment {
  std::int64_t segment, begin, end;
  std::int64_t first_piece;
};

/// Queue header: count of segments (high 24 bits) and of pieces (low 40 bits), in one word so
/// that first_piece grows with the queue position.
struct long_queue {
  unsigned long long packed;
};

/// Where a kernel that may queue long segments finds the queue (zeroed by zero_queue_kernel, the
/// kernel launched just before it). capacity <= queue_slots_max, piece_capacity <= queue_pieces_max.
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
}

/// Segments longer than long_segment_min go through the queue and the long-segment kernel.
__host__ __device__ constexpr bool is_long_segment(std::int64_t begin, std::int64_t end) {
  return end - begin > long_segment_min;
}
/// The pieces of a segment [begin, end) in the queue.
__host__ __device__ constexpr std::int64_t pieces_of(std::int64_t begin, std::int64_t end) {
  return (end - begin + long_segment_piece - 1) / long_segment_piece;
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

/// The whole warp reduces segment s = [begin, end) into out[s] (every lane passes the same s,
/// begin and end).
template <class It, class Out, class Acc, class Op>
__device__ __forceinline__ void warp_fold_segment(cuda_lane& lane, It in, Out out, std::int64_t s, std::int64_t begin,
                                                  std::int64_t end, const Op& op, const Acc& init) {
  const auto r = group_fold<32, It, Acc>(lane, in, begin, end, op);
  if (lane.id() == 0) out[s] = partial<Acc, Op>::finish(op, init, r);
}

/// A warp reduces segment s = [begin, end) into out[s], or queues it for the long-segment kernel
/// when it is long.
template <class It, class Out, class Acc, class Op>
__device__ __forceinline__ void fold_or_queue(cuda_lane& lane, It in, Out out, std::int64_t s, std::int64_t begin,
                                              std::int64_t end, const Op& op, const Acc& init, const queue_ref& q) {
  int queued_here = 0;
  if (lane.id() == 0 && is_long_segment(begin, end)) queued_here = try_queue(q, s, begin, end);
  if (__shfl_sync(0xffffffffu, queued_here, 0) == 0) warp_fold_segment(lane, in, out, s, begin, end, op, init);
}

/// Segments reduced by groups of G lanes, 32/G segments per warp at a time. ShortOnly: only the
/// segments up to long_segment_min long (queue_long_segments_kernel and the long-segment kernel
/// take the others); this kernel runs in the long-segment kernel's tail and completes after it.
template <int G, bool ShortOnly, class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(256)
    group_offset_segments_kernel(It in, Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets,
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
    const bool mine = s < segments && !(ShortOnly && is_long_segment(begin, end));
    // A segment far longer than its group (only among mixed lengths) is folded by the whole warp
    // after the group's turn, so that it does not hold the warp's other groups for many rounds.
    const bool by_warp = G < 32 && mine && end - begin > 32 * G;
    const auto r = group_fold<G, It, Acc>(lane, in, begin, mine && !by_warp ? end : begin, op);
    if (mine && !by_warp && leader) out[s] = partial<Acc, Op>::finish(op, init, r);
    if constexpr (G < 32) {
      for (unsigned left = __ballot_sync(0xffffffffu, by_warp && leader); left != 0; left &= left - 1) {
        const int from = __ffs(left) - 1;
        warp_fold_segment(lane, in, out, __shfl_sync(0xffffffffu, s, from), __shfl_sync(0xffffffffu, begin, from),
                          __shfl_sync(0xffffffffu, end, from), op, init);
      }
    }
  }
  if constexpr (ShortOnly) complete_after_previous_grid();  // the call is complete when this kernel is
}

/// Offsets: queues every segment longer than long_segment_min (a thread per segment, one round
/// of loads), so that the long-segment kernel can start before the short segments are done. A
/// segment the queue has no room for (only overlapping segments can overflow it) is folded here
/// by the whole warp.
template <class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(256)
    queue_long_segments_kernel(It in, Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets, Op op,
                               Acc init, queue_ref q) {
  allow_next_grid();
  cuda_lane lane;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t base = std::int64_t(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u); base < segments;
       base += stride) {
    const std::int64_t s = base + lane.id();
    std::int64_t begin = 0, end = 0;
    if (s < segments) begin = static_cast<std::int64_t>(begin_offsets[s]), end = static_cast<std::int64_t>(end_offsets[s]);
    const bool unqueued = s < segments && is_long_segment(begin, end) && !try_queue(q, s, begin, end);
    for (unsigned left = __ballot_sync(0xffffffffu, unqueued); left != 0; left &= left - 1) {
      const int from = __ffs(left) - 1;
      warp_fold_segment(lane, in, out, __shfl_sync(0xffffffffu, s, from), __shfl_sync(0xffffffffu, begin, from),
                        __shfl_sync(0xffffffffu, end, from), op, init);
    }
  }
  complete_after_previous_grid();  // after the zeroing kernel: the long-segment kernel reads a whole queue
}

/// Loads element i with an L2-coherent load (data written by other blocks of the same launch).
template <class T>
struct coherent_ptr {
  const T* p;
  __device__ T operator[](std::int64_t i) const { return load_coherent(p + i); }
  __device__ T operator*() const { return load_coherent(p); }
};

/// The queue slot that owns `piece`: the last slot with first_piece <= piece (slots' first pieces
/// increase). Every lane of the warp gets it; a 32-way search, so 2 rounds of loads for up to
/// 1024 slots and 3 for 32768.
__device__ inline int find_owner(const cuda_lane& lane, const long_segment* queued, int count, std::int64_t piece) {
  int lo = 0, hi = count;  // queued[lo].first_piece <= piece (slot 0 starts at piece 0)
  while (hi - lo > 1) {
    const int step = (hi - lo + 31) / 32;
    const int probe = lo + lane.id() * step;
    const bool at_or_below = probe < hi && queued[probe].first_piece <= piece;
    const int below = __popc(__ballot_sync(0xffffffffu, at_or_below));  // >= 1: lane 0 probes lo
    lo += (below - 1) * step;
    hi = lo + step < hi ? lo + step : hi;
  }
  return lo;
}

/// Queued segments, cut into pieces of long_segment_piece elements. Block b folds the pieces
/// [total*b/grid, total*(b+1)/grid), a contiguous run: warp 0 finds the owner of the first
/// piece by a search and thread 0 then walks forward, keeping its place in shared memory and copying the
/// next queue slot there asynchronously a piece ahead (so that the fold, which all threads do,
/// holds no bookkeeping in registers: at 64 registers only 4 blocks of 256 fit an SM, too few
/// loads in flight, measured on the H200; and so that no piece waits for a slot's load). A
/// segment of one piece goes straight to out. Otherwise a piece's fold goes to `pieces`; when the
/// block moves on to another segment of several pieces (or finishes), it adds the number of
/// pieces it folded in the one it leaves to that segment's ticket, and the block that completes
/// the count folds the segment's pieces in order into out, with warp 0. The ticket's old value is
/// looked at only when the block leaves its next segment (or at its end), so that no piece waits
/// for the atomic. (A ticket per piece, with its release fence, cost 4% on power-law lengths: 94
/// -> 90 us on the H200.) Every piece's fold and the final fold depend only on the segment, so
/// the result does not depend on which block folds what.
template <int BlockThreads, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    long_segments_kernel(It in, Out out, Op op, Acc init, queue_ref q, Acc* pieces) {
  using P = partial<Acc, Op>;
  __shared__ block_reduce_storage<typename P::type, BlockThreads> storage;
  __shared__ struct {
    int count, slot;
    long_segment seg;       // slot's segment
    long_segment ahead[2];  // slot + 1's in ahead[(slot + 1) & 1], copied asynchronously
    long_segment run;       // the segment of several pieces the block is folding (slot run_slot)
    int run_slot;
    unsigned folded;          // pieces of it this block has folded
    long_segment left;        // the segment whose ticket the block added to last (segment -1: none)
    std::int64_t begin, end;  // this piece's elements (begin == end: none, a reservation left unused)
  } walk;
  allow_next_grid();         // the short segments' kernel fills the SMs this one leaves
  wait_for_previous_grid();  // the queue is complete
  cuda_lane lane;
  const unsigned long long packed = q.queue->packed;
  const std::int64_t total = min(static_cast<std::int64_t>(packed & queue_piece_mask), q.piece_capacity);
  const std::int64_t first = total * blockIdx.x / gridDim.x, last = total * (blockIdx.x + 1) / gridDim.x;
  if (first >= last) return;
  auto copy_ahead = [&](int slot) {  // thread 0: queued[slot] into walk.ahead[slot & 1]
    long_segment& to = walk.ahead[slot & 1];
    if (slot < walk.count) {
      copy_async16(&to, q.queued + slot);
      copy_async16(reinterpret_cast<char*>(&to) + 16, reinterpret_cast<const char*>(q.queued + slot) + 16);
      commit_copies();
    } else {
      to = long_segment{-1, 0, 0, INT64_MAX};
    }
  };
  if (lane.warp_id() == 0) {
    const int count = static_cast<int>(min(static_cast<long long>(packed >> queue_piece_bits), static_cast<long long>(q.capacity)));
    const int slot = find_owner(lane, q.queued, count, first);
    if (lane.id() == 0) {
      walk.count = count;
      walk.slot = slot;
      walk.seg = q.queued[slot];
      walk.run_slot = -1;
      walk.folded = 0;
      walk.left.segment = -1;
      copy_ahead(slot + 1);
    }
  }
  // Warp 0 (lane 0 holds `seen`, the ticket's count after the block's last addition): when the
  // block leaves a segment, first the segment it left before: if the block's addition completed
  // its count, the block folds its pieces. Then the pieces folded in the segment it leaves now go
  // on that one's ticket, in one release atomic.
  unsigned seen = 0;
  auto fold_if_completed = [&] {
    const long_segment& left = walk.left;
    const std::int64_t count = pieces_of(left);
    if (left.segment < 0 || __shfl_sync(0xffffffffu, seen, 0) != count) return;
    acquire_fence();  // every piece of the segment is visible
    const auto r = group_fold<32, coherent_ptr<Acc>, Acc>(lane, coherent_ptr<Acc>{pieces}, left.first_piece,
                                                           left.first_piece + count, op);
    if (lane.id() == 0) out[left.segment] = P::finish(op, init, r);
  };
  auto leave_run = [&] {
    fold_if_completed();
    __syncwarp();  // warp 0 has read walk.left
    if (lane.id() == 0) {
      walk.left.segment = -1;
      if (walk.folded > 0) {
        seen = ticket_add_release(q.tickets + walk.run_slot, walk.folded) + walk.folded;
        walk.left = walk.run;
      }
    }
  };
  for (std::int64_t piece = first; piece < last; ++piece) {
    if (threadIdx.x == 0) {
      wait_copies<0>();
      const long_segment& next = walk.ahead[(walk.slot + 1) & 1];
      if (piece >= next.first_piece) {  // the next segment starts
        walk.seg = next;
        copy_ahead(++walk.slot + 1);
      }
      const long_segment& seg = walk.seg;
      const std::int64_t begin = seg.begin + (piece - seg.first_piece) * long_segment_piece;
      walk.begin = walk.end = 0;
      if (seg.segment >= 0 && begin < seg.end)  // else a reservation left unused
        walk.begin = begin, walk.end = begin + long_segment_piece < seg.end ? begin + long_segment_piece : seg.end;
    }
    __syncthreads();
    const std::int64_t begin = walk.begin, end = walk.end;
    if (begin == end) {  // block-uniform
      __syncthreads();   // everyone has read walk before thread 0 writes the next piece's
      continue;
    }
    const auto r = block_fold<BlockThreads, It, Acc>(lane, in, begin, end, op, storage);
    if (lane.warp_id() == 0) {
      if (pieces_of(walk.seg) == 1) {  // the whole segment
        if (lane.id() == 0) out[walk.seg.segment] = P::finish(op, init, r);
      } else {
        if (walk.slot != walk.run_slot) {  // a new segment: the block is done with the previous one
          leave_run();
          __syncwarp();  // warp 0 has read walk.run
          if (lane.id() == 0) walk.run = walk.seg, walk.run_slot = walk.slot, walk.folded = 0;
        }
        if (lane.id() == 0) {
          pieces[piece] = P::value(r);  // pieces are never empty
          ++walk.folded;
        }
      }
      __syncwarp();  // warp 0 has read walk before thread 0 writes the next piece's
    }
  }
  __syncthreads();  // (the compiler may read walk in every thread)
  if (lane.warp_id() == 0) {
    leave_run();
    __syncwarp();
    fold_if_completed();
  }
}

/// Short segments from one offsets array (CSR: end_offsets == begin_offsets + 1), on sm_90 and
/// later, over a pointer: a tile is Threads consecutive segments, one per thread. Thread 0 brings
/// each tile's elements into shared memory with one bulk copy (the tensor memory accelerator),
/// Stages tiles ahead, so that the block's loads never wait for its folds; each thread folds its
/// own segment there. The copies are whole 16-byte vectors, from the boundary at or before a
/// tile's first element to the one at or after its last; only at the ends of the array, where
/// such a boundary lies outside it, do a few elements come from global memory instead. A tile
/// whose elements do not fit a stage is folded by a warp per segment from global memory instead,
/// the segments longer than long_segment_min queued.
/// 4 blocks of 128 threads per SM, each with 2 stages of 24 KiB: the folds are what limits this
/// kernel (dependent shared-memory loads), so it wants warps more than loads in flight (3 stages
/// of 32 KiB, 2 blocks per SM: 64% of copy, measured on the H200).
inline constexpr int staged_segment_threads = 128, staged_segment_stages = 2;
inline constexpr int staged_stage_bytes = 24576;
/// Mean segment length up to which tiles of staged_segment_threads segments are expected to fit
/// a stage of floats (5120 of 6144 elements).
inline constexpr int staged_mean_max = 40;

/// Where a staged tile's elements are: [copied_begin, copied_end) in shared memory (whole 16-byte
/// vectors), or nothing when `fits` is false.
struct staged_span {
  std::int64_t copied_begin, copied_end;
  bool fits;
};

template <int Threads, int Stages, class T, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(Threads)
    staged_offset_segments_kernel(const T* in, std::int64_t n, Out out, std::int64_t segments, OffIt offsets, Op op,
                                  Acc init, queue_ref q) {
  using P = partial<Acc, Op>;
  constexpr int stage_elements = staged_stage_bytes / int(sizeof(T));
  constexpr int V = 16 / int(sizeof(T));  // elements per 16-byte vector
  // Stages buffers of staged_stage_bytes. Its own name: the other kernels' extern __shared__ arrays
  // are 16-byte aligned, and one name with two alignments in a translation unit is a warning.
  extern __shared__ __align__(128) unsigned char stage_bytes[];
  __shared__ std::uint64_t full[Stages];
  __shared__ staged_span spans[Stages];
  allow_next_grid();
  const partial_op<Acc, Op> pop{op};
  cuda_lane lane;
  const std::int64_t tiles = (segments + Threads - 1) / Threads;
  auto tile_of = [&](std::int64_t j) { return std::int64_t(blockIdx.x) + j * gridDim.x; };  // the block's j-th tile
  auto buffer = [&](int stage) { return reinterpret_cast<T*>(stage_bytes + std::size_t(stage) * staged_stage_bytes); };
  // Thread 0: the element range of the block's j-th tile, loaded a tile before it is issued.
  struct bounds {
    std::int64_t first = 0, last = 0;
  };
  auto load_bounds = [&](std::int64_t j) {
    bounds b;
    const std::int64_t tile = tile_of(j);
    if (tile < tiles) {
      const std::int64_t s0 = tile * Threads, s1 = s0 + Threads < segments ? s0 + Threads : segments;
      b.first = static_cast<std::int64_t>(offsets[s0]);
      b.last = static_cast<std::int64_t>(offsets[s1]);
    }
    return b;
  };
  auto issue = [&](std::int64_t j, bounds b) {  // thread 0: the j-th tile into stage j % Stages
    if (tile_of(j) >= tiles) return;
    const int stage = static_cast<int>(j % Stages);
    auto lead = [&](std::int64_t i) {  // elements of in[i]'s 16 bytes before it
      return static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(in + i) % 16) / sizeof(T));
    };
    std::int64_t c0 = b.first - lead(b.first);
    if (c0 < 0) c0 += V;  // `in` itself is not 16-byte aligned: start at its first boundary
    std::int64_t c1 = b.last - lead(b.last);  // the boundary at or before `last`, or the one after
    if (c1 < b.last && c1 + V <= n) c1 += V;    // when it is still inside the array
    if (c1 < c0) c1 = c0;
    const bool fits = b.last - b.first <= stage_elements && c1 - c0 <= stage_elements;
    spans[stage] = staged_span{c0, c1, fits};
    const auto bytes = fits ? static_cast<std::uint32_t>((c1 - c0) * sizeof(T)) : 0u;
    stage_expect(&full[stage], bytes);  // releases spans[stage]
    if (bytes > 0) stage_bulk_copy(buffer(stage), in + c0, bytes, &full[stage]);
  };
  bounds ahead{};
  if (threadIdx.x == 0) {
    for (int s = 0; s < Stages; ++s) stage_barrier_init(&full[s]);
    for (int j = 0; j < Stages; ++j) issue(j, load_bounds(j));
    ahead = load_bounds(Stages);
  }
  __syncthreads();
  // This thread's segment of the block's j-th tile, loaded a tile ahead.
  auto load_own = [&](std::int64_t j) {
    bounds b;
    const std::int64_t s = tile_of(j) * Threads + threadIdx.x;
    if (s < segments) b.first = static_cast<std::int64_t>(offsets[s]), b.last = static_cast<std::int64_t>(offsets[s + 1]);
    return b;
  };
  bounds own = load_own(0);
  for (std::int64_t j = 0; tile_of(j) < tiles; ++j) {
    const int stage = static_cast<int>(j % Stages);
    const std::int64_t s0 = tile_of(j) * Threads, s = s0 + threadIdx.x;
    const bounds mine = own;
    own = load_own(j + 1);
    stage_wait(&full[stage], static_cast<std::uint32_t>((j / Stages) & 1));
    const staged_span span = spans[stage];
    if (span.fits) {
      typename P::type acc = P::empty();
      auto fold_global = [&](std::int64_t from, std::int64_t to) {  // only at the ends of the array
        for (std::int64_t i = from; i < to; ++i) acc = pop(acc, P::of(static_cast<Acc>(in[i])));
      };
      fold_global(mine.first, mine.last < span.copied_begin ? mine.last : span.copied_begin);
      const int lo = static_cast<int>((mine.first > span.copied_begin ? mine.first : span.copied_begin) - span.copied_begin);
      const int hi = static_cast<int>((mine.last < span.copied_end ? mine.last : span.copied_end) - span.copied_begin);
      if (lo < hi) {  // 16 bytes at a time: the first and last vectors masked, those between whole
        const auto* vectors = reinterpret_cast<const vector16<T>*>(buffer(stage));
        const int first_vector = lo / V, last_vector = (hi - 1) / V;
        auto fold_masked = [&](int c) {
          const vector16<T> x = vectors[c];
#pragma unroll
          for (int u = 0; u < V; ++u)
            if (c * V + u >= lo && c * V + u < hi) acc = pop(acc, P::of(static_cast<Acc>(x.v[u])));
        };
        fold_masked(first_vector);
#pragma unroll 2
        for (int c = first_vector + 1; c < last_vector; ++c) {
          const vector16<T> x = vectors[c];
#pragma unroll
          for (int u = 0; u < V; ++u) acc = pop(acc, P::of(static_cast<Acc>(x.v[u])));
        }
        if (last_vector > first_vector) fold_masked(last_vector);
      }
      fold_global(mine.first > span.copied_end ? mine.first : span.copied_end, mine.last);
      if (s < segments) out[s] = P::finish(op, init, acc);
    } else {  // long segments among them: a warp per segment, the longest queued
      const std::int64_t last_segment = s0 + Threads < segments ? s0 + Threads : segments;
      for (int k = 0; k < Threads; k += Threads / 32) {
        const std::int64_t seg = s0 + k + lane.warp_id();
        if (seg >= last_segment) break;  // whole warps
        fold_or_queue(lane, in, out, seg, static_cast<std::int64_t>(offsets[seg]),
                      static_cast<std::int64_t>(offsets[seg + 1]), op, init, q);
      }
    }
    __syncthreads();  // the stage has been read: thread 0 refills it
    if (threadIdx.x == 0) {
      issue(j + Stages, ahead);
      ahead = load_bounds(j + Stages + 1);
    }
  }
  complete_after_previous_grid();  // after the zeroing kernel: the long-segment kernel reads a whole queue
}

/// The group kernel, G chosen by the caller: every segment (fixed lengths, an ordinary launch) or
/// only the short ones (offsets, launched to overlap the long-segment kernel's tail).
template <int G, bool ShortOnly, class It, class Out, class OffIt, class Acc, class Op>
cudaError_t launch_group_offsets(It in, Out out, std::int64_t segments, OffIt b, OffIt e, Op op, Acc init,
                                 cudaStream_t stream) {
  const int blocks = grid_for(segments * G, 256, sm_count() * 8 * 16);
  auto kernel = group_offset_segments_kernel<G, ShortOnly, It, Out, OffIt, Acc, Op>;
  if constexpr (ShortOnly) return launch_overlapped(kernel, blocks, 256, 0, stream, in, out, segments, b, e, op, init);
  kernel<<<blocks, 256, 0, stream>>>(in, out, segments, b, e, op, init);
  return cudaPeekAtLastError();
}

// ---- fixed lengths (the offsets group kernel with computed offsets, or the block kernel) -----

/// Launches direct_segments_kernel when it applies (a 16-byte-aligned pointer, L a power of two
/// up to 16); returns false otherwise.
template <class It, class Out, class Acc, class Op>
bool launch_direct_segments(It in, Out out, std::int64_t segments, std::int64_t length, Op op, Acc init,
                            cudaStream_t stream, cudaError_t& error) {
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    if constexpr (vector_elements<T> > 1 && 16 % vector_elements<T> == 0) {
      if (reinterpret_cast<std::uintptr_t>(in) % 16 != 0) return false;
      constexpr bool out_is_acc = std::is_same_v<Out, Acc*> && vector_elements<Acc> > 1;
      const bool out_aligned = out_is_acc && reinterpret_cast<std::uintptr_t>(&out[0]) % 16 == 0;
      constexpr int threads = 256;
      auto launch = [&](auto l) {
        constexpr int L = decltype(l)::value;
        constexpr int row = vector_elements<T> > L ? vector_elements<T> : L, per_row = row / L;
        constexpr bool vector_out = out_is_acc && (per_row * sizeof(Acc) == 8 || per_row * sizeof(Acc) == 16);
        const int blocks = grid_for(segments / per_row, threads * 4, sm_count() * 8);
        if (vector_out && !out_aligned) {
          direct_segments_kernel<threads, L, false><<<blocks, threads, 0, stream>>>(in, out, segments, op, init);
        } else {
          direct_segments_kernel<threads, L, vector_out><<<blocks, threads, 0, stream>>>(in, out, segments, op, init);
        }
      };
      switch (length) {
        case 1: launch(std::integral_constant<int, 1>{}); break;
        case 2: launch(std::integral_constant<int, 2>{}); break;
        case 4: launch(std::integral_constant<int, 4>{}); break;
        case 8: launch(std::integral_constant<int, 8>{}); break;
        case 16: launch(std::integral_constant<int, 16>{}); break;
        default: return false;
      }
      error = cudaPeekAtLastError();
      return true;
    }
  }
  return false;
}

/// Fixed lengths up to segment_group_max_length: no temporary storage needed.
template <class It, class Out, class Acc, class Op>
cudaError_t launch_short_fixed(It in, Out out, std::int64_t segments, std::int64_t length, Op op, Acc init,
                               cudaStream_t stream) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  const int sms = sm_count();
  if (length == 0) {
    fill_kernel<<<grid_for(segments, 256, sms * 8), 256, 0, stream>>>(out, segments, init);
    return cudaPeekAtLastError();
  }
  if (cudaError_t e; length <= segment_tile_max_length && launch_direct_segments(in, out, segments, length, op, init, stream, e))
    return e;
  if (length <= segment_tile_max_length) {
    constexpr int threads = 256, items = 32;  // tiles of 8192 elements
    const int shared = static_cast<int>(sizeof(T) * (padded(threads * items) + 1));
    auto kernel = tile_segments_kernel<threads, items, It, Out, Acc, Op>;
    if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
        e != cudaSuccess)
      return e;
    const int blocks = grid_for(segments, threads * items / static_cast<int>(length), resident_grid(kernel, threads, shared));
    kernel<<<blocks, threads, shared, stream>>>(in, out, segments, static_cast<int>(length), op, init);
    return cudaPeekAtLastError();
  }
  // The offsets kernel with computed offsets and no queue (every segment is short here).
  const fixed_offsets b{length, 0}, e{length, length};
  if (length <= 32) return launch_group_offsets<4, false>(in, out, segments, b, e, op, init, stream);
  if (length <= 64) return launch_group_offsets<8, false>(in, out, segments, b, e, op, init, stream);
  if (length <= 128) return launch_group_offsets<16, false>(in, out, segments, b, e, op, init, stream);
  return launch_group_offsets<32, false>(in, out, segments, b, e, op, init, stream);
}

template <class It, class Out, class Acc, class Op>
cudaError_t fixed_segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Out out,
                                   std::int64_t segments, std::int64_t length, Op op, Acc init, cudaStream_t stream) {
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::fixed_segmented_reduce: op must be callable as Acc op(Acc, Acc)");
  if (segments < 0 || length < 0) return cudaErrorInvalidValue;
  constexpr int threads = 256;
  auto block_kernel = block_fixed_segments_kernel<threads, It, Out, Acc, Op>;
  const bool block_path = length > segment_group_max_length;
  const int resident = block_path ? resident_grid(block_kernel, threads) : 0;
  const int pieces = block_path ? pieces_for(segments, length, resident) : 1;
  const std::size_t needed = pieces > 1 ? round_up(sizeof(Acc) * std::size_t(segments) * pieces) : 1;
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  if (segments == 0) return cudaSuccess;
  if (!block_path) return launch_short_fixed(in, out, segments, length, op, init, stream);
  Acc* partials = pieces > 1 ? static_cast<Acc*>(temp_storage) : nullptr;
  block_kernel<<<grid_for(segments * pieces, 1, resident), threads, 0, stream>>>(in, out, partials, segments, length,
                                                                                 pieces, op, init);
  if (const cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess || pieces == 1) return e;
  // Fold each segment's pieces in order (pieces <= 4 * SMs <= segment_group_max_length).
  return launch_short_fixed(static_cast<const Acc*>(partials), out, segments, std::int64_t(pieces), op, init, stream);
}

/// Launches staged_offset_segments_kernel when it applies (sm_90, a pointer aligned to its
/// element, one offsets array, elements that tile 16 bytes); returns false otherwise.
template <class It, class Out, class OffIt, class Acc, class Op>
bool launch_staged_offsets(It in, std::int64_t n, Out out, std::int64_t segments, OffIt begin_offsets,
                           OffIt end_offsets, Op op, Acc init, const queue_ref& q, cudaStream_t stream,
                           cudaError_t& error) {
  if constexpr (std::is_pointer_v<OffIt> && std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    if (end_offsets != begin_offsets + 1 || 16 % sizeof(T) != 0 ||
        reinterpret_cast<std::uintptr_t>(in) % sizeof(T) != 0 || device_major() < 9)
      return false;
    constexpr int threads = staged_segment_threads, stages = staged_segment_stages;
    constexpr std::size_t shared = std::size_t(stages) * staged_stage_bytes;
    auto kernel = staged_offset_segments_kernel<threads, stages, T, Out, OffIt, Acc, Op>;
    error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (error == cudaSuccess)
      error = launch_overlapped(kernel, grid_for((segments + threads - 1) / threads, 1, resident_grid(kernel, threads, shared)),
                                threads, shared, stream, in, n, out, segments, begin_offsets, op, init, q);
    return true;
  }
  return false;
}

template <class It, class Out, class OffIt, class Acc, class Op>
cudaError_t segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, Out out,
                             std::int64_t segments, OffIt begin_offsets, OffIt end_offsets, Op op, Acc init,
                             cudaStream_t stream) {
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::segmented_reduce: op must be callable as Acc op(Acc, Acc)");
  if (segments < 0 || n < 0) return cudaErrorInvalidValue;
  // Disjoint segments have at most n / piece long ones and 2n / piece pieces; beyond that (only
  // possible with overlapping segments) a segment is reduced by its group directly.
  std::int64_t most_long = n / long_segment_min + 64;
  if (most_long > segments) most_long = segments;
  if (most_long > queue_slots_max) most_long = queue_slots_max;
  std::int64_t most_pieces = n / long_segment_piece + most_long + 64;
  if (most_pieces > queue_pieces_max) most_pieces = queue_pieces_max;
  const std::size_t queue_bytes = round_up(sizeof(long_queue));
  const std::size_t ticket_bytes = round_up(sizeof(unsigned) * std::size_t(most_long + 1));
  const std::size_t queued_bytes = round_up(sizeof(long_segment) * std::size_t(most_long + 1));
  const std::size_t piece_bytes = round_up(sizeof(Acc) * std::size_t(most_pieces + 1));
  const std::size_t needed = queue_bytes + ticket_bytes + queued_bytes + piece_bytes;
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  if (segments == 0) return cudaSuccess;
  char* t = static_cast<char*>(temp_storage);
  // Without a read before each reservation, the header's fields could wrap only if every segment
  // were long and their pieces added up to 2^40 (see try_queue).
  const bool check_room = segments >= (std::int64_t(1) << 24) ||
                          double(segments) * double(n / long_segment_piece + 1) >= double(std::int64_t(1) << 40);
  const queue_ref q{reinterpret_cast<long_queue*>(t), reinterpret_cast<long_segment*>(t + queue_bytes + ticket_bytes),
                    reinterpret_cast<unsigned*>(t + queue_bytes), most_long, most_pieces, check_room};
  auto* pieces = reinterpret_cast<Acc*>(t + queue_bytes + ticket_bytes + queued_bytes);
  // Each kernel overlaps the tail of the one before (sm_90). The queue is zeroed; then either the
  // staged kernel folds short segments and queues the long ones it meets, and the long-segment
  // kernel folds those; or the long segments are queued first, the long-segment kernel folds
  // them and the group kernel folds the short ones in the SMs it leaves free.
  zero_queue_kernel<<<1, 1, 0, stream>>>(q.queue);
  if (const cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  constexpr int threads = 256;
  auto long_kernel = long_segments_kernel<long_segment_threads, It, Out, Acc, Op>;
  auto fold_long = [&] {
    // One wave of resident blocks: a grid of 8 per SM with only 5 resident (48 registers) left the
    // last 40% of blocks to start after the first ones had done all their pieces (H200).
    return launch_overlapped(long_kernel, resident_grid(long_kernel, long_segment_threads), long_segment_threads, 0,
                             stream, in, out, op, init, q, pieces);
  };
  const std::int64_t mean = n / segments;
  if (cudaError_t e; mean <= staged_mean_max &&
                     launch_staged_offsets(in, n, out, segments, begin_offsets, end_offsets, op, init, q, stream, e)) {
    if (e != cudaSuccess) return e;
    return fold_long();
  }
  auto queue_kernel = queue_long_segments_kernel<It, Out, OffIt, Acc, Op>;
  if (const cudaError_t e = launch_overlapped(queue_kernel, grid_for(segments, threads, resident_grid(queue_kernel, threads)),
                                              threads, 0, stream, in, out, segments, begin_offsets, end_offsets, op,
                                              init, q);
      e != cudaSuccess)
    return e;
  if (const cudaError_t e = fold_long(); e != cudaSuccess) return e;
  if (mean <= 8) return launch_group_offsets<1, true>(in, out, segments, begin_offsets, end_offsets, op, init, stream);
  if (mean <= 24) return launch_group_offsets<4, true>(in, out, segments, begin_offsets, end_offsets, op, init, stream);
  if (mean <= 48) return launch_group_offsets<8, true>(in, out, segments, begin_offsets, end_offsets, op, init, stream);
  if (mean <= 96) return launch_group_offsets<16, true>(in, out, segments, begin_offsets, end_offsets, op, init, stream);
  // Above that the long segments make the mean; the short ones among them are mostly far shorter
  // (power-law lengths: mean 1959, 43 without the long ones). Groups of 2, a segment longer than
  // 64 folded by the whole warp. H200, power law, the whole call: groups of 32, 4, 2, 1: 92.0,
  // 79.7, 78.5, 80.0 us; the warp taking over above 16 lanes' worth instead of 32: 78.9 (2 lanes).
  return launch_group_offsets<2, true>(in, out, segments, begin_offsets, end_offsets, op, init, stream);
}

}  // namespace detail

/// Reduces fixed-length segments: out[s] = op(init, in[s*L], ..., in[s*L + L-1]) for s < segments
/// (L = 0: every out[s] = init). Rows of a row-major matrix are segments of length = columns.
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
template <class It, class Out, class Acc, class Op>
cudaError_t fixed_segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Out out,
                                   std::int64_t segments, std::int64_t segment_length, Op op, Acc init,
                                   cudaStream_t stream = 0) {
  return detail::fixed_segmented_reduce(temp_storage, temp_bytes, in, out, segments, segment_length, op, init, stream);
}

/// Reduces segments [begin_offsets[s], end_offsets[s]) of in[0, n) (CUB's convention; empty
/// segments give init). Offsets are int32 or int64, on the device, valid (0 <= begin <= end <= n);
/// the caller checks untrusted offsets (the CLI does). Long segments are spread over all blocks.
template <class It, class Out, class OffIt, class Acc, class Op>
cudaError_t segmented_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, Out out,
                             std::int64_t segments, OffIt begin_offsets, OffIt end_offsets, Op op, Acc init,
                             cudaStream_t stream = 0) {
  return detail::segmented_reduce(temp_storage, temp_bytes, in, n, out, segments, begin_offsets, end_offsets, op, init,
                                  stream);
}

}  // namespace multireduce::cuda
