// multireduce/cuda/detail/segmented_reduce/kernels.cuh -- the offsets form's kernels: the
// queueing kernel, the long-segment kernel that folds the queued segments' pieces, and the staged
// kernel for short segments from one offsets array (sm_90, bulk copies); the group kernel for the
// other short segments is shared with fixed lengths (segments/folds.cuh).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../../block/block_reduce.hpp"
#include "../../../cuda_lane.cuh"
#include "../launch.cuh"
#include "../load.cuh"
#include "../partial.cuh"
#include "../ptx.cuh"
#include "../ticket.cuh"
#include "../segments/folds.cuh"
#include "queue.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// Offsets: queues every segment longer than long_segment_min (a thread per segment, one round
/// of loads), so that the long-segment kernel can start before the short segments are done. A
/// segment the queue has no room for (only overlapping segments can overflow it) is folded here
/// by the whole warp.
template <class It, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(segmented_reduce_tuning::queue_threads)
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
      warp_fold_segment(lane, in, out, lane.shfl_idx64(s, from, 32), lane.shfl_idx64(begin, from, 32),
                        lane.shfl_idx64(end, from, 32), op, init);
    }
  }
  complete_after_previous_grid();  // after the zeroing kernel, if any: the long-segment kernel reads a whole queue
}

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
  __shared__ unsigned long long header;
  allow_next_grid();         // the short segments' kernel fills the SMs this one leaves
  wait_for_previous_grid();  // the queue is complete
  cuda_lane lane;
  if (threadIdx.x == 0) {  // read the header; the last block to read it sets it back to zero
    header = q.queue->packed;
    if (ticket_add_acq_rel(&q.queue->readers) == gridDim.x - 1) {  // orders every block's read before
      q.queue->packed = 0;
      q.queue->readers = 0;
    }
  }
  __syncthreads();
  const unsigned long long packed = header;
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
    if (left.segment < 0 || lane.shfl_idx(seen, 0, 32) != count) return;
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
      constexpr std::int64_t piece_elements = segmented_reduce_tuning::long_segment_piece;
      const std::int64_t begin = seg.begin + (piece - seg.first_piece) * piece_elements;
      walk.begin = walk.end = 0;
      if (seg.segment >= 0 && begin < seg.end)  // else a reservation left unused
        walk.begin = begin, walk.end = begin + piece_elements < seg.end ? begin + piece_elements : seg.end;
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
/// Shape: segmented_reduce_tuning::staged_*.

/// Where a staged tile's elements are: [copied_begin, copied_end) in shared memory (whole 16-byte
/// vectors), or nothing when `fits` is false.
struct staged_span {
  std::int64_t copied_begin, copied_end;
  bool fits;
};

/// Unchecked offsets: with Checked the kernel takes offsets nobody has checked. It
/// marks there (atomicMin) the smallest s whose offset breaks the rules (o[0] < 0, o[s] < o[s-1],
/// o[segments] > n) and reads only inside the input whatever they say: every offset it uses is
/// clamped to [0, n] and every segment's end to at least its begin. The outputs of bad offsets
/// are meaningless; the caller reads the mark afterwards and throws them away.
template <int Threads, int Stages, int StageBytes, bool Checked, class T, class Out, class OffIt, class Acc, class Op>
__global__ void __launch_bounds__(Threads)
    staged_offset_segments_kernel(const T* in, std::int64_t n, Out out, std::int64_t segments, OffIt offsets, Op op,
                                  Acc init, queue_ref q, unsigned long long* bad_offset) {
  using P = partial<Acc, Op>;
  constexpr int stage_size = StageBytes;
  constexpr int stage_elements = stage_size / int(sizeof(T));
  constexpr int V = 16 / int(sizeof(T));  // elements per 16-byte vector
  // Stages buffers of stage_size bytes. Its own name: the other kernels' extern __shared__ arrays
  // are 16-byte aligned, and one name with two alignments in a translation unit is a warning.
  extern __shared__ __align__(128) unsigned char stage_bytes[];
  __shared__ std::uint64_t full[Stages];
  __shared__ staged_span spans[Stages];
  allow_next_grid();
  const partial_op<Acc, Op> pop{op};
  cuda_lane lane;
  const std::int64_t tiles = (segments + Threads - 1) / Threads;
  auto tile_of = [&](std::int64_t j) { return std::int64_t(blockIdx.x) + j * gridDim.x; };  // the block's j-th tile
  auto buffer = [&](int stage) { return reinterpret_cast<T*>(stage_bytes + std::size_t(stage) * stage_size); };
  // Thread 0: the element range of the block's j-th tile, loaded a tile before it is issued.
  struct bounds {
    std::int64_t first = 0, last = 0;
  };
  auto clamped = [&](std::int64_t o, std::int64_t lo) { return o < lo ? lo : o > n ? n : o; };  // unchecked offsets
  auto load_bounds = [&](std::int64_t j) {
    bounds b;
    const std::int64_t tile = tile_of(j);
    if (tile < tiles) {
      const std::int64_t s0 = tile * Threads, s1 = s0 + Threads < segments ? s0 + Threads : segments;
      b.first = static_cast<std::int64_t>(offsets[s0]);
      b.last = static_cast<std::int64_t>(offsets[s1]);
      if constexpr (Checked) b.first = clamped(b.first, 0), b.last = clamped(b.last, b.first);
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
    if (s < segments) {
      b.first = static_cast<std::int64_t>(offsets[s]), b.last = static_cast<std::int64_t>(offsets[s + 1]);
      if constexpr (Checked) {  // this thread checks o[s + 1] (and thread 0 of the first tile o[0])
        const bool bad_first = s == 0 && b.first < 0;
        if (bad_first || b.last < b.first || (s + 1 == segments && b.last > n))
          atomicMin(bad_offset, static_cast<unsigned long long>(bad_first ? 0 : s + 1));
        b.first = clamped(b.first, 0), b.last = clamped(b.last, b.first);
      }
    }
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
        std::int64_t begin = static_cast<std::int64_t>(offsets[seg]), end = static_cast<std::int64_t>(offsets[seg + 1]);
        if constexpr (Checked) begin = clamped(begin, 0), end = clamped(end, begin);
        fold_or_queue(lane, in, out, seg, begin, end, op, init, q);
      }
    }
    __syncthreads();  // the stage has been read: thread 0 refills it
    if (threadIdx.x == 0) {
      issue(j + Stages, ahead);
      ahead = load_bounds(j + Stages + 1);
    }
  }
  complete_after_previous_grid();  // after the zeroing kernel, if any: the long-segment kernel reads a whole queue
}

/// Whether staged_offset_segments_kernel applies: sm_90 or later, pointers, one offsets array,
/// elements that tile 16 bytes, the input aligned to its element.
template <class It, class OffIt>
bool staged_offsets_apply(It in, OffIt begin_offsets, OffIt end_offsets) {
  if constexpr (std::is_pointer_v<OffIt> && std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    return end_offsets == begin_offsets + 1 && 16 % sizeof(T) == 0 &&
           reinterpret_cast<std::uintptr_t>(in) % sizeof(T) == 0 && device_major() >= 9;
  } else {
    return false;
  }
}

/// Launches staged_offset_segments_kernel when it applies (staged_offsets_apply); returns false
/// otherwise. bad_offset: see the kernel (null: the offsets have been checked). overlapped: an
/// overlapped launch (after the queue's zeroing kernel), else an ordinary one (launch_overlapped_if).
template <class It, class Out, class OffIt, class Acc, class Op>
bool launch_staged_offsets(It in, std::int64_t n, Out out, std::int64_t segments, OffIt begin_offsets,
                           OffIt end_offsets, Op op, Acc init, const queue_ref& q, cudaStream_t stream,
                           unsigned long long* bad_offset, bool overlapped, cudaError_t& error) {
  if constexpr (std::is_pointer_v<OffIt> && std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    if (!staged_offsets_apply(in, begin_offsets, end_offsets)) return false;
    constexpr int threads = segmented_reduce_tuning::staged_threads, stages = segmented_reduce_tuning::staged_stages;
    constexpr int stage_size = segmented_reduce_tuning::staged_stage_bytes;
    constexpr std::size_t shared = std::size_t(stages) * stage_size;
    auto go = [&](auto kernel) {
      error = allow_dynamic_shared(kernel, shared);
      if (error != cudaSuccess) return;
      error = launch_overlapped_if(overlapped, kernel,
                                   grid_for((segments + threads - 1) / threads, 1, resident_grid(kernel, threads, shared)),
                                   threads, shared, stream, in, n, out, segments, begin_offsets, op, init, q, bad_offset);
    };
    if (bad_offset != nullptr) go(staged_offset_segments_kernel<threads, stages, stage_size, true, T, Out, OffIt, Acc, Op>);
    else go(staged_offset_segments_kernel<threads, stages, stage_size, false, T, Out, OffIt, Acc, Op>);
    return true;
  }
  return false;
}

}  // namespace multireduce::cuda::detail
