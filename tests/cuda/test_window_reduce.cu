// multireduce/cuda/window_reduce.cuh on the GPU against sliding folds: every kernel, van Herk block
// length and middle, aligned and misaligned layouts, long windows across tiles, a non-commutative
// operator. Outputs poisoned; skipped without a GPU.
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

TEST(CudaDeviceWindow, AllPathsAndOperators) {
  MR_REQUIRE_GPU();
  const auto v = random_floats(3'000'017, seed_for("window"));
  auto in = on_device<float>(v);
  mc::workspace ws;
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(5), std::int64_t(4096), std::int64_t(100'003), std::int64_t(v.size())}) {
    for (std::int64_t w : {1, 2, 3, 15, 16, 17, 32, 513, 1000, 2048, 2049, 5000, 70000}) {
      if (n > 200'000 && w > 2048 && w != 5000) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " W=" << w);
      const std::int64_t m = std::max<std::int64_t>(0, n - w + 1);
      auto out = on_device<float>(static_cast<std::size_t>(m));
      auto out_max = on_device<float>(static_cast<std::size_t>(m));
      EXPECT_EQ(ws.window_reduce_async(in.data(), n, w, out.data(), multireduce::sum{}, 0.f), m);
      ws.window_reduce_async(in.data(), n, w, out_max.data(), multireduce::maximum{}, -INFINITY);
      const auto got = host_copy(out), got_max = host_copy(out_max);
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
  auto mats_in = on_device<mat2_mod>(mats);
  for (std::int64_t w : {1, 7, 16, 33, 1000, 2048, 3000}) {
    SCOPED_TRACE(::testing::Message() << "mat2 W=" << w);
    const std::int64_t m = std::int64_t(mats.size()) - w + 1;
    auto out = on_device<mat2_mod>(static_cast<std::size_t>(m));
    ws.window_reduce_async(mats_in.data(), std::int64_t(mats.size()), w, out.data(), mat2_mod_product{}, mat_identity);
    const auto got = host_copy(out);
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
  auto in = on_device<float>(v);
  mc::workspace ws;
  for (std::int64_t w : {2, 3, 4, 5, 8, 9, 16, 17, 31, 33, 48, 49, 50, 64, 65, 66, 97, 129, 545, 1041, 1057, 1600, 2047, 2048}) {
    for (int layout = 0; layout < 3; ++layout) {  // aligned; input one element in; output 3 in
      const int in_off = layout == 1 ? 1 : 0, out_off = layout == 2 ? 3 : 0;
      const std::int64_t n = std::int64_t(v.size()) - in_off, m = n - w + 1;
      SCOPED_TRACE(::testing::Message() << "W=" << w << " layout=" << layout);
      auto out = on_device<float>(static_cast<std::size_t>(m + out_off));
      auto out_max = on_device<float>(static_cast<std::size_t>(m + out_off));
      ws.window_reduce_async(in.data() + in_off, n, w, out.data() + out_off, multireduce::sum{}, 0.f);
      ws.window_reduce_async(in.data() + in_off, n, w, out_max.data() + out_off, multireduce::maximum{}, -INFINITY);
      const auto got = host_copy(out), got_max = host_copy(out_max);
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
  auto in_ints = on_device<int>(ints);
  for (std::int64_t w : {3, 32, 1000}) {
    SCOPED_TRACE(::testing::Message() << "int W=" << w);
    const std::int64_t m = std::int64_t(ints.size()) - w + 1;
    auto out = on_device<long long>(static_cast<std::size_t>(m));
    ws.window_reduce_async(in_ints.data(), std::int64_t(ints.size()), w, out.data(), multireduce::sum{}, 5LL);
    const auto got = host_copy(out);
    long long sum = 5;
    for (std::int64_t j = 0; j < w; ++j) sum += ints[std::size_t(j)];
    for (std::int64_t i = 0; i < m; ++i) {
      if (i > 0) sum += ints[std::size_t(i + w - 1)] - ints[std::size_t(i - 1)];
      ASSERT_EQ(got[std::size_t(i)], sum) << "i=" << i;
    }
  }
  // A non-commutative operator at every block length and middle kind, every window checked.
  const auto mats = random_mats(6000, seed_for("window mat layouts"));
  auto mats_in = on_device<mat2_mod>(mats);
  for (std::int64_t w : {2, 3, 5, 9, 17, 33, 49, 65, 130, 257}) {
    SCOPED_TRACE(::testing::Message() << "mat2 W=" << w);
    const std::int64_t m = std::int64_t(mats.size()) - w + 1;
    auto out = on_device<mat2_mod>(static_cast<std::size_t>(m));
    ws.window_reduce_async(mats_in.data(), std::int64_t(mats.size()), w, out.data(), mat2_mod_product{}, mat_identity);
    const auto got = host_copy(out);
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
  auto in = on_device<float>(v);
  auto mats_in = on_device<std::uint32_t>(mats);
  mc::workspace ws;
  const std::uint32_t identity = 1u | 1u << 24;
  for (std::int64_t w : {33, 34, 47, 48, 49, 64, 65, 100, 129, 545, 1000, 1041, 2047, 2048}) {
    for (int layout = 0; layout < 3; ++layout) {  // aligned; input one element in; output 3 in
      const int in_off = layout == 1 ? 1 : 0, out_off = layout == 2 ? 3 : 0;
      const std::int64_t n = layout == 0 ? n_max : 100'003 + w * 7, m = n - w + 1;
      SCOPED_TRACE(::testing::Message() << "W=" << w << " layout=" << layout << " n=" << n);
      auto out = on_device<float>(static_cast<std::size_t>(m + out_off));
      auto out_max = on_device<float>(static_cast<std::size_t>(m + out_off));
      auto out_mat = on_device<std::uint32_t>(static_cast<std::size_t>(m + out_off));
      ws.window_reduce_async(in.data() + in_off, n, w, out.data() + out_off, multireduce::sum{}, 0.f);
      ws.window_reduce_async(in.data() + in_off, n, w, out_max.data() + out_off, multireduce::maximum{}, -INFINITY);
      ws.window_reduce_async(mats_in.data() + in_off, n, w, out_mat.data() + out_off, mat2_u8_product{}, identity);
      const auto got = host_copy(out), got_max = host_copy(out_max);
      const auto got_mat = host_copy(out_mat);
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

}  // namespace
}  // namespace mr_test
