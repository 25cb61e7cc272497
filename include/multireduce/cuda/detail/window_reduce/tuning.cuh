// multireduce/cuda/detail/window_reduce/tuning.cuh -- the window kernels' shapes and the choice
// between them, with the measurement that chose each (GPU, date, command, figure; the runs:
// docs/tuning-log.md).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The window kernels' shapes, chosen on the H200 (sm_90, 132 SMs, CUDA 13.0), 2^28 floats, W = 3 /
/// 32 / 1000, sum and max, against the device-to-device copy ("bench window" is `multireduce bench
/// window` through scripts/device_run.sh; docs/tuning-log.md, "Window reduce", has the runs).
/// Standing: 90 / 91 / 84% (sum), 90 / 91 / 83% (max) of copy (H200, 2026-11-24T10:36Z, bench
/// window, docs/results/h200/window.json).
///  - tile_shape<Acc>: the tile kernel's Threads x Items consecutive inputs per tile. 512 x 16 for
///    4-byte accumulators: 90 / 91% of copy at W = 3 / 32 (H200, 2026-11-21T07:42Z, bench window);
///    1024- and 128-thread blocks were slower (H200, 2026-11-21; no figure recorded); at W = 1000
///    tiles of 1024 x 16 ran at 74 / 73% and of 512 x 32 at 68 / 59% against 80 / 79% (sum / max;
///    H200, 2026-11-21T11:45Z, bench window, each against 512 x 16 in the same process). Wider
///    accumulators: not tuned: fewer items (and threads) so that the tile fits in shared memory,
///    none past 64 bytes (those take the doubling path). max_window: not tuned: a quarter of the
///    tile (at most 1/3 of the loads repeat).
///  - stream_threads = 256, stream_items = 16, stream_blocks_per_sm = 3: the streaming kernel (32 <
///    W <= stream_reach, 4-byte accumulators and outputs), each thread loading its next tile while
///    it folds this one. W = 1000, sum / max, % of copy (H200, 2026-11-23, a probe process of the
///    window shapes, two rounds, outputs bitwise equal to the tile kernel's): 83.5 / 83.1 (kept)
///    against the tile kernel's 80.1 / 79.5; without the prefetch, 512 x 16 at 2 per SM 73.3 /
///    70.2, 256 x 16 at 4 per SM 82.9 / 78.6, 128 x 16 at 6 per SM 80.9 / 77.1; with it, 256 x 16
///    at 2 per SM 83.8 / -, 128 x 16 at 5 per SM 83.7 / -, 512 x 16 at 1 per SM 75.9 / -. The
///    prefetch's 16 more registers leave 3 blocks per SM, not 4. In the bench: 602.9 / 608.1 us, 84
///    / 83% (H200, 2026-11-23T16:50Z, bench window).
///  - stream_reach = 2048: not tuned: the positions before a tile that its windows may read, the
///    longest window the streaming kernel serves + 1 (its ring in shared memory holds a tile and
///    this).
///  - doubling_threads = 256, doubling_blocks_per_sm = 8: not tuned: the elementwise passes past
///    the tile kernel's reach, a fallback for rare, very long windows.
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
