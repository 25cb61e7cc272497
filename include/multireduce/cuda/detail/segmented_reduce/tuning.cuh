// multireduce/cuda/detail/segmented_reduce/tuning.cuh -- the offsets form's shapes and
// thresholds, with the measurement that chose each (GPU, date, command, figure; the runs:
// docs/tuning-log.md).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The offsets form's shapes and thresholds, chosen on the H200 (sm_90, 132 SMs, CUDA 13.0), 2^26
/// floats in uniform lengths 0..64 and power-law lengths up to 2^20, against the device-to-device
/// copy ("bench segmented" is `multireduce bench segmented` through scripts/device_run.sh, the
/// whole call timed; docs/tuning-log.md, "Segmented reduce, offsets", has the runs). Standing:
/// uniform 86%, power law 84% of copy (H200, 2026-11-23T23:08Z, bench segmented,
/// docs/results/h200/segmented.json).
///  - long_segment_min = 2048: longer segments are queued for the long-segment kernel (a block per
///    piece) rather than folded by one group of lanes: power law 117 -> 108 us queueing from 2048
///    instead of 16384, 111 us from 1024 (H200, 2026-11-21, bench segmented, 5e93840).
///  - long_segment_piece = 32768, long_segment_threads = 128: power law, 78.7-78.8 us with pieces
///    of 16384 and 256 threads, 77.5 with 32768 and 256, 78.7 with 16384 and 128, 76.8 with 32768
///    and 128, 93.4 with 65536 and 128 (H200, 2026-11-21, bench segmented, 136d804): fewer, larger
///    pieces drain the blocks' loads less often; smaller blocks balance them.
///  - staged_threads = 128, staged_stages = 2, staged_stage_bytes = 24576 (4 blocks per SM): the
///    staged kernel's folds (dependent shared-memory loads) limit it, so it wants warps more than
///    loads in flight: 3 stages of 32 KiB at 2 blocks per SM 108 us (64% of copy) against 80-81 us
///    (uniform; H200, 2026-11-21, bench segmented, 7143d53). Re-probed (H200, 2026-11-24T13:11Z and
///    13:20Z, a probe of the staged kernel alone on 2^21 uniform segments, 10 rounds of 20
///    launches): this shape 81.50-82.18 / 82.14 us; 3 stages 91.94-92.86 / 92.70; 20 KiB stages at
///    5 per SM 82.82-83.65 / 83.58; 64 threads x 2 x 12 KiB 84.48-84.93 / 84.86; 256 x 2 x 48 KiB
///    80.90-81.54 / 81.34 (within the spread between rounds). Earlier, 7 blocks per SM or 8 vectors
///    in flight: 111 us against 108 (H200, 2026-11-21, bench segmented).
///  - staged_mean_max = 40: not tuned: the mean length up to which tiles of 128 segments are
///    expected to fit a stage of floats (5120 of 6144 elements); longer means take the group
///    kernel.
///  - queue_threads = 256: not tuned: a thread per segment, one round of loads (3.9 us of the
///    power-law call in ncu, H200, 2026-11-21).
///  - group_lanes_for_mean: lanes per short segment in the group kernel from the mean length: up to
///    8 -> 1, 24 -> 4, 48 -> 8, 96 -> 16 (not tuned: no run with other thresholds is recorded).
///    Above 96 the long segments make the mean and the short ones among them are far shorter (power
///    law: mean 1959, 43 without the long ones): groups of 2, the whole warp taking a segment over
///    64 elements. Power law, groups of 32, 8, 4, 2, 1: 92.0, 83.7, 79.7-81.2, 78.5-79.9, 80.0-81.3
///    us (H200, 2026-11-21, bench segmented on three machines, 2841f89).
struct segmented_reduce_tuning {
  static constexpr std::int64_t long_segment_min = 2048, long_segment_piece = 32768;
  static constexpr int long_segment_threads = 128, queue_threads = 256;
  static constexpr int staged_threads = 128, staged_stages = 2, staged_stage_bytes = 24576, staged_mean_max = 40;
  static constexpr int group_lanes_for_mean(std::int64_t mean) {
    return mean <= 8 ? 1 : mean <= 24 ? 4 : mean <= 48 ? 8 : mean <= 96 ? 16 : 2;
  }
};

}  // namespace multireduce::cuda::detail
