// multireduce/cpu/detail/statistics.hpp -- the statistics state of one chunk.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../operators.hpp"
#include "../../statistics.hpp"
#include "fold.hpp"

namespace multireduce::cpu::detail {

// ---- statistics --------------------------------------------------------------------------------

/// The statistics state of in[first, last) from its sums scaled by rescale_down (statistics.hpp):
/// the cold path of stats_chunk where the shifted sums of doubles are not finite. l1, the sum of
/// squares and the extremes come from the hot loop (no overflow there that NumPy does not have).
template <class T, class It>
statistics_accumulator<T> rescaled_chunk(It in, std::int64_t first, std::int64_t last, double shift, double l1,
                                         double sum_squares, T min, std::int64_t argmin, T max, std::int64_t argmax) {
  using accumulator = statistics_accumulator<T>;
  constexpr int lanes = 4;  // as stats_chunk's
  const double k = shift * accumulator::rescale_down;
  double t1[lanes] = {}, t2[lanes] = {};
  for (std::int64_t i = first; i < last; ++i) {
    const int j = static_cast<int>((i - first) % lanes);
    const double e = static_cast<double>(static_cast<T>(in[i])) * accumulator::rescale_down - k;
    t1[j] += e;
    t2[j] += e * e;
  }
  auto total = [](const double* a) { return (a[0] + a[1]) + (a[2] + a[3]); };
  return accumulator::from_rescaled_sums(last - first, shift, total(t1), total(t2), l1, sum_squares, min, argmin, max,
                                         argmax);
}

/// The statistics state of in[first, last) (non-empty) from shifted sums with the given shift.
/// Three passes over the chunk (sums; min and max by the folds; their first positions): each
/// loop vectorises on its own, and the chunk is in cache after the first.
template <class T, class It>
statistics_accumulator<T> stats_chunk(It in, std::int64_t first, std::int64_t last, double shift) {
  using sum_type = statistics_sum_t<T>;
  constexpr int lanes = 4;  // 4 accumulators x 4 doubles: 8 SSE registers
  double s1[lanes] = {}, s2[lanes] = {}, l1[lanes] = {}, sq[lanes] = {};
  std::uint64_t integer_sum = 0;  // integer sums wrap (NumPy); unsigned makes that defined behaviour
  auto step = [&](int j, T v) {
    const double d = static_cast<double>(v), e = d - shift;
    s1[j] += e;
    s2[j] += e * e;
    l1[j] += d < 0 ? -d : d;
    sq[j] += d * d;
  };
  std::int64_t i = first;
  for (; i + lanes <= last; i += lanes)
    for (int j = 0; j < lanes; ++j) step(j, static_cast<T>(in[i + j]));
  for (int j = 0; i + j < last; ++j) step(j, static_cast<T>(in[i + j]));
  if constexpr (std::is_integral_v<T>)
    for (std::int64_t k = first; k < last; ++k) integer_sum += static_cast<std::uint64_t>(static_cast<T>(in[k]));
  auto total = [](const double* a) { return (a[0] + a[1]) + (a[2] + a[3]); };
  const double count = static_cast<double>(last - first), shifted_sum = total(s1);
  // Floating point: the sum from the shifted sum (one accumulator less), as the CUDA backend does.
  sum_type sum;
  if constexpr (std::is_integral_v<T>) sum = static_cast<sum_type>(integer_sum);
  else sum = count * shift + shifted_sum;
  const T min_value = fold_nonempty<T>(in, first, last, minimum{});
  const T max_value = fold_nonempty<T>(in, first, last, maximum{});
  const std::int64_t i_min = find_first(in, first, last, min_value);
  const std::int64_t i_max = find_first(in, first, last, max_value);
  using accumulator = statistics_accumulator<T>;
  if constexpr (accumulator::shifted_sums_may_overflow) {
    // Doubles near double's largest values (or an inf or a NaN): the shifted sums may have
    // overflowed where the data's sum does not, and count K + S1 be inf - inf. The cold path adds
    // the chunk again, scaled (statistics.hpp).
    if (accumulator::shifted_sums_overflowed(last - first, shift, shifted_sum, total(s2)))
      return rescaled_chunk<T>(in, first, last, shift, total(l1), total(sq), static_cast<T>(in[i_min]), i_min,
                               static_cast<T>(in[i_max]), i_max);
  }
  return accumulator::from_shifted_sums(last - first, shift, shifted_sum, total(s2), sum, total(l1), total(sq),
                                        static_cast<T>(in[i_min]), i_min, static_cast<T>(in[i_max]), i_max);
}

}  // namespace multireduce::cpu::detail
