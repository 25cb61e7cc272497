// multireduce/cpu/detail/segmented.hpp -- the load-balanced segmented engine: work split by element
// count, long segments in pieces joined left to right.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "fold.hpp"
#include "parallel.hpp"

namespace multireduce::cpu::detail {

// ---- segmented reductions ----------------------------------------------------------------------

/// Reduces `segments` segments: segment s is in[seg_begin(s), seg_begin(s) + length), where
/// work(s) is the exclusive prefix sum of (length + 1) over the segments before s (so
/// length(s) = work(s + 1) - work(s) - 1, and empty segments count as work too).
///
/// The work range [0, work(segments)) is cut into items of chunk_elements units; items run in
/// parallel. A segment shorter than chunk_elements is reduced whole by the item where it starts;
/// a longer one is reduced in pieces, one per item it overlaps, whose results are combined left
/// to right afterwards. The cut depends on the offsets only, never on the thread count.
template <class Acc, class It, class Out, class Op, class SegBegin, class Work>
void segmented_engine(It in, Out out, std::int64_t segments, const SegBegin& seg_begin, const Work& work,
                      const Op& op, const Acc& init) {
  if (segments == 0) return;
  constexpr std::int64_t unit = chunk_elements;
  const std::int64_t total = work(segments);
  const std::int64_t items = ceil_div(total, unit);
  auto segment_at = [&](std::int64_t w) {  // the s with work(s) <= w < work(s + 1)
    std::int64_t lo = 0, hi = segments;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (work(mid) <= w) lo = mid;
      else hi = mid;
    }
    return lo;
  };
  // Pieces of long segments: head[k] is item k's piece of a segment begun in an earlier item,
  // tail[k] its piece of a long segment begun in item k. Empty pieces stay nullopt.
  std::vector<std::optional<Acc>> head(static_cast<std::size_t>(items)), tail(static_cast<std::size_t>(items));
  std::vector<std::int64_t> first_segment(static_cast<std::size_t>(items));

  MULTIREDUCE_OMP(parallel for schedule(static) if (items > 1))
  for (std::int64_t k = 0; k < items; ++k) {
    const std::int64_t lo = k * unit, hi = std::min(total, lo + unit);
    std::int64_t s = segment_at(lo);
    first_segment[static_cast<std::size_t>(k)] = s;
    for (std::int64_t ws = work(s); s < segments && ws < hi; ++s) {
      const std::int64_t we = work(s + 1), length = we - ws - 1, b = seg_begin(s);
      if (length < unit) {
        if (ws >= lo) out[s] = fold_segment(in, b, b + length, op, init);
      } else {
        const std::int64_t j0 = std::max(ws, lo) - ws, j1 = std::min(std::min(we, hi) - ws, length);
        std::optional<Acc> piece;
        if (j1 > j0) piece = fold_nonempty<Acc>(in, b + j0, b + j1, op);
        (ws < lo ? head : tail)[static_cast<std::size_t>(k)] = piece;
      }
      ws = we;
    }
  }

  // Long segments end in the item holding their last work unit: that item joins the pieces.
  MULTIREDUCE_OMP(parallel for schedule(static) if (items > 1))
  for (std::int64_t k = 0; k < items; ++k) {
    const std::int64_t lo = k * unit, hi = std::min(total, lo + unit);
    const std::int64_t s = first_segment[static_cast<std::size_t>(k)];
    const std::int64_t ws = work(s), we = work(s + 1);
    if (ws >= lo || we - ws - 1 < unit || we > hi) continue;
    const std::int64_t k_start = ws / unit;
    Acc acc = init;
    if (const auto& p = tail[static_cast<std::size_t>(k_start)]) acc = op(acc, *p);
    for (std::int64_t j = k_start + 1; j <= k; ++j)
      if (const auto& p = head[static_cast<std::size_t>(j)]) acc = op(acc, *p);
    out[s] = acc;
  }
}

}  // namespace multireduce::cpu::detail
