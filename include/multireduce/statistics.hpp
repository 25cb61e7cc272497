// multireduce/statistics.hpp -- many statistics of one array in one pass: the mergeable state.
//
// `statistics_accumulator<T>` is what every backend (CUDA blocks, CPU chunks) carries and merges:
// count, sum, mean and M2 (Chan et al.'s parallel variance: numerically sound, no sum-of-squares
// cancellation), l1 = sum |x|, sum x^2 (for l2), min/argmin and max/argmax with NumPy's rules
// (a NaN wins, the first index among equals). `merge(a, b)` is associative; backends merge in a
// fixed order, so results are bitwise reproducible on one machine.
//
// Hot loops do not call `push` per element (a division each): they keep shifted sums
// S1 = sum(x - K), S2 = sum((x - K)^2) for a shift K near the data (e.g. the array's first element)
// and turn them into a state with `from_shifted_sums`, which is exact algebra and well conditioned
// while |mean - K| is not much larger than the standard deviation.
//
// Infinities, NaN and overflow follow NumPy: the sum is inf with its sign for data with an infinity
// of one sign or a sum past double's range, NaN for a NaN or inf with -inf; the mean is sum / count
// where the sum is not finite; var and std are NaN for data with an inf or a NaN and inf where the
// mean or the variance leaves double's range; l1 and l2 overflow to inf. Shifted sums of doubles
// near double's largest values can overflow where the data's sum does not (x - K, count K or
// (x - K)^2), and count K + S1 is then inf - inf: where they are not finite (`shifted_sums_overflowed`,
// after the hot loop) the backends add the same elements again, scaled by 2^-560 (no overflow for
// any finite double), and take the state from `from_rescaled_sums` -- a cold path, never taken for
// finite float64 data of moderate size, nor for other types (their doubles cannot overflow).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "config.hpp"
#include "operators.hpp"

namespace multireduce {

/// The sum's type: NumPy's accumulation type (int64 for signed, uint64 for unsigned integers,
/// wrapping like NumPy) and double for floating point.
template <class T>
using statistics_sum_t = std::conditional_t<std::is_integral_v<T>,
                                            std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>, double>;

/// The statistics of an array. Population variance (ddof = 0). Empty array: count 0, sum 0,
/// mean/var/std NaN, min/max the identities of minimum/maximum, argmin = argmax = -1, l1 = l2 = 0.
/// a + b in the sum's type; integers wrap as NumPy's do, added in unsigned arithmetic (the same
/// bits, and no signed overflow, which C++ leaves undefined).
template <class S>
MULTIREDUCE_HOST_DEVICE constexpr S wrapping_add(S a, S b) {
  if constexpr (std::is_integral_v<S>)
    return static_cast<S>(static_cast<std::make_unsigned_t<S>>(a) + static_cast<std::make_unsigned_t<S>>(b));
  else
    return a + b;
}

template <class T>
struct statistics {
  std::int64_t count;
  statistics_sum_t<T> sum;
  double mean, var, std;
  T min;
  std::int64_t argmin;
  T max;
  std::int64_t argmax;
  double l1, l2;
};

template <class T>
struct statistics_accumulator {
  using sum_type = statistics_sum_t<T>;
  std::int64_t count = 0;
  sum_type sum = 0;
  double mean = 0, m2 = 0;  // m2 = sum (x - mean)^2
  double l1 = 0, sum_squares = 0;
  T min = minimum::identity<T>();
  std::int64_t argmin = -1;
  T max = maximum::identity<T>();
  std::int64_t argmax = -1;

  /// Adds element x found at position index (Welford). For tails and references, not hot loops.
  MULTIREDUCE_HOST_DEVICE void push(T x, std::int64_t index) {
    const double v = static_cast<double>(x);
    count += 1;
    sum = wrapping_add(sum, static_cast<sum_type>(x));
    const double delta = v - mean;
    mean += delta / static_cast<double>(count);
    m2 += delta * (v - mean);
    l1 += v < 0 ? -v : v;
    sum_squares += v * v;
    take_min(x, index);
    take_max(x, index);
  }

  /// Whether the shifted sums of T's values can leave double's range where the data does not: only
  /// for types as wide as double (float, half and integer values stay far inside it).
  static constexpr bool shifted_sums_may_overflow = !std::is_integral_v<T> && sizeof(T) >= sizeof(double);
  /// The cold path's scale (rescale_down = 2^-560, rescale_up = 2^560): a finite double times
  /// rescale_down is below 2^464, its square below 2^928, and sums of 2^63 of them stay finite;
  /// powers of two scale exactly (values below 2^-462, whose part in such sums is far below their
  /// rounding, lose bits).
  static constexpr double rescale_down = 0x1p-560, rescale_up = 0x1p560;

  /// Whether shifted sums (of a floating-point type that may overflow) cannot be trusted: the
  /// floating-point sum count shift + s1 or s2 is not finite. Then, or for data with an inf or a
  /// NaN (harmless: the same answer comes back), the caller adds the elements again, scaled
  /// (`rescale_down`), and takes the state from `from_rescaled_sums`.
  MULTIREDUCE_HOST_DEVICE static bool shifted_sums_overflowed(std::int64_t count, double shift, double s1, double s2) {
    if constexpr (!shifted_sums_may_overflow) {
      return false;
    } else {
      const double total = static_cast<double>(count) * shift + s1;
      return !(total - total == 0 && s2 - s2 == 0);
    }
  }

  /// The state of `count` elements from their sums scaled by rescale_down: t1 = sum(x rescale_down -
  /// shift rescale_down), t2 = the sum of the squares of those terms. The same algebra as
  /// from_shifted_sums, scaled back at the end: a sum or mean past double's range is inf with its
  /// sign, M2 past it inf; an infinity or NaN in the data gives NumPy's inf or NaN sum and a NaN M2.
  MULTIREDUCE_HOST_DEVICE static statistics_accumulator from_rescaled_sums(std::int64_t count, double shift, double t1,
                                                                           double t2, double l1, double sum_squares,
                                                                           T min, std::int64_t argmin, T max,
                                                                           std::int64_t argmax) {
    statistics_accumulator s =
        from_shifted_sums(count, shift * rescale_down, t1, t2, 0, l1, sum_squares, min, argmin, max, argmax);
    if (count > 0) {
      s.sum = static_cast<sum_type>((static_cast<double>(count) * (shift * rescale_down) + t1) * rescale_up);
      s.mean *= rescale_up;
      s.m2 = s.m2 * rescale_up * rescale_up;
    }
    return s;
  }

  /// The state of `count` elements from their shifted sums s1 = sum(x - shift), s2 = sum((x - shift)^2).
  MULTIREDUCE_HOST_DEVICE static statistics_accumulator from_shifted_sums(std::int64_t count, double shift, double s1,
                                                                          double s2, sum_type sum, double l1,
                                                                          double sum_squares, T min,
                                                                          std::int64_t argmin, T max,
                                                                          std::int64_t argmax) {
    statistics_accumulator s;
    s.count = count;
    s.sum = sum;
    if (count > 0) {
      const double n = static_cast<double>(count);
      const double d = s1 / n;
      s.mean = shift + d;
      const double m2 = s2 - s1 * d;
      s.m2 = m2 > 0 || m2 != m2 ? m2 : 0;  // clamp rounding below zero; keep NaN (NaN or inf data)
    }
    s.l1 = l1;
    s.sum_squares = sum_squares;
    s.min = min;
    s.argmin = argmin;
    s.max = max;
    s.argmax = argmax;
    return s;
  }

  /// The state behind a result, its indices moved by index_offset (to merge results of chunks).
  MULTIREDUCE_HOST_DEVICE static statistics_accumulator of_result(const statistics<T>& r, std::int64_t index_offset) {
    statistics_accumulator s;
    s.count = r.count;
    s.sum = r.sum;
    s.mean = r.count > 0 ? r.mean : 0;
    s.m2 = r.count > 0 ? r.var * static_cast<double>(r.count) : 0;
    s.l1 = r.l1;
    s.sum_squares = r.l2 * r.l2;
    s.min = r.min;
    s.argmin = r.argmin < 0 ? -1 : r.argmin + index_offset;
    s.max = r.max;
    s.argmax = r.argmax < 0 ? -1 : r.argmax + index_offset;
    return s;
  }

  /// Merges two states (Chan et al.). Associative; ties of min/max are settled by index.
  MULTIREDUCE_HOST_DEVICE static statistics_accumulator merge(const statistics_accumulator& a,
                                                              const statistics_accumulator& b) {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    statistics_accumulator s = a;
    const double na = static_cast<double>(a.count), nb = static_cast<double>(b.count);
    const double n = na + nb;
    const double delta = b.mean - a.mean;
    s.count = a.count + b.count;
    s.sum = wrapping_add(a.sum, b.sum);
    // delta is not finite for an infinite or NaN mean (data with an infinity or NaN; a result whose
    // sum overflowed) or finite means whose difference leaves double's range: weight the means
    // instead, which gives NumPy's mean (inf, or NaN for +inf with -inf) and cannot overflow. M2 is
    // then inf (the variance of finite data past double's range) or NaN (data with an inf or a NaN,
    // whose M2 is NaN already), as NumPy's variance.
    // (A branch, not a select: on the GPU the select costs the block merges measurable time.)
    if (delta - delta == 0) {
      s.mean = a.mean + delta * (nb / n);
      s.m2 = a.m2 + b.m2 + delta * delta * (na * nb / n);
    } else {
      s.mean = a.mean * (na / n) + b.mean * (nb / n);
      s.m2 = a.m2 + b.m2 + detail::limits<double>::infinity();
    }
    s.l1 = a.l1 + b.l1;
    s.sum_squares = a.sum_squares + b.sum_squares;
    s.take_min(b.min, b.argmin);
    s.take_max(b.max, b.argmax);
    return s;
  }

  MULTIREDUCE_HOST_DEVICE statistics<T> result() const {
    statistics<T> r{};
    r.count = count;
    r.sum = sum;
    const double nan = detail::limits<double>::quiet_NaN();
    r.mean = count > 0 ? mean_value() : nan;
    r.var = count > 0 ? m2 / static_cast<double>(count) : nan;
    if constexpr (!std::is_integral_v<T>) {
      // A floating-point sum that is not finite (inf with its sign, NaN): NumPy's mean is sum / count
      // and its var NaN where the mean is NaN or the data has an inf or a NaN (M2 is NaN), inf
      // otherwise (x - mean is infinite for every finite x).
      if (count > 0 && !(sum - sum == 0)) {
        r.mean = sum / static_cast<double>(count);
        r.var = r.mean != r.mean || m2 != m2 ? nan : detail::limits<double>::infinity();
      }
    }
    r.std = count > 0 ? std::sqrt(r.var) : nan;
    r.min = min;
    r.argmin = argmin;
    r.max = max;
    r.argmax = argmax;
    r.l1 = l1;
    r.l2 = std::sqrt(sum_squares);
    return r;
  }

 private:
  /// The mean. Of integers: the integer sum over the count (NumPy's mean of integers, and exact
  /// while the sum fits its type), not the running mean, which cancels when large values of both
  /// signs meet (2^63 - 1, 1, -2^63, -1: sum -1, mean -0.25, where the running mean gives 0); the
  /// running mean only where the sum may have wrapped (|mean x count| of 2^62 and more, 2^63 for
  /// unsigned types: far above the running mean's error).
  MULTIREDUCE_HOST_DEVICE double mean_value() const {
    if constexpr (std::is_integral_v<T>) {
      constexpr double fits = std::is_signed_v<T> ? 4611686018427387904.0 : 9223372036854775808.0;
      const double total = mean * static_cast<double>(count);
      if (total < fits && -total < fits) return static_cast<double>(sum) / static_cast<double>(count);
    }
    return mean;
  }
  MULTIREDUCE_HOST_DEVICE void take_min(T x, std::int64_t index) {
    if (index < 0) return;
    const auto m = multireduce::argmin{}(key_value<T>{min, argmin < 0 ? detail::limits<std::int64_t>::max() : argmin},
                             key_value<T>{x, index});
    min = m.value;
    argmin = m.index;
  }
  MULTIREDUCE_HOST_DEVICE void take_max(T x, std::int64_t index) {
    if (index < 0) return;
    const auto m = multireduce::argmax{}(key_value<T>{max, argmax < 0 ? detail::limits<std::int64_t>::max() : argmax},
                             key_value<T>{x, index});
    max = m.value;
    argmax = m.index;
  }
};

}  // namespace multireduce
