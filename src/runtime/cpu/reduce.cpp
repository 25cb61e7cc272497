// runtime/cpu/reduce.cpp -- reductions on the CPU (multireduce::cpu, all cores with OpenMP), with
// NumPy's result types and values: float sums are NumPy's pairwise sums (pairwise.hpp), an axis
// other than the last is folded one row after another, as NumPy does. float16 is widened to
// float32 exactly, reduced in float32, and sum/prod/min/max are rounded back to float16 (to
// nearest even). Every job reads its array_source front to back, one piece at a time.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <multireduce/cpu.hpp>
#include <multireduce/match/cpu.hpp>

#include "../backend.hpp"
#include "../pairwise.hpp"
#include "../pieces.hpp"
#include "reading.hpp"

namespace multireduce::runtime::cpu_backend_detail {
namespace {

/// Writes accumulators as outputs: as they are (the output's dtype has the accumulator's size:
/// uint64 integer sums land as int64 with the same bits), or rounded to float16 (Half).
template <bool Half, class V>
void emit(const V* values, std::int64_t n, output_sink& out) {
  if (n == 0) return;
  if constexpr (Half) {
    std::vector<float16_bits> h(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) h[std::size_t(i)] = to_float16(values[i]);
    out.write(h.data(), n);
  } else {
    out.write(values, n);
  }
}

/// An argmin/argmax accumulator's output: its position, -1 when nothing was there (the identity's
/// index, max, or a whole array's -1).
template <class KV>
std::int64_t position_of(const KV& found, std::int64_t start) {
  return found.index < 0 || found.index == std::numeric_limits<std::int64_t>::max() ? -1 : found.index - start;
}

// ---- in-memory shapes: one piece of a fixed_segments, offsets or window job ---------------------

/// Segment s's bounds in a fixed_segments or offsets job.
inline void segment_bounds(const reduce_job& job, std::int64_t s, std::int64_t& b, std::int64_t& e) {
  if (job.shape == shape_kind::offsets) b = job.offsets[s], e = job.offsets[s + 1];
  else b = s * job.length, e = b + job.length;
}

/// NumPy's sum of every segment: its pairwise sum, segments on all cores (or, when there are few,
/// each segment's subtrees on all cores).
template <class E>
void pairwise_segments(const E* in, const reduce_job& job, E* out) {
  const std::int64_t segments = job.segments;
  if (segments >= 4 * std::int64_t(cpu::max_threads())) {
    MULTIREDUCE_OMP(parallel for schedule(dynamic, 16))
    for (std::int64_t s = 0; s < segments; ++s) {
      std::int64_t b, e;
      segment_bounds(job, s, b, e);
      out[s] = E(0) + pairwise::serial<E>(in + b, e - b);
    }
    return;
  }
  for (std::int64_t s = 0; s < segments; ++s) {
    std::int64_t b, e;
    segment_bounds(job, s, b, e);
    out[s] = E(0) + pairwise::parallel<E>(in + b, e - b);
  }
}

/// The outputs of one piece (`job` on the elements at `in`), op applied with accumulator Acc.
template <class Acc, class It, class Op>
std::vector<Acc> run_shape(It in, const reduce_job& job, Op op, Acc init) {
  std::vector<Acc> out(static_cast<std::size_t>(output_count(job)));
  using E = std::remove_cv_t<std::remove_pointer_t<It>>;
  if constexpr (std::is_same_v<Op, multireduce::sum> && std::is_floating_point_v<E>) {
    if (job.shape != shape_kind::window) {
      pairwise_segments(in, job, out.data());
      return out;
    }
  }
  switch (job.shape) {
    case shape_kind::fixed_segments:
      cpu::fixed_segmented_reduce(in, out.data(), job.segments, job.length, op, init);
      break;
    case shape_kind::offsets:
      cpu::segmented_reduce(in, job.input.count, out.data(), job.segments, job.offsets, job.offsets + 1, op, init);
      break;
    case shape_kind::window:
      cpu::window_reduce(in, job.input.count, job.length, out.data(), op, init);
      break;
    default:
      throw std::logic_error("run_shape: not a piecewise shape");
  }
  return out;
}

/// Where output i's segment or window starts: argmin/argmax report positions relative to it.
std::int64_t start_of(const reduce_job& job, std::int64_t i) {
  switch (job.shape) {
    case shape_kind::fixed_segments: return i * job.length;
    case shape_kind::offsets: return job.offsets[i];
    case shape_kind::window: return i;
    default: return 0;
  }
}

/// float32 window sums, accumulated in float64 and rounded once: within half an ulp of the exact
/// sum plus W 2^-53 sum|x| (NumPy's pairwise sum of a window is within about log2(W) 2^-24 sum|x|;
/// the float32 folds of van Herk's order, (W - 1) 2^-24 sum|x|, were ten times NumPy's error at
/// W = 1000). The cost (none measurable): tuning log, "window_reduce (CPU): float32 sums in float64".
void emit_float32_windows(const float* in, const reduce_job& job, output_sink& out) {
  std::vector<float> sums(static_cast<std::size_t>(output_count(job)));  // (each double sum rounded as stored)
  cpu::window_reduce(in, job.input.count, job.length, sums.data(), multireduce::sum{}, 0.0);
  emit<false>(sums.data(), std::int64_t(sums.size()), out);
}

/// One piece of a fixed_segments, offsets or window job, its outputs to `out`.
template <class T>
void run_piece(const element_t<T>* in, const reduce_job& job, output_sink& out) {
  using E = element_t<T>;
  constexpr bool half = std::is_same_v<T, float16_bits>;
  if (info(job.op).positional) {
    using kv = key_value<E, std::int64_t>;
    const auto found = job.op == op_kind::argmin
                           ? run_shape(cpu::indexed(in), job, multireduce::argmin{}, multireduce::argmin::identity<kv>())
                           : run_shape(cpu::indexed(in), job, multireduce::argmax{}, multireduce::argmax::identity<kv>());
    std::vector<std::int64_t> index(found.size());
    for (std::size_t i = 0; i < found.size(); ++i) index[i] = position_of(found[i], start_of(job, std::int64_t(i)));
    return emit<false>(index.data(), std::int64_t(index.size()), out);
  }
  visit_value_op<E>(job.op, [&](auto op, auto init) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<decltype(op), multireduce::sum>) {
      if (job.shape == shape_kind::window) return emit_float32_windows(in, job, out);
    }
    const auto values = run_shape(in, job, op, init);
    emit<half>(values.data(), std::int64_t(values.size()), out);
  });
}

// ---- the shapes over a source --------------------------------------------------------------------

template <class T>
void reduce_pieces(const reduce_job& job, array_source& in, output_sink& out, const progress_report& progress) {
  element_reader<T> reader(in);
  pieces::for_each(job, piece_cap<T>(in), [&](pieces::piece& p) {
    run_piece<T>(reader.read(p.first, p.count), p.sub, out);
    progress(p.first + p.count);
  });
}

template <class T>
void reduce_whole(const reduce_job& job, array_source& in, output_sink& out, const progress_report& progress) {
  using E = element_t<T>;
  constexpr bool half = std::is_same_v<T, float16_bits>;
  const std::int64_t n = in.count(), cap = piece_cap<T>(in);
  if constexpr (std::is_floating_point_v<E>) {
    if (job.op == op_kind::sum) {  // NumPy's pairwise sum, each piece a subtree (float16 widened on the fly)
      const E total = E(0) + pairwise::over_pieces<E>(0, n, cap, [&](std::int64_t first, std::int64_t count) {
        const E s = pairwise::parallel<E>(static_cast<const T*>(in.read(first, count)), count);
        progress(first + count);
        return s;
      });
      return emit<half>(&total, 1, out);
    }
  }
  element_reader<T> reader(in);
  if (info(job.op).positional) {
    key_value<E, std::int64_t> best{E{}, -1};
    for (std::int64_t first = 0; first < n; first += cap) {
      const std::int64_t count = std::min(cap, n - first);
      const E* p = reader.read(first, count);
      auto found = job.op == op_kind::argmin ? cpu::argmin(p, count) : cpu::argmax(p, count);
      found.index += first;
      best = best.index < 0 ? found : job.op == op_kind::argmin ? multireduce::argmin{}(best, found)
                                                                 : multireduce::argmax{}(best, found);
      progress(first + count);
    }
    const std::int64_t index = best.index;
    return emit<false>(&index, 1, out);
  }
  visit_value_op<E>(job.op, [&](auto op, auto init) {
    auto acc = init;
    for (std::int64_t first = 0; first < n; first += cap) {
      const std::int64_t count = std::min(cap, n - first);
      acc = cpu::reduce(reader.read(first, count), count, op, acc);
      progress(first + count);
    }
    emit<half>(&acc, 1, out);
  });
}

/// Folds the rows of one axis into accumulators, NumPy's way for an axis that is not the last: row
/// k of outer block o is folded into acc[o][...] after row k - 1 (a float sum adds one row after
/// another). Pieces hold whole outer blocks when one fits, else whole rows.
template <class T, class Acc, class Fold, class Emit>
void fold_axis(const reduce_job& job, array_source& in, Acc init, Fold&& fold, Emit&& emit_block,
               const progress_report& progress) {
  using E = element_t<T>;
  const std::int64_t outer = job.segments, rows = job.length, inner = job.inner;
  const std::int64_t block_elements = rows * inner, cap = piece_cap<T>(in);
  element_reader<T> reader(in);
  std::vector<Acc> acc(static_cast<std::size_t>(inner));
  if (block_elements <= cap) {  // whole outer blocks per piece, blocks on all cores
    const std::int64_t per = std::max<std::int64_t>(1, cap / std::max<std::int64_t>(block_elements, 1));
    std::vector<Acc> accs;
    for (std::int64_t o = 0; o < outer; o += per) {
      const std::int64_t blocks = std::min(per, outer - o);
      const E* p = reader.read(o * block_elements, blocks * block_elements);
      accs.assign(static_cast<std::size_t>(blocks * inner), init);
      MULTIREDUCE_OMP(parallel for schedule(static) if(blocks > 1))
      for (std::int64_t b = 0; b < blocks; ++b)
        for (std::int64_t k = 0; k < rows; ++k) fold(accs.data() + b * inner, p + (b * rows + k) * inner, inner, k);
      emit_block(accs.data(), blocks * inner);
      progress((o + blocks) * block_elements);
    }
    return;
  }
  const std::int64_t rows_per_piece = std::max<std::int64_t>(1, cap / inner);
  for (std::int64_t o = 0; o < outer; ++o) {
    acc.assign(static_cast<std::size_t>(inner), init);
    for (std::int64_t k = 0; k < rows; k += rows_per_piece) {
      const std::int64_t count = std::min(rows_per_piece, rows - k);
      const E* p = reader.read((o * rows + k) * inner, count * inner);
      for (std::int64_t r = 0; r < count; ++r) {
        // Long rows: their columns on all cores.
        const std::int64_t parts = inner >= (1 << 15) ? std::int64_t(cpu::max_threads()) : 1;
        MULTIREDUCE_OMP(parallel for if(parts > 1))
        for (std::int64_t part = 0; part < parts; ++part) {
          const std::int64_t b = inner * part / parts, e = inner * (part + 1) / parts;
          fold(acc.data() + b, p + r * inner + b, e - b, k + r);
        }
      }
      progress((o * rows + k + count) * inner);
    }
    emit_block(acc.data(), inner);
  }
}

template <class T>
void reduce_axis(const reduce_job& job, array_source& in, output_sink& out, const progress_report& progress) {
  using E = element_t<T>;
  constexpr bool half = std::is_same_v<T, float16_bits>;
  if (info(job.op).positional) {
    using kv = key_value<E, std::int64_t>;
    const bool smallest = job.op == op_kind::argmin;
    std::vector<std::int64_t> index;
    fold_axis<T>(
        job, in, smallest ? multireduce::argmin::identity<kv>() : multireduce::argmax::identity<kv>(),
        [smallest](kv* acc, const E* row, std::int64_t n, std::int64_t k) {
          for (std::int64_t i = 0; i < n; ++i)
            acc[i] = smallest ? multireduce::argmin{}(acc[i], kv{row[i], k}) : multireduce::argmax{}(acc[i], kv{row[i], k});
        },
        [&](const kv* acc, std::int64_t n) {
          index.resize(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i) index[std::size_t(i)] = position_of(acc[i], 0);
          emit<false>(index.data(), n, out);
        },
        progress);
    return;
  }
  visit_value_op<E>(job.op, [&](auto op, auto init) {
    using Acc = decltype(init);
    fold_axis<T>(
        job, in, init,
        [op](Acc* acc, const E* row, std::int64_t n, std::int64_t) {
          for (std::int64_t i = 0; i < n; ++i) acc[i] = op(acc[i], static_cast<Acc>(row[i]));
        },
        [&](const Acc* acc, std::int64_t n) { emit<half>(acc, n, out); }, progress);
  });
}


}  // namespace

void reduce_on_cpu(const reduce_job& job, array_source& in, output_sink& out, const execution& exec) {
  const progress_report progress{exec, in.count()};
  visit(in.type(), [&](auto element) {
    using T = decltype(element);
    switch (job.shape) {
      case shape_kind::whole: return reduce_whole<T>(job, in, out, progress);
      case shape_kind::axis: return reduce_axis<T>(job, in, out, progress);
      default: return reduce_pieces<T>(job, in, out, progress);
    }
  });
}

}  // namespace multireduce::runtime::cpu_backend_detail
