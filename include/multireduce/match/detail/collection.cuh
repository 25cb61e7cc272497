// multireduce/match/detail/collection.cuh -- the pieces of the GPU collection matcher
// (match/collection_cuda.cuh): one query image against many training images in one launch, each
// training image a slice of the search so that each (query row, training image) keeps its own
// top-k; the kernel that applies the rules to those lists so that only kept matches leave the GPU;
// the image blocks that fit the memory budget.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "../collection.hpp"
#include "../match.hpp"
#include "plan.cuh"
#include "search.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// Queues the search of `queries` rows at `query` against the slices of `train` whose row bounds
/// (and first tiles) are at `slice_bounds` (device memory, 3 per slice): each (query, slice) list of the Kcap nearest
/// (distance, row of `train`) keys, sorted, at partials[(slice x queries + query) x Kcap]. No
/// finish kernel: the lists are the pairs' answers. The wgmma kernel reads `train` from `tiles`
/// (launch_image_tiling made them; unused by the others).
inline cudaError_t launch_collection_search(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                                            std::int64_t train_rows, const std::int64_t* slice_bounds, int slices,
                                            int bytes, int k, match_path path, std::uint64_t* partials,
                                            std::uint8_t* tiles, cudaStream_t stream) {
  if (queries == 0 || slices == 0) return cudaSuccess;
  // Every launch fills queries x slices lists: the warp tiles are chosen on that count.
  knn_config c{};
  if (const cudaError_t e = choose_knn_kernel(bytes, k, path, queries * slices, c, true); e != cudaSuccess)
    return e;
  const auto query_blocks = static_cast<std::int32_t>((queries + c.block_queries - 1) / c.block_queries);
  knn_launch search{};
  search.count = 1;
  search.problem[0] = knn_problem{reinterpret_cast<const std::uint32_t*>(query),
                                  reinterpret_cast<const std::uint32_t*>(train),
                                  partials,
                                  nullptr,
                                  nullptr,
                                  static_cast<std::int32_t>(queries),
                                  static_cast<std::int32_t>(train_rows),
                                  0,
                                  query_blocks,
                                  slices,
                                  0,
                                  0,
                                  slice_bounds,
                                  c.wgmma ? tiles : nullptr};
  // The wgmma kernel takes a 1-D grid (its one instantiation reads the table); the others (query
  // blocks, slices).
  const knn_kernel_choice kernel = c.kcap <= 2 ? knn_kernel_for<2, false>(c) : knn_kernel_for<8, false>(c);
  if (const cudaError_t e = kernel.prepare(); e != cudaSuccess) return e;
  const dim3 grid = c.wgmma ? dim3(unsigned(std::int64_t(query_blocks) * slices)) : dim3(unsigned(query_blocks), unsigned(slices));
  return launch(kernel.kernel, grid, kernel.threads, kernel.shared_bytes, stream, search, bytes / 4);
}

/// The wgmma kernel's tiles of an image of `rows` descriptors (each image's tiles start a tile of
/// their own); none for the other kernels.
inline std::int64_t image_tile_count(const knn_config& c, std::int64_t rows) {
  constexpr std::int64_t tile = knn_tuning::wgmma_train_tile;
  return c.wgmma ? (rows + tile - 1) / tile : 0;
}

/// Bytes an image of `rows` descriptors takes on the GPU: its rows and, if it is `tiled` (some pair
/// searches it), its tiles.
inline std::size_t image_device_bytes(const knn_config& c, std::size_t row_bytes, std::int64_t rows, bool tiled = true) {
  const std::int64_t tiles = tiled ? image_tile_count(c, rows) : 0;
  return std::size_t(rows) * row_bytes + std::size_t(tiles) * std::size_t(wgmma_tile_bytes(c.units));
}

/// Lays the `images` images of a descriptor buffer (`count` rows at `rows`) out as the wgmma
/// kernel's tiles at `tiles`, image s's rows [bounds[3s], bounds[3s + 1]) from tile bounds[3s + 2]
/// on (`bounds` in device memory; `largest`: the most rows of an image); nothing for the other kernels.
inline cudaError_t launch_image_tiling(const knn_config& c, const std::uint8_t* rows, std::int64_t count,
                                       const std::int64_t* bounds, std::int64_t images, std::int64_t largest, int bytes,
                                       std::uint8_t* tiles, cudaStream_t stream) {
  if (!c.wgmma || images == 0 || count == 0) return cudaSuccess;
  knn_launch one{};
  one.count = 1;
  knn_problem& p = one.problem[0];
  p.train = reinterpret_cast<const std::uint32_t*>(rows);
  p.trains = static_cast<std::int32_t>(count);
  p.slices = static_cast<std::int32_t>(images);
  p.slice_bounds = bounds;
  p.tiles = tiles;
  return launch_knn_tiling(knn_kernel_for<2, false>(c), one, largest, bytes / 4, stream);
}

/// One pair of a round, for the accept kernel: where its lists are and where its outputs go.
struct round_pair {
  std::int64_t lists;          // its first query's list in the round's forward lists (in keys / kcap)
  std::int64_t reverse_lists;  // its first training row's list in the reverse lists (cross-check)
  std::int64_t out;            // its first query's row in the round's outputs
  std::int64_t train_row0;     // image second's first row in its search's training rows
  std::int64_t query_row0;     // image first's first row in the reverse search's training rows
  std::int32_t queries, trains;
};

/// The rules, as the kernel reads them.
struct device_rule {
  double ratio;
  std::int32_t margin, max_distance;
};

/// accept_matches' rules on every query row of a round: blockIdx.y is the pair, x walks its
/// queries. Reads the pair's k-NN list of each query (kcap sorted keys; the first k count) and,
/// for the cross-check, the nearest query of each training row (the reverse search's first key),
/// writes each row's match and whether it is kept (for the compaction that follows, which keeps
/// pair-major, query order) and counts each pair's kept rows.
template <bool CrossCheck>
__global__ void accept_round_kernel(const round_pair* pairs, const std::uint64_t* lists, int kcap, int k,
                                    const std::uint64_t* reverse_lists, device_rule rule, multireduce::match* rows,
                                    std::uint8_t* keep, std::int32_t* counts) {
  const round_pair p = pairs[blockIdx.y];
  const std::int64_t steps = (std::int64_t(p.queries) + blockDim.x - 1) / blockDim.x;
  for (std::int64_t step = blockIdx.x; step < steps; step += gridDim.x) {
    const std::int64_t q = step * blockDim.x + threadIdx.x;
    bool kept = false;
    if (q < p.queries) {
      const std::uint64_t* list = lists + (p.lists + q) * kcap;
      const std::uint64_t first = list[0];
      kept = first != empty_key;
      const auto d = static_cast<std::int32_t>(first >> 32);
      const auto t = static_cast<std::int32_t>(std::int64_t(first & 0xffffffffu) - p.train_row0);
      const bool has_second = k >= 2 && kept && list[1] != empty_key;
      const std::int32_t d2 = has_second ? static_cast<std::int32_t>(list[1] >> 32) : 0;
      if (kept && rule.ratio > 0 && has_second && !(double(d) < rule.ratio * double(d2))) kept = false;
      if (kept && rule.margin >= 0 && has_second && !(d2 - d > rule.margin)) kept = false;
      if (kept && rule.max_distance >= 0 && d > rule.max_distance) kept = false;
      if (CrossCheck && kept) {
        const std::uint64_t nearest = reverse_lists[(p.reverse_lists + t) * 2];
        kept = std::int64_t(nearest & 0xffffffffu) - p.query_row0 == q;
      }
      rows[p.out + q] = multireduce::match{static_cast<std::int32_t>(q), t, d};
      keep[p.out + q] = kept ? 1 : 0;
    }
    const int in_block = __syncthreads_count(kept);
    if (threadIdx.x == 0 && in_block > 0) atomicAdd(counts + blockIdx.y, in_block);
  }
}

/// Contiguous runs of images whose `image_bytes(n)` fit `block_bytes` each (an image larger than
/// that is a block of its own; the caller checks it fits): block b is images [first[b], first[b + 1]).
template <class ImageBytes>
inline std::vector<std::int64_t> image_blocks(const descriptor_collection& c, std::size_t block_bytes,
                                              ImageBytes&& image_bytes_of) {
  std::vector<std::int64_t> first{0};
  std::size_t bytes = 0;
  for (std::int64_t n = 0; n < c.images(); ++n) {
    const std::size_t image_bytes = image_bytes_of(n);
    if (bytes > 0 && bytes + image_bytes > block_bytes) first.push_back(n), bytes = 0;
    bytes += image_bytes;
  }
  first.push_back(c.images());
  return first;
}

/// The pairs whose images are in blocks (i, j), i <= j, in block order: the order the GPU
/// matcher visits them (the i block stays on the GPU while the j blocks pass through). Within a
/// group the pairs are ordered by their first image (each first image is one search), then as
/// listed.
struct block_pair_group {
  std::int64_t block_i, block_j;
  std::vector<std::int64_t> pairs;  // indices into the pair list
};
inline std::vector<block_pair_group> group_by_blocks(std::span<const image_pair> pairs,
                                                     const std::vector<std::int64_t>& block_first) {
  auto block_of = [&](std::int64_t image) {
    return static_cast<std::int64_t>(std::upper_bound(block_first.begin(), block_first.end(), image) - block_first.begin()) - 1;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> groups;
  for (std::size_t p = 0; p < pairs.size(); ++p)
    groups[{block_of(pairs[p].first), block_of(pairs[p].second)}].push_back(static_cast<std::int64_t>(p));
  std::vector<block_pair_group> out;
  out.reserve(groups.size());
  for (auto& [key, list] : groups) {
    std::stable_sort(list.begin(), list.end(),
                     [&](std::int64_t a, std::int64_t b) { return pairs[std::size_t(a)].first < pairs[std::size_t(b)].first; });
    out.push_back({key.first, key.second, std::move(list)});
  }
  return out;
}

/// The images whose rows go up first when the whole collection fits on the GPU: the first ones
/// whose rows reach collection_tuning::first_upload_share of the collection's (at least one).
inline std::int64_t first_upload_images(const descriptor_collection& c) {
  const double want = double(c.total_rows()) * collection_tuning::first_upload_share;
  std::int64_t split = 1;
  while (split < c.images() && double(c.offsets[split]) < want) ++split;
  return std::min(split, c.images());
}

/// Device bytes a round needs per pair-query row (and, with the cross-check, per pair-training
/// row): the lists of the forward search, the rows the rules write, their flags and two compacted
/// copies (one being read back while the next round runs); the reverse search's lists.
inline std::size_t round_bytes_per_row(int k, bool cross_check) {
  const std::size_t kcap = k <= 2 ? 2 : 8;
  return 8 * kcap + sizeof(multireduce::match) * 3 + 1 + (cross_check ? 16 : 0);
}

}  // namespace multireduce::cuda::detail
