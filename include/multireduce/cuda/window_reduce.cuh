// multireduce/cuda/window_reduce.cuh -- sliding-window reduction with any associative operator.
//
// out[i] = op(init, in[i] op in[i+1] op ... op in[i+W-1]) for i in [0, n-W]: NumPy's
// sliding_window_view(x, W).<op>(-1). Operators need no inverse (max and min work), so this is not
// a difference of prefix sums. The method is van Herk / Gil-Werman, blocked: cut the input into
// blocks of B < W; S = suffix folds within each block, P = prefix folds within each block, A = the
// blocks' folds; a window starting in block b and ending in block c is
//     op(S[i], A[b+1] op ... op A[c-1], P[i+W-1])
// (operands in array order, so non-commutative operators work).
//  - W <= 2048, "tile" (window_tile_kernel): a block of 512 threads takes 8192 consecutive inputs,
//    16 per thread in registers (16-byte loads). B is the largest power of two below W, at most 16,
//    so block boundaries are compile-time (no selects per element): S stays in registers, P goes
//    to shared memory. For W <= 32 the middle is nothing or one block; for longer windows it is
//    itself a window over the threads' folds, done the same way with groups of warp lanes (warp
//    shuffles). Windows leave through shared memory as coalesced 16-byte stores. Two barriers per
//    tile. Accumulators wider than 8 bytes get fewer items per thread (and a lower W limit).
//  - 32 < W <= 2048 with 4-byte accumulators and outputs, "stream" (window_stream_kernel): a
//    block walks a contiguous run of tiles of 256 x 16 inputs and each tile writes the windows
//    that end in it, with the suffix folds of the W - 1 positions before it still in a ring in
//    shared memory, so no input is loaded twice and every thread has windows; each thread loads
//    its next tile while it folds this one.
//  - W > 2048, "doubling": windows of 2^k elements are doubled in place over global memory and
//    combined along W's binary digits (2 log2 W elementwise passes; correct for any W, slower).
#pragma once

#include <cstdint>
#include <cstring>

#include "../cuda_lane.cuh"
#include "common.cuh"

namespace multireduce::cuda {
namespace detail {

/// The tile kernel's shape for an accumulator type: Threads x Items consecutive inputs per tile at
/// most, fewer items (and threads) for wide accumulators so that the tile fits in shared memory;
/// none past 64 bytes.
template <class Acc>
struct window_tile_shape {
  static constexpr int threads = sizeof(Acc) <= 16 ? 512 : 256;
  static constexpr int items = sizeof(Acc) <= 8 ? 16 : sizeof(Acc) <= 16 ? 8 : sizeof(Acc) <= 32 ? 4 : sizeof(Acc) <= 64 ? 2 : 0;
  static constexpr int inputs = threads * items;
  /// The longest window of the tile kernel: a quarter of the tile (at most 1/3 of the loads repeat).
  static constexpr std::int64_t max_window = inputs / 4;
};

/// The widest load of a thread's run of Items elements of T: 16 bytes, or the whole run if it is
/// shorter (8 or 4 bytes); 0 when the run cannot be loaded in words.
template <class T, int Items>
inline constexpr int run_vector_bytes = (16 % sizeof(T) != 0) ? 0
                                        : Items * int(sizeof(T)) >= 16 ? 16
                                        : (Items * int(sizeof(T)) == 8 || Items * int(sizeof(T)) == 4) ? Items * int(sizeof(T))
                                                                                                        : 0;
template <int Bytes>
using raw_vector = std::conditional_t<Bytes == 16, uint4, std::conditional_t<Bytes == 8, uint2, unsigned>>;

/// Loads a thread's Items consecutive inputs in[base + first + j] as Acc, in vectors when the
/// input is a suitably aligned pointer and the run is whole; positions at or past `count`
/// (relative to base) get a copy of the last input (no window that is written reads them).
template <int Items, class It, class Acc>
__device__ __forceinline__ void load_items(It in, std::int64_t base, int first, int count, Acc (&x)[Items]) {
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    constexpr int bytes = run_vector_bytes<T, Items>;
    if constexpr (bytes > 0) {
      constexpr int per = bytes / int(sizeof(T));
      using R = raw_vector<bytes>;
      const T* p = in + base + first;
      if (first + Items <= count && reinterpret_cast<std::uintptr_t>(p) % bytes == 0) {
        R v[Items / per];
#pragma unroll
        for (int u = 0; u < Items / per; ++u) v[u] = __ldg(reinterpret_cast<const R*>(p) + u);
#pragma unroll
        for (int u = 0; u < Items / per; ++u) {
          T e[per];
          std::memcpy(e, &v[u], bytes);
#pragma unroll
          for (int k = 0; k < per; ++k) x[u * per + k] = static_cast<Acc>(e[k]);
        }
        return;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = first + j < count ? first + j : count - 1;
    x[j] = static_cast<Acc>(in[base + i]);
  }
}

/// Stores y[j] to out[base + first + j] for first + j < count, one by one (whole tiles of
/// arithmetic outputs leave staged instead, see window_staged).
template <int Items, class Out, class Acc>
__device__ __forceinline__ void store_items(Out out, std::int64_t base, int first, int count, const Acc (&y)[Items]) {
#pragma unroll
  for (int j = 0; j < Items; ++j)
    if (first + j < count) out[base + first + j] = y[j];
}

/// The element type of the tile kernel's output when it is a pointer to an arithmetic type whose
/// runs of Items fill whole 16-byte chunks: then windows leave through shared memory as coalesced
/// 16-byte stores. Otherwise void (each thread stores its own windows).
template <class Out, int Items>
struct window_staged {
  using type = void;
};
template <class T, int Items>
  requires(std::is_arithmetic_v<T> && (Items * sizeof(T)) % 16 == 0)
struct window_staged<T*, Items> {
  using type = T;
};
template <class Out, int Items>
using window_staged_t = typename window_staged<Out, Items>::type;

/// Where 16-byte chunk m of a staged tile lives: an XOR swizzle that keeps both a thread's
/// consecutive chunks and consecutive threads' chunks in distinct banks.
__device__ __forceinline__ int staged_slot(int m) { return m ^ ((m >> 3) & 7); }

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

/// van Herk's block length for window W: the largest power of two below W, at most MaxItems (a
/// thread's items are whole blocks), so that every window ends in a later block than it starts;
/// W = 1 copies.
template <int MaxItems>
inline int window_block_for(std::int64_t window) {
  int block = MaxItems;
  while (block > 1 && block >= window) block /= 2;
  return window == 1 ? MaxItems : block;
}

/// log2 of van Herk's lane groups over the threads' folds for a middle of q - 1 folds: the largest
/// power of two below q - 1, at most a warp (groups are then found with shifts, not divisions).
__device__ __forceinline__ int window_group_shift(int q) {
  int group_shift = 5;
  while (group_shift > 0 && (1 << group_shift) >= q - 1) --group_shift;
  return group_shift;
}

/// Whether the windows need op(init, .): not when init is the identity of an arithmetic Op.
template <class Op, class Acc>
bool window_applies_init(const Acc& init) {
  if constexpr (has_identity<Op, Acc> && std::is_arithmetic_v<Acc>) {
    const Acc identity = Op::template identity<Acc>();
    return std::memcmp(&identity, &init, sizeof(Acc)) != 0;
  }
  return true;
}

/// van Herk's scans over the threads' folds, within groups of 2^group_shift lanes (at most a
/// warp): stores this lane's fold `a` folded with the ones before it in its group at prefix[at],
/// with the ones after it at suffix[at], and (by the group's first lane) the group's fold at
/// group_folds[at >> group_shift]. Every lane of the warp calls it.
template <class Acc, class Op>
__device__ __forceinline__ void store_group_scans(cuda_lane& lane, Acc a, int group_shift, const Op& op, int at,
                                                  Acc* prefix, Acc* suffix, Acc* group_folds) {
  const int group = 1 << group_shift, in_group = lane.id() & (group - 1);
  Acc before = a, after = a;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    if (d >= group) break;
    const Acc up = shuffle_up(lane, before, d, group), down = shuffle_down(lane, after, d, group);
    if (in_group >= d) before = op(up, before);
    if (in_group + d < group) after = op(after, down);
  }
  prefix[at] = before;
  suffix[at] = after;
  if (in_group == 0) group_folds[at >> group_shift] = after;
}

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

/// Shared memory of the streaming kernel (long windows): the suffix folds S of this tile's
/// positions and the `reach` before it (the longest window's) in a ring, padded like the tile
/// kernel's P; the threads' folds A, their prefix and suffix folds within groups of lanes and the
/// groups' folds, for this tile's threads and the reach / Items before them, in rings; and the
/// tile's windows, staged for coalesced stores.
template <class Acc, int Threads, int Items, class Staged>
struct window_stream_storage {
  static constexpr int tile = Threads * Items;
  static constexpr int reach = 2048;                      // positions before a tile that its windows read
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

/// The streaming kernel's shape: blocks of 256 threads with 16 inputs each, 3 per SM, each loading
/// its next tile while it folds the current one. H200, W = 1000, sum/max: 83/83% of copy; 512 x 16
/// at 2 per SM 73/70%, 256 x 16 at 4 per SM without the prefetch 83/79% (docs/results.md).
inline constexpr int window_stream_threads = 256, window_stream_items = 16;
inline constexpr int window_stream_blocks_per_sm = 3;  // the prefetch's 16 more registers: 3 blocks, not 4

/// Whether the streaming kernel serves Acc and Out: when its blocks fit in an SM's shared memory
/// (4-byte accumulators and outputs); wider ones take the tile kernel.
template <class Acc, class Out>
inline constexpr bool window_streams =
    sizeof(window_stream_storage<Acc, window_stream_threads, window_stream_items,
                                 window_staged_t<Out, window_stream_items>>) * window_stream_blocks_per_sm <= 200 * 1024;

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
__global__ void __launch_bounds__(Threads, window_stream_blocks_per_sm)
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
  if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
      e != cudaSuccess)
    return e;
  const bool apply_init = window_applies_init<Op>(init);  // op(identity, x) == x: skip it
  const std::int64_t tiles = (n + Threads * Items - 1) / (Threads * Items);
  const int resident = resident_grid(kernel, Threads, std::size_t(shared));
  const int blocks = static_cast<int>(tiles < resident ? tiles : resident);
  kernel<<<blocks, Threads, shared, stream>>>(in, n, window, out, op, init, apply_init);
  return cudaPeekAtLastError();
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
  if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
      e != cudaSuccess)
    return e;
  const int per_tile = window_outputs_per_tile<Threads, Items>(window);
  const bool apply_init = window_applies_init<Op>(init);  // op(identity, x) == x: skip it
  std::int64_t blocks = (outputs + per_tile - 1) / per_tile;
  const int resident = resident_grid(kernel, Threads, std::size_t(shared));
  if (blocks > resident) blocks = resident;
  kernel<<<static_cast<int>(blocks), Threads, shared, stream>>>(in, n, window, out, op, init, apply_init, per_tile);
  return cudaPeekAtLastError();
}

/// The tile kernel with van Herk's block length for W (see window_block_for).
template <int Threads, int Items, class It, class Out, class Acc, class Op>
cudaError_t launch_window_tiles(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, cudaStream_t stream) {
  constexpr auto at_most = [](int b) { return b < Items ? b : Items; };
  switch (window_block_for<Items>(window)) {
    case 1: return launch_window_tile<Threads, Items, 1>(in, n, window, out, op, init, stream);
    case 2: return launch_window_tile<Threads, Items, at_most(2)>(in, n, window, out, op, init, stream);
    case 4: return launch_window_tile<Threads, Items, at_most(4)>(in, n, window, out, op, init, stream);
    case 8: return launch_window_tile<Threads, Items, at_most(8)>(in, n, window, out, op, init, stream);
    default:
      if constexpr (window_streams<Acc, Out>) {
        constexpr int items = window_stream_items;
        using storage = window_stream_storage<Acc, window_stream_threads, items, window_staged_t<Out, items>>;
        if ((window - 1) / items >= 2 && window - 1 <= storage::reach)
          return launch_window_stream<window_stream_threads, items>(in, n, window, out, op, init, stream);
      }
      return launch_window_tile<Threads, Items, Items>(in, n, window, out, op, init, stream);
  }
}

template <class Acc, class It, class To>
__global__ void window_convert_kernel(It in, std::int64_t n, To to) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = static_cast<Acc>(in[i]);
}

/// to[i] = op(a[i], b[i + shift]) for i < count (a and to may be the same array).
template <class OutA, class Acc, class Op>
__global__ void window_combine_kernel(OutA a, Acc* b, std::int64_t shift, std::int64_t count, OutA to, Op op) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = op(static_cast<Acc>(a[i]), b[i + shift]);
}

template <class Out, class Acc, class Op>
__global__ void window_finish_kernel(Out out, std::int64_t count, Op op, Acc init) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = op(init, static_cast<Acc>(out[i]));
}

template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream) {
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::window_reduce: op must be callable as Acc op(Acc, Acc)");
  if (n < 0 || window < 1) return cudaErrorInvalidValue;
  using shape = window_tile_shape<Acc>;
  const bool tile = shape::items > 0 && window <= shape::max_window;
  const std::size_t needed = tile ? 1 : 2 * round_up(sizeof(Acc) * std::size_t(n));
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  const std::int64_t outputs = n - window + 1;
  if (outputs <= 0) return cudaSuccess;
  if constexpr (shape::items > 0) {
    if (tile) return launch_window_tiles<shape::threads, shape::items>(in, n, window, out, op, init, stream);
  }
  // Doubling: D holds folds of 2^k elements; `out` accumulates W's binary digits from the lowest.
  Acc* d = static_cast<Acc*>(temp_storage);
  Acc* e = reinterpret_cast<Acc*>(static_cast<char*>(temp_storage) + round_up(sizeof(Acc) * std::size_t(n)));
  const int blocks = sm_count() * 8, threads = 256;
  window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(in, n, d);
  std::int64_t covered = 0;  // out[i] holds the fold of in[i, i + covered)
  for (std::int64_t size = 1; size <= window; size *= 2) {
    if (window & size) {
      if (covered == 0) {
        window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(static_cast<const Acc*>(d), outputs, out);
      } else {
        window_combine_kernel<<<blocks, threads, 0, stream>>>(out, d, covered, outputs, out, op);
      }
      covered += size;
    }
    if (size * 2 <= window) {  // D(2^(k+1))[i] = op(D[i], D[i + 2^k]) for the positions still needed
      window_combine_kernel<<<blocks, threads, 0, stream>>>(d, d, size, n - 2 * size + 1, e, op);
      std::swap(d, e);
    }
    if (const cudaError_t err = cudaPeekAtLastError(); err != cudaSuccess) return err;
  }
  window_finish_kernel<<<blocks, threads, 0, stream>>>(out, outputs, op, init);
  return cudaPeekAtLastError();
}

}  // namespace detail

/// Sliding-window reduction: out[i] = op(init, fold of in[i, i+W)) for i in [0, n-W]; writes
/// max(0, n-W+1) outputs. Any W >= 1 and any associative operator (no inverse needed).
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream = 0) {
  return detail::window_reduce(temp_storage, temp_bytes, in, n, window, out, op, init, stream);
}

}  // namespace multireduce::cuda
