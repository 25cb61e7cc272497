// The block layer (block_reduce, block_all_reduce, block_multi_reduce) on the host warp emulator.
#include "../common/host_runner.hpp"

namespace mr_test {
namespace {

host_runner runner;

// ---- block level -------------------------------------------------------------------------------
template <class T, class Op, int Threads, int WarpThreads = 32>
void expect_block() {
  EXPECT_TRUE((check_block_reduce<T, Op, Threads, WarpThreads, false>(runner)));
  EXPECT_TRUE((check_block_reduce<T, Op, Threads, WarpThreads, true>(runner)));
  detail::for_each_index<5>([](auto a) {
    constexpr algo A = all_algorithms[decltype(a)::value];
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 0, Threads, A, WarpThreads>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 1, Threads, A, WarpThreads>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 5, Threads, A, WarpThreads>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 33, Threads, A, WarpThreads>(runner)));
    EXPECT_TRUE((check_block_multi_reduce<T, Op, 100, Threads, A, WarpThreads>(runner)));
  });
}
TEST(Block, ReduceAndMultiReduce) {
  expect_block<int, sum, 32>();
  expect_block<int, sum, 96>();  // three warps: not a power of two
  expect_block<int, sum, 256>();
  expect_block<double, minimum, 64>();
  expect_block<key_value<float, int>, argmax, 160>();
  expect_block<int, sum, 128, 64>();  // 64-lane warps
}
TEST(Block, OrderPreservingNonCommutative) {
  EXPECT_TRUE((check_block_reduce<mat2, mat2_product, 160, 32, true>(runner)));
  EXPECT_TRUE((check_block_multi_reduce<mat2, mat2_product, 7, 96, algo::order_preserving, 32>(runner)));
  EXPECT_TRUE((check_block_multi_reduce<mat2, mat2_product, 40, 64, algo::order_preserving, 32>(runner)));
}

}  // namespace
}  // namespace mr_test
