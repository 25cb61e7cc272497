// runtime/trace.cpp -- runs a multi-reduction on the emulator with symbolic values and prints, after every
// operator application and merge, which partial reduction each lane holds: "a0..3" is batch a
// reduced over lanes 0..3, as in the tables of Parker & MacKinnon.
#include "trace.hpp"

#include <cstdint>
#include <multireduce/emulator/host_warp.hpp>
#include <multireduce/multireduce.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace multireduce::runtime {

namespace {

/// A symbolic partial reduction: batch `batch` over lanes lo..hi; batch < 0: a mix (a bug, or a
/// register whose value nobody reads).
struct partial {  // one 32-bit word, so the counts are those of a 32-bit type
  std::int8_t batch, lo, hi, unused;
};

/// Batch `batch`'s input in lane `lane`.
partial input_of(int batch, int lane) {
  return {static_cast<std::int8_t>(batch), static_cast<std::int8_t>(lane), static_cast<std::int8_t>(lane), 0};
}

/// Joins two adjacent ranges of the same batch; anything else is a mix.
struct join_ranges {
  static constexpr bool commutative = true;
  partial operator()(const partial& x, const partial& y) const {
    if (x.batch >= 0 && x.batch == y.batch) {
      if (x.hi + 1 == y.lo) return {x.batch, x.lo, y.hi, 0};
      if (y.hi + 1 == x.lo) return {x.batch, y.lo, x.hi, 0};
    }
    return {-1, 0, 0, 0};
  }
};

std::string to_trace_string(const partial& p) {
  if (p.batch < 0) return "?";
  const std::string name = p.batch < 26 ? std::string(1, char('a' + p.batch)) : "b" + std::to_string(p.batch) + ":";
  return name + std::to_string(p.lo) + (p.lo == p.hi ? "" : ".." + std::to_string(p.hi));
}

constexpr int trace_batches[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 64};
constexpr int trace_widths[] = {2, 4, 8, 16, 32};

template <multi_reduce_algorithm A, int Batches, int W>
void run_symbolic(host_block& block, std::vector<std::vector<std::string>>& results) {
  constexpr int R = results_per_lane<Batches, W>;
  warp_exchange_storage<partial, 32> storage;
  block.run([&](host_lane& lane) {
    const int logical = lane.id() % W;
    array<partial, Batches> values;
    for (int b = 0; b < Batches; ++b) values[b] = input_of(b, logical);
    array<partial, R> r;
    if constexpr (A == multi_reduce_algorithm::shared_exchange) r = warp_multi_reduce<Batches, W>(lane, values, join_ranges{}, storage);
    else r = warp_multi_reduce<Batches, W, A>(lane, values, join_ranges{});
    for (int j = 0; j < R; ++j) results[static_cast<std::size_t>(lane.id())].push_back(to_trace_string(r[j]));
  });
}

// Finds the instantiation for the run-time choice and runs it.
bool dispatch(const trace_options& o, host_block& block, std::vector<std::vector<std::string>>& results) {
  bool found = false;
  detail::for_each_index<std::size(all_multi_reduce_algorithms)>([&](auto ai) {
    constexpr auto A = all_multi_reduce_algorithms[decltype(ai)::value];
    if (A != o.algorithm) return;
    detail::for_each_index<std::size(trace_batches)>([&](auto bi) {
      constexpr int B = trace_batches[decltype(bi)::value];
      if (B != o.batches) return;
      detail::for_each_index<std::size(trace_widths)>([&](auto wi) {
        constexpr int W = trace_widths[decltype(wi)::value];
        if (W != o.width) return;
        run_symbolic<A, B, W>(block, results);
        found = true;
      });
    });
  });
  return found;
}

}  // namespace

bool trace_supported(int batches, int width) {
  bool b = false, w = false;
  for (int x : trace_batches) b = b || x == batches;
  for (int x : trace_widths) w = w || x == width;
  return b && w;
}

/// `text` right-aligned (left-aligned when `left`) in `width` columns.
static std::string pad(const std::string& text, std::size_t width, bool left = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

std::string trace_table(const trace_options& o) {
  if (!trace_supported(o.batches, o.width))
    throw std::invalid_argument(std::string("the trace takes batches ") + trace_batches_text + " and widths " +
                                trace_widths_text);
  host_block block(32, 1);
  block.set_tracing(true);
  std::vector<std::vector<std::string>> results(32);
  dispatch(o, block, results);

  // Group the events by lane; the code is uniform, so every lane has the same sequence.
  std::vector<std::vector<const trace_event*>> by_lane(32);
  for (const auto& e : block.trace()) by_lane[static_cast<std::size_t>(e.thread)].push_back(&e);
  const int lanes = o.width;
  const std::size_t steps = by_lane[0].size();

  std::string t = "multireduce trace: " + std::to_string(o.batches) + " batches, " + std::string(to_string(o.algorithm)) +
                  " on a logical warp of " + std::to_string(o.width) + " lanes\n";
  t += "Each cell: the partial reduction the lane holds after the step; a0..3 = batch a over lanes 0..3, ? = mixed/unused.\n\n";
  const std::size_t cell = o.batches <= 4 ? std::size_t(3 * o.batches + 2) : 9;  // "a0,b0,c0,d0" plus a gap
  auto row_head = [&](const std::string& step, const std::string& what) { t += pad(step, 4) + " " + pad(what, 22, true); };
  row_head("step", "operation");
  for (int l = 0; l < lanes; ++l) t += pad("lane " + std::to_string(l), cell);
  t += "\n";
  row_head("", "input");
  for (int l = 0; l < lanes; ++l) {
    // Up to 4 batches: all of them ("a0,b0,c0,d0"); more: the first and an ellipsis ("a0..").
    std::string in;
    for (int b = 0; b < (o.batches <= 4 ? o.batches : 1); ++b) in += (b ? "," : "") + to_trace_string(input_of(b, l));
    if (o.batches > 4) in += "..";
    t += pad(in, cell);
  }
  t += "\n";
  for (std::size_t s = 0; s < steps; ++s) {
    const trace_event& first = *by_lane[0][s];
    const std::string what = first.what == trace_event::kind::op
                                 ? (first.after.empty() ? std::string("op (shared memory)") : "op after " + first.after)
                                 : std::string("select (merge/swap)");
    row_head(std::to_string(s + 1), what);
    for (int l = 0; l < lanes; ++l) {
      const auto& lane_events = by_lane[static_cast<std::size_t>(l)];
      t += pad(s < lane_events.size() ? lane_events[s]->value : "", cell);
    }
    t += "\n";
  }
  row_head("", "result");
  for (int l = 0; l < lanes; ++l) {
    std::string r;
    for (const auto& x : results[static_cast<std::size_t>(l)]) r += (r.empty() ? "" : ",") + x;
    t += pad(r, cell);
  }
  const auto& c = block.counts(0);
  t += "\n\nper warp: " + std::to_string(c.shuffles) + " shuffles, " + std::to_string(c.operator_applications) +
       " operator applications, " + std::to_string(c.selects) + " selects, " + std::to_string(c.syncs) + " warp syncs\n";
  return t;
}

}  // namespace multireduce::runtime
