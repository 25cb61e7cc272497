// multireduce/match/collection_cuda.cuh -- matching a whole image collection on the GPU (the
// contract: match/collection.hpp): every pair's matches exactly as match_descriptors finds them,
// handed out pair by pair as they are ready.
//
// How: the collection is one self-join over the tile kernel. A launch searches one query image i
// against every training image j of its pairs in the round at once: the training images are the
// search's slices, so each (query row, training image) keeps its own top-k list -- the
// multi-reduction again -- and those lists are the pairs' answers (no merge kernel). Every pair
// therefore runs at the large-search rate, however small, in launches of thousands of blocks. A
// kernel then applies the rules to the lists and a compaction keeps the accepted matches in pair
// and query order: only those and a count per pair leave the GPU, and the read-back of one round
// overlaps the searches of the next. The cross-check's other direction (every training row's
// nearest query) is the same search the other way round, k = 1. A collection larger than the
// memory budget is matched in image blocks: block i stays on the GPU while the blocks j >= i pass
// through two buffers, the copy of the next overlapping the searches of this one. One in host
// memory that fits goes up in two pieces: the first images' rows, whose pairs are searched while
// a helper thread copies the rest.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <cub/device/device_select.cuh>

#include "collection.hpp"
#include "cuda.cuh"
#include "detail/collection.cuh"

namespace multireduce::cuda {

using multireduce::descriptor_collection;
using multireduce::image_pair;
using multireduce::pair_matches_callback;

/// How the GPU collection matcher uses the GPU.
struct collection_options {
  /// Device bytes for the descriptors and the rounds' buffers; 0: a share of the free memory
  /// (collection_tuning::free_memory_share). A collection larger than what is left for the
  /// descriptors is matched in image blocks.
  std::size_t memory_budget = 0;
  /// Pair-query rows per round; 0: collection_tuning::round_rows (at least the largest image's rows).
  std::int64_t round_rows = 0;
  match_path path = match_path::automatic;
};

/// Matches every pair of the collection (rows in host memory, or all in device memory) by the
/// rule, keeping k neighbours per query, and hands each pair's matches to `done` on this thread as
/// soon as its round is read back. Returns when every pair is done (the workspace's stream is
/// synchronised). Throws std::invalid_argument for a bad collection, pair list or rule, and
/// cuda::error for a CUDA failure or a memory budget too small for the largest image.
inline void match_collection(workspace& ws, const descriptor_collection& c, std::span<const image_pair> pairs, int k,
                             const match_rule& rule, const pair_matches_callback& done,
                             const collection_options& options = {}) {
  const std::string what = "multireduce::cuda::match_collection";
  check_match_rule(rule);
  check_collection(c, pairs, k);
  if ((rule.ratio > 0 || rule.margin >= 0) && k < 2) throw std::invalid_argument("the ratio and margin tests need k >= 2");
  if (c.bytes > match_max_bytes)
    throw std::invalid_argument("the GPU matcher takes descriptors of up to " + std::to_string(match_max_bytes) + " bytes");
  if (pairs.empty()) return;
  const cudaStream_t stream = ws.stream();
  const int bytes = c.bytes, kcap = k <= 2 ? 2 : 8;
  const std::size_t row_bytes = std::size_t(bytes);

  // ---- the plan: round size, memory for descriptors, image blocks ----
  std::int64_t largest = 1;
  for (std::int64_t n = 0; n < c.images(); ++n) largest = std::max(largest, c.rows_of(n));
  std::size_t budget = options.memory_budget;
  if (budget == 0) {
    std::size_t free_bytes = 0, total = 0;
    check(cudaMemGetInfo(&free_bytes, &total), what.c_str());
    budget = static_cast<std::size_t>(double(free_bytes) * detail::collection_tuning::free_memory_share);
  }
  const std::size_t per_row = detail::round_bytes_per_row(k, rule.cross_check);
  std::int64_t round_rows = options.round_rows > 0 ? options.round_rows : detail::collection_tuning::round_rows;
  round_rows = std::max(std::min<std::int64_t>(round_rows, std::int64_t(budget / 4 / per_row)), largest);
  const std::size_t round_bytes = std::size_t(round_rows) * per_row;
  const std::size_t all_rows_bytes = std::size_t(c.total_rows()) * row_bytes;
  cudaPointerAttributes where{};
  if (c.rows != nullptr) check(cudaPointerGetAttributes(&where, c.rows), what.c_str());
  const bool on_device = where.type == cudaMemoryTypeDevice || where.type == cudaMemoryTypeManaged;
  if (on_device && c.total_rows() > INT32_MAX)
    throw std::invalid_argument(what + ": rows in GPU memory must number at most 2^31-1 (host rows go in image blocks)");
  const std::size_t for_rows = budget > round_bytes ? budget - round_bytes : 0;
  // The wgmma kernel reads the training images on the GPU as tiles beside their rows (about 34
  // bytes a row at 256 bits, each image from a tile of its own), only of the images some pair
  // searches: the pairs' second images, with the cross-check their first too. Rows already on the
  // GPU: those tiles must fit the budget beside the rounds, else the searches take mma.sync
  // (`automatic`; an explicit wgmma path keeps its tiles whatever the budget). Blocked: three
  // buffers (block i, two passing j blocks), each with its images' rows and tiles.
  detail::knn_config kernel{};
  match_path search_path = options.path;
  check(detail::choose_knn_kernel(bytes, k, search_path, 1, kernel, true), what.c_str());
  auto take_mma_sync = [&] {
    search_path = match_path::tensor_core;
    check(detail::choose_knn_kernel(bytes, k, search_path, 1, kernel, true), what.c_str());
  };
  // An image is one slice of the wgmma kernel, whose slices have at most wgmma_slice_rows_most rows.
  if (kernel.wgmma && largest > detail::wgmma_slice_rows_most) {
    if (options.path == match_path::wgmma)
      throw std::invalid_argument(what + ": the wgmma path takes images of at most " +
                                  std::to_string(detail::wgmma_slice_rows_most) + " rows (an image has " +
                                  std::to_string(largest) + "); the tensor_core path takes any");
    take_mma_sync();
  }
  std::vector<char> searched_image(std::size_t(c.images()), 0);
  for (const image_pair& p : pairs) {
    searched_image[std::size_t(p.second)] = 1;
    if (rule.cross_check) searched_image[std::size_t(p.first)] = 1;
  }
  // (`kernel` may change to mma.sync below: these ask it each time.)
  auto image_tiles = [&](std::int64_t n) -> std::int64_t {
    return searched_image[std::size_t(n)] != 0 ? detail::image_tile_count(kernel, c.rows_of(n)) : 0;
  };
  auto tile_bytes = [&] { return kernel.wgmma ? std::size_t(detail::wgmma_tile_bytes(kernel.units)) : 0; };
  auto image_bytes = [&](std::int64_t n) {
    return detail::image_device_bytes(kernel, row_bytes, c.rows_of(n), searched_image[std::size_t(n)] != 0);
  };
  std::size_t all_bytes = 0, largest_bytes = 0;
  for (std::int64_t n = 0; n < c.images(); ++n)
    all_bytes += image_bytes(n), largest_bytes = std::max(largest_bytes, image_bytes(n));
  // The tiles: all_bytes less the rows.
  if (on_device && kernel.wgmma && options.path == match_path::automatic && all_bytes - all_rows_bytes > for_rows) {
    take_mma_sync();
  }
  const bool blocked = !on_device && (all_bytes > for_rows || c.total_rows() > INT32_MAX);
  const std::size_t block_bytes = std::min(for_rows / 3, std::size_t(INT32_MAX) * row_bytes);
  if (blocked && largest_bytes > block_bytes)
    throw error(cudaErrorMemoryAllocation,
                what + ": a memory budget of " + std::to_string(budget) + " bytes is too small for images of " +
                    std::to_string(largest) + " rows (it needs about " +
                    std::to_string(3 * largest_bytes + round_bytes) + ")");
  const std::vector<std::int64_t> block_first =
      blocked ? detail::image_blocks(c, block_bytes, image_bytes) : std::vector<std::int64_t>{0, c.images()};
  const std::vector<detail::block_pair_group> groups = detail::group_by_blocks(pairs, block_first);

  // ---- buffers: descriptors, and per round the lists, the rules' rows and two of everything read back ----
  auto block_size = [&](std::int64_t b) {
    return std::size_t(c.offsets[block_first[b + 1]] - c.offsets[block_first[b]]) * row_bytes;
  };
  // Each image's rows in its block and its first tile among the block's tiles (3 values an image;
  // no rows for an image no pair searches), for the tiling and the searches' slices. A buffer
  // holds a block's rows (rounded up to 256 bytes; none when the rows are on the GPU), then its
  // tiles.
  std::vector<std::int64_t> image_table(std::size_t(3 * c.images()));
  std::size_t most_buffer_bytes = 1;
  auto tiles_at = [&](std::int64_t b) { return on_device ? 0 : detail::round_up(block_size(b)); };
  for (std::size_t b = 0; b + 1 < block_first.size(); ++b) {
    std::int64_t row = 0, tile = 0;
    for (std::int64_t n = block_first[b]; n < block_first[b + 1]; ++n) {
      image_table[std::size_t(3 * n)] = row;
      image_table[std::size_t(3 * n + 1)] = image_tiles(n) > 0 ? row + c.rows_of(n) : row;
      image_table[std::size_t(3 * n + 2)] = tile;
      row += c.rows_of(n), tile += image_tiles(n);
    }
    most_buffer_bytes = std::max(most_buffer_bytes, tiles_at(std::int64_t(b)) + std::size_t(tile) * tile_bytes());
  }
  device_buffer<std::int64_t> image_table_on_gpu(kernel.wgmma ? image_table.size() : 0);
  if (kernel.wgmma)  // before any tiling: each is on the workspace's stream or waits for it (block_free)
    check(cudaMemcpyAsync(image_table_on_gpu.data(), image_table.data(), image_table.size() * sizeof(std::int64_t),
                          cudaMemcpyHostToDevice, stream),
          what.c_str());
  device_buffer<std::uint8_t> resident(!on_device || kernel.wgmma ? most_buffer_bytes : 0);
  device_buffer<std::uint8_t> passing[2] = {device_buffer<std::uint8_t>(blocked ? most_buffer_bytes : 0),
                                            device_buffer<std::uint8_t>(blocked ? most_buffer_bytes : 0)};
  // Lays images [first, last) of block b (the block's rows at `rows`) out as tiles in `buffer`,
  // and says where the block's tiles are; tile_block: all of the block's images.
  auto tile_images = [&](std::int64_t b, std::int64_t first, std::int64_t last, const std::uint8_t* rows,
                         std::uint8_t* buffer, cudaStream_t on) -> std::uint8_t* {
    if (!kernel.wgmma) return nullptr;
    std::uint8_t* tiles = buffer + tiles_at(b);
    check(detail::launch_image_tiling(kernel, rows, std::int64_t(block_size(b) / row_bytes),
                                      image_table_on_gpu.data() + 3 * first, last - first, largest, bytes, tiles, on),
          what.c_str());
    return tiles;
  };
  auto tile_block = [&](std::int64_t b, const std::uint8_t* rows, std::uint8_t* buffer, cudaStream_t on) {
    return tile_images(b, block_first[std::size_t(b)], block_first[std::size_t(b) + 1], rows, buffer, on);
  };
  const std::size_t rows_cap = std::size_t(round_rows);
  const std::size_t pairs_cap = std::size_t(detail::collection_tuning::round_pairs);
  device_buffer<std::uint64_t> lists[2] = {device_buffer<std::uint64_t>(rows_cap * std::size_t(kcap)),
                                           device_buffer<std::uint64_t>(rows_cap * std::size_t(kcap))};
  device_buffer<std::uint64_t> reverse_lists[2] = {device_buffer<std::uint64_t>(rule.cross_check ? rows_cap * 2 : 0),
                                                   device_buffer<std::uint64_t>(rule.cross_check ? rows_cap * 2 : 0)};
  device_buffer<multireduce::match> rows(rows_cap);
  device_buffer<std::uint8_t> keep(rows_cap);
  device_buffer<multireduce::match> kept[2] = {device_buffer<multireduce::match>(rows_cap),
                                               device_buffer<multireduce::match>(rows_cap)};
  device_buffer<std::int32_t> counts[2] = {device_buffer<std::int32_t>(pairs_cap), device_buffer<std::int32_t>(pairs_cap)};
  device_buffer<std::int64_t> selected[2] = {device_buffer<std::int64_t>(1), device_buffer<std::int64_t>(1)};
  // Per slot: the round's pair table, then its slice bounds (3 per pair, twice with the cross-check).
  const std::size_t table_bytes = pairs_cap * sizeof(detail::round_pair), bounds_count = pairs_cap * 6;
  device_buffer<unsigned char> table[2] = {device_buffer<unsigned char>(table_bytes + bounds_count * 8),
                                           device_buffer<unsigned char>(table_bytes + bounds_count * 8)};
  pinned_buffer<unsigned char> table_host[2] = {pinned_buffer<unsigned char>(table_bytes + bounds_count * 8),
                                                pinned_buffer<unsigned char>(table_bytes + bounds_count * 8)};
  pinned_buffer<std::int32_t> counts_host[2] = {pinned_buffer<std::int32_t>(pairs_cap), pinned_buffer<std::int32_t>(pairs_cap)};
  pinned_buffer<std::int64_t> selected_host[2] = {pinned_buffer<std::int64_t>(1), pinned_buffer<std::int64_t>(1)};
  std::size_t select_temp_bytes = 0;
  check(cub::DeviceSelect::Flagged(nullptr, select_temp_bytes, rows.data(), keep.data(), kept[0].data(),
                                   selected[0].data(), std::int64_t(rows_cap), stream),
        what.c_str());
  device_buffer<std::uint8_t> select_temp(select_temp_bytes);
  std::vector<multireduce::match> host_rows;
  // Streams: the searches go on two of their own, alternately, so that one launch's last wave
  // overlaps the next one's first and a round's searches overlap the rules and the read-back of
  // the round before (on the workspace's stream); the blocks' copies and the read-backs have one each.
  owned_stream searching[2], downloads, uploads;
  owned_event round_done[2] = {owned_event(false), owned_event(false)};
  owned_event lists_free[2] = {owned_event(false), owned_event(false)}, table_ready[2] = {owned_event(false), owned_event(false)};
  owned_event searches_done[2] = {owned_event(false), owned_event(false)};
  owned_event block_ready(false), block_free(false);
  owned_event searched[2] = {owned_event(false), owned_event(false)};  // the passing buffers' last searches
  const detail::device_rule device_rule{rule.ratio, rule.margin, rule.max_distance};

  // ---- rounds: queued, then read back while the next one runs ----
  struct queued_round {
    int slot = 0;
    std::vector<std::int64_t> pair_index;
  };
  std::vector<queued_round> pending;  // at most one: the round before the one just queued
  auto finish = [&](const queued_round& r) {
    check(cudaEventSynchronize(round_done[r.slot].get()), what.c_str());
    const std::int64_t n = selected_host[r.slot].data()[0];
    host_rows.resize(std::size_t(n));
    if (n > 0) {
      check(cudaMemcpyAsync(host_rows.data(), kept[r.slot].data(), std::size_t(n) * sizeof(multireduce::match),
                            cudaMemcpyDeviceToHost, downloads.get()),
            what.c_str());
      check(cudaStreamSynchronize(downloads.get()), what.c_str());
    }
    std::int64_t at = 0;
    for (std::size_t i = 0; i < r.pair_index.size(); ++i) {
      const std::int64_t count = counts_host[r.slot].data()[i];
      done(r.pair_index[i], std::span<const multireduce::match>(host_rows.data() + at, std::size_t(count)));
      at += count;
    }
  };
  // One round: `list` (pairs ordered by first image) with image rows in `base_i` (row first_i on)
  // and `base_j` (row first_j on). One search per first image (its pairs' second images are the
  // slices), and with the cross-check one per second image the other way round.
  int round_count = 0;
  auto queue_round = [&](const std::vector<std::int64_t>& list, const std::uint8_t* base_i, std::int64_t first_i,
                         std::int64_t rows_i, std::uint8_t* tiles_i, const std::uint8_t* base_j, std::int64_t first_j,
                         std::int64_t rows_j, std::uint8_t* tiles_j) {
    const int slot = round_count++ & 1;
    auto* pair_table = reinterpret_cast<detail::round_pair*>(table_host[slot].data());
    auto* bounds = reinterpret_cast<std::int64_t*>(table_host[slot].data() + table_bytes);
    auto* device_bounds = reinterpret_cast<const std::int64_t*>(table[slot].data() + table_bytes);
    struct search {
      std::int32_t image;
      std::size_t first_slice;  // in `bounds`, 3 values a slice
      int slices;
      std::int64_t first_list;  // in lists (reverse_lists), in lists of kcap (2) keys
    };
    std::vector<search> forward, backward;
    std::int64_t out_rows = 0, list_rows = 0;
    std::size_t slice = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const image_pair q = pairs[std::size_t(list[i])];
      if (forward.empty() || forward.back().image != q.first) {
        forward.push_back({q.first, slice, 0, list_rows});
      }
      search& s = forward.back();
      const std::int64_t nq = c.rows_of(q.first), t0 = c.offsets[q.second] - first_j;
      bounds[3 * slice] = t0, bounds[3 * slice + 1] = t0 + c.rows_of(q.second);
      bounds[3 * slice + 2] = image_table[std::size_t(3 * q.second + 2)];
      pair_table[i] = detail::round_pair{s.first_list + std::int64_t(s.slices) * nq, 0, out_rows, t0, 0,
                                         static_cast<std::int32_t>(nq), static_cast<std::int32_t>(c.rows_of(q.second))};
      ++s.slices, ++slice;
      list_rows += nq, out_rows += nq;
    }
    if (rule.cross_check) {  // the other way round: each second image against its pairs' first images
      std::map<std::int32_t, std::vector<std::size_t>> by_second;
      for (std::size_t i = 0; i < list.size(); ++i) by_second[pairs[std::size_t(list[i])].second].push_back(i);
      std::int64_t reverse_rows = 0;
      for (const auto& [image, members] : by_second) {
        backward.push_back({image, slice, 0, reverse_rows});
        for (std::size_t i : members) {
          const image_pair q = pairs[std::size_t(list[i])];
          const std::int64_t q0 = c.offsets[q.first] - first_i;
          bounds[3 * slice] = q0, bounds[3 * slice + 1] = q0 + c.rows_of(q.first);
          bounds[3 * slice + 2] = image_table[std::size_t(3 * q.first + 2)];
          pair_table[i].reverse_lists = reverse_rows + std::int64_t(backward.back().slices) * c.rows_of(image);
          pair_table[i].query_row0 = q0;
          ++backward.back().slices, ++slice;
        }
        reverse_rows += std::int64_t(backward.back().slices) * c.rows_of(image);
      }
    }
    // The searches wait for the rules of the round before last (which read this slot's lists) and
    // for the table; they alternate between the two search streams, which the rules then wait for.
    const cudaStream_t first_stream = searching[0].get(), second_stream = searching[1].get();
    if (round_count > 2) check(cudaStreamWaitEvent(first_stream, lists_free[slot].get(), 0), what.c_str());
    check(cudaMemcpyAsync(table[slot].data(), table_host[slot].data(), table_bytes + slice * 3 * sizeof(std::int64_t),
                          cudaMemcpyHostToDevice, first_stream),
          what.c_str());
    check(cudaEventRecord(table_ready[slot].get(), first_stream), what.c_str());
    check(cudaStreamWaitEvent(second_stream, table_ready[slot].get(), 0), what.c_str());
    int launched = 0;
    for (const search& s : forward)
      check(detail::launch_collection_search(base_i + (c.offsets[s.image] - first_i) * bytes, c.rows_of(s.image), base_j,
                                             rows_j, device_bounds + 3 * s.first_slice, s.slices, bytes, k,
                                             search_path,
                                             lists[slot].data() + s.first_list * kcap, tiles_j,
                                             searching[launched++ & 1].get()),
            what.c_str());
    for (const search& s : backward)
      check(detail::launch_collection_search(base_j + (c.offsets[s.image] - first_j) * bytes, c.rows_of(s.image), base_i,
                                             rows_i, device_bounds + 3 * s.first_slice, s.slices, bytes, 1,
                                             search_path,
                                             reverse_lists[slot].data() + s.first_list * 2, tiles_i,
                                             searching[launched++ & 1].get()),
            what.c_str());
    for (int i = 0; i < 2; ++i) {
      check(cudaEventRecord(searches_done[i].get(), searching[i].get()), what.c_str());
      check(cudaStreamWaitEvent(stream, searches_done[i].get(), 0), what.c_str());
    }
    check(cudaMemsetAsync(counts[slot].data(), 0, list.size() * sizeof(std::int32_t), stream), what.c_str());
    if (out_rows > 0) {
      std::int64_t most = 1;
      for (const std::int64_t p : list) most = std::max(most, c.rows_of(pairs[std::size_t(p)].first));
      const int threads = detail::collection_tuning::accept_threads;
      const auto x = std::min<std::int64_t>((most + threads - 1) / threads, 1024);
      const auto accept = rule.cross_check ? detail::accept_round_kernel<true> : detail::accept_round_kernel<false>;
      accept<<<dim3(unsigned(x), unsigned(list.size())), threads, 0, stream>>>(
          reinterpret_cast<const detail::round_pair*>(table[slot].data()), lists[slot].data(), kcap, k,
          reverse_lists[slot].data(), device_rule, rows.data(), keep.data(), counts[slot].data());
      check(cudaGetLastError(), what.c_str());
      std::size_t temp_bytes = select_temp.size();
      check(cub::DeviceSelect::Flagged(select_temp.data(), temp_bytes, rows.data(), keep.data(), kept[slot].data(),
                                       selected[slot].data(), out_rows, stream),
            what.c_str());
    } else {
      check(cudaMemsetAsync(selected[slot].data(), 0, sizeof(std::int64_t), stream), what.c_str());
    }
    check(cudaMemcpyAsync(counts_host[slot].data(), counts[slot].data(), list.size() * sizeof(std::int32_t),
                          cudaMemcpyDeviceToHost, stream),
          what.c_str());
    check(cudaMemcpyAsync(selected_host[slot].data(), selected[slot].data(), sizeof(std::int64_t),
                          cudaMemcpyDeviceToHost, stream),
          what.c_str());
    check(cudaEventRecord(round_done[slot].get(), stream), what.c_str());
    check(cudaEventRecord(lists_free[slot].get(), stream), what.c_str());
    // Read back the round before this one while this one runs.
    if (!pending.empty()) finish(pending.front()), pending.clear();
    pending.push_back(queued_round{slot, list});
  };
  // A group's pairs in rounds of at most round_rows pair-query rows (and pair-training rows) and
  // round_pairs pairs.
  auto queue_group = [&](const detail::block_pair_group& group, const std::uint8_t* base_i, std::int64_t first_i,
                         std::int64_t rows_i, std::uint8_t* tiles_i, const std::uint8_t* base_j, std::int64_t first_j,
                         std::int64_t rows_j, std::uint8_t* tiles_j) {
    for (std::size_t at = 0; at < group.pairs.size();) {
      std::vector<std::int64_t> list;
      for (std::int64_t q_rows = 0, t_rows = 0; at < group.pairs.size() && list.size() < pairs_cap; ++at) {
        const image_pair q = pairs[std::size_t(group.pairs[at])];
        if (!list.empty() && (q_rows + c.rows_of(q.first) > round_rows || t_rows + c.rows_of(q.second) > round_rows))
          break;
        q_rows += c.rows_of(q.first), t_rows += c.rows_of(q.second);
        list.push_back(group.pairs[at]);
      }
      queue_round(list, base_i, first_i, rows_i, tiles_i, base_j, first_j, rows_j, tiles_j);
    }
  };

  // ---- the groups of pairs, block by block ----
  // The searches come after whatever the caller queued on the workspace's stream (rows on the GPU,
  // tiled there first).
  std::uint8_t* tiles_i = on_device ? tile_block(0, c.rows, resident.data(), stream) : nullptr;
  check(cudaEventRecord(block_free.get(), stream), what.c_str());
  for (auto& s : searching) check(cudaStreamWaitEvent(s.get(), block_free.get(), 0), what.c_str());
  std::int64_t block_on_gpu = -1;  // the block in `resident`
  int passing_slot = 0, passing_count = 0;
  for (const detail::block_pair_group& group : groups) {
    const std::int64_t row_i = c.offsets[block_first[group.block_i]], row_j = c.offsets[block_first[group.block_j]];
    const std::uint8_t* base_i = on_device ? c.rows : resident.data();
    const std::int64_t first_i = on_device ? 0 : row_i;
    const std::int64_t rows_i = std::int64_t(block_size(group.block_i) / row_bytes);
    if (!on_device && !blocked) {
      // The whole collection fits: its rows go up in two pieces, the first images'
      // (collection_tuning::first_upload_share of the rows), then, on a helper thread, the rest
      // (a copy from pageable memory holds its thread until the rows are staged), while this
      // thread queues the pairs among the first images; the others wait for the rest.
      const std::int64_t split = detail::first_upload_images(c);
      int device = 0;
      check(cudaGetDevice(&device), what.c_str());
      auto upload_images = [&](std::int64_t first, std::int64_t last, cudaEvent_t ready) {
        const std::int64_t rows = c.offsets[last] - c.offsets[first];
        if (rows > 0)
          check(cudaMemcpyAsync(resident.data() + std::size_t(c.offsets[first]) * row_bytes,
                                c.rows + std::size_t(c.offsets[first]) * row_bytes, std::size_t(rows) * row_bytes,
                                cudaMemcpyHostToDevice, uploads.get()),
                what.c_str());
        std::uint8_t* tiles = tile_images(0, first, last, resident.data(), resident.data(), uploads.get());
        check(cudaEventRecord(ready, uploads.get()), what.c_str());
        return tiles;
      };
      // (block_free, recorded above, follows whatever the caller queued on the stream.)
      check(cudaStreamWaitEvent(uploads.get(), block_free.get(), 0), what.c_str());
      tiles_i = upload_images(0, split, block_ready.get());
      for (auto& s : searching) check(cudaStreamWaitEvent(s.get(), block_ready.get(), 0), what.c_str());
      owned_event rest_ready(false);
      std::exception_ptr rest_failed;
      {
        std::jthread rest([&] {
          try {
            check(cudaSetDevice(device), what.c_str());
            upload_images(split, c.images(), rest_ready.get());
          } catch (...) {
            rest_failed = std::current_exception();
          }
        });
        std::vector<std::int64_t> first_pairs, later_pairs;
        for (const std::int64_t p : group.pairs)
          (pairs[std::size_t(p)].second < split ? first_pairs : later_pairs).push_back(p);
        queue_group(detail::block_pair_group{0, 0, std::move(first_pairs)}, base_i, first_i, rows_i, tiles_i, base_i,
                    first_i, rows_i, tiles_i);
        rest.join();
        if (rest_failed) std::rethrow_exception(rest_failed);
        for (auto& s : searching) check(cudaStreamWaitEvent(s.get(), rest_ready.get(), 0), what.c_str());
        queue_group(detail::block_pair_group{0, 0, std::move(later_pairs)}, base_i, first_i, rows_i, tiles_i, base_i,
                    first_i, rows_i, tiles_i);
      }
      continue;  // (the only group: a collection that fits is one block)
    }
    if (!on_device && block_on_gpu != group.block_i) {
      // The copy waits for every search that read the previous block (the rules of each round
      // waited for its searches, and block_free comes after them); the searches wait for the copy.
      check(cudaEventRecord(block_free.get(), stream), what.c_str());
      check(cudaStreamWaitEvent(uploads.get(), block_free.get(), 0), what.c_str());
      check(cudaMemcpyAsync(resident.data(), c.rows + row_i * bytes, block_size(group.block_i),
                            cudaMemcpyHostToDevice, uploads.get()),
            what.c_str());
      tiles_i = tile_block(group.block_i, resident.data(), resident.data(), uploads.get());
      check(cudaEventRecord(block_ready.get(), uploads.get()), what.c_str());
      for (auto& s : searching) check(cudaStreamWaitEvent(s.get(), block_ready.get(), 0), what.c_str());
      block_on_gpu = group.block_i;
    }
    if (!blocked || group.block_j == group.block_i) {
      queue_group(group, base_i, first_i, rows_i, tiles_i, base_i, first_i, rows_i, tiles_i);
      continue;
    }
    // Block j through a passing buffer: its copy (on the copy stream) waits only for the searches
    // that read the buffer's previous block (the rules after them), so it overlaps the searches
    // queued before it.
    const int slot = passing_slot;
    passing_slot ^= 1;
    if (passing_count++ >= 2) check(cudaStreamWaitEvent(uploads.get(), searched[slot].get(), 0), what.c_str());
    const std::int64_t rows_j = std::int64_t(block_size(group.block_j) / row_bytes);
    check(cudaMemcpyAsync(passing[slot].data(), c.rows + row_j * bytes, block_size(group.block_j),
                          cudaMemcpyHostToDevice, uploads.get()),
          what.c_str());
    std::uint8_t* tiles_j = tile_block(group.block_j, passing[slot].data(), passing[slot].data(), uploads.get());
    check(cudaEventRecord(block_ready.get(), uploads.get()), what.c_str());
    for (auto& s : searching) check(cudaStreamWaitEvent(s.get(), block_ready.get(), 0), what.c_str());
    queue_group(group, base_i, first_i, rows_i, tiles_i, passing[slot].data(), row_j, rows_j, tiles_j);
    check(cudaEventRecord(searched[slot].get(), stream), what.c_str());
  }
  if (!pending.empty()) finish(pending.front());
  check(cudaStreamSynchronize(stream), what.c_str());
}

}  // namespace multireduce::cuda
