// multireduce/match/detail/plan.cuh -- how a call of the GPU matcher is planned and launched: the
// kernel and its shape for the call's width and k, each search's query blocks and training
// slices, its partial lists in the temporary storage, and launches of up to knn_launch_capacity
// searches.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../cuda/detail/launch.cuh"
#include "../../cuda/detail/temporary_storage.cuh"
#include "../match.hpp"
#include "popcount_kernel.cuh"
#include "search.cuh"
#include "tensor_kernel.cuh"
#include "tuning.cuh"
#include "wgmma_kernel.cuh"

namespace multireduce::cuda::detail {

/// What every search of a call shares: the kernel, its list length and its tile shape.
struct knn_config {
  bool tensor;
  bool wgmma;       // tensor: the warpgroup kernel (sm_90a) rather than mma.sync
  int kcap, units;  // units: chunks of 256 bits (tensor) or words per lane (popcount)
  int m_tiles;      // tensor: 16-query tiles per warp
  int wgmma_warpgroups;  // wgmma: the block's warpgroups (knn_tuning's two shapes)
  int block_queries;
  std::int64_t want_blocks;  // blocks that fill the GPU
  std::int64_t resident;     // tensor: blocks resident on the GPU at once (0: unknown)
  int searches;              // searches with queries
  double total_work;         // sum of queries x trains over the call's searches
};

/// One search's plan: its blocks and its partial lists' bytes in the temporary storage.
struct knn_pair_plan {
  int query_blocks, slices;
  std::size_t partial_bytes;
};

inline bool valid_knn_pair(const knn_pair& p) {
  return p.queries >= 0 && p.trains >= 0 && p.queries <= INT32_MAX && p.trains <= INT32_MAX &&
         p.first_train_index >= 0 && p.first_train_index + p.trains <= INT32_MAX &&
         (p.queries == 0 || reinterpret_cast<std::uintptr_t>(p.query) % 4 == 0) &&
         (p.trains == 0 || p.queries == 0 || reinterpret_cast<std::uintptr_t>(p.train) % 4 == 0);
}

/// The search kernel a configuration launches (all share one signature), and its block size.
struct knn_kernel_choice {
  void (*kernel)(knn_launch, int);
  int threads;
  int shared_bytes = 0;  // dynamic shared memory
  void (*tiling)(knn_launch, int) = nullptr;  // the wgmma kernel's: lays its training slices out first
  int blocks_per_sm = 1;  // the blocks an SM is to hold at once (the wgmma kernel's two-warpgroup shape: 2)
  /// Allows the kernel its dynamic shared memory (past the default 48 KB with the static), and
  /// where an SM is to hold several blocks the SM's most (asked once per device).
  cudaError_t prepare() const {
    if (shared_bytes == 0) return cudaSuccess;
    if (const cudaError_t e = allow_dynamic_shared(kernel, std::size_t(shared_bytes)); e != cudaSuccess) return e;
    return blocks_per_sm > 1 ? prefer_shared_memory(kernel) : cudaSuccess;
  }
};
template <int Kcap, bool Batch>
knn_kernel_choice knn_kernel_for(const knn_config& c) {
  auto pick = [&](auto units) -> knn_kernel_choice {
    constexpr int U = decltype(units)::value;
    // One wgmma kernel for lone searches and batches (a 1-D grid and the table's look-up once per
    // block): half the instantiations, and its registers are not the limit there.
    // Its two-warpgroup shape only where a batch or a collection asks for it (k <= 2, up to 512 bits).
    if constexpr (Kcap == 2 && U <= 2) {
      constexpr int many = knn_tuning::wgmma_many_warpgroups;
      if (c.wgmma && c.wgmma_warpgroups == many)
        return {knn_wgmma_kernel<U, Kcap, many>, knn_tuning::wgmma_block_threads(many), wgmma_shared_bytes(U, many),
                knn_wgmma_tile_kernel<U>, knn_tuning::wgmma_blocks_per_sm(many)};
    }
    constexpr int lone = knn_tuning::wgmma_lone_warpgroups;
    if (c.wgmma)
      return {knn_wgmma_kernel<U, Kcap, lone>, knn_tuning::wgmma_block_threads(lone), wgmma_shared_bytes(U, lone),
              knn_wgmma_tile_kernel<U>};
    if (c.tensor && c.m_tiles == 4 && U <= 2 && Kcap == 2)
      return {knn_tensor_kernel<U <= 2 ? U : 2, 2, 4, Batch>, knn_tuning::tensor_block_threads};
    if (c.tensor) return {knn_tensor_kernel<U, Kcap, Kcap <= 2 ? 2 : 1, Batch>, knn_tuning::tensor_block_threads};
    return {knn_popcount_kernel<U, Kcap, Batch>, knn_tuning::popcount_block_threads};
  };
  switch (c.units) {
    case 1: return pick(std::integral_constant<int, 1>{});
    case 2: return pick(std::integral_constant<int, 2>{});
    case 3: return pick(std::integral_constant<int, 3>{});
    default: return pick(std::integral_constant<int, 4>{});
  }
}

/// Whether the current GPU runs the warpgroup kernel: an sm_90 GPU and code built for sm_90a (the
/// kernel's attributes asked once per device).
struct wgmma_built_fact {};
inline bool wgmma_usable(int major, int minor) {
  if (major != 9 || minor != 0) return false;
  const void* kernel = reinterpret_cast<const void*>(knn_wgmma_kernel<1, 2, knn_tuning::wgmma_lone_warpgroups>);
  int built = 0;
  if (asked_once<wgmma_built_fact>(kernel, 0, 0, built, [&](int& value) {
        value = wgmma_kernel_built(kernel) ? 1 : 0;
        return cudaSuccess;
      }) != cudaSuccess)
    return false;
  return built != 0;
}

/// The kernel and tile shape for descriptors of `bytes`, k neighbours and `lists` (query, slice)
/// lists to fill: the warpgroup kernel where usable, else mma.sync on sm_80+ (or as `path` says),
/// the list length, the 256-bit units and the 16-query tiles per warp. `many_searches`: a batch or
/// a collection's searches (short slices: the wgmma kernel's two-warpgroup shape, up to 512 bits
/// and k <= 2).
inline cudaError_t choose_knn_kernel(int bytes, int k, match_path path, std::int64_t lists, knn_config& c,
                                     bool many_searches = false) {
  int device = 0, major = 0, minor = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device); e != cudaSuccess)
    return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device); e != cudaSuccess)
    return e;
  if (path == match_path::tensor_core && major < 8) return cudaErrorNotSupported;
  const bool usable = (path == match_path::wgmma || path == match_path::automatic) && wgmma_usable(major, minor);
  if (path == match_path::wgmma && !usable) return cudaErrorNotSupported;
  // automatic: the warpgroup kernel wherever it is usable (it is the faster from 1000 x 1000 to
  // 65,536 x 65,536, and for collections: knn_tuning and collection_tuning have the figures).
  c.wgmma = usable;
  c.tensor = c.wgmma || path == match_path::tensor_core || (path == match_path::automatic && major >= 8);
  c.kcap = k <= 2 ? 2 : 8;
  c.units = (bytes / 4 + 7) / 8;  // every kernel: 8 words = 256 bits per unit
  c.m_tiles = knn_tuning::tensor_m_tiles(c.kcap, c.units, lists);
  c.wgmma_warpgroups = many_searches && c.kcap == 2 && c.units <= 2 ? knn_tuning::wgmma_many_warpgroups
                                                                    : knn_tuning::wgmma_lone_warpgroups;
  c.block_queries = c.wgmma    ? knn_tuning::wgmma_block_queries(c.wgmma_warpgroups)
                    : c.tensor ? knn_tuning::tensor_block_threads / 32 * 16 * c.m_tiles
                               : knn_tuning::popcount_block_threads;
  return cudaSuccess;
}

inline cudaError_t configure_knn(const knn_pair* pairs, int count, int bytes, int k, match_path path, knn_config& c) {
  if (count < 0 || (count > 0 && pairs == nullptr) || bytes <= 0 || bytes % 4 != 0 || bytes > match_max_bytes ||
      k < 1 || k > match_max_k)
    return cudaErrorInvalidValue;
  std::int64_t queries = 0;
  c.total_work = 0;
  c.searches = 0;
  for (int i = 0; i < count; ++i) {
    if (!valid_knn_pair(pairs[i])) return cudaErrorInvalidValue;
    queries += pairs[i].queries;
    c.total_work += double(pairs[i].queries) * double(pairs[i].trains);
    c.searches += pairs[i].queries > 0;
  }
  if (const cudaError_t e = choose_knn_kernel(bytes, k, path, queries, c, c.searches > 1); e != cudaSuccess) return e;
  c.want_blocks = std::int64_t(sm_count()) *
                  (c.tensor ? knn_tuning::tensor_blocks_per_sm : knn_tuning::popcount_blocks_per_sm);
  c.resident = 0;
  if (c.tensor && c.searches == 1) {
    const knn_kernel_choice lone = c.kcap <= 2 ? knn_kernel_for<2, false>(c) : knn_kernel_for<8, false>(c);
    int per_sm = 0;
    if (const cudaError_t e = lone.prepare(); e != cudaSuccess) return e;
    if (const cudaError_t e = asked_once<resident_blocks_fact>(
            reinterpret_cast<const void*>(lone.kernel), lone.threads, std::size_t(lone.shared_bytes), per_sm,
            [&](int& value) {
              return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&value, lone.kernel, lone.threads,
                                                                   lone.shared_bytes);
            });
        e != cudaSuccess)
      return e;
    c.resident = std::int64_t(per_sm) * sm_count();
  }
  return cudaSuccess;
}

/// The fewest slices (at most `most`) whose blocks fill the GPU's resident slots in whole waves to
/// 95% or more (a last wave that is mostly empty costs the tensor-core kernel up to a fifth on
/// the H200); failing that, the best filled.
inline std::int64_t slices_for_whole_waves(std::int64_t query_blocks, std::int64_t resident, std::int64_t most) {
  std::int64_t best = 1;
  double best_fill = 0;
  for (std::int64_t s = 1; s <= most; ++s) {
    const double waves = double(query_blocks * s) / double(resident);
    const double fill = waves / std::ceil(waves);
    if (fill >= knn_tuning::whole_wave_fill) return s;
    if (fill > best_fill + 1e-9) best = s, best_fill = fill;
    if (waves > 16) break;
  }
  return best;
}

/// The slices (at most `most`) of a lone wgmma search: those that minimise the waves of blocks times
/// a block's time, taken as its rows (in whole wgmmas of 128) plus a fixed cost of
/// knn_tuning::wgmma_block_overhead_rows (its pipeline's start, its lists' first fill, their
/// store); of equal costs, the fewest slices.
inline std::int64_t slices_for_wgmma(std::int64_t query_blocks, std::int64_t resident, std::int64_t trains,
                                     std::int64_t most) {
  std::int64_t best = 1;
  double best_cost = 0;
  for (std::int64_t s = 1; s <= most; ++s) {
    const double waves = std::ceil(double(query_blocks * s) / double(resident));
    const double rows = std::ceil(double(trains) / double(s) / 128) * 128;
    const double cost = waves * (rows + knn_tuning::wgmma_block_overhead_rows);
    if (s == 1 || cost < best_cost) best = s, best_cost = cost;
    if (waves > 16) break;
  }
  return best;
}

/// A search gets its share of the wanted blocks by its work; when its query blocks are fewer, the
/// training set is cut into slices of at least min_slice_rows rows. A lone tensor-core search picks its
/// slices to fill whole waves; a lone wgmma search by slices_for_wgmma, slices of at least one
/// tile (knn_tuning::wgmma_train_tile rows). Every wgmma slice has at most wgmma_slice_rows_most rows.
inline knn_pair_plan plan_knn_pair(const knn_config& c, const knn_pair& p) {
  knn_pair_plan plan{};
  const std::int64_t qb = (p.queries + c.block_queries - 1) / c.block_queries;
  plan.query_blocks = static_cast<int>(qb < 1 ? 1 : qb);
  const bool lone_wgmma = c.resident > 0 && c.wgmma;
  std::int64_t most = p.trains / (lone_wgmma ? knn_tuning::wgmma_train_tile : knn_tuning::min_slice_rows);
  if (most > 65535) most = 65535;
  std::int64_t slices;
  if (lone_wgmma) {
    slices = slices_for_wgmma(plan.query_blocks, c.resident, p.trains, most < 1 ? 1 : most);
  } else if (c.resident > 0) {
    slices = slices_for_whole_waves(plan.query_blocks, c.resident, most < 1 ? 1 : most);
  } else {
    const double share = c.total_work > 0 ? double(p.queries) * double(p.trains) / c.total_work : 1.0;
    const auto want = static_cast<std::int64_t>(double(c.want_blocks) * share + 0.5);
    slices = (want + plan.query_blocks - 1) / plan.query_blocks;
  }
  if (slices > most) slices = most;
  // The wgmma kernel's slices have at most wgmma_slice_rows_most rows (at most `most` slices).
  if (c.wgmma) slices = std::max(slices, (p.trains + wgmma_slice_rows_most - 1) / wgmma_slice_rows_most);
  plan.slices = static_cast<int>(slices < 1 ? 1 : slices);
  plan.partial_bytes = round_up(sizeof(std::uint64_t) * std::size_t(plan.slices) * std::size_t(p.queries) * c.kcap);
  return plan;
}

/// Bytes of a search's tiles for the wgmma kernel (none for the others): `trains` rows in
/// `slices` even slices (wgmma_first_tile).
inline std::size_t knn_tiled_bytes(const knn_config& c, std::int64_t trains, std::int64_t slices) {
  return c.wgmma ? std::size_t(wgmma_tiles_bound(trains, slices)) * std::size_t(wgmma_tile_bytes(c.units)) : 0;
}

/// The wgmma kernel's tiling of a launch's training slices (each search's `tiles`): a block per
/// tile of the longest slice (most_slice_rows), per slice of the most sliced search (up to 65535;
/// the blocks loop over the rest), per search.
inline cudaError_t launch_knn_tiling(const knn_kernel_choice& kernel, const knn_launch& searches,
                                     std::int64_t most_slice_rows, int words, cudaStream_t stream) {
  int most_slices = 1;
  for (int i = 0; i < searches.count; ++i) most_slices = std::max(most_slices, searches.problem[i].slices);
  const std::int64_t tiles = (most_slice_rows + knn_tuning::wgmma_train_tile - 1) / knn_tuning::wgmma_train_tile;
  const dim3 grid(static_cast<unsigned>(tiles < 1 ? 1 : tiles), static_cast<unsigned>(std::min(most_slices, 65535)),
                  static_cast<unsigned>(searches.count));
  return launch(kernel.tiling, grid, knn_tuning::wgmma_train_tile, 0, stream, searches, words);
}

/// The search kernel of one launch's searches (after the wgmma kernel's tiling), then the finish
/// kernel that merges their slices.
template <int Kcap>
cudaError_t launch_knn_kernels(const knn_config& c, const knn_launch& searches, int blocks, int words, int k,
                               std::int64_t most_queries, std::int64_t most_slice_rows, cudaStream_t stream) {
  // One search: a (query blocks, slices) grid; several, or the wgmma kernel: a 1-D grid and the
  // table search.
  const bool batch = searches.count > 1 || c.wgmma;
  const knn_kernel_choice search = batch ? knn_kernel_for<Kcap, true>(c) : knn_kernel_for<Kcap, false>(c);
  const dim3 grid = batch ? dim3(blocks) : dim3(searches.problem[0].query_blocks, searches.problem[0].slices);
  if (const cudaError_t e = search.prepare(); e != cudaSuccess) return e;
  if (search.tiling != nullptr)
    if (const cudaError_t e = launch_knn_tiling(search, searches, most_slice_rows, words, stream); e != cudaSuccess)
      return e;
  // The wgmma kernel overlaps the tiling's end (programmatic dependent launch; it waits for the
  // tiles before reading them).
  const cudaError_t searched =
      search.tiling != nullptr
          ? launch_overlapped(search.kernel, static_cast<int>(grid.x), search.threads, search.shared_bytes, stream,
                              searches, words)
          : launch(search.kernel, grid, search.threads, search.shared_bytes, stream, searches, words);
  if (searched != cudaSuccess) return searched;
  constexpr int threads = knn_tuning::finish_threads;
  const std::int64_t x = (most_queries + threads - 1) / threads;
  return launch(knn_finish_kernel<Kcap>, dim3(static_cast<unsigned>(x < 1 ? 1 : x > 65535 ? 65535 : x), searches.count),
                threads, 0, stream, searches, k);
}

/// The host function: configure the call, carve the temporary storage (each search's partial
/// lists, one after the other, and for the wgmma kernel the tiled training sets of the largest
/// launch, which each launch reuses in stream order), and launch the searches in launches of up
/// to knn_launch_capacity.
inline cudaError_t knn_hamming_batched(void* temp_storage, std::size_t& temp_bytes, const knn_pair* pairs, int count,
                                       int bytes, int k, match_path path, cudaStream_t stream) {
  knn_config c{};
  if (const cudaError_t e = configure_knn(pairs, count, bytes, k, path, c); e != cudaSuccess) return e;
  // Launches of up to knn_launch_capacity searches with queries and under 2^31 blocks (searches
  // without queries need nothing): `next_launch` says whether a search starts a new one.
  auto next_launch = [](int searches, std::int64_t blocks, std::int64_t more_blocks) {
    return searches == knn_launch_capacity || blocks + more_blocks > INT32_MAX;
  };
  std::size_t partial_bytes = 0, tiled_bytes = 0;
  {
    std::size_t launch_tiled = 0;
    int searches = 0;
    std::int64_t blocks = 0;
    for (int i = 0; i < count; ++i) {
      const knn_pair_plan plan = plan_knn_pair(c, pairs[i]);
      partial_bytes += plan.partial_bytes;
      if (pairs[i].queries == 0) continue;
      const std::int64_t pair_blocks = std::int64_t(plan.query_blocks) * plan.slices;
      if (next_launch(searches, blocks, pair_blocks)) {
        tiled_bytes = std::max(tiled_bytes, launch_tiled);
        launch_tiled = 0, searches = 0, blocks = 0;
      }
      launch_tiled += knn_tiled_bytes(c, pairs[i].trains, plan.slices);
      ++searches, blocks += pair_blocks;
    }
    tiled_bytes = std::max(tiled_bytes, launch_tiled);
  }
  temporary_storage<2> temp{{partial_bytes, tiled_bytes}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  knn_launch launch{};
  std::int64_t blocks = 0, most_queries = 0, most_slice_rows = 0;
  char* partials = temp.get<char>(0);
  std::uint8_t* tiled = temp.get<std::uint8_t>(1);
  auto flush = [&]() -> cudaError_t {
    if (launch.count == 0) return cudaSuccess;
    const int words = bytes / 4, b = static_cast<int>(blocks);
    const cudaError_t e =
        c.kcap <= 2 ? launch_knn_kernels<2>(c, launch, b, words, k, most_queries, most_slice_rows, stream)
                    : launch_knn_kernels<8>(c, launch, b, words, k, most_queries, most_slice_rows, stream);
    launch.count = 0, blocks = 0, most_queries = 0, most_slice_rows = 0;
    tiled = temp.get<std::uint8_t>(1);
    return e;
  };
  for (int i = 0; i < count; ++i) {
    const knn_pair& pair = pairs[i];
    if (pair.queries == 0) continue;
    const knn_pair_plan plan = plan_knn_pair(c, pair);
    const std::int64_t pair_blocks = std::int64_t(plan.query_blocks) * plan.slices;
    if (next_launch(launch.count, blocks, pair_blocks))
      if (const cudaError_t e = flush(); e != cudaSuccess) return e;
    launch.problem[launch.count++] = knn_problem{
        reinterpret_cast<const std::uint32_t*>(pair.query), reinterpret_cast<const std::uint32_t*>(pair.train),
        reinterpret_cast<std::uint64_t*>(partials), pair.idx, pair.dist, static_cast<std::int32_t>(pair.queries),
        static_cast<std::int32_t>(pair.trains), static_cast<std::int32_t>(pair.first_train_index), plan.query_blocks,
        plan.slices, static_cast<std::int32_t>(blocks), pair.merge ? 1 : 0, nullptr, c.wgmma ? tiled : nullptr};
    partials += plan.partial_bytes;
    tiled += knn_tiled_bytes(c, pair.trains, plan.slices);
    blocks += pair_blocks;
    most_queries = std::max<std::int64_t>(most_queries, pair.queries);
    most_slice_rows = std::max<std::int64_t>(most_slice_rows, (pair.trains + plan.slices - 1) / plan.slices);
  }
  return flush();
}

}  // namespace multireduce::cuda::detail
