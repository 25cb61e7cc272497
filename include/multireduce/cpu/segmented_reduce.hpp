// multireduce/cpu/segmented_reduce.hpp -- segmented reductions (offsets or a fixed length) on
// the CPU (all cores with OpenMP), load-balanced by element count.
// Conventions: multireduce/cpu.hpp.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../operators.hpp"
#include "detail/fold.hpp"
#include "detail/parallel.hpp"
#include "detail/segmented.hpp"

namespace multireduce::cpu {

/// out[s] = init (+) in[begin[s]] (+) ... (+) in[end[s] - 1] for every segment s (CUB's
/// DeviceSegmentedReduce convention: an empty segment gives init). Segments may be in any order,
/// overlap or leave gaps. Work is split by element count, so skewed segment lengths balance.
/// @param n             the length of `in`, for validation: 0 <= begin[s] <= end[s] <= n is checked.
/// @param begin_offsets, end_offsets  random-access, any integer type (int32 or int64 typically).
template <class It, class Out, class OffIt, class Op, class Acc>
void segmented_reduce(It in, std::int64_t n, Out out, std::int64_t num_segments, OffIt begin_offsets,
                      OffIt end_offsets, Op op, Acc init) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
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
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
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

}  // namespace multireduce::cpu
