// bench_match_all.cu -- `multireduce bench match-all`: a whole collection of random ORB-like
// descriptors matched pair by pair with the ratio test (0.8), every pair i < j: the collection
// matcher (cuda::match_collection, rows in host memory as a user's are: the upload is timed) against
// the same pairs matched one after the other with knn_hamming (lists read back, rules on the host).
// The per-pair loop is timed on a sample of the pairs spread over the collection and scaled to all
// of them (it would take minutes). Before anything is timed, sample pairs of the collection's
// output are checked against the per-pair loop's, and two against the CPU matcher.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include <multireduce/match/collection_cuda.cuh>
#include <multireduce/match/cpu.hpp>

#include "bench_util.cuh"

namespace multireduce::bench {
namespace {

namespace mc = multireduce::cuda;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// One pair matched as a caller without the collection matcher would: knn_hamming on the GPU, the
/// lists read back, the rules on the host.
std::vector<match> match_pair_alone(mc::workspace& ws, const std::uint8_t* d_rows, const descriptor_collection& c,
                                    image_pair p, const match_rule& rule, mc::device_buffer<std::int32_t>& idx,
                                    mc::device_buffer<std::int32_t>& dist, std::vector<std::int32_t>& host_idx,
                                    std::vector<std::int32_t>& host_dist) {
  const std::int64_t nq = c.rows_of(p.first), nt = c.rows_of(p.second);
  mc::knn_hamming_async(ws, d_rows + c.offsets[p.first] * c.bytes, nq, d_rows + c.offsets[p.second] * c.bytes, nt,
                        c.bytes, 2, idx.data(), dist.data());
  MULTIREDUCE_BENCH_CHECK(cudaMemcpy(host_idx.data(), idx.data(), std::size_t(nq) * 8, cudaMemcpyDeviceToHost));
  MULTIREDUCE_BENCH_CHECK(cudaMemcpy(host_dist.data(), dist.data(), std::size_t(nq) * 8, cudaMemcpyDeviceToHost));
  return accept_matches(host_idx.data(), host_dist.data(), nq, 2, rule);
}

/// One collection: `images` images of `rows` descriptors of `bytes`, every pair, the ratio test.
bool run_collection(const options& opts, std::int64_t images, std::int64_t rows, int bytes, std::int64_t sampled_pairs,
                    nlohmann::json& out) {
  const match_rule rule{.ratio = 0.8};
  const auto data = random_bytes(std::size_t(images * rows * bytes), 40 + std::uint64_t(bytes));
  std::vector<std::int64_t> offsets(std::size_t(images + 1));
  for (std::int64_t n = 0; n <= images; ++n) offsets[std::size_t(n)] = n * rows;
  const descriptor_collection c{data.data(), offsets, bytes};
  const std::vector<image_pair> pairs = all_pairs(images);
  const double comparisons = double(pairs.size()) * double(rows) * double(rows);
  mc::workspace ws;

  // The collection matcher, its first run kept for the checks.
  // --kernel: the collection matcher's search kernel (default: the one this GPU runs by default).
  mc::collection_options kernel_choice;
  kernel_choice.path = opts.kernel == "wgmma"      ? mc::match_path::wgmma
                       : opts.kernel == "mma_sync" ? mc::match_path::tensor_core
                       : opts.kernel == "popcount" ? mc::match_path::popcount
                                                   : mc::match_path::automatic;
  collection_collector collector(pairs.size());
  auto start = std::chrono::steady_clock::now();
  mc::match_collection(ws, c, pairs, 2, rule, collector.callback(), kernel_choice);
  const double first_run = seconds_since(start);
  const collection_matches found = collector.take();
  std::vector<double> runs{first_run};
  for (int r = 1; r < (opts.quick ? 1 : 3); ++r) {
    start = std::chrono::steady_clock::now();
    mc::match_collection(ws, c, pairs, 2, rule, [](std::int64_t, std::span<const match>) {}, kernel_choice);
    runs.push_back(seconds_since(start));
  }
  std::sort(runs.begin(), runs.end());
  const double collection_s = runs[runs.size() / 2];

  // The per-pair loop on the sample (every step-th pair), which also checks those pairs.
  mc::device_buffer<std::uint8_t> d_rows(data.size());
  MULTIREDUCE_BENCH_CHECK(cudaMemcpy(d_rows.data(), data.data(), data.size(), cudaMemcpyHostToDevice));
  mc::device_buffer<std::int32_t> idx(std::size_t(rows) * 2), dist(std::size_t(rows) * 2);
  std::vector<std::int32_t> host_idx(idx.size()), host_dist(dist.size());
  const std::int64_t step = std::max<std::int64_t>(1, std::int64_t(pairs.size()) / sampled_pairs);
  bool ok = true;
  std::int64_t timed_pairs = 0;
  match_pair_alone(ws, d_rows.data(), c, pairs[0], rule, idx, dist, host_idx, host_dist);  // warm-up
  start = std::chrono::steady_clock::now();
  for (std::size_t p = 0; p < pairs.size(); p += std::size_t(step), ++timed_pairs) {
    const auto kept = match_pair_alone(ws, d_rows.data(), c, pairs[p], rule, idx, dist, host_idx, host_dist);
    const auto got = found.pair(std::int64_t(p));
    if (!std::equal(kept.begin(), kept.end(), got.begin(), got.end())) {
      std::printf("VERIFY FAILED match-all: pair (%d, %d) differs from knn_hamming's\n", pairs[p].first, pairs[p].second);
      ok = false;
    }
  }
  const double per_pair_s = seconds_since(start) / double(timed_pairs) * double(pairs.size());
  for (std::size_t p : {std::size_t(0), pairs.size() - 1}) {  // two pairs against the CPU matcher
    const auto want = cpu::match_descriptors(c.image(pairs[p].first), rows, c.image(pairs[p].second), rows, bytes, 2, rule);
    const auto got = found.pair(std::int64_t(p));
    if (!std::equal(want.begin(), want.end(), got.begin(), got.end())) {
      std::printf("VERIFY FAILED match-all: pair (%d, %d) differs from the CPU matcher's\n", pairs[p].first,
                  pairs[p].second);
      ok = false;
    }
  }
  const double rate = comparisons / collection_s / 1e12, speedup = per_pair_s / collection_s;
  std::printf("%6lld x %5lld %4d  %8zu pairs  %9.3f s %8.3f T/s  %11zu kept   per pair %9.3f s (%lld timed)  %6.2fx\n",
              (long long)images, (long long)rows, bytes * 8, pairs.size(), collection_s, rate, found.matches.size(),
              per_pair_s, (long long)timed_pairs, speedup);
  out.push_back({{"images", images}, {"descriptors_per_image", rows}, {"bits", bytes * 8}, {"pairs", pairs.size()},
                 {"kernel", opts.kernel.empty() ? "automatic" : opts.kernel},
                 {"ratio", 0.8}, {"comparisons", comparisons}, {"seconds", collection_s}, {"runs", runs.size()},
                 {"tera_comparisons_per_s", rate}, {"kept_matches", found.matches.size()},
                 {"per_pair_seconds_estimated", per_pair_s}, {"per_pair_timed_pairs", timed_pairs},
                 {"speedup_over_per_pair", speedup}, {"verified", ok}});
  return ok;
}

int run_match_all(const options& opts, const device_info&, nlohmann::json& results) {
  std::printf("collections of random descriptors, every pair i < j, ratio test 0.8 (k = 2); the collection matcher "
              "(median of %d runs, rows uploaded from host memory) and knn_hamming pair by pair (timed on a sample, "
              "scaled)\n",
              opts.quick ? 1 : 3);
  std::printf("%6s   %5s %4s  %14s  %11s %12s\n", "images", "rows", "bits", "", "seconds", "rate");
  nlohmann::json rows = nlohmann::json::array();
  bool ok = true;
  if (opts.quick) {
    ok = run_collection(opts, 40, 1024, 32, 200, rows) && run_collection(opts, 20, 1024, 64, 100, rows);
  } else {
    ok = run_collection(opts, 100, 8192, 32, 4950, rows) && ok;
    ok = run_collection(opts, 1000, 8192, 32, 2000, rows) && ok;
    ok = run_collection(opts, 1000, 8192, 64, 2000, rows) && ok;
  }
  results["match_all"] = rows;
  return ok ? 0 : 1;
}

const bool registered = register_suite(
    {"match-all", "a collection matched pair by pair: 1000 images x 8192 descriptors", true, &on_gpu<run_match_all>});

}  // namespace
}  // namespace multireduce::bench
