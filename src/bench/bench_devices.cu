// bench_devices.cu -- `multireduce bench devices`: the jobs that split over a set of GPUs, on every
// GPU of the machine beside the first alone, in one run (the baseline in the same process):
//  - the collection matcher (runtime::match_collection), 1000 images x 8192 random ORB-256
//    descriptors, every pair, ratio 0.8: seconds on 1 GPU and on N, the speed-up against the bar
//    0.9 x N; the N-GPU output checked equal to the one GPU's, pair for pair, before it counts;
//  - the statistics of a memory-mapped .npy file of float32 (2^34 values by default: 64 GiB;
//    MULTIREDUCE_BENCH_DEVICES_LOG2 sets the exponent) read by every GPU in parts, beside the
//    ceiling of that read: the same pieces of the same mapping copied to every GPU at once, with
//    no kernel (and the same two on one GPU); the N-GPU statistics checked equal to the one GPU's,
//    bit for bit. The file goes to $TMPDIR (default /tmp) and is removed afterwards.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.cuh"
#include "npy/input_file.hpp"
#include "npy/npy.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::bench {
namespace {

namespace rt = multireduce::runtime;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

rt::execution on(const std::vector<int>& devices) {
  rt::execution e;
  e.backend = "cuda";
  e.devices = rt::device_set{devices};
  return e;
}

/// The collection matcher on one GPU and on the set; false when the outputs differ.
bool collection_rows(const options& opts, const std::vector<int>& all, nlohmann::json& out) {
  const std::int64_t images = opts.quick ? 60 : 1000, rows = opts.quick ? 2048 : 8192;
  const int bytes = 32;
  const auto data = random_bytes(std::size_t(images * rows * bytes), 40 + std::uint64_t(bytes));
  std::vector<std::int64_t> offsets(std::size_t(images + 1));
  for (std::int64_t n = 0; n <= images; ++n) offsets[std::size_t(n)] = n * rows;
  const std::vector<image_pair> pairs = all_pairs(images);
  rt::collection_job job;
  job.collection = descriptor_collection{data.data(), offsets, bytes};
  job.pairs = pairs;
  job.k = 2;
  job.rule = match_rule{.ratio = 0.8};
  const double comparisons = double(pairs.size()) * double(rows) * double(rows);
  auto run = [&](const std::vector<int>& devices, collection_matches* keep) {
    collection_collector collector(pairs.size());
    const auto start = std::chrono::steady_clock::now();
    rt::match_collection(job, collector.callback(), on(devices));
    const double s = seconds_since(start);
    if (keep != nullptr) *keep = collector.take();
    return s;
  };
  std::vector<std::vector<int>> sets{{0}};
  for (std::size_t n = 2; n <= all.size(); n *= 2) sets.emplace_back(all.begin(), all.begin() + std::ptrdiff_t(n));
  if (all.size() > 2 && (all.size() & (all.size() - 1)) != 0) sets.push_back(all);
  collection_matches one;
  bool ok = true;
  double one_s = 0;
  for (const auto& set : sets) {
    collection_matches found;
    std::vector<double> runs{run(set, &found)};  // the first run, kept for the check
    for (int r = 1; r < (opts.quick ? 1 : 3); ++r) runs.push_back(run(set, nullptr));
    std::sort(runs.begin(), runs.end());
    const double s = runs[runs.size() / 2];
    bool same = true;
    if (set.size() == 1) {
      one = std::move(found);
      one_s = s;
    } else {
      same = found.offsets == one.offsets && found.matches == one.matches;
      if (!same) std::printf("VERIFY FAILED devices: the collection's matches on %zu GPUs differ from one GPU's\n", set.size());
      ok = ok && same;
    }
    const double speedup = one_s / s, bar = 0.9 * double(set.size());
    std::printf("collection %lld x %lld ORB-256, all pairs  %zu GPU%s  %8.3f s  %7.3f T/s  speed-up %5.2fx (bar %.2fx)%s\n",
                (long long)images, (long long)rows, set.size(), set.size() == 1 ? " " : "s", s, comparisons / s / 1e12,
                speedup, set.size() == 1 ? 1.0 : bar, set.size() > 1 && speedup < bar ? "  BELOW THE BAR" : "");
    out.push_back({{"job", "collection"}, {"images", images}, {"descriptors_per_image", rows}, {"bits", bytes * 8},
                   {"pairs", pairs.size()}, {"gpus", set.size()}, {"devices", set}, {"seconds", s},
                   {"runs", runs.size()}, {"tera_comparisons_per_s", comparisons / s / 1e12},
                   {"speedup_over_one_gpu", speedup}, {"kept_matches", one.matches.size()}, {"verified", same}});
  }
  return ok;
}

/// Writes a .npy file of n float32 values (a repeated block of random values), returns its path.
std::filesystem::path write_file(std::int64_t n) {
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read before any thread
  const std::filesystem::path path =
      std::filesystem::path(tmp != nullptr && *tmp ? tmp : "/tmp") / ("multireduce_bench_devices_" + std::to_string(::getpid()) + ".npy");
  const std::vector<std::int64_t> shape{n};
  const auto header = npy::encode_header(rt::dtype::float32, shape);
  const std::int64_t block = std::min<std::int64_t>(n, 1 << 24);
  std::vector<float> values(static_cast<std::size_t>(block));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (auto& v : values) v = value(rng);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path.string());
  auto put = [&](const void* p, std::size_t bytes) {
    const auto* b = static_cast<const char*>(p);
    while (bytes > 0) {
      const ssize_t w = ::write(fd, b, bytes);
      if (w <= 0) {
        ::close(fd);
        throw std::runtime_error("cannot write " + path.string());
      }
      b += w;
      bytes -= std::size_t(w);
    }
  };
  put(header.data(), header.size());
  for (std::int64_t first = 0; first < n; first += block)
    put(values.data(), std::size_t(std::min(block, n - first)) * sizeof(float));
  ::close(fd);
  return path;
}

/// The read ceiling: the file's pieces (as the statistics read them) copied to the GPUs of the set
/// at once, each GPU its contiguous share, with no kernel.
double read_ceiling(const std::filesystem::path& path, const std::vector<int>& devices) {
  const auto file = npy::input_file::open(path.string());
  const std::int64_t n = file->count(), piece = file->piece_elements();
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t s = 0; s < devices.size(); ++s) {
    threads.emplace_back([&, s] {
      const std::int64_t first = n * std::int64_t(s) / std::int64_t(devices.size());
      const std::int64_t last = n * std::int64_t(s + 1) / std::int64_t(devices.size());
      auto part = file->open_part(first, last - first);
      if (cudaSetDevice(devices[s]) != cudaSuccess) return void(failed = true);
      void* d = nullptr;
      if (cudaMalloc(&d, std::size_t(piece) * sizeof(float)) != cudaSuccess) return void(failed = true);
      for (std::int64_t at = 0; at < last - first; at += piece) {
        const std::int64_t count = std::min(piece, last - first - at);
        if (cudaMemcpy(d, part->read(at, count), std::size_t(count) * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
          failed = true;
      }
      cudaFree(d);
    });
  }
  for (auto& t : threads) t.join();
  if (failed) throw std::runtime_error("the read ceiling's copies failed");
  return seconds_since(start);
}

bool file_rows(const options& opts, const std::vector<int>& all, nlohmann::json& out) {
  int log2 = opts.quick ? 24 : 34;
  if (const char* e = std::getenv("MULTIREDUCE_BENCH_DEVICES_LOG2"); e != nullptr && *e) log2 = std::atoi(e);
  // Smaller where $TMPDIR lacks the room (with 1 GiB to spare), and said so.
  const char* tmp = std::getenv("TMPDIR");
  const auto room = std::filesystem::space(tmp != nullptr && *tmp ? tmp : "/tmp").available;
  while (log2 > 20 && (std::uintmax_t(4) << log2) + (std::uintmax_t(1) << 30) > room) {
    std::printf("  (2^%d float32 do not fit in the temporary directory's free space: one size smaller)\n", log2);
    --log2;
  }
  const std::int64_t n = std::int64_t(1) << log2;
  auto start = std::chrono::steady_clock::now();
  const std::filesystem::path path = write_file(n);
  struct remove_after {
    std::filesystem::path p;
    ~remove_after() { std::filesystem::remove(p); }
  } cleanup{path};
  std::printf("statistics of a mapped .npy of 2^%d float32 (%.1f GiB, written in %.1f s)\n", log2,
              double(n) * 4 / double(1 << 30), seconds_since(start));
  auto statistics_on = [&](const std::vector<int>& devices, multireduce::statistics<float>& s) {
    const auto file = npy::input_file::open(path.string());
    rt::any_statistics result;
    const auto t0 = std::chrono::steady_clock::now();
    rt::statistics(*file, result, on(devices));
    const double seconds = seconds_since(t0);
    file->check_intact();
    s = std::get<multireduce::statistics<float>>(result);
    return seconds;
  };
  multireduce::statistics<float> warm{};
  statistics_on({0}, warm);  // the file into the page cache, the GPU's context up
  bool ok = true;
  multireduce::statistics<float> one{};
  std::vector<std::vector<int>> sets{{0}};
  if (all.size() > 1) sets.push_back(all);
  for (const std::vector<int>& set : sets) {
    const double ceiling = read_ceiling(path, set);
    multireduce::statistics<float> s{};
    const double seconds = statistics_on(set, s);
    bool same = true;
    if (set.size() == 1) one = s;
    else same = std::memcmp(&s, &one, sizeof s) == 0;
    same = same && s.count == n;
    ok = ok && same;
    const double gbs = double(n) * 4 / seconds / 1e9, ceiling_gbs = double(n) * 4 / ceiling / 1e9;
    std::printf("  %zu GPU%s  statistics %8.3f s %7.2f GB/s   read ceiling %8.3f s %7.2f GB/s   %5.1f%% of it (bar 80%%)%s\n",
                set.size(), set.size() == 1 ? " " : "s", seconds, gbs, ceiling, ceiling_gbs, 100 * gbs / ceiling_gbs,
                same ? "" : "  VERIFY FAILED (differs from one GPU's)");
    out.push_back({{"job", "statistics_of_a_mapped_file"}, {"elements", n}, {"dtype", "float32"}, {"gpus", set.size()},
                   {"devices", set}, {"seconds", seconds}, {"gb_per_s", gbs}, {"read_ceiling_seconds", ceiling},
                   {"read_ceiling_gb_per_s", ceiling_gbs}, {"share_of_ceiling", gbs / ceiling_gbs}, {"verified", same}});
  }
  return ok;
}

int run_devices(const options& opts, const device_info&, nlohmann::json& results) {
  std::vector<int> all;
  for (int d = 0; d < rt::cuda_device_count(); ++d) all.push_back(d);
  std::printf("jobs split over the %zu GPUs of this machine, beside GPU 0 alone (NVLink multicast is not used)\n",
              all.size());
  nlohmann::json rows = nlohmann::json::array();
  bool ok = collection_rows(opts, all, rows);
  ok = file_rows(opts, all, rows) && ok;
  results["devices"] = rows;
  return ok ? 0 : 1;
}

const bool registered = register_suite(
    {"devices", "jobs split over every GPU: the collection matcher, the statistics of a mapped file", true,
     &on_gpu<run_devices>});

}  // namespace
}  // namespace multireduce::bench
