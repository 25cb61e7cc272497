// runtime/pieces.hpp -- how a job on an array_source is cut into pieces that each backend runs as
// an in-memory job (private to src/runtime).
//
// A piece is a run of input elements and the outputs that only it decides: whole segments, whole
// windows (consecutive pieces overlap by W - 1 elements), whole rows of an axis. A piece holds
// about `cap` elements, more when a single segment, window or row is longer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime.hpp"

namespace multireduce::runtime {

/// Tells exec.progress how far a job on a source is (every backend's jobs, between pieces).
struct progress_report {
  const execution& exec;
  std::int64_t total;
  void operator()(std::int64_t done) const {
    if (exec.progress) exec.progress(done, total);
  }
};

}  // namespace multireduce::runtime

namespace multireduce::runtime::pieces {

/// Input elements [first, first + count) and the job on them alone, whose outputs are the job's
/// outputs [out_first, out_first + sub.segments-or-windows).
struct piece {
  std::int64_t first = 0, count = 0, out_first = 0;
  reduce_job sub;                       ///< input.data unset: the caller reads the piece
  std::vector<std::int64_t> offsets;    ///< offsets jobs: the piece's offsets, rebased to its first element
};

/// Calls f(piece&) for each piece of a fixed_segments, offsets or window job, front to back.
template <class F>
void for_each(const reduce_job& job, std::int64_t cap, F&& f) {
  cap = std::max<std::int64_t>(cap, 1);
  const std::int64_t n = job.input.count;
  piece p;
  p.sub = job;
  switch (job.shape) {
    case shape_kind::fixed_segments: {
      const std::int64_t per = job.length > 0 ? std::max<std::int64_t>(1, cap / job.length) : job.segments;
      for (std::int64_t s = 0; s < job.segments; s += per) {
        const std::int64_t count = std::min(per, job.segments - s);
        p.first = s * job.length, p.count = count * job.length, p.out_first = s;
        p.sub.segments = count;
        p.sub.input.count = p.count;
        f(p);
      }
      return;
    }
    case shape_kind::offsets: {
      const std::int64_t* o = job.offsets;
      for (std::int64_t s = 0; s < job.segments;) {
        std::int64_t e = s + 1;  // at least one segment; more while they fit in the cap
        while (e < job.segments && o[e + 1] - o[s] <= cap) ++e;
        p.first = o[s], p.count = o[e] - o[s], p.out_first = s;
        p.offsets.assign(o + s, o + e + 1);
        for (auto& x : p.offsets) x -= o[s];
        p.sub.segments = e - s;
        p.sub.offsets = p.offsets.data();
        p.sub.input.count = p.count;
        f(p);
        s = e;
      }
      return;
    }
    case shape_kind::window: {
      const std::int64_t windows = n >= job.length ? n - job.length + 1 : 0;
      for (std::int64_t w = 0; w < windows; w += cap) {
        const std::int64_t count = std::min(cap, windows - w);
        p.first = w, p.count = count + job.length - 1, p.out_first = w;
        p.sub.input.count = p.count;
        f(p);
      }
      return;
    }
    default:
      return;  // whole arrays and axes are folded across pieces by the backends
  }
}

}  // namespace multireduce::runtime::pieces
