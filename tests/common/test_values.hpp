// Test values, independent reference folds and comparisons shared by the host and GPU suites.
// Nothing here uses the library's operators: the references are written out separately.
#pragma once

#include <multireduce/multireduce.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace mr_test {

using multireduce::key_value;

/// 2x2 matrix product modulo a prime: associative, not commutative.
struct mat2 {
  std::uint32_t a, b, c, d;
};
struct mat2_product {
  static constexpr std::uint32_t prime = 65521;
  MULTIREDUCE_HOST_DEVICE mat2 operator()(const mat2& x, const mat2& y) const {
    auto m = [](std::uint32_t p, std::uint32_t q, std::uint32_t r, std::uint32_t s) {
      return static_cast<std::uint32_t>((std::uint64_t{p} * q + std::uint64_t{r} * s) % prime);
    };
    return mat2{m(x.a, y.a, x.b, y.c), m(x.a, y.b, x.b, y.d), m(x.c, y.a, x.d, y.c), m(x.c, y.b, x.d, y.d)};
  }
};

/// The base seed: MULTIREDUCE_TEST_SEED, or a fixed default. Every failure message names it.
inline std::uint64_t base_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("MULTIREDUCE_TEST_SEED");
    return env ? std::strtoull(env, nullptr, 10) : std::uint64_t{20261120};
  }();
  return seed;
}

template <class T>
constexpr bool is_float_like = std::is_floating_point_v<T>
#if MULTIREDUCE_HAS_CUDA_FP16
                               || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>
#endif
    ;

template <class T>
double to_double(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(x);
  else return static_cast<double>(static_cast<float>(x));
}
template <class T>
T from_double(double x) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(x);
  else return T(static_cast<float>(x));
}

template <class T>
bool is_nan(const T& x) {
  if constexpr (is_float_like<T>) return std::isnan(to_double(x));
  else return false;
}

/// Random test value for operator Op: small integers for sums (exact in every type, any order),
/// full-range bits for bitwise ops, reals with a few NaNs for min/max, ties for argmin/argmax.
template <class T, class Op>
T random_value(std::mt19937_64& rng) {
  if constexpr (std::is_same_v<T, mat2>) {
    std::uniform_int_distribution<std::uint32_t> d(0, mat2_product::prime - 1);
    return mat2{d(rng), d(rng), d(rng), d(rng)};
  } else if constexpr (std::is_same_v<Op, multireduce::sum>) {
    std::uniform_int_distribution<int> d(std::is_unsigned_v<T> ? 0 : -2, 2);
    return from_double<T>(d(rng));
  } else if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<std::uint64_t> d;
    return static_cast<T>(d(rng));
  } else {
    if (std::uniform_int_distribution<int>(0, 40)(rng) == 0) return from_double<T>(NAN);
    return from_double<T>(std::uniform_real_distribution<double>(-100.0, 100.0)(rng));
  }
}

/// Sequential left-to-right fold, the reference every result is checked against.
template <class T, class Op>
T reference_fold(const std::vector<T>& xs) {
  T acc = xs.at(0);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const T& x = xs[i];
    if constexpr (std::is_same_v<Op, multireduce::sum>) {
      if constexpr (std::is_integral_v<T>) acc = static_cast<T>(acc + x);  // modular, like the GPU
      else acc = from_double<T>(to_double(acc) + to_double(x));            // exact: small integers
    } else if constexpr (std::is_same_v<Op, multireduce::minimum> || std::is_same_v<Op, multireduce::maximum>) {
      constexpr bool is_min = std::is_same_v<Op, multireduce::minimum>;
      if (is_nan(acc)) continue;
      if (is_nan(x)) { acc = x; continue; }
      if (is_min ? to_double(x) < to_double(acc) : to_double(x) > to_double(acc)) acc = x;
    } else if constexpr (std::is_same_v<Op, multireduce::bit_and>) {
      acc = static_cast<T>(acc & x);
    } else if constexpr (std::is_same_v<Op, multireduce::bit_or>) {
      acc = static_cast<T>(acc | x);
    } else if constexpr (std::is_same_v<Op, multireduce::bit_xor>) {
      acc = static_cast<T>(acc ^ x);
    } else if constexpr (std::is_same_v<Op, multireduce::argmin> || std::is_same_v<Op, multireduce::argmax>) {
      // NumPy: the first NaN, else the first extreme (inputs come in index order here).
      constexpr bool is_min = std::is_same_v<Op, multireduce::argmin>;
      if (is_nan(acc.value)) continue;
      if (is_nan(x.value)) { acc = x; continue; }
      const double a = to_double(acc.value), b = to_double(x.value);
      if (is_min ? b < a : b > a) acc = x;
    } else if constexpr (std::is_same_v<Op, mat2_product>) {
      acc = mat2_product{}(acc, x);
    } else {
      static_assert(sizeof(Op) == 0, "no reference for this operator");
    }
  }
  return acc;
}

template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, mat2>) return a.a == b.a && a.b == b.b && a.c == b.c && a.d == b.d;
  else if constexpr (requires { a.index; }) return same(a.value, b.value) && a.index == b.index;
  else if constexpr (is_float_like<T>) return (is_nan(a) && is_nan(b)) || to_double(a) == to_double(b);
  else return a == b;
}

template <class T>
std::string show(const T& x) {
  if constexpr (std::is_same_v<T, mat2>)
    return "[" + std::to_string(x.a) + " " + std::to_string(x.b) + "; " + std::to_string(x.c) + " " + std::to_string(x.d) + "]";
  else if constexpr (requires { x.index; }) return "(" + show(x.value) + ", " + std::to_string(x.index) + ")";
  else if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<long long>(x));
  else return std::to_string(to_double(x));
}

/// Makes per-lane inputs: element [thread * per_thread + k]. argmin/argmax values get the thread's
/// logical-lane index so that ties resolve to a known lane.
template <class T, class Op>
std::vector<T> random_inputs(std::size_t threads, std::size_t per_thread, int logical_warp, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(threads * per_thread);
  for (std::size_t t = 0; t < threads; ++t)
    for (std::size_t k = 0; k < per_thread; ++k) {
      T& x = v[t * per_thread + k];
      if constexpr (requires { x.index; }) {
        using V = decltype(x.value);
        std::uniform_int_distribution<int> d(-2, 2);  // few distinct values: many ties
        x.value = std::uniform_int_distribution<int>(0, 60)(rng) == 0 ? from_double<V>(NAN) : from_double<V>(d(rng));
        x.index = static_cast<decltype(x.index)>(t % static_cast<std::size_t>(logical_warp));
      } else {
        x = random_value<T, Op>(rng);
      }
    }
  return v;
}

/// Fills with a recognisable garbage byte pattern, so unwritten outputs fail the comparison.
template <class T>
void poison(std::vector<T>& v) {
  std::memset(static_cast<void*>(v.data()), 0xA5, v.size() * sizeof(T));
}

}  // namespace mr_test
