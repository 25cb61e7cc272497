// bench.cu -- the GPU suites' harness: checks and describes the device, starts the JSON record,
// then runs the suite (bench_util.cuh: run_on_gpu).
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "bench_util.cuh"

namespace multireduce::bench {

namespace {

device_info describe_device(int ordinal) {
  device_info d;
  d.ordinal = ordinal;
  cudaDeviceProp prop{};
  MULTIREDUCE_BENCH_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.compute_major = prop.major;
  d.compute_minor = prop.minor;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  // CUDA 13 dropped the clock fields from cudaDeviceProp: ask for the attributes.
  MULTIREDUCE_BENCH_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, ordinal));
  MULTIREDUCE_BENCH_CHECK(cudaDeviceGetAttribute(&d.memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
  MULTIREDUCE_BENCH_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  MULTIREDUCE_BENCH_CHECK(cudaDriverGetVersion(&d.driver_version));
  return d;
}

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

int run_on_gpu(const options& opts, nlohmann::json& record, gpu_suite_entry entry) {
  const char* name = opts.suite.c_str();
  if (opts.repetitions < 1 || opts.warmup < 0) {
    std::fprintf(stderr, "multireduce bench: need repetitions >= 1 and warmup >= 0\n");
    return 1;
  }
  int device_count = 0;
  const cudaError_t count_status = cudaGetDeviceCount(&device_count);
  if (count_status != cudaSuccess || device_count == 0) {
    std::fprintf(stderr, "multireduce bench: no CUDA device available (%s); the benchmarks need a GPU\n",
                 count_status != cudaSuccess ? cudaGetErrorString(count_status) : "0 devices");
    return 1;
  }
  if (opts.device < 0 || opts.device >= device_count) {
    std::fprintf(stderr, "multireduce bench: device %d does not exist (%d device(s))\n", opts.device, device_count);
    return 2;
  }
  MULTIREDUCE_BENCH_CHECK(cudaSetDevice(opts.device));
  const device_info device = describe_device(opts.device);
  std::printf("multireduce bench %s on %s (device %d, sm_%d%d, %d SMs, %d MHz), CUDA runtime %d, driver %d\n", name,
              device.name.c_str(), device.ordinal, device.compute_major, device.compute_minor, device.sm_count,
              device.clock_khz / 1000, device.runtime_version, device.driver_version);
  record["suite"] = name;
  record["date_utc"] = utc_now_iso();
  record["device"] = {{"name", device.name},
                      {"ordinal", device.ordinal},
                      {"compute_capability", std::to_string(device.compute_major) + "." +
                                                 std::to_string(device.compute_minor)},
                      {"sm_count", device.sm_count},
                      {"clock_khz", device.clock_khz},
                      {"memory_clock_khz", device.memory_clock_khz},
                      {"l2_bytes", device.l2_bytes},
                      {"cuda_runtime_version", device.runtime_version},
                      {"cuda_driver_version", device.driver_version}};
  record["options"] = {{"repetitions", opts.repetitions}, {"warmup", opts.warmup}, {"quick", opts.quick}};
  return entry(opts, device, record);
}

}  // namespace multireduce::bench
