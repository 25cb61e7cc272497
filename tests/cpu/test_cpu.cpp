// The CPU backend (multireduce/cpu.hpp) against naive sequential loops written here: left folds,
// two-pass statistics in long double, exact integer arithmetic. Every random input comes from a
// seed derived from MULTIREDUCE_TEST_SEED (tests/common/test_values.hpp), printed on failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <multireduce/cpu.hpp>

#include "../common/special_values.hpp"
#include "../common/test_values.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using namespace multireduce;
using mr_test::mat2;
using mr_test::mat2_product;
using kv_f = key_value<float, std::int64_t>;

constexpr std::int64_t chunk = cpu::chunk_elements;
constexpr std::int64_t big = (std::int64_t{1} << 20) + 7;

/// Sizes every reduction runs on: tiny, around the warp sizes, around the chunk size (65537 is
/// prime), several chunks, and 2^20 + 7.
const std::vector<std::int64_t> sizes = {0, 1, 2, 7, 31, 32, 33, 1000, chunk - 1, chunk, chunk + 1, 3 * chunk + 5, big};

// ---- seeds and threads ----------------------------------------------------------------------------

std::uint64_t seed_for(std::uint64_t salt) {
  std::uint64_t h = mr_test::base_seed() ^ (salt * 0x9E3779B97F4A7C15ull);
  h ^= h >> 31;
  return h * 0xBF58476D1CE4E5B9ull;
}

::testing::Message seed_message(std::uint64_t seed) {
  return ::testing::Message() << "seed " << seed << " (MULTIREDUCE_TEST_SEED=" << mr_test::base_seed() << ")";
}

/// 1 thread, then more threads than this machine has cores, and an odd count.
std::vector<int> thread_counts() {
#if defined(_OPENMP)
  return {1, 3, std::max(4, omp_get_num_procs())};
#else
  return {1};
#endif
}

struct thread_scope {
  explicit thread_scope(int threads) {
#if defined(_OPENMP)
    saved = omp_get_max_threads();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
  }
  ~thread_scope() {
#if defined(_OPENMP)
    omp_set_num_threads(saved);
#endif
  }
  thread_scope(const thread_scope&) = delete;
  thread_scope& operator=(const thread_scope&) = delete;
  int saved = 1;
};

// ---- inputs ---------------------------------------------------------------------------------------

template <class T>
std::vector<T> uniform_ints(std::int64_t n, std::uint64_t seed, long long lo, long long hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<long long> d(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <class T>
std::vector<T> random_bits(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(rng());
  return v;
}

template <class T>
std::vector<T> uniform_reals(std::int64_t n, std::uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

/// Replaces about one element in `every` by a NaN.
template <class T>
void sprinkle_nans(std::vector<T>& v, std::uint64_t seed, int every) {
  std::mt19937_64 rng(seed ^ 0x5eedull);
  for (auto& x : v)
    if (std::uniform_int_distribution<int>(0, every - 1)(rng) == 0) x = std::numeric_limits<T>::quiet_NaN();
}

std::vector<mat2> random_matrices(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> d(0, mat2_product::prime - 1);
  std::vector<mat2> v(static_cast<std::size_t>(n));
  for (auto& m : v) m = mat2{d(rng), d(rng), d(rng), d(rng)};
  return v;
}

// ---- the references: one sequential step per operator, written out independently ------------------

template <class T>
bool is_nan_value(const T& x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  else return false;
}

template <class T> T step(sum, T a, T b) { return static_cast<T>(a + b); }
template <class T> T step(product, T a, T b) { return static_cast<T>(a * b); }
template <class T> T step(bit_and, T a, T b) { return static_cast<T>(a & b); }
template <class T> T step(bit_or, T a, T b) { return static_cast<T>(a | b); }
template <class T> T step(bit_xor, T a, T b) { return static_cast<T>(a ^ b); }
template <class T>
T step(minimum, T a, T b) {  // NumPy: a NaN sticks, the first one
  if (is_nan_value(a)) return a;
  if (is_nan_value(b)) return b;
  return b < a ? b : a;
}
template <class T>
T step(maximum, T a, T b) {
  if (is_nan_value(a)) return a;
  if (is_nan_value(b)) return b;
  return a < b ? b : a;
}
template <bool Smallest, class V>
key_value<V, std::int64_t> arg_step(key_value<V, std::int64_t> a, key_value<V, std::int64_t> b) {
  const bool lower_index = b.index < a.index;
  if (is_nan_value(a.value) || is_nan_value(b.value)) return is_nan_value(b.value) && (!is_nan_value(a.value) || lower_index) ? b : a;
  if (Smallest ? b.value < a.value : a.value < b.value) return b;
  if (Smallest ? a.value < b.value : b.value < a.value) return a;
  return lower_index ? b : a;
}
template <class V> key_value<V, std::int64_t> step(argmin, key_value<V, std::int64_t> a, key_value<V, std::int64_t> b) { return arg_step<true>(a, b); }
template <class V> key_value<V, std::int64_t> step(argmax, key_value<V, std::int64_t> a, key_value<V, std::int64_t> b) { return arg_step<false>(a, b); }
inline mat2 step(mat2_product, mat2 a, mat2 b) { return mat2_product{}(a, b); }

/// A user operator that declares itself commutative (so it takes the interleaved-lanes path):
/// the larger absolute value, ties to the larger value.
struct max_abs {
  static constexpr bool commutative = true;
  int operator()(int a, int b) const {
    const int ua = a < 0 ? -a : a, ub = b < 0 ? -b : b;
    return ua != ub ? (ua > ub ? a : b) : std::max(a, b);
  }
};
inline int step(max_abs, int a, int b) { return max_abs{}(a, b); }

/// init (+) xs[first] (+) ... (+) xs[last - 1], strictly left to right, elements cast to Acc.
template <class Op, class It, class Acc>
Acc fold_left(Op op, It xs, std::int64_t first, std::int64_t last, Acc init) {
  Acc acc = init;
  for (std::int64_t i = first; i < last; ++i) acc = step(op, acc, static_cast<Acc>(xs[i]));
  return acc;
}

using mr_test::same;
using mr_test::show;

// ---- reduce ---------------------------------------------------------------------------------------

/// cpu::reduce of gen(n, seed) for every size and thread count against fold_left, compared exactly.
template <class Op, class Acc, class Gen>
void check_reduce(Op op, Acc init, Gen gen, std::uint64_t salt) {
  for (const std::int64_t n : sizes) {
    const std::uint64_t seed = seed_for(salt * 1000003 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto xs = gen(n, seed);
    const Acc want = fold_left(op, xs.data(), 0, n, init);
    for (const int threads : thread_counts()) {
      thread_scope scope(threads);
      const Acc got = cpu::reduce(xs.data(), n, op, init);
      EXPECT_TRUE(same(got, want)) << "threads " << threads << ": got " << show(got) << ", want " << show(want);
    }
  }
}

TEST(CpuReduce, Int8) {
  auto full = [](std::int64_t n, std::uint64_t s) { return random_bits<std::int8_t>(n, s); };
  check_reduce(sum{}, std::int8_t{3}, full, 1);               // wraps modulo 256, any order
  check_reduce(sum{}, std::int64_t{-7}, full, 2);             // accumulator wider than the input
  check_reduce(product{}, std::int8_t{1}, full, 3);
  check_reduce(minimum{}, minimum::identity<std::int8_t>(), full, 4);
  check_reduce(maximum{}, std::int8_t{-100}, full, 5);        // init that is not the identity
  check_reduce(bit_xor{}, std::int8_t{0x5a}, full, 6);
}

TEST(CpuReduce, Int32) {
  auto small = [](std::int64_t n, std::uint64_t s) { return uniform_ints<std::int32_t>(n, s, -1000, 1000); };
  auto full = [](std::int64_t n, std::uint64_t s) { return random_bits<std::int32_t>(n, s); };
  auto signs = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_ints<std::int32_t>(n, s, 0, 1);
    for (auto& x : v) x = x ? 1 : -1;
    return v;
  };
  // Mostly-ones words for AND, mostly-zero words for OR: the results are not all 0 / all 1.
  auto mostly_ones = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_ints<std::int32_t>(n, s, 0, 1 << 20);
    for (auto& x : v) x = x < 32 ? static_cast<std::int32_t>(~(1u << x)) : -1;
    return v;
  };
  auto mostly_zeros = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_ints<std::int32_t>(n, s, 0, 1 << 20);
    for (auto& x : v) x = x < 31 ? (1 << x) : 0;
    return v;
  };
  check_reduce(sum{}, std::int32_t{0}, small, 11);
  check_reduce(product{}, std::int32_t{-1}, signs, 12);
  check_reduce(minimum{}, minimum::identity<std::int32_t>(), full, 13);
  check_reduce(maximum{}, maximum::identity<std::int32_t>(), full, 14);
  check_reduce(bit_and{}, bit_and::identity<std::int32_t>(), mostly_ones, 15);
  check_reduce(bit_or{}, std::int32_t{0}, mostly_zeros, 16);
  check_reduce(bit_xor{}, std::int32_t{0}, full, 17);
  check_reduce(max_abs{}, 0, small, 18);
}

TEST(CpuReduce, Int64AndUint32) {
  auto wide = [](std::int64_t n, std::uint64_t s) {
    return uniform_ints<std::int64_t>(n, s, -(1ll << 40), 1ll << 40);
  };
  auto full64 = [](std::int64_t n, std::uint64_t s) { return random_bits<std::int64_t>(n, s); };
  auto full32 = [](std::int64_t n, std::uint64_t s) { return random_bits<std::uint32_t>(n, s); };
  auto odd32 = [](std::int64_t n, std::uint64_t s) {
    auto v = random_bits<std::uint32_t>(n, s);
    for (auto& x : v) x |= 1u;  // odd: the product never collapses to 0
    return v;
  };
  check_reduce(sum{}, std::int64_t{0}, wide, 21);
  check_reduce(minimum{}, minimum::identity<std::int64_t>(), full64, 22);
  check_reduce(maximum{}, maximum::identity<std::int64_t>(), full64, 23);
  check_reduce(bit_xor{}, std::int64_t{0}, full64, 24);
  check_reduce(sum{}, std::uint32_t{0}, full32, 25);  // wraps modulo 2^32
  check_reduce(product{}, std::uint32_t{1}, odd32, 26);
  check_reduce(minimum{}, minimum::identity<std::uint32_t>(), full32, 27);
  check_reduce(maximum{}, maximum::identity<std::uint32_t>(), full32, 28);
  check_reduce(bit_and{}, ~std::uint32_t{0}, full32, 29);
  check_reduce(bit_or{}, std::uint32_t{0}, full32, 30);
}

TEST(CpuReduce, FloatingPointExactCases) {
  // Small integers: every partial sum is exact, so any association gives the sequential result.
  auto small_f = [](std::int64_t n, std::uint64_t s) { return uniform_ints<float>(n, s, -8, 8); };
  auto small_d = [](std::int64_t n, std::uint64_t s) { return uniform_ints<double>(n, s, -8, 8); };
  auto reals_nan = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_reals<float>(n, s, -100, 100);
    sprinkle_nans(v, s, 50000);  // a few NaNs in the large inputs only, most of the time
    return v;
  };
  auto reals_d = [](std::int64_t n, std::uint64_t s) { return uniform_reals<double>(n, s, -1e6, 1e6); };
  // Powers of two near 1: products are exact (the exponent walk stays small).
  auto powers = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_ints<float>(n, s, 0, 999);
    for (auto& x : v) x = x == 0 ? 0.5f : x == 1 ? 2.0f : 1.0f;
    return v;
  };
  check_reduce(sum{}, 0.0f, small_f, 31);
  check_reduce(sum{}, 0.0, small_d, 32);
  check_reduce(sum{}, 0.0, small_f, 33);  // float input, double accumulator
  check_reduce(minimum{}, minimum::identity<float>(), reals_nan, 34);
  check_reduce(maximum{}, maximum::identity<float>(), reals_nan, 35);
  check_reduce(minimum{}, minimum::identity<double>(), reals_d, 36);
  check_reduce(maximum{}, 0.0, reals_d, 37);
  check_reduce(product{}, 1.0f, powers, 38);
}

TEST(CpuReduce, NaNAtEveryPlaceOfAChunk) {
  // The vectorised min/max folds track NaNs per lane: put one at each lane position and the tail.
  for (const std::int64_t pos : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, std::int64_t{63}, std::int64_t{64},
                                 chunk - 1, chunk, 2 * chunk + 70, 3 * chunk + 4}) {
    SCOPED_TRACE(::testing::Message() << "NaN at " << pos);
    std::vector<float> xs(static_cast<std::size_t>(3 * chunk + 5), 1.0f);
    xs[static_cast<std::size_t>(pos)] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(cpu::reduce(xs.data(), static_cast<std::int64_t>(xs.size()), minimum{}, 0.0f)));
    EXPECT_TRUE(std::isnan(cpu::reduce(xs.data(), static_cast<std::int64_t>(xs.size()), maximum{}, 0.0f)));
    const std::vector<double> xd(xs.begin(), xs.end());
    EXPECT_TRUE(std::isnan(cpu::reduce(xd.data(), static_cast<std::int64_t>(xd.size()), maximum{}, 0.0)));
    EXPECT_EQ(cpu::argmax(xs.data(), static_cast<std::int64_t>(xs.size())).index, pos);
    EXPECT_EQ(cpu::argmin(xd.data(), static_cast<std::int64_t>(xd.size())).index, pos);
  }
}

TEST(CpuReduce, RealSumsWithinTheErrorBound) {
  // Any summation order is within (n - 1) eps sum|x| of the exact sum.
  for (const std::int64_t n : sizes) {
    const std::uint64_t seed = seed_for(40 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto xf = uniform_reals<float>(n, seed, -1, 3);
    long double exact = 0, magnitude = 0;
    for (const float x : xf) exact += x, magnitude += std::abs(x);
    const float got = cpu::reduce(xf.data(), n, sum{}, 0.0f);
    EXPECT_LE(std::abs(static_cast<long double>(got) - exact),
              static_cast<long double>(n) * std::numeric_limits<float>::epsilon() * magnitude + 1e-30L);
    // The lane-and-chunk tree is far better than the bound: about sqrt(n) eps.
    if (n > 1000) {
      EXPECT_LE(std::abs(static_cast<long double>(got) - exact), 1e-5L * magnitude);
    }
  }
}

TEST(CpuReduce, NonCommutativeKeepsOrder) {
  mat2 init{7, 11, 13, 17};  // not the identity: it must stay on the left
  check_reduce(mat2_product{}, init, random_matrices, 51);
  // The check can fail: swapping two elements changes the product.
  auto xs = random_matrices(1000, seed_for(52));
  const mat2 want = fold_left(mat2_product{}, xs.data(), 0, 1000, init);
  std::swap(xs[3], xs[700]);
  EXPECT_FALSE(same(cpu::reduce(xs.data(), 1000, mat2_product{}, init), want));
}

TEST(CpuReduce, ArgMinMaxThroughIndexedPairs) {
  auto ties = [](std::int64_t n, std::uint64_t s) {
    auto v = uniform_ints<float>(n, s, -2, 2);
    sprinkle_nans(v, s, 100000);
    return v;
  };
  for (const std::int64_t n : sizes) {
    const std::uint64_t seed = seed_for(60 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto xs = ties(n, seed);
    const auto ix = cpu::indexed(xs.data());
    const kv_f min_id = argmin::identity<kv_f>(), max_id = argmax::identity<kv_f>();
    EXPECT_TRUE(same(cpu::reduce(ix, n, argmin{}, min_id), fold_left(argmin{}, ix, 0, n, min_id)));
    EXPECT_TRUE(same(cpu::reduce(ix, n, argmax{}, max_id), fold_left(argmax{}, ix, 0, n, max_id)));
  }
}

TEST(CpuReduce, IteratorsNotPointers) {
  const auto xs = uniform_ints<std::int32_t>(big, seed_for(70), -5, 5);
  std::int64_t want = 0;
  for (const auto x : xs) want += x;
  EXPECT_EQ(cpu::reduce(xs.begin(), big, sum{}, std::int64_t{0}), want);
  EXPECT_EQ(cpu::reduce(xs.cbegin(), big, maximum{}, -100), *std::max_element(xs.begin(), xs.end()));
}

// ---- argmin / argmax ------------------------------------------------------------------------------

/// NumPy's argmin/argmax: the first NaN if any, else the first extreme.
template <bool Smallest, class T>
std::int64_t numpy_arg(const std::vector<T>& xs) {
  std::int64_t best = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(xs.size()); ++i) {
    const T x = xs[static_cast<std::size_t>(i)], b = xs[static_cast<std::size_t>(best)];
    if (is_nan_value(x)) return i;
    if (Smallest ? x < b : b < x) best = i;
  }
  return best;
}

template <class T, class Gen>
void check_arg(Gen gen, std::uint64_t salt) {
  for (const std::int64_t n : sizes) {
    const std::uint64_t seed = seed_for(salt * 1000003 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto xs = gen(n, seed);
    for (const int threads : thread_counts()) {
      thread_scope scope(threads);
      const auto lo = cpu::argmin(xs.data(), n), hi = cpu::argmax(xs.data(), n);
      if (n == 0) {
        EXPECT_EQ(lo.index, -1);
        EXPECT_EQ(hi.index, -1);
        EXPECT_TRUE(same(lo.value, minimum::identity<T>()));
        EXPECT_TRUE(same(hi.value, maximum::identity<T>()));
        continue;
      }
      const std::int64_t want_lo = numpy_arg<true>(xs), want_hi = numpy_arg<false>(xs);
      EXPECT_EQ(lo.index, want_lo) << "threads " << threads;
      EXPECT_EQ(hi.index, want_hi) << "threads " << threads;
      EXPECT_TRUE(same(lo.value, xs[static_cast<std::size_t>(want_lo)]));
      EXPECT_TRUE(same(hi.value, xs[static_cast<std::size_t>(want_hi)]));
    }
  }
}

TEST(CpuArgMinMax, TiesResolveToTheLowestIndex) {
  // Few distinct values: the extremes repeat in every chunk.
  check_arg<float>([](std::int64_t n, std::uint64_t s) { return uniform_ints<float>(n, s, -3, 3); }, 81);
  check_arg<double>([](std::int64_t n, std::uint64_t s) { return uniform_ints<double>(n, s, -3, 3); }, 82);
  check_arg<std::int8_t>([](std::int64_t n, std::uint64_t s) { return random_bits<std::int8_t>(n, s); }, 83);
  check_arg<std::int32_t>([](std::int64_t n, std::uint64_t s) { return uniform_ints<std::int32_t>(n, s, 0, 9); }, 84);
  check_arg<std::uint32_t>([](std::int64_t n, std::uint64_t s) { return random_bits<std::uint32_t>(n, s); }, 85);
  check_arg<std::int64_t>([](std::int64_t n, std::uint64_t s) { return uniform_ints<std::int64_t>(n, s, -1, 1); }, 86);
}

TEST(CpuArgMinMax, FirstNaNWins) {
  check_arg<float>(
      [](std::int64_t n, std::uint64_t s) {
        auto v = uniform_reals<float>(n, s, -1, 1);
        sprinkle_nans(v, s, 20000);
        return v;
      },
      91);
  check_arg<double>(
      [](std::int64_t n, std::uint64_t s) {
        auto v = uniform_reals<double>(n, s, -1, 1);
        sprinkle_nans(v, s, 7);
        return v;
      },
      92);
  const float nan_f = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs(static_cast<std::size_t>(3 * chunk), 0.0f);
  xs[5] = -inf;
  xs[chunk + 9] = inf;
  xs[2 * chunk + 1] = nan_f;
  xs[2 * chunk + 3] = nan_f;
  EXPECT_EQ(cpu::argmin(xs.data(), 3 * chunk).index, 2 * chunk + 1);
  EXPECT_EQ(cpu::argmax(xs.data(), 3 * chunk).index, 2 * chunk + 1);
  EXPECT_EQ(cpu::argmin(xs.data(), 2 * chunk).index, 5);
  EXPECT_EQ(cpu::argmax(xs.data(), 2 * chunk).index, chunk + 9);
  std::vector<float> zeros = {0.0f, -0.0f, 0.0f, 1.0f};  // -0 == +0: the first one
  EXPECT_EQ(cpu::argmin(zeros.data(), 4).index, 0);
  std::vector<float> all_nan(100, nan_f);
  EXPECT_EQ(cpu::argmax(all_nan.data(), 100).index, 0);
}

// ---- statistics -----------------------------------------------------------------------------------

/// Two-pass reference in long double.
template <class T>
struct reference_stats {
  long double mean = 0, var = 0, l1 = 0, l2 = 0, sum = 0;
  statistics_sum_t<T> exact_sum = 0;
  std::int64_t argmin = -1, argmax = -1;
  bool has_nan = false;
  explicit reference_stats(const std::vector<T>& xs) {
    const std::int64_t n = static_cast<std::int64_t>(xs.size());
    std::uint64_t wrapped = 0;
    for (const T x : xs) {
      sum += static_cast<long double>(x);
      l1 += std::abs(static_cast<long double>(x));
      l2 += static_cast<long double>(x) * static_cast<long double>(x);
      if constexpr (std::is_integral_v<T>) wrapped += static_cast<std::uint64_t>(x);
      has_nan = has_nan || is_nan_value(x);
    }
    if constexpr (std::is_integral_v<T>) exact_sum = static_cast<statistics_sum_t<T>>(wrapped);
    l2 = std::sqrt(l2);
    mean = sum / static_cast<long double>(n);
    for (const T x : xs) var += (static_cast<long double>(x) - mean) * (static_cast<long double>(x) - mean);
    var /= static_cast<long double>(n);
    argmin = numpy_arg<true>(xs);
    argmax = numpy_arg<false>(xs);
  }
};

bool near_enough(long double got, long double want, long double rel, long double abs = 0) {
  return std::abs(got - want) <= rel * std::abs(want) + abs;
}

template <class T>
void check_stats(const std::vector<T>& xs, long double var_rel) {
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  const reference_stats<T> want(xs);
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    SCOPED_TRACE(::testing::Message() << "threads " << threads);
    const statistics<T> got = cpu::statistics(xs.data(), n);
    EXPECT_EQ(got.count, n);
    if constexpr (std::is_integral_v<T>) EXPECT_EQ(got.sum, want.exact_sum);
    else EXPECT_TRUE(near_enough(got.sum, want.sum, 1e-12L, 1e-12L * (want.l1 + n * std::abs(static_cast<long double>(xs[0])))))
        << got.sum << " vs " << static_cast<double>(want.sum);
    const long double spread = std::sqrt(want.var);
    EXPECT_TRUE(near_enough(got.mean, want.mean, 1e-14L, 1e-12L * spread)) << got.mean << " vs " << static_cast<double>(want.mean);
    EXPECT_TRUE(near_enough(got.var, want.var, var_rel)) << got.var << " vs " << static_cast<double>(want.var);
    EXPECT_TRUE(near_enough(got.std, std::sqrt(want.var), var_rel));
    EXPECT_TRUE(near_enough(got.l1, want.l1, 1e-12L));
    EXPECT_TRUE(near_enough(got.l2, want.l2, 1e-12L));
    EXPECT_EQ(got.argmin, want.argmin);
    EXPECT_EQ(got.argmax, want.argmax);
    EXPECT_TRUE(same(got.min, xs[static_cast<std::size_t>(want.argmin)]));
    EXPECT_TRUE(same(got.max, xs[static_cast<std::size_t>(want.argmax)]));
  }
}

TEST(CpuStats, AgainstTwoPassReference) {
  for (const std::int64_t n : sizes) {
    if (n == 0) continue;
    const std::uint64_t seed = seed_for(100 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    check_stats(uniform_reals<float>(n, seed, -5, 20), 1e-10L);
    check_stats(uniform_reals<double>(n, seed, -1e3, 1e3), 1e-10L);
    check_stats(random_bits<std::int8_t>(n, seed), 1e-10L);
    check_stats(uniform_ints<std::int32_t>(n, seed, -1000000, 1000000), 1e-10L);
    check_stats(uniform_ints<std::int64_t>(n, seed, -(1ll << 50), 1ll << 50), 1e-9L);
    check_stats(random_bits<std::uint32_t>(n, seed), 1e-10L);
  }
}

TEST(CpuStats, LargeMeanTinyVarianceDoesNotCancel) {
  // mean 1e6, std 1e-3: sum(x^2)/n - mean^2 would lose every digit (1e12 against 1e-6).
  const std::uint64_t seed = seed_for(110);
  SCOPED_TRACE(seed_message(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1e-3);
  std::vector<double> xs(static_cast<std::size_t>(big));
  for (auto& x : xs) x = 1e6 + noise(rng);
  check_stats(xs, 1e-9L);
  // float: 1e6 + multiples of 1/16 (float's spacing there), std about 4.6
  std::vector<float> xf(static_cast<std::size_t>(big));
  for (auto& x : xf) x = 1e6f + static_cast<float>(std::uniform_int_distribution<int>(-128, 128)(rng)) / 16.0f;
  check_stats(xf, 1e-9L);
}

TEST(CpuStats, EmptyNaNAndInfinity) {
  const auto empty = cpu::statistics(static_cast<const float*>(nullptr), 0);
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.sum, 0.0);
  EXPECT_TRUE(std::isnan(empty.mean) && std::isnan(empty.var) && std::isnan(empty.std));
  EXPECT_EQ(empty.argmin, -1);
  EXPECT_EQ(empty.argmax, -1);
  EXPECT_EQ(empty.l1, 0.0);
  EXPECT_EQ(empty.l2, 0.0);

  auto xs = uniform_reals<float>(3 * chunk, seed_for(120), -1, 1);
  xs[chunk + 17] = std::numeric_limits<float>::quiet_NaN();
  xs[2 * chunk] = std::numeric_limits<float>::quiet_NaN();
  const auto s = cpu::statistics(xs.data(), 3 * chunk);
  EXPECT_TRUE(std::isnan(s.mean) && std::isnan(s.var) && std::isnan(s.min) && std::isnan(s.max));
  EXPECT_EQ(s.argmin, chunk + 17);
  EXPECT_EQ(s.argmax, chunk + 17);

  // An infinite first element: the shift falls back to 0 and the mean stays inf (infinities across
  // chunks: InfinitiesNaNAndOverflowAsNumPy).
  std::vector<float> with_inf(1000, 0.5f);
  with_inf[0] = std::numeric_limits<float>::infinity();
  const auto si = cpu::statistics(with_inf.data(), 1000);
  EXPECT_TRUE(std::isinf(si.mean) && si.mean > 0) << si.mean;
  EXPECT_EQ(si.argmax, 0);
}

/// NumPy's statistics of xs, where NumPy's answer is not an accident of its order of additions
/// (the inputs below make sure of that): sums in long double (no overflow there), rounded to double
/// once -- past double's range that is inf with the sum's sign, as NumPy's float64 sum overflows.
/// An infinity in the data gives a sum of its sign, inf and -inf or a NaN give NaN; mean =
/// sum / count where the sum is not finite; var is NaN for data with an inf or a NaN (x - mean is
/// inf - inf or NaN) and inf where the mean is infinite; l1 and l2 from sums of |x| and x^2 in
/// double (each x^2 past double's range is inf, as NumPy's x * x).
template <class T>
struct numpy_rule_stats {
  double sum, mean, var, std, l1, l2;
  std::int64_t argmin, argmax;
  long double sum_ld = 0, mean_ld = 0, var_ld = 0, magnitude = 0;
  explicit numpy_rule_stats(const std::vector<T>& xs) {
    constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const long double n = static_cast<long double>(xs.size());
    bool has_nan = false, pos_inf = false, neg_inf = false;
    long double abs_sum = 0, squares = 0;
    for (const T x : xs) {
      const double v = static_cast<double>(x);
      has_nan = has_nan || std::isnan(v);
      pos_inf = pos_inf || v == inf;
      neg_inf = neg_inf || v == -inf;
      if (std::isfinite(v)) {
        sum_ld += v;
        abs_sum += std::abs(static_cast<long double>(v));
        squares += std::isfinite(v * v) ? static_cast<long double>(v * v) : static_cast<long double>(inf);
      }
    }
    magnitude = abs_sum;
    mean_ld = sum_ld / n;
    for (const T x : xs)
      if (std::isfinite(static_cast<double>(x)))
        var_ld += (static_cast<long double>(x) - mean_ld) * (static_cast<long double>(x) - mean_ld);
    var_ld /= n;
    const bool special = has_nan || pos_inf || neg_inf;
    if (has_nan || (pos_inf && neg_inf)) sum = nan;
    else if (pos_inf) sum = inf;
    else if (neg_inf) sum = -inf;
    else sum = static_cast<double>(sum_ld);
    mean = std::isfinite(sum) ? static_cast<double>(mean_ld) : sum / static_cast<double>(n);
    var = special || std::isnan(mean) ? nan : std::isinf(mean) ? inf : static_cast<double>(var_ld);
    std = std::sqrt(var);
    l1 = has_nan ? nan : pos_inf || neg_inf ? inf : static_cast<double>(abs_sum);
    l2 = has_nan ? nan : pos_inf || neg_inf ? inf : std::sqrt(static_cast<double>(squares));
    argmin = numpy_arg<true>(xs);
    argmax = numpy_arg<false>(xs);
  }
};

/// got equals want where want is not finite (the same infinity, or both NaN), and is near it
/// otherwise.
bool numpy_value(double got, double want, long double rel, long double abs = 0) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::isfinite(got) && near_enough(got, want, rel, abs);
}

template <class T>
void check_numpy_rules(const std::vector<T>& xs, const std::string& what) {
  SCOPED_TRACE(what);
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  const numpy_rule_stats<T> want(xs);
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    SCOPED_TRACE(::testing::Message() << "threads " << threads);
    const statistics<T> got = cpu::statistics(xs.data(), n);
    EXPECT_EQ(got.count, n);
    // The rounding of sums of x - K, K = xs[0] (as check_stats)
    const double k = static_cast<double>(xs[0]);
    const long double spread = std::sqrt(want.var_ld), first = std::isfinite(k) ? std::abs(static_cast<long double>(k)) : 0;
    const long double terms = want.magnitude + static_cast<long double>(n) * first;
    EXPECT_TRUE(numpy_value(got.sum, want.sum, 1e-12L, 1e-12L * terms)) << got.sum << " vs " << want.sum;
    EXPECT_TRUE(numpy_value(got.mean, want.mean, 1e-12L, 1e-12L * (spread + terms / n)))
        << got.mean << " vs " << want.mean;
    EXPECT_TRUE(numpy_value(got.var, want.var, 1e-9L)) << got.var << " vs " << want.var;
    EXPECT_TRUE(numpy_value(got.std, want.std, 1e-9L)) << got.std << " vs " << want.std;
    EXPECT_TRUE(numpy_value(got.l1, want.l1, 1e-12L)) << got.l1 << " vs " << want.l1;
    EXPECT_TRUE(numpy_value(got.l2, want.l2, 1e-12L)) << got.l2 << " vs " << want.l2;
    EXPECT_EQ(got.argmin, want.argmin);
    EXPECT_EQ(got.argmax, want.argmax);
    EXPECT_TRUE(same(got.min, xs[static_cast<std::size_t>(want.argmin)])) << show(got.min);
    EXPECT_TRUE(same(got.max, xs[static_cast<std::size_t>(want.argmax)])) << show(got.max);
  }
}

/// Inputs of n values in [-1, 1] with `specials` at random positions (the first among them now and
/// then: the shift), in several chunks where n allows.
template <class T>
std::vector<T> with_specials(std::int64_t n, std::uint64_t seed, const std::vector<T>& specials) {
  auto xs = uniform_reals<T>(n, seed, -1, 1);
  std::mt19937_64 rng(seed + 1);
  mr_test::place_specials(xs, specials, rng);
  return xs;
}

template <class T>
void check_specials(std::uint64_t salt) {
  constexpr T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  // Finite values whose sum leaves double's range whatever the order (float: far inside double's).
  const T big = std::is_same_v<T, double> ? static_cast<T>(1e308) : std::numeric_limits<T>::max();
  const std::vector<std::pair<std::string, std::vector<T>>> cases = {
      {"+inf", {inf}},
      {"-inf", {-inf}},
      {"+inf twice", {inf, inf}},
      {"+inf and -inf", {inf, -inf}},
      {"NaN", {nan}},
      {"NaN and +inf", {inf, nan}},
      {"+big twice", {big, big}},
      {"-big three times", {-big, -big, -big}},
      {"+big twice and +inf", {big, inf, big}},
      {"+big and -big", {big, -big}},
      {"+big and -big, then +inf", {big, -big, inf}},
  };
  for (const std::int64_t n : {std::int64_t{2}, std::int64_t{3}, std::int64_t{4}, std::int64_t{7}, std::int64_t{1000},
                               3 * chunk + 5}) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if (static_cast<std::int64_t>(cases[c].second.size()) > n) continue;
      const std::uint64_t seed = seed_for(salt + 16 * static_cast<std::uint64_t>(n) + c);
      check_numpy_rules(with_specials<T>(n, seed, cases[c].second),
                        (::testing::Message() << cases[c].first << ", n = " << n << ", " << seed_message(seed)).GetString());
    }
  }
}

TEST(CpuStats, InfinitiesNaNAndOverflowAsNumPy) {
  check_specials<double>(130);
  check_specials<float>(131);
  // The examples by hand: an overflowing sum of finite values, both signs cancelling.
  check_numpy_rules(std::vector<double>{1e308, 1, 2, 1e308}, "1e308, 1, 2, 1e308");
  check_numpy_rules(std::vector<double>{-1e308, 1, 2, -1e308}, "-1e308, 1, 2, -1e308");
  check_numpy_rules(std::vector<double>{1e308, -1e308}, "1e308, -1e308");
  check_numpy_rules(std::vector<double>{-1e308, std::numeric_limits<double>::infinity(), 1}, "-1e308, inf, 1");
  check_numpy_rules(std::vector<double>{1e308, 1e308}, "1e308, 1e308");
  // A chunk of huge values after a chunk of small ones, and the other way round.
  std::vector<double> halves(static_cast<std::size_t>(2 * chunk), 0.25);
  std::fill(halves.begin() + chunk, halves.end(), 1e305);
  check_numpy_rules(halves, "chunk of 0.25, chunk of 1e305");
  std::reverse(halves.begin(), halves.end());
  check_numpy_rules(halves, "chunk of 1e305, chunk of 0.25");
  // Huge values of both signs whose variance leaves double's range but whose sum does not.
  std::vector<double> spread = uniform_reals<double>(3 * chunk + 5, seed_for(132), -1e300, 1e300);
  check_numpy_rules(spread, "uniform in +-1e300");
  // Ordinary data stays as it was: spread of 1e150 (x^2 overflows nowhere).
  check_numpy_rules(uniform_reals<double>(3 * chunk + 5, seed_for(133), -1e150, 1e150), "uniform in +-1e150");
}

// ---- segmented reductions ------------------------------------------------------------------------

struct segments {
  std::vector<std::int64_t> begin, end;
  std::int64_t size() const { return static_cast<std::int64_t>(begin.size()); }
  void add(std::int64_t b, std::int64_t e) {
    begin.push_back(b);
    end.push_back(e);
  }
};

/// Contiguous segments covering [0, n) with power-law lengths (Pareto, alpha 1.1) and empties.
segments power_law_segments(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  segments s;
  std::int64_t at = 0;
  while (at < n) {
    std::int64_t length = 0;
    if (u(rng) > 0.2) length = static_cast<std::int64_t>(std::min(1e12, 1.0 / std::pow(1.0 - u(rng), 1.0 / 1.1)));
    length = std::min(length, n - at);
    s.add(at, at + length);
    at += length;
  }
  return s;
}

/// Hand-made shapes: one huge segment among empties, lengths at the split threshold, gaps,
/// overlaps and unsorted segments.
segments awkward_segments(std::int64_t n, std::uint64_t seed) {
  segments s;
  s.add(0, 0);
  s.add(0, n);  // the whole input
  s.add(n, n);
  for (const std::int64_t length : {chunk - 1, chunk, chunk + 1, 2 * chunk, std::int64_t{1}, std::int64_t{0}, 3 * chunk + 3})
    if (length <= n) s.add(n - length, n);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pos(0, n);
  for (int i = 0; i < 300; ++i) {
    std::int64_t a = pos(rng), b = pos(rng);
    if (i % 3 == 0) b = std::min(n, a + (b % 100));  // many short ones
    s.add(std::min(a, b), std::max(a, b));
  }
  for (int i = 0; i < 1000; ++i) s.add(5, 5);  // a run of empty segments
  return s;
}

template <class OffT, class In, class Op, class Acc>
void check_segmented(const std::vector<In>& xs, const segments& segs, Op op, Acc init) {
  const std::int64_t n = static_cast<std::int64_t>(xs.size()), count = segs.size();
  const std::vector<OffT> b(segs.begin.begin(), segs.begin.end()), e(segs.end.begin(), segs.end.end());
  std::vector<Acc> want(static_cast<std::size_t>(count));
  for (std::int64_t s = 0; s < count; ++s)
    want[static_cast<std::size_t>(s)] = fold_left(op, xs.data(), segs.begin[static_cast<std::size_t>(s)],
                                                  segs.end[static_cast<std::size_t>(s)], init);
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    std::vector<Acc> got(static_cast<std::size_t>(count));
    mr_test::poison(got);
    cpu::segmented_reduce(xs.data(), n, got.data(), count, b.data(), e.data(), op, init);
    int reported = 0;
    for (std::int64_t s = 0; s < count && reported < 5; ++s)
      if (!same(got[static_cast<std::size_t>(s)], want[static_cast<std::size_t>(s)])) {
        ADD_FAILURE() << "threads " << threads << ", segment " << s << " [" << segs.begin[static_cast<std::size_t>(s)]
                      << ", " << segs.end[static_cast<std::size_t>(s)] << "): got " << show(got[static_cast<std::size_t>(s)])
                      << ", want " << show(want[static_cast<std::size_t>(s)]);
        ++reported;
      }
  }
}

TEST(CpuSegmented, PowerLawLengths) {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, chunk + 1, big}) {
    const std::uint64_t seed = seed_for(200 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const segments segs = power_law_segments(n, seed);
    const auto ints = uniform_ints<std::int64_t>(n, seed, -1000, 1000);
    check_segmented<std::int64_t>(ints, segs, sum{}, std::int64_t{5});
    check_segmented<std::int32_t>(ints, segs, maximum{}, maximum::identity<std::int64_t>());
    auto reals = uniform_reals<float>(n, seed, -1, 1);
    sprinkle_nans(reals, seed, 300000);
    check_segmented<std::int32_t>(reals, segs, minimum{}, minimum::identity<float>());
    const auto small = uniform_ints<float>(n, seed, -4, 4);
    check_segmented<std::int64_t>(small, segs, sum{}, 0.0f);
  }
}

TEST(CpuSegmented, HugeEmptyOverlappingAndUnsorted) {
  for (const std::int64_t n : {chunk + 1, 5 * chunk + 3, big}) {
    const std::uint64_t seed = seed_for(210 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const segments segs = awkward_segments(n, seed);
    const auto ints = uniform_ints<std::int32_t>(n, seed, -1000, 1000);
    check_segmented<std::int64_t>(ints, segs, sum{}, std::int64_t{0});
    check_segmented<std::int32_t>(ints, segs, bit_xor{}, 0);
    const auto small = uniform_ints<double>(n, seed, -4, 4);
    check_segmented<std::int32_t>(small, segs, sum{}, 0.0);
  }
}

TEST(CpuSegmented, NonCommutativeAndArgMin) {
  for (const std::int64_t n : {std::int64_t{33}, 3 * chunk + 5}) {
    const std::uint64_t seed = seed_for(220 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto ms = random_matrices(n, seed);
    check_segmented<std::int64_t>(ms, power_law_segments(n, seed), mat2_product{}, mat2{3, 1, 4, 1});
    check_segmented<std::int32_t>(ms, awkward_segments(n, seed), mat2_product{}, mat2{1, 0, 0, 1});
    // argmin per segment: (value, index) pairs in, through cpu::indexed
    auto xs = uniform_ints<float>(n, seed, -2, 2);
    sprinkle_nans(xs, seed, 5000);
    const segments segs = awkward_segments(n, seed);
    std::vector<kv_f> got(static_cast<std::size_t>(segs.size()));
    cpu::segmented_reduce(cpu::indexed(xs.data()), n, got.data(), segs.size(), segs.begin.data(), segs.end.data(),
                          argmin{}, argmin::identity<kv_f>());
    for (std::int64_t s = 0; s < segs.size(); ++s) {
      const auto sb = segs.begin[static_cast<std::size_t>(s)], se = segs.end[static_cast<std::size_t>(s)];
      const kv_f want = fold_left(argmin{}, cpu::indexed(xs.data()), sb, se, argmin::identity<kv_f>());
      ASSERT_TRUE(same(got[static_cast<std::size_t>(s)], want)) << "segment " << s << ": " << show(got[static_cast<std::size_t>(s)])
                                                                << " vs " << show(want);
    }
  }
}

TEST(CpuSegmented, NoSegmentsAndEmptyInput) {
  std::vector<float> out(3, 42.0f);
  const std::int64_t none[1] = {0};
  cpu::segmented_reduce(static_cast<const float*>(nullptr), 0, out.data(), 0, none, none, sum{}, 0.0f);
  EXPECT_EQ(out[0], 42.0f);
  const std::int64_t zeros[3] = {0, 0, 0};
  cpu::segmented_reduce(static_cast<const float*>(nullptr), 0, out.data(), 3, zeros, zeros, sum{}, -1.5f);
  EXPECT_EQ(out, std::vector<float>(3, -1.5f));
}

// ---- fixed-length segments ------------------------------------------------------------------------

template <class In, class Op, class Acc>
void check_fixed(const std::vector<In>& xs, std::int64_t length, Op op, Acc init) {
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  const std::int64_t count = length == 0 ? 17 : n / length;
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    std::vector<Acc> got(static_cast<std::size_t>(count) + 1);
    mr_test::poison(got);
    const Acc sentinel = got.back();
    cpu::fixed_segmented_reduce(xs.data(), got.data(), count, length, op, init);
    for (std::int64_t s = 0; s < count; ++s) {
      const Acc want = fold_left(op, xs.data(), s * length, (s + 1) * length, init);
      if (!same(got[static_cast<std::size_t>(s)], want)) {
        ADD_FAILURE() << "threads " << threads << ", L = " << length << ", segment " << s << ": got "
                      << show(got[static_cast<std::size_t>(s)]) << ", want " << show(want);
        break;
      }
    }
    EXPECT_TRUE(same(got.back(), sentinel)) << "wrote past the last segment";
  }
}

TEST(CpuFixedSegmented, Lengths) {
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{33}, chunk + 1, big}) {
    const std::uint64_t seed = seed_for(300 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto ints = uniform_ints<std::int32_t>(n, seed, -1000, 1000);
    auto reals = uniform_reals<float>(n, seed, -1, 1);
    sprinkle_nans(reals, seed, 100000);
    const auto ms = random_matrices(std::min<std::int64_t>(n, 3 * chunk + 5), seed);
    for (const std::int64_t length : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{32}, chunk - 1,
                                      chunk, chunk + 3, n}) {
      if (length > n) continue;
      SCOPED_TRACE(::testing::Message() << "L = " << length);
      check_fixed(ints, length, sum{}, std::int64_t{-3});
      check_fixed(reals, length, maximum{}, maximum::identity<float>());
      if (length <= static_cast<std::int64_t>(ms.size())) check_fixed(ms, length, mat2_product{}, mat2{2, 0, 1, 5});
    }
  }
}

TEST(CpuFixedSegmented, SameBitsAsSegmentedAndReduce) {
  // One partition of the work for all three: float sums of reals agree bit for bit.
  const std::uint64_t seed = seed_for(310);
  SCOPED_TRACE(seed_message(seed));
  const auto xs = uniform_reals<float>(big, seed, -1, 1);
  for (const std::int64_t length : {std::int64_t{5}, std::int64_t{1000}, chunk + 3, big}) {
    const std::int64_t count = big / length;
    std::vector<float> fixed(static_cast<std::size_t>(count)), general(static_cast<std::size_t>(count));
    std::vector<std::int64_t> b(static_cast<std::size_t>(count)), e(static_cast<std::size_t>(count));
    for (std::int64_t s = 0; s < count; ++s) b[static_cast<std::size_t>(s)] = s * length, e[static_cast<std::size_t>(s)] = (s + 1) * length;
    cpu::fixed_segmented_reduce(xs.data(), fixed.data(), count, length, sum{}, 0.0f);
    cpu::segmented_reduce(xs.data(), big, general.data(), count, b.data(), e.data(), sum{}, 0.0f);
    EXPECT_EQ(std::memcmp(fixed.data(), general.data(), sizeof(float) * fixed.size()), 0) << "L = " << length;
    if (length == big) {
      EXPECT_EQ(fixed[0], cpu::reduce(xs.data(), big, sum{}, 0.0f));
    }
  }
}

// ---- windows --------------------------------------------------------------------------------------

/// Outputs checked against the naive fold: all of them when that is cheap, otherwise the first and
/// last ones, those around block boundaries (multiples of W) and a random sample.
std::vector<std::int64_t> outputs_to_check(std::int64_t outputs, std::int64_t window, std::uint64_t seed) {
  std::vector<std::int64_t> idx;
  if (outputs * window <= 4'000'000) {
    for (std::int64_t i = 0; i < outputs; ++i) idx.push_back(i);
    return idx;
  }
  for (std::int64_t i = 0; i < std::min<std::int64_t>(outputs, 40); ++i) idx.push_back(i), idx.push_back(outputs - 1 - i);
  for (std::int64_t b = window; b < outputs && idx.size() < 400; b += window)
    for (std::int64_t d = -2; d <= 2; ++d)
      if (b + d >= 0 && b + d < outputs) idx.push_back(b + d);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> any(0, outputs - 1);
  while (static_cast<std::int64_t>(idx.size()) * window < 8'000'000 && idx.size() < 5000) idx.push_back(any(rng));
  return idx;
}

template <class In, class Op, class Acc>
void check_window(const std::vector<In>& xs, std::int64_t window, Op op, Acc init) {
  const std::uint64_t seed = seed_for(static_cast<std::uint64_t>(window) * 7919 + xs.size());
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  const std::int64_t outputs = std::max<std::int64_t>(0, n - window + 1);
  const auto check = outputs_to_check(outputs, window, seed);
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    std::vector<Acc> got(static_cast<std::size_t>(outputs) + 1);
    mr_test::poison(got);
    const Acc sentinel = got.back();
    EXPECT_EQ(cpu::window_reduce(xs.data(), n, window, got.data(), op, init), outputs);
    for (const std::int64_t i : check) {
      const Acc want = fold_left(op, xs.data(), i, i + window, init);
      if (!same(got[static_cast<std::size_t>(i)], want)) {
        ADD_FAILURE() << "threads " << threads << ", W = " << window << ", output " << i << ": got "
                      << show(got[static_cast<std::size_t>(i)]) << ", want " << show(want);
        break;
      }
    }
    EXPECT_TRUE(same(got.back(), sentinel)) << "wrote past the last output";
  }
}

std::vector<std::int64_t> windows_for(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> ws = {1, 2, 3, 4, 5, 7, 32, 33, 1000, 4095, 4096, 4097, 10000, 3 * chunk, n - 1, n, n + 1};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 3; ++i) ws.push_back(std::uniform_int_distribution<std::int64_t>(1, std::max<std::int64_t>(1, n))(rng));
  std::vector<std::int64_t> kept;
  for (const std::int64_t w : ws)
    if (w >= 1 && w <= n + 1) kept.push_back(w);
  return kept;
}

TEST(CpuWindow, SumsMaximaAndMinima) {
  for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{33}, std::int64_t{1000}, std::int64_t{50000}, big}) {
    const std::uint64_t seed = seed_for(400 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto ints = uniform_ints<std::int32_t>(n, seed, -1000, 1000);
    auto reals = uniform_reals<float>(n, seed, -1, 1);
    sprinkle_nans(reals, seed, 20000);
    const auto bytes = random_bits<std::int8_t>(n, seed);
    for (const std::int64_t w : windows_for(n, seed)) {
      SCOPED_TRACE(::testing::Message() << "W = " << w);
      check_window(ints, w, sum{}, std::int64_t{7});
      check_window(reals, w, maximum{}, maximum::identity<float>());
      check_window(bytes, w, minimum{}, std::int8_t{100});  // init is not the identity
    }
  }
}

TEST(CpuWindow, NonCommutativeAndArgMax) {
  for (const std::int64_t n : {std::int64_t{33}, std::int64_t{20000}, 3 * chunk + 5}) {
    const std::uint64_t seed = seed_for(410 + static_cast<std::uint64_t>(n));
    SCOPED_TRACE(seed_message(seed) << ", n = " << n);
    const auto ms = random_matrices(n, seed);
    auto xs = uniform_ints<float>(n, seed, -3, 3);
    sprinkle_nans(xs, seed, 3000);
    std::vector<kv_f> pairs(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) pairs[static_cast<std::size_t>(i)] = cpu::indexed(xs.data())[i];
    for (const std::int64_t w : windows_for(n, seed)) {
      SCOPED_TRACE(::testing::Message() << "W = " << w);
      check_window(ms, w, mat2_product{}, mat2{5, 6, 7, 8});
      check_window(pairs, w, argmax{}, argmax::identity<kv_f>());
    }
    // The indexed adapter directly as the window input.
    std::vector<kv_f> got(static_cast<std::size_t>(n));
    const std::int64_t outputs = cpu::window_reduce(cpu::indexed(xs.data()), n, 9, got.data(), argmin{}, argmin::identity<kv_f>());
    for (std::int64_t i = 0; i < outputs; i += 7)
      ASSERT_TRUE(same(got[static_cast<std::size_t>(i)], fold_left(argmin{}, pairs.data(), i, i + 9, argmin::identity<kv_f>())));
  }
}

TEST(CpuWindow, EveryWindowSumOfALongInput) {
  // All outputs, through prefix sums (exact integers), for the long windows too.
  const std::uint64_t seed = seed_for(420);
  SCOPED_TRACE(seed_message(seed));
  const auto xs = uniform_ints<std::int64_t>(big, seed, -1000, 1000);
  std::vector<std::int64_t> prefix(static_cast<std::size_t>(big) + 1, 0);
  for (std::int64_t i = 0; i < big; ++i) prefix[static_cast<std::size_t>(i) + 1] = prefix[static_cast<std::size_t>(i)] + xs[static_cast<std::size_t>(i)];
  for (const std::int64_t w : {std::int64_t{5}, std::int64_t{4096}, std::int64_t{4097}, std::int64_t{100003}, big / 2, big}) {
    std::vector<std::int64_t> got(static_cast<std::size_t>(big - w + 1));
    ASSERT_EQ(cpu::window_reduce(xs.data(), big, w, got.data(), sum{}, std::int64_t{0}), big - w + 1);
    for (std::int64_t i = 0; i + w <= big; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)], prefix[static_cast<std::size_t>(i + w)] - prefix[static_cast<std::size_t>(i)])
          << "W = " << w << ", output " << i;
  }
}

// ---- determinism: the same bits whatever the thread count ---------------------------------------

TEST(CpuDeterminism, FloatResultsDoNotDependOnThreads) {
  const std::uint64_t seed = seed_for(500);
  SCOPED_TRACE(seed_message(seed));
  const auto xs = uniform_reals<float>(big, seed, -1, 1);
  const segments segs = power_law_segments(big, seed);
  auto run_all = [&] {
    std::vector<float> r;
    r.push_back(cpu::reduce(xs.data(), big, sum{}, 0.0f));
    r.push_back(cpu::reduce(xs.data(), big, product{}, 1.0f));
    const auto st = cpu::statistics(xs.data(), big);
    for (const double v : {st.sum, st.mean, st.var, st.l1, st.l2}) r.push_back(static_cast<float>(v)), r.push_back(static_cast<float>(v - static_cast<float>(v)));
    std::vector<float> seg(static_cast<std::size_t>(segs.size()));
    cpu::segmented_reduce(xs.data(), big, seg.data(), segs.size(), segs.begin.data(), segs.end.data(), sum{}, 0.0f);
    r.insert(r.end(), seg.begin(), seg.end());
    std::vector<float> fixed(static_cast<std::size_t>(big / (chunk + 3)));
    cpu::fixed_segmented_reduce(xs.data(), fixed.data(), big / (chunk + 3), chunk + 3, sum{}, 0.0f);
    r.insert(r.end(), fixed.begin(), fixed.end());
    for (const std::int64_t w : {std::int64_t{3}, std::int64_t{1000}, std::int64_t{5000}}) {
      std::vector<float> win(static_cast<std::size_t>(big - w + 1));
      cpu::window_reduce(xs.data(), big, w, win.data(), sum{}, 0.0f);
      r.insert(r.end(), win.begin(), win.end());
    }
    return r;
  };
  std::vector<float> reference;
  {
    thread_scope scope(1);
    reference = run_all();
  }
  for (const int threads : thread_counts()) {
    thread_scope scope(threads);
    const auto r = run_all();
    ASSERT_EQ(r.size(), reference.size());
    EXPECT_EQ(std::memcmp(r.data(), reference.data(), sizeof(float) * r.size()), 0) << "threads " << threads;
  }
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP: only one thread count to compare";
#endif
}

// ---- bad arguments --------------------------------------------------------------------------------

TEST(CpuArguments, Rejected) {
  const std::vector<float> xs(100, 1.0f);
  std::vector<float> out(100);
  const float* x = xs.data();
  EXPECT_THROW(cpu::reduce(x, -1, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::argmin(x, -1), std::invalid_argument);
  EXPECT_THROW(cpu::argmax(x, -5), std::invalid_argument);
  EXPECT_THROW(cpu::statistics(x, -1), std::invalid_argument);
  EXPECT_THROW(cpu::window_reduce(x, 100, 0, out.data(), sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::window_reduce(x, 100, -3, out.data(), sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::window_reduce(x, -1, 3, out.data(), sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::fixed_segmented_reduce(x, out.data(), -1, 3, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::fixed_segmented_reduce(x, out.data(), 3, -1, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::fixed_segmented_reduce(x, out.data(), std::int64_t{1} << 40, std::int64_t{1} << 40, sum{}, 0.0f),
               std::invalid_argument);
  const std::int32_t b[3] = {0, 10, 50}, e_past[3] = {10, 50, 101}, e_before[3] = {10, 5, 60}, b_neg[3] = {-1, 10, 50};
  const std::int32_t e_ok[3] = {10, 50, 100};
  EXPECT_THROW(cpu::segmented_reduce(x, 100, out.data(), 3, b, e_past, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::segmented_reduce(x, 100, out.data(), 3, b, e_before, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::segmented_reduce(x, 100, out.data(), 3, b_neg, e_ok, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::segmented_reduce(x, 100, out.data(), -1, b, e_ok, sum{}, 0.0f), std::invalid_argument);
  EXPECT_THROW(cpu::segmented_reduce(x, -1, out.data(), 3, b, e_ok, sum{}, 0.0f), std::invalid_argument);
  try {
    cpu::segmented_reduce(x, 100, out.data(), 3, b, e_before, sum{}, 0.0f);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("segment 1 is [10, 5)"), std::string::npos) << error.what();
  }
  // Nothing was written by the failed calls, and a window longer than the input writes nothing.
  EXPECT_EQ(out, std::vector<float>(100, 0.0f));
  EXPECT_EQ(cpu::window_reduce(x, 100, 101, out.data(), sum{}, 0.0f), 0);
  EXPECT_EQ(out, std::vector<float>(100, 0.0f));
}

// ---- the (value, index) adapter -------------------------------------------------------------------

static_assert(std::random_access_iterator<cpu::indexed_iterator<const float*>>);
static_assert(std::random_access_iterator<cpu::indexed_iterator<std::vector<int>::const_iterator>>);

TEST(CpuIndexed, PairsAndArithmetic) {
  const std::vector<int> xs = {4, 5, 6, 7};
  auto it = cpu::indexed(xs.begin());
  EXPECT_EQ((*it).value, 4);
  EXPECT_EQ(it[2].value, 6);
  EXPECT_EQ(it[2].index, 2);
  auto third = it + 3;
  EXPECT_EQ(third - it, 3);
  EXPECT_EQ((*third).index, 3);
  EXPECT_EQ(cpu::indexed(xs.data() + 1, 1)[0].index, 1);
  EXPECT_LT(it, third);
}

// ---- transform_reduce: cuda::transform_reduce's contract on the CPU --------------------------------

static_assert(std::random_access_iterator<cpu::transform_iterator<const float*, cpu::with_index>>);

TEST(CpuTransformReduce, SeesEveryElementWithItsPosition) {
  const std::uint64_t seed = mr_test::base_seed() ^ 0x7a11;
  std::mt19937_64 g(seed);
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(1000), 3 * cpu::chunk_elements + 17}) {
    std::vector<int> xs(static_cast<std::size_t>(n));
    for (auto& x : xs) x = static_cast<int>(g() % 2001) - 1000;
    // sum of x * (i % 7): position-dependent, exact in int64.
    auto weigh = [](int x, std::int64_t i) { return std::int64_t(x) * (i % 7); };
    std::int64_t want = 5;
    for (std::int64_t i = 0; i < n; ++i) want += weigh(xs[std::size_t(i)], i);
    EXPECT_EQ(cpu::transform_reduce(xs.data(), n, sum{}, std::int64_t(5), weigh), want) << "n=" << n;
    // The transform iterator in the other algorithms: windows of x * position.
    if (n >= 3) {
      std::vector<std::int64_t> out(static_cast<std::size_t>(n - 2));
      cpu::window_reduce(cpu::transformed(xs.data(), weigh), n, 3, out.data(), sum{}, std::int64_t(0));
      for (std::int64_t i = 0; i + 2 < n; ++i)
        ASSERT_EQ(out[std::size_t(i)], weigh(xs[std::size_t(i)], i) + weigh(xs[std::size_t(i + 1)], i + 1) +
                                           weigh(xs[std::size_t(i + 2)], i + 2));
    }
  }
}

TEST(CpuStatistics, OneNameOnBothBackends) {
  // cpu::statistics is cuda::statistics's name.
  const std::vector<double> xs{3, 1, 2};
  const auto s = cpu::statistics(xs.data(), 3);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.argmin, 1);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_EQ(s.argmax, 0);
}

TEST(CpuStatistics, TheMeanOfIntegersIsTheirSumOverTheCount) {
  // Large values of both signs: the running mean cancels to 0, NumPy's mean is sum / count.
  const std::vector<std::int64_t> xs{std::numeric_limits<std::int64_t>::max(), 1, std::numeric_limits<std::int64_t>::min(), -1};
  const auto s = cpu::statistics(xs.data(), 4);
  EXPECT_EQ(s.sum, -1);
  EXPECT_EQ(s.mean, -0.25);
  // A sum that wraps (NumPy's int64 sum wraps too): the running mean, not the wrapped sum's.
  const std::vector<std::int64_t> big{std::int64_t(1) << 62, std::int64_t(1) << 62, std::int64_t(1) << 62, (std::int64_t(1) << 62) + 5};
  const auto w = cpu::statistics(big.data(), 4);
  EXPECT_EQ(w.sum, 5);
  EXPECT_DOUBLE_EQ(w.mean, 4611686018427387904.0);
  const std::vector<std::uint64_t> u{~std::uint64_t(0), 1, 2};  // the uint64 sum wraps to 2
  EXPECT_DOUBLE_EQ(cpu::statistics(u.data(), 3).mean, (18446744073709551615.0 + 3) / 3);
}

}  // namespace
