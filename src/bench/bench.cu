// bench.cu -- the GPU suites' harness: checks and describes the device, starts the JSON record,
// then runs the suite (bench_util.cuh: run_on_gpu).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <multireduce/cuda/detail/launch.cuh>

#include "bench.hpp"
#include "bench_util.cuh"

namespace multireduce::bench {

namespace {

/// Reads `vectors` 16-byte words and nothing else (their XOR, stored only if it equals a value no
/// reduction input of the suites makes): strictly less work than any reduction of them.
__global__ void read_only_kernel(const uint4* in, std::int64_t vectors, unsigned* sink) {
  const std::int64_t threads = std::int64_t(gridDim.x) * blockDim.x;
  unsigned acc = 0;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * threads < vectors; i += 4 * threads) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = __ldg(in + i + u * threads);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < vectors; i += threads) {
    const uint4 v = __ldg(in + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

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

int count_gpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}
const bool probe_registered = set_gpu_probe(&count_gpus);

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

double read_floor_us(const void* in, std::int64_t bytes, int sms, const options& opts, bool isolated) {
  device_buffer<unsigned> sink(1);
  double best = 1e30;
  const std::int64_t vectors = bytes / 16;
  for (int threads : {256, 512, 1024}) {
    for (int per_sm : {1, 2, 4, 8}) {
      if (threads * per_sm > 2048) continue;
      const std::int64_t needed = (vectors + threads - 1) / threads;
      const int blocks = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(needed, std::int64_t(sms) * per_sm)));
      auto launch = [&] {
        MULTIREDUCE_BENCH_CHECK(cuda::launch(read_only_kernel, blocks, threads, 0, nullptr,
                                             static_cast<const uint4*>(in), vectors, sink.data()));
      };
      const timing t = isolated ? time_isolated(launch, opts.warmup, opts.repetitions)
                                : time_launches(launch, opts.warmup, opts.repetitions);
      best = std::min(best, t.median_ms * 1e3);
    }
  }
  return best;
}

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
