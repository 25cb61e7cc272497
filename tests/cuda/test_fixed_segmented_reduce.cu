// multireduce/cuda/fixed_segmented_reduce.cuh on the GPU against sequential folds: every kernel
// (direct, tile, group, block with and without pieces), misaligned inputs and outputs, a
// non-commutative operator. Outputs poisoned; skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <multireduce/cuda.cuh>

#include "../common/device_test.cuh"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;
using multireduce::key_value;

TEST(CudaDeviceSegmented, FixedLengthsAllPaths) {
  MR_REQUIRE_GPU();
  const auto v = random_floats(1 << 22, seed_for("fixed segments"));
  auto in = on_device<float>(v);
  mc::workspace ws;
  for (std::int64_t L : {0, 1, 2, 3, 4, 7, 16, 17, 32, 33, 64, 100, 128, 1000, 2048, 2049, 4096, 65536, 1 << 20, 1 << 22}) {
    const std::int64_t segments = L == 0 ? 1000 : std::int64_t(v.size()) / L;
    SCOPED_TRACE(::testing::Message() << "L=" << L << " segments=" << segments);
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    auto out = on_device<float>(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce_async(in.data(), out.data(), segments, L, multireduce::sum{}, 0.5f);
    EXPECT_EQ(host_copy(out), reference_segments(v, b, e, multireduce::sum{}, 0.5f));
    auto out_max = on_device<float>(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce_async(in.data(), out_max.data(), segments, L, multireduce::maximum{}, -INFINITY);
    EXPECT_EQ(host_copy(out_max), reference_segments(v, b, e, multireduce::maximum{}, -INFINITY));
  }
  // Short segments off the fast path's alignment and row grid: a misaligned input (the tile
  // kernel), a misaligned output (scalar stores), and a segment count that leaves a partial row.
  for (std::int64_t L : {1, 2, 4, 8, 16}) {
    for (int shift_in : {0, 1}) {
      for (int shift_out : {0, 1}) {
        const std::int64_t segments = (std::int64_t(v.size()) - 1) / L - 3;
        SCOPED_TRACE(::testing::Message() << "L=" << L << " in+" << shift_in << " out+" << shift_out);
        std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
        for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = shift_in + s * L, e[std::size_t(s)] = shift_in + s * L + L;
        auto out = on_device<float>(static_cast<std::size_t>(segments + 1));
        ws.fixed_segmented_reduce_async(in.data() + shift_in, out.data() + shift_out, segments, L, multireduce::sum{}, 0.5f);
        auto got = host_copy(out);
        got.erase(got.begin(), got.begin() + shift_out);
        got.resize(static_cast<std::size_t>(segments));
        EXPECT_EQ(got, reference_segments(v, b, e, multireduce::sum{}, 0.5f));
      }
    }
  }
  // Non-commutative, through every path.
  const auto m = random_mats(1 << 20, seed_for("fixed segments mat"));
  auto min = on_device<mat2_mod>(m);
  for (std::int64_t L : {1, 4, 5, 16, 40, 3000, 1 << 19}) {
    SCOPED_TRACE(::testing::Message() << "mat2 L=" << L);
    const std::int64_t segments = std::int64_t(m.size()) / L;
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    auto out = on_device<mat2_mod>(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce_async(min.data(), out.data(), segments, L, mat2_mod_product{}, mat_identity);
    const auto got = host_copy(out);
    const auto want = reference_segments(m, b, e, mat2_mod_product{}, mat_identity);
    for (std::size_t s = 0; s < want.size(); ++s) ASSERT_TRUE(got[s] == want[s]) << "segment " << s;
  }
}

// A group of G lanes first folds the elements before its segment's first 16-byte boundary: up to
// 15 of them for 1-byte elements and 3 for 4-byte ones, more than the lanes of groups of 1, 4 or 8
// (fixed lengths 17-64, and offsets in two arrays with mean lengths up to 8 and 24).

}  // namespace
}  // namespace mr_test
