// multireduce/cpu/statistics.hpp -- count, sum, mean, var, std, min, argmin, max, argmax, l1
// and l2 of one array in one pass on the CPU (all cores with OpenMP).
// Conventions: multireduce/cpu.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "../statistics.hpp"
#include "detail/parallel.hpp"
#include "detail/statistics.hpp"

namespace multireduce::cpu {

/// count, sum, mean, population variance/std, l1, l2, min/argmin, max/argmax of in[0, n) in one
/// pass (see statistics.hpp). Each chunk keeps shifted sums with shift K = in[0] (0 if that is NaN
/// or infinite): no cancellation for data far from 0 with a small spread. Chunk states merge left
/// to right. Integer sums are exact (wrapping in 64 bits, like NumPy); floating-point sums are
/// count * K + sum(x - K), as in the CUDA backend.
template <class It>
multireduce::statistics<std::iter_value_t<It>> statistics(It in, std::int64_t n) {
  using T = std::iter_value_t<It>;
  static_assert(std::is_arithmetic_v<T>, "multireduce::cpu::statistics needs arithmetic elements");
  detail::check_count(n, "statistics", "n");
  if (n == 0) return statistics_accumulator<T>{}.result();
  double shift = static_cast<double>(static_cast<T>(in[0]));
  if (!(std::abs(shift) <= std::numeric_limits<double>::max())) shift = 0;  // NaN or inf first: no shift
  const std::int64_t chunks = detail::ceil_div(n, chunk_elements);
  std::vector<statistics_accumulator<T>> partial(static_cast<std::size_t>(chunks));
  MULTIREDUCE_OMP(parallel for schedule(static) if (chunks > 1))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[static_cast<std::size_t>(c)] =
        detail::stats_chunk<T>(in, c * chunk_elements, std::min(n, (c + 1) * chunk_elements), shift);
  statistics_accumulator<T> acc;
  for (const auto& p : partial) acc = statistics_accumulator<T>::merge(acc, p);
  return acc.result();
}

}  // namespace multireduce::cpu
