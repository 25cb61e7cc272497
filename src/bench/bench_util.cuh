// bench_util.cuh -- what the GPU benchmark suites share: timing, the device description, the bench
// input and the harness that runs a suite on the GPU (private to src/bench). Buffers, events and
// error checks are the library's (multireduce/cuda/detail/).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda/detail/device_buffer.cuh>
#include <multireduce/cuda/detail/error.cuh>
#include <multireduce/cuda/detail/stream.cuh>

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
/// included. This is how ../shared/anchors.md timed CUB (one empty kernel: 5.6 us).
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
inline std::vector<float> bench_input(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g)) / 8.0f;
  return v;
}

/// |a - b| within float rounding of sums of this magnitude.
inline bool close(double got, double want, double magnitude) { return std::fabs(got - want) <= 1e-5 * magnitude + 1e-6; }

/// Device-to-device copy bandwidth (bytes read + written), 1 GiB, the anchors' ceiling.
inline double copy_bandwidth(int warmup, int repetitions) {
  const std::size_t bytes = std::size_t(1) << 30;
  device_buffer<char> a(bytes), b(bytes);
  MULTIREDUCE_BENCH_CHECK(cudaMemset(a.data(), 1, bytes));
  const timing t = time_launches([&] { MULTIREDUCE_BENCH_CHECK(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice)); },
                                 warmup, std::max(5, repetitions / 4));
  return 2.0 * double(bytes) / (t.median_ms * 1e-3) / 1e9;
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

/// A GPU suite's entry: prints its tables, fills `record`, returns the exit code (0 = verified).
using gpu_suite_entry = int (*)(const options& opts, const device_info& device, nlohmann::json& record);

/// Checks and describes the device, starts the JSON record, runs the entry (bench.cu).
int run_on_gpu(const options& opts, nlohmann::json& record, gpu_suite_entry entry);

/// A GPU suite as the registry runs it:
///   const bool registered = register_suite({"reduce", "...", true, &on_gpu<run_reduce>});
template <gpu_suite_entry Entry>
int on_gpu(const options& opts, nlohmann::json& record) {
  return run_on_gpu(opts, record, Entry);
}

}  // namespace multireduce::bench
