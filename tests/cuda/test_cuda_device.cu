// Device-wide algorithms on the GPU against sequential host folds: every element checked, outputs
// poisoned first, random inputs from logged seeds. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <multireduce/cuda.cuh>

#include "../common/test_values.hpp"
#include "cuda_runner.cuh"
#include "device_array.cuh"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;
using multireduce::key_value;


std::uint64_t seed_for(const char* what) {
  const std::uint64_t s = base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu (MULTIREDUCE_TEST_SEED=%llu)\n", what, (unsigned long long)s,
              (unsigned long long)base_seed());
  return s;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g)) / 8.0f;  // exact in float: sums are order-independent
  return v;
}
std::vector<int> random_ints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000000, 1000000);
  std::vector<int> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// 2x2 matrices mod p: associative, not commutative; detects any reordering.
struct mat2_mod {
  std::uint32_t a, b, c, d;
};
struct mat2_mod_product {
  __host__ __device__ mat2_mod operator()(const mat2_mod& x, const mat2_mod& y) const {
    constexpr std::uint64_t p = 65521;
    return mat2_mod{std::uint32_t((std::uint64_t(x.a) * y.a + std::uint64_t(x.b) * y.c) % p),
                    std::uint32_t((std::uint64_t(x.a) * y.b + std::uint64_t(x.b) * y.d) % p),
                    std::uint32_t((std::uint64_t(x.c) * y.a + std::uint64_t(x.d) * y.c) % p),
                    std::uint32_t((std::uint64_t(x.c) * y.b + std::uint64_t(x.d) * y.d) % p)};
  }
};
bool operator==(const mat2_mod& x, const mat2_mod& y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }
std::vector<mat2_mod> random_mats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<mat2_mod> v(n);
  for (auto& m : v) m = mat2_mod{std::uint32_t(g() % 65521), std::uint32_t(g() % 65521), std::uint32_t(g() % 65521), std::uint32_t(g() % 65521)};
  return v;
}
const mat2_mod mat_identity{1, 0, 0, 1};

const std::int64_t sizes[] = {0, 1, 31, 32, 33, 1021, 65537, (1 << 20) + 7, 5'000'011};

TEST(CudaDeviceReduce, SumMinMaxArgOverSizesAndOffsets) {
  MR_REQUIRE_GPU();
  const auto all = random_ints((1 << 20) * 5 + 64, seed_for("reduce"));
  mc::workspace ws;
  for (std::int64_t n : sizes) {
    for (int offset : {0, 1, 3}) {  // unaligned starts exercise the scalar head
      if (offset + n > std::int64_t(all.size())) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " offset=" << offset);
      dev<int> d(all);
      const int* in = d.p + offset;
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
      dev<long long> out(1);
      ASSERT_EQ(mc::reduce(nullptr, bytes, in, out.p, n, multireduce::sum{}, 0LL), cudaSuccess);
      dev<char> temp(bytes);
      ASSERT_EQ(mc::reduce(temp.p, bytes, in, out.p, n, multireduce::sum{}, 0LL), cudaSuccess);
      EXPECT_EQ(out.get()[0], sum);
    }
  }
}

TEST(CudaDeviceReduce, DeterministicFloatSumAndNaNRules) {
  MR_REQUIRE_GPU();
  std::mt19937_64 g(seed_for("determinism"));
  std::vector<float> v(10'000'019);
  std::normal_distribution<float> d(0.f, 1.f);
  for (auto& x : v) x = d(g);
  dev<float> in(v);
  mc::workspace ws;
  const float first = ws.reduce(in.p, std::int64_t(v.size()), multireduce::sum{}, 0.f);
  for (int r = 0; r < 5; ++r) {
    const float again = ws.reduce(in.p, std::int64_t(v.size()), multireduce::sum{}, 0.f);
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
  dev<float> nan_in(v);
  EXPECT_TRUE(std::isnan(ws.reduce(nan_in.p, std::int64_t(v.size()), multireduce::minimum{}, INFINITY)));
  EXPECT_EQ(ws.argmin(nan_in.p, std::int64_t(v.size())).index, 777777);
  EXPECT_EQ(ws.argmax(nan_in.p, std::int64_t(v.size())).index, 777777);
  EXPECT_EQ(ws.argmin(nan_in.p, 777777).index, 1000);
  // All equal: index 0, also for infinities.
  v.assign(100000, INFINITY);
  dev<float> inf_in(v);
  EXPECT_EQ(ws.argmin(inf_in.p, std::int64_t(v.size())).index, 0);
  EXPECT_EQ(ws.argmin(inf_in.p, 0).index, -1);
}

TEST(CudaDeviceReduce, NonCommutativeOperatorKeepsOrder) {
  MR_REQUIRE_GPU();
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(33), std::int64_t(70001), std::int64_t(3'000'017)}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const auto v = random_mats(std::size_t(n), seed_for("noncommutative") + std::uint64_t(n));
    mat2_mod expect = mat_identity;
    for (const auto& m : v) expect = mat2_mod_product{}(expect, m);
    dev<mat2_mod> in(v);
    mc::workspace ws;
    EXPECT_TRUE(ws.reduce(in.p, n, mat2_mod_product{}, mat_identity) == expect);
  }
}

/// Checks every statistic of v against a two-pass double reference (first indices of ties).
void expect_statistics_of(const std::vector<float>& v, const multireduce::statistics<float>& s) {
  const std::int64_t n = std::int64_t(v.size());
  EXPECT_EQ(s.count, n);
  if (n == 0) {
    EXPECT_TRUE(std::isnan(s.mean));
    EXPECT_EQ(s.argmin, -1);
    return;
  }
  double mean = 0, l1 = 0, sq = 0;
  for (float x : v) mean += x, l1 += std::fabs(x), sq += double(x) * x;
  mean /= double(n);
  double var = 0;
  for (float x : v) var += (x - mean) * (x - mean);
  var /= double(n);
  const auto mn = std::min_element(v.begin(), v.end()), mx = std::max_element(v.begin(), v.end());
  EXPECT_NEAR(s.mean, mean, 1e-9 * std::fabs(mean));
  EXPECT_NEAR(s.var, var, 1e-6 * var + 1e-12);
  EXPECT_NEAR(s.l1, l1, 1e-9 * l1);
  EXPECT_NEAR(s.l2, std::sqrt(sq), 1e-9 * std::sqrt(sq));
  EXPECT_EQ(s.min, *mn);
  EXPECT_EQ(s.argmin, mn - v.begin());
  EXPECT_EQ(s.max, *mx);
  EXPECT_EQ(s.argmax, mx - v.begin());
}

TEST(CudaDeviceStatistics, MatchesTwoPassReference) {
  MR_REQUIRE_GPU();
  for (std::int64_t n : sizes) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    std::mt19937_64 g(seed_for("stats") + std::uint64_t(n));
    std::normal_distribution<double> d(1e6, 0.01);  // large mean, tiny variance: no cancellation allowed
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = static_cast<float>(d(g));
    dev<float> in(v);
    mc::workspace ws;
    expect_statistics_of(v, ws.statistics(in.p, n));
  }
}

// Each thread of a full grid folds whole groups of vectors with the next group loading meanwhile
// (two register buffers in turn), then single vectors, then scalars: 1 to 5 groups (ending in
// either buffer), 0 to 3 single vectors, a scalar head and tail, and few distinct values, so that
// extremes tie across threads, groups and buffers and only the first index is right.
TEST(CudaDeviceStatistics, EveryShapeOfTheThreadLoop) {
  MR_REQUIRE_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  namespace md = mc::detail;
  const std::int64_t threads = std::int64_t(sms) * md::statistics_blocks_per_sm * md::statistics_block_threads;
  const std::int64_t group = std::int64_t(md::statistics_vectors_in_flight) * 4;  // floats a thread loads at once
  std::mt19937_64 g(seed_for("stats loop shapes"));
  mc::workspace ws;
  for (int groups : {1, 2, 3, 4, 5}) {
    for (int singles : {0, 1, 3}) {
      const std::int64_t n = threads * (groups * group + singles * 4) + 5;
      SCOPED_TRACE(::testing::Message() << "groups=" << groups << " singles=" << singles << " n=" << n);
      std::vector<float> v(static_cast<std::size_t>(n) + 1);
      std::uniform_int_distribution<int> d(-40, 40);
      for (auto& x : v) x = static_cast<float>(d(g)) * 0.25f;
      dev<float> in(v);
      const std::vector<float> body(v.begin() + 1, v.end());  // in.p + 1: a scalar head of 3
      expect_statistics_of(body, ws.statistics(in.p + 1, n));
    }
  }
}

TEST(CudaDeviceStatistics, UnalignedStartKeepsFirstIndexOfTies) {
  MR_REQUIRE_GPU();
  // From in + 1 the first three elements are the scalar head of thread 0..2, the rest vectors:
  // equal extremes at positions 0 (head) and 3 (thread 0's first vector) must report 0.
  std::vector<float> v(1 << 20, 1.0f);
  v[1] = -5.f, v[4] = -5.f, v[1 + 2] = 9.f, v[1 + 7] = 9.f;
  dev<float> in(v);
  mc::workspace ws;
  const auto s = ws.statistics(in.p + 1, std::int64_t(v.size()) - 1);
  EXPECT_EQ(s.argmin, 0);
  EXPECT_EQ(s.min, -5.f);
  EXPECT_EQ(s.argmax, 2);
  EXPECT_EQ(s.max, 9.f);
  EXPECT_EQ(ws.argmin(in.p + 1, std::int64_t(v.size()) - 1).index, 0);
}

template <class Acc, class T, class Op>
std::vector<Acc> reference_segments(const std::vector<T>& v, const std::vector<std::int64_t>& b,
                                    const std::vector<std::int64_t>& e, Op op, Acc init) {
  std::vector<Acc> out(b.size());
  for (std::size_t s = 0; s < b.size(); ++s) {
    Acc acc = init;
    for (std::int64_t i = b[s]; i < e[s]; ++i) acc = op(acc, static_cast<Acc>(v[std::size_t(i)]));
    out[s] = acc;
  }
  return out;
}

TEST(CudaDeviceSegmented, FixedLengthsAllPaths) {
  MR_REQUIRE_GPU();
  const auto v = random_floats(1 << 22, seed_for("fixed segments"));
  dev<float> in(v);
  mc::workspace ws;
  for (std::int64_t L : {0, 1, 2, 3, 4, 7, 16, 17, 32, 33, 64, 100, 128, 1000, 2048, 2049, 4096, 65536, 1 << 20, 1 << 22}) {
    const std::int64_t segments = L == 0 ? 1000 : std::int64_t(v.size()) / L;
    SCOPED_TRACE(::testing::Message() << "L=" << L << " segments=" << segments);
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    dev<float> out(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce(in.p, out.p, segments, L, multireduce::sum{}, 0.5f);
    EXPECT_EQ(out.get(), reference_segments(v, b, e, multireduce::sum{}, 0.5f));
    dev<float> out_max(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce(in.p, out_max.p, segments, L, multireduce::maximum{}, -INFINITY);
    EXPECT_EQ(out_max.get(), reference_segments(v, b, e, multireduce::maximum{}, -INFINITY));
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
        dev<float> out(static_cast<std::size_t>(segments + 1));
        ws.fixed_segmented_reduce(in.p + shift_in, out.p + shift_out, segments, L, multireduce::sum{}, 0.5f);
        auto got = out.get();
        got.erase(got.begin(), got.begin() + shift_out);
        got.resize(static_cast<std::size_t>(segments));
        EXPECT_EQ(got, reference_segments(v, b, e, multireduce::sum{}, 0.5f));
      }
    }
  }
  // Non-commutative, through every path.
  const auto m = random_mats(1 << 20, seed_for("fixed segments mat"));
  dev<mat2_mod> min(m);
  for (std::int64_t L : {1, 4, 5, 16, 40, 3000, 1 << 19}) {
    SCOPED_TRACE(::testing::Message() << "mat2 L=" << L);
    const std::int64_t segments = std::int64_t(m.size()) / L;
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    dev<mat2_mod> out(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce(min.p, out.p, segments, L, mat2_mod_product{}, mat_identity);
    const auto got = out.get();
    const auto want = reference_segments(m, b, e, mat2_mod_product{}, mat_identity);
    for (std::size_t s = 0; s < want.size(); ++s) ASSERT_TRUE(got[s] == want[s]) << "segment " << s;
  }
}

// A group of G lanes first folds the elements before its segment's first 16-byte boundary: up to
// 15 of them for 1-byte elements and 3 for 4-byte ones, more than the lanes of groups of 1, 4 or 8
// (fixed lengths 17-64, and offsets in two arrays with mean lengths up to 8 and 24).
TEST(CudaDeviceSegmented, GroupsNarrowerThanTheHeadBeforeAVector) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("narrow groups");
  std::mt19937_64 g(seed);
  std::vector<std::uint8_t> bytes(1 << 20);
  for (auto& x : bytes) x = static_cast<std::uint8_t>(g());
  const auto ints = random_ints(1 << 20, seed);
  dev<std::uint8_t> in8(bytes);
  dev<int> in32(ints);
  mc::workspace ws;
  for (std::int64_t L : {17, 23, 32, 33, 50, 64}) {
    SCOPED_TRACE(::testing::Message() << "uint8 L=" << L);
    const std::int64_t segments = std::int64_t(bytes.size()) / L;
    std::vector<std::int64_t> b(static_cast<std::size_t>(segments)), e(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) b[std::size_t(s)] = s * L, e[std::size_t(s)] = s * L + L;
    dev<long long> out(static_cast<std::size_t>(segments));
    ws.fixed_segmented_reduce(in8.p, out.p, segments, L, multireduce::sum{}, 0LL);
    EXPECT_EQ(out.get(), reference_segments(bytes, b, e, multireduce::sum{}, 0LL));
  }
  for (int longest : {15, 40}) {
    std::vector<std::int64_t> b, e;
    for (std::int64_t at = 0;;) {
      const std::int64_t length = std::int64_t(g() % std::uint64_t(longest + 1));
      if (at + length > std::int64_t(bytes.size())) break;
      b.push_back(at), e.push_back(at + length);
      at += length;
    }
    dev<std::int64_t> d_b(b), d_e(e);
    dev<long long> out(b.size());
    SCOPED_TRACE(::testing::Message() << "lengths 0.." << longest << ", " << b.size() << " segments");
    ws.segmented_reduce(in8.p, std::int64_t(bytes.size()), out.p, std::int64_t(b.size()), d_b.p, d_e.p,
                        multireduce::sum{}, 0LL);
    EXPECT_EQ(out.get(), reference_segments(bytes, b, e, multireduce::sum{}, 0LL));
    ws.segmented_reduce(in32.p, std::int64_t(ints.size()), out.p, std::int64_t(b.size()), d_b.p, d_e.p,
                        multireduce::sum{}, 0LL);
    EXPECT_EQ(out.get(), reference_segments(ints, b, e, multireduce::sum{}, 0LL));
  }
}

TEST(CudaDeviceSegmented, OffsetsEmptyHugeSkewed) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("offset segments");
  const auto v = random_ints(1 << 22, seed);
  dev<int> in(v);
  mc::workspace ws;
  std::mt19937_64 g(seed);
  auto run_case = [&](const char* name, std::vector<std::int64_t> lengths) {
    SCOPED_TRACE(name);
    std::vector<std::int64_t> off{0};
    for (auto l : lengths) off.push_back(std::min<std::int64_t>(off.back() + l, std::int64_t(v.size())));
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    dev<std::int64_t> d_off(off);
    dev<long long> out(b.size());
    ws.segmented_reduce(in.p, std::int64_t(v.size()), out.p, std::int64_t(b.size()), d_off.p, d_off.p + 1,
                        multireduce::sum{}, 3LL);
    EXPECT_EQ(out.get(), reference_segments(v, b, e, multireduce::sum{}, 3LL));
    // int32 offsets, separate begin/end arrays.
    std::vector<int> b32(b.begin(), b.end()), e32(e.begin(), e.end());
    dev<int> d_b(b32), d_e(e32);
    dev<int> out_min(b.size());
    ws.segmented_reduce(in.p, std::int64_t(v.size()), out_min.p, std::int64_t(b.size()), d_b.p, d_e.p,
                        multireduce::minimum{}, INT32_MAX);
    EXPECT_EQ(out_min.get(), reference_segments(v, b, e, multireduce::minimum{}, INT32_MAX));
  };
  std::vector<std::int64_t> uniform(100000);
  for (auto& l : uniform) l = std::int64_t(g() % 65);
  run_case("uniform 0..64", uniform);
  std::vector<std::int64_t> skewed;
  for (int i = 0; i < 20000; ++i) {  // power law: most tiny, some up to 2^20
    const double u = std::uniform_real_distribution<double>(0, 1)(g);
    skewed.push_back(std::int64_t(std::pow(2.0, 20.0 * u * u * u * u)) - 1);
  }
  run_case("power law", skewed);
  run_case("one huge", {std::int64_t(v.size())});
  run_case("empties and a huge", {0, 0, 5, 0, 3'000'000, 0, 1, 0});
  run_case("all empty", std::vector<std::int64_t>(5000, 0));
  run_case("length one", std::vector<std::int64_t>(300000, 1));
}

// One offsets array (CSR): offsets that start past 0 and stop short of n,
// int32 and int64, long and empty segments, and a non-commutative operator.
TEST(CudaDeviceSegmented, OffsetsInOneArray) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("merge path segments");
  std::mt19937_64 g(seed);
  const auto v = random_ints(1 << 21, seed);
  dev<int> in(v);
  mc::workspace ws;
  for (int shape = 0; shape < 4; ++shape) {
    std::vector<std::int64_t> off{std::int64_t(g() % 5000)};
    while (true) {
      const std::int64_t l = shape == 0 ? std::int64_t(g() % 65)
                           : shape == 1 ? std::int64_t(std::pow(2.0, 18.0 * std::pow(std::uniform_real_distribution<double>(0, 1)(g), 4))) - 1
                           : shape == 2 ? std::int64_t(g() % 3 == 0 ? 0 : g() % 9000)
                                        : std::int64_t(g() % 2);
      if (off.back() + l > std::int64_t(v.size()) - 777) break;
      off.push_back(off.back() + l);
    }
    SCOPED_TRACE(::testing::Message() << "shape " << shape << ", " << off.size() - 1 << " segments from " << off.front());
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    const std::int64_t segments = std::int64_t(b.size());
    dev<std::int64_t> d_off(off);
    dev<long long> out(b.size());
    ws.segmented_reduce(in.p, std::int64_t(v.size()), out.p, segments, d_off.p, d_off.p + 1, multireduce::sum{}, 3LL);
    EXPECT_EQ(out.get(), reference_segments(v, b, e, multireduce::sum{}, 3LL));
    std::vector<int> off32(off.begin(), off.end());
    dev<int> d_off32(off32);
    dev<int> out_max(b.size());
    ws.segmented_reduce(in.p, std::int64_t(v.size()), out_max.p, segments, d_off32.p, d_off32.p + 1,
                        multireduce::maximum{}, INT32_MIN);
    EXPECT_EQ(out_max.get(), reference_segments(v, b, e, multireduce::maximum{}, INT32_MIN));
  }
  const auto m = random_mats(1 << 20, seed_for("merge path mat"));
  dev<mat2_mod> min(m);
  std::vector<std::int64_t> off{3};
  while (off.back() < std::int64_t(m.size()) - 70000) off.push_back(off.back() + std::int64_t(g() % 5 == 0 ? g() % 60000 : g() % 40));
  const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
  dev<std::int64_t> d_off(off);
  dev<mat2_mod> out(b.size());
  ws.segmented_reduce(min.p, std::int64_t(m.size()), out.p, std::int64_t(b.size()), d_off.p, d_off.p + 1, mat2_mod_product{},
                      mat_identity);
  const auto got = out.get();
  const auto want = reference_segments(m, b, e, mat2_mod_product{}, mat_identity);
  for (std::size_t s = 0; s < want.size(); ++s) ASSERT_TRUE(got[s] == want[s]) << "mat2 segment " << s;
}

// A 4-byte non-commutative element, x -> a*x + b (mod 65521), composed left to right: four of
// them fill one 16-byte vector of the staged kernel's copies.
struct affine16 {
  std::uint16_t a, b;
  bool operator==(const affine16&) const = default;
};
struct affine16_then {  // g after f
  __host__ __device__ affine16 operator()(const affine16& f, const affine16& g) const {
    constexpr std::uint32_t p = 65521;
    return affine16{std::uint16_t(std::uint32_t(f.a) * g.a % p), std::uint16_t((std::uint32_t(f.b) * g.a + g.b) % p)};
  }
};

// The staged kernel (short segments in one offsets array, copied into shared memory a tile at a
// time): the input 0-3 elements past a 16-byte boundary, tiles with a segment too long for
// shared memory among the short ones (folded from global memory, those over 2048 queued), and a
// non-commutative 4-byte operator, so that the elements before a tile's first and after its last
// 16-byte boundary must be folded in order with those in shared memory.
TEST(CudaDeviceSegmented, OffsetsStagedTilesMisalignedAndNonCommutative) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("staged segments");
  std::mt19937_64 g(seed);
  const std::size_t n = (1 << 20) + 16;
  const auto v = random_ints(n, seed);
  std::vector<affine16> f(n);
  for (auto& x : f) x = affine16{std::uint16_t(1 + g() % 65520), std::uint16_t(g() % 65521)};
  dev<int> in(v);
  dev<affine16> fin(f);
  mc::workspace ws;
  for (int shift = 0; shift < 4; ++shift) {
    const std::int64_t size = std::int64_t(n) - shift;
    std::vector<std::int64_t> off{std::int64_t(g() % 7)};
    while (true) {
      const std::int64_t l = g() % 3000 == 0 ? std::int64_t(3000 + g() % 30000) : std::int64_t(g() % 41);
      if (off.back() + l > size) break;
      off.push_back(off.back() + l);
    }
    const std::int64_t segments = std::int64_t(off.size()) - 1;
    SCOPED_TRACE(::testing::Message() << "input shifted by " << shift << ", " << segments << " segments");
    const std::vector<std::int64_t> b(off.begin(), off.end() - 1), e(off.begin() + 1, off.end());
    const std::vector<int> vs(v.begin() + shift, v.end());
    const std::vector<affine16> fs(f.begin() + shift, f.end());
    std::vector<int> off32(off.begin(), off.end());
    dev<int> d_off32(off32);
    dev<std::int64_t> d_off(off);
    dev<long long> out{std::size_t(segments)};
    ws.segmented_reduce(in.p + shift, size, out.p, segments, d_off32.p, d_off32.p + 1, multireduce::sum{}, 3LL);
    EXPECT_EQ(out.get(), reference_segments(vs, b, e, multireduce::sum{}, 3LL));
    dev<affine16> out_f{std::size_t(segments)};
    ws.segmented_reduce(fin.p + shift, size, out_f.p, segments, d_off.p, d_off.p + 1, affine16_then{}, affine16{1, 0});
    const auto got = out_f.get();
    const auto want = reference_segments(fs, b, e, affine16_then{}, affine16{1, 0});
    for (std::size_t s = 0; s < want.size(); ++s)
      ASSERT_TRUE(got[s] == want[s]) << "segment " << s << " [" << b[s] << ", " << e[s] << ")";
  }
}

// Overlapping long segments (separate begin and end arrays) need more queue pieces than any
// disjoint set: the reservations past the capacity are left unused and their groups fold them.
TEST(CudaDeviceSegmented, OffsetsOverlappingLongSegmentsOverflowTheQueue) {
  MR_REQUIRE_GPU();
  const auto v = random_ints(1 << 22, seed_for("overlapping segments"));
  dev<int> in(v);
  mc::workspace ws;
  auto check = [&](const char* name, const std::vector<std::int64_t>& b, const std::vector<std::int64_t>& e) {
    SCOPED_TRACE(name);
    dev<std::int64_t> d_b(b), d_e(e);
    dev<long long> out(b.size());
    ws.segmented_reduce(in.p, std::int64_t(v.size()), out.p, std::int64_t(b.size()), d_b.p, d_e.p, multireduce::sum{}, 1LL);
    EXPECT_EQ(out.get(), reference_segments(v, b, e, multireduce::sum{}, 1LL));
  };
  std::vector<std::int64_t> b, e;
  for (int i = 0; i < 100; ++i) b.push_back(5 + i), e.push_back(5 + i + (1 << 20));
  b.push_back(7), e.push_back(7);  // and an empty one
  check("100 of 2^20 elements", b, e);
  // More long segments than the queue has slots (2112 for 2^22 elements) and more pieces than it
  // holds (2304), in random order: reservations past the room are left unused, and
  // (with a read of the header first) refused once the header shows no room.
  std::mt19937_64 g(seed_for("overlapping segments order"));
  b.clear(), e.clear();
  for (int i = 0; i < 2400; ++i) {
    const std::int64_t length = i % 100 == 0 ? 600000 + std::int64_t(g() % 1000) : 2049 + std::int64_t(g() % 6000);
    const std::int64_t begin = std::int64_t(g() % (v.size() - std::size_t(length)));
    b.push_back(begin), e.push_back(begin + length);
  }
  check("2400 in random order", b, e);
  // The same among 2^24 segments (the rest empty): enough that the queue reads its header for room
  // before every reservation (with fewer, reservations cannot wrap it and go without the read).
  b.resize(std::size_t(1) << 24, 0), e.resize(std::size_t(1) << 24, 0);
  check("2400 in random order among 2^24", b, e);
}

TEST(CudaDeviceWindow, AllPathsAndOperators) {
  MR_REQUIRE_GPU();
  const auto v = random_floats(3'000'017, seed_for("window"));
  dev<float> in(v);
  mc::workspace ws;
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(5), std::int64_t(4096), std::int64_t(100'003), std::int64_t(v.size())}) {
    for (std::int64_t w : {1, 2, 3, 15, 16, 17, 32, 513, 1000, 2048, 2049, 5000, 70000}) {
      if (n > 200'000 && w > 2048 && w != 5000) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " W=" << w);
      const std::int64_t m = std::max<std::int64_t>(0, n - w + 1);
      dev<float> out(static_cast<std::size_t>(m)), out_max(static_cast<std::size_t>(m));
      EXPECT_EQ(ws.window_reduce(in.p, n, w, out.p, multireduce::sum{}, 0.f), m);
      ws.window_reduce(in.p, n, w, out_max.p, multireduce::maximum{}, -INFINITY);
      const auto got = out.get(), got_max = out_max.get();
      for (std::int64_t i = 0; i < m; ++i) {
        float s = 0, mx = -INFINITY;
        for (std::int64_t j = i; j < i + w; ++j) s += v[std::size_t(j)], mx = std::max(mx, v[std::size_t(j)]);
        ASSERT_EQ(got[std::size_t(i)], s) << "i=" << i;
        ASSERT_EQ(got_max[std::size_t(i)], mx) << "i=" << i;
        if (w > 64 && i > 2000) i += 97;  // spot-check the long windows past the start
      }
    }
  }
  const auto mats = random_mats(20000, seed_for("window mat"));
  dev<mat2_mod> mats_in(mats);
  for (std::int64_t w : {1, 7, 16, 33, 1000, 2048, 3000}) {
    SCOPED_TRACE(::testing::Message() << "mat2 W=" << w);
    const std::int64_t m = std::int64_t(mats.size()) - w + 1;
    dev<mat2_mod> out(static_cast<std::size_t>(m));
    ws.window_reduce(mats_in.p, std::int64_t(mats.size()), w, out.p, mat2_mod_product{}, mat_identity);
    const auto got = out.get();
    for (std::int64_t i = 0; i < m; i += 13) {
      mat2_mod acc = mat_identity;
      for (std::int64_t j = i; j < i + w; ++j) acc = mat2_mod_product{}(acc, mats[std::size_t(j)]);
      ASSERT_TRUE(got[std::size_t(i)] == acc) << "i=" << i;
    }
  }
}

/// Sliding maximum by a monotonic deque: an independent O(n) reference.
std::vector<float> sliding_max(const float* x, std::int64_t n, std::int64_t w) {
  std::vector<float> out;
  std::vector<std::int64_t> q;  // indices with decreasing values
  std::size_t head = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    while (q.size() > head && x[q.back()] <= x[i]) q.pop_back();
    q.push_back(i);
    if (q[head] <= i - w) ++head;
    if (i >= w - 1) out.push_back(x[q[head]]);
  }
  return out;
}

// Every van Herk block length (W = 2 .. 17), every way the middle of a window is found (none,
// one block, groups of 1 .. 32 lanes, several whole groups), tiles striding and contiguous, and
// windows leaving staged (aligned output) or thread by thread (misaligned input or output).
TEST(CudaDeviceWindow, BlockLengthsMiddlesAndLayouts) {
  MR_REQUIRE_GPU();
  const auto v = random_floats(300'007, seed_for("window layouts"));
  dev<float> in(v);
  mc::workspace ws;
  for (std::int64_t w : {2, 3, 4, 5, 8, 9, 16, 17, 31, 33, 48, 49, 50, 64, 65, 66, 97, 129, 545, 1041, 1057, 1600, 2047, 2048}) {
    for (int layout = 0; layout < 3; ++layout) {  // aligned; input one element in; output 3 in
      const int in_off = layout == 1 ? 1 : 0, out_off = layout == 2 ? 3 : 0;
      const std::int64_t n = std::int64_t(v.size()) - in_off, m = n - w + 1;
      SCOPED_TRACE(::testing::Message() << "W=" << w << " layout=" << layout);
      dev<float> out(static_cast<std::size_t>(m + out_off)), out_max(static_cast<std::size_t>(m + out_off));
      ws.window_reduce(in.p + in_off, n, w, out.p + out_off, multireduce::sum{}, 0.f);
      ws.window_reduce(in.p + in_off, n, w, out_max.p + out_off, multireduce::maximum{}, -INFINITY);
      const auto got = out.get(), got_max = out_max.get();
      const auto want_max = sliding_max(v.data() + in_off, n, w);
      double sum = 0;  // exact: the values are multiples of 1/8 and the sums stay below 2^18
      for (std::int64_t j = 0; j < w; ++j) sum += v[std::size_t(in_off + j)];
      for (std::int64_t i = 0; i < m; ++i) {
        if (i > 0) sum += double(v[std::size_t(in_off + i + w - 1)]) - double(v[std::size_t(in_off + i - 1)]);
        ASSERT_EQ(got[std::size_t(out_off + i)], float(sum)) << "sum i=" << i;
        ASSERT_EQ(got_max[std::size_t(out_off + i)], want_max[std::size_t(i)]) << "max i=" << i;
      }
    }
  }
  // Integers into a wider accumulator (staged 8-byte outputs).
  const auto ints = random_ints(200'003, seed_for("window ints"));
  dev<int> in_ints(ints);
  for (std::int64_t w : {3, 32, 1000}) {
    SCOPED_TRACE(::testing::Message() << "int W=" << w);
    const std::int64_t m = std::int64_t(ints.size()) - w + 1;
    dev<long long> out(static_cast<std::size_t>(m));
    ws.window_reduce(in_ints.p, std::int64_t(ints.size()), w, out.p, multireduce::sum{}, 5LL);
    const auto got = out.get();
    long long sum = 5;
    for (std::int64_t j = 0; j < w; ++j) sum += ints[std::size_t(j)];
    for (std::int64_t i = 0; i < m; ++i) {
      if (i > 0) sum += ints[std::size_t(i + w - 1)] - ints[std::size_t(i - 1)];
      ASSERT_EQ(got[std::size_t(i)], sum) << "i=" << i;
    }
  }
  // A non-commutative operator at every block length and middle kind, every window checked.
  const auto mats = random_mats(6000, seed_for("window mat layouts"));
  dev<mat2_mod> mats_in(mats);
  for (std::int64_t w : {2, 3, 5, 9, 17, 33, 49, 65, 130, 257}) {
    SCOPED_TRACE(::testing::Message() << "mat2 W=" << w);
    const std::int64_t m = std::int64_t(mats.size()) - w + 1;
    dev<mat2_mod> out(static_cast<std::size_t>(m));
    ws.window_reduce(mats_in.p, std::int64_t(mats.size()), w, out.p, mat2_mod_product{}, mat_identity);
    const auto got = out.get();
    for (std::int64_t i = 0; i < m; ++i) {
      mat2_mod acc = mat_identity;
      for (std::int64_t j = i; j < i + w; ++j) acc = mat2_mod_product{}(acc, mats[std::size_t(j)]);
      ASSERT_TRUE(got[std::size_t(i)] == acc) << "i=" << i;
    }
  }
}

/// 2x2 matrices mod 251, one entry a byte of a 32-bit word: a 4-byte operator that is associative
/// and not commutative (the streaming window kernel serves 4-byte accumulators).
struct mat2_u8_product {
  __host__ __device__ std::uint32_t operator()(std::uint32_t x, std::uint32_t y) const {
    const std::uint32_t xa = x & 255, xb = (x >> 8) & 255, xc = (x >> 16) & 255, xd = x >> 24;
    const std::uint32_t ya = y & 255, yb = (y >> 8) & 255, yc = (y >> 16) & 255, yd = y >> 24;
    return (xa * ya + xb * yc) % 251 | ((xa * yb + xb * yd) % 251) << 8 | ((xc * ya + xd * yc) % 251) << 16 |
           ((xc * yb + xd * yd) % 251) << 24;
  }
};

/// Every window's fold by a two-stack queue (push at the back, pop at the front, O(1) amortised):
/// an independent reference for any associative operator.
template <class T, class Op>
std::vector<T> sliding_fold(const T* v, std::int64_t n, std::int64_t w, Op op) {
  std::vector<T> out, front;  // front.back(): the fold of the oldest elements still in the window
  T back{};
  bool back_empty = true;
  std::int64_t back_begin = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    back = back_empty ? v[j] : op(back, v[j]);
    back_empty = false;
    if (j + 1 < w) continue;
    if (front.empty()) {  // the back, [back_begin, j], becomes the front as suffix folds
      T acc = v[j];
      front.push_back(acc);
      for (std::int64_t k = j - 1; k >= back_begin; --k) front.push_back(acc = op(v[k], acc));
      back_empty = true;
      back_begin = j + 1;
    }
    out.push_back(back_empty ? front.back() : op(front.back(), back));
    front.pop_back();
  }
  return out;
}

// Windows longer than two van Herk blocks stream through the tiles of each block's contiguous run
// (the tile before a run folded first): several tiles per run, aligned and misaligned input and
// output, sum, max and a non-commutative 4-byte operator, every window checked.
TEST(CudaDeviceWindow, LongWindowsAcrossTilesAndRuns) {
  MR_REQUIRE_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const std::int64_t n_max = std::int64_t(sms) * 2 * 8192 * 3 + 4321;  // about 3 tiles per run of a full grid
  const auto v = random_floats(static_cast<std::size_t>(n_max) + 1, seed_for("long windows"));
  std::mt19937_64 g(seed_for("long windows mat"));
  std::vector<std::uint32_t> mats(static_cast<std::size_t>(n_max) + 1);
  for (auto& m : mats) m = std::uint32_t(g() % 251) | std::uint32_t(g() % 251) << 8 | std::uint32_t(g() % 251) << 16 | std::uint32_t(g() % 251) << 24;
  dev<float> in(v);
  dev<std::uint32_t> mats_in(mats);
  mc::workspace ws;
  const std::uint32_t identity = 1u | 1u << 24;
  for (std::int64_t w : {33, 34, 47, 48, 49, 64, 65, 100, 129, 545, 1000, 1041, 2047, 2048}) {
    for (int layout = 0; layout < 3; ++layout) {  // aligned; input one element in; output 3 in
      const int in_off = layout == 1 ? 1 : 0, out_off = layout == 2 ? 3 : 0;
      const std::int64_t n = layout == 0 ? n_max : 100'003 + w * 7, m = n - w + 1;
      SCOPED_TRACE(::testing::Message() << "W=" << w << " layout=" << layout << " n=" << n);
      dev<float> out(static_cast<std::size_t>(m + out_off)), out_max(static_cast<std::size_t>(m + out_off));
      dev<std::uint32_t> out_mat(static_cast<std::size_t>(m + out_off));
      ws.window_reduce(in.p + in_off, n, w, out.p + out_off, multireduce::sum{}, 0.f);
      ws.window_reduce(in.p + in_off, n, w, out_max.p + out_off, multireduce::maximum{}, -INFINITY);
      ws.window_reduce(mats_in.p + in_off, n, w, out_mat.p + out_off, mat2_u8_product{}, identity);
      const auto got = out.get(), got_max = out_max.get();
      const auto got_mat = out_mat.get();
      const auto want = sliding_fold(v.data() + in_off, n, w, [](float a, float b) { return a + b; });
      const auto want_max = sliding_max(v.data() + in_off, n, w);
      const auto want_mat = sliding_fold(mats.data() + in_off, n, w, mat2_u8_product{});
      for (int k = 0; k < out_off; ++k) {  // nothing is written before the output
        std::uint32_t bits = 0;
        std::memcpy(&bits, &got[std::size_t(k)], 4);
        EXPECT_EQ(bits, 0xA5A5A5A5u);
        EXPECT_EQ(got_mat[std::size_t(k)], 0xA5A5A5A5u);
      }
      for (std::int64_t i = 0; i < m; ++i) {
        ASSERT_EQ(got[std::size_t(out_off + i)], want[std::size_t(i)]) << "sum i=" << i;  // multiples of 1/8: exact
        ASSERT_EQ(got_max[std::size_t(out_off + i)], want_max[std::size_t(i)]) << "max i=" << i;
        ASSERT_EQ(got_mat[std::size_t(out_off + i)], want_mat[std::size_t(i)]) << "mat i=" << i;
      }
    }
  }
}

TEST(CudaDeviceBadInput, ErrorsNotCrashes) {
  MR_REQUIRE_GPU();
  mc::workspace ws;
  dev<float> in(16);
  EXPECT_THROW(ws.reduce(in.p, -1, multireduce::sum{}, 0.f), mc::error);
  EXPECT_THROW(ws.window_reduce(in.p, 16, 0, in.p, multireduce::sum{}, 0.f), mc::error);
  EXPECT_THROW(ws.fixed_segmented_reduce(in.p, in.p, -2, 4, multireduce::sum{}, 0.f), mc::error);
  std::size_t bytes = 0;
  EXPECT_EQ(mc::reduce(nullptr, bytes, in.p, in.p, 1 << 30, multireduce::sum{}, 0.f), cudaSuccess);
  std::size_t too_small = 1;
  EXPECT_EQ(mc::reduce(in.p, too_small, in.p, in.p, 1 << 30, multireduce::sum{}, 0.f), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace mr_test

namespace mr_test {
namespace {
TEST(CudaDeviceLarge, ReduceAndSegmentedPast2To31Elements) {
  MR_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t(1) << 31) + 12345;
  std::int8_t* d = nullptr;
  if (cudaMalloc(&d, std::size_t(n)) != cudaSuccess) GTEST_SKIP() << "not enough GPU memory for 2^31 bytes";
  MR_TEST_CUDA(cudaMemset(d, 1, std::size_t(n)));
  MR_TEST_CUDA(cudaMemset(d + n - 1, 3, 1));  // the last element differs: it must be counted
  multireduce::cuda::workspace ws;
  EXPECT_EQ(ws.reduce(d, n, multireduce::sum{}, std::int64_t(0)), n + 2);
  EXPECT_EQ(ws.reduce(d, n, multireduce::maximum{}, std::int8_t(-128)), 3);
  const std::vector<std::int64_t> offsets{0, (std::int64_t(1) << 31) + 5, n};
  std::int64_t* d_off = nullptr;
  std::int64_t* d_out = nullptr;
  MR_TEST_CUDA(cudaMalloc(&d_off, sizeof(std::int64_t) * 3));
  MR_TEST_CUDA(cudaMalloc(&d_out, sizeof(std::int64_t) * 3));
  MR_TEST_CUDA(cudaMemcpy(d_off, offsets.data(), sizeof(std::int64_t) * 3, cudaMemcpyHostToDevice));
  ws.segmented_reduce(d, n, d_out, 2, d_off, d_off + 1, multireduce::sum{}, std::int64_t(0));
  std::int64_t got[3] = {};
  MR_TEST_CUDA(cudaMemcpy(got, d_out, sizeof(std::int64_t) * 2, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], offsets[1]);
  EXPECT_EQ(got[1], n - offsets[1] + 2);
  ws.fixed_segmented_reduce(d, d_out, 3, n / 3, multireduce::sum{}, std::int64_t(0));
  MR_TEST_CUDA(cudaMemcpy(got, d_out, sizeof(std::int64_t) * 3, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got[0], n / 3);
  EXPECT_EQ(got[2], n / 3 + (n % 3 == 0 ? 2 : 0));
  cudaFree(d_off);
  cudaFree(d_out);
  cudaFree(d);
}
}  // namespace
}  // namespace mr_test
