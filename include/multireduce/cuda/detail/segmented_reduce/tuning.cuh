// multireduce/cuda/detail/segmented_reduce/tuning.cuh -- the offsets form's shapes and
// thresholds, with the measurements that chose them (docs/tuning-log.md has the runs).
#pragma once

#include <cstdint>

namespace multireduce::cuda::detail {

/// The offsets form's shapes and thresholds, chosen on the H200 (sm_90, 132 SMs), 2^26 floats in
/// uniform lengths 0..64 and power-law lengths up to 2^20, against the device-to-device copy
/// (`multireduce bench segmented`, 2026-11-21):
///  - long_segment_min = 2048: longer segments are queued for the long-segment kernel (a block per
///    piece) rather than folded by one group of lanes; queueing from 1024 or 4096: no better.
///  - long_segment_piece = 32768, long_segment_threads = 128: power law, the whole call, 78.7 us
///    with pieces of 16384 and 256 threads, 77.5 with 32768 and 256, 78.7 with 16384 and 128,
///    76.8 with 32768 and 128, 93.4 with 65536 and 128: fewer, larger pieces drain the blocks'
///    loads less often; smaller blocks balance them.
///  - staged_threads = 128, staged_stages = 2, staged_stage_bytes = 24576 (4 blocks per SM): the
///    staged kernel's folds (dependent shared-memory loads) limit it, so it wants warps more than
///    loads in flight: 3 stages of 32 KiB at 2 blocks per SM ran at 64% of copy against 84-86%
///    (uniform 0..64); 7 blocks per SM or 8 vectors in flight: no better.
///  - staged_mean_max = 40: mean lengths up to which tiles of 128 segments are expected to fit a
///    stage of floats (5120 of 6144 elements); longer means take the group kernel.
///  - queue_threads = 256: a thread per segment, one round of loads (3.9 us of the power-law call
///    in ncu).
///  - group_lanes_for_mean: lanes per short segment in the group kernel from the mean length:
///    up to 8 -> 1, 24 -> 4, 48 -> 8, 96 -> 16. Above 96 the long segments make the mean and the
///    short ones among them are far shorter (power law: mean 1959, 43 without the long ones):
///    groups of 2, the whole warp taking a segment over 64 elements. Power law, the whole call,
///    groups of 32, 8, 4, 2, 1: 92.0, 83.7, 79.7-81.2, 78.5-79.9, 80.0-81.3 us.
struct segmented_reduce_tuning {
  static constexpr std::int64_t long_segment_min = 2048, long_segment_piece = 32768;
  static constexpr int long_segment_threads = 128, queue_threads = 256;
  static constexpr int staged_threads = 128, staged_stages = 2, staged_stage_bytes = 24576, staged_mean_max = 40;
  static constexpr int group_lanes_for_mean(std::int64_t mean) {
    return mean <= 8 ? 1 : mean <= 24 ? 4 : mean <= 48 ? 8 : mean <= 96 ? 16 : 2;
  }
};

}  // namespace multireduce::cuda::detail
