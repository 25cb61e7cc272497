// multireduce/cpu/detail/fold.hpp -- folds of a chunk of an array: interleaved accumulators for
// commutative operators (vectorised by the compiler), GCC vector extensions for min/max, the
// chunked fold of a whole array, and argmin/argmax's first positions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "../../operators.hpp"
#include "parallel.hpp"

// GCC's vector extensions for the min/max folds, which GCC 12 does not vectorise by itself (the
// NaN-aware select defeats its SLP vectoriser): 4x faster for float. Other compilers, and nvcc's
// host pass, use the portable fold.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__NVCOMPILER) && \
    !defined(__INTEL_LLVM_COMPILER)
#define MULTIREDUCE_CPU_VECTOR_EXTENSIONS 1
#else
#define MULTIREDUCE_CPU_VECTOR_EXTENSIONS 0
#endif

namespace multireduce::cpu::detail {

using multireduce::detail::is_nan;

/// Independent accumulators in a commutative chunk fold: enough to hide the latency of a floating
/// add and to fill two SSE / one AVX register of floats, so the compiler vectorises the loop.
inline constexpr int fold_lanes = 8;
#if MULTIREDUCE_CPU_VECTOR_EXTENSIONS
template <class T>
struct simd16 {
  typedef T type __attribute__((vector_size(16)));
};
template <class T>
using mask_lane = std::conditional_t<sizeof(T) == 1, std::int8_t,
                  std::conditional_t<sizeof(T) == 2, std::int16_t,
                  std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>>>;

/// The smallest (Max = false) or largest element of x[first, last), with minimum's/maximum's NaN
/// rule: a NaN wins (the first one). Needs last - first >= 4 * 16 / sizeof(T).
template <bool Max, class T>
T simd_extreme(const T* x, std::int64_t first, std::int64_t last) {
  using V = typename simd16<T>::type;
  using M = typename simd16<mask_lane<T>>::type;
  constexpr int width = 16 / sizeof(T), k = 4;
  V a[k];
  M nan_seen[k] = {};
  const std::int64_t steps = (last - first) / (k * width);
  for (int j = 0; j < k; ++j) {
    std::memcpy(&a[j], x + first + j * width, 16);
    if constexpr (!std::is_integral_v<T>) nan_seen[j] = (M)(a[j] != a[j]);
  }
  for (std::int64_t step = 1; step < steps; ++step)
    for (int j = 0; j < k; ++j) {
      V v;
      std::memcpy(&v, x + first + step * (k * width) + j * width, 16);
      if constexpr (Max) a[j] = a[j] < v ? v : a[j];
      else a[j] = v < a[j] ? v : a[j];
      if constexpr (!std::is_integral_v<T>) nan_seen[j] |= (M)(v != v);
    }
  T r = a[0][0];
  bool any_nan = false;
  auto take = [&](T y) {
    if (Max ? r < y : y < r) r = y;
  };
  for (int j = 0; j < k; ++j)
    for (int l = 0; l < width; ++l) {
      take(a[j][l]);
      any_nan |= nan_seen[j][l] != 0;
    }
  for (std::int64_t i = first + steps * (k * width); i < last; ++i) {
    take(x[i]);
    any_nan |= is_nan(x[i]);
  }
  if (any_nan)
    for (std::int64_t q = first; q < last; ++q)
      if (is_nan(x[q])) return x[q];
  return r;
}
#endif

/// Whether fold_nonempty<Acc>(It, ..., Op) can take simd_extreme.
template <class Acc, class It, class Op>
inline constexpr bool simd_extreme_applies =
    MULTIREDUCE_CPU_VECTOR_EXTENSIONS && (std::is_same_v<Op, minimum> || std::is_same_v<Op, maximum>) &&
    std::contiguous_iterator<It> && std::is_same_v<std::remove_cv_t<std::iter_value_t<It>>, Acc> &&
    std::is_arithmetic_v<Acc> && !std::is_same_v<Acc, bool> && (16 % sizeof(Acc) == 0);

/// Fold of in[first, last) (non-empty), no initial value. Commutative operators use fold_lanes
/// interleaved accumulators (element i goes to lane i % fold_lanes) and a fixed tree at the end;
/// others fold strictly left to right. Short ranges fold left to right either way.
template <class Acc, class It, class Op>
Acc fold_nonempty(It in, std::int64_t first, std::int64_t last, const Op& op) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
#if MULTIREDUCE_CPU_VECTOR_EXTENSIONS
  if constexpr (simd_extreme_applies<Acc, It, Op>) {
    if (last - first >= 8 * 16 / static_cast<std::int64_t>(sizeof(Acc)))
      return simd_extreme<std::is_same_v<Op, maximum>>(std::to_address(in), first, last);
  }
#endif
  if constexpr (is_commutative_v<Op>) {
    if (last - first >= 2 * fold_lanes) {
      static_assert(fold_lanes == 8, "the lane initialisation below lists 8 lanes");
      Acc a[fold_lanes] = {x(first),     x(first + 1), x(first + 2), x(first + 3),
                           x(first + 4), x(first + 5), x(first + 6), x(first + 7)};
      std::int64_t i = first + fold_lanes;
      for (; i + fold_lanes <= last; i += fold_lanes)
        for (int j = 0; j < fold_lanes; ++j) a[j] = op(a[j], x(i + j));
      for (int j = 0; i + j < last; ++j) a[j] = op(a[j], x(i + j));
      for (int width = fold_lanes / 2; width > 0; width /= 2)
        for (int j = 0; j < width; ++j) a[j] = op(a[2 * j], a[2 * j + 1]);
      return a[0];
    }
  }
  Acc acc = x(first);
  for (std::int64_t i = first + 1; i < last; ++i) acc = op(acc, x(i));
  return acc;
}

/// op(init, fold of in[first, last)), or init for an empty range: one segment's result.
template <class Acc, class It, class Op>
Acc fold_segment(It in, std::int64_t first, std::int64_t last, const Op& op, const Acc& init) {
  if (last <= first) return init;
  return op(init, fold_nonempty<Acc>(in, first, last, op));
}

/// Reduction of in[0, n) (n > 0) without initial value: per-chunk folds in parallel, then the
/// chunk results left to right.
template <class Acc, class It, class Op>
Acc fold_chunks(It in, std::int64_t n, const Op& op) {
  const std::int64_t chunks = ceil_div(n, chunk_elements);
  if (chunks == 1) return fold_nonempty<Acc>(in, 0, n, op);
  std::vector<Acc> partial(static_cast<std::size_t>(chunks), static_cast<Acc>(in[0]));
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[static_cast<std::size_t>(c)] =
        fold_nonempty<Acc>(in, c * chunk_elements, std::min(n, (c + 1) * chunk_elements), op);
  Acc acc = partial[0];
  for (std::int64_t c = 1; c < chunks; ++c) acc = op(acc, partial[static_cast<std::size_t>(c)]);
  return acc;
}

// ---- argmin / argmax ---------------------------------------------------------------------------

/// The first position in [first, last) holding a value equal to m (for a NaN m: the first NaN).
template <class V, class It>
std::int64_t find_first(It in, std::int64_t first, std::int64_t last, const V& m) {
  if (is_nan(m)) {
    for (std::int64_t i = first; i < last; ++i)
      if (is_nan(static_cast<V>(in[i]))) return i;
  } else {
    for (std::int64_t i = first; i < last; ++i)
      if (static_cast<V>(in[i]) == m) return i;
  }
  return first;  // not reached: m is one of the values
}

/// argmin (ArgOp = argmin, ValueOp = minimum) or argmax of in[0, n); n == 0 gives
/// {ValueOp's identity, -1}. Per chunk: the extreme value by the vectorised fold, then its first
/// position by a scan of the (cached) chunk; chunk results combine in order, so ties keep the
/// lowest index and the first NaN wins (NumPy). `function` names the caller in errors.
template <class ArgOp, class ValueOp, class It>
key_value<std::iter_value_t<It>, std::int64_t> arg_extreme(It in, std::int64_t n, const char* function) {
  using V = std::iter_value_t<It>;
  using KV = key_value<V, std::int64_t>;
  check_count(n, function, "n");
  if (n == 0) return KV{ValueOp::template identity<V>(), -1};
  auto chunk_result = [&](std::int64_t first, std::int64_t last) {
    if constexpr (std::is_arithmetic_v<V>) {
      const V m = fold_nonempty<V>(in, first, last, ValueOp{});
      const std::int64_t i = find_first(in, first, last, m);
      return KV{static_cast<V>(in[i]), i};
    } else {
      KV acc{static_cast<V>(in[first]), first};
      for (std::int64_t i = first + 1; i < last; ++i) acc = ArgOp{}(acc, KV{static_cast<V>(in[i]), i});
      return acc;
    }
  };
  const std::int64_t chunks = ceil_div(n, chunk_elements);
  std::vector<KV> partial(static_cast<std::size_t>(chunks));
  MULTIREDUCE_OMP(parallel for schedule(static) if (chunks > 1))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[static_cast<std::size_t>(c)] = chunk_result(c * chunk_elements, std::min(n, (c + 1) * chunk_elements));
  KV acc = partial[0];
  for (std::int64_t c = 1; c < chunks; ++c) acc = ArgOp{}(acc, partial[static_cast<std::size_t>(c)]);
  return acc;
}

}  // namespace multireduce::cpu::detail
