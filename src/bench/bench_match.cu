// bench_match.cu -- `multireduce bench match`: brute-force Hamming 2-NN (the ratio test's input)
// on random descriptors, the matcher's kernels side by side: the warpgroup tensor-core kernel
// (wgmma, sm_90a), the warp tensor-core kernel (mma.sync, the baseline it replaced) and the
// CUDA-core popcount kernel (the paper's section-8 CUDAK2NN kernel, modernised:
// multireduce's warp_multi_reduce, no texture objects, any size); `--kernel` picks one. Every configuration is verified against the CPU matcher on a sample
// of queries before it is timed. Figures: comparisons per second = queries x training / time.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/cuda.cuh>
#include <multireduce/match/cpu.hpp>
#include <multireduce/match/cuda.cuh>

#include "bench_util.cuh"

namespace multireduce::bench {
namespace {

namespace mc = multireduce::cuda;

/// Checks `check` queries of a search (from `query`; idx/dist on the device, check x k) against the
/// CPU matcher; prints and returns false on a difference.
bool verify_against_cpu(const char* what, const std::uint8_t* query, std::int64_t check, const std::uint8_t* train,
                 std::int64_t trains, int bytes, int k, const std::int32_t* d_idx, const std::int32_t* d_dist) {
  std::vector<std::int32_t> want_idx(std::size_t(check * k)), want_dist(want_idx.size()), got_idx(want_idx.size()),
      got_dist(want_idx.size());
  multireduce::cpu::knn_hamming(query, check, train, trains, bytes, k, want_idx.data(), want_dist.data());
  MULTIREDUCE_BENCH_CHECK(cudaMemcpy(got_idx.data(), d_idx, got_idx.size() * 4, cudaMemcpyDeviceToHost));
  MULTIREDUCE_BENCH_CHECK(cudaMemcpy(got_dist.data(), d_dist, got_dist.size() * 4, cudaMemcpyDeviceToHost));
  if (got_idx == want_idx && got_dist == want_dist) return true;
  std::printf("VERIFY FAILED %s\n", what);
  return false;
}

bool run_batched(const options& opts, nlohmann::json& results);
bool run_streamed(const options& opts, nlohmann::json& results);

}  // namespace

std::vector<std::pair<const char*, mc::match_path>> match_kernels(const options& opts, bool with_popcount) {
  int device = 0, major = 0, minor = 0;
  MULTIREDUCE_BENCH_CHECK(cudaGetDevice(&device));
  MULTIREDUCE_BENCH_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  MULTIREDUCE_BENCH_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  std::vector<std::pair<const char*, mc::match_path>> kernels;
  auto wanted = [&](const char* name) { return opts.kernel.empty() || opts.kernel == name; };
  if (wanted("wgmma")) {
    if (mc::detail::wgmma_usable(major, minor)) kernels.emplace_back("wgmma", mc::match_path::wgmma);
    else std::printf("(wgmma: not run -- %s)\n", major == 9 && minor == 0 ? "this build has no sm_90a code" : "not an sm_90 GPU");
  }
  if (wanted("mma_sync") && major >= 8) kernels.emplace_back("mma_sync", mc::match_path::tensor_core);
  if (wanted("popcount") && (with_popcount || opts.kernel == "popcount"))
    kernels.emplace_back("popcount", mc::match_path::popcount);
  return kernels;
}

bool match_throughput(const options& opts, const std::vector<match_config>& configs, nlohmann::json& rows) {
  const int k = 2;
  bool ok = true;
  std::printf("%9s %9s %5s  %-12s %10s %12s\n", "queries", "train", "bits", "kernel", "ms", "T cmp/s");
  for (const auto& c : configs) {
    const auto query = random_bytes(std::size_t(c.queries) * std::size_t(c.bytes), 11 + std::uint64_t(c.bytes));
    const auto train = random_bytes(std::size_t(c.trains) * std::size_t(c.bytes), 12 + std::uint64_t(c.bytes));
    device_buffer<std::uint8_t> dq(query.size()), dt(train.size());
    dq.upload(query);
    dt.upload(train);
    device_buffer<std::int32_t> idx(std::size_t(c.queries * k)), dist(std::size_t(c.queries * k));
    const std::int64_t sample = std::min<std::int64_t>(512, c.queries), last = c.queries - sample;
    mc::workspace ws;
    for (const auto& [name, path] : match_kernels(opts, true)) {
      auto run = [&] { mc::knn_hamming_async(ws, dq.data(), c.queries, dt.data(), c.trains, c.bytes, k, idx.data(), dist.data(), path); };
      idx.fill_bytes(0xff);
      dist.fill_bytes(0xff);
      run();
      // The first and the last 512 queries against the CPU matcher.
      const bool verified =
          verify_against_cpu(name, query.data(), sample, train.data(), c.trains, c.bytes, k, idx.data(), dist.data()) &&
          verify_against_cpu(name, query.data() + last * c.bytes, sample, train.data(), c.trains, c.bytes, k,
                             idx.data() + last * k, dist.data() + last * k);
      ok = verified && ok;
      if (!verified) continue;
      const int reps = c.queries * c.trains > (std::int64_t(1) << 30) ? std::min(opts.repetitions, 11) : opts.repetitions;
      const timing t = time_launches(run, std::min(opts.warmup, 2), reps);
      const double rate = double(c.queries) * double(c.trains) / (t.median_ms * 1e-3) / 1e12;
      std::printf("%9lld %9lld %5d  %-12s %10.3f %12.3f\n", (long long)c.queries, (long long)c.trains, c.bytes * 8, name,
                  t.median_ms, rate);
      rows.push_back({{"queries", c.queries}, {"train", c.trains}, {"bits", c.bytes * 8}, {"k", k}, {"kernel", name},
                      {"ms", t.median_ms}, {"tera_comparisons_per_s", rate}});
    }
  }
  return ok;
}

namespace {

int run_match(const options& opts, const device_info&, nlohmann::json& results) {
  std::vector<match_config> configs = {{65536, 65536, 32}, {65536, 65536, 64}, {10000, 10000, 64}, {10000, 10000, 32}};
  if (opts.quick) configs = {{4096, 4096, 32}, {4096, 4096, 64}};
  nlohmann::json rows = nlohmann::json::array();
  bool ok = match_throughput(opts, configs, rows);
  results["match"] = rows;
  if (!run_batched(opts, results) || !run_streamed(opts, results)) ok = false;
  return ok ? 0 : 1;
}

/// Many image pairs: 1000 pairs of 500..3000 ORB descriptors each (sizes from a fixed seed), k = 2,
/// one knn_hamming_batched call against one knn_hamming call per pair.
bool run_batched(const options& opts, nlohmann::json& results) {
  const int pairs = opts.quick ? 40 : 1000, bytes = 32, k = 2;
  std::mt19937_64 g(2026);
  std::vector<std::int64_t> nq(pairs), nt(pairs);
  std::int64_t total_q = 0, total_t = 0;
  double comparisons = 0;
  for (int i = 0; i < pairs; ++i) {
    nq[i] = 500 + std::int64_t(g() % 2501), nt[i] = 500 + std::int64_t(g() % 2501);
    total_q += nq[i], total_t += nt[i];
    comparisons += double(nq[i]) * double(nt[i]);
  }
  const auto query = random_bytes(std::size_t(total_q * bytes), 21), train = random_bytes(std::size_t(total_t * bytes), 22);
  device_buffer<std::uint8_t> dq(query.size()), dt(train.size());
  dq.upload(query);
  dt.upload(train);
  device_buffer<std::int32_t> idx(std::size_t(total_q * k)), dist(std::size_t(total_q * k));
  std::vector<mc::knn_pair> batch(pairs);
  for (std::int64_t i = 0, q0 = 0, t0 = 0; i < pairs; q0 += nq[i], t0 += nt[i], ++i)
    batch[i] = mc::knn_pair{dq.data() + q0 * bytes, nq[i], dt.data() + t0 * bytes, nt[i], idx.data() + q0 * k, dist.data() + q0 * k};
  mc::workspace ws;
  bool ok = true;
  std::printf("\n%d image pairs of 500..3000 x 500..3000 ORB descriptors (%.3g comparisons), k = 2\n", pairs, comparisons);
  std::printf("%-28s %10s %12s\n", "call", "ms", "T cmp/s");
  nlohmann::json rows = nlohmann::json::array();
  // The batched call with each tensor-core kernel, then a call per pair (the default kernel).
  std::vector<std::pair<std::string, mc::match_path>> calls;
  for (const auto& [kernel, path] : match_kernels(opts, false))
    calls.emplace_back(std::string("batched, ") + kernel, path);
  calls.emplace_back("knn_hamming per pair", mc::match_path::automatic);
  for (const auto& [call_name, path] : calls) {
    const bool batched = path != mc::match_path::automatic;
    auto run = [&, path = path] {
      if (batched) mc::knn_hamming_batched_async(ws, batch.data(), pairs, bytes, k, path);
      else
        for (const auto& p : batch) mc::knn_hamming_async(ws, p.query, p.queries, p.train, p.trains, bytes, k, p.idx, p.dist);
    };
    const char* name = call_name.c_str();
    idx.fill_bytes(0xff);
    dist.fill_bytes(0xff);
    run();
    for (std::int64_t i = 0, q0 = 0, t0 = 0; i < pairs && ok; q0 += nq[i], t0 += nt[i], ++i)
      ok = verify_against_cpu(name, query.data() + q0 * bytes, std::min<std::int64_t>(8, nq[i]), train.data() + t0 * bytes, nt[i],
                       bytes, k, idx.data() + q0 * k, dist.data() + q0 * k);
    const timing t = time_launches(run, std::min(opts.warmup, 2), std::min(opts.repetitions, 21));
    const double rate = comparisons / (t.median_ms * 1e-3) / 1e12;
    std::printf("%-28s %10.3f %12.3f\n", name, t.median_ms, rate);
    rows.push_back({{"pairs", pairs}, {"call", batched ? "batched" : "per_pair"}, {"kernel", batched ? call_name.substr(9) : "automatic"}, {"bits", bytes * 8}, {"k", k},
                    {"comparisons", comparisons}, {"ms", t.median_ms}, {"tera_comparisons_per_s", rate}});
  }
  results["match_batched"] = rows;
  return ok;
}

/// A training set in host memory streamed through the GPU (pageable and pinned, 256 MiB chunks)
/// against the same set already on the GPU: 65,536 queries x 2^22 training rows, 256-bit, k = 2.
bool run_streamed(const options& opts, nlohmann::json& results) {
  const std::int64_t queries = opts.quick ? 4096 : 65536, trains = opts.quick ? 65536 : std::int64_t(1) << 22;
  const int bytes = 32, k = 2;
  const auto query = random_bytes(std::size_t(queries * bytes), 31), train = random_bytes(std::size_t(trains * bytes), 32);
  device_buffer<std::uint8_t> dq(query.size()), dt(train.size());
  dq.upload(query);
  dt.upload(train);
  cuda::pinned_buffer<std::uint8_t> pinned_copy(train.size());
  std::uint8_t* pinned = pinned_copy.data();
  std::copy(train.begin(), train.end(), pinned);
  device_buffer<std::int32_t> idx(std::size_t(queries * k)), dist(std::size_t(queries * k));
  mc::workspace ws;
  bool ok = true;
  const std::int64_t chunk = opts.quick ? 16384 : std::int64_t(1) << 20;
  std::printf("\n%lld queries x %lld training rows, 256-bit, k = 2: streamed from host memory (%lld-row chunks)\n",
              (long long)queries, (long long)trains, (long long)chunk);
  std::printf("%-28s %10s %12s\n", "training set", "ms", "T cmp/s");
  nlohmann::json rows = nlohmann::json::array();
  const std::pair<const char*, const std::uint8_t*> sources[] = {
      {"on the GPU", dt.data()}, {"pinned host, streamed", pinned}, {"pageable host, streamed", train.data()}};
  for (const auto& [name, source] : sources) {
    auto run = [&] { mc::knn_hamming_streamed(ws, dq.data(), queries, source, trains, bytes, k, idx.data(), dist.data(), chunk); };
    idx.fill_bytes(0xff);
    dist.fill_bytes(0xff);
    run();
    ok = ok && verify_against_cpu(name, query.data(), 256, train.data(), trains, bytes, k, idx.data(), dist.data());
    const timing t = time_launches(run, 1, std::min(opts.repetitions, 5));
    const double rate = double(queries) * double(trains) / (t.median_ms * 1e-3) / 1e12;
    std::printf("%-28s %10.3f %12.3f\n", name, t.median_ms, rate);
    rows.push_back({{"queries", queries}, {"train", trains}, {"bits", bytes * 8}, {"k", k}, {"source", name},
                    {"chunk_rows", chunk}, {"ms", t.median_ms}, {"tera_comparisons_per_s", rate}});
  }
  results["match_streamed"] = rows;
  return ok;
}

/// `bench match-huge`: one timed 1,000,000 x 1,000,000 search for 256-bit and for 512-bit
/// descriptors (k = 2, tensor cores), the first and last 256 queries verified against the CPU.
int run_match_huge(const options& opts, nlohmann::json& results) {
  const std::int64_t n = opts.quick ? 100000 : 1000000;
  const int k = 2;
  bool ok = true;
  nlohmann::json rows = nlohmann::json::array();
  for (int bytes : {32, 64}) {
    const auto query = random_bytes(std::size_t(n * bytes), 41), train = random_bytes(std::size_t(n * bytes), 42);
    device_buffer<std::uint8_t> dq(query.size()), dt(train.size());
    dq.upload(query);
    dt.upload(train);
    device_buffer<std::int32_t> idx(std::size_t(n * k)), dist(std::size_t(n * k));
    idx.fill_bytes(0xff);
    dist.fill_bytes(0xff);
    mc::workspace ws;
    const timing t = time_launches([&] { mc::knn_hamming_async(ws, dq.data(), n, dt.data(), n, bytes, k, idx.data(), dist.data()); }, 0, 1);
    const bool verified =
        verify_against_cpu("match-huge head", query.data(), 256, train.data(), n, bytes, k, idx.data(), dist.data()) &&
        verify_against_cpu("match-huge tail", query.data() + (n - 256) * bytes, 256, train.data(), n, bytes, k,
                    idx.data() + (n - 256) * k, dist.data() + (n - 256) * k);
    ok = ok && verified;
    const double rate = double(n) * double(n) / (t.median_ms * 1e-3) / 1e12;
    std::printf("%lld x %lld, %d-bit, k = 2, tensor cores: %.3f s, %.3f T comparisons/s%s\n", (long long)n, (long long)n,
                bytes * 8, t.median_ms * 1e-3, rate, verified ? "" : " (VERIFY FAILED)");
    rows.push_back({{"queries", n}, {"train", n}, {"bits", bytes * 8}, {"k", k}, {"ms", t.median_ms},
                    {"tera_comparisons_per_s", rate}, {"verified_queries", 512}});
  }
  results["match_huge"] = rows;
  return ok ? 0 : 1;
}

int run_match_huge_on(const options& opts, const device_info&, nlohmann::json& results) {
  return run_match_huge(opts, results);
}

const bool registered =
    register_suite({"match", "the matcher's GPU kernels side by side, batches and streaming", true, &on_gpu<run_match>}) &&
    register_suite({"match-huge", "one 1,000,000 x 1,000,000 search", true, &on_gpu<run_match_huge_on>});

}  // namespace

}  // namespace multireduce::bench
