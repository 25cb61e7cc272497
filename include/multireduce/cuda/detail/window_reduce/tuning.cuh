// multireduce/cuda/detail/window_reduce/tuning.cuh -- the window kernels' shapes and the choice
// between them, with the measurements that chose them (docs/tuning-log.md has the runs).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The window kernels' shapes, chosen on the H200 (sm_90, 132 SMs), 2^28 floats, W = 3 / 32 / 1000,
/// sum and max, against the device-to-device copy (`multireduce bench window`):
///  - tile_shape<Acc>: the tile kernel's Threads x Items consecutive inputs per tile, fewer items
///    (and threads) for wide accumulators so that the tile fits in shared memory, none past 64
///    bytes (those take the doubling path). 512 x 16 for 4-byte accumulators: 90 / 91% of copy at
///    W = 3 / 32; 1024- and 128-thread blocks were slower; at W = 1000 tiles of 1024 x 16 ran at
///    74 / 73% and of 512 x 32 at 68 / 59% against 80 / 79% (sum / max; 2026-11-21). max_window:
///    a quarter of the tile (at most 1/3 of the loads repeat).
///  - stream_threads = 256, stream_items = 16, stream_blocks_per_sm = 3: the streaming kernel
///    (32 < W <= stream_reach, 4-byte accumulators and outputs), each thread loading its next tile
///    while it folds this one. W = 1000, sum / max, % of copy: 83 / 83 (kept) against the tile
///    kernel's 80 / 79; 512 x 16 at 2 per SM 73 / 70; 256 x 16 at 4 per SM without the prefetch
///    83 / 79; 128 x 16 at 5 per SM 84 / -; 512 x 16 at 1 per SM 76 / - (2026-11-23). The
///    prefetch's 16 more registers leave 3 blocks per SM, not 4.
///  - stream_reach = 2048: the positions before a tile that its windows may read, the longest
///    window the streaming kernel serves + 1 (its ring in shared memory holds a tile and this).
///  - doubling_threads = 256, doubling_blocks_per_sm = 8: the elementwise passes past the tile
///    kernel's reach; not tuned, a fallback for rare, very long windows.
struct window_reduce_tuning {
  template <class Acc>
  struct tile_shape {
    static constexpr int threads = sizeof(Acc) <= 16 ? 512 : 256;
    static constexpr int items = sizeof(Acc) <= 8 ? 16 : sizeof(Acc) <= 16 ? 8 : sizeof(Acc) <= 32 ? 4 : sizeof(Acc) <= 64 ? 2 : 0;
    static constexpr int inputs = threads * items;
    static constexpr std::int64_t max_window = inputs / 4;
  };
  static constexpr int stream_threads = 256, stream_items = 16, stream_blocks_per_sm = 3, stream_reach = 2048;
  static constexpr int doubling_threads = 256, doubling_blocks_per_sm = 8;
};

}  // namespace multireduce::cuda::detail
