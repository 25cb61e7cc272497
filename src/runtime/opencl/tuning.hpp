// runtime/opencl/tuning.hpp -- the shapes of the OpenCL backend's kernels, one struct per
// algorithm, each value with what chose it. Figures: `multireduce bench opencl` through NVIDIA's
// OpenCL on an H200 (nvidia-h200 kind), 2026-11-27 (docs/opencl.md, the tuning log's OpenCL
// section). Values marked "not swept" were set once from the CUDA backend's shapes and measured
// only as they stand.
#pragma once

#include <cstdint>

namespace multireduce::runtime::opencl {

/// Segments (fixed length, offsets, an axis' rows): segments_staged (short ones: a work-item a
/// segment, the tile's elements staged through local memory), segments_by_warp (WIDTH segments a
/// warp, the multi-reduction, from global memory) or segments_by_group (one work-group a segment).
struct segments_tuning {
  /// Mean lengths up to 5/6 of a work-item's share of the stage take segments_staged: 40 floats, the
  /// CUDA backend's staged kernel's (tiles of 128 segments then fit the 6144 floats of a stage), 20
  /// 8-byte elements. Not swept. Segmented sums of uniform 0..64
  /// (2^28 floats, H200): segments_staged 0.334 ms, 93.6% of the CUDA backend; segments_by_warp
  /// took 1.58 ms (254 registers), a one-tile multi-reduction from local memory 2.08 ms (128).
  static constexpr std::int64_t staged_fill_numerator = 5, staged_fill_denominator = 6;
  /// segments_staged: 128 work-items (segments a tile), 24 KB of staged elements a tile (6144
  /// floats, 12 vectors a work-item), 8 work-groups a compute unit walking the tiles: the CUDA
  /// backend's staged shape (128 threads, 24 KB stages). Not swept.
  static constexpr int staged_group = 128;
  static constexpr std::uint64_t staged_tile_bytes = 24576;
  static constexpr int staged_groups_per_compute_unit = 8;
  /// In a tile too long to stage, segments of up to this many elements are folded by their own
  /// work-item from global memory, longer ones by the whole work-group. Not swept.
  static constexpr std::int64_t staged_alone = 64;
  /// Logical warps per work-group of segments_by_warp: 4 (128 work-items at width 32), the CUDA
  /// backend's fixed-segment block. Not swept.
  static constexpr int warps = 4;
  /// Segments averaging this many elements or more take a work-group each: at 1024 a warp per
  /// segment leaves too few warps in flight (a segment's 32 lanes then loop 32 times and more). Not
  /// swept.
  static constexpr std::int64_t group_length = 1024;
  /// A longest segment of this many elements or more (offsets) also sends the job to one
  /// work-group a segment, so one long segment does not hold a warp while the others finish. Not
  /// swept.
  static constexpr std::int64_t longest_for_warps = std::int64_t{1} << 16;
  /// Work-items of segments_by_group and parts_by_group: 256, the usual memory-bound block; the
  /// whole reduce of 2^28 floats runs at 95.0% of the CUDA backend with it.
  static constexpr int group = 256;
};

/// The whole array: parts_by_group, then the host folds the parts.
struct whole_tuning {
  /// Parts per compute unit: 8, 1056 work-groups of 256 on the H200's 132 SMs (95.0% of the CUDA
  /// backend's reduce of 2^28 floats). Not swept.
  static constexpr int parts_per_compute_unit = 8;
  /// No part smaller than this (small arrays take fewer work-groups, less to fold on the host). Not
  /// swept.
  static constexpr std::int64_t min_part = 16384;
};

/// An axis that is not the last: columns. Fewer outputs than this split the rows into parts,
/// folded on the host in order, so that a few long columns still fill the device. Not swept (no
/// bench row).
struct columns_tuning {
  static constexpr std::int64_t outputs_to_fill = std::int64_t{1} << 15;
  static constexpr int group = 256;
};

/// Sliding windows: window_stream (W >= 2 CHUNK + 1), window_tile, or the doubling kernels where
/// neither one's local memory would hold the W - 1 inputs a tile's windows reach back.
struct window_tuning {
  /// Windows per work-item (CHUNK): each work-item keeps this many inputs and folds in registers; 16
  /// as the CUDA tile kernel's items per thread. Not swept.
  static constexpr int chunk = 16;
  /// window_stream (W >= 2 CHUNK + 1, its rings in local memory): work-items per work-group (tiles of
  /// 128 x 16 positions) and work-groups a compute unit, each walking a contiguous run of tiles.
  /// W = 1000 on 2^28 floats, H200, each against the CUDA backend in the same call (2026-11-27):
  /// with the middles as van Herk scans and outputs stored 4 at a time (NVIDIA's compiler gives it
  /// 123 registers, so 4 work-groups of 128 are resident whatever the count asked): 128 x 8 0.693
  /// ms (87.3%), 256 x 4 0.693 (87.5%), 128 x 6 0.733 (82.6%), 256 x 3 0.739 (81.7%); the same
  /// stored one output a work-item at a time 0.772 (78.7%). Before the scans (the q - 1 chunk
  /// folds of each middle read one by one): 128 x 8 0.810 ms (75.7%), 256 x 4 0.837 (73.3%); with
  /// folds of 4, 8 or 16 chunks in a third ring (a third barrier a tile) 0.763, 0.774 and 0.798 ms;
  /// before the chunk folds were kept twice (each middle then wrapped its ring index): 128 x 4
  /// 1.157, 128 x 6 1.116, 128 x 8 1.080, 256 x 3 1.089, 256 x 4 1.071 ms, and window_tile 1.766
  /// ms. H100, 128 x 8: 0.807 ms against the CUDA backend's 0.799 (99.0%).
  static constexpr int stream_group = 128;
  static constexpr int stream_groups_per_compute_unit = 8;
  /// Fewer work-groups where runs would be short: a run takes at least 4 times the tiles it folds
  /// first to reach back W - 1 positions (long windows over short arrays; a CPU's large local
  /// memory takes windows as long as the array). Not swept; at W = 1000 on 2^28 floats it leaves
  /// the 8 a compute unit.
  static constexpr std::int64_t stream_run_per_before = 4;
  /// window_tile (W up to 2 CHUNK, or rings too long for the stream): work-items per
  /// work-group, the largest of these whose local memory fits: 128 (2048 windows a tile) first. W =
  /// 1000 on 2^28 floats, H200: 1.730 ms at 128 against 1.850 at 256 and 2.311 at 64 (H100: 1.82
  /// against 1.95 at 256).
  static constexpr int groups[] = {128, 64, 32};
  static constexpr int group = 256;  ///< the doubling kernels (elementwise)
};

/// Statistics: statistics_parts, the states merged on the host.
struct statistics_tuning {
  /// Vectors of 4 each work-item loads before folding any: 4. 2^28 floats on the H200 (speed of
  /// the CUDA backend's statistics, same call): 1 vector 68.9%, 2 84.9%, 4 92.4%; the double-
  /// precision folds otherwise leave memory idle.
  static constexpr int vectors_in_flight = 4;
  /// As whole_tuning; 16 parts a compute unit instead of 8 was slower (4 vectors: 84.6% against
  /// 92.4%).
  static constexpr int group = 256;
  static constexpr int parts_per_compute_unit = 8;
  static constexpr std::int64_t min_part = 16384;
};

/// The k-NN search: 128 queries a work-group, the training rows through local memory 256 at a time.
/// Not swept (no bar: the CUDA backend's tensor-core matcher is the fast one).
struct knn_tuning {
  static constexpr int group = 128;
  static constexpr std::int64_t rows = 256;
};

}  // namespace multireduce::runtime::opencl
