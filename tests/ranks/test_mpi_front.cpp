// tests/ranks/test_mpi_front.cpp -- multireduce::mpi against the one-process CPU calls, bitwise.
// Run under mpirun (ctest: -np 1, 2, 3, 4). Every rank builds the WHOLE array from one seed, takes
// its shard from a shard plan, calls the front, and compares with the cpu:: call on the whole
// array. Test bodies never ASSERT (a rank leaving a test early would leave the others waiting in
// a collective): they EXPECT, and every rank takes the same path.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <multireduce/cpu.hpp>
#include <multireduce/match/cpu.hpp>
#include <multireduce/mpi.hpp>

#include "rank_cases.hpp"

namespace mr = multireduce;
using rank_test::plan;
using rank_test::same_bits;
using rank_test::values;

namespace {

int world_rank = 0, world_size = 1;

/// The part of the whole array this rank holds under plan p (a copy: shards are separate arrays).
template <class T>
std::vector<T> shard_of(const std::vector<T>& whole, const plan& p) {
  const std::int64_t s = p.start(world_rank), n = p.lengths[std::size_t(world_rank)];
  return std::vector<T>(whole.begin() + s, whole.begin() + s + n);
}

/// A null pointer for an empty shard: the front must take it.
template <class T>
const T* data_or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

std::string where(const plan& p, std::int64_t n, const char* what) {
  return std::string(what) + ", plan " + p.name + ", N = " + std::to_string(n) + ", seed " +
         std::to_string(rank_test::base_seed()) + ", rank " + std::to_string(world_rank) + " of " +
         std::to_string(world_size);
}

const std::int64_t C = mr::cpu::chunk_elements;
// Lengths: empty, tiny, one partial chunk, several chunks and granules with a ragged end.
const std::int64_t lengths[] = {0, 1, 7, 1000, 3 * C + 12345};

template <class T, class Op>
void check_reduce(values kind, std::uint64_t salt) {
  for (std::int64_t n : lengths) {
    const auto whole = rank_test::whole_array<T>(n, kind, salt + std::uint64_t(n));
    const T init = Op::template identity<T>();
    const T want = mr::cpu::reduce(whole.data(), n, Op{}, init);
    for (const plan& p : rank_test::plans(n, world_size))
      for (std::int64_t g : {C, 2 * C, 16 * C}) {
        const auto mine = shard_of(whole, p);
        const T got = mr::mpi::reduce(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()), Op{}, init,
                                      mr::mpi::options{g});
        EXPECT_TRUE(same_bits(got, want)) << where(p, n, "reduce") << ", granule " << g << ": " << +got << " vs " << +want;
      }
  }
}

template <class T>
void check_all_operators() {
  check_reduce<T, mr::sum>(values::sum, 1);
  check_reduce<T, mr::product>(values::product, 2);
  check_reduce<T, mr::minimum>(values::extreme, 3);
  check_reduce<T, mr::maximum>(values::extreme, 4);
  if constexpr (std::is_integral_v<T>) {
    check_reduce<T, mr::bit_and>(values::bits, 5);
    check_reduce<T, mr::bit_or>(values::bits, 6);
    check_reduce<T, mr::bit_xor>(values::bits, 7);
  }
}

template <class T>
class MpiEveryType : public ::testing::Test {};
using every_type = ::testing::Types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                                    std::uint32_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(MpiEveryType, every_type);

TYPED_TEST(MpiEveryType, ReduceEveryOperatorIsTheOneProcessCall) { check_all_operators<TypeParam>(); }

TYPED_TEST(MpiEveryType, StatisticsAreTheOneProcessCall) {
  using T = TypeParam;
  for (std::int64_t n : lengths) {
    auto whole = rank_test::whole_array<T>(n, values::sum, 11 + std::uint64_t(n));
    const auto want = mr::cpu::statistics(whole.data(), n);
    for (const plan& p : rank_test::plans(n, world_size))
      for (std::int64_t g : {C, 4 * C}) {
        const auto mine = shard_of(whole, p);
        const auto got = mr::mpi::statistics(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()), {g});
        EXPECT_TRUE(rank_test::same_statistics(got, want))
            << where(p, n, "statistics") << ", granule " << g << ": mean " << got.mean << " vs " << want.mean << ", var "
            << got.var << " vs " << want.var;
      }
  }
}

TYPED_TEST(MpiEveryType, ArgminArgmaxTakeTheLowestGlobalIndex) {
  using T = TypeParam;
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(999), 2 * C + 77}) {
    for (const plan& p : rank_test::plans(n, world_size)) {
      auto whole = rank_test::whole_array<T>(n, values::extreme, 21 + std::uint64_t(n));
      // Ties of the extremes at every rank's first and last element (across rank boundaries).
      for (int r = 0; r < world_size; ++r) {
        const std::int64_t s = p.start(r), l = p.lengths[std::size_t(r)];
        if (l == 0) continue;
        whole[std::size_t(s)] = std::numeric_limits<T>::lowest();
        whole[std::size_t(s + l - 1)] = std::numeric_limits<T>::max();
      }
      const auto mine = shard_of(whole, p);
      const auto lo = mr::mpi::argmin(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()));
      const auto hi = mr::mpi::argmax(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()));
      const auto want_lo = mr::cpu::argmin(whole.data(), n), want_hi = mr::cpu::argmax(whole.data(), n);
      EXPECT_TRUE(same_bits(lo.value, want_lo.value) && lo.index == want_lo.index)
          << where(p, n, "argmin") << ": " << lo.index << " vs " << want_lo.index;
      EXPECT_TRUE(same_bits(hi.value, want_hi.value) && hi.index == want_hi.index)
          << where(p, n, "argmax") << ": " << hi.index << " vs " << want_hi.index;
    }
  }
}

TEST(MpiFront, ArgminArgmaxFirstNaNWinsAcrossRanks) {
  const std::int64_t n = 5000;
  for (const plan& p : rank_test::plans(n, world_size)) {
    auto whole = rank_test::whole_array<double>(n, values::extreme, 31);
    // NaNs at the last rank's start and at the first non-empty rank's last element: the first wins.
    const double nan1 = std::numeric_limits<double>::quiet_NaN(), nan2 = -std::numeric_limits<double>::quiet_NaN();
    for (int r = world_size - 1; r >= 0; --r)
      if (p.lengths[std::size_t(r)] > 0) {
        whole[std::size_t(p.start(r))] = nan2;
        break;
      }
    for (int r = 0; r < world_size; ++r)
      if (p.lengths[std::size_t(r)] > 0) {
        whole[std::size_t(p.start(r) + p.lengths[std::size_t(r)] - 1)] = nan1;
        break;
      }
    const auto mine = shard_of(whole, p);
    const auto lo = mr::mpi::argmin(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()));
    const auto hi = mr::mpi::argmax(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()));
    const auto want_lo = mr::cpu::argmin(whole.data(), n), want_hi = mr::cpu::argmax(whole.data(), n);
    EXPECT_TRUE(same_bits(lo.value, want_lo.value) && lo.index == want_lo.index) << where(p, n, "argmin NaN");
    EXPECT_TRUE(same_bits(hi.value, want_hi.value) && hi.index == want_hi.index) << where(p, n, "argmax NaN");
    const auto s = mr::mpi::statistics(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()));
    EXPECT_TRUE(rank_test::same_statistics(s, mr::cpu::statistics(whole.data(), n))) << where(p, n, "statistics NaN");
  }
}

/// NumPy's answer for a sum that is not finite: NaN with a NaN or both infinities in the data,
/// else the infinity of the data or, for finite data whose sum overflows, of the overflow's sign.
template <class T>
T numpy_special_sum(const std::vector<T>& x, int overflow_sign) {
  bool nan = false, plus = false, minus = false;
  for (T v : x) {
    nan = nan || std::isnan(v);
    plus = plus || v == std::numeric_limits<T>::infinity();
    minus = minus || v == -std::numeric_limits<T>::infinity();
  }
  if (nan || (plus && minus)) return std::numeric_limits<T>::quiet_NaN();
  if (plus || overflow_sign > 0) return std::numeric_limits<T>::infinity();
  return -std::numeric_limits<T>::infinity();
}

/// A sum whose answer is NumPy's non-finite one (same NaN-ness; an infinity with its sign).
template <class T>
bool same_special(T got, T want) {
  return std::isnan(want) ? std::isnan(got) : got == want;
}

template <class T>
void check_special_sums() {
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max();
  for (std::int64_t n : {std::int64_t(1), std::int64_t(7), std::int64_t(1000), 3 * C + 12345}) {
    for (const char* what : {"inf", "-inf", "both", "nan", "overflow", "-overflow"}) {
      const std::string w = what;
      auto whole = rank_test::whole_array<T>(n, values::sum, 51 + std::uint64_t(n));
      std::mt19937_64 rng(rank_test::base_seed() * 7919u + std::uint64_t(n) + w.size());
      std::vector<std::size_t> at(3);
      for (auto& a : at) a = std::size_t(rng() % std::uint64_t(n));
      int sign = 0;
      if (w == "inf" || w == "-inf") {
        for (auto a : at) whole[a] = w == "inf" ? inf : -inf;
      } else if (w == "both") {
        whole[at[0]] = inf;
        whole[at[1]] = -inf;  // (n = 1: the same place, -inf alone)
      } else if (w == "nan") {
        whole[at[0]] = inf;
        whole[at[1]] = std::numeric_limits<T>::quiet_NaN();
      } else {  // same-signed values past half the range, at both ends and one more: overflow in any order
        sign = w == "overflow" ? 1 : -1;
        if (n < 2) continue;
        at = {0, std::size_t(n - 1), at[2]};
        std::uniform_real_distribution<double> part(0.6, 1.0);
        for (auto a : at) whole[a] = static_cast<T>(sign * part(rng) * double(big));
      }
      const T want = numpy_special_sum(whole, sign), one = mr::cpu::reduce(whole.data(), n, mr::sum{}, T(0));
      EXPECT_TRUE(same_special(one, want)) << what << ", N = " << n << ": the one-process call gives " << one;
      for (const plan& p : rank_test::plans(n, world_size))
        for (std::int64_t g : {C, 2 * C}) {
          const auto mine = shard_of(whole, p);
          const T got = mr::mpi::reduce(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()), mr::sum{}, T(0),
                                        mr::mpi::options{g});
          EXPECT_TRUE(same_special(got, want) && same_bits(got, one))
              << where(p, n, what) << ", granule " << g << ": " << got << ", NumPy " << want;
          // statistics' sum of infinities and NaN (its float64 sum of finite float data does not overflow).
          if (sign == 0) {
            const auto s = mr::mpi::statistics(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()), {g});
            EXPECT_TRUE(same_special(double(s.sum), double(want))) << where(p, n, what) << ", statistics: sum " << s.sum;
          }
        }
    }
  }
}

TEST(MpiFront, SumsOfInfinitiesNaNAndOverflowAreNumPys) {
  check_special_sums<float>();
  check_special_sums<double>();
}

template <class T, class Op>
void check_windows(values kind, std::int64_t n, T init) {
  const auto whole = rank_test::whole_array<T>(n, kind, 41 + std::uint64_t(n));
  for (std::int64_t w : {std::int64_t(1), std::int64_t(2), std::int64_t(5), std::int64_t(100), n / 3 + 1, n - 1,
                         n, n + 1, std::int64_t(5000)}) {
    if (w < 1) continue;
    std::vector<T> want(std::size_t(std::max<std::int64_t>(0, n - w + 1)));
    mr::cpu::window_reduce(whole.data(), n, w, want.data(), Op{}, init);
    for (const plan& p : rank_test::plans(n, world_size)) {
      const auto mine = shard_of(whole, p);
      const std::int64_t s = p.start(world_rank);
      const std::int64_t count =
          std::max<std::int64_t>(0, std::min<std::int64_t>(std::int64_t(mine.size()), n - w + 1 - s));
      std::vector<T> out(std::size_t(count) + 1, T(77));  // one past: must stay untouched
      const std::int64_t wrote = mr::mpi::window_reduce(MPI_COMM_WORLD, data_or_null(mine), std::int64_t(mine.size()), w,
                                                        count > 0 ? out.data() : nullptr, Op{}, init);
      EXPECT_EQ(wrote, count) << where(p, n, "window_reduce") << ", W = " << w;
      bool same = wrote == count && same_bits(out[std::size_t(count)], T(77));
      for (std::int64_t i = 0; same && i < count; ++i) same = same_bits(out[std::size_t(i)], want[std::size_t(s + i)]);
      EXPECT_TRUE(same) << where(p, n, "window_reduce") << ", W = " << w;
    }
  }
}

TEST(MpiFront, WindowsAreTheOneProcessCall) {
  for (std::int64_t n : {std::int64_t(0), std::int64_t(3), std::int64_t(1000), std::int64_t(12000)}) {
    check_windows<float, mr::sum>(values::sum, n, 0.0f);  // floating-point sums: bitwise too
    check_windows<double, mr::product>(values::product, n, 1.0);
    check_windows<std::int32_t, mr::sum>(values::sum, n, 0);
    check_windows<float, mr::maximum>(values::extreme, n, -std::numeric_limits<float>::infinity());
    check_windows<std::int64_t, mr::minimum>(values::extreme, n, std::numeric_limits<std::int64_t>::max());
    check_windows<std::uint16_t, mr::bit_xor>(values::bits, n, 0);
  }
}

TEST(MpiFront, KnnIsTheOneProcessSearch) {
  for (int bytes : {32, 64}) {
    const std::int64_t queries = 40, trains = 1500;
    std::mt19937_64 rng(rank_test::base_seed() + std::uint64_t(bytes));
    std::vector<std::uint8_t> query(std::size_t(queries * bytes)), train(std::size_t(trains * bytes));
    for (auto& b : query) b = static_cast<std::uint8_t>(rng());
    for (auto& b : train) b = static_cast<std::uint8_t>(rng());
    for (const plan& p : rank_test::plans(trains, world_size)) {
      // Ties across rank boundaries: every rank's first row repeats the previous rank's last row,
      // and query 0 is that row.
      auto whole = train;
      for (int r = 1; r < world_size; ++r) {
        const std::int64_t s = p.start(r);
        if (s > 0 && s < trains)
          std::memcpy(&whole[std::size_t(s * bytes)], &whole[std::size_t((s - 1) * bytes)], std::size_t(bytes));
        if (r == world_size - 1 && s > 0 && s < trains)
          std::memcpy(query.data(), &whole[std::size_t(s * bytes)], std::size_t(bytes));
      }
      const std::int64_t s = p.start(world_rank), rows = p.lengths[std::size_t(world_rank)];
      std::vector<std::uint8_t> mine(whole.begin() + s * bytes, whole.begin() + (s + rows) * bytes);
      for (int k = 1; k <= 3; ++k) {
        std::vector<std::int32_t> idx(std::size_t(queries * k), -7), dist(idx.size(), -7), want_idx(idx.size()),
            want_dist(idx.size());
        mr::cpu::knn_hamming(query.data(), queries, whole.data(), trains, bytes, k, want_idx.data(), want_dist.data());
        mr::mpi::knn_hamming(MPI_COMM_WORLD, query.data(), queries, data_or_null(mine), rows, bytes, k, idx.data(),
                             dist.data());
        EXPECT_EQ(idx, want_idx) << where(p, trains, "knn_hamming") << ", " << bytes * 8 << " bits, k = " << k;
        EXPECT_EQ(dist, want_dist) << where(p, trains, "knn_hamming") << ", " << bytes * 8 << " bits, k = " << k;
      }
    }
  }
}

// ---- bad input: every rank gets the same error, and the next call works ---------------------------

/// Runs `call`, expects std::invalid_argument whose message contains `message`, then a good reduce.
template <class Call>
void expect_error_everywhere(Call call, const std::string& message) {
  std::string what;
  try {
    call();
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_NE(what.find(message), std::string::npos) << "rank " << world_rank << " got \"" << what << "\", expected \""
                                                   << message << "\"";
  // Every rank got the same message: compare its length and bytes with rank 0's.
  std::vector<char> mine(256, 0), first(256, 0);
  std::memcpy(mine.data(), what.data(), std::min<std::size_t>(255, what.size()));
  std::memcpy(first.data(), mine.data(), mine.size());
  MPI_Bcast(first.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(std::string(mine.data()), std::string(first.data())) << "rank " << world_rank << " vs rank 0";
  std::vector<float> x(100, 1.0f);
  EXPECT_EQ(mr::mpi::reduce(MPI_COMM_WORLD, x.data(), 100, mr::sum{}, 0.0f), 100.0f * float(world_size));
}

const int odd_rank = 1;  // the rank that calls differently (world_size > 1)

TEST(MpiFrontErrors, MismatchedElementTypeOnOneRank) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> f(10, 1.0f);
  std::vector<std::int32_t> i(10, 1);
  expect_error_everywhere(
      [&] {
        if (world_rank == odd_rank) mr::mpi::reduce(MPI_COMM_WORLD, i.data(), 10, mr::sum{}, 0.0f);
        else mr::mpi::reduce(MPI_COMM_WORLD, f.data(), 10, mr::sum{}, 0.0f);
      },
      "multireduce::mpi::reduce: rank 1 passed int32 shards, rank 0 float32");
}

TEST(MpiFrontErrors, DifferentOperatorOnOneRank) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> f(10, 1.0f);
  expect_error_everywhere(
      [&] {
        if (world_rank == odd_rank) mr::mpi::reduce(MPI_COMM_WORLD, f.data(), 10, mr::maximum{}, 0.0f);
        else mr::mpi::reduce(MPI_COMM_WORLD, f.data(), 10, mr::sum{}, 0.0f);
      },
      "ranks disagree on the operator");
}

TEST(MpiFrontErrors, DifferentWindowOnOneRank) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> f(10, 1.0f), out(10);
  expect_error_everywhere(
      [&] {
        mr::mpi::window_reduce(MPI_COMM_WORLD, f.data(), 10, world_rank == odd_rank ? 5 : 7, out.data(), mr::sum{}, 0.0f);
      },
      "ranks disagree on the window: rank 1 passed W = 5, rank 0 W = 7");
}

TEST(MpiFrontErrors, DifferentInitOnOneRank) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<double> d(10, 1.0), out(10);
  expect_error_everywhere(
      [&] { mr::mpi::reduce(MPI_COMM_WORLD, d.data(), 10, mr::sum{}, world_rank == odd_rank ? 1000.0 : 0.0); },
      "multireduce::mpi::reduce: ranks disagree on the init: rank 1 passed 1000, rank 0 0");
  expect_error_everywhere(
      [&] { mr::mpi::reduce(MPI_COMM_WORLD, d.data(), 10, mr::sum{}, world_rank == odd_rank ? -0.0 : 0.0); },
      "multireduce::mpi::reduce: ranks disagree on the init: rank 1 passed -0, rank 0 0");
  std::vector<std::int32_t> i(10, 1);
  expect_error_everywhere(
      [&] { mr::mpi::reduce(MPI_COMM_WORLD, i.data(), 10, mr::sum{}, std::int64_t(world_rank == odd_rank ? -5 : 0)); },
      "multireduce::mpi::reduce: ranks disagree on the init: rank 1 passed -5, rank 0 0");
  expect_error_everywhere(
      [&] {
        mr::mpi::window_reduce(MPI_COMM_WORLD, d.data(), 10, 3, out.data(), mr::sum{}, world_rank == odd_rank ? 1000.0 : 0.0);
      },
      "multireduce::mpi::window_reduce: ranks disagree on the init: rank 1 passed 1000, rank 0 0");
  // The same init everywhere (not the identity) is no error.
  EXPECT_EQ(mr::mpi::reduce(MPI_COMM_WORLD, d.data(), 10, mr::sum{}, 1000.0), 1000.0 + 10.0 * world_size);
}

TEST(MpiFrontErrors, DifferentCallOnOneRank) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> f(10, 1.0f);
  expect_error_everywhere(
      [&] {
        if (world_rank == odd_rank) mr::mpi::statistics(MPI_COMM_WORLD, f.data(), 10);
        else mr::mpi::reduce(MPI_COMM_WORLD, f.data(), 10, mr::sum{}, 0.0f);
      },
      "multireduce::mpi: ranks disagree on the call: rank 1 called statistics, rank 0 reduce");
}

TEST(MpiFrontErrors, NegativeLengthOnOneRank) {
  const int bad = world_size - 1;
  std::vector<double> d(10, 1.0);
  expect_error_everywhere(
      [&] { mr::mpi::statistics(MPI_COMM_WORLD, d.data(), world_rank == bad ? -3 : 10); },
      "multireduce::mpi::statistics: rank " + std::to_string(bad) + " passed a shard length of -3 (must be >= 0)");
}

TEST(MpiFrontErrors, BadWindowAndGranuleEverywhere) {
  std::vector<double> d(10, 1.0), out(10);
  expect_error_everywhere([&] { mr::mpi::window_reduce(MPI_COMM_WORLD, d.data(), 10, 0, out.data(), mr::sum{}, 0.0); },
                          "rank 0 passed window 0 (must be >= 1)");
  expect_error_everywhere([&] { mr::mpi::reduce(MPI_COMM_WORLD, d.data(), 10, mr::sum{}, 0.0, {1000}); },
                          "rank 0 passed granule 1000");
}

TEST(MpiFrontErrors, MismatchedQueriesInKnn) {
  if (world_size < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<std::uint8_t> q(32 * 4, 1), t(32 * 4, 2);
  std::vector<std::int32_t> idx(8), dist(8);
  expect_error_everywhere(
      [&] {
        mr::mpi::knn_hamming(MPI_COMM_WORLD, q.data(), world_rank == odd_rank ? 3 : 4, t.data(), 4, 32, 2, idx.data(),
                             dist.data());
      },
      "ranks disagree on the queries (replicated on every rank): rank 1 passed 3, rank 0 4");
}

TEST(MpiFrontErrors, MpiErrorsBecomeRuntimeErrors) {
  // With MPI_ERRORS_RETURN (where MPI reports a null communicator's error), an MPI failure is a
  // std::runtime_error with MPI's error string. Every rank does the same, so nobody waits.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  std::vector<float> f(10, 1.0f);
  std::string what;
  try {
    mr::mpi::reduce(MPI_COMM_NULL, f.data(), 10, mr::sum{}, 0.0f);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("multireduce::mpi::reduce: MPI_Comm_rank failed: "), std::string::npos) << what;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

/// Prints only failures, prefixed with the rank (ranks other than 0).
class failure_printer : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", world_rank, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  ::testing::InitGoogleTest(&argc, argv);
  if (world_rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failure_printer);
  } else {
    std::printf("multireduce::mpi tests: %d ranks, seed %llu (MULTIREDUCE_TEST_SEED)\n", world_size,
                static_cast<unsigned long long>(rank_test::base_seed()));
  }
  const int failed = RUN_ALL_TESTS();
  int any = failed != 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (world_rank == 0 && any) std::printf("FAILED on at least one rank\n");
  MPI_Finalize();
  return any;
}
