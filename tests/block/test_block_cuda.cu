// The block-level test bodies of the host suite, run in CUDA kernels on the GPU.
#include "../common/cuda_runner.cuh"

namespace mr_test {
namespace {

cuda_runner runner;

template <class T, class Op, int Threads>
void expect_block() {
  EXPECT_TRUE((check_block_reduce<T, Op, Threads, 32, false>(runner)));
  EXPECT_TRUE((check_block_reduce<T, Op, Threads, 32, true>(runner)));
  detail::for_each_index<5>([](auto a) {
    constexpr algo A = all_algorithms[decltype(a)::value];
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 0, Threads, A, 32>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 5, Threads, A, 32>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 33, Threads, A, 32>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 300, Threads, A, 32>(runner)));
  });
}

TEST(CudaBlock, ReduceAndMultiReduce) {
  MR_REQUIRE_GPU();
  expect_block<int, sum, 32>();
  expect_block<int, sum, 96>();
  expect_block<int, sum, 256>();
  expect_block<float, maximum, 1024>();
  expect_block<key_value<float, int>, argmin, 160>();
}
TEST(CudaBlock, OrderPreservingNonCommutative) {
  MR_REQUIRE_GPU();
  EXPECT_TRUE((check_block_reduce<mat2, mat2_product, 160, 32, true>(runner)));
  EXPECT_TRUE((check_block_multi_reduce<mat2, mat2_product, 7, 96, algo::order_preserving, 32>(runner)));
}

}  // namespace
}  // namespace mr_test
