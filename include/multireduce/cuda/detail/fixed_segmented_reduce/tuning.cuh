// multireduce/cuda/detail/fixed_segmented_reduce/tuning.cuh -- the fixed-length form's kernel
// choice and shapes, with the measurements that chose them (docs/tuning-log.md has the runs).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The fixed-length form's kernel choice and shapes, chosen on the H200 (sm_90, 132 SMs), 2^26
/// floats, L = 1 ... 2^20, against the device-to-device copy (`multireduce bench segmented`: 85-99%
/// of it at every L, 2026-11-21 and 2026-11-23):
///  - tile_max_length = 16: L up to this go to the direct kernel (a power of two, aligned input) or
///    the tile kernel. The direct kernel took L = 1 / 2 / 4 / 8 / 16 from 36 / 59 / 62 / 65 / 68% of
///    copy (2026-11-20) to 90 / 92 / 95 / 94 / 91% (2026-11-21).
///  - group_max_length = 2048: L up to this go to the group kernel, longer ones to the block kernel
///    (L = 2048: 92-94%, L = 4096: 93-95% of copy).
///  - direct_threads = 256, direct_rows_in_flight = 4, direct_blocks_per_sm = 8: each thread loads
///    4 rows a grid stride apart, all in flight, 2048 threads per SM. Not varied on their own
///    since the kernel reached 90-97% of copy.
///  - tile_threads = 256, tile_items = 32: 8192 elements staged per tile, all 32 loads of a thread
///    in flight; its shape from before the direct kernel, which now takes every aligned
///    power-of-two L: kept, not re-tuned.
///  - block_threads = 256, min_piece = 4096: a block per segment, the grid the resident blocks;
///    with fewer segments than half of them, each segment is cut into as many pieces as fill one
///    wave (3 pieces of 2^18, 5.8 blocks per SM: 83-86% of copy; one wave of pieces: 93%,
///    2026-11-21), each at least 4096 elements.
///  - group_lanes_for_length: a logical warp of 4 lanes up to 32 elements, 8 up to 64, 16 up to 128,
///    a whole warp above; L = 32 / 64 / 128 / 256 at 85-88 / 86-88 / 87-88 / 89% of copy.
///  - fill_threads = 256, fill_blocks_per_sm = 8: L = 0 (every output init), a grid-stride fill.
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
