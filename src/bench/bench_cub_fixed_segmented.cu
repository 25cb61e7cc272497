// bench_cub_fixed_segmented.cu -- the second CUB baseline of the fixed-length segmented rows:
// CUB's fixed-size DeviceSegmentedReduce::Sum overload (new in CCCL 3.1; the toolkit's CUB 3.0.1
// has only the offsets form) side by side with multireduce's fixed_segmented_reduce, in one
// process, 2^26 floats cut into L = 1, 2, 4, ..., 2^20, every result verified before timing.
//
// Built only when MULTIREDUCE_CUB_BASELINE_CCCL names a CCCL 3.1+ header tree (cub/, thrust/,
// libcudacxx/, e.g. the one CuPy bundles under cupy/_core/include/cupy/_cccl); multireduce's own
// headers are then compiled against that CCCL too. Usage:
//   multireduce_bench_cub_fixed [--quick] [--json FILE]
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/version.cuh>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <multireduce/cuda.cuh>

#include "bench_util.cuh"

static_assert(CUB_VERSION >= 300100, "the fixed-size segmented overload needs CUB 3.1 or newer");

namespace multireduce::bench {
namespace {

int run_fixed_segmented(bool quick, const std::string& json_path) {
  constexpr int warmup = 5, repetitions = 51;
  int device = 0;
  cudaDeviceProp prop{};
  MULTIREDUCE_BENCH_CHECK(cudaGetDevice(&device));
  MULTIREDUCE_BENCH_CHECK(cudaGetDeviceProperties(&prop, device));
  const double copy = copy_bandwidth(warmup, repetitions);
  std::printf("%s, CUB %d.%d.%d (fixed-size overload)\n", prop.name, CUB_MAJOR_VERSION, CUB_MINOR_VERSION,
              CUB_SUBMINOR_VERSION);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy);
  const std::int64_t n = quick ? (std::int64_t(1) << 22) : (std::int64_t(1) << 26);
  const auto host = bench_input(std::size_t(n), 2);  // the segmented suite's input
  device_buffer<float> in(host.size());
  in.upload(host);
  device_buffer<float> out(static_cast<std::size_t>(n));
  multireduce::cuda::workspace ws;
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%14s %12s %10s %12s %10s %9s %9s\n", "L", "CUB3.1 us", "ours us", "CUB3.1 GB/s", "ours GB/s",
              "ours/copy", "x CUB3.1");
  for (std::int64_t L = 1; L <= (std::int64_t(1) << 20); L *= 2) {
    const std::int64_t segments = n / L;
    std::vector<double> want(static_cast<std::size_t>(segments), 0.0);
    for (std::int64_t i = 0; i < segments * L; ++i) want[std::size_t(i / L)] += host[std::size_t(i)];
    auto verified = [&](const char* who) {
      const auto got = out.download(std::size_t(segments));
      for (std::int64_t s = 0; s < segments; ++s) {
        if (!close(got[std::size_t(s)], want[std::size_t(s)], 125.0 * double(L))) {
          std::printf("VERIFY FAILED %s L=%lld segment %lld: %.9g vs %.9g\n", who, (long long)L, (long long)s,
                      got[std::size_t(s)], want[std::size_t(s)]);
          return false;
        }
      }
      return true;
    };
    std::size_t cub_bytes = 0;
    MULTIREDUCE_BENCH_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, cub_bytes, in.data(), out.data(), segments, int(L)));
    device_buffer<char> cub_temp(cub_bytes);
    auto cub_run = [&] {
      MULTIREDUCE_BENCH_CHECK(cub::DeviceSegmentedReduce::Sum(cub_temp.data(), cub_bytes, in.data(), out.data(),
                                                              segments, int(L)));
    };
    auto ours = [&] { ws.fixed_segmented_reduce_async(in.data(), out.data(), segments, L, multireduce::sum{}, 0.0f); };
    out.fill_bytes(0xff);
    cub_run();
    const bool cub_ok = verified("CUB");
    out.fill_bytes(0xff);
    ours();
    if (!verified("multireduce")) {
      ok = false;
      continue;
    }
    const timing tc = time_launches(cub_run, warmup, repetitions);
    const timing to = time_launches(ours, warmup, repetitions);
    const double bytes = double(segments * L) * 4 + double(segments) * 4;  // input + output
    const double gc = bytes / (tc.median_ms * 1e-3) / 1e9, go = bytes / (to.median_ms * 1e-3) / 1e9;
    std::printf("%14lld %12.1f %10.1f %12.0f %10.0f %8.0f%% %9.2f%s\n", (long long)L, tc.median_ms * 1e3,
                to.median_ms * 1e3, gc, go, 100 * go / copy, tc.median_ms / to.median_ms, cub_ok ? "" : " (CUB wrong)");
    rows.push_back({{"segment_length", L},
                    {"count", segments},
                    {"cub_fixed_size_us", tc.median_ms * 1e3},
                    {"cub_fixed_size_correct", cub_ok},
                    {"ours_us", to.median_ms * 1e3},
                    {"cub_fixed_size_gb_per_s", gc},
                    {"ours_gb_per_s", go},
                    {"ours_fraction_of_copy", go / copy},
                    {"speedup_vs_cub_fixed_size", tc.median_ms / to.median_ms}});
  }
  if (!json_path.empty()) {
    const nlohmann::json record{{"gpu", prop.name},
                                {"cub_version", CUB_VERSION},
                                {"copy_gb_per_s", copy},
                                {"elements", n},
                                {"fixed_segmented_vs_cub_fixed_size", rows}};
    std::ofstream(json_path) << record.dump(2) << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace multireduce::bench

int main(int argc, char** argv) {
  bool quick = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  try {
    return multireduce::bench::run_fixed_segmented(quick, json_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
