// bench_util.cuh -- what the benchmark suites share: error checks, device buffers, timing, the
// device description, and the entry points of the suites (private to src/bench).
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

#include "bench.hpp"

namespace multireduce::bench {

/// Throws std::runtime_error naming the call, where it was made and what CUDA said.
inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                             cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace multireduce::bench

/// Checks a CUDA runtime call; a failure throws (benchmarks stop at the first error rather than
/// print figures of a broken run).
#define MULTIREDUCE_BENCH_CHECK(call) ::multireduce::bench::check_cuda((call), #call, __FILE__, __LINE__)

/// Checks the last kernel launch (configuration errors show up here, not at the <<<>>>).
#define MULTIREDUCE_BENCH_CHECK_LAUNCH() MULTIREDUCE_BENCH_CHECK(cudaGetLastError())

namespace multireduce::bench {

/// An owning array of `count` T in device memory (cudaMalloc), freed on destruction; move-only.
template <class T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : count_(count) {
    if (count > 0) MULTIREDUCE_BENCH_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
    other.count_ = 0;
  }
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = other.data_;
      count_ = other.count_;
      other.data_ = nullptr;
      other.count_ = 0;
    }
    return *this;
  }
  ~device_buffer() { release(); }

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Copies the first host.size() elements from the host.
  void upload(const std::vector<T>& host) {
    if (host.size() > count_) throw std::length_error("device_buffer::upload: more elements than the buffer holds");
    MULTIREDUCE_BENCH_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  /// Copies the first `count` elements to the host.
  std::vector<T> download(std::size_t count) const {
    if (count > count_) throw std::length_error("device_buffer::download: more elements than the buffer holds");
    std::vector<T> host(count);
    MULTIREDUCE_BENCH_CHECK(cudaMemcpy(host.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  /// Sets every byte to `byte` (to poison outputs before a verification run).
  void fill_bytes(int byte) { MULTIREDUCE_BENCH_CHECK(cudaMemset(data_, byte, bytes())); }

 private:
  void release() noexcept {
    if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor; a failure here is not actionable
    data_ = nullptr;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// An owned CUDA event: created with the object, destroyed with it.
class cuda_event {
 public:
  cuda_event() { MULTIREDUCE_BENCH_CHECK(cudaEventCreate(&event_)); }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  ~cuda_event() { cudaEventDestroy(event_); }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

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
  std::vector<cuda_event> starts(static_cast<std::size_t>(repetitions));
  std::vector<cuda_event> stops(static_cast<std::size_t>(repetitions));
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
  cuda_event start, stop;
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

/// A suite: prints its tables, appends its records to `results` (a JSON object it owns the keys
/// of), and returns the process exit code (0 = every kernel verified).
int run_warp_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_reduce_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_segmented_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_stats_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_window_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_match_suite(const options& opts, const device_info& device, nlohmann::json& results);
int run_match_huge_suite(const options& opts, const device_info& device, nlohmann::json& results);

}  // namespace multireduce::bench
