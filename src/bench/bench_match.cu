// bench_match.cu -- `multireduce bench match`: brute-force Hamming 2-NN (the ratio test's input)
// on random descriptors, the binary tensor-core kernel side by side with the CUDA-core popcount
// kernel (the paper's section-8 CUDAK2NN kernel, modernised: multireduce's warp_multi_reduce, no
// texture objects, any size). Every configuration is verified against the CPU matcher on a sample
// of queries before it is timed. Figures: comparisons per second = queries x training / time.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda.cuh>
#include <multireduce/match.hpp>

#include "bench_util.cuh"

namespace multireduce::bench {
namespace {

namespace mc = multireduce::cuda;

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t r = g();
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) v[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
  }
  return v;
}

int run_match(const options& opts, const device_info&, nlohmann::json& results) {
  struct config {
    std::int64_t queries, trains;
    int bytes;
  };
  std::vector<config> configs = {{65536, 65536, 32}, {65536, 65536, 64}, {10000, 10000, 64}, {10000, 10000, 32}};
  if (opts.quick) configs = {{4096, 4096, 32}, {4096, 4096, 64}};
  const int k = 2;
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%9s %9s %5s  %-12s %10s %12s\n", "queries", "train", "bits", "kernel", "ms", "T cmp/s");
  for (const auto& c : configs) {
    const auto query = random_bytes(std::size_t(c.queries) * std::size_t(c.bytes), 11 + std::uint64_t(c.bytes));
    const auto train = random_bytes(std::size_t(c.trains) * std::size_t(c.bytes), 12 + std::uint64_t(c.bytes));
    device_buffer<std::uint8_t> dq(query.size()), dt(train.size());
    dq.upload(query);
    dt.upload(train);
    device_buffer<std::int32_t> idx(std::size_t(c.queries * k)), dist(std::size_t(c.queries * k));
    // The CPU reference for a sample of queries (the first 512 and the last 512).
    const std::int64_t sample = std::min<std::int64_t>(512, c.queries);
    std::vector<std::int32_t> want_idx(std::size_t(2 * sample * k)), want_dist(want_idx.size());
    multireduce::cpu::knn_hamming(query.data(), sample, train.data(), c.trains, c.bytes, k, want_idx.data(),
                                  want_dist.data());
    multireduce::cpu::knn_hamming(query.data() + std::size_t(c.queries - sample) * std::size_t(c.bytes), sample,
                                  train.data(), c.trains, c.bytes, k, want_idx.data() + sample * k,
                                  want_dist.data() + sample * k);
    mc::workspace ws;
    for (auto path : {mc::match_path::tensor_core, mc::match_path::popcount}) {
      const char* name = path == mc::match_path::tensor_core ? "tensor_core" : "popcount";
      auto run = [&] { ws.knn_hamming(dq.data(), c.queries, dt.data(), c.trains, c.bytes, k, idx.data(), dist.data(), path); };
      idx.fill_bytes(0xff);
      run();
      const auto got_idx = idx.download(idx.size()), got_dist = dist.download(dist.size());
      for (std::int64_t i = 0; i < 2 * sample * k; ++i) {
        const std::int64_t at = i < sample * k ? i : (c.queries - sample) * k + (i - sample * k);
        if (got_idx[std::size_t(at)] != want_idx[std::size_t(i)] || got_dist[std::size_t(at)] != want_dist[std::size_t(i)]) {
          std::printf("VERIFY FAILED %s %lldx%lld %d bits at %lld: (%d, %d) vs (%d, %d)\n", name, (long long)c.queries,
                      (long long)c.trains, c.bytes * 8, (long long)at, got_idx[std::size_t(at)], got_dist[std::size_t(at)],
                      want_idx[std::size_t(i)], want_dist[std::size_t(i)]);
          ok = false;
          break;
        }
      }
      const int reps = c.queries * c.trains > (std::int64_t(1) << 30) ? std::min(opts.repetitions, 11) : opts.repetitions;
      const timing t = time_launches(run, std::min(opts.warmup, 2), reps);
      const double rate = double(c.queries) * double(c.trains) / (t.median_ms * 1e-3) / 1e12;
      std::printf("%9lld %9lld %5d  %-12s %10.3f %12.3f\n", (long long)c.queries, (long long)c.trains, c.bytes * 8, name,
                  t.median_ms, rate);
      rows.push_back({{"queries", c.queries}, {"train", c.trains}, {"bits", c.bytes * 8}, {"k", k}, {"kernel", name},
                      {"ms", t.median_ms}, {"tera_comparisons_per_s", rate}});
    }
  }
  results["match"] = rows;
  return ok ? 0 : 1;
}

}  // namespace

int run_match_suite(const options& o, const device_info& d, nlohmann::json& r) { return run_match(o, d, r); }

}  // namespace multireduce::bench
