// multireduce/cuda/detail/window_reduce/tile_kernel.cuh -- the tile kernel: W <= a quarter of
// a tile, any accumulator up to 64 bytes. Each tile of Threads x Items inputs writes the windows
// that start in it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../../cuda_lane.cuh"
#include "../launch.cuh"
#include "../load.cuh"
#include "common.cuh"

namespace multireduce::cuda::detail {

/// Shared memory of the tile kernel: every thread's prefix folds P for the whole tile (padded one
/// word per 32: a thread's Items consecutive entries, and a stride-Items walk across a warp, are
/// conflict-free), the threads' folds A, van Herk's scans over them within groups of lanes and
/// the groups' folds, and the staged windows. One of each: a tile writes P and A before its first barrier, after every thread has
/// passed the previous tile's last read of them.
template <class Acc, int Threads, int Items, class Staged>
struct window_tile_storage {
  static constexpr int staged_chunks = [] {
    if constexpr (std::is_void_v<Staged>) return 1;
    else return Threads * Items * int(sizeof(Staged)) / 16;
  }();
  Acc prefix[Threads * Items + Threads * Items / 32];
  Acc aggregate[Threads];
  Acc aggregate_prefix[Threads];
  Acc aggregate_suffix[Threads];
  Acc group_aggregate[Threads];
  uint4 staged[staged_chunks];
};

/// One tile: outputs [o0, o0 + per_tile) from inputs [o0, o0 + Threads * Items). Thread t holds
/// inputs [Items t, Items t + Items) in registers (vector loads), cut into blocks of Block (a
/// power of two below W). It turns them into the blocks' suffix folds S; the prefix folds P go to
/// shared memory, and so does its first block's fold. Window i starts in block b and, because
/// Block < W, ends in a later block c:
///     window(i) = S[i]  op  A_{b+1} op ... op A_{c-1}  op  P[i + W - 1]
/// with A the blocks' folds and c = b + q or b + q + 1 (q = (W-1) / Block; the second for
/// offsets in the block from split = Block - (W-1) % Block on). Block < Items only when W <= 2
/// Block, so q = 1: the middle is nothing or the next block's fold, in this thread's registers or
/// the next thread's first. Block = Items allows any q: the middle folds of q-1 and q blocks come
/// from van Herk again over the threads' folds, with groups of lanes (a power of two below q-1, at
/// most 32) scanned by warp shuffles and the groups' folds in shared memory. Block boundaries are
/// compile-time, so there are no selects per element, and every operand is in array order
/// (non-commutative operators work). Two barriers per tile: P and A are ready; P and A are read
/// (and the windows staged for coalesced stores).
template <int Threads, int Items, int Block, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(Threads, Threads <= 1024 / 2 ? 1024 / Threads : 1)
    window_tile_kernel(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, bool apply_init, int per_tile) {
  constexpr int tile_inputs = Threads * Items, blocks_per_thread = Items / Block;
  static_assert(32 % Items == 0 && Items % Block == 0, "a thread's items share one padding word and hold whole blocks");
  using Staged = window_staged_t<Out, Items>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& s = *reinterpret_cast<window_tile_storage<Acc, Threads, Items, Staged>*>(shared_bytes);
  cuda_lane lane;
  const int w = static_cast<int>(window);
  const std::int64_t outputs = n - window + 1;
  const int t = static_cast<int>(threadIdx.x);
  const int first = t * Items;     // this thread's positions in the tile: [first, first + Items)
  const int mine = padded(first);  // where its prefix folds are in shared memory
  const int q = (w - 1) / Block;              // a window starting in block b ends in block b + q ...
  const int split = Block - (w - 1) % Block;  // ... or, from this offset in block b on, in b + q + 1
  // Middles of q-1 > 1 thread folds: van Herk again over the threads' folds, with groups of
  // `group` lanes (a power of two below q-1, at most a warp), scanned with warp shuffles.
  const int group_shift = window_group_shift(q);
  const int last_input = first + w - 1;       // where window `first` ends
  // Long windows: each block takes a contiguous run of tiles, so the W-1 inputs a tile shares with
  // the next are read again from this SM's L1 rather than from L2. Short ones: tiles strided over
  // the grid (measured faster when tiles share next to nothing).
  const std::int64_t tiles = (outputs + per_tile - 1) / per_tile;
  const bool contiguous = q >= 2;
  const std::int64_t run = contiguous ? (tiles + gridDim.x - 1) / gridDim.x : tiles;
  const std::int64_t first_tile = contiguous ? blockIdx.x * run : blockIdx.x, step = contiguous ? 1 : gridDim.x;
  const std::int64_t end_tile = contiguous && first_tile + run < tiles ? first_tile + run : tiles;
  for (std::int64_t tile = first_tile; tile < end_tile; tile += step) {
    const std::int64_t o0 = tile * per_tile;
    const int count = n - o0 < tile_inputs ? static_cast<int>(n - o0) : tile_inputs;
    const int tile_outputs = outputs - o0 < per_tile ? static_cast<int>(outputs - o0) : per_tile;
    Acc x[Items];
    load_items<Items>(in, o0, first, count, x);
    if (w == 1) {  // every window is one element
#pragma unroll
      for (int j = 0; j < Items; ++j)
        if (apply_init) x[j] = op(init, x[j]);
      if (first < tile_outputs) store_items<Items>(out, o0, first, tile_outputs, x);
      continue;
    }
    Acc* prefix = s.prefix;
    // P, left to right, to shared memory (its value at the end of the first block is that block's
    // fold A); then S in place, right to left, by the threads that have windows to write.
    Acc a = x[0];
    {
      Acc p = x[0];
      prefix[mine] = p;
#pragma unroll
      for (int j = 1; j < Items; ++j) {
        prefix[mine + j] = p = j % Block == 0 ? x[j] : op(p, x[j]);
        if (j == Block - 1) a = p;
      }
    }
    if (first < tile_outputs) {
#pragma unroll
      for (int j = Items - 2; j >= 0; --j)
        if ((j + 1) % Block != 0) x[j] = op(x[j], x[j + 1]);
    }
    s.aggregate[t] = a;
    if (Block == Items && q >= 3)  // prefix and suffix folds of A within groups, and the groups' folds
      store_group_scans(lane, a, group_shift, op, t, s.aggregate_prefix, s.aggregate_suffix, s.group_aggregate);
    __syncthreads();
    // The middle folds for this thread's last block: the next q-1 thread folds (none when q == 1)
    // and the next q. (Block < Items only when q == 1.)
    Acc middle = a, middle_long = a;
    if (first < tile_outputs) {
      if (Block == Items && q >= 2) {
        const int from = t + 1, to = t + q - 1;  // fold A[from .. to]
        if (q == 2) {
          middle = s.aggregate[from];
        } else {  // a group suffix, whole groups, a group prefix
          middle = s.aggregate_suffix[from];
          for (int g = (from >> group_shift) + 1; g < (to >> group_shift); ++g) middle = op(middle, s.group_aggregate[g]);
          middle = op(middle, s.aggregate_prefix[to]);
        }
        if (t + q < Threads) middle_long = op(middle, s.aggregate[t + q]);
      } else if (t + 1 < Threads) {
        middle_long = s.aggregate[t + 1];
      }
    }
    // Window first + j = S[j] op middle op P[first + j + W - 1].
    if (first < tile_outputs) {
#pragma unroll
      for (int j = 0; j < Items; ++j) {
        const int b = j / Block, offset = j % Block;
        Acc y = x[j];
        if (offset >= split) y = op(y, b + 1 < blocks_per_thread ? x[(b + 1) * Block] : middle_long);
        else if (Block == Items && q >= 2) y = op(y, middle);
        x[j] = op(y, prefix[padded(last_input + j)]);
      }
      if (apply_init) {
#pragma unroll
        for (int j = 0; j < Items; ++j) x[j] = op(init, x[j]);
      }
    }
    // A whole tile to aligned output leaves as coalesced 16-byte chunks through shared memory.
    bool staged = false;
    if constexpr (!std::is_void_v<Staged>) {
      staged = tile_outputs == per_tile && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
      constexpr int chunks_per_thread = Items * int(sizeof(Staged)) / 16, per_chunk = 16 / int(sizeof(Staged));
      if (staged && first < tile_outputs) {
#pragma unroll
        for (int k = 0; k < chunks_per_thread; ++k) {
          Staged e[per_chunk];
#pragma unroll
          for (int u = 0; u < per_chunk; ++u) e[u] = static_cast<Staged>(x[k * per_chunk + u]);
          std::memcpy(&s.staged[staged_slot(t * chunks_per_thread + k)], e, 16);
        }
      }
    }
    __syncthreads();  // every read of P and A of this tile is done (and the staged chunks written)
    if constexpr (!std::is_void_v<Staged>) {
      if (staged) {
        const int chunks = tile_outputs / (16 / int(sizeof(Staged)));
        uint4* to = reinterpret_cast<uint4*>(out + o0);
        for (int m = t; m < chunks; m += Threads) to[m] = s.staged[staged_slot(m)];
        continue;
      }
    }
    if (first < tile_outputs) store_items<Items>(out, o0, first, tile_outputs, x);
  }
}

/// Outputs per tile for window W: the tile's inputs less W - 1, rounded down to 16 so that every
/// tile starts on a 16-byte boundary of 16-byte-aligned input and output.
template <int Threads, int Items>
inline int window_outputs_per_tile(std::int64_t window) {
  return static_cast<int>((Threads * Items - window + 1) / 16 * 16);
}

/// Launches the tile kernel with van Herk blocks of Block: at most one wave of resident blocks,
/// each looping over tiles.
template <int Threads, int Items, int Block, class It, class Out, class Acc, class Op>
cudaError_t launch_window_tile(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, cudaStream_t stream) {
  const std::int64_t outputs = n - window + 1;
  const int shared = static_cast<int>(sizeof(window_tile_storage<Acc, Threads, Items, window_staged_t<Out, Items>>));
  auto kernel = window_tile_kernel<Threads, Items, Block, It, Out, Acc, Op>;
  if (const cudaError_t e = allow_dynamic_shared(kernel, std::size_t(shared));
      e != cudaSuccess)
    return e;
  const int per_tile = window_outputs_per_tile<Threads, Items>(window);
  const bool apply_init = window_applies_init<Op>(init);  // op(identity, x) == x: skip it
  std::int64_t blocks = (outputs + per_tile - 1) / per_tile;
  const int resident = resident_grid(kernel, Threads, std::size_t(shared));
  if (blocks > resident) blocks = resident;
  return launch(kernel, static_cast<int>(blocks), Threads, shared, stream, in, n, window, out, op, init, apply_init,
                per_tile);
}

}  // namespace multireduce::cuda::detail
