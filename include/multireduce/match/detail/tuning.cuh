// multireduce/match/detail/tuning.cuh -- the GPU matcher's shapes and plans, with the
// measurements that chose them (docs/match.md and docs/tuning-log.md have the runs).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The GPU matcher's shapes and plans, chosen on the H200 (sm_90, 132 SMs), random descriptors,
/// k = 2 (`multireduce bench match`, 2026-11-21; docs/match.md):
///  - popcount_block_threads = 256: 8 warps of 32 queries (groups of 8 lanes, 8 queries each).
///  - tensor_block_threads = 128, tensor_train_tile = 128: 4 warps, each with 16 x m_tiles queries'
///    A fragments in registers; 128 training rows per shared-memory tile, one row per thread,
///    double-buffered (2.65 -> 3.36 T/s at 256 bits, 1.62 -> 1.91 at 512).
///  - tensor_m_tiles: 16-query tiles per warp, 2 when k <= 2 (k > 2: 1, for the registers of the
///    longer lists), 4 for descriptors of up to 512 bits and at least 32768 queries (more MMAs per
///    B fragment: 65,536^2 at 2.32 -> 2.68 T/s with 256 bits, 1.91 -> 2.45 with 512; with few
///    queries the fewer blocks cost more).
///  - popcount_blocks_per_sm = 32, tensor_blocks_per_sm = 8: the blocks a call wants; the popcount
///    kernel gains from many (a short last wave), the tensor-core kernel from fewer, longer ones.
///  - min_slice_rows = 512: training slices, when the queries alone cannot fill the GPU.
///  - whole_wave_fill = 0.95: a lone tensor-core search takes the fewest slices whose blocks fill
///    the resident slots in whole waves to 95% (a mostly empty last wave cost up to a fifth;
///    10,000^2 at 512 bits: 0.81 -> 0.90 T/s).
///  - finish_threads = 256: the finish kernel merges the slices' lists, a thread per query; not
///    tuned, it reads slices x queries x k keys once.
struct knn_tuning {
  static constexpr int popcount_block_threads = 256, tensor_block_threads = 128, tensor_train_tile = 128;
  static constexpr int popcount_blocks_per_sm = 32, tensor_blocks_per_sm = 8, finish_threads = 256;
  static constexpr std::int64_t min_slice_rows = 512;
  static constexpr double whole_wave_fill = 0.95;
  static int tensor_m_tiles(int kcap, int chunks, std::int64_t queries) {
    return kcap > 2 ? 1 : chunks <= 2 && queries >= 32768 ? 4 : 2;
  }
};

}  // namespace multireduce::cuda::detail
