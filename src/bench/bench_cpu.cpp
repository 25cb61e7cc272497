// bench_cpu.cpp -- suite "cpu": the CPU backend against this machine's measured read bandwidth.
//
// Inputs are multiples of 1/1024 in [0.5, 1.5): every window and segment sum timed here (at most
// 4096 terms) is exact in float, so those results are compared exactly; the long reductions are
// compared with a relative tolerance. Bytes counted: elements read plus results written. The
// fraction is of the read bandwidth, the ceiling of a streaming reduction.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <multireduce/cpu.hpp>

#if defined(_OPENMP)
#include <omp.h>
#define MULTIREDUCE_BENCH_PRAGMA(...) _Pragma(#__VA_ARGS__)
#define MULTIREDUCE_BENCH_OMP(...) MULTIREDUCE_BENCH_PRAGMA(omp __VA_ARGS__)
#else
#define MULTIREDUCE_BENCH_OMP(...)
#endif

namespace multireduce::bench {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::int64_t bandwidth_elements = std::int64_t{1} << 28;  ///< 1 GiB of float

/// Element i of every input: a multiple of 1/1024 in [0.5, 1.5), from a cheap integer hash.
float input_value(std::int64_t i) {
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return 0.5f + static_cast<float>(h & 1023u) / 1024.0f;
}

/// Seconds of one call.
double seconds_of(const std::function<void()>& f) {
  const auto t0 = clock_type::now();
  f();
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median_seconds(const std::function<void()>& f, int repetitions) {
  f();  // warm-up: page faults, thread pool start, caches
  std::vector<double> t(static_cast<std::size_t>(repetitions));
  for (auto& s : t) s = seconds_of(f);
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

/// The baseline: a streaming sum on all cores, each thread over one contiguous range with 32
/// independent float lanes, so that it is limited by memory, not by the add latency.
double streaming_sum(const float* a, std::int64_t n) {
  double total = 0;
  MULTIREDUCE_BENCH_OMP(parallel reduction(+ : total))
  {
#if defined(_OPENMP)
    const std::int64_t thread = omp_get_thread_num(), threads = omp_get_num_threads();
#else
    const std::int64_t thread = 0, threads = 1;
#endif
    const std::int64_t begin = n * thread / threads, end = n * (thread + 1) / threads;
    constexpr std::int64_t block = 1 << 14;  // float lanes for a block, then a double total
    for (std::int64_t b = begin; b < end; b += block) {
      const std::int64_t block_end = std::min(end, b + block);
      float lanes[32] = {};
      std::int64_t i = b;
      for (; i + 32 <= block_end; i += 32)
        for (int j = 0; j < 32; ++j) lanes[j] += a[i + j];
      for (; i < block_end; ++i) lanes[0] += a[i];
      double s = 0;
      for (const float l : lanes) s += l;
      total += s;
    }
  }
  return total;
}

struct suite_state {
  int repetitions;
  double read_gbs = 0;
  int failures = 0;
  nlohmann::json results = nlohmann::json::array();
};

/// Verifies (check returns an error message, empty when right), then times and reports one case.
void run_case(suite_state& st, const std::string& name, const std::string& params, std::int64_t elements,
              double bytes, const std::function<void()>& run, const std::function<std::string()>& check) {
  run();
  const std::string error = check();
  nlohmann::json row = {{"name", name}, {"params", params}, {"T", "float"}, {"Elements", elements}};
  if (!error.empty()) {
    ++st.failures;
    fmt::print("{:<24} {:<14} {:>11}  WRONG: {}\n", name, params, elements, error);
    row["verified"] = false;
    row["error"] = error;
    st.results.push_back(row);
    return;
  }
  const double s = median_seconds(run, st.repetitions);
  const double gbs = bytes / s / 1e9;
  const double fraction = gbs / st.read_gbs;
  fmt::print("{:<24} {:<14} {:>11} {:>10.3f} {:>9.2f} {:>9.1f}%\n", name, params, elements, s * 1e3, gbs,
             100.0 * fraction);
  row["verified"] = true;
  row["median_ms"] = s * 1e3;
  row["bytes"] = bytes;
  row["GBps"] = gbs;
  row["fraction_of_read_bandwidth"] = fraction;
  st.results.push_back(row);
}

std::string relative_error_message(double got, double want, double tolerance) {
  const double err = std::abs(got - want) / std::max(std::abs(want), 1e-300);
  if (err <= tolerance) return {};
  return fmt::format("got {:.9g}, want {:.9g} (relative error {:.2g} > {:.2g})", got, want, err, tolerance);
}

/// The first i where got[i] != want(i), as a message; empty if none.
template <class Want>
std::string first_mismatch(const std::vector<float>& got, std::int64_t count, Want want) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double w = want(i);
    if (static_cast<double>(got[static_cast<std::size_t>(i)]) != w)
      return fmt::format("output {}: got {:.9g}, want {:.9g}", i, got[static_cast<std::size_t>(i)], w);
  }
  return {};
}

/// Measures the read bandwidth of all cores (a plain streaming float sum over 1 GiB, best of
/// several runs), then times cpu::reduce, cpu::statistics, cpu::fixed_segmented_reduce and
/// cpu::window_reduce (median of `repetitions` runs after a warm-up), each verified against a
/// straightforward loop first; prints a table and fills `record` ("threads", "read_bandwidth",
/// "results"). `quick`: smaller inputs and fewer runs. @return 0 when every result verified.
int run_cpu_suite(const options& opts, nlohmann::json& record) {
  const int repetitions = opts.repetitions;
  const bool quick = opts.quick;
  suite_state st{repetitions};
  const int threads = cpu::max_threads();
  const std::int64_t n_main = quick ? std::int64_t{1} << 24 : std::int64_t{1} << 26;
  const std::vector<std::int64_t> reduce_sizes =
      quick ? std::vector<std::int64_t>{std::int64_t{1} << 24} : std::vector<std::int64_t>{std::int64_t{1} << 26, std::int64_t{1} << 28};

  // One 1 GiB input for everything, first touched by the threads that read it.
  std::vector<float> data(static_cast<std::size_t>(bandwidth_elements));
  float* x = data.data();
  MULTIREDUCE_BENCH_OMP(parallel for schedule(static))
  for (std::int64_t i = 0; i < bandwidth_elements; ++i) x[i] = input_value(i);
  std::vector<float> out(static_cast<std::size_t>(n_main));

  // ---- the ceiling ------------------------------------------------------------------------------
  {
    double expect = 0;  // exact: multiples of 1/1024, total < 2^53 / 1024
    for (std::int64_t i = 0; i < bandwidth_elements; ++i) expect += x[i];
    double best = 1e30, got = 0;
    for (int r = 0; r < (quick ? 3 : 7); ++r) best = std::min(best, seconds_of([&] { got = streaming_sum(x, bandwidth_elements); }));
    const std::string error = relative_error_message(got, expect, 1e-5);
    if (!error.empty()) {
      fmt::print(stderr, "bench cpu: the streaming baseline is wrong: {}\n", error);
      return 1;
    }
    st.read_gbs = 4.0 * static_cast<double>(bandwidth_elements) / best / 1e9;
  }
  fmt::print("multireduce bench cpu: {} thread(s); read bandwidth {:.2f} GB/s (streaming float sum over 1 GiB, best of {})\n",
             threads, st.read_gbs, quick ? 3 : 7);
  fmt::print("Median of {} runs; GB/s counts elements read plus results written; % of the read bandwidth.\n\n",
             repetitions);
  fmt::print("{:<24} {:<14} {:>11} {:>10} {:>9} {:>10}\n", "algorithm", "params", "Elements", "ms", "GB/s", "fraction");

  // ---- reduce ---------------------------------------------------------------------------------------
  for (const std::int64_t n : reduce_sizes) {
    float got = 0;
    run_case(st, "reduce sum", "", n, 4.0 * static_cast<double>(n), [&] { got = cpu::reduce(x, n, sum{}, 0.0f); },
             [&] {
               double want = 0;
               for (std::int64_t i = 0; i < n; ++i) want += x[i];
               return relative_error_message(got, want, 1e-5);
             });
  }

  // ---- stats ----------------------------------------------------------------------------------------
  {
    const std::int64_t n = n_main;
    statistics<float> got{};
    run_case(st, "stats", "", n, 4.0 * static_cast<double>(n), [&] { got = cpu::statistics(x, n); }, [&]() -> std::string {
      double mean = 0;
      for (std::int64_t i = 0; i < n; ++i) mean += x[i];
      mean /= static_cast<double>(n);
      double m2 = 0;
      for (std::int64_t i = 0; i < n; ++i) m2 += (x[i] - mean) * (x[i] - mean);
      const auto mn = std::min_element(x, x + n), mx = std::max_element(x, x + n);
      if (got.count != n || got.min != *mn || got.argmin != mn - x || got.max != *mx || got.argmax != mx - x)
        return fmt::format("count/min/argmin/max/argmax {} {} {} {} {}", got.count, got.min, got.argmin, got.max, got.argmax);
      if (auto e = relative_error_message(got.mean, mean, 1e-12); !e.empty()) return "mean: " + e;
      return relative_error_message(got.var, m2 / static_cast<double>(n), 1e-9);
    });
  }

  // ---- fixed-length segments ---------------------------------------------------------------------
  for (const std::int64_t length : {std::int64_t{1}, std::int64_t{32}, std::int64_t{4096}}) {
    const std::int64_t segments = n_main / length;
    run_case(st, "fixed_segmented sum", fmt::format("L={}", length), n_main,
             4.0 * static_cast<double>(n_main + segments),
             [&] { cpu::fixed_segmented_reduce(x, out.data(), segments, length, sum{}, 0.0f); }, [&] {
               return first_mismatch(out, segments, [&](std::int64_t s) {
                 double want = 0;
                 for (std::int64_t i = s * length; i < (s + 1) * length; ++i) want += x[i];
                 return want;
               });
             });
  }

  // ---- windows --------------------------------------------------------------------------------------
  for (const bool is_max : {false, true})
    for (const std::int64_t w : {std::int64_t{3}, std::int64_t{32}, std::int64_t{1000}}) {
      const std::int64_t n = n_main, outputs = n - w + 1;
      run_case(
          st, is_max ? "window max" : "window sum", fmt::format("W={}", w), n, 4.0 * static_cast<double>(n + outputs),
          [&] {
            if (is_max) cpu::window_reduce(x, n, w, out.data(), maximum{}, maximum::identity<float>());
            else cpu::window_reduce(x, n, w, out.data(), sum{}, 0.0f);
          },
          [&] {
            // Running max over a window via a monotone deque would be faster; a plain loop on a
            // sample of outputs (every 61st, plus the last) keeps the reference obviously right.
            std::vector<std::int64_t> sample;
            for (std::int64_t i = 0; i < outputs; i += 61) sample.push_back(i);
            sample.push_back(outputs - 1);
            for (const std::int64_t i : sample) {
              double want = is_max ? -INFINITY : 0.0;
              for (std::int64_t j = i; j < i + w; ++j) want = is_max ? std::max(want, double{x[j]}) : want + x[j];
              if (static_cast<double>(out[static_cast<std::size_t>(i)]) != want)
                return fmt::format("output {}: got {:.9g}, want {:.9g}", i, out[static_cast<std::size_t>(i)], want);
            }
            return std::string{};
          });
    }

  record["suite"] = "cpu";
  record["threads"] = threads;
  record["read_bandwidth"] = {{"GBps", st.read_gbs}, {"bytes", 4.0 * static_cast<double>(bandwidth_elements)},
                              {"method", "streaming float sum, all threads, best run"}};
  record["repetitions"] = repetitions;
  record["quick"] = quick;
  record["results"] = st.results;
  if (st.failures > 0) fmt::print("\n{} case(s) gave wrong results and were not timed\n", st.failures);
  return st.failures > 0 ? 1 : 0;
}

const bool registered = register_suite(
    {"cpu", "the CPU backend on this machine's cores against its read bandwidth", false, &run_cpu_suite});

}  // namespace

}  // namespace multireduce::bench
