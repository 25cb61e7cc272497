// multireduce/cuda/detail/statistics/kernels.cuh -- count, sum, mean, variance, std, min/argmin,
// max/argmax, l1 and l2 of one array in one pass and one launch.
//
// Each thread keeps shifted sums (shift K = in[0]) over its grid-stride share: S1 = sum(x-K),
// S2 = sum((x-K)^2), sum |x|, sum x^2 in double, and min/max with their first indices (a cheap
// NaN-blind min/max per 16-byte vector; only vectors that may change the extremes take the exact
// path with NumPy's NaN and first-index rules), loading the next vectors while it folds the
// current ones (the fold's double-precision work would otherwise leave memory idle). Threads then
// become statistics_accumulator states (statistics.hpp) merged with Chan's formulas: over the
// block (block_reduce), then over blocks by the last block to finish, in block order. Doubles whose
// shifted sums are not finite (values near double's largest, an inf or a NaN) take a cold second
// pass over the thread's share, scaled (statistics.hpp), so that the sum, mean and variance are
// NumPy's inf or NaN rather than inf - inf.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../../block/block_reduce.hpp"
#include "../../../cuda_lane.cuh"
#include "../../../operators.hpp"
#include "../../../statistics.hpp"
#include "../load.cuh"
#include "../ticket.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

template <class T>
struct stats_thread_state {
  using sum_type = statistics_sum_t<T>;
  double shift;
  std::int64_t count = 0;
  double s1 = 0, s2 = 0, l1 = 0, squares = 0;
  sum_type sum = 0;  // exact for integers; floats derive it from S1
  T min = minimum::identity<T>(), max = maximum::identity<T>();
  std::int64_t argmin = -1, argmax = -1;

  __device__ __forceinline__ void take_extremes(T low, T high, std::int64_t at_low, std::int64_t at_high) {
    // Elements arrive in increasing index order per thread: strict comparisons keep the first.
    using multireduce::detail::is_nan;
    if (argmin < 0 || low < min || (is_nan(low) && !is_nan(min))) min = low, argmin = at_low;
    if (argmax < 0 || max < high || (is_nan(high) && !is_nan(max))) max = high, argmax = at_high;
  }
  __device__ __forceinline__ void add(T x, std::int64_t i) {
    const double v = static_cast<double>(x);
    const double d = v - shift;
    count += 1;
    s1 += d;
    s2 += d * d;
    l1 += fabs(v);
    squares += v * v;
    if constexpr (std::is_integral_v<T>) sum = wrapping_add(sum, static_cast<sum_type>(x));
    take_extremes(x, x, i, i);
  }
  template <int V>
  __device__ __forceinline__ void add_vector(const T (&x)[V], std::int64_t first) {
    // The vector's own sums first (short dependency chains), then one add each.
    double d1 = 0, d2 = 0, a1 = 0, q2 = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const double v = static_cast<double>(x[j]);
      const double d = v - shift;
      d1 += d;
      d2 += d * d;
      a1 += fabs(v);
      q2 += v * v;
      if constexpr (std::is_integral_v<T>) sum = wrapping_add(sum, static_cast<sum_type>(x[j]));
    }
    s1 += d1, s2 += d2, l1 += a1, squares += q2;
    count += V;
    // Extremes: a cheap NaN-blind min/max of the vector; only a vector that may change this
    // thread's extremes (a new low or high, a NaN -- d1 is then NaN -- or the first vector) takes
    // the exact path with NumPy's NaN and first-index rules.
    T low = x[0], high = x[0];
#pragma unroll
    for (int j = 1; j < V; ++j) low = x[j] < low ? x[j] : low, high = high < x[j] ? x[j] : high;
    bool exact = argmin < 0 || low < min || max < high;
    if constexpr (!std::is_integral_v<T>) exact = exact || isnan(d1);
    if (!exact) return;
    using multireduce::detail::is_nan;
    int at_low = 0, at_high = 0;
    low = x[0], high = x[0];
#pragma unroll
    for (int j = 1; j < V; ++j) {
      if (x[j] < low || (is_nan(x[j]) && !is_nan(low))) low = x[j], at_low = j;
      if (high < x[j] || (is_nan(x[j]) && !is_nan(high))) high = x[j], at_high = j;
    }
    take_extremes(low, high, first + at_low, first + at_high);
  }
  __device__ statistics_accumulator<T> state() const {
    sum_type total = sum;
    if constexpr (!std::is_integral_v<T>) total = static_cast<double>(count) * shift + s1;
    return statistics_accumulator<T>::from_shifted_sums(count, shift, s1, s2, total, l1, squares, min, argmin, max,
                                                        argmax);
  }
  /// The cold path of doubles whose shifted sums are not finite (statistics.hpp): this thread's
  /// share again (for_each_strided visits the same elements whatever its InFlight), scaled by
  /// rescale_down; l1, the squares and the extremes from the first pass. Not inlined: inlined, it
  /// cost the hot loop's register allocation about 1% of float64 throughput on an H100.
  template <int BlockThreads, class It>
  __device__ __noinline__ statistics_accumulator<T> rescaled_state(It in, std::int64_t n) const {
    using State = statistics_accumulator<T>;
    const double k = shift * State::rescale_down;
    double t1 = 0, t2 = 0;
    auto add = [&](T x) {
      const double e = static_cast<double>(x) * State::rescale_down - k;
      t1 += e;
      t2 += e * e;
    };
    for_each_strided<BlockThreads, 1>(
        in, n,
        [&](const auto& v, std::int64_t) {
          for (const T x : v) add(x);
        },
        [&](const T& x, std::int64_t) { add(x); });
    return State::from_rescaled_sums(count, shift, t1, t2, l1, squares, min, argmin, max, argmax);
  }
};

struct merge_statistics {
  template <class T>
  __device__ statistics_accumulator<T> operator()(const statistics_accumulator<T>& a,
                                                  const statistics_accumulator<T>& b) const {
    return statistics_accumulator<T>::merge(a, b);
  }
};

template <int BlockThreads, class It>
__global__ void __launch_bounds__(BlockThreads, statistics_tuning::blocks_per_sm)
    statistics_kernel(It in, std::int64_t n,
                      statistics<std::remove_cv_t<std::remove_reference_t<decltype(*in)>>>* out,
                      statistics_accumulator<std::remove_cv_t<std::remove_reference_t<decltype(*in)>>>* partials,
                      unsigned* ticket) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  using State = statistics_accumulator<T>;
  __shared__ reduce_shared_storage<State, BlockThreads> storage;
  cuda_lane lane;
  stats_thread_state<T> t;
  t.shift = n > 0 ? static_cast<double>(in[0]) : 0.0;
  if (!isfinite(t.shift)) t.shift = 0;  // a NaN or infinite first element shifts nothing
  for_each_strided<BlockThreads, statistics_tuning::vectors_in_flight, true>(
      in, n, [&](const auto& v, std::int64_t first) { t.add_vector(v, first); },
      [&](const T& x, std::int64_t i) { t.add(x, i); });

  State own = t.state();
  if constexpr (State::shifted_sums_may_overflow)
    if (State::shifted_sums_overflowed(t.count, t.shift, t.s1, t.s2)) own = t.template rescaled_state<BlockThreads>(in, n);
  const State block_state = block_reduce<BlockThreads>(lane, own, merge_statistics{}, storage.first());
  State total;
  if (fold_block_partials<BlockThreads>(lane, block_state, merge_statistics{}, partials, ticket, storage.second(), total))
    *out = total.result();
}

}  // namespace multireduce::cuda::detail
