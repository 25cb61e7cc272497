// The HIP tutorial's nine kernels (src/bench/classic_kernels/hip_tutorial.hpp) on the host
// emulator: with 64-lane warps (the wavefront the tutorial targets) and with 32-lane ones, every
// version's result equals a plain loop's, on sizes that leave partial blocks and partial items, for
// a sum (which wraps) and a max (where a wrong padding value would show). The GPU suite
// (`multireduce bench hip-tutorial`) checks the same emulated results against the CUDA kernels'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <multireduce/operators.hpp>

#include "bench/classic_kernels/hip_tutorial_emulated.hpp"

namespace {

namespace ht = multireduce::bench::hip_tutorial;

std::vector<std::uint32_t> random_words(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = static_cast<std::uint32_t>(g());
  return v;
}

class HipTutorialEmulated : public ::testing::TestWithParam<std::size_t> {};

TEST_P(HipTutorialEmulated, EveryVersionAndWarpSizeMatchesALoop) {
  const std::size_t n = GetParam();
  const std::uint64_t seed = 1000 + n;
  SCOPED_TRACE(::testing::Message() << "n = " << n << ", seed " << seed);
  const auto input = random_words(n, seed);
  std::uint32_t want_sum = 0, want_max = 0;
  for (std::uint32_t x : input) want_sum += x, want_max = std::max(want_max, x);
  ht::for_each_version([&]<ht::version V>() {
    SCOPED_TRACE(ht::version_name(V));
    EXPECT_EQ((ht::emulate<V, 64>(input, multireduce::sum{}, 0u)), want_sum);
    EXPECT_EQ((ht::emulate<V, 32>(input, multireduce::sum{}, 0u)), want_sum);
    EXPECT_EQ((ht::emulate<V, 64>(input, multireduce::maximum{}, 0u)), want_max);
  });
}

// No element (the identity); 1 element; one block's worth minus one; several blocks with a ragged
// end (4 items per thread leave a partial chunk). More than the two-pass grid cap (1024 blocks of
// 1024) is too slow here.
INSTANTIATE_TEST_SUITE_P(Sizes, HipTutorialEmulated, ::testing::Values(0, 1, 255, 2 * 1024 + 3, 5003));

TEST(HipTutorialPasses, TwoPassNeedsTwoPassesAndOthersShrinkByTheirFactor) {
  std::vector<std::uint32_t> grids;
  ht::passes(ht::version::two_pass, 1u << 28, 256, 4, [&](std::uint32_t, std::uint32_t g) { grids.push_back(g); });
  EXPECT_EQ(grids, (std::vector<std::uint32_t>{1024, 1}));
  grids.clear();
  ht::passes(ht::version::naive, 1u << 20, 256, 4, [&](std::uint32_t, std::uint32_t g) { grids.push_back(g); });
  EXPECT_EQ(grids, (std::vector<std::uint32_t>{4096, 16, 1}));
  grids.clear();
  ht::passes(ht::version::upper_half, 1, 256, 4, [&](std::uint32_t, std::uint32_t g) { grids.push_back(g); });
  EXPECT_EQ(grids, (std::vector<std::uint32_t>{1}));
}

}  // namespace
