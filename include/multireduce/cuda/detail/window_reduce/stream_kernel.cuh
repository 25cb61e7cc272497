// multireduce/cuda/detail/window_reduce/stream_kernel.cuh -- the streaming kernel: 32 < W <=
// stream_reach with 4-byte accumulators and outputs. A block walks a contiguous run of tiles and
// each tile writes the windows that end in it, so no input is loaded twice.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../../cuda_lane.cuh"
#include "../launch.cuh"
#include "../load.cuh"
#include "common.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// Shared memory of the streaming kernel (long windows): the suffix folds S of this tile's
/// positions and the `reach` before it (the longest window's) in a ring, padded like the tile
/// kernel's P; the threads' folds A, their prefix and suffix folds within groups of lanes and the
/// groups' folds, for this tile's threads and the reach / Items before them, in rings; and the
/// tile's windows, staged for coalesced stores.
template <class Acc, int Threads, int Items, class Staged>
struct window_stream_storage {
  static constexpr int tile = Threads * Items;
  static constexpr int reach = window_reduce_tuning::stream_reach;  // positions before a tile that its windows read
  static constexpr int ring = tile + reach;               // positions
  static constexpr int block_ring = Threads + reach / Items;  // threads' folds
  using staged_type = std::conditional_t<std::is_void_v<Staged>, char, Staged>;
  Acc suffix[ring + ring / 32];
  Acc aggregate[block_ring];
  Acc aggregate_prefix[block_ring];
  Acc aggregate_suffix[block_ring];
  Acc group_aggregate[block_ring];
  staged_type staged[std::is_void_v<Staged> ? 1 : tile + tile / 32];
};

/// Whether the streaming kernel serves Acc and Out: when its blocks fit in an SM's shared memory
/// (4-byte accumulators and outputs); wider ones take the tile kernel.
template <class Acc, class Out>
inline constexpr bool window_streams =
    sizeof(window_stream_storage<Acc, window_reduce_tuning::stream_threads, window_reduce_tuning::stream_items,
                                 window_staged_t<Out, window_reduce_tuning::stream_items>>) *
        window_reduce_tuning::stream_blocks_per_sm <=
    200 * 1024;

/// Long windows (Block = Items, W - 1 >= 2 Items, W - 1 <= reach), streamed: a block
/// walks a contiguous run of tiles and each tile writes the windows that END in it, so a tile's
/// inputs are loaded once (the tile kernel reloads the W - 1 inputs two tiles share, and 1/8 of
/// its threads have no windows at W = 1000). Thread t holds inputs [Items t, Items t + Items) of
/// the tile in registers and turns them into their prefix folds P (kept) and suffix folds S (to a
/// ring in shared memory that still holds the `reach` positions before the tile). A window ending at
/// position e of thread block c starts in block c - q or c - q - 1 (q = (W - 1) / Items):
///     window(e) = S[e - W + 1]  op  A[c-q(-1)+1 .. c-1]  op  P[e]
/// and the two middles of each thread are van Herk again over the threads' folds A, with groups of
/// lanes scanned by warp shuffles, their folds in rings too. A run's first tile is preceded by the
/// tile before it, folded only for its rings. A thread loads its inputs of the next tile while it
/// folds this one. Two barriers per tile: S and A are written; they are read (and the
/// windows staged).
template <int Threads, int Items, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(Threads, window_reduce_tuning::stream_blocks_per_sm)
    window_stream_kernel(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, bool apply_init) {
  using Staged = window_staged_t<Out, Items>;
  using storage = window_stream_storage<Acc, Threads, Items, Staged>;
  constexpr int tile = storage::tile, ring = storage::ring, block_ring = storage::block_ring;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& s = *reinterpret_cast<storage*>(shared_bytes);
  cuda_lane lane;
  const int w = static_cast<int>(window);
  const std::int64_t outputs = n - window + 1;
  const int t = static_cast<int>(threadIdx.x);
  // A window ending at offset j of block c starts in block c - q (j >= r) or c - q - 1 (j < r).
  const int q = (w - 1) / Items, r = (w - 1) % Items;
  const int group_shift = window_group_shift(q);
  const int group = 1 << group_shift;
  const std::int64_t tiles = (n + tile - 1) / tile;  // block b walks tiles [b tiles / grid, (b + 1) tiles / grid)
  const std::int64_t first_tile = blockIdx.x * tiles / gridDim.x, end_tile = (blockIdx.x + 1) * tiles / gridDim.x;
  if (first_tile >= end_tile) return;
  // Ring places: position o0 + i of tile o0 sits at base + i (mod ring), thread fold k of the
  // tile at block_base + k (mod block_ring). Bases move by a tile each time (ring = tile + reach).
  auto wrap = [](int i, int size) { return i < 0 ? i + size : i >= size ? i - size : i; };
  auto load_tile = [&](std::int64_t o0, Acc (&x)[Items]) {
    load_items<Items>(in, o0, t * Items, n - o0 < tile ? static_cast<int>(n - o0) : tile, x);
  };
  // S and A of the tile at o0 (its inputs in x, its ring bases) into the rings; P left in x.
  auto fold_into_rings = [&](int base, int block_base, Acc (&x)[Items]) {
    const int mine = wrap(base + t * Items, ring);  // a thread's run never straddles the ring's end
    Acc suffix = x[Items - 1];
    s.suffix[padded(mine + Items - 1)] = suffix;
#pragma unroll
    for (int j = Items - 2; j >= 0; --j) s.suffix[padded(mine + j)] = suffix = op(x[j], suffix);
#pragma unroll
    for (int j = 1; j < Items; ++j) x[j] = op(x[j - 1], x[j]);
    const Acc a = x[Items - 1];
    const int k = wrap(block_base + t, block_ring);
    s.aggregate[k] = a;
    store_group_scans(lane, a, group_shift, op, k, s.aggregate_prefix, s.aggregate_suffix, s.group_aggregate);
  };
  int base = static_cast<int>((first_tile * tile) % ring);
  int block_base = static_cast<int>((first_tile * Threads) % block_ring);
  Acc x[Items], next[Items];
  if (first_tile > 0) {  // the tile before the run: only the S and A of its last `reach` positions are read
    load_tile((first_tile - 1) * tile, x);
    fold_into_rings(wrap(base - tile, ring), wrap(block_base - Threads, block_ring), x);
    __syncthreads();  // its ring places are overwritten by the first tile's writes below
  }
  load_tile(first_tile * tile, next);
  for (std::int64_t tile_index = first_tile; tile_index < end_tile; ++tile_index) {
    const std::int64_t o0 = tile_index * tile;
    // This tile's inputs came in while the last one was folded; the next one's come in now.
#pragma unroll
    for (int j = 0; j < Items; ++j) x[j] = next[j];
    if (tile_index + 1 < end_tile) load_tile(o0 + tile, next);
    fold_into_rings(base, block_base, x);
    __syncthreads();
    // Windows ending at o0 + t * Items + j, for j with W - 1 <= that position < n.
    const std::int64_t first_end = o0 + t * Items;
    const bool has_windows = first_end + Items - 1 >= w - 1 && first_end < n;
    if (has_windows) {
      // The middles of this thread's windows: folds of threads (relative to this one) -q+1 .. -1
      // (short) and -q .. -1 (long), read through the rings.
      auto at = [&](int relative) { return wrap(block_base + t + relative, block_ring); };
      Acc middle;
      if (q == 2) {
        middle = s.aggregate[at(-1)];
      } else {  // a group suffix, whole groups, a group prefix
        const int from = at(-q + 1), to = at(-1);
        middle = s.aggregate_suffix[from];
        const int groups_between = ((t - 1 + Threads) >> group_shift) - ((t - q + 1 + Threads) >> group_shift) - 1;
        const int from_group = from >> group_shift << group_shift;  // where from's group starts in the ring
        for (int g = 1; g <= groups_between; ++g)
          middle = op(middle, s.group_aggregate[wrap(from_group + g * group, block_ring) >> group_shift]);
        middle = op(middle, s.aggregate_prefix[to]);
      }
      const Acc middle_long = op(s.aggregate[at(-q)], middle);
      const int start = wrap(base + t * Items - (w - 1), ring);  // where S of window j = 0 is
#pragma unroll
      for (int j = 0; j < Items; ++j) {
        int at_start = start + j;
        at_start = at_start >= ring ? at_start - ring : at_start;
        Acc y = op(s.suffix[padded(at_start)], j >= r ? middle : middle_long);
        y = op(y, x[j]);
        x[j] = apply_init ? op(init, y) : y;
      }
      if constexpr (!std::is_void_v<Staged>) {
#pragma unroll
        for (int j = 0; j < Items; ++j) s.staged[padded(t * Items + j)] = static_cast<Staged>(x[j]);
      } else {
#pragma unroll
        for (int j = 0; j < Items; ++j) {
          const std::int64_t e = first_end + j;
          if (e >= w - 1 && e < n) out[e - (w - 1)] = x[j];
        }
      }
    }
    __syncthreads();  // every read of the rings for this tile is done; the windows are staged
    if constexpr (!std::is_void_v<Staged>) {
      // Outputs [lo, hi) of this tile are staged at i - (o0 - W + 1); 16-byte chunks where the
      // output is aligned, single elements at the two ends.
      constexpr int per = 16 / int(sizeof(Staged));
      const std::int64_t shift = o0 - (w - 1);
      const std::int64_t lo = shift > 0 ? shift : 0, hi = shift + tile < outputs ? shift + tile : outputs;
      const int skew = static_cast<int>((reinterpret_cast<std::uintptr_t>(out) / sizeof(Staged)) % per);
      std::int64_t a0 = lo + (per - (lo + skew) % per) % per, a1 = hi - (hi + skew) % per;
      if (a1 < a0) a0 = a1 = hi;
      const int edge = t < per ? t : t - per;  // threads 0 .. 2 per - 1 take the ends
      const std::int64_t single = t < per ? lo + edge : a1 + edge;
      if (t < 2 * per && single < (t < per ? a0 : hi)) out[single] = s.staged[padded(static_cast<int>(single - shift))];
      const int chunks = static_cast<int>((a1 - a0) / per);
      for (int m = t; m < chunks; m += Threads) {
        const int from = static_cast<int>(a0 - shift) + m * per;
        Staged e[per];
#pragma unroll
        for (int u = 0; u < per; ++u) e[u] = s.staged[padded(from + u)];
        uint4 v;
        std::memcpy(&v, e, 16);
        *reinterpret_cast<uint4*>(out + a0 + std::int64_t(m) * per) = v;
      }
    }
    base = wrap(base + tile, ring);
    block_base = wrap(block_base + Threads, block_ring);
  }
}

/// Launches the streaming kernel: one wave of resident blocks, each walking a contiguous run.
template <int Threads, int Items, class It, class Out, class Acc, class Op>
cudaError_t launch_window_stream(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, cudaStream_t stream) {
  const int shared = static_cast<int>(sizeof(window_stream_storage<Acc, Threads, Items, window_staged_t<Out, Items>>));
  auto kernel = window_stream_kernel<Threads, Items, It, Out, Acc, Op>;
  if (const cudaError_t e = allow_dynamic_shared(kernel, std::size_t(shared));
      e != cudaSuccess)
    return e;
  const bool apply_init = window_applies_init<Op>(init);  // op(identity, x) == x: skip it
  const std::int64_t tiles = (n + Threads * Items - 1) / (Threads * Items);
  const int resident = resident_grid(kernel, Threads, std::size_t(shared));
  const int blocks = static_cast<int>(tiles < resident ? tiles : resident);
  return launch(kernel, blocks, Threads, shared, stream, in, n, window, out, op, init, apply_init);
}

}  // namespace multireduce::cuda::detail
