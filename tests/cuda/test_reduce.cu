// multireduce/cuda/reduce.cuh on the GPU against sequential host folds: every size class, unaligned
// starts, determinism, NumPy's NaN and tie rules, a non-commutative operator. Outputs poisoned,
// inputs from logged seeds; skipped without a GPU.
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

TEST(CudaDeviceReduce, SumMinMaxArgOverSizesAndOffsets) {
  MR_REQUIRE_GPU();
  const auto all = random_ints((1 << 20) * 5 + 64, seed_for("reduce"));
  mc::workspace ws;
  for (std::int64_t n : sizes) {
    for (int offset : {0, 1, 3}) {  // unaligned starts exercise the scalar head
      if (offset + n > std::int64_t(all.size())) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " offset=" << offset);
      auto d = on_device<int>(all);
      const int* in = d.data() + offset;
      const auto* h = all.data() + offset;
      long long sum = 0;
      int mn = INT32_MAX, mx = INT32_MIN;
      std::int64_t imn = -1, imx = -1;
      for (std::int64_t i = 0; i < n; ++i) {
        sum += h[i];
        if (imn < 0 || h[i] < mn) mn = h[i], imn = i;
        if (imx < 0 || h[i] > mx) mx = h[i], imx = i;
      }
      EXPECT_EQ(ws.reduce(in, n, multireduce::sum{}, 7LL), sum + 7);
      EXPECT_EQ(ws.reduce(in, n, multireduce::minimum{}, INT32_MAX), mn);
      EXPECT_EQ(ws.reduce(in, n, multireduce::maximum{}, INT32_MIN), mx);
      const auto a = ws.argmin(in, n), b = ws.argmax(in, n);
      EXPECT_EQ(a.index, imn);
      EXPECT_EQ(b.index, imx);
      if (n > 0) EXPECT_EQ(a.value, mn);
      // The CUB-style entry point (with its ticket memset) gives the same.
      std::size_t bytes = 0;
      auto out = on_device<long long>(1);
      ASSERT_EQ(mc::reduce(nullptr, bytes, in, out.data(), n, multireduce::sum{}, 0LL), cudaSuccess);
      auto temp = on_device<char>(bytes);
      ASSERT_EQ(mc::reduce(temp.data(), bytes, in, out.data(), n, multireduce::sum{}, 0LL), cudaSuccess);
      EXPECT_EQ(host_copy(out)[0], sum);
    }
  }
}

// Integer sums finish with one atomic add per block into a slot beside the ticket (ticket.cuh:
// add_block_sum): full-range 32- and 64-bit values that wrap, many blocks, repeated calls on one
// workspace (the slot must be back at zero after each), and the CUB-style entry on temporary
// storage poisoned with 0xff (its memset must clear the slot too).
TEST(CudaDeviceReduce, IntegerSumsWrapExactlyAndLeaveTheirSlotZero) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("integer sums");
  std::mt19937_64 g(seed);
  const std::int64_t n = 3'000'017;
  std::vector<std::uint32_t> u32(static_cast<std::size_t>(n));
  std::vector<std::int64_t> i64(static_cast<std::size_t>(n));
  std::uint32_t want32 = 5;
  std::uint64_t want64 = 0;
  for (std::size_t i = 0; i < u32.size(); ++i) {
    u32[i] = static_cast<std::uint32_t>(g());
    i64[i] = static_cast<std::int64_t>(g());
    want32 += u32[i];
    want64 += static_cast<std::uint64_t>(i64[i]);
  }
  auto d32 = on_device<std::uint32_t>(u32);
  auto d64 = on_device<std::int64_t>(i64);
  const auto* as_int = reinterpret_cast<const int*>(d32.data());
  mc::workspace ws;
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(::testing::Message() << "call " << call);
    EXPECT_EQ(ws.reduce(d32.data(), n, multireduce::sum{}, 5u), want32);
    EXPECT_EQ(static_cast<std::uint32_t>(ws.reduce(as_int, n, multireduce::sum{}, 5)), want32);
    EXPECT_EQ(static_cast<std::uint64_t>(ws.reduce(d64.data(), n, multireduce::sum{}, std::int64_t{0})), want64);
    // A float sum and statistics on the same workspace after the integer sums: the ticket region
    // they share is clean.
    const std::vector<float> ones(4096, 1.0f);
    auto d_ones = on_device<float>(ones);
    EXPECT_EQ(ws.reduce(d_ones.data(), 4096, multireduce::sum{}, 0.0f), 4096.0f);
  }
  std::size_t bytes = 0;
  auto out = on_device<std::uint32_t>(1);
  ASSERT_EQ(mc::reduce(nullptr, bytes, d32.data(), out.data(), n, multireduce::sum{}, 5u), cudaSuccess);
  auto temp = on_device<char>(bytes);
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(cudaMemset(temp.data(), 0xff, bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(out.data(), 0x7f, 4), cudaSuccess);
    ASSERT_EQ(mc::reduce(temp.data(), bytes, d32.data(), out.data(), n, multireduce::sum{}, 5u), cudaSuccess);
    EXPECT_EQ(host_copy(out)[0], want32) << "seed " << seed;
  }
}

TEST(CudaDeviceReduce, DeterministicFloatSumAndNaNRules) {
  MR_REQUIRE_GPU();
  std::mt19937_64 g(seed_for("determinism"));
  std::vector<float> v(10'000'019);
  std::normal_distribution<float> d(0.f, 1.f);
  for (auto& x : v) x = d(g);
  auto in = on_device<float>(v);
  mc::workspace ws;
  const float first = ws.reduce(in.data(), std::int64_t(v.size()), multireduce::sum{}, 0.f);
  for (int r = 0; r < 5; ++r) {
    const float again = ws.reduce(in.data(), std::int64_t(v.size()), multireduce::sum{}, 0.f);
    EXPECT_EQ(std::memcmp(&first, &again, sizeof first), 0);
  }
  double reference = 0;
  for (float x : v) reference += x;
  EXPECT_NEAR(first, reference, 1e-3 * std::sqrt(double(v.size())));
  // NaN: min/max propagate, argmin/argmax give the first NaN; ties give the first index.
  v.assign(1 << 20, 1.0f);
  v[1000] = -5.f;
  v[2000] = -5.f;
  v[777777] = NAN;
  v[900000] = NAN;
  auto nan_in = on_device<float>(v);
  EXPECT_TRUE(std::isnan(ws.reduce(nan_in.data(), std::int64_t(v.size()), multireduce::minimum{}, INFINITY)));
  EXPECT_EQ(ws.argmin(nan_in.data(), std::int64_t(v.size())).index, 777777);
  EXPECT_EQ(ws.argmax(nan_in.data(), std::int64_t(v.size())).index, 777777);
  EXPECT_EQ(ws.argmin(nan_in.data(), 777777).index, 1000);
  // All equal: index 0, also for infinities.
  v.assign(100000, INFINITY);
  auto inf_in = on_device<float>(v);
  EXPECT_EQ(ws.argmin(inf_in.data(), std::int64_t(v.size())).index, 0);
  EXPECT_EQ(ws.argmin(inf_in.data(), 0).index, -1);
}

TEST(CudaDeviceReduce, NonCommutativeOperatorKeepsOrder) {
  MR_REQUIRE_GPU();
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(33), std::int64_t(70001), std::int64_t(3'000'017)}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const auto v = random_mats(std::size_t(n), seed_for("noncommutative") + std::uint64_t(n));
    mat2_mod expect = mat_identity;
    for (const auto& m : v) expect = mat2_mod_product{}(expect, m);
    auto in = on_device<mat2_mod>(v);
    mc::workspace ws;
    EXPECT_TRUE(ws.reduce(in.data(), n, mat2_mod_product{}, mat_identity) == expect);
  }
}

}  // namespace
}  // namespace mr_test
