// The warp-level test bodies of the host suite, run in CUDA kernels on the GPU.
#include "../common/cuda_runner.cuh"

namespace mr_test {
namespace {

cuda_runner runner;
using three_widths = std::integer_sequence<int, 1, 4, 32>;

TEST(CudaWarpMultiReduce, Int32SumGrid) {
  MR_REQUIRE_GPU();
  expect_grid<int, sum>(runner, 32, some_batches{}, widths_to_32{});
  expect_grid<int, sum>(runner, 32, std::integer_sequence<int, 2, 31, 34>{}, std::integer_sequence<int, 8, 32>{});
}
TEST(CudaWarpMultiReduce, BlockedLayout) {
  MR_REQUIRE_GPU();
  expect_grid<int, sum>(runner, 32, std::integer_sequence<int, 33, 64>{}, three_widths{}, result_layout::blocked);
}
TEST(CudaWarpMultiReduce, WiderAndNarrowerTypes) {
  MR_REQUIRE_GPU();
  using b = std::integer_sequence<int, 3, 33>;
  using w = std::integer_sequence<int, 4, 32>;
  expect_grid<double, sum>(runner, 32, b{}, w{});
  expect_grid<std::uint8_t, bit_xor>(runner, 32, b{}, w{});
  expect_grid<std::int64_t, maximum>(runner, 32, b{}, w{});
  expect_grid<float, minimum>(runner, 32, b{}, w{});
  expect_grid<__half, sum>(runner, 32, b{}, w{});
  expect_grid<__nv_bfloat16, maximum>(runner, 32, b{}, w{});
  expect_grid<key_value<float, std::int64_t>, argmin>(runner, 32, b{}, w{});
  expect_grid<key_value<double, int>, argmax>(runner, 32, b{}, w{});
}
TEST(CudaWarpMultiReduce, OrderPreservingNonCommutative) {
  MR_REQUIRE_GPU();
  auto expect = [](const ::testing::AssertionResult& r) { EXPECT_TRUE(r); };
  expect(check_warp_multi_reduce<mat2, mat2_product, 4, 8, algo::order_preserving, result_layout::striped>(runner, 32));
  expect(check_warp_multi_reduce<mat2, mat2_product, 5, 32, algo::order_preserving, result_layout::striped>(runner, 32));
  expect(check_warp_multi_reduce<mat2, mat2_product, 32, 32, algo::order_preserving, result_layout::striped>(runner, 32));
  expect(check_warp_multi_reduce<mat2, mat2_product, 40, 16, algo::order_preserving, result_layout::blocked>(runner, 32));
}
TEST(CudaWarpReduce, ReduceAllReducePartial) {
  MR_REQUIRE_GPU();
  detail::for_each_index<3>([](auto mode) {
    constexpr int m = decltype(mode)::value;
    EXPECT_TRUE((check_warp_reduce<int, sum, 32, m>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<int, sum, 1, m>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<double, minimum, 16, m>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<key_value<float, int>, argmax, 8, m>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<mat2, mat2_product, 32, m>(runner, 32)));
  });
}
TEST(CudaOnlineMultiReducer, BudgetsAndStreams) {
  MR_REQUIRE_GPU();
  EXPECT_TRUE((check_online<int, sum, 32, 6, 1>(runner, 32)));
  EXPECT_TRUE((check_online<int, sum, 32, 6, 2>(runner, 32)));
  EXPECT_TRUE((check_online<int, sum, 32, 4, 2>(runner, 32)));
  EXPECT_TRUE((check_online<int, sum, 32, 1, 1>(runner, 32)));
  EXPECT_TRUE((check_online<int, sum, 8, 4, 1>(runner, 32)));
  EXPECT_TRUE((check_online<double, sum, 32, 6, 2>(runner, 32)));
  EXPECT_TRUE((check_online<mat2, mat2_product, 16, 5, 1>(runner, 32)));
}

}  // namespace
}  // namespace mr_test
