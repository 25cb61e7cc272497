// The test bodies hipcc compiles for AMD wavefronts (tests/common/wave_cases.hpp, compiled by
// tests/hip/compile_layers.hip) run and checked on the emulator: with 64-lane warps, the wavefront
// of gfx90a, and 32-lane ones, that of gfx1030. No AMD GPU runs them here; this is where their
// results are checked.
#include <type_traits>

#include "../common/host_runner.hpp"
#include "../common/wave_cases.hpp"

namespace mr_test {
namespace {

host_runner runner;

// Each body's check (warp_cases.hpp) on warps of `wave` lanes.
template <class T, class Op, int W, int Mode>
::testing::AssertionResult check(std::type_identity<warp_reduce_body<T, Op, W, Mode>>, int wave) {
  return check_warp_reduce<T, Op, W, Mode>(runner, wave);
}
template <class T, class Op, int Batches, int W, algo A, result_layout L>
::testing::AssertionResult check(std::type_identity<warp_multi_reduce_body<T, Op, Batches, W, A, L>>, int wave) {
  return check_warp_multi_reduce<T, Op, Batches, W, A, L>(runner, wave, 2);  // two wavefronts
}
template <class T, class Op, int W, int Budget, int Streams>
::testing::AssertionResult check(std::type_identity<online_body<T, Op, W, Budget, Streams>>, int wave) {
  return check_online<T, Op, W, Budget, Streams>(runner, wave);
}
template <class T, class Op, int BlockThreads, int WarpThreads, bool All>
::testing::AssertionResult check(std::type_identity<block_reduce_body<T, Op, BlockThreads, WarpThreads, All>>, int) {
  return check_block_reduce<T, Op, BlockThreads, WarpThreads, All>(runner);
}
template <class T, class Op, int Batches, int BlockThreads, algo A, int WarpThreads>
::testing::AssertionResult check(
    std::type_identity<block_multi_reduce_body<T, Op, Batches, BlockThreads, A, WarpThreads>>, int) {
  return check_block_multi_reduce<T, Op, Batches, BlockThreads, A, WarpThreads>(runner);
}

template <int Wave, class... Bodies>
void expect_cases(case_list<Bodies...>) {
  auto expect = [](const ::testing::AssertionResult& r) { EXPECT_TRUE(r); };
  (expect(check(std::type_identity<Bodies>{}, Wave)), ...);
}

TEST(HipWaveCasesOnEmulator, Wave64) {
  expect_cases<64>(wave_cases<64>{});
  RecordProperty("cases", wave_cases<64>::size);
}
TEST(HipWaveCasesOnEmulator, Wave32) {
  expect_cases<32>(wave_cases<32>{});
  RecordProperty("cases", wave_cases<32>::size);
}

}  // namespace
}  // namespace mr_test
