// multireduce/cuda/detail/statistics/tuning.cuh -- the statistics kernel's shape, with the
// measurements that chose it (docs/tuning-log.md has the runs).
#pragma once

namespace multireduce::cuda::detail {

/// The statistics kernel's shape, chosen on the H200 (sm_90, 132 SMs) with 2^28 floats against one
/// plain sum of the same array. The kernel is bound by its double-precision work (ncu: FP64 pipe
/// 46% busy, 70% of DRAM bandwidth), so it wants its loads to overlap that work:
///  - vectors_in_flight = 4: a thread folds groups of 4 16-byte vectors while the next group loads
///    (two groups in registers): 259.7 us = 0.91x a sum, against 264.4 us = 0.89x with 6 vectors
///    loaded, then folded (H200, 2026-11-23, one process); groups of 2, 3 or 6: 0.82-0.90x.
///  - blocks_per_sm = 3 (80 registers): 3 blocks instead of 2 with more vectors in flight (94
///    registers) took it from 0.88x to 0.89-0.90x (H200, 2026-11-21); 2 to 6 per SM with the
///    prefetched loop: at most 0.91x, at 3 (H200, 2026-11-23).
///  - block_threads = 256: 128 to 512 threads with the prefetched loop gave 0.82-0.91x, 256 the
///    best (H200, 2026-11-23).
struct statistics_tuning {
  static constexpr int block_threads = 256, blocks_per_sm = 3, vectors_in_flight = 4;
};

}  // namespace multireduce::cuda::detail
