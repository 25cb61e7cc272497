// bench_device.cu -- `multireduce bench reduce|segmented|stats|window`: the device-wide algorithms
// side by side with CUB (from the toolkit) in one process, float input, every result verified
// against the CPU before it is timed. Bandwidth counts bytes read plus bytes written.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <multireduce/cuda.cuh>

#include "bench_util.cuh"

namespace multireduce::bench {
namespace {

namespace mc = multireduce::cuda;

int run_reduce(const options& opts, const device_info& device, nlohmann::json& results) {
  const int max_log = opts.quick ? 24 : 28;
  const auto host = bench_input(std::size_t(1) << max_log, 1);
  device_buffer<float> in(host.size());
  in.upload(host);
  device_buffer<float> out(2);
  mc::workspace ws;
  bool ok = true;
  // The GPU idles at a low clock; a few microseconds' calls timed from cold run partly before it
  // has clocked up. 0.1 s of whole-array sums first.
  for (int i = 0; i < 400; ++i) ws.reduce_async(in.data(), std::int64_t(host.size()), out.data(), multireduce::sum{}, 0.0f);
  MULTIREDUCE_BENCH_CHECK(cudaDeviceSynchronize());
  // Two timings: calls queued back to back (the launch latency overlaps the previous call), and
  // isolated calls (the GPU idle before each: the latency a caller waiting for its result sees).
  // "floor x": CUB's time over the floor under any one-launch reduction (a kernel that only reads
  // the input, in its fastest shape): the largest speed-up over CUB that one launch can reach.
  std::printf("%10s %12s %12s %14s %12s %9s %9s %9s | isolated: %9s %9s %9s %9s\n", "n", "CUB us", "ours us",
              "ours(CUB-API)", "ours GB/s", "x CUB", "x CUB api", "floor x", "CUB us", "ours us", "x CUB", "floor x");
  nlohmann::json rows = nlohmann::json::array();
  for (int lg = 10; lg <= max_log; lg += 2) {
    const std::int64_t n = std::int64_t(1) << lg;
    double want = 0, magnitude = 0;
    for (std::int64_t i = 0; i < n; ++i) want += host[std::size_t(i)], magnitude += std::fabs(host[std::size_t(i)]);
    // CUB
    std::size_t cub_bytes = 0;
    MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(nullptr, cub_bytes, in.data(), out.data(), n));
    device_buffer<char> cub_temp(cub_bytes);
    auto cub_run = [&] { MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(cub_temp.data(), cub_bytes, in.data(), out.data(), n)); };
    out.fill_bytes(0xff);
    cub_run();
    const float cub_value = out.download(1)[0];
    // ours: workspace (one launch) and the CUB-style entry point (ticket memset + launch)
    auto ours = [&] { ws.reduce_async(in.data(), n, out.data(), multireduce::sum{}, 0.0f); };
    out.fill_bytes(0xff);
    ours();
    const float our_value = out.download(1)[0];
    std::size_t our_bytes = 0;
    MULTIREDUCE_BENCH_CHECK(mc::reduce(nullptr, our_bytes, in.data(), out.data() + 1, n, multireduce::sum{}, 0.0f));
    device_buffer<char> our_temp(our_bytes);
    auto ours_api = [&] {
      MULTIREDUCE_BENCH_CHECK(mc::reduce(our_temp.data(), our_bytes, in.data(), out.data() + 1, n, multireduce::sum{}, 0.0f));
    };
    ours_api();
    const float api_value = out.download(2)[1];
    if (!close(cub_value, want, magnitude) || !close(our_value, want, magnitude) || !close(api_value, want, magnitude)) {
      std::printf("VERIFY FAILED n=%lld want %.9g CUB %.9g ours %.9g api %.9g\n", (long long)n, want, cub_value, our_value, api_value);
      ok = false;
      continue;
    }
    const timing tc = time_launches(cub_run, opts.warmup, opts.repetitions);
    const timing to = time_launches(ours, opts.warmup, opts.repetitions);
    const timing ta = time_launches(ours_api, opts.warmup, opts.repetitions);
    const timing tci = time_isolated(cub_run, opts.warmup, opts.repetitions);
    const timing toi = time_isolated(ours, opts.warmup, opts.repetitions);
    const double gbps = double(n) * 4 / (to.median_ms * 1e-3) / 1e9;
    const double floor_us = read_floor_us(in.data(), n * 4, device.sm_count, opts, false);
    const double floor_isolated_us = read_floor_us(in.data(), n * 4, device.sm_count, opts, true);
    const double most = tc.median_ms * 1e3 / floor_us, most_isolated = tci.median_ms * 1e3 / floor_isolated_us;
    std::printf("%10lld %12.2f %12.2f %14.2f %12.0f %9.2f %9.2f %9.2f | isolated: %9.2f %9.2f %9.2f %9.2f\n",
                (long long)n, tc.median_ms * 1e3, to.median_ms * 1e3, ta.median_ms * 1e3, gbps,
                tc.median_ms / to.median_ms, tc.median_ms / ta.median_ms, most, tci.median_ms * 1e3,
                toi.median_ms * 1e3, tci.median_ms / toi.median_ms, most_isolated);
    rows.push_back({{"n", n},
                    {"cub_us", tc.median_ms * 1e3},
                    {"ours_us", to.median_ms * 1e3},
                    {"ours_cub_api_us", ta.median_ms * 1e3},
                    {"ours_gb_per_s", gbps},
                    {"speedup_vs_cub", tc.median_ms / to.median_ms},
                    {"speedup_vs_cub_cub_api", tc.median_ms / ta.median_ms},
                    {"isolated_cub_us", tci.median_ms * 1e3},
                    {"isolated_ours_us", toi.median_ms * 1e3},
                    {"isolated_speedup_vs_cub", tci.median_ms / toi.median_ms},
                    {"read_floor_us", floor_us},
                    {"isolated_read_floor_us", floor_isolated_us},
                    {"most_speedup_of_one_launch", most},
                    {"isolated_most_speedup_of_one_launch", most_isolated}});
  }
  results["reduce"] = rows;
  return ok ? 0 : 1;
}

int run_segmented(const options& opts, const device_info&, nlohmann::json& results) {
  const double copy = copy_bandwidth(opts.warmup, opts.repetitions);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy);  // (nvcc rejects this fmt call)
  results["copy_gb_per_s"] = copy;
  const std::int64_t n = opts.quick ? (std::int64_t(1) << 22) : (std::int64_t(1) << 26);
  const auto host = bench_input(std::size_t(n), 2);
  device_buffer<float> in(host.size());
  in.upload(host);
  device_buffer<float> out(static_cast<std::size_t>(n));
  mc::workspace ws;
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%22s %10s %10s %10s %10s %9s %8s\n", "segments", "CUB us", "ours us", "CUB GB/s", "ours GB/s",
             "ours/copy", "x CUB");
  auto measure = [&](const std::string& name, const std::vector<std::int64_t>& offsets, std::int64_t fixed_length) {
    const std::int64_t segments = std::int64_t(offsets.size()) - 1;
    device_buffer<std::int64_t> d_off(offsets.size());
    d_off.upload(offsets);
    std::vector<double> want(static_cast<std::size_t>(segments));
    for (std::int64_t s = 0; s < segments; ++s) {
      double acc = 0;
      for (std::int64_t i = offsets[std::size_t(s)]; i < offsets[std::size_t(s) + 1]; ++i) acc += host[std::size_t(i)];
      want[std::size_t(s)] = acc;
    }
    auto verify = [&](const char* who) {
      const auto got = out.download(std::size_t(segments));
      for (std::int64_t s = 0; s < segments; ++s) {
        const double len = double(offsets[std::size_t(s) + 1] - offsets[std::size_t(s)]);
        if (!close(got[std::size_t(s)], want[std::size_t(s)], 125.0 * len)) {
          std::printf("VERIFY FAILED %s %s segment %lld: %.9g vs %.9g\n", who, name.c_str(), (long long)s, got[std::size_t(s)], want[std::size_t(s)]);
          return false;
        }
      }
      return true;
    };
    std::size_t cub_bytes = 0;
    MULTIREDUCE_BENCH_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, cub_bytes, in.data(), out.data(), segments,
                                                            d_off.data(), d_off.data() + 1));
    device_buffer<char> cub_temp(cub_bytes);
    auto cub_run = [&] {
      MULTIREDUCE_BENCH_CHECK(cub::DeviceSegmentedReduce::Sum(cub_temp.data(), cub_bytes, in.data(), out.data(),
                                                              segments, d_off.data(), d_off.data() + 1));
    };
    auto ours = [&] {
      if (fixed_length >= 0) ws.fixed_segmented_reduce_async(in.data(), out.data(), segments, fixed_length, multireduce::sum{}, 0.0f);
      else ws.segmented_reduce_async(in.data(), n, out.data(), segments, d_off.data(), d_off.data() + 1, multireduce::sum{}, 0.0f);
    };
    out.fill_bytes(0xff);
    cub_run();
    const bool cub_ok = verify("CUB");
    out.fill_bytes(0xff);
    ours();
    if (!verify("multireduce")) {
      ok = false;
      return;
    }
    const timing tc = time_launches(cub_run, opts.warmup, opts.repetitions);
    const timing to = time_launches(ours, opts.warmup, opts.repetitions);
    const double bytes = double(offsets.back() - offsets.front()) * 4 + double(segments) * 4 +
                         (fixed_length >= 0 ? 0.0 : double(segments) * 8);
    const double gc = bytes / (tc.median_ms * 1e-3) / 1e9, go = bytes / (to.median_ms * 1e-3) / 1e9;
    std::printf("%22s %10.1f %10.1f %10.0f %10.0f %8.0f%% %8.2f%s\n", name.c_str(), tc.median_ms * 1e3,
               to.median_ms * 1e3, gc, go, 100 * go / copy, tc.median_ms / to.median_ms, cub_ok ? "" : " (CUB wrong)");
    rows.push_back({{"segments", name},
                    {"count", segments},
                    {"cub_us", tc.median_ms * 1e3},
                    {"ours_us", to.median_ms * 1e3},
                    {"cub_gb_per_s", gc},
                    {"ours_gb_per_s", go},
                    {"ours_fraction_of_copy", go / copy},
                    {"speedup_vs_cub", tc.median_ms / to.median_ms}});
  };
  for (std::int64_t L = 1; L <= (std::int64_t(1) << 20); L *= 2) {
    const std::int64_t segments = n / L;
    std::vector<std::int64_t> off(std::size_t(segments) + 1);
    for (std::int64_t s = 0; s <= segments; ++s) off[std::size_t(s)] = s * L;
    measure("fixed L=" + std::to_string(L), off, L);
  }
  std::mt19937_64 g(3);
  std::vector<std::int64_t> off{0};
  while (true) {
    const std::int64_t next = off.back() + std::int64_t(g() % 65);
    if (next > n) break;
    off.push_back(next);
  }
  measure("uniform 0..64", off, -1);
  off.assign(1, 0);
  while (true) {  // power law: P(length >= x) ~ x^-0.5 up to 2^20
    const double u = std::uniform_real_distribution<double>(1e-6, 1.0)(g);
    const std::int64_t len = std::min<std::int64_t>(std::int64_t(1) << 20, std::int64_t(1.0 / (u * u)) - 1);
    if (off.back() + len > n) break;
    off.push_back(off.back() + len);
  }
  measure("power law to 2^20", off, -1);
  // Equal long segments through the offsets path (the queue and the long-segment kernel), beside
  // the fixed-length rows above that take the block kernel.
  for (std::int64_t L : {std::int64_t(1) << 20, std::int64_t(16384)}) {
    off.assign(1, 0);
    while (off.back() + L <= n) off.push_back(off.back() + L);
    measure("offsets L=" + std::to_string(L), off, -1);
  }
  results["segmented"] = rows;
  return ok ? 0 : 1;
}

int run_stats(const options& opts, const device_info&, nlohmann::json& results) {
  const std::int64_t n = opts.quick ? (std::int64_t(1) << 24) : (std::int64_t(1) << 28);
  const auto host = bench_input(std::size_t(n), 4);
  device_buffer<float> in(host.size());
  in.upload(host);
  device_buffer<float> out(1);
  device_buffer<multireduce::statistics<float>> stats_out(1);
  mc::workspace ws;
  double sum = 0, l1 = 0, sq = 0;
  for (float x : host) sum += x, l1 += std::fabs(x), sq += double(x) * x;
  const double mean = sum / double(n);
  double var = 0;
  for (float x : host) var += (x - mean) * (x - mean);
  var /= double(n);
  const auto s = ws.statistics(in.data(), n);
  const auto mn = std::min_element(host.begin(), host.end()), mx = std::max_element(host.begin(), host.end());
  const bool ok = s.count == n && close(s.sum, sum, l1) && std::fabs(s.var - var) <= 1e-9 * var &&
                  close(s.l1, l1, l1) && s.min == *mn && s.argmin == mn - host.begin() && s.max == *mx &&
                  s.argmax == mx - host.begin() && std::fabs(s.l2 - std::sqrt(sq)) <= 1e-9 * std::sqrt(sq);
  if (!ok) {
    std::printf("VERIFY FAILED stats: mean %.12g vs %.12g, var %.12g vs %.12g, argmin %lld vs %lld\n", s.mean, mean, s.var, var, (long long)s.argmin,
               (long long)(mn - host.begin()));
    return 1;
  }
  std::size_t bytes = 0;
  MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in.data(), out.data(), n));
  device_buffer<char> temp(bytes);
  const timing tc = time_launches([&] { MULTIREDUCE_BENCH_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, in.data(), out.data(), n)); },
                                  opts.warmup, opts.repetitions);
  const timing tsum = time_launches([&] { ws.reduce_async(in.data(), n, out.data(), multireduce::sum{}, 0.0f); }, opts.warmup,
                                    opts.repetitions);
  std::size_t stats_bytes = 0;
  MULTIREDUCE_BENCH_CHECK(mc::statistics(nullptr, stats_bytes, in.data(), stats_out.data(), n));
  device_buffer<char> stats_temp(stats_bytes);
  const timing ts = time_launches(
      [&] { MULTIREDUCE_BENCH_CHECK(mc::statistics(stats_temp.data(), stats_bytes, in.data(), stats_out.data(), n)); },
      opts.warmup, opts.repetitions);
  const double gb = double(n) * 4 / 1e9;
  std::printf("n = %lld: CUB sum %.1f us (%.0f GB/s), our sum %.1f us (%.0f GB/s), all 11 statistics %.1f us "
             "(%.0f GB/s) = %.2fx the speed of our sum, %.2fx CUB's sum\n",
             (long long)n, tc.median_ms * 1e3, gb / (tc.median_ms * 1e-3), tsum.median_ms * 1e3, gb / (tsum.median_ms * 1e-3),
             ts.median_ms * 1e3, gb / (ts.median_ms * 1e-3), tsum.median_ms / ts.median_ms, tc.median_ms / ts.median_ms);
  results["stats"] = {{"n", n},
                      {"cub_sum_us", tc.median_ms * 1e3},
                      {"our_sum_us", tsum.median_ms * 1e3},
                      {"stats_us", ts.median_ms * 1e3},
                      {"stats_speed_vs_our_sum", tsum.median_ms / ts.median_ms},
                      {"stats_speed_vs_cub_sum", tc.median_ms / ts.median_ms}};
  return 0;
}

int run_window(const options& opts, const device_info&, nlohmann::json& results) {
  const double copy = copy_bandwidth(opts.warmup, opts.repetitions);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", copy);  // (nvcc rejects this fmt call)
  const std::int64_t n = opts.quick ? (std::int64_t(1) << 24) : (std::int64_t(1) << 28);
  const auto host = bench_input(std::size_t(n), 5);
  device_buffer<float> in(host.size()), out(host.size());
  in.upload(host);
  mc::workspace ws;
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t w : {3, 32, 1000}) {
    for (int op = 0; op < 2; ++op) {
      const std::int64_t m = n - w + 1;
      auto run = [&] {
        if (op == 0) ws.window_reduce_async(in.data(), n, w, out.data(), multireduce::sum{}, 0.0f);
        else ws.window_reduce_async(in.data(), n, w, out.data(), multireduce::maximum{}, -INFINITY);
      };
      out.fill_bytes(0xff);
      run();
      const auto got = out.download(std::size_t(m));
      // Verify a strided sample of windows (every element for the first 100000).
      for (std::int64_t i = 0; i < m; i += i < 100000 ? 1 : 997) {
        double acc = op == 0 ? 0.0 : -INFINITY;
        for (std::int64_t j = i; j < i + w; ++j) acc = op == 0 ? acc + host[std::size_t(j)] : std::max<double>(acc, host[std::size_t(j)]);
        if (!close(got[std::size_t(i)], acc, 125.0 * double(w))) {
          std::printf("VERIFY FAILED window %s W=%lld i=%lld: %.9g vs %.9g\n", op == 0 ? "sum" : "max", (long long)w, (long long)i, got[std::size_t(i)], acc);
          ok = false;
          break;
        }
      }
      const timing t = time_launches(run, opts.warmup, opts.repetitions);
      const double gbps = double(n + m) * 4 / (t.median_ms * 1e-3) / 1e9;
      std::printf("window %s W=%5lld: %8.1f us, %6.0f GB/s = %.0f%% of copy\n", op == 0 ? "sum" : "max", (long long)w,
                 t.median_ms * 1e3, gbps, 100 * gbps / copy);
      rows.push_back({{"op", op == 0 ? "sum" : "max"}, {"window", w}, {"n", n}, {"us", t.median_ms * 1e3},
                      {"gb_per_s", gbps}, {"fraction_of_copy", gbps / copy}});
    }
  }
  results["copy_gb_per_s"] = copy;
  results["window"] = rows;
  return ok ? 0 : 1;
}

const bool registered =
    register_suite({"reduce", "one sum against CUB, back to back and isolated, beside the floor of one launch", true,
                    &on_gpu<run_reduce>}) &&
    register_suite({"segmented", "segmented sums (fixed lengths, uniform and power-law offsets) against CUB", true,
                    &on_gpu<run_segmented>}) &&
    register_suite({"stats", "the eleven statistics in one pass against one sum", true, &on_gpu<run_stats>}) &&
    register_suite({"window", "sliding-window sum and max against the copy bandwidth", true, &on_gpu<run_window>});

}  // namespace

}  // namespace multireduce::bench
