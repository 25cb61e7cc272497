// runtime/cuda/collection.cu -- the collection matcher on the GPU (match/collection_cuda.cuh):
// the rows in host memory (uploaded whole, or in image blocks when they do not fit the budget)
// or already in GPU memory, every pair's kept matches handed out as each round is read back.
// On a set of several GPUs the pairs are cut into units of whole query images and the GPUs take
// units as they finish the last (work stealing); each pair's matches are the same whichever GPU
// matched it, so the output does not depend on the set.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <numeric>
#include <vector>

#include <multireduce/match/collection_cuda.cuh>

#include "context.cuh"
#include "devices.cuh"
#include "jobs.cuh"

namespace multireduce::runtime::cuda_backend_detail {
namespace {

/// How the pairs are split over several GPUs. units_per_gpu = 8: the collection's units (runs of
/// whole query images) number about 8 per GPU, largest first, so the last unit to finish is short
/// beside the job (the 1000 x 8192 all-pairs job: ~125 pairs a unit on 2 GPUs) while each still
/// holds enough pairs to fill the matcher's rounds. resident_share = 0.5: a GPU keeps the whole
/// collection (uploaded once) when it takes at most half the GPU's free memory; otherwise each unit
/// is matched from host memory in image blocks (match_collection's own plan).
struct collection_devices_tuning {
  static constexpr int units_per_gpu = 8;
  static constexpr double resident_share = 0.5;
};

/// A unit of work: pairs of the list (their indices), all with the same query images.
struct pair_unit {
  std::vector<image_pair> pairs;
  std::vector<std::int64_t> index;
  double comparisons = 0;
};

/// The pairs in units of whole query images of about equal comparisons, largest first.
std::vector<pair_unit> units_of(const collection_job& job, std::size_t gpus) {
  const descriptor_collection& c = job.collection;
  std::vector<std::int64_t> order(job.pairs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return job.pairs[a].first < job.pairs[b].first; });
  double total = 0;
  for (const image_pair& p : job.pairs) total += double(c.rows_of(p.first)) * double(c.rows_of(p.second));
  const double target = total / double(gpus * collection_devices_tuning::units_per_gpu);
  std::vector<pair_unit> units(1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const image_pair p = job.pairs[std::size_t(order[i])];
    pair_unit& u = units.back();
    u.pairs.push_back(p);
    u.index.push_back(order[i]);
    u.comparisons += double(c.rows_of(p.first)) * double(c.rows_of(p.second));
    const bool image_ends = i + 1 == order.size() || job.pairs[std::size_t(order[i + 1])].first != p.first;
    if (image_ends && u.comparisons >= target && i + 1 < order.size()) units.emplace_back();
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const pair_unit& a, const pair_unit& b) { return a.comparisons > b.comparisons; });
  return units;
}

/// One pair's kept matches, on their way from a GPU's thread to the caller's.
struct finished_pair {
  std::int64_t pair;
  std::vector<multireduce::match> kept;
};

void collection_on_gpus(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                        report& r) {
  const descriptor_collection& c = job.collection;
  const std::vector<pair_unit> units = units_of(job, exec.devices.size());
  std::atomic<std::size_t> next_unit{0};
  std::mutex finished_mutex;
  std::deque<finished_pair> finished;
  const std::size_t all_rows_bytes = std::size_t(c.total_rows()) * std::size_t(c.bytes);
  const auto start = std::chrono::steady_clock::now();
  device_threads threads(exec.devices, [&](int, cudaStream_t stream) {
    mc::workspace ws(stream);
    mc::collection_options options;
    options.memory_budget = job.memory_budget;
    // The rows: on this GPU once for all its units when they fit (or are there already), else from
    // host memory in image blocks, unit by unit.
    descriptor_collection here = c;
    mc::device_buffer<std::uint8_t> resident;
    std::size_t free_bytes = 0, total = 0;
    mc::check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
    const std::size_t budget = job.memory_budget > 0 ? job.memory_budget : free_bytes;
    if (job.where.is_host() && all_rows_bytes > 0 &&
        double(all_rows_bytes) <= collection_devices_tuning::resident_share * double(budget)) {
      resident = mc::device_buffer<std::uint8_t>(all_rows_bytes);
      mc::check(cudaMemcpyAsync(resident.data(), c.rows, all_rows_bytes, cudaMemcpyHostToDevice, stream),
                "uploading the collection");
      here.rows = resident.data();
      if (job.memory_budget > 0) options.memory_budget = job.memory_budget - all_rows_bytes;
    }
    for (std::size_t u = next_unit++; u < units.size() && !threads.stopping(); u = next_unit++) {
      const pair_unit& unit = units[u];
      mc::match_collection(ws, here, unit.pairs, job.k, job.rule,
                           [&](std::int64_t local, std::span<const multireduce::match> kept) {
                             finished_pair f{unit.index[std::size_t(local)], {kept.begin(), kept.end()}};
                             const std::lock_guard<std::mutex> lock(finished_mutex);
                             finished.push_back(std::move(f));
                           },
                           options);
      threads.wake();
    }
  });
  threads.wait([&] {
    std::deque<finished_pair> batch;
    {
      const std::lock_guard<std::mutex> lock(finished_mutex);
      batch.swap(finished);
    }
    for (const finished_pair& f : batch) done(f.pair, f.kept);
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.devices = exec.devices.ordinals;
}

}  // namespace

void collection_on_gpu(const collection_job& job, const pair_matches_callback& done, const execution& exec, report& r) {
  translating_errors("matching a collection", [&] {
    if (exec.devices.size() > 1) return collection_on_gpus(job, done, exec, r);
    mc::workspace ws(stream_of(exec));
    mc::collection_options options;
    options.memory_budget = job.memory_budget;
    const auto start = std::chrono::steady_clock::now();
    mc::match_collection(ws, job.collection, job.pairs, job.k, job.rule, done, options);
    // The wall time: the copies, the searches and the read-back overlap, and the call waits for all.
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace multireduce::runtime::cuda_backend_detail
