// runtime/test_devices.cpp -- jobs on a set of several GPUs (runtime::device_set): the answer is the
// one GPU's, bit for bit and element for element, whatever the set ({0, 0}: two workers on one GPU;
// every GPU of the machine; every GPU twice). Without a GPU the GPU tests are skipped; the refusals
// that need none run everywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <multireduce/match/collection.hpp>

#include "../common/collection_reference.hpp"
#include "../common/match_reference.hpp"
#include "../common/test_values.hpp"
#include "npy/input_file.hpp"
#include "npy/npy.hpp"
#include "runtime/runtime.hpp"

namespace {

namespace rt = multireduce::runtime;

std::uint64_t seed_for(const std::string& what) {
  const std::uint64_t s = mr_test::base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu\n", what.c_str(), (unsigned long long)s);
  return s;
}

int gpus() { return rt::cuda_device_count(); }

rt::execution on_gpus(std::vector<int> devices) {
  rt::execution e;
  e.backend = "cuda";
  e.devices = rt::device_set{std::move(devices)};
  return e;
}

/// The sets every GPU test compares with the one GPU: two workers on GPU 0, every GPU, every GPU twice.
std::vector<std::vector<int>> sets_of_several() {
  std::vector<int> all, twice;
  for (int d = 0; d < gpus(); ++d) all.push_back(d);
  for (int round = 0; round < 2; ++round) twice.insert(twice.end(), all.begin(), all.end());
  std::vector<std::vector<int>> sets{{0, 0}, twice};
  if (all.size() > 1) sets.push_back(all);
  return sets;
}

/// Host memory read in pieces of `piece` elements that can be opened in parts: what a
/// memory-mapped file is to a job, with many pieces for a small array.
class pieces_source final : public rt::array_source {
 public:
  pieces_source(rt::dtype type, const void* data, std::int64_t n, std::int64_t piece)
      : array_source(type, n), data_(static_cast<const std::byte*>(data)), piece_(piece) {}
  std::int64_t piece_elements() const override { return piece_; }
  const void* read(std::int64_t first, std::int64_t n) override {
    EXPECT_GE(first, last_) << "a part went back";
    EXPECT_LE(first + n, count());
    last_ = first;
    return data_ + std::size_t(first) * rt::size_of(type());
  }
  std::unique_ptr<rt::array_source> open_part(std::int64_t first, std::int64_t n) const override {
    return std::make_unique<pieces_source>(type(), data_ + std::size_t(first) * rt::size_of(type()), n, piece_);
  }

 private:
  const std::byte* data_;
  std::int64_t piece_;
  std::int64_t last_ = 0;
};

/// The same, read front to back only (a pipe).
class front_to_back_source final : public rt::array_source {
 public:
  front_to_back_source(rt::dtype type, const void* data, std::int64_t n)
      : array_source(type, n), data_(static_cast<const std::byte*>(data)) {}
  std::int64_t piece_elements() const override { return 1 << 10; }
  const void* read(std::int64_t first, std::int64_t) override { return data_ + std::size_t(first) * rt::size_of(type()); }

 private:
  const std::byte* data_;
};

/// A sink that keeps the bytes written.
class bytes_sink final : public rt::output_sink {
 public:
  explicit bytes_sink(std::size_t size) : size_(size) {}
  void write(const void* values, std::int64_t n) override {
    const auto* b = static_cast<const std::byte*>(values);
    bytes.insert(bytes.end(), b, b + std::size_t(n) * size_);
  }
  std::vector<std::byte> bytes;

 private:
  std::size_t size_;
};

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) x = T(std::uniform_real_distribution<double>(-1e3, 1e3)(rng));
    else x = T(std::uniform_int_distribution<long long>(-100, 100)(rng));
  }
  return v;
}

// ---- refusals ---------------------------------------------------------------------------------------

TEST(RuntimeDevices, AnEmptySetIsAnError) {
  const std::vector<float> x(100, 1.0f);
  rt::any_statistics s;
  rt::execution e;
  e.devices.ordinals.clear();
  EXPECT_THROW(rt::statistics(rt::array_view{rt::dtype::float32, x.data(), 100}, s, e), std::invalid_argument);
  e.backend = "cpu";
  EXPECT_THROW(rt::statistics(rt::array_view{rt::dtype::float32, x.data(), 100}, s, e), std::invalid_argument);
}

TEST(RuntimeDevices, AMissingGpuIsRefusedWithTheReason) {
  const std::vector<float> x(100, 1.0f);
  rt::any_statistics s;
  try {
    rt::statistics(rt::array_view{rt::dtype::float32, x.data(), 100}, s, on_gpus({0, 999}));
    FAIL() << "a set naming GPU 999 ran";
  } catch (const rt::unsupported_error& e) {
    EXPECT_EQ(e.backend, "cuda");
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(RuntimeDevices, JobsThatDoNotSplitSayWhich) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  const std::vector<float> x(64, 1.0f);
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, x.data(), 64};
  job.shape = rt::shape_kind::window;
  job.length = 4;
  std::vector<float> out(61);
  try {
    rt::reduce(job, rt::output_view{rt::dtype::float32, out.data(), 61}, on_gpus({0, 0}));
    FAIL() << "a window job ran on a set of several GPUs";
  } catch (const rt::unsupported_error& e) {
    EXPECT_NE(std::string(e.what()).find("several GPUs"), std::string::npos) << e.what();
  }
  // "auto" passes the job to the CPU and says why.
  rt::execution e = on_gpus({0, 0});
  e.backend = "auto";
  const rt::report r = rt::reduce(job, rt::output_view{rt::dtype::float32, out.data(), 61}, e);
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_NE(r.passed_over.find("several GPUs"), std::string::npos) << r.passed_over;
}

TEST(RuntimeDevices, ASourceReadFrontToBackNeedsOneGpu) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  const auto x = random_values<float>(1 << 14, 1);
  front_to_back_source in(rt::dtype::float32, x.data(), std::int64_t(x.size()));
  rt::any_statistics s;
  EXPECT_THROW(rt::statistics(in, s, on_gpus({0, 0})), rt::unsupported_error);
}

// ---- whole-array jobs: the one GPU's answer, bit for bit ----------------------------------------------

template <class T>
void expect_whole_jobs_equal(std::uint64_t seed) {
  const std::int64_t n = (1 << 18) + 37, piece = 1 << 13;  // 33 pieces, the last one short
  auto x = random_values<T>(n, seed);
  if constexpr (std::is_floating_point_v<T>) x[std::size_t(n / 2)] = x[std::size_t(n / 3)];  // a tie across parts
  const rt::dtype type = rt::dtype_of<T>();
  auto statistics_on = [&](const std::vector<int>& devices) {
    pieces_source in(type, x.data(), n, piece);
    rt::any_statistics s;
    std::int64_t last_progress = 0;
    rt::execution e = on_gpus(devices);
    e.progress = [&](std::int64_t done, std::int64_t total) {
      EXPECT_EQ(total, n);
      EXPECT_GE(done, last_progress);
      last_progress = done;
    };
    const rt::report r = rt::statistics(in, s, e);
    EXPECT_EQ(last_progress, n);
    if (devices.size() > 1) {
      EXPECT_EQ(r.devices, devices);
    }
    return std::visit([](const auto& v) {
      std::vector<std::byte> b(sizeof v);
      std::memcpy(b.data(), &v, sizeof v);
      return b;
    }, s);
  };
  auto reduce_on = [&](rt::op_kind op, const std::vector<int>& devices) {
    rt::reduce_job job;
    job.input = rt::array_view{type, nullptr, n};
    job.op = op;
    pieces_source in(type, x.data(), n, piece);
    bytes_sink out(rt::size_of(rt::output_dtype(job)));
    rt::reduce(job, in, out, on_gpus(devices));
    return out.bytes;
  };
  const auto one_statistics = statistics_on({0});
  for (const auto& set : sets_of_several()) {
    SCOPED_TRACE("devices of the set: " + std::to_string(set.size()));
    EXPECT_EQ(statistics_on(set), one_statistics);
    for (rt::op_kind op : {rt::op_kind::sum, rt::op_kind::prod, rt::op_kind::min, rt::op_kind::max, rt::op_kind::argmin,
                           rt::op_kind::argmax}) {
      SCOPED_TRACE(std::string(rt::name_of(op)));
      EXPECT_EQ(reduce_on(op, set), reduce_on(op, {0}));
    }
  }
}

TEST(RuntimeDevices, WholeJobsOfAHostSourceAreTheOneGpusBitForBit) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  const std::uint64_t seed = seed_for("devices whole jobs");
  expect_whole_jobs_equal<float>(seed);
  expect_whole_jobs_equal<double>(seed + 1);
  expect_whole_jobs_equal<std::int32_t>(seed + 2);
  expect_whole_jobs_equal<std::uint8_t>(seed + 3);
  expect_whole_jobs_equal<std::int64_t>(seed + 4);
}

TEST(RuntimeDevices, AMappedFileIsReadInPartsInParallel) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  // More than one piece of the file (64 MiB): 20 M float32 values.
  const std::int64_t n = 20'000'000;
  const auto x = random_values<float>(n, seed_for("devices file"));
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("multireduce_devices_" + std::to_string(::getpid()) + ".npy");
  {
    const std::vector<std::int64_t> shape{n};
    const auto bytes = multireduce::npy::encode(rt::dtype::float32, shape, x.data());
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  struct remove_after {
    std::filesystem::path p;
    ~remove_after() { std::filesystem::remove(p); }
  } cleanup{path};
  auto statistics_on = [&](const std::vector<int>& devices) {
    auto file = multireduce::npy::input_file::open(path.string());
    rt::any_statistics s;
    rt::statistics(*file, s, on_gpus(devices));
    file->check_intact();
    return std::get<multireduce::statistics<float>>(s);
  };
  const auto one = statistics_on({0});
  EXPECT_EQ(one.count, n);
  for (const auto& set : sets_of_several()) {
    const auto several = statistics_on(set);
    EXPECT_EQ(std::memcmp(&several, &one, sizeof one), 0);
  }
}

// ---- the matcher's search: the training set in shards, the lists merged exactly ------------------------

TEST(RuntimeDevices, ShardedSearchIsTheOneGpusSearch) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  const std::uint64_t seed = seed_for("devices knn");
  for (int bytes : {32, 64}) {
    for (std::int64_t trains : {0, 1, 3, 1001}) {
      const std::int64_t queries = 517;
      // Sparse rows: many ties, so the merge's order (the lower global index first) is tested.
      const auto q = mr_test::random_descriptors(std::size_t(queries), bytes, seed + bytes, true);
      const auto t = mr_test::random_descriptors(std::size_t(trains), bytes, seed + trains, true);
      for (int k : {1, 2, 5}) {
        std::vector<std::int32_t> want_idx, want_dist, want_reverse, unused;
        mr_test::reference_knn(q, t, bytes, k, want_idx, want_dist);
        mr_test::reference_knn(t, q, bytes, 1, want_reverse, unused);
        for (const auto& set : sets_of_several()) {
          SCOPED_TRACE(testing::Message() << bytes << " bytes, " << trains << " training rows, k = " << k << ", "
                                          << set.size() << " devices");
          rt::knn_job job{{q.data(), queries, t.data(), trains, bytes, k}, true, 0};
          rt::knn_result found;
          found.idx.assign(std::size_t(queries * k), -7);  // poisoned
          rt::knn(job, found, on_gpus(set));
          EXPECT_EQ(found.idx, want_idx);
          EXPECT_EQ(found.dist, want_dist);
          if (trains > 0) {
            EXPECT_EQ(found.reverse_nearest, want_reverse);
          }
        }
      }
    }
  }
}

// ---- the collection matcher: the same matches for every pair, whatever the set ------------------------

TEST(RuntimeDevices, CollectionIsTheSameOnEverySet) {
  if (gpus() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  const std::uint64_t seed = seed_for("devices collection");
  std::vector<std::int64_t> sizes;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 23; ++i) sizes.push_back(std::uniform_int_distribution<int>(0, 400)(rng));
  const auto c = mr_test::random_collection(sizes, 32, seed, false);
  const auto pairs = multireduce::all_pairs(std::int64_t(sizes.size()));
  for (const multireduce::match_rule rule : {multireduce::match_rule{0.8, -1, -1, false},
                                             multireduce::match_rule{0.0, -1, 60, true}}) {
    const int k = rule.ratio > 0 ? 2 : 1;
    auto run = [&](const std::vector<int>& devices, std::size_t budget) {
      rt::collection_job job;
      job.collection = c.view();
      job.pairs = pairs;
      job.k = k;
      job.rule = rule;
      job.memory_budget = budget;
      multireduce::collection_collector collector(pairs.size());
      rt::match_collection(job, collector.callback(), on_gpus(devices));
      return collector.take();
    };
    const auto one = run({0}, 0);
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const auto want = mr_test::reference_pair_matches(c, pairs[p], k, rule);
      const auto got = one.pair(std::int64_t(p));
      ASSERT_EQ(std::vector<multireduce::match>(got.begin(), got.end()), want) << "pair " << p;
    }
    for (const auto& set : sets_of_several()) {
      for (std::size_t budget : {std::size_t(0), std::size_t(3) << 20}) {  // resident, or image blocks
        SCOPED_TRACE(testing::Message() << set.size() << " devices, budget " << budget);
        const auto several = run(set, budget);
        EXPECT_EQ(several.offsets, one.offsets);
        EXPECT_TRUE(several.matches == one.matches);
      }
    }
  }
}

}  // namespace
