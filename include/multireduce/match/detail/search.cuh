// multireduce/match/detail/search.cuh -- what the GPU matcher's kernels share: packed (distance,
// index) keys and the k-smallest list, the searches of one launch (a table in the kernel
// parameters) and where a block works.
#pragma once

#include <cstdint>

#include "../../cuda_lane.cuh"
#include "../match.hpp"

namespace multireduce::cuda {

/// The widest descriptors the GPU matcher takes, in bytes (the CPU matcher takes any width).
inline constexpr int match_max_bytes = 128;

namespace detail {

inline constexpr std::uint64_t empty_key = ~0ull;
/// Above every distance (at most 1024 bits): the threshold of a list that is not full yet.
inline constexpr std::int32_t no_limit = 1 << 16;
/// The popcount given to the padding rows past the training set's end: never near anything.
inline constexpr std::int32_t padding_popc = 1 << 24;

/// A (distance, index) pair as one ordered 64-bit key.
__device__ __forceinline__ std::uint64_t match_key(std::int32_t distance, std::int32_t index) {
  return (std::uint64_t(std::uint32_t(distance)) << 32) | std::uint32_t(index);
}

/// The K smallest keys, sorted ascending (empty_key fills).
template <int K>
struct key_list {
  std::uint64_t key[K];
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int j = 0; j < K; ++j) key[j] = empty_key;
  }
  /// Inserts `x` if it is smaller than the largest kept key.
  __device__ __forceinline__ void insert(std::uint64_t x) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::uint64_t y = key[j];
      const bool smaller = x < y;
      key[j] = smaller ? x : y;
      x = smaller ? y : x;
    }
  }
  /// The distance a new pair must beat (strictly) to enter: the largest kept distance.
  __device__ __forceinline__ std::int32_t threshold() const {
    return key[K - 1] == empty_key ? no_limit : static_cast<std::int32_t>(key[K - 1] >> 32);
  }
  /// Merges the lists of the lanes `mask` apart (xor) into every one of them.
  __device__ __forceinline__ void merge_lanes(cuda_lane& lane, int mask) {
    std::uint64_t other[K];
#pragma unroll
    for (int j = 0; j < K; ++j) other[j] = lane.shfl_xor64(key[j], mask, 32);
#pragma unroll
    for (int j = 0; j < K; ++j) insert(other[j]);
  }
};

/// Loads 32-bit word `w` of row `r` (zero past the row's words or the set's rows).
__device__ __forceinline__ std::uint32_t descriptor_word(const std::uint32_t* rows, std::int64_t count, int words,
                                                         std::int64_t r, int w) {
  return r < count && w < words ? __ldg(rows + r * words + w) : 0u;
}

/// The mma.sync m16n8k256 A fragment (the wgmma one too, per warp) of 256-bit chunks 0..C-1 for
/// query rows r0 and r0 + 8 (lane: t = lane % 4; words t and t + 4 of each chunk), and the two
/// rows' popcounts summed over the four lanes of the group.
template <int C>
__device__ __forceinline__ void load_query_fragments(cuda_lane& lane, const std::uint32_t* rows, std::int64_t count,
                                                     int words, std::int64_t r0, int t, std::uint32_t (&a)[C][4],
                                                     std::int32_t (&popc)[2]) {
  int p0 = 0, p1 = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    a[c][0] = descriptor_word(rows, count, words, r0, c * 8 + t);
    a[c][1] = descriptor_word(rows, count, words, r0 + 8, c * 8 + t);
    a[c][2] = descriptor_word(rows, count, words, r0, c * 8 + t + 4);
    a[c][3] = descriptor_word(rows, count, words, r0 + 8, c * 8 + t + 4);
    p0 += __popc(a[c][0]) + __popc(a[c][2]);
    p1 += __popc(a[c][1]) + __popc(a[c][3]);
  }
  // The lane's word shuffle, not the typed shuffle_xor: that one's copy through a word array
  // compiles away, yet it changed the optimizer's choices elsewhere in knn_wgmma_kernel<1, 8, 4>
  // (another form of locate_block's index), code that the kernel's tuning was measured with.
  const auto add_from = [&](int x, int lane_mask) {
    return x + static_cast<int>(lane.shfl_xor(static_cast<std::uint32_t>(x), lane_mask, 32));
  };
  p0 = add_from(p0, 1), p1 = add_from(p1, 1);
  p0 = add_from(p0, 2), p1 = add_from(p1, 2);
  popc[0] = p0, popc[1] = p1;
}

/// One search of a launch: a query set against a training set (device rows of 32-bit words; the
/// counts fit int32), planned as query_blocks x slices blocks from first_block on.
struct knn_problem {
  const std::uint32_t* query;
  const std::uint32_t* train;
  std::uint64_t* partials;  // slices x queries x Kcap keys
  std::int32_t* idx;
  std::int32_t* dist;
  std::int32_t queries, trains;
  std::int32_t first_train_index;  // added to every training index (a piece of a larger set)
  std::int32_t query_blocks, slices;
  std::int32_t first_block;
  std::int32_t merge;  // the finish merges with the lists already in idx/dist
  /// Null: the slices cut the training rows evenly. Else slice s is rows [slice_bounds[3s],
  /// slice_bounds[3s + 1]) of `train` (device memory), and slice_bounds[3s + 2] is its first tile
  /// in `tiles` (the wgmma kernel's): the collection matcher's slices are its training images, so
  /// each slice's partial lists are one image pair's k-NN lists.
  const std::int64_t* slice_bounds;
  /// The wgmma kernel's training slices as tiles (wgmma_tile_bytes each; slice s from tile
  /// wgmma_first_tile on), written by its tiling kernel.
  std::uint8_t* tiles;
};

/// The problems of one launch, a kernel parameter (under the portable 4 KB: 46 x 88 bytes).
inline constexpr int knn_launch_capacity = 46;
struct knn_launch {
  knn_problem problem[knn_launch_capacity];
  int count;
};
static_assert(sizeof(knn_launch) <= 4096, "the table of searches must fit the portable kernel parameter space");

/// Where a block works: its problem, its block of queries and its training slice (slices are the
/// slow index, so the blocks running together share training rows in L2).
struct knn_block {
  int problem;
  std::int32_t query_block, slice;
};

/// Batch: the launch has several problems, its grid is 1-D and the block searches the table;
/// otherwise the grid is (query blocks, slices) of problem 0 (measured: fewer registers in the
/// kernels than with the division).
template <bool Batch>
__device__ __forceinline__ knn_block locate_block(const knn_launch& launch) {
  if constexpr (!Batch) return knn_block{0, static_cast<std::int32_t>(blockIdx.x), static_cast<std::int32_t>(blockIdx.y)};
  const int block = static_cast<int>(blockIdx.x);
  int lo = 0, hi = launch.count - 1;  // the last problem with first_block <= block
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (launch.problem[mid].first_block <= block) lo = mid;
    else hi = mid - 1;
  }
  const int local = block - launch.problem[lo].first_block;
  return knn_block{lo, local % launch.problem[lo].query_blocks, local / launch.problem[lo].query_blocks};
}

/// Writes a lane's list for query q of slice `slice` to the partial results.
template <int Kcap>
__device__ __forceinline__ void store_list(std::uint64_t* partials, std::int64_t queries, int slice, std::int64_t q,
                                           const key_list<Kcap>& list) {
  std::uint64_t* to = partials + (std::int64_t(slice) * queries + q) * Kcap;
#pragma unroll
  for (int j = 0; j < Kcap; ++j) to[j] = list.key[j];
}

/// The training rows of slice `slice` of problem p: [begin, end).
__device__ __forceinline__ void slice_rows(const knn_problem& p, int slice, std::int64_t& begin, std::int64_t& end) {
  if (p.slice_bounds != nullptr) {
    begin = p.slice_bounds[3 * slice], end = p.slice_bounds[3 * slice + 1];
    return;
  }
  begin = std::int64_t(p.trains) * slice / p.slices;
  end = std::int64_t(p.trains) * (slice + 1) / p.slices;
}

}  // namespace detail
}  // namespace multireduce::cuda
