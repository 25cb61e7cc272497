// multireduce/cuda/statistics.cuh on the GPU against a two-pass double reference: every size class,
// every shape of a thread's loop, first indices of ties, infinities, NaN and overflow as NumPy's.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <random>
#include <vector>

#include <multireduce/cuda.cuh>

#include "../common/device_test.cuh"
#include "../common/special_values.hpp"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;
using multireduce::key_value;

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
    auto in = on_device<float>(v);
    mc::workspace ws;
    expect_statistics_of(v, ws.statistics(in.data(), n));
  }
}

TEST(CudaDeviceStatistics, TheMeanOfIntegersIsTheirSumOverTheCount) {
  MR_REQUIRE_GPU();
  // As the CPU backend's: the running mean cancels to 0, the integer sum over the count is -0.25.
  const std::vector<std::int64_t> v{std::numeric_limits<std::int64_t>::max(), 1, std::numeric_limits<std::int64_t>::min(), -1};
  auto in = on_device<std::int64_t>(v);
  mc::workspace ws;
  const auto s = ws.statistics(in.data(), 4);
  EXPECT_EQ(s.sum, -1);
  EXPECT_EQ(s.mean, -0.25);
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
  const std::int64_t threads = std::int64_t(sms) * md::statistics_tuning::blocks_per_sm * md::statistics_tuning::block_threads;
  const std::int64_t group = std::int64_t(md::statistics_tuning::vectors_in_flight) * 4;  // floats a thread loads at once
  std::mt19937_64 g(seed_for("stats loop shapes"));
  mc::workspace ws;
  for (int groups : {1, 2, 3, 4, 5}) {
    for (int singles : {0, 1, 3}) {
      const std::int64_t n = threads * (groups * group + singles * 4) + 5;
      SCOPED_TRACE(::testing::Message() << "groups=" << groups << " singles=" << singles << " n=" << n);
      std::vector<float> v(static_cast<std::size_t>(n) + 1);
      std::uniform_int_distribution<int> d(-40, 40);
      for (auto& x : v) x = static_cast<float>(d(g)) * 0.25f;
      auto in = on_device<float>(v);
      const std::vector<float> body(v.begin() + 1, v.end());  // in.data() + 1: a scalar head of 3
      expect_statistics_of(body, ws.statistics(in.data() + 1, n));
    }
  }
}

TEST(CudaDeviceStatistics, UnalignedStartKeepsFirstIndexOfTies) {
  MR_REQUIRE_GPU();
  // From in + 1 the first three elements are the scalar head of thread 0..2, the rest vectors:
  // equal extremes at positions 0 (head) and 3 (thread 0's first vector) must report 0.
  std::vector<float> v(1 << 20, 1.0f);
  v[1] = -5.f, v[4] = -5.f, v[1 + 2] = 9.f, v[1 + 7] = 9.f;
  auto in = on_device<float>(v);
  mc::workspace ws;
  const auto s = ws.statistics(in.data() + 1, std::int64_t(v.size()) - 1);
  EXPECT_EQ(s.argmin, 0);
  EXPECT_EQ(s.min, -5.f);
  EXPECT_EQ(s.argmax, 2);
  EXPECT_EQ(s.max, 9.f);
  EXPECT_EQ(ws.argmin(in.data() + 1, std::int64_t(v.size()) - 1).index, 0);
}

/// NumPy's statistics of data with infinities, NaN or doubles near double's largest (the cases below
/// are those where NumPy's answer does not depend on its order of additions): sums in long double,
/// rounded to double once (past its range: inf of the sum's sign); an inf in the data gives a sum of
/// its sign, inf with -inf or a NaN give NaN; mean = sum / count where the sum is not finite; var is
/// NaN for data with an inf or a NaN and inf where the mean or the variance is past double's range.
template <class T>
void expect_numpy_rules(const std::vector<T>& v, const multireduce::statistics<T>& s) {
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::int64_t n = std::int64_t(v.size());
  bool has_nan = false, pos = false, neg = false;
  long double sum = 0, magnitude = 0, var = 0;
  for (const T x : v) {
    const double d = double(x);
    has_nan = has_nan || std::isnan(d), pos = pos || d == inf, neg = neg || d == -inf;
    if (std::isfinite(d)) sum += d, magnitude += std::fabs(d);
  }
  const long double mean_ld = sum / n;
  for (const T x : v)
    if (std::isfinite(double(x))) var += (x - mean_ld) * (x - mean_ld);
  var /= n;
  const double want_sum = has_nan || (pos && neg) ? nan : pos ? inf : neg ? -inf : double(sum);
  const double want_mean = std::isfinite(want_sum) ? double(mean_ld) : want_sum / double(n);
  const double want_var = has_nan || pos || neg || std::isnan(want_mean) ? nan : std::isinf(want_mean) ? inf : double(var);
  const long double first = std::isfinite(double(v[0])) ? std::fabs(double(v[0])) : 0;  // the shift's rounding
  auto expect = [&](const char* name, double got, double want, long double tolerance) {
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << name << ": " << got << ", want NaN";
    else if (std::isinf(want)) EXPECT_EQ(got, want) << name;
    else EXPECT_TRUE(std::isfinite(got) && std::fabs(got - want) <= tolerance) << name << ": " << got << ", want " << want;
  };
  EXPECT_EQ(s.count, n);
  const long double terms = 1e-12L * (magnitude + n * first);
  expect("sum", s.sum, want_sum, terms);
  expect("mean", s.mean, want_mean, terms / n + 1e-12L * std::sqrt(var));
  expect("var", s.var, want_var, 1e-9L * var);
  expect("std", s.std, std::sqrt(want_var), 1e-9L * std::sqrt(var));
  const auto first_of = [&](bool smallest) {  // NumPy's argmin/argmax: the first NaN, else the first extreme
    std::int64_t best = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (std::isnan(double(v[std::size_t(i)]))) return i;
      if (smallest ? v[std::size_t(i)] < v[std::size_t(best)] : v[std::size_t(best)] < v[std::size_t(i)]) best = i;
    }
    return best;
  };
  EXPECT_EQ(s.argmin, first_of(true));
  EXPECT_EQ(s.argmax, first_of(false));
}

TEST(CudaDeviceStatistics, InfinitiesNaNAndOverflowAsNumPy) {
  MR_REQUIRE_GPU();
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> cases = {{inf}, {-inf}, {inf, -inf}, {nan}, {inf, nan}, {1e308, 1e308},
                                                  {-1e308, -1e308, -1e308}, {1e308, inf, 1e308}, {1e308, -1e308},
                                                  {1e308, -1e308, inf}};
  std::mt19937_64 g(seed_for("stats specials"));
  mc::workspace ws;
  // The examples by hand: an overflowing sum of finite values, both signs cancelling.
  for (const std::vector<double>& v : {std::vector<double>{1e308, 1, 2, 1e308}, std::vector<double>{1e308, -1e308},
                                       std::vector<double>{-1e308, inf, 1}}) {
    auto in = on_device<double>(v);
    expect_numpy_rules(v, ws.statistics(in.data(), std::int64_t(v.size())));
  }
  for (const std::int64_t n : {std::int64_t{3}, std::int64_t{1000}, std::int64_t{(1 << 20) + 3}}) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " case " << c);
      const std::vector<double> v = mr_test::with_specials(n, cases[c], g);
      auto in = on_device<double>(v);
      expect_numpy_rules(v, ws.statistics(in.data(), n));
      if (c < 5) {  // the same infinities and NaN in float data
        const std::vector<float> f(v.begin(), v.end());
        auto fin = on_device<float>(f);
        expect_numpy_rules(f, ws.statistics(fin.data(), n));
      }
    }
  }
}

}  // namespace
}  // namespace mr_test
