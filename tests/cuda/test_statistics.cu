// multireduce/cuda/statistics.cuh on the GPU against a two-pass double reference: every size class,
// every shape of a thread's loop, first indices of ties. Skipped without a GPU.
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

}  // namespace
}  // namespace mr_test
