// The device-wide algorithms' argument checks (errors, not crashes) and inputs past 2^31 elements.
// Skipped without a GPU.
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

TEST(CudaDeviceBadInput, ErrorsNotCrashes) {
  MR_REQUIRE_GPU();
  mc::workspace ws;
  auto in = on_device<float>(16);
  EXPECT_THROW(ws.reduce(in.data(), -1, multireduce::sum{}, 0.f), mc::error);
  EXPECT_THROW(ws.window_reduce_async(in.data(), 16, 0, in.data(), multireduce::sum{}, 0.f), mc::error);
  EXPECT_THROW(ws.fixed_segmented_reduce_async(in.data(), in.data(), -2, 4, multireduce::sum{}, 0.f), mc::error);
  std::size_t bytes = 0;
  EXPECT_EQ(mc::reduce(nullptr, bytes, in.data(), in.data(), 1 << 30, multireduce::sum{}, 0.f), cudaSuccess);
  std::size_t too_small = 1;
  EXPECT_EQ(mc::reduce(in.data(), too_small, in.data(), in.data(), 1 << 30, multireduce::sum{}, 0.f), cudaErrorInvalidValue);
}

TEST(CudaDeviceLarge, ReduceAndSegmentedPast2To31Elements) {
  MR_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t(1) << 31) + 12345;
  mc::device_buffer<std::int8_t> input;
  try {
    input = mc::device_buffer<std::int8_t>(std::size_t(n));
  } catch (const mc::error&) {
    GTEST_SKIP() << "not enough GPU memory for 2^31 bytes";
  }
  std::int8_t* d = input.data();
  MR_TEST_CUDA(cudaMemset(d, 1, std::size_t(n)));
  MR_TEST_CUDA(cudaMemset(d + n - 1, 3, 1));  // the last element differs: it must be counted
  mc::workspace ws;
  EXPECT_EQ(ws.reduce(d, n, multireduce::sum{}, std::int64_t(0)), n + 2);
  EXPECT_EQ(ws.reduce(d, n, multireduce::maximum{}, std::int8_t(-128)), 3);
  const std::vector<std::int64_t> offsets{0, (std::int64_t(1) << 31) + 5, n};
  auto d_off = on_device(offsets);
  auto d_out = on_device<std::int64_t>(3);
  ws.segmented_reduce_async(d, n, d_out.data(), 2, d_off.data(), d_off.data() + 1, multireduce::sum{}, std::int64_t(0));
  auto got = host_copy(d_out);
  EXPECT_EQ(got[0], offsets[1]);
  EXPECT_EQ(got[1], n - offsets[1] + 2);
  ws.fixed_segmented_reduce_async(d, d_out.data(), 3, n / 3, multireduce::sum{}, std::int64_t(0));
  got = host_copy(d_out);
  EXPECT_EQ(got[0], n / 3);
  EXPECT_EQ(got[2], n / 3 + (n % 3 == 0 ? 2 : 0));
}

}  // namespace
}  // namespace mr_test
