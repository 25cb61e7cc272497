// multireduce/cpu.hpp -- the CPU backend of the device-wide algorithms: reduce, argmin/argmax,
// statistics, segmented, fixed-length segmented and sliding-window reductions over host memory,
// on all cores (OpenMP; plain serial C++ without it). It is also the reference the GPU tests
// compare against.
//
// Conventions, shared with the CUDA backend:
// - Element counts are std::int64_t. Inputs are random-access iterators or pointers, only read;
//   outputs are random-access iterators or pointers, written once per result.
// - The accumulator type Acc is the type of `init` (CUB): every element is converted with
//   static_cast<Acc>(in[i]) and combined as acc = op(acc, x). `op` must be associative and callable
//   on const operands; it is never assumed commutative unless is_commutative_v<Op> says so, and
//   partial results are always combined left to right.
// - Deterministic: the input is cut into chunks of chunk_elements whatever the number of threads,
//   so results (floating-point rounding included) are the same with 1 thread or many.
// - Bad arguments throw std::invalid_argument before any work starts. An exception thrown by `op`
//   inside a parallel region terminates the program (OpenMP rule).
//
// Performance notes:
// - Commutative operators fold each chunk with 8 interleaved accumulators, which the compiler
//   vectorises; others fold strictly left to right (one dependent operation per element).
//   minimum/maximum over contiguous arithmetic input use GCC vector extensions (GCC 12 leaves the
//   NaN-aware select scalar): about 4x faster for float; other compilers get the portable fold.
// - argmin/argmax find each chunk's extreme with the vectorised fold, then its first position by
//   re-reading the chunk from cache.
// - Segmented reductions split work by element count (empty segments count one unit), so one huge
//   segment and millions of tiny ones both use every core.
// - Windows: direct folds up to W = 4, then van Herk / Gil-Werman (4 operations per element
//   whatever W: suffix, prefix, join, init; no inverse operator needed, so min/max windows are O(n)).
#pragma once

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/detail.hpp"
#include "cpu/indexed_iterator.hpp"
#include "operators.hpp"
#include "statistics.hpp"

namespace multireduce::cpu {

/// init (+) in[0] (+) ... (+) in[n-1], with (+) = op and every element converted to Acc.
/// @param n    element count, >= 0; n == 0 returns init.
/// @param init the initial value; its type is the accumulator type.
/// @return the reduction. Commutative operators: chunk folds may associate differently from a
///         sequential loop (floating-point sums round differently, deterministically).
template <class It, class Op, class Acc>
Acc reduce(It in, std::int64_t n, Op op, Acc init) {
  detail::check_operator<Op, Acc>();
  detail::check_count(n, "reduce", "n");
  if (n == 0) return init;
  return op(init, detail::fold_chunks<Acc>(in, n, op));
}

/// The smallest element and its position, NumPy's rules: the lowest index among equal values, and
/// the first NaN if there is one. n == 0: {minimum::identity<V>(), -1}.
template <class It>
key_value<std::iter_value_t<It>, std::int64_t> argmin(It in, std::int64_t n) {
  using V = std::iter_value_t<It>;
  detail::check_count(n, "argmin", "n");
  if (n == 0) return {minimum::identity<V>(), -1};
  return detail::arg_extreme<multireduce::argmin, minimum>(in, n);
}

/// The largest element and its position, NumPy's rules: the lowest index among equal values, and
/// the first NaN if there is one. n == 0: {maximum::identity<V>(), -1}.
template <class It>
key_value<std::iter_value_t<It>, std::int64_t> argmax(It in, std::int64_t n) {
  using V = std::iter_value_t<It>;
  detail::check_count(n, "argmax", "n");
  if (n == 0) return {maximum::identity<V>(), -1};
  return detail::arg_extreme<multireduce::argmax, maximum>(in, n);
}

/// count, sum, mean, population variance/std, l1, l2, min/argmin, max/argmax of in[0, n) in one
/// pass (see statistics.hpp). Each chunk keeps shifted sums with shift K = in[0] (0 if that is NaN
/// or infinite): no cancellation for data far from 0 with a small spread. Chunk states merge left
/// to right. Integer sums are exact (wrapping in 64 bits, like NumPy); floating-point sums are
/// count * K + sum(x - K), as in the CUDA backend.
template <class It>
statistics<std::iter_value_t<It>> stats(It in, std::int64_t n) {
  using T = std::iter_value_t<It>;
  static_assert(std::is_arithmetic_v<T>, "multireduce::cpu::stats needs arithmetic elements");
  detail::check_count(n, "stats", "n");
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

/// out[s] = init (+) in[begin[s]] (+) ... (+) in[end[s] - 1] for every segment s (CUB's
/// DeviceSegmentedReduce convention: an empty segment gives init). Segments may be in any order,
/// overlap or leave gaps. Work is split by element count, so skewed segment lengths balance.
/// @param n             the length of `in`, for validation: 0 <= begin[s] <= end[s] <= n is checked.
/// @param begin_offsets, end_offsets  random-access, any integer type (int32 or int64 typically).
template <class It, class Out, class OffIt, class Op, class Acc>
void segmented_reduce(It in, std::int64_t n, Out out, std::int64_t num_segments, OffIt begin_offsets,
                      OffIt end_offsets, Op op, Acc init) {
  detail::check_operator<Op, Acc>();
  detail::check_count(n, "segmented_reduce", "n");
  detail::check_count(num_segments, "segmented_reduce", "num_segments");
  // work[s]: exclusive prefix sum of (length + 1), built per block in parallel. A bad segment is
  // reported by its lowest index, whatever the thread count.
  constexpr std::int64_t block = chunk_elements;
  const std::int64_t blocks = detail::ceil_div(num_segments, block);
  std::vector<std::int64_t> work(static_cast<std::size_t>(num_segments + 1));
  std::vector<std::int64_t> block_total(static_cast<std::size_t>(blocks)), first_bad(static_cast<std::size_t>(blocks), -1);
  auto bounds = [&](std::int64_t s) {
    return std::pair<std::int64_t, std::int64_t>{static_cast<std::int64_t>(begin_offsets[s]),
                                                 static_cast<std::int64_t>(end_offsets[s])};
  };
  MULTIREDUCE_OMP(parallel for schedule(static) if (blocks > 1))
  for (std::int64_t k = 0; k < blocks; ++k) {
    std::int64_t total = 0;
    for (std::int64_t s = k * block; s < std::min(num_segments, (k + 1) * block); ++s) {
      const auto [b, e] = bounds(s);
      if (!(0 <= b && b <= e && e <= n)) {
        first_bad[static_cast<std::size_t>(k)] = s;
        break;
      }
      total += e - b + 1;
    }
    block_total[static_cast<std::size_t>(k)] = total;
  }
  for (std::int64_t k = 0; k < blocks; ++k)
    if (const std::int64_t s = first_bad[static_cast<std::size_t>(k)]; s >= 0) {
      const auto [b, e] = bounds(s);
      detail::require(false, "segmented_reduce",
                      "segment " + std::to_string(s) + " is [" + std::to_string(b) + ", " + std::to_string(e) +
                          "): need 0 <= begin <= end <= n = " + std::to_string(n));
    }
  for (std::int64_t k = 1; k < blocks; ++k) block_total[static_cast<std::size_t>(k)] += block_total[static_cast<std::size_t>(k - 1)];
  MULTIREDUCE_OMP(parallel for schedule(static) if (blocks > 1))
  for (std::int64_t k = 0; k < blocks; ++k) {
    std::int64_t w = k > 0 ? block_total[static_cast<std::size_t>(k - 1)] : 0;
    for (std::int64_t s = k * block; s < std::min(num_segments, (k + 1) * block); ++s) {
      work[static_cast<std::size_t>(s)] = w;
      const auto [b, e] = bounds(s);
      w += e - b + 1;
    }
  }
  work[static_cast<std::size_t>(num_segments)] = blocks > 0 ? block_total[static_cast<std::size_t>(blocks - 1)] : 0;

  detail::segmented_engine<Acc>(
      in, out, num_segments, [&](std::int64_t s) { return static_cast<std::int64_t>(begin_offsets[s]); },
      [&](std::int64_t s) { return work[static_cast<std::size_t>(s)]; }, op, init);
}

/// out[s] = init (+) in[s*L] (+) ... (+) in[s*L + L - 1] for s in [0, num_segments); L = 0 gives
/// init everywhere. Same results, bit for bit, as segmented_reduce with offsets s*L.
template <class It, class Out, class Op, class Acc>
void fixed_segmented_reduce(It in, Out out, std::int64_t num_segments, std::int64_t segment_length, Op op,
                            Acc init) {
  detail::check_operator<Op, Acc>();
  detail::check_count(num_segments, "fixed_segmented_reduce", "num_segments");
  detail::check_count(segment_length, "fixed_segmented_reduce", "segment_length");
  const std::int64_t length = segment_length;
  detail::require(num_segments == 0 || length < std::numeric_limits<std::int64_t>::max() / num_segments - 1,
                  "fixed_segmented_reduce", "num_segments * (segment_length + 1) overflows std::int64_t");
  if (length == 0 || length == 1) {
    MULTIREDUCE_OMP(parallel for schedule(static) if (num_segments > chunk_elements))
    for (std::int64_t s = 0; s < num_segments; ++s)
      out[s] = length == 0 ? init : static_cast<Acc>(op(init, static_cast<Acc>(in[s])));
  } else if (length < chunk_elements) {
    // No segment is cut into pieces: the engine would reduce each one whole, like this loop.
    MULTIREDUCE_OMP(parallel for schedule(static) if (num_segments * length > chunk_elements))
    for (std::int64_t s = 0; s < num_segments; ++s) out[s] = detail::fold_segment(in, s * length, s * length + length, op, init);
  } else {
    detail::segmented_engine<Acc>(
        in, out, num_segments, [&](std::int64_t s) { return s * length; },
        [&](std::int64_t s) { return s * (length + 1); }, op, init);
  }
}

/// Sliding windows: out[i] = init (+) in[i] (+) ... (+) in[i + W - 1] for i in [0, n - W], the same
/// as a segment [i, i + W). Needs no inverse operator (min/max windows are O(n)); operands stay in
/// left-to-right order, so non-commutative operators are right.
/// @param window W >= 1.
/// @return the number of outputs written: max(0, n - W + 1).
/// Floating-point results may round differently from segmented_reduce for W > 4 (vHGW associates
/// each window as suffix-of-block (+) prefix-of-next-block).
template <class It, class Out, class Op, class Acc>
std::int64_t window_reduce(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
  detail::check_operator<Op, Acc>();
  detail::check_count(n, "window_reduce", "n");
  detail::require(window >= 1, "window_reduce", "window must be >= 1, got " + std::to_string(window));
  if (n < window) return 0;
  const std::int64_t outputs = n - window + 1;
  static_assert(detail::direct_window_max == 4, "one window_direct instantiation per direct length");
  if (window == 1) detail::window_direct<1>(in, outputs, out, op, init);
  else if (window == 2) detail::window_direct<2>(in, outputs, out, op, init);
  else if (window == 3) detail::window_direct<3>(in, outputs, out, op, init);
  else if (window == 4) detail::window_direct<4>(in, outputs, out, op, init);
  else if (window <= detail::window_tile) {
    detail::window_blocks<Acc>(in, n, window, out, op, init);
  } else {
    detail::window_subtiles<Acc>(in, n, window, out, op, init);
  }
  return outputs;
}

}  // namespace multireduce::cpu
