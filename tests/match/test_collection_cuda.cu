// The GPU collection matcher (cuda::match_collection, match/collection_cuda.cuh) against an
// independent bit-by-bit reference: every pair's matches, both kernels, every rule, images of 0, 1
// and k - 1 descriptors and around the tiles' edges, every pair / a list / sequential, the rows on
// the host (going up in two pieces) or already on the GPU, and the image blocks forced by a small
// memory budget with many small rounds. Random inputs from logged seeds. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <multireduce/match/collection_cuda.cuh>

#include "../common/collection_reference.hpp"
#include "../common/device_test.cuh"

namespace mr_test {
namespace {

namespace mr = multireduce;
namespace mc = multireduce::cuda;

/// Runs the GPU matcher and checks that every pair is handed out once, equal to the reference.
void expect_gpu_matches_reference(const test_collection& c, const mr::descriptor_collection& view,
                                  const std::vector<mr::image_pair>& pairs, int k, const mr::match_rule& rule,
                                  const mc::collection_options& options) {
  mc::workspace ws;
  std::vector<int> handed(pairs.size(), 0);
  mr::collection_collector collector(pairs.size());
  mc::match_collection(ws, view, pairs, k, rule,
                       [&](std::int64_t p, std::span<const mr::match> kept) {
                         ++handed[std::size_t(p)];
                         collector(p, kept);
                       },
                       options);
  for (std::size_t p = 0; p < pairs.size(); ++p) ASSERT_EQ(handed[p], 1) << "pair " << p;
  const mr::collection_matches found = collector.take();
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    SCOPED_TRACE("pair " + std::to_string(pairs[p].first) + " " + std::to_string(pairs[p].second));
    const auto got = found.pair(std::int64_t(p));
    ASSERT_EQ(std::vector<mr::match>(got.begin(), got.end()), reference_pair_matches(c, pairs[p], k, rule));
  }
}

const mr::match_rule rules[] = {
    {}, {.ratio = 0.8}, {.margin = 2}, {.max_distance = 100}, {.ratio = 0.9, .cross_check = true}, {.cross_check = true},
};

TEST(CudaCollection, EveryPairEqualsTheReference) {
  MR_REQUIRE_GPU();
  // 0, 1 and k - 1 rows; around the 128-row training tiles and the 128/256-query blocks.
  const std::vector<std::int64_t> sizes = {0, 1, 2, 127, 129, 40, 255, 257, 7};
  for (int bytes : {32, 64}) {
    for (bool sparse : {false, true}) {
      const test_collection c = random_collection(
          sizes, bytes, seed_for(("gpu collection " + std::to_string(bytes) + (sparse ? " sparse" : "")).c_str()),
          sparse);
      // automatic: the warpgroup kernel on Hopper built for sm_90a, else mma.sync.
      for (auto path : {mc::match_path::automatic, mc::match_path::tensor_core, mc::match_path::popcount}) {
        for (const auto& rule : rules) {
          for (int k : {1, 2, 3}) {
            if ((rule.ratio > 0 || rule.margin >= 0) && k < 2) continue;
            SCOPED_TRACE("bytes " + std::to_string(bytes) + " k " + std::to_string(k) + " ratio " +
                         std::to_string(rule.ratio) + " margin " + std::to_string(rule.margin) + " cross " +
                         std::to_string(rule.cross_check) + (path == mc::match_path::popcount ? " popcount" : path == mc::match_path::automatic ? " automatic" : ""));
            expect_gpu_matches_reference(c, c.view(), mr::all_pairs(std::int64_t(sizes.size())), k, rule,
                                         {.path = path});
          }
        }
      }
      expect_gpu_matches_reference(c, c.view(), mr::sequential_pairs(std::int64_t(sizes.size()), 3), 2,
                                   {.ratio = 0.8}, {});
      expect_gpu_matches_reference(c, c.view(), {{4, 8}, {0, 6}, {2, 3}, {1, 7}, {3, 4}}, 2,
                                   {.ratio = 0.8, .cross_check = true}, {});
    }
  }
}

TEST(CudaCollection, ImageBlocksAndSmallRoundsGiveTheSameMatches) {
  MR_REQUIRE_GPU();
  std::vector<std::int64_t> sizes;
  for (int n = 0; n < 14; ++n) sizes.push_back(n == 5 ? 0 : 60 + 37 * (n % 5));
  const test_collection c = random_collection(sizes, 32, seed_for("gpu collection blocks"), false);
  const auto pairs = mr::all_pairs(std::int64_t(sizes.size()));
  // Rounds of at most 300 query rows (at least the largest image's 208), and a budget that leaves
  // room for about three images' rows at a time (with the wgmma kernel's tiles of them where it
  // runs): many image blocks, each j block passing through.
  const std::size_t round_bytes = 300 * mc::detail::round_bytes_per_row(2, true);
  mc::detail::knn_config kernel{};
  ASSERT_EQ(mc::detail::choose_knn_kernel(32, 2, mc::match_path::automatic, 1, kernel), cudaSuccess);
  const std::size_t image = mc::detail::image_device_bytes(kernel, 32, 208);
  for (std::size_t for_rows : {3 * image, 7 * image}) {
    SCOPED_TRACE("rows budget " + std::to_string(for_rows));
    const mc::collection_options options{.memory_budget = round_bytes + for_rows, .round_rows = 300};
    expect_gpu_matches_reference(c, c.view(), pairs, 2, {.ratio = 0.8}, options);
    expect_gpu_matches_reference(c, c.view(), pairs, 2, {.ratio = 0.9, .cross_check = true}, options);
  }
  // A budget too small for the largest image: a clear error, nothing handed out.
  mc::workspace ws;
  EXPECT_THROW(mc::match_collection(ws, c.view(), pairs, 2, {.ratio = 0.8},
                                    [](std::int64_t, std::span<const mr::match>) { FAIL() << "handed out a pair"; },
                                    {.memory_budget = 4096, .round_rows = 300}),
               mc::error);
}

TEST(CudaCollectionPlan, TheFirstImagesGoUpFirst) {
  // The images whose rows go up before the rest (an eighth of the rows, at least one image).
  auto split_of = [](const std::vector<std::int64_t>& sizes) {
    std::vector<std::int64_t> offsets{0};
    for (const std::int64_t n : sizes) offsets.push_back(offsets.back() + n);
    const std::vector<std::uint8_t> rows(std::size_t(offsets.back()) * 32);
    return mc::detail::first_upload_images(mr::descriptor_collection{rows.data(), offsets, 32});
  };
  EXPECT_EQ(split_of({0, 1, 2, 127, 129, 40, 255, 257, 7}), 4);  // 130 rows of 817 reach 102
  EXPECT_EQ(split_of(std::vector<std::int64_t>(16, 100)), 2);
  EXPECT_EQ(split_of({300, 5, 7, 129}), 1);
  EXPECT_EQ(split_of({8}), 1);
  EXPECT_EQ(split_of({0, 0, 0}), 1);
}

TEST(CudaCollection, RowsFromTheHostGoUpInTwoPieces) {
  MR_REQUIRE_GPU();
  // Pairs among the first images are searched while the rest go up: none of them (a first image
  // of more than an eighth of the rows), or those among the first two of 16 (with the rest's
  // pairs and the cross-check reading across the two pieces).
  for (const auto& sizes : {std::vector<std::int64_t>{300, 5, 7, 129, 0, 64}, std::vector<std::int64_t>(16, 90)}) {
    const std::string name = "gpu collection two pieces " + std::to_string(sizes.size());
    const test_collection c = random_collection(sizes, 32, seed_for(name.c_str()), true);
    const auto pairs = mr::all_pairs(std::int64_t(sizes.size()));
    expect_gpu_matches_reference(c, c.view(), pairs, 2, {.ratio = 0.8}, {});
    expect_gpu_matches_reference(c, c.view(), pairs, 2, {.ratio = 0.9, .cross_check = true}, {});
    expect_gpu_matches_reference(c, c.view(), {{1, 2}, {0, 1}, {3, 5}, {0, 5}}, 1, {.cross_check = true}, {});
  }
}

TEST(CudaCollection, RowsAlreadyOnTheGpu) {
  MR_REQUIRE_GPU();
  const std::vector<std::int64_t> sizes = {100, 3, 250, 0, 64};
  const test_collection c = random_collection(sizes, 32, seed_for("gpu collection device rows"), true);
  auto rows = on_device(c.rows);
  mr::descriptor_collection on_gpu = c.view();
  on_gpu.rows = rows.data();
  expect_gpu_matches_reference(c, on_gpu, mr::all_pairs(std::int64_t(sizes.size())), 2, {.ratio = 0.8}, {});
  expect_gpu_matches_reference(c, on_gpu, mr::all_pairs(std::int64_t(sizes.size())), 1, {.cross_check = true}, {});
  // 512-bit rows on the GPU and a budget whose rounds leave less than the searched images' tiles
  // (3 tiles of 16,896 bytes against 41,340): the searches take mma.sync where wgmma would run.
  // The matches are the same either way: this checks that path's matches, not which kernel ran.
  const test_collection wide = random_collection(sizes, 64, seed_for("gpu collection device rows, tight"), true);
  auto wide_rows = on_device(wide.rows);
  mr::descriptor_collection wide_on_gpu = wide.view();
  wide_on_gpu.rows = wide_rows.data();
  const std::size_t budget = 4 * 260 * mc::detail::round_bytes_per_row(2, false);
  expect_gpu_matches_reference(wide, wide_on_gpu, mr::all_pairs(std::int64_t(sizes.size())), 2, {.ratio = 0.8},
                               {.memory_budget = budget, .round_rows = 260});
}

// An image past the wgmma kernel's slice limit (wgmma_slice_rows_most rows: an image is one
// slice): `automatic` takes mma.sync for the collection and gives the reference's matches; an
// explicit wgmma path is refused.
TEST(CudaCollection, ImagesPastTheWgmmaSliceLimit) {
  MR_REQUIRE_GPU();
  const std::vector<std::int64_t> sizes = {3, mc::detail::wgmma_slice_rows_most + 1, 2};
  const test_collection c = random_collection(sizes, 32, seed_for("gpu collection past the slice limit"), false);
  const std::vector<mr::image_pair> pairs = {{0, 1}, {1, 2}};
  expect_gpu_matches_reference(c, c.view(), pairs, 2, {.ratio = 0.8}, {});
  int device = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
  if (!mc::detail::wgmma_usable(major, minor)) GTEST_SKIP() << "no wgmma kernel on this GPU: the refusal is not reached";
  mc::workspace ws;
  const auto none = [](std::int64_t, std::span<const mr::match>) { FAIL() << "handed out a pair"; };
  EXPECT_THROW(mc::match_collection(ws, c.view(), pairs, 2, {.ratio = 0.8}, none, {.path = mc::match_path::wgmma}),
               std::invalid_argument);
}

TEST(CudaCollection, BadArgumentsAreRefusedBeforeAnyWork) {
  MR_REQUIRE_GPU();
  const test_collection c = random_collection({3, 4}, 32, seed_for("gpu collection refusals"), false);
  mc::workspace ws;
  const auto none = [](std::int64_t, std::span<const mr::match>) { FAIL() << "handed out a pair"; };
  const std::vector<mr::image_pair> self = {{1, 1}}, outside = {{0, 2}};
  EXPECT_THROW(mc::match_collection(ws, c.view(), self, 2, {}, none), std::invalid_argument);
  EXPECT_THROW(mc::match_collection(ws, c.view(), outside, 2, {}, none), std::invalid_argument);
  const test_collection wide = random_collection({3, 4}, 132, seed_for("gpu collection wide"), false);
  const std::vector<mr::image_pair> one = {{0, 1}};
  EXPECT_THROW(mc::match_collection(ws, wide.view(), one, 2, {}, none), std::invalid_argument);
}

}  // namespace
}  // namespace mr_test
