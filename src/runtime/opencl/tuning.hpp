// runtime/opencl/tuning.hpp -- the shapes of the OpenCL backend's kernels, one struct per
// algorithm, each value with what chose it. Figures: `multireduce bench opencl` through NVIDIA's
// OpenCL on an H200 (nvidia-h200 kind), 2026-11-27 (docs/opencl.md, the tuning log's OpenCL
// section). Values marked "not swept" were set once from the CUDA backend's shapes and measured
// only as they stand.
#pragma once

#include <cstdint>

namespace multireduce::runtime::opencl {

/// Segments (fixed length, offsets, an axis' rows): segments_by_warp (WIDTH segments a warp, the
/// multi-reduction) or segments_by_group (one work-group a segment).
struct segments_tuning {
  /// Logical warps per work-group of segments_by_warp: 4 (128 work-items at width 32), the CUDA
  /// backend's fixed-segment block. Not swept; segmented sums of uniform 0..64 run at 19.8% of the
  /// CUDA backend with it, and the cause is not found (tuning log).
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

/// Sliding windows: window_tile, or the doubling kernels where the tile's local memory would not
/// hold tile + W - 1 inputs.
struct window_tuning {
  /// Windows per work-item (CHUNK): each work-item keeps this many suffix folds in registers; 16 as
  /// the CUDA tile kernel's items per thread. Not swept; W = 1000 runs at 32.0% of the CUDA backend.
  static constexpr int chunk = 16;
  /// Work-items per work-group, the largest of these whose local memory fits (256 x 16 = 4096
  /// windows a tile, so W = 1000 re-reads a fifth of its inputs).
  static constexpr int groups[] = {256, 128, 64, 32};
  static constexpr int group = 256;  ///< the doubling kernels (elementwise)
};

/// Statistics: statistics_parts, the states merged on the host. As whole_tuning (69.7% of the
/// CUDA backend on 2^28 floats, bound by the float64 sums); not swept.
struct statistics_tuning {
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
