// multireduce/cuda/detail/fixed_segmented_reduce/tuning.cuh -- the fixed-length form's kernel
// choice and shapes, with the measurement that chose each (GPU, date, command, figure; the runs:
// docs/tuning-log.md).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The fixed-length form's kernel choice and shapes, chosen on the H200 (sm_90, 132 SMs, CUDA
/// 13.0), 2^26 floats, L = 1 ... 2^20, against the device-to-device copy of the same run ("bench
/// segmented" is `multireduce bench segmented` through scripts/device_run.sh; docs/tuning-log.md,
/// "Segmented reduce, fixed lengths", has the runs). Standing: 86-99% of copy at every L (H200,
/// 2026-11-23T23:08Z, bench segmented, docs/results/h200/segmented.json).
///  - tile_max_length = 16: L up to this go to the direct kernel (a power of two, aligned input) or
///    the tile kernel. The direct kernel took L = 1 / 2 / 4 / 8 / 16 from 36 / 59 / 62 / 65 / 68%
///    of copy (H200, 2026-11-20, bench segmented) to 90 / 92 / 95 / 94 / 91% (H200,
///    2026-11-21T02:47Z, bench segmented).
///  - group_max_length = 2048: L up to this go to the group kernel, longer ones to the block
///    kernel: L = 2048 at 92-94%, L = 4096 at 93-95% of copy (H200, 2026-11-21, bench segmented,
///    the day's runs). No run with another boundary is recorded.
///  - direct_threads = 256, direct_rows_in_flight = 4, direct_blocks_per_sm = 8: not tuned: each
///    thread loads 4 rows a grid stride apart, all in flight, 2048 threads per SM; not varied on
///    their own since the kernel reached 90-97% of copy (H200, 2026-11-21, bench segmented).
///  - tile_threads = 256, tile_items = 32: not tuned since the direct kernel came: 8192 elements
///    staged per tile, all 32 loads of a thread in flight; a shape from before the direct kernel,
///    which now takes every aligned power-of-two L.
///  - block_threads = 256 (not tuned on its own), min_piece = 4096: a block per segment, the grid
///    the resident blocks; with fewer segments than half of them, each segment is cut into as many
///    pieces (at least 4096 elements) as fill one wave: L = 2^18 ... 2^20 from 85-89% (3 pieces of
///    2^18 left 5.8 blocks per SM) to 93% of copy (H200, 2026-11-21, bench segmented).
///  - group_lanes_for_length: a logical warp of 4 lanes up to 32 elements, 8 up to 64, 16 up to
///    128, a whole warp above; L = 32 / 64 / 128 / 256 at 85-88 / 86-88 / 87-88 / 89% of copy
///    (H200, 2026-11-21, bench segmented, the day's runs). No run with other widths is recorded.
///  - fill_threads = 256, fill_blocks_per_sm = 8: not tuned: L = 0 (every output the init), a
///    grid-stride fill that writes only the outputs.
struct fixed_segmented_reduce_tuning {
  static constexpr int tile_max_length = 16;
  static constexpr std::int64_t group_max_length = 2048, min_piece = 4096;
  static constexpr int direct_threads = 256, direct_rows_in_flight = 4, direct_blocks_per_sm = 8;
  static constexpr int tile_threads = 256, tile_items = 32, block_threads = 256;
  static constexpr int fill_threads = 256, fill_blocks_per_sm = 8;
  static constexpr int group_lanes_for_length(std::int64_t length) {
    return length <= 32 ? 4 : length <= 64 ? 8 : length <= 128 ? 16 : 32;
  }
};

}  // namespace multireduce::cuda::detail
