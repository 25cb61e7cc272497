// runtime/opencl/statistics.cpp -- the statistics of an array on an OpenCL device (float64 sums:
// cl_khr_fp64): each piece's parts take their shifted sums around the piece's first finite value,
// and the parts merge on the host in order (Chan et al.), as the CPU backend's chunks do. Host
// data goes through the device a piece at a time; an array in OpenCL memory is the one piece.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include <multireduce/cpu/statistics.hpp>
#include <multireduce/statistics.hpp>

#include "../pieces.hpp"
#include "context.hpp"
#include "jobs.hpp"

namespace multireduce::runtime::opencl_backend_detail {
namespace {

/// statistics.cl's stats_state.
template <class E>
struct device_state {
  std::int64_t count;
  std::conditional_t<std::is_floating_point_v<E>, double, std::uint64_t> sum;
  double s1, s2, l1, squares;
  key_value<E, std::int64_t> min, max;
};

template <class T>
any_statistics statistics_typed(device& d, device_input& in, job_clock& clock, const progress_report& progress) {
  using E = value_t<T>;
  using state = device_state<E>;
  using accumulator = statistics_accumulator<E>;
  static_assert(sizeof(state) == 80, "statistics.cl's stats_state");
  const dtype type = in.type();
  const std::int64_t n = in.count(), cap = in.cap();
  growing_buffer states{{}, 0, "the parts' statistics"};
  accumulator total;
  for (std::int64_t first = 0; first < n; first += cap) {
    const std::int64_t count = std::min(cap, n - first);
    const void* data = in.head(first, std::min<std::int64_t>(count, 64));
    double shift = 0;  // the piece's first finite value: near the data
    for (std::int64_t i = 0; i < std::min<std::int64_t>(count, 64); ++i) {
      double v;
      if constexpr (std::is_same_v<T, float16_bits>) v = to_float(static_cast<const float16_bits*>(data)[i]);
      else v = static_cast<double>(static_cast<const T*>(data)[i]);
      if (std::isfinite(v)) {
        shift = v;
        break;
      }
    }
    const cl::Buffer& b = in.load(first, count);
    const std::int64_t parts = statistics_parts(d, count);
    const cl::Buffer& s = states.at_least(d, std::size_t(parts) * sizeof(state));
    events ev;
    opencl::statistics(d, type, b, count, shift, s, &ev);
    clock.add(ev);
    const auto host = download(d, s, std::size_t(parts) * sizeof(state));
    auto part_state = [&](const state& st) {
      const auto sum = static_cast<typename accumulator::sum_type>(st.sum);
      return accumulator::from_shifted_sums(st.count, shift, st.s1, st.s2, sum, st.l1, st.squares, st.min.value,
                                            st.min.index + first, st.max.value, st.max.index + first);
    };
    // float64: values near double's largest, an inf or a NaN can make a part's count shift + s1
    // inf - inf (statistics.hpp). Then the piece is taken again on the host by the CPU backend,
    // whose chunks take the scaled cold path, as the runtime's pieces are merged.
    [[maybe_unused]] const accumulator before = total;
    [[maybe_unused]] bool overflowed = false;
    for (std::int64_t g = 0; g < parts; ++g) {
      const state st = element_at<state>(host, std::size_t(g));
      if (st.count == 0) continue;
      total = accumulator::merge(total, part_state(st));
      if constexpr (accumulator::shifted_sums_may_overflow)
        overflowed = overflowed || accumulator::shifted_sums_overflowed(st.count, shift, st.s1, st.s2) ||
                     !(st.sum - st.sum == 0);
    }
    if constexpr (accumulator::shifted_sums_may_overflow) {
      if (overflowed) {
        std::vector<E> values(static_cast<std::size_t>(count));
        std::memcpy(values.data(), download(d, b, values.size() * sizeof(E)).data(), values.size() * sizeof(E));
        const auto piece = multireduce::cpu::statistics(values.data(), count);
        total = accumulator::merge(before, accumulator::of_result(piece, first));
      }
    }
    progress(first + count);
  }
  return total.result();
}

}  // namespace

void statistics_source(array_source& in, any_statistics& out, const execution& exec, report& r) {
  const int ordinal = exec.devices.first();
  on_device(ordinal, "the statistics", [&](device& d) {
    job_clock clock{d};
    const progress_report progress{exec, in.count()};
    uploaded_input pieces{d, in};
    visit(in.type(), [&](auto element) { out = statistics_typed<decltype(element)>(d, pieces, clock, progress); });
    clock.report_to(r, d, ordinal);
  });
  r.bytes_read = in.count() * std::int64_t(size_of(in.type()));
}

void statistics_arrays(const array_view& in, const output_view& out, const execution& exec, report& r) {
  if (in.where.is_host())
    throw std::invalid_argument("the OpenCL backend takes an output in OpenCL memory only for an input there too");
  queue_device q = on_queue(exec.stream);
  device& d = q.d;
  try {
    resident_input whole{d, in, buffer_at(d, in.data, std::size_t(in.count) * size_of(in.type), "the input")};
    const cl::Buffer out_buffer =
        out.where.is_host() ? cl::Buffer() : buffer_at(d, out.data, std::size_t(out.count), "the output");
    job_clock clock{d, false};
    const progress_report progress{exec, in.count};
    visit(in.type, [&](auto element) {
      const any_statistics result = statistics_typed<decltype(element)>(d, whole, clock, progress);
      std::visit(
          [&](const auto& s) {
            const auto* b = reinterpret_cast<const std::byte*>(&s);
            deliver(d, out, out_buffer, std::vector<std::byte>(b, b + sizeof s));
          },
          result);
    });
  } catch (const cl::Error& e) {
    fail(e, "the statistics on " + d.name);
  }
  r.device = q.ordinal;
  r.device_name = d.name;
  r.bytes_read = in.count * std::int64_t(size_of(in.type));
  r.bytes_written = out.count;
}

}  // namespace multireduce::runtime::opencl_backend_detail
