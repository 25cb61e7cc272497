// The checks of the warp and block test bodies (warp_bodies.hpp), through a Runner: the host
// emulator (host_runner.hpp) or a CUDA kernel (cuda_runner.cuh). A check compares every output a
// lane is documented to hold against a sequential fold. Outputs are poisoned first.
#pragma once

#include <gtest/gtest.h>
#include <multireduce/multireduce.hpp>

#include <string>
#include <utility>
#include <vector>

#include "test_values.hpp"
#include "warp_bodies.hpp"

namespace mr_test {

// ---------------------------------------------------------------------------------------------
// Checks
//
// Each check_* template below names one case at compile time (the body's parameters) and does only
// what needs them: it picks the body's launch. The inputs, the run and the comparison are in a
// *_case function templated on the value type, the operator and the runner alone, which takes the
// case's parameters as values and the launch as a pointer: the host code of the checks is compiled
// once per type and operator instead of once per case (thousands of cases in the host suite, each
// otherwise a copy of the same code); the bodies, the inputs and the checks are the same.

/// Runs a test body (the runner's launch of Body): the only part of a check that differs per case.
template <class Runner, class T>
using launch_fn = void (*)(Runner& runner, int warp_size, int threads, const std::vector<T>& in, std::vector<T>& out);

template <class Body, class Runner, class T>
void launch_body(Runner& runner, int warp_size, int threads, const std::vector<T>& in, std::vector<T>& out) {
  runner.template launch<Body>(warp_size, threads, in, out);
}

template <class T, class Op>
T fold_lanes(const std::vector<T>& in, int per_thread, int first_thread, int lanes, int k) {
  std::vector<T> xs;
  for (int l = 0; l < lanes; ++l) xs.push_back(in[static_cast<std::size_t>((first_thread + l) * per_thread + k)]);
  return reference_fold<T, Op>(xs);
}

inline std::string where(const char* what, std::uint64_t seed) {
  return std::string(what) + " (seed " + std::to_string(seed) + ", base seed MULTIREDUCE_TEST_SEED=" +
         std::to_string(base_seed()) + ")";
}

/// warp_multi_reduce<Batches, W, A, L> (the body `launch` runs; R results a lane) on `warps` warps of `warp_size` lanes.
template <class T, class Op, class Runner>
::testing::AssertionResult check_warp_multi_reduce_case(Runner& runner, launch_fn<Runner, T> launch, int Batches,
                                                        int W, algo A, result_layout L, int R, int warp_size,
                                                        int warps) {
  const int threads = warp_size * warps;
  const std::uint64_t seed = base_seed() ^ (std::uint64_t(Batches) << 8) ^ (std::uint64_t(W) << 20) ^
                             (std::uint64_t(A) << 28) ^ (std::uint64_t(L) << 32) ^ (std::uint64_t(warp_size) << 36);
  const auto in = random_inputs<T, Op>(threads, Batches, W, seed);
  std::vector<T> out(static_cast<std::size_t>(threads * (R > 0 ? R : 1)));
  poison(out);
  launch(runner, warp_size, threads, in, out);
  const std::string context = "warp_multi_reduce<" + std::to_string(Batches) + ", " + std::to_string(W) + ", " +
                              std::string(to_string(A)) + ", " + std::string(to_string(L)) + "> on a " +
                              std::to_string(warp_size) + "-lane warp";
  // Every batch must be held by its documented lane (the layout contract).
  for (int b = 0; b < Batches; ++b) {
    const int lane_of_b = L == result_layout::striped ? b % W : b / (R > 0 ? R : 1);
    const int slot_of_b = L == result_layout::striped ? b / W : b % (R > 0 ? R : 1);
    if (batch_in_lane(Batches, W, L, lane_of_b, slot_of_b) != b)
      return ::testing::AssertionFailure() << context << ": batch " << b << " has no documented lane";
  }
  for (int t = 0; t < threads; ++t) {
    const int logical = t % W, first = t - logical;
    for (int j = 0; j < R; ++j) {
      const int b = batch_in_lane(Batches, W, L, logical, j);
      if (b < 0) continue;
      const T expected = fold_lanes<T, Op>(in, Batches, first, W, b);
      const T got = out[static_cast<std::size_t>(t * R + j)];
      if (!same(got, expected))
        return ::testing::AssertionFailure() << where(context.c_str(), seed) << ": lane " << t << " slot " << j
                                             << " (batch " << b << ") = " << show(got) << ", expected " << show(expected);
    }
  }
  return ::testing::AssertionSuccess();
}

template <class T, class Op, int Batches, int W, algo A, result_layout L, class Runner>
::testing::AssertionResult check_warp_multi_reduce(Runner& runner, int warp_size, int warps = 1) {
  return check_warp_multi_reduce_case<T, Op>(runner, &launch_body<warp_multi_reduce_body<T, Op, Batches, W, A, L>, Runner, T>,
                                             Batches, W, A, L, results_per_lane<Batches, W>, warp_size, warps);
}

/// warp_reduce<W> in Mode (the body `launch` runs) on one warp of `warp_size` lanes.
template <class T, class Op, class Runner>
::testing::AssertionResult check_warp_reduce_case(Runner& runner, launch_fn<Runner, T> launch, int W, int Mode,
                                                  int warp_size) {
  const std::uint64_t seed = base_seed() ^ (std::uint64_t(W) << 12) ^ (std::uint64_t(Mode) << 24) ^ 0x77;
  const auto in = random_inputs<T, Op>(warp_size, 1, W, seed);
  std::vector<T> out(static_cast<std::size_t>(warp_size));
  poison(out);
  launch(runner, warp_size, warp_size, in, out);
  const int valid = Mode == 2 ? (W / 2 + 1 < W ? W / 2 + 1 : W) : W;
  for (int t = 0; t < warp_size; ++t) {
    const int logical = t % W;
    if (Mode != 1 && logical != 0) continue;  // warp_reduce: the result is in logical lane 0
    const T expected = fold_lanes<T, Op>(in, 1, t - logical, valid, 0);
    if (!same(out[static_cast<std::size_t>(t)], expected))
      return ::testing::AssertionFailure() << where("warp_reduce", seed) << " W=" << W << " mode " << Mode << " lane "
                                           << t << ": " << show(out[static_cast<std::size_t>(t)]) << " != " << show(expected);
  }
  return ::testing::AssertionSuccess();
}

template <class T, class Op, int W, int Mode, class Runner>
::testing::AssertionResult check_warp_reduce(Runner& runner, int warp_size) {
  return check_warp_reduce_case<T, Op>(runner, &launch_body<warp_reduce_body<T, Op, W, Mode>, Runner, T>, W, Mode,
                                       warp_size);
}

/// online_multi_reducer<T, Op, W, Budget, Streams> (the body `launch` runs) on one warp.
template <class T, class Op, class Runner>
::testing::AssertionResult check_online_case(Runner& runner, launch_fn<Runner, T> launch, int W, int Budget,
                                             int Streams, int warp_size) {
  const std::uint64_t seed = base_seed() ^ (std::uint64_t(W) << 12) ^ (std::uint64_t(Budget) << 24) ^ (std::uint64_t(Streams) << 30);
  const auto in = random_inputs<T, Op>(static_cast<std::size_t>(warp_size), static_cast<std::size_t>(Streams * W), W, seed);
  std::vector<T> out(static_cast<std::size_t>(warp_size * Streams));
  poison(out);
  launch(runner, warp_size, warp_size, in, out);
  for (int t = 0; t < warp_size; ++t) {
    const int logical = t % W, first = t - logical;
    for (int s = 0; s < Streams; ++s) {
      std::vector<T> xs;  // step `logical` of stream s over the logical warp's lanes
      for (int l = 0; l < W; ++l) xs.push_back(in[static_cast<std::size_t>(((first + l) * Streams + s) * W + logical)]);
      const T expected = reference_fold<T, Op>(xs);
      const T got = out[static_cast<std::size_t>(t * Streams + s)];
      if (!same(got, expected))
        return ::testing::AssertionFailure() << where("online_multi_reducer", seed) << " W=" << W << " budget " << Budget
                                             << " streams " << Streams << " lane " << t << " stream " << s << ": "
                                             << show(got) << " != " << show(expected);
    }
  }
  return ::testing::AssertionSuccess();
}

template <class T, class Op, int W, int Budget, int Streams, class Runner>
::testing::AssertionResult check_online(Runner& runner, int warp_size) {
  return check_online_case<T, Op>(runner, &launch_body<online_body<T, Op, W, Budget, Streams>, Runner, T>, W, Budget,
                                  Streams, warp_size);
}

/// block_reduce / block_all_reduce (the body `launch` runs) over a block of BlockThreads.
template <class T, class Op, class Runner>
::testing::AssertionResult check_block_reduce_case(Runner& runner, launch_fn<Runner, T> launch, int BlockThreads,
                                                   int WarpThreads, bool All) {
  const std::uint64_t seed = base_seed() ^ (std::uint64_t(BlockThreads) << 12) ^ (std::uint64_t(All) << 24) ^ 0x5151;
  const auto in = random_inputs<T, Op>(BlockThreads, 1, BlockThreads, seed);
  std::vector<T> out(static_cast<std::size_t>(BlockThreads));
  poison(out);
  launch(runner, WarpThreads, BlockThreads, in, out);
  const T expected = fold_lanes<T, Op>(in, 1, 0, BlockThreads, 0);
  for (int t = 0; t < (All ? BlockThreads : 1); ++t)
    if (!same(out[static_cast<std::size_t>(t)], expected))
      return ::testing::AssertionFailure() << where("block_reduce", seed) << " threads " << BlockThreads << " thread " << t
                                           << ": " << show(out[static_cast<std::size_t>(t)]) << " != " << show(expected);
  return ::testing::AssertionSuccess();
}

template <class T, class Op, int BlockThreads, int WarpThreads, bool All, class Runner>
::testing::AssertionResult check_block_reduce(Runner& runner) {
  return check_block_reduce_case<T, Op>(runner, &launch_body<block_reduce_body<T, Op, BlockThreads, WarpThreads, All>, Runner, T>,
                                        BlockThreads, WarpThreads, All);
}

/// block_multi_reduce<Batches, BlockThreads, A, WarpThreads> (the body `launch` runs; R results a thread).
template <class T, class Op, class Runner>
::testing::AssertionResult check_block_multi_reduce_case(Runner& runner, launch_fn<Runner, T> launch, int Batches,
                                                         int BlockThreads, algo A, int WarpThreads, int R) {
  const std::uint64_t seed = base_seed() ^ (std::uint64_t(Batches) << 12) ^ (std::uint64_t(BlockThreads) << 24) ^ (std::uint64_t(A) << 40);
  const auto in = random_inputs<T, Op>(BlockThreads, Batches, BlockThreads, seed);
  std::vector<T> out(static_cast<std::size_t>(BlockThreads * (R > 0 ? R : 1)));
  poison(out);
  launch(runner, WarpThreads, BlockThreads, in, out);
  for (int b = 0; b < Batches; ++b) {
    const int t = b % BlockThreads, j = b / BlockThreads;
    const T expected = fold_lanes<T, Op>(in, Batches, 0, BlockThreads, b);
    const T got = out[static_cast<std::size_t>(t * R + j)];
    if (!same(got, expected))
      return ::testing::AssertionFailure() << where("block_multi_reduce", seed) << " " << to_string(A) << " Batches="
                                           << Batches << " threads=" << BlockThreads << " batch " << b << ": " << show(got)
                                           << " != " << show(expected);
  }
  return ::testing::AssertionSuccess();
}

template <class T, class Op, int Batches, int BlockThreads, algo A, int WarpThreads, class Runner>
::testing::AssertionResult check_block_multi_reduce(Runner& runner) {
  return check_block_multi_reduce_case<T, Op>(
      runner, &launch_body<block_multi_reduce_body<T, Op, Batches, BlockThreads, A, WarpThreads>, Runner, T>, Batches,
      BlockThreads, A, WarpThreads, block_results_per_thread<Batches, BlockThreads>);
}

// ---------------------------------------------------------------------------------------------
// Grids

/// Batches 0..33 and 64: the test grid.
using all_batches = decltype([] {
  return []<int... I>(std::integer_sequence<int, I...>) { return std::integer_sequence<int, I..., 64>{}; }(
      std::make_integer_sequence<int, 34>{});
}());

/// Awkward batch counts for the cross-section of every type and operator.
using some_batches = std::integer_sequence<int, 0, 1, 3, 5, 32, 33, 64>;

template <class T, class Op, int W, algo A, result_layout L, class Runner, int... B>
void expect_batches(Runner& runner, int warp_size, std::integer_sequence<int, B...>) {
  auto expect = [](const ::testing::AssertionResult& r) { EXPECT_TRUE(r); };
  (expect(check_warp_multi_reduce<T, Op, B, W, A, L>(runner, warp_size)), ...);
}

template <class T, class Op, int W, algo A>
struct config {
  using type = T;
  using op = Op;
  static constexpr int width = W;
  static constexpr algo algorithm = A;
};

template <class T, class Op, int W>
using configs_of_width = ::testing::Types<config<T, Op, W, algo::butterfly>, config<T, Op, W, algo::select_merge>,
                                          config<T, Op, W, algo::swap>, config<T, Op, W, algo::order_preserving>,
                                          config<T, Op, W, algo::shared_exchange>>;

}  // namespace mr_test

namespace mr_test {

inline constexpr algo all_algorithms[] = {algo::butterfly, algo::select_merge, algo::swap, algo::order_preserving,
                                          algo::shared_exchange};

/// Every algorithm x logical warp size in Widths x the batch counts in Batches.
template <class T, class Op, class Runner, class Batches, int... Widths>
void expect_grid(Runner& runner, int warp_size, Batches batches, std::integer_sequence<int, Widths...>,
                 result_layout layout = result_layout::striped) {
  auto one_width = [&]<int W>(std::integral_constant<int, W>) {
    detail::for_each_index<5>([&](auto a) {
      constexpr algo A = all_algorithms[decltype(a)::value];
      if (layout == result_layout::striped) expect_batches<T, Op, W, A, result_layout::striped>(runner, warp_size, batches);
      else expect_batches<T, Op, W, A, result_layout::blocked>(runner, warp_size, batches);
    });
  };
  (one_width(std::integral_constant<int, Widths>{}), ...);
}

using widths_to_32 = std::integer_sequence<int, 1, 2, 4, 8, 16, 32>;

}  // namespace mr_test
