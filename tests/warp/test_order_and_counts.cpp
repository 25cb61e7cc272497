// Order preservation, the paper's operation counts, the online multi-reducer and the result layout
// contract of the warp layer, on the host warp emulator.
#include "../common/host_runner.hpp"

namespace mr_test {
namespace {

host_runner runner;

// ---- non-commutative operator: only the order-preserving forms promise lane order -------------
template <int W, int... B>
void expect_order_preserving(int warp_size, std::integer_sequence<int, B...>) {
  auto expect = [](const ::testing::AssertionResult& r) { EXPECT_TRUE(r); };
  (expect(check_warp_multi_reduce<mat2, mat2_product, B, W, algo::order_preserving, result_layout::striped>(runner, warp_size)), ...);
  (expect(check_warp_multi_reduce<mat2, mat2_product, B, W, algo::order_preserving, result_layout::blocked>(runner, warp_size)), ...);
}
TEST(OrderPreserving, MatrixProductAllBatchesAndWidths) {
  detail::for_each_index<6>([](auto k) { expect_order_preserving<(1 << decltype(k)::value)>(32, all_batches{}); });
  expect_order_preserving<64>(64, some_batches{});
}
TEST(OrderPreserving, WarpReduceAndAllReduce) {
  detail::for_each_index<3>([](auto mode) {
    EXPECT_TRUE((check_warp_reduce<mat2, mat2_product, 32, decltype(mode)::value>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<mat2, mat2_product, 8, decltype(mode)::value>(runner, 32)));
    EXPECT_TRUE((check_warp_reduce<mat2, mat2_product, 64, decltype(mode)::value>(runner, 64)));
  });
}
TEST(OrderPreserving, SelectMergeIsNotOrderPreserving) {
  // The check must be able to fail: the commutative-only algorithm gets a wrong product.
  auto result = check_warp_multi_reduce<mat2, mat2_product, 32, 32, algo::select_merge, result_layout::striped>(runner, 32);
  EXPECT_FALSE(result);
}

// ---- the paper's operation counts ------------------------------------------------------------
template <int Batches, int W, algo A>
warp_counts counts_of(int warp_size = 32) {
  std::vector<int> in(static_cast<std::size_t>(warp_size * Batches), 1), out(static_cast<std::size_t>(warp_size) * 64);
  runner.launch<warp_multi_reduce_body<int, sum, Batches, W, A, result_layout::striped>>(warp_size, warp_size, in, out);
  return runner.last_counts;
}
TEST(OperationCounts, PaperFigures) {
  EXPECT_EQ((counts_of<32, 32, algo::butterfly>().shuffles), 160u);
  const auto sm = counts_of<32, 32, algo::select_merge>();
  EXPECT_EQ(sm.shuffles, 62u);
  EXPECT_EQ(sm.selects, 31u);
  EXPECT_EQ(sm.operator_applications, 62u);
  EXPECT_EQ((counts_of<32, 32, algo::swap>().shuffles), 31u);
  EXPECT_EQ((counts_of<32, 32, algo::swap>().operator_applications), 31u);
  EXPECT_EQ((counts_of<32, 32, algo::order_preserving>().shuffles), 62u);
  EXPECT_EQ((counts_of<32, 32, algo::order_preserving>().selects), 31u);
  const auto fig1 = counts_of<4, 8, algo::select_merge>();
  EXPECT_EQ(fig1.shuffles, 7u);
  EXPECT_EQ(fig1.selects, 3u);
  const auto shared = counts_of<32, 32, algo::shared_exchange>();
  EXPECT_EQ(shared.shuffles, 0u);
  EXPECT_EQ(shared.selects, 31u);
  EXPECT_EQ(shared.syncs, 62u);  // a write-sync and a read-sync per step
  // Two 32-bit words per double: twice the shuffle instructions.
  std::vector<double> in(32 * 32, 1.0), out(32);
  runner.launch<warp_multi_reduce_body<double, sum, 32, 32, algo::swap, result_layout::striped>>(32, 32, in, out);
  EXPECT_EQ(runner.last_counts.shuffles, 62u);
}
TEST(OperationCounts, OnlineReducer) {
  auto count = [](auto body_tag) {
    using body = typename decltype(body_tag)::type;
    std::vector<int> in(32 * 2 * 32, 1), out(64);
    runner.launch<body>(32, 32, in, out);
    return runner.last_counts;
  };
  const auto full = count(std::type_identity<online_body<int, sum, 32, 6, 1>>{});
  EXPECT_EQ(full.shuffles, 62u);
  EXPECT_EQ(full.selects, 31u);
  EXPECT_EQ(count(std::type_identity<online_body<int, sum, 32, 6, 2>>{}).shuffles, 124u);  // the paper's benchmark
  EXPECT_EQ(count(std::type_identity<online_body<int, sum, 32, 5, 1>>{}).shuffles, 62u);
  EXPECT_EQ(count(std::type_identity<online_body<int, sum, 32, 4, 1>>{}).shuffles, 64u);
  EXPECT_EQ(count(std::type_identity<online_body<int, sum, 32, 1, 1>>{}).shuffles, 160u);  // plain butterflies
}

// ---- online multi-reducer ----------------------------------------------------------------------
template <class T, class Op, int W>
void expect_online(int warp_size) {
  detail::for_each_index<detail::log2_of<W> + 1>([&](auto b) {
    constexpr int budget = decltype(b)::value + 1;
    EXPECT_TRUE((check_online<T, Op, W, budget, 1>(runner, warp_size)));
    EXPECT_TRUE((check_online<T, Op, W, budget, 2>(runner, warp_size)));
  });
}
TEST(OnlineMultiReducer, EveryWidthBudgetAndStreamCount) {
  expect_online<int, sum, 1>(32);
  expect_online<int, sum, 2>(32);
  expect_online<int, sum, 4>(32);
  expect_online<int, sum, 8>(32);
  expect_online<int, sum, 16>(32);
  expect_online<int, sum, 32>(32);
  expect_online<int, sum, 64>(64);
  expect_online<double, maximum, 32>(32);
  expect_online<key_value<float, int>, argmin, 16>(32);
}
TEST(OnlineMultiReducer, NonCommutative) {
  expect_online<mat2, mat2_product, 8>(32);
  expect_online<mat2, mat2_product, 32>(32);
}

TEST(Layout, BatchInLaneContract) {
  EXPECT_EQ(batch_in_lane(4, 8, result_layout::striped, 5, 0), 1);  // Figure 1: b on lanes 1 and 5
  EXPECT_EQ(batch_in_lane(3, 32, result_layout::striped, 3, 0), -1);
  EXPECT_EQ(batch_in_lane(64, 32, result_layout::striped, 7, 1), 39);
  EXPECT_EQ(batch_in_lane(64, 32, result_layout::blocked, 7, 1), 15);
  EXPECT_EQ(batch_in_lane(0, 32, result_layout::striped, 0, 0), -1);
  EXPECT_EQ((results_per_lane<33, 32>), 2);
}

}  // namespace
}  // namespace mr_test
