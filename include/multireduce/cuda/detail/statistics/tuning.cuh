// multireduce/cuda/detail/statistics/tuning.cuh -- the statistics kernel's shape, with the
// measurement that chose each value (GPU, date, command, figure; docs/tuning-log.md has the runs).
#pragma once

namespace multireduce::cuda::detail {

/// The statistics kernel's shape, chosen on the H200 (sm_90, 132 SMs, CUDA 13.0) with 2^28 floats
/// against one plain sum of the same array ("bench stats" is `multireduce bench stats` through
/// scripts/device_run.sh; a "probe" a stand-alone program running the kernel's shapes in one
/// process; docs/tuning-log.md, "Statistics", has the runs). The kernel is bound by its
/// double-precision work (ncu: FP64 pipe 46% busy, 70% of DRAM bandwidth), so it wants its loads to
/// overlap that work:
///  - vectors_in_flight = 4: a thread folds groups of 4 16-byte vectors while the next group loads
///    (two groups in registers): 259.7 / 259.6 us = 0.911x a sum, against 264.4 / 264.9 us = 0.894x
///    / 0.893x with 6 vectors loaded, then folded (H200, 2026-11-23T16:13Z, probe, two rounds in
///    one process). Other groups, same probe: 3 at 3 blocks per SM 0.910x / 0.908x, 6 at 2 per SM
///    0.907x / 0.910x, 2 at 4 per SM 0.857x / 0.856x. Standing: 259.6 us = 0.91x our sum (H200,
///    2026-11-23T23:07Z, bench stats, docs/results/h200/stats.json).
///  - blocks_per_sm = 3 (80 registers): 3 blocks with 6 vectors in flight instead of 2 with 8 (94
///    registers) took 272-276 us (0.87-0.88x) to 264.8 and 266.0 us (0.89x, 0.91x; H200,
///    2026-11-21, bench stats). With the prefetched loop (H200, 2026-11-23T16:13Z, the probe above,
///    two rounds): groups of 4 at 2 per SM 0.894x / 0.896x, groups of 3 at 4 per SM 0.824x /
///    0.825x.
///  - block_threads = 256: with the prefetched loop, 512 threads at 2 per SM 0.877x / 0.876x and
///    128 at 6 per SM 0.880x / 0.881x against 0.911x for 256 at 3 (H200, 2026-11-23T16:13Z, the
///    probe).
struct statistics_tuning {
  static constexpr int block_threads = 256, blocks_per_sm = 3, vectors_in_flight = 4;
};

}  // namespace multireduce::cuda::detail
