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
// Offsets (begin_offsets[s], end_offsets[s]):
//  - one offsets array (end_offsets == begin_offsets + 1, CSR) with a mean length up to 64,
//    "staged": a block of 128 threads takes 128 consecutive segments, stages all their elements
//    in shared memory (16-byte loads from the aligned boundary before the first, the next
//    block's offsets loading meanwhile) and each thread folds its own segment there; a block
//    whose segments span more than 8192 elements takes a warp per segment instead (queueing the
//    long ones as below);
//  - otherwise every segment up to 2048 elements is reduced by a group of G lanes, G chosen from
//    the mean segment length; longer segments are queued instead (one atomicAdd each);
//  - queued segments are cut into pieces of up to 16384 elements, a block per piece, spread over
//    all blocks (load balance for skewed lengths); the last block to finish a segment folds its
//    pieces in order.
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
inline constexpr std::int64_t long_segment_piece = 16384;
/// Offsets: segments longer than this are queued for the long-segment kernel (a block per piece)
/// rather than folded by one group of lanes.
inline constexpr std::int64_t long_segment_min = 2048;


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
        if (g < head) acc = pop(acc, P::of(static_cast<Acc>(in[begin + g])));
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
struct long_segment {
  std::int64_t segment, begin, end;
  std::int64_t first_piece;
};

/// Queue header: count of segments (high 32 bits) and of pieces (low 32 bits), in one word so
/// that first_piece grows with the queue position.
struct long_queue {
  unsigned long long packed;
};

/// Appends a long segment unless the queue is full (then the caller reduces it itself). One
/// atomicAdd reserves the slot and the pieces (a compare-and-swap loop here made many queueing
/// warps retry one another: measured on the H200). A reservation past either capacity is left
/// unused: its slot, if it exists, is marked with segment -1, and the long-segment kernel skips
/// pieces that no written slot owns.
__device__ inline bool try_queue(long_queue* queue, long_segment* queued, std::int64_t capacity,
                                 std::int64_t piece_capacity, std::int64_t s, std::int64_t begin, std::int64_t end) {
  const auto pieces = static_cast<unsigned long long>((end - begin + long_segment_piece - 1) / long_segment_piece);
  const unsigned long long old = atomicAdd(&queue->packed, (1ull << 32) + pieces);
  const auto slot = static_cast<std::int64_t>(old >> 32), first_piece = static_cast<std::int64_t>(old & 0xffffffffull);
  if (slot >= capacity) return false;
  if (first_piece + static_cast<std::int64_t>(pieces) > piece_capacity) {
    queued[slot] = long_segment{-1, 0, 0, first_piece};
    return false;
  }
  queued[slot] = long_segment{s, begin, end, first_piece};
  return true;
}

/// A group of G lanes reduces segment s = [begin, end) into out[s], or queues it for the
/// long-segment kernel when it is longer than long_segment_min. valid: s is a segment (groups
/// past the last one still take part in the shuffles).
template <int G, class It, class Out, class Acc, class Op>
__device__ __forceinline__ void fold_or_queue(cuda_lane& lane, It in, Out out, std::int64_t s, bool valid,
                                              std::int64_t begin, std::int64_t end, const Op& op, const Acc& init,
                                              long_queue* queue, long_segment* queued, std::int64_t capacity,
                                              std::int64_t piece_capacity) {
  const bool leader = (lane.id() & (G - 1)) == 0;
  int queued_here = 0;
  if (valid && capacity > 0 && end - begin > long_segment_min && leader)
    queued_here = try_queue(queue, queued, capacity, piece_capacity, s, begin, end);
  const bool is_long = __shfl_sync(0xffffffffu, queued_here, 0, G) != 0;
  const auto r = group_fold<G, It, Acc>(lane, in, begin, is_long ? begin : end, op);
  if (valid && !is_long && leader) out[s] = partial<Acc, Op>::finish(op, init, r);
}

template <int G, class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(256)
    group_offset_segments_kernel(It in, Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets,
                                 Op op, Acc init, long_queue* queue, long_segment* queued, std::int64_t capacity,
                                 std::int64_t piece_capacity) {
  cuda_lane lane;
  const std::int64_t group = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  const std::int64_t groups = std::int64_t(gridDim.x) * blockDim.x / G;
  const std::int64_t warp_first = (std::int64_t(blockIdx.x) * blockDim.x + (threadIdx.x & ~31u)) / G;
  for (std::int64_t base = warp_first; base < segments; base += groups) {
    const std::int64_t s = base + (group - warp_first);
    std::int64_t begin = 0, end = 0;
    if (s < segments) begin = static_cast<std::int64_t>(begin_offsets[s]), end = static_cast<std::int64_t>(end_offsets[s]);
    fold_or_queue<G>(lane, in, out, s, s < segments, begin, end, op, init, queue, queued, capacity, piece_capacity);
  }
}

template <int BlockThreads, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    long_segments_kernel(It in, Out out, Op op, Acc init, const long_queue* queue, const long_segment* queued,
                         std::int64_t capacity, std::int64_t piece_capacity, unsigned* tickets, Acc* pieces) {
  using P = partial<Acc, Op>;
  __shared__ block_reduce_storage<typename P::type, BlockThreads> storage;
  __shared__ bool is_last;
  cuda_lane lane;
  const unsigned long long packed = queue->packed;
  const int count = static_cast<int>(min(static_cast<long long>(packed >> 32), static_cast<long long>(capacity)));
  const std::int64_t total = min(static_cast<std::int64_t>(packed & 0xffffffffull), piece_capacity);
  for (std::int64_t piece = blockIdx.x; piece < total; piece += gridDim.x) {
    int lo = 0, hi = count - 1;  // the last queued segment with first_piece <= piece
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (queued[mid].first_piece <= piece) lo = mid;
      else hi = mid - 1;
    }
    const long_segment seg = queued[lo];
    const std::int64_t k = piece - seg.first_piece;
    const std::int64_t piece_count = (seg.end - seg.begin + long_segment_piece - 1) / long_segment_piece;
    if (seg.segment < 0 || k >= piece_count)
      continue;  // a reservation left unused (block-uniform: every thread read the same slot)
    const std::int64_t begin = seg.begin + k * long_segment_piece;
    const std::int64_t end = begin + long_segment_piece < seg.end ? begin + long_segment_piece : seg.end;
    const auto r = block_fold<BlockThreads, It, Acc>(lane, in, begin, end, op, storage);
    if (threadIdx.x == 0) {
      pieces[piece] = P::value(r);  // pieces are never empty
      is_last = ticket_add_acq_rel(tickets + lo) == piece_count - 1;  // release and acquire
    }
    __syncthreads();
    if (is_last && threadIdx.x == 0) {
      Acc folded = init;
      for (std::int64_t j = 0; j < piece_count; ++j) folded = op(folded, load_coherent(pieces + seg.first_piece + j));
      out[seg.segment] = folded;
    }
    __syncthreads();
  }
}

/// Short segments from one offsets array (CSR: end_offsets == begin_offsets + 1): a block takes
/// Threads consecutive segments, one per thread, stages all their elements (up to
/// staged_segment_elements) in shared memory with coalesced loads, 4 in flight per thread, and
/// each thread folds its own segment there. A block whose segments span more falls back to a warp
/// per segment from global memory, queueing those longer than long_segment_min.
inline constexpr int staged_segment_threads = 128;
template <class T>
inline constexpr int staged_segment_elements = int(32768 / sizeof(T)) < 8192 ? int(32768 / sizeof(T)) : 8192;

/// The offsets a block of staged_offset_segments_kernel needs for segments s0 .. s0+Threads-1.
struct staged_tile {
  std::int64_t first, last, begin, end;  // the block's element range; this thread's segment
};
template <int Threads, class OffIt>
__device__ __forceinline__ staged_tile load_staged_tile(OffIt offsets, std::int64_t segments, std::int64_t s0) {
  staged_tile t{0, 0, 0, 0};
  if (s0 >= segments) return t;
  const std::int64_t s = s0 + threadIdx.x, last_segment = s0 + Threads < segments ? s0 + Threads : segments;
  t.first = static_cast<std::int64_t>(offsets[s0]);
  t.last = static_cast<std::int64_t>(offsets[last_segment]);
  t.begin = t.end = t.first;
  if (s < segments) t.begin = static_cast<std::int64_t>(offsets[s]), t.end = static_cast<std::int64_t>(offsets[s + 1]);
  return t;
}

template <int Threads, class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(Threads)
    staged_offset_segments_kernel(It in, Out out, std::int64_t segments, OffIt offsets, Op op, Acc init,
                                  long_queue* queue, long_segment* queued, std::int64_t capacity,
                                  std::int64_t piece_capacity) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  using P = partial<Acc, Op>;
  constexpr int tile = staged_segment_elements<T>;
  constexpr int V = std::is_pointer_v<It> ? vector_elements<T> : 1, vectors_in_flight = 4;
  __shared__ __align__(16) T values[tile];
  const partial_op<Acc, Op> pop{op};
  cuda_lane lane;
  const std::int64_t stride = std::int64_t(gridDim.x) * Threads;
  staged_tile next = load_staged_tile<Threads>(offsets, segments, std::int64_t(blockIdx.x) * Threads);
  for (std::int64_t s0 = std::int64_t(blockIdx.x) * Threads; s0 < segments; s0 += stride) {
    const staged_tile t = next;
    const std::int64_t s = s0 + threadIdx.x;
    // Stage from the 16-byte boundary at or before `first` (when that lies inside the array), so
    // whole vectors load; values[i] is element origin + i.
    std::int64_t lead = 0;
    if constexpr (V > 1) {
      lead = static_cast<std::int64_t>((reinterpret_cast<std::uintptr_t>(in + t.first) % 16) / sizeof(T));
      if (lead > t.first) lead = 0;
    }
    const std::int64_t origin = t.first - lead, count = t.last - origin;
    if (count <= tile) {  // the block's choice: stage, then a thread per segment
      int whole = 0;  // whole vectors staged
      if constexpr (V > 1) {
        if (reinterpret_cast<std::uintptr_t>(in + origin) % 16 == 0) whole = static_cast<int>(count / V);
        const auto* from = reinterpret_cast<const vector16<T>*>(in + origin);
        auto* to = reinterpret_cast<vector16<T>*>(values);
        for (int c = 0; c < whole; c += Threads * vectors_in_flight) {
          vector16<T> staged[vectors_in_flight];
#pragma unroll
          for (int k = 0; k < vectors_in_flight; ++k) {
            const int i = c + k * Threads + static_cast<int>(threadIdx.x);
            if (i < whole) staged[k] = load_vector(from + i);
          }
#pragma unroll
          for (int k = 0; k < vectors_in_flight; ++k) {
            const int i = c + k * Threads + static_cast<int>(threadIdx.x);
            if (i < whole) to[i] = staged[k];
          }
        }
      }
      for (int i = whole * V + static_cast<int>(threadIdx.x); i < count; i += Threads) values[i] = in[origin + i];
      next = load_staged_tile<Threads>(offsets, segments, s0 + stride);  // in flight during the fold
      __syncthreads();
      typename P::type acc = P::empty();
      for (int i = static_cast<int>(t.begin - origin); i < static_cast<int>(t.end - origin); ++i)
        acc = pop(acc, P::of(static_cast<Acc>(values[i])));
      if (s < segments) out[s] = P::finish(op, init, acc);
      __syncthreads();
    } else {  // long segments among them: a warp per segment, the longest queued
      next = load_staged_tile<Threads>(offsets, segments, s0 + stride);
      const std::int64_t last_segment = s0 + Threads < segments ? s0 + Threads : segments;
      for (int k = 0; k < Threads; k += Threads / 32) {
        const std::int64_t seg = s0 + k + lane.warp_id();
        if (seg >= last_segment) break;  // whole warps
        fold_or_queue<32>(lane, in, out, seg, true, static_cast<std::int64_t>(offsets[seg]),
                          static_cast<std::int64_t>(offsets[seg + 1]), op, init, queue, queued, capacity, piece_capacity);
      }
    }
  }
}

template <int G, class It, class Out, class OffIt, class Acc, class Op>
cudaError_t launch_group_offsets(It in, Out out, std::int64_t segments, OffIt b, OffIt e, Op op, Acc init,
                                 long_queue* queue, long_segment* queued, std::int64_t capacity,
                                 std::int64_t piece_capacity, cudaStream_t stream) {
  const int blocks = grid_for(segments * G, 256, sm_count() * 8 * 16);
  group_offset_segments_kernel<G><<<blocks, 256, 0, stream>>>(in, out, segments, b, e, op, init, queue, queued,
                                                               capacity, piece_capacity);
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
  if (length <= 32) return launch_group_offsets<4>(in, out, segments, b, e, op, init, nullptr, nullptr, 0, 0, stream);
  if (length <= 64) return launch_group_offsets<8>(in, out, segments, b, e, op, init, nullptr, nullptr, 0, 0, stream);
  if (length <= 128) return launch_group_offsets<16>(in, out, segments, b, e, op, init, nullptr, nullptr, 0, 0, stream);
  return launch_group_offsets<32>(in, out, segments, b, e, op, init, nullptr, nullptr, 0, 0, stream);
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
  const std::int64_t most_pieces = n / long_segment_piece + most_long + 64;
  const std::size_t queue_bytes = round_up(sizeof(long_queue));
  const std::size_t ticket_bytes_total = round_up(sizeof(unsigned) * std::size_t(most_long + 1));
  const std::size_t queued_bytes = round_up(sizeof(long_segment) * std::size_t(most_long + 1));
  const std::size_t piece_bytes = round_up(sizeof(Acc) * std::size_t(most_pieces + 1));
  const std::size_t needed = queue_bytes + ticket_bytes_total + queued_bytes + piece_bytes;
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  if (segments == 0) return cudaSuccess;
  char* t = static_cast<char*>(temp_storage);
  auto* queue = reinterpret_cast<long_queue*>(t);
  auto* tickets = reinterpret_cast<unsigned*>(t + queue_bytes);
  auto* queued = reinterpret_cast<long_segment*>(t + queue_bytes + ticket_bytes_total);
  auto* pieces = reinterpret_cast<Acc*>(t + queue_bytes + ticket_bytes_total + queued_bytes);
  if (const cudaError_t e = cudaMemsetAsync(t, 0, queue_bytes + ticket_bytes_total, stream); e != cudaSuccess)
    return e;
  const std::int64_t mean = n / segments;
  cudaError_t e;
  bool one_array = false;
  if constexpr (std::is_pointer_v<OffIt>) one_array = end_offsets == begin_offsets + 1;
  if (one_array && mean <= 64) {  // short segments in one array: staged through shared memory
    constexpr int threads = staged_segment_threads;
    staged_offset_segments_kernel<threads><<<grid_for(segments, threads, sm_count() * 16), threads, 0, stream>>>(
        in, out, segments, begin_offsets, op, init, queue, queued, most_long, most_pieces);
    e = cudaPeekAtLastError();
  } else if (mean <= 8) e = launch_group_offsets<1>(in, out, segments, begin_offsets, end_offsets, op, init, queue, queued, most_long, most_pieces, stream);
  else if (mean <= 24) e = launch_group_offsets<4>(in, out, segments, begin_offsets, end_offsets, op, init, queue, queued, most_long, most_pieces, stream);
  else if (mean <= 48) e = launch_group_offsets<8>(in, out, segments, begin_offsets, end_offsets, op, init, queue, queued, most_long, most_pieces, stream);
  else if (mean <= 96) e = launch_group_offsets<16>(in, out, segments, begin_offsets, end_offsets, op, init, queue, queued, most_long, most_pieces, stream);
  else e = launch_group_offsets<32>(in, out, segments, begin_offsets, end_offsets, op, init, queue, queued, most_long, most_pieces, stream);
  if (e != cudaSuccess) return e;
  constexpr int threads = 256;
  // One wave of resident blocks: a grid of 8 per SM with only 5 resident (48 registers) left the
  // last 40% of blocks to start after the first ones had done all their pieces (H200).
  auto long_kernel = long_segments_kernel<threads, It, Out, Acc, Op>;
  long_kernel<<<resident_grid(long_kernel, threads), threads, 0, stream>>>(in, out, op, init, queue, queued, most_long,
                                                                           most_pieces, tickets, pieces);
  return cudaPeekAtLastError();
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
