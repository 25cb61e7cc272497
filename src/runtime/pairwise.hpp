// runtime/pairwise.hpp -- NumPy's pairwise summation of floats, bit for bit, on all cores and over
// arrays read in pieces (private to src/runtime).
//
// NumPy sums a contiguous run of n floats (np.sum of an array, of each row along the last axis) as
// pairwise_sum in numpy/_core/src/umath/loops_utils.h.src: fewer than 8 elements one after another
// from 0; up to 128 with 8 interleaved accumulators combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
// then the rest one by one; more than 128 split at n/2 rounded down to a multiple of 8 and the two
// halves' sums added. float16 is accumulated in float32. The result is a fixed function of the
// elements, so every subtree can be summed anywhere: here subtrees are summed in parallel and
// pieces of a streamed array are subtrees, and the bits are NumPy's in every case.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include <multireduce/cpu/detail/parallel.hpp>

#include "dtype.hpp"

namespace multireduce::runtime::pairwise {

/// The largest run that NumPy sums with interleaved accumulators instead of splitting.
inline constexpr std::int64_t block = 128;

/// Where NumPy splits a run of n > block elements: n / 2 rounded down to a multiple of 8.
constexpr std::int64_t split(std::int64_t n) {
  const std::int64_t half = n / 2;
  return half - half % 8;
}

/// The element as the accumulator: float16 widened exactly to float.
template <class Acc, class T>
inline Acc load(const T& x) {
  if constexpr (std::is_same_v<T, float16_bits>) return to_float(x);
  else return static_cast<Acc>(x);
}

/// NumPy's pairwise sum of x[0, n), on the calling thread.
template <class Acc, class T>
Acc serial(const T* x, std::int64_t n) {
  if (n < 8) {
    Acc res = 0;
    for (std::int64_t i = 0; i < n; ++i) res += load<Acc>(x[i]);
    return res;
  }
  if (n <= block) {
    Acc r[8];
    for (int j = 0; j < 8; ++j) r[j] = load<Acc>(x[j]);
    std::int64_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += load<Acc>(x[i + j]);
    Acc res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += load<Acc>(x[i]);
    return res;
  }
  const std::int64_t left = split(n);
  return serial<Acc>(x, left) + serial<Acc>(x + left, n - left);
}

namespace detail {
/// Subtrees at least this long are split further before the parallel sum (1 << 15 elements:
/// enough work per task that scheduling costs nothing measurable).
inline constexpr std::int64_t parallel_leaf = std::int64_t{1} << 15;

/// The subtrees of [first, first + n) that are summed as one task, in order.
inline void cut(std::int64_t first, std::int64_t n, std::int64_t leaf, std::vector<std::int64_t>& starts) {
  if (n <= leaf || n <= block) {
    starts.push_back(first);
    return;
  }
  const std::int64_t left = split(n);
  cut(first, left, leaf, starts);
  cut(first + left, n - left, leaf, starts);
}

/// Combines the tasks' sums as the tree does, consuming them in order.
template <class Acc>
Acc combine(std::int64_t n, std::int64_t leaf, const std::vector<Acc>& sums, std::size_t& next) {
  if (n <= leaf || n <= block) return sums[next++];
  const std::int64_t left = split(n);
  const Acc a = combine(left, leaf, sums, next);
  return a + combine(n - left, leaf, sums, next);
}
}  // namespace detail

/// NumPy's pairwise sum of x[0, n), its subtrees summed on all cores: the same bits as serial().
template <class Acc, class T>
Acc parallel(const T* x, std::int64_t n) {
  const int threads = cpu::max_threads();
  if (threads == 1 || n <= 2 * detail::parallel_leaf) return serial<Acc>(x, n);
  // Leaves small enough for 8 tasks a thread, but not smaller than parallel_leaf.
  std::int64_t leaf = n / (8 * std::int64_t(threads));
  if (leaf < detail::parallel_leaf) leaf = detail::parallel_leaf;
  std::vector<std::int64_t> starts;
  detail::cut(0, n, leaf, starts);
  starts.push_back(n);
  std::vector<Acc> sums(starts.size() - 1);
  const auto tasks = static_cast<std::int64_t>(sums.size());
  MULTIREDUCE_OMP(parallel for schedule(dynamic, 1))
  for (std::int64_t t = 0; t < tasks; ++t)
    sums[std::size_t(t)] = serial<Acc>(x + starts[std::size_t(t)], starts[std::size_t(t) + 1] - starts[std::size_t(t)]);
  std::size_t next = 0;
  return detail::combine(n, leaf, sums, next);
}

/// NumPy's pairwise sum of elements [first, first + n) of an array read in pieces of at most
/// `piece` elements (>= block): each piece a subtree, summed by sum_piece(first, count), in order.
template <class Acc, class SumPiece>
Acc over_pieces(std::int64_t first, std::int64_t n, std::int64_t piece, SumPiece&& sum_piece) {
  if (n <= piece) return sum_piece(first, n);
  const std::int64_t left = split(n);  // n > piece >= block: NumPy splits here too
  const Acc a = over_pieces<Acc>(first, left, piece, sum_piece);
  return a + over_pieces<Acc>(first + left, n - left, piece, sum_piece);
}

}  // namespace multireduce::runtime::pairwise
