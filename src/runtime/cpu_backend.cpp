// runtime/cpu_backend.cpp -- the runtime's jobs on the CPU (multireduce::cpu, all cores with
// OpenMP), with NumPy's result types. float16 is widened to float32 exactly, reduced in float32,
// and sum/prod/min/max are rounded back to float16 (to nearest even).
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <multireduce/cpu.hpp>
#include <multireduce/match/cpu.hpp>

#include "backends.hpp"

namespace multireduce::runtime::backends {
namespace {

/// The outputs of the job's shape, op applied with accumulator Acc; `in` yields the elements.
template <class Acc, class It, class Op>
std::vector<Acc> run_shape(It in, const reduce_job& job, Op op, Acc init) {
  std::vector<Acc> out(static_cast<std::size_t>(output_count(job)));
  const std::int64_t n = job.input.count;
  switch (job.shape) {
    case shape_kind::whole:
      out[0] = cpu::reduce(in, n, op, init);
      break;
    case shape_kind::fixed_segments:
      cpu::fixed_segmented_reduce(in, out.data(), job.segments, job.length, op, init);
      break;
    case shape_kind::offsets:
      cpu::segmented_reduce(in, n, out.data(), job.segments, job.offsets, job.offsets + 1, op, init);
      break;
    case shape_kind::window:
      cpu::window_reduce(in, n, job.length, out.data(), op, init);
      break;
  }
  return out;
}

/// Where output i's segment or window starts: argmin/argmax report positions relative to it.
std::int64_t start_of(const reduce_job& job, std::int64_t i) {
  switch (job.shape) {
    case shape_kind::whole: return 0;
    case shape_kind::fixed_segments: return i * job.length;
    case shape_kind::offsets: return job.offsets[i];
    case shape_kind::window: return i;
  }
  return 0;
}

/// Copies values into the output: as they are (the output's dtype has the accumulator's size:
/// uint64 integer sums land as int64 with the same bits), or rounded to float16 (Half).
template <bool Half, class V>
void store(const std::vector<V>& values, const output_view& out) {
  if constexpr (Half) {
    auto* to = static_cast<float16_bits*>(out.data);
    for (std::size_t i = 0; i < values.size(); ++i) to[i] = to_float16(values[i]);
  } else if (!values.empty()) {
    std::memcpy(out.data, values.data(), values.size() * sizeof(V));
  }
}

/// argmin / argmax of every segment or window, as int64 positions within it (-1 when empty).
template <class ArgOp, class T>
void arg_extremes(const T* in, const reduce_job& job, const output_view& out) {
  using kv = key_value<T, std::int64_t>;
  std::vector<kv> found;
  if (job.shape == shape_kind::whole) {
    // The dedicated whole-array search (vectorised), same rules.
    found.push_back(std::is_same_v<ArgOp, multireduce::argmin> ? cpu::argmin(in, job.input.count)
                                                               : cpu::argmax(in, job.input.count));
  } else {
    found = run_shape(cpu::indexed(in), job, ArgOp{}, ArgOp::template identity<kv>());
  }
  auto* index = static_cast<std::int64_t*>(out.data);
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::int64_t at = found[i].index;
    // The identity's index (max) or the whole-array -1: nothing was there.
    index[i] = at < 0 || at == std::numeric_limits<std::int64_t>::max() ? -1 : at - start_of(job, std::int64_t(i));
  }
}

/// The job on elements of T (Half: float16 widened to float, value results rounded back).
template <class T, bool Half = false>
void reduce_typed(const T* in, const reduce_job& job, const output_view& out) {
  if (job.op == op_kind::argmin) return arg_extremes<multireduce::argmin>(in, job, out);
  if (job.op == op_kind::argmax) return arg_extremes<multireduce::argmax>(in, job, out);
  visit_value_op<T>(job.op, [&](auto op, auto init) { store<Half>(run_shape(in, job, op, init), out); });
}

std::vector<float> widen(const float16_bits* data, std::int64_t n) {
  std::vector<float> f(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = to_float(data[i]);
  return f;
}

}  // namespace

void cpu_reduce(const reduce_job& job, const output_view& out) {
  visit(job.input.type, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_same_v<T, float16_bits>) {
      const std::vector<float> wide = widen(static_cast<const float16_bits*>(job.input.data), job.input.count);
      reduce_typed<float, true>(wide.data(), job, out);
    } else {
      reduce_typed(static_cast<const T*>(job.input.data), job, out);
    }
  });
}

any_statistics cpu_statistics(const array_view& in) {
  return visit(in.type, [&](auto element) -> any_statistics {
    using T = decltype(element);
    if constexpr (std::is_same_v<T, float16_bits>) {
      const std::vector<float> wide = widen(static_cast<const float16_bits*>(in.data), in.count);
      return cpu::statistics(wide.data(), in.count);
    } else {
      return cpu::statistics(static_cast<const T*>(in.data), in.count);
    }
  });
}

void cpu_knn(const knn_job& job, knn_result& out) {
  out.idx.assign(std::size_t(job.queries) * std::size_t(job.k), 0);
  out.dist.assign(out.idx.size(), 0);
  cpu::knn_hamming(job.query, job.queries, job.train, job.trains, job.bytes, job.k, out.idx.data(), out.dist.data());
  if (job.reverse) {
    out.reverse_nearest.assign(std::size_t(job.trains), 0);
    std::vector<std::int32_t> reverse_dist(out.reverse_nearest.size());
    cpu::knn_hamming(job.train, job.trains, job.query, job.queries, job.bytes, 1, out.reverse_nearest.data(),
                     reverse_dist.data());
  }
}

int cpu_threads() { return cpu::max_threads(); }

}  // namespace multireduce::runtime::backends
