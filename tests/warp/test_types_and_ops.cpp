// Every type x every operator that applies to it, across algorithms, awkward batch counts and
// logical warp sizes 1, 4 and 32; and warp_reduce / warp_all_reduce / partial warp_reduce.
#include "../common/host_runner.hpp"

namespace mr_test {
namespace {

host_runner runner;
using widths = std::integer_sequence<int, 32>;
using batches = std::integer_sequence<int, 33>;

template <class T, class... Ops>
void expect_type() {
  (expect_grid<T, Ops>(runner, 32, batches{}, widths{}), ...);
  auto reduce_modes = [&]<class Op>() {
    detail::for_each_index<3>([&](auto mode) {
      EXPECT_TRUE((check_warp_reduce<T, Op, 8, decltype(mode)::value>(runner, 32)));
      EXPECT_TRUE((check_warp_reduce<T, Op, 32, decltype(mode)::value>(runner, 32)));
      EXPECT_TRUE((check_warp_reduce<T, Op, 64, decltype(mode)::value>(runner, 64)));
    });
  };
  (reduce_modes.template operator()<Ops>(), ...);
}

TEST(TypesAndOperators, Int8) { expect_type<std::int8_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Int16) { expect_type<std::int16_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Int32) { expect_type<std::int32_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Int64) { expect_type<std::int64_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Uint8) { expect_type<std::uint8_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Uint16) { expect_type<std::uint16_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Uint32) { expect_type<std::uint32_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Uint64) { expect_type<std::uint64_t, sum, minimum, maximum, bit_and, bit_or, bit_xor>(); }
TEST(TypesAndOperators, Float) { expect_type<float, sum, minimum, maximum>(); }
TEST(TypesAndOperators, Double) { expect_type<double, sum, minimum, maximum>(); }
#if MULTIREDUCE_HAS_CUDA_FP16
TEST(TypesAndOperators, Half) { expect_type<__half, sum, minimum, maximum>(); }
TEST(TypesAndOperators, Bfloat16) { expect_type<__nv_bfloat16, sum, minimum, maximum>(); }
#endif
TEST(TypesAndOperators, ArgminArgmax) {
  expect_type<key_value<float, int>, argmin, argmax>();
  expect_type<key_value<double, std::int64_t>, argmin, argmax>();
}

/// A user lambda as the operator (here: the larger magnitude, commutative for these inputs).
TEST(TypesAndOperators, UserLambda) {
  auto absmax = [](int a, int b) { return (a < 0 ? -a : a) >= (b < 0 ? -b : b) ? a : b; };
  std::vector<int> out(32);
  runner.block_for(32, 1).run([&](host_lane& lane) {
    array<int, 3> v{{lane.id(), -lane.id() - 1, lane.id() == 7 ? 100 : 1}};
    out[static_cast<std::size_t>(lane.id())] = warp_multi_reduce<3>(lane, v, absmax)[0];
  });
  EXPECT_EQ(out[0], 31);
  EXPECT_EQ(out[1], -32);
  EXPECT_EQ(out[2], 100);
}

}  // namespace
}  // namespace mr_test
