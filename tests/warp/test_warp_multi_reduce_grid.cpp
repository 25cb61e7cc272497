// The full grid on the emulator: every algorithm x Batches 0..33 and 64 x logical warp sizes
// 1..32 (32-lane warps) and 1..64 (64-lane warps, as AMD wavefronts), for 32-bit, 64-bit,
// 8-bit and struct values.
#include "../common/host_runner.hpp"

namespace mr_test {
namespace {

host_runner runner;

TEST(WarpMultiReduceGrid, Int32SumWarp32) {
  expect_grid<int, sum>(runner, 32, all_batches{}, std::integer_sequence<int, 1, 8, 32>{});
  expect_grid<int, sum>(runner, 32, some_batches{}, std::integer_sequence<int, 2, 4, 16>{});
}
TEST(WarpMultiReduceGrid, Int32SumWarp64) {
  expect_grid<int, sum>(runner, 64, some_batches{}, std::integer_sequence<int, 2, 64>{});
}
using three_widths = std::integer_sequence<int, 4, 32>;
TEST(WarpMultiReduceGrid, DoubleSum) { expect_grid<double, sum>(runner, 32, some_batches{}, three_widths{}); }
TEST(WarpMultiReduceGrid, Uint8Xor) { expect_grid<std::uint8_t, bit_xor>(runner, 32, some_batches{}, three_widths{}); }
TEST(WarpMultiReduceGrid, ArgminFloatInt64) {
  expect_grid<key_value<float, std::int64_t>, argmin>(runner, 32, some_batches{}, three_widths{});
}
TEST(WarpMultiReduceGrid, BlockedLayout) {
  expect_grid<int, sum>(runner, 32, some_batches{}, three_widths{}, result_layout::blocked);
  expect_grid<int, sum>(runner, 64, some_batches{}, std::integer_sequence<int, 64>{}, result_layout::blocked);
}

}  // namespace
}  // namespace mr_test
