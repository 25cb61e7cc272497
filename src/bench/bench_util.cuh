// bench_util.cuh -- what the GPU benchmark suites share: timing, the device description, the bench
// input and the harness that runs a suite on the GPU (private to src/bench). Buffers, events and
// error checks are the library's (multireduce/cuda/detail/).
#pragma once

#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>
#include <cub/version.cuh>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda/detail/device_buffer.cuh>
#include <multireduce/cuda/detail/error.cuh>
#include <multireduce/cuda/detail/stream.cuh>
#include <multireduce/cuda/workspace.cuh>
#include <multireduce/match/match.hpp>
#include <multireduce/operators.hpp>

#include "bench.hpp"

/// Checks a CUDA runtime call; a failure throws multireduce::cuda::error naming the call
/// (benchmarks stop at the first error rather than print figures of a broken run).
#define MULTIREDUCE_BENCH_CHECK(call) ::multireduce::cuda::check((call), #call)

namespace multireduce::bench {

using cuda::device_buffer;
using cuda::owned_event;

/// Per-launch times in milliseconds and their summary.
struct timing {
  std::vector<float> ms;  ///< one per timed launch, in launch order
  double median_ms = 0;
  double min_ms = 0;
};

/// Fills in the median and the minimum of t.ms.
inline timing summarized(timing t) {
  std::vector<float> sorted = t.ms;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) {
    const std::size_t n = sorted.size();
    t.median_ms = n % 2 == 1 ? sorted[n / 2] : 0.5 * (double(sorted[n / 2 - 1]) + double(sorted[n / 2]));
    t.min_ms = sorted.front();
  }
  return t;
}

/// Runs `launch` warmup times untimed, then `repetitions` times each between its own pair of
/// events on the default stream; synchronises once at the end so launches queue back to back.
template <class Launch>
timing time_launches(Launch&& launch, int warmup, int repetitions) {
  for (int i = 0; i < warmup; ++i) launch();
  MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
  std::vector<owned_event> starts(static_cast<std::size_t>(repetitions));
  std::vector<owned_event> stops(static_cast<std::size_t>(repetitions));
  for (int i = 0; i < repetitions; ++i) {
    MULTIREDUCE_BENCH_CHECK(cudaEventRecord(starts[static_cast<std::size_t>(i)].get()));
    launch();
    MULTIREDUCE_BENCH_CHECK(cudaEventRecord(stops[static_cast<std::size_t>(i)].get()));
  }
  MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
  timing t;
  for (int i = 0; i < repetitions; ++i) {
    float ms = 0;
    MULTIREDUCE_BENCH_CHECK(
        cudaEventElapsedTime(&ms, starts[static_cast<std::size_t>(i)].get(), stops[static_cast<std::size_t>(i)].get()));
    t.ms.push_back(ms);
  }
  return summarized(std::move(t));
}

/// Like time_launches, but the GPU is idle when each timed call is made (a synchronisation before
/// every call): one call's latency as a caller who waits for its result sees it, launch latency
/// included.
template <class Launch>
timing time_isolated(Launch&& launch, int warmup, int repetitions) {
  for (int i = 0; i < warmup; ++i) launch();
  owned_event start, stop;
  timing t;
  for (int i = 0; i < repetitions; ++i) {
    MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
    MULTIREDUCE_BENCH_CHECK(cudaEventRecord(start.get()));
    launch();
    MULTIREDUCE_BENCH_CHECK(cudaEventRecord(stop.get()));
    MULTIREDUCE_BENCH_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    MULTIREDUCE_BENCH_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    t.ms.push_back(ms);
  }
  return summarized(std::move(t));
}

/// The device-wide suites' float input: n multiples of 1/8 in [-125, 125] (exact sums for a
/// long way), from `seed`.
/// `n` random bytes (descriptors) from `seed`.
inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t r = g();
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) v[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
  }
  return v;
}

inline std::vector<float> bench_input(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g)) / 8.0f;
  return v;
}

/// |a - b| within float rounding of sums of this magnitude.
inline bool close(double got, double want, double magnitude) { return std::fabs(got - want) <= 1e-5 * magnitude + 1e-6; }

/// Device-to-device copy bandwidth (bytes read + written), 1 GiB: the ceiling of the segmented and
/// window suites.
inline double copy_bandwidth(int warmup, int repetitions) {
  const std::size_t bytes = std::size_t(1) << 30;
  device_buffer<char> a(bytes), b(bytes);
  MULTIREDUCE_BENCH_CHECK(cudaMemset(a.data(), 1, bytes));
  const timing t = time_launches([&] { MULTIREDUCE_BENCH_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice)); },
                                 warmup, std::max(5, repetitions / 4));
  return 2.0 * double(bytes) / (t.median_ms * 1e-3) / 1e9;
}

/// The floor under any one-launch pass over `bytes` bytes of device memory (16-byte aligned, a
/// multiple of 16): the fastest of several grid shapes of a kernel that only reads them, timed back
/// to back or isolated (bench.cu). The "read ceiling" of the published-kernel suites: bytes / floor.
double read_floor_us(const void* in, std::int64_t bytes, int sms, const options& opts, bool isolated);

/// One row of a published-kernel suite's table: a whole reduction of the suite's input by one
/// kernel of a document (or by CUB, or by multireduce), its value left at the device pointer
/// `result`.
template <class T>
struct ladder_step {
  std::string kernel;  ///< the document's name for it ("kernel 4: first add during global load")
  std::string source;  ///< where the document has it ("Harris 2007, 'Reduction #4'")
  std::function<void()> run;
  const T* result = nullptr;
  double published_gb_per_s = 0;  ///< the document's own figure for this kernel, 0 = none
};

/// The rows of one input size: poisons each step's result, runs it once and compares the value
/// with `want` exactly, then times the steps that verified (back to back, median), and prints the
/// document's table: time, GB/s (bytes read), step and cumulative speed-up (over the row before and
/// the first row), and the fraction of the read ceiling measured in this run (`ceiling_us`).
/// Appends one JSON object per step to `rows`. @return false when a step's value was wrong.
template <class T>
bool run_ladder(std::int64_t n, T want, std::vector<ladder_step<T>>& steps, double ceiling_us, const options& opts,
                nlohmann::json& rows) {
  const double bytes = double(n) * sizeof(T);
  std::printf("\nn = %lld (%.0f MB): read ceiling %.1f us = %.0f GB/s\n", (long long)n, bytes / 1e6, ceiling_us,
              bytes / (ceiling_us * 1e-6) / 1e9);
  std::printf("%-58s %11s %9s %8s %8s %9s\n", "kernel", "time us", "GB/s", "step x", "cumul x", "ceiling");
  bool ok = true;
  double first_us = 0, previous_us = 0;
  for (auto& step : steps) {
    MULTIREDUCE_BENCH_CHECK(cudaMemset(const_cast<T*>(step.result), 0x7f, sizeof(T)));
    step.run();
    MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
    T got{};
    MULTIREDUCE_BENCH_CHECK(cudaMemcpy(&got, step.result, sizeof(T), cudaMemcpyDeviceToHost));
    nlohmann::json row = {{"n", n}, {"kernel", step.kernel}, {"source", step.source}, {"verified", got == want}};
    if (step.published_gb_per_s > 0) row["published_gb_per_s"] = step.published_gb_per_s;
    if (!(got == want)) {
      std::printf("%-58s VERIFY FAILED: %lld, expected %lld\n", step.kernel.c_str(), (long long)got, (long long)want);
      ok = false;
      rows.push_back(row);
      continue;
    }
    const timing t = time_launches(step.run, opts.warmup, opts.repetitions);
    const double us = t.median_ms * 1e3;
    if (first_us == 0) first_us = us;
    const double step_x = previous_us > 0 ? previous_us / us : 1.0, cumulative_x = first_us / us;
    previous_us = us;
    const double gbps = bytes / (us * 1e-6) / 1e9;
    std::printf("%-58s %11.2f %9.1f %8.2f %8.2f %8.1f%%\n", step.kernel.c_str(), us, gbps, step_x, cumulative_x,
                100.0 * ceiling_us / us);
    row["us"] = us;
    row["gb_per_s"] = gbps;
    row["step_speedup"] = step_x;
    row["cumulative_speedup"] = cumulative_x;
    row["fraction_of_read_ceiling"] = ceiling_us / us;
    rows.push_back(row);
  }
  return ok;
}

/// CUB's DeviceReduce::Sum and this library's reduce, as the last two rows of a table.
template <class T>
void add_library_rows(std::vector<ladder_step<T>>& steps, const T* in, std::int64_t n, T* out_cub, T* out_ours,
                      device_buffer<char>& cub_temp, cuda::workspace& ws) {
  std::size_t cub_bytes = 0;
  MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(nullptr, cub_bytes, in, out_cub, n));
  if (cub_temp.size() < cub_bytes) cub_temp = device_buffer<char>(cub_bytes);
  char* temp = cub_temp.data();
  steps.push_back({"CUB " + std::to_string(CUB_MAJOR_VERSION) + "." + std::to_string(CUB_MINOR_VERSION) + "." +
                       std::to_string(CUB_SUBMINOR_VERSION) + " DeviceReduce::Sum",
                   "the toolkit's CUB",
                   [=]() mutable { MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(temp, cub_bytes, in, out_cub, n)); }, out_cub});
  steps.push_back({"multireduce reduce (workspace::reduce_async)", "this library",
                   [=, &ws] { ws.reduce_async(in, n, out_ours, multireduce::sum{}, T{0}); }, out_ours});
}

/// The GPU a suite runs on, as the suites need it (and as the JSON reports it).
struct device_info {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int clock_khz = 0;         ///< peak SM clock
  int memory_clock_khz = 0;  ///< peak memory clock
  int compute_major = 0, compute_minor = 0;
  int runtime_version = 0;  ///< cudaRuntimeGetVersion, e.g. 13000
  int driver_version = 0;   ///< cudaDriverGetVersion
  std::size_t l2_bytes = 0;
};

/// Records, for the published-kernel suites' bars, whether this library's row is the fastest of the
/// size and how far it is from the read ceiling; prints one line.
inline void judge_library_row(std::int64_t n, const nlohmann::json& rows, double ceiling_us, nlohmann::json& bars) {
  double ours = 0, best_other = 1e30;
  std::string best_name;
  for (const auto& r : rows) {
    if (r["n"] != n || !r.contains("us")) continue;
    const double us = r["us"];
    if (r["source"] == "this library") ours = us;
    else if (us < best_other) best_other = us, best_name = r["kernel"];
  }
  if (ours == 0) return;
  const bool fastest = ours <= best_other;
  std::printf("multireduce: %.2f us, %s (next: %s, %.2f us); %.2f%% over the read ceiling\n", ours,
              fastest ? "the fastest row" : "NOT the fastest row", best_name.c_str(), best_other,
              100.0 * (ours / ceiling_us - 1.0));
  bars.push_back({{"n", n},
                  {"multireduce_us", ours},
                  {"fastest_other", best_name},
                  {"fastest_other_us", best_other},
                  {"multireduce_fastest", fastest},
                  {"over_read_ceiling", ours / ceiling_us - 1.0}});
}

/// The end of one size of a published-kernel table: CUB's and this library's rows after the
/// document's, the read ceiling of the input, the verified and timed table, and the judgement of
/// our row.
/// @return false when a row's value was wrong.
template <class T>
bool finish_size(std::vector<ladder_step<T>>& steps, const T* in, std::int64_t n, T want, T* out_cub, T* out_ours,
                 const device_info& device, const options& opts, device_buffer<char>& cub_temp, cuda::workspace& ws,
                 nlohmann::json& rows, nlohmann::json& ceilings, nlohmann::json& bars) {
  add_library_rows<T>(steps, in, n, out_cub, out_ours, cub_temp, ws);
  const double ceiling_us = read_floor_us(in, n * std::int64_t(sizeof(T)), device.sm_count, opts, false);
  const bool ok = run_ladder<T>(n, want, steps, ceiling_us, opts, rows);
  ceilings.push_back({{"n", n}, {"us", ceiling_us}, {"gb_per_s", double(n) * sizeof(T) / (ceiling_us * 1e-6) / 1e9}});
  judge_library_row(n, rows, ceiling_us, bars);
  return ok;
}


/// A GPU suite's entry: prints its tables, fills `record`, returns the exit code (0 = verified).
using gpu_suite_entry = int (*)(const options& opts, const device_info& device, nlohmann::json& record);

/// Checks and describes the device, starts the JSON record, runs the entry (bench.cu).
int run_on_gpu(const options& opts, nlohmann::json& record, gpu_suite_entry entry);

/// The paper's section-7 benchmark, Figure 2 (bench_warp.cu): the `warp` suite, and the first half
/// of the `paper` suite.
int run_warp_suite(const options& opts, const device_info& device, nlohmann::json& record);

/// One k-NN search size of the matcher's throughput table (bench_match.cu).
struct match_config {
  std::int64_t queries, trains;
  int bytes;  ///< descriptor width: 32 (256-bit ORB) or 64 (512-bit BRISK)
};
/// The matcher kernels a suite runs side by side (--kernel: only that one): wgmma where this GPU
/// and build run it, mma_sync from sm_80, popcount when `with_popcount` (or asked for by name).
std::vector<std::pair<const char*, multireduce::match_path>> match_kernels(const options& opts, bool with_popcount);
/// Times the GPU kernels (match_kernels) of a k = 2 search per config, each verified against the
/// CPU matcher on 1024 queries first; one row per kernel and config.
/// @return false when a path's results were wrong (its row is then left out).
bool match_throughput(const options& opts, const std::vector<match_config>& configs, nlohmann::json& rows);

/// A GPU suite as the registry runs it:
///   const bool registered = register_suite({"reduce", "...", true, &on_gpu<run_reduce>});
template <gpu_suite_entry Entry>
int on_gpu(const options& opts, nlohmann::json& record) {
  return run_on_gpu(opts, record, Entry);
}

}  // namespace multireduce::bench
