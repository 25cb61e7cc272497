// cpu_backend.cpp -- `multireduce reduce|stats` on the CPU: one reduce_job, whatever its shape,
// run through multireduce::cpu with NumPy's result types.
#include "cpu_backend.hpp"

#include <cstring>
#include <limits>
#include <multireduce/cpu.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace multireduce::cli {

namespace {

/// The outputs of one job's shape, op applied with accumulator Acc; `in` yields the elements.
template <class Acc, class It, class Op>
std::vector<Acc> run_shape(It in, const reduce_job& job, Op op, Acc init) {
  std::vector<Acc> out;
  switch (job.shape) {
    case shape_kind::whole:
      out.push_back(cpu::reduce(in, job.n, op, init));
      break;
    case shape_kind::fixed_segments:
      out.resize(static_cast<std::size_t>(job.segments));
      cpu::fixed_segmented_reduce(in, out.data(), job.segments, job.length, op, init);
      break;
    case shape_kind::offsets:
      out.resize(static_cast<std::size_t>(job.segments));
      cpu::segmented_reduce(in, job.n, out.data(), job.segments, job.offsets, job.offsets + 1, op, init);
      break;
    case shape_kind::window:
      out.resize(static_cast<std::size_t>(job.n >= job.length ? job.n - job.length + 1 : 0));
      cpu::window_reduce(in, job.n, job.length, out.data(), op, init);
      break;
  }
  return out;
}

/// Where output i's segment or window starts: argmin/argmax report positions relative to it.
std::int64_t start_of(const reduce_job& job, std::int64_t i) {
  switch (job.shape) {
    case shape_kind::whole:
      return 0;
    case shape_kind::fixed_segments:
      return i * job.length;
    case shape_kind::offsets:
      return job.offsets[i];
    case shape_kind::window:
      return i;
  }
  return 0;
}

template <class R>
reduce_output make_output(const std::vector<R>& values) {
  reduce_output out;
  out.type = npy::dtype_of<R>();
  out.count = static_cast<std::int64_t>(values.size());
  out.data.resize(values.size() * sizeof(R));
  if (!values.empty()) std::memcpy(out.data.data(), values.data(), out.data.size());
  return out;
}

/// float16 results of a float32 computation: rounded back.
reduce_output make_float16_output(const std::vector<float>& values) {
  std::vector<npy::float16_bits> h(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) h[i] = npy::to_float16(values[i]);
  return make_output(h);
}

/// argmin / argmax of every segment or window, as int64 positions within it (-1 when empty).
template <class ArgOp, class T>
std::vector<std::int64_t> arg_extremes(const T* in, const reduce_job& job) {
  using kv = key_value<T, std::int64_t>;
  std::vector<kv> found;
  if (job.shape == shape_kind::whole) {
    // The dedicated whole-array search (vectorised), same rules.
    found.push_back(std::is_same_v<ArgOp, multireduce::argmin> ? cpu::argmin(in, job.n) : cpu::argmax(in, job.n));
  } else {
    found = run_shape(cpu::indexed(in), job, ArgOp{}, ArgOp::template identity<kv>());
  }
  std::vector<std::int64_t> index(found.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::int64_t at = found[i].index;
    // The identity's index (max) or the whole-array -1: nothing was there.
    index[i] = at < 0 || at == std::numeric_limits<std::int64_t>::max()
                   ? -1
                   : at - start_of(job, static_cast<std::int64_t>(i));
  }
  return index;
}

/// The job on elements of T (float16 arrives here widened to float, with Half = true).
template <class T, bool Half = false>
reduce_output reduce_typed(const T* in, const reduce_job& job) {
  constexpr bool integral = std::is_integral_v<T>;
  using sum_t = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
  auto finish = [](const std::vector<T>& v) {
    if constexpr (Half)
      return make_float16_output(v);
    else
      return make_output(v);
  };
  // Integer sum/prod accumulate in uint64, where wrapping is defined (signed overflow is not in
  // C++), and are reported as int64 or uint64: the same bits as NumPy's wrapping int64.
  auto integer_result = [](const std::vector<std::uint64_t>& v) {
    std::vector<sum_t> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = static_cast<sum_t>(v[i]);
    return make_output(r);
  };
  switch (job.op) {
    case op_kind::sum:
      if constexpr (integral)
        return integer_result(run_shape(in, job, sum{}, std::uint64_t{0}));
      else
        return finish(run_shape(in, job, sum{}, T{0}));
    case op_kind::prod:
      if constexpr (integral)
        return integer_result(run_shape(in, job, product{}, std::uint64_t{1}));
      else
        return finish(run_shape(in, job, product{}, T{1}));
    case op_kind::min:
      return finish(run_shape(in, job, minimum{}, minimum::identity<T>()));
    case op_kind::max:
      return finish(run_shape(in, job, maximum{}, maximum::identity<T>()));
    case op_kind::bit_and:
    case op_kind::bit_or:
    case op_kind::bit_xor:
      if constexpr (integral) {
        if (job.op == op_kind::bit_and) return make_output(run_shape(in, job, bit_and{}, bit_and::identity<T>()));
        if (job.op == op_kind::bit_or) return make_output(run_shape(in, job, bit_or{}, bit_or::identity<T>()));
        return make_output(run_shape(in, job, bit_xor{}, bit_xor::identity<T>()));
      } else {
        throw std::invalid_argument("bitwise operators need an integer dtype");
      }
    case op_kind::argmin:
      return make_output(arg_extremes<multireduce::argmin>(in, job));
    case op_kind::argmax:
      return make_output(arg_extremes<multireduce::argmax>(in, job));
  }
  throw std::logic_error("cpu_reduce: unknown operator");
}

std::vector<float> widen(const npy::float16_bits* data, std::int64_t n) {
  std::vector<float> f(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = npy::to_float(data[i]);
  return f;
}

}  // namespace

reduce_output cpu_reduce(const reduce_job& job) {
  return npy::visit(job.type, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_same_v<T, npy::float16_bits>) {
      const std::vector<float> wide = widen(static_cast<const npy::float16_bits*>(job.data), job.n);
      return reduce_typed<float, true>(wide.data(), job);
    } else {
      return reduce_typed(static_cast<const T*>(job.data), job);
    }
  });
}

template <class T>
statistics<T> cpu_statistics(const T* data, std::int64_t n) {
  return cpu::stats(data, n);
}

statistics<float> cpu_statistics(const npy::float16_bits* data, std::int64_t n) {
  const std::vector<float> wide = widen(data, n);
  return cpu::stats(wide.data(), n);
}

#define MULTIREDUCE_INSTANTIATE(T) template statistics<T> cpu_statistics(const T*, std::int64_t);
MULTIREDUCE_CLI_STATISTICS_TYPES(MULTIREDUCE_INSTANTIATE)
#undef MULTIREDUCE_INSTANTIATE

int cpu_threads() { return cpu::max_threads(); }


}  // namespace multireduce::cli
