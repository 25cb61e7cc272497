// tests/ranks/test_nccl_front.cu -- multireduce::nccl with N ranks, one process per GPU (NCCL
// refuses two ranks on one GPU). Started as `multireduce_nccl_tests --ranks N --id-dir DIR`, the
// program is the launcher: its one test skips (gtest's SKIPPED) where the machine has fewer than N
// GPUs, else it starts itself N times (`--rank r --ranks N --id-file F`), rank 0 writes NCCL's
// unique id to F (a temporary file, then rename) and the others poll for it, and it expects every
// rank to exit 0. Each rank builds the WHOLE array from one seed, takes its shard from a shard
// plan and compares every job with the same front on a 1-rank communicator over the whole array
// (bitwise, twice: run to run), with the plain one-GPU call where the front promises it (N <= G,
// argmin/argmax, integer and min/max windows, k-NN). Test bodies never ASSERT: every rank takes
// the same path through the collectives.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <multireduce/cuda/detail/device_buffer.cuh>
#include <multireduce/cuda/workspace.cuh>
#include <multireduce/match/cuda.cuh>
#include <multireduce/nccl.cuh>

#include "rank_cases.hpp"

namespace mr = multireduce;
namespace mc = multireduce::cuda;
using rank_test::plan;
using rank_test::same_bits;
using rank_test::values;

namespace {

int ranks_wanted = 1, my_rank = -1;
std::string id_dir = ".", id_file;
ncclComm_t comm = nullptr, self = nullptr;  // all ranks; this GPU alone
cudaStream_t stream = nullptr;

template <class T>
mc::device_buffer<T> on_device(const std::vector<T>& v) {
  mc::device_buffer<T> d(v.size());
  if (!v.empty()) mc::check(cudaMemcpy(d.data(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return d;
}
template <class T>
std::vector<T> on_host(const T* d, std::size_t n) {
  std::vector<T> v(n);
  if (n > 0) mc::check(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return v;
}

/// This rank's shard of `whole` under plan p, in a device buffer of its own (offset by one element
/// where `misalign`, so that granules are read from unaligned addresses).
template <class T>
struct shard {
  mc::device_buffer<T> storage;
  const T* data = nullptr;
  std::int64_t n = 0;
  shard(const std::vector<T>& whole, const plan& p, bool misalign) {
    const std::int64_t s = p.start(my_rank);
    n = p.lengths[std::size_t(my_rank)];
    std::vector<T> part(std::size_t(n + 1));
    if (n > 0) std::memcpy(part.data() + (misalign ? 1 : 0), whole.data() + s, std::size_t(n) * sizeof(T));
    storage = on_device(part);
    data = n > 0 ? storage.data() + (misalign ? 1 : 0) : nullptr;
  }
};

std::string where(const plan& p, std::int64_t n, const char* what) {
  return std::string(what) + ", plan " + p.name + ", N = " + std::to_string(n) + ", seed " +
         std::to_string(rank_test::base_seed()) + ", rank " + std::to_string(my_rank) + " of " +
         std::to_string(ranks_wanted);
}

const std::int64_t small_granule = std::int64_t{1} << 16;

template <class T, class Op>
void check_reduce(values kind, std::uint64_t salt) {
  const T init = Op::template identity<T>();
  for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(5000), 3 * small_granule + 1234}) {
    const auto whole = rank_test::whole_array<T>(n, kind, salt + std::uint64_t(n));
    const auto d_whole = on_device(whole);
    const T* w = n > 0 ? d_whole.data() : nullptr;
    mc::workspace ws(stream);
    const T plain = ws.reduce(w, n, Op{}, init);
    for (std::int64_t g : {small_granule, mr::nccl::default_granule}) {
      const T one = mr::nccl::reduce(self, stream, w, n, Op{}, init, {g});
      if (n <= g) EXPECT_TRUE(same_bits(one, plain)) << "N <= G: the plain one-GPU call, N = " << n;
      for (const plan& p : rank_test::plans(n, ranks_wanted))
        for (bool misalign : {false, true}) {
          const shard<T> mine(whole, p, misalign);
          for (int run = 0; run < 2; ++run) {
            const T got = mr::nccl::reduce(comm, stream, mine.data, mine.n, Op{}, init, {g});
            EXPECT_TRUE(same_bits(got, one)) << where(p, n, "reduce") << ", granule " << g << ", run " << run;
          }
        }
    }
  }
}

template <class T>
class NcclRankEveryType : public ::testing::Test {};
using every_type = ::testing::Types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                                    std::uint32_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(NcclRankEveryType, every_type);

TYPED_TEST(NcclRankEveryType, ReduceIsTheOneRankFront) {
  using T = TypeParam;
  check_reduce<T, mr::sum>(values::sum, 1);
  check_reduce<T, mr::maximum>(values::extreme, 2);
  if constexpr (std::is_integral_v<T>) check_reduce<T, mr::bit_xor>(values::bits, 3);
  else check_reduce<T, mr::minimum>(values::extreme, 4);
}

TYPED_TEST(NcclRankEveryType, StatisticsAndArgExtremes) {
  using T = TypeParam;
  for (std::int64_t n : {std::int64_t(0), std::int64_t(7), std::int64_t(5000), 2 * small_granule + 99}) {
    auto whole = rank_test::whole_array<T>(n, values::extreme, 11 + std::uint64_t(n));
    for (const plan& p : rank_test::plans(n, ranks_wanted)) {
      for (int r = 0; r < ranks_wanted; ++r)  // ties at every shard's ends
        if (p.lengths[std::size_t(r)] > 0) {
          whole[std::size_t(p.start(r))] = std::numeric_limits<T>::lowest();
          whole[std::size_t(p.start(r) + p.lengths[std::size_t(r)] - 1)] = std::numeric_limits<T>::max();
        }
      const auto d_whole = on_device(whole);
      const T* w = n > 0 ? d_whole.data() : nullptr;
      mc::workspace ws(stream);
      const auto plain_stats = ws.statistics(w, n);
      const auto plain_min = ws.argmin(w, n), plain_max = ws.argmax(w, n);
      const auto one = mr::nccl::statistics(self, stream, w, n, {small_granule});
      if (n <= small_granule) EXPECT_TRUE(rank_test::same_statistics(one, plain_stats)) << "N <= G, N = " << n;
      const shard<T> mine(whole, p, true);
      for (int run = 0; run < 2; ++run) {
        const auto s = mr::nccl::statistics(comm, stream, mine.data, mine.n, {small_granule});
        EXPECT_TRUE(rank_test::same_statistics(s, one)) << where(p, n, "statistics") << ", run " << run;
        const auto lo = mr::nccl::argmin(comm, stream, mine.data, mine.n);
        const auto hi = mr::nccl::argmax(comm, stream, mine.data, mine.n);
        EXPECT_TRUE(same_bits(lo.value, plain_min.value) && lo.index == plain_min.index) << where(p, n, "argmin");
        EXPECT_TRUE(same_bits(hi.value, plain_max.value) && hi.index == plain_max.index) << where(p, n, "argmax");
      }
    }
  }
}

template <class T, class Op>
void check_windows(values kind, std::int64_t n, T init) {
  const auto whole = rank_test::whole_array<T>(n, kind, 41 + std::uint64_t(n));
  const auto d_whole = on_device(whole);
  for (std::int64_t w : {std::int64_t(1), std::int64_t(2), std::int64_t(5), std::int64_t(100), n / 3 + 1, n, n + 1,
                         std::int64_t(5000)}) {
    if (w < 1) continue;
    const std::int64_t outputs = std::max<std::int64_t>(0, n - w + 1);
    mc::device_buffer<T> d_want(std::size_t(outputs + 1));
    mc::workspace ws(stream);
    ws.window_reduce_async(n > 0 ? d_whole.data() : nullptr, n, w, d_want.data(), Op{}, init);
    mc::check(cudaStreamSynchronize(stream), "window_reduce");
    const auto want = on_host(d_want.data(), std::size_t(outputs));
    for (const plan& p : rank_test::plans(n, ranks_wanted)) {
      const shard<T> mine(whole, p, false);
      const std::int64_t s = p.start(my_rank), count = std::max<std::int64_t>(0, std::min(mine.n, n - w + 1 - s));
      mc::device_buffer<T> out(std::size_t(count + 1));
      const std::int64_t wrote =
          mr::nccl::window_reduce(comm, stream, mine.data, mine.n, w, count > 0 ? out.data() : nullptr, Op{}, init);
      EXPECT_EQ(wrote, count) << where(p, n, "window_reduce") << ", W = " << w;
      const auto got = on_host(out.data(), std::size_t(count));
      bool same = wrote == count;
      for (std::int64_t i = 0; same && i < count; ++i) same = same_bits(got[std::size_t(i)], want[std::size_t(s + i)]);
      EXPECT_TRUE(same) << where(p, n, "window_reduce") << ", W = " << w;
    }
  }
}

TEST(NcclRank, WindowsAreTheOneGpuCall) {
  for (std::int64_t n : {std::int64_t(0), std::int64_t(3), std::int64_t(1000), std::int64_t(50000)}) {
    check_windows<std::int32_t, mr::sum>(values::sum, n, 0);
    check_windows<float, mr::maximum>(values::extreme, n, -std::numeric_limits<float>::infinity());
    check_windows<std::uint16_t, mr::bit_or>(values::bits, n, 0);
  }
}

TEST(NcclRank, KnnIsTheOneGpuSearch) {
  for (int bytes : {32, 64}) {
    const std::int64_t queries = 300, trains = 4000;
    std::mt19937_64 rng(rank_test::base_seed() + std::uint64_t(bytes));
    std::vector<std::uint8_t> query(std::size_t(queries * bytes)), train(std::size_t(trains * bytes));
    for (auto& b : query) b = static_cast<std::uint8_t>(rng());
    for (auto& b : train) b = static_cast<std::uint8_t>(rng());
    for (const plan& p : rank_test::plans(trains, ranks_wanted)) {
      auto whole = train;  // ties across rank boundaries: each shard's first row repeats the row before
      for (int r = 1; r < ranks_wanted; ++r) {
        const std::int64_t s = p.start(r);
        if (s > 0 && s < trains)
          std::memcpy(&whole[std::size_t(s * bytes)], &whole[std::size_t((s - 1) * bytes)], std::size_t(bytes));
      }
      const auto d_query = on_device(query), d_whole = on_device(whole);
      const shard<std::uint8_t> mine(std::vector<std::uint8_t>(whole), plan{p.name, [&] {
                                       auto l = p.lengths;
                                       for (auto& x : l) x *= bytes;
                                       return l;
                                     }()},
                                     false);
      for (int k = 1; k <= 3; ++k) {
        const std::size_t per = std::size_t(queries * k);
        mc::device_buffer<std::int32_t> idx(per), dist(per), want_idx(per), want_dist(per);
        mc::workspace ws(stream);
        mc::knn_hamming_async(ws, d_query.data(), queries, d_whole.data(), trains, bytes, k, want_idx.data(),
                              want_dist.data());
        mc::check(cudaStreamSynchronize(stream), "knn");
        mr::nccl::knn_hamming(comm, stream, d_query.data(), queries, mine.data, mine.n / bytes, bytes, k, idx.data(),
                              dist.data());
        EXPECT_EQ(on_host(idx.data(), per), on_host(want_idx.data(), per)) << where(p, trains, "knn") << ", k = " << k;
        EXPECT_EQ(on_host(dist.data(), per), on_host(want_dist.data(), per)) << where(p, trains, "knn") << ", k = " << k;
      }
    }
  }
}

TEST(NcclRank, MismatchedElementTypeIsAnErrorOnEveryRank) {
  if (ranks_wanted < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto f = on_device(std::vector<float>(10, 1.0f));
  const auto i = on_device(std::vector<std::int32_t>(10, 1));
  std::string what;
  try {
    if (my_rank == 1) mr::nccl::reduce(comm, stream, i.data(), 10, mr::sum{}, 0.0f);
    else mr::nccl::reduce(comm, stream, f.data(), 10, mr::sum{}, 0.0f);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_EQ(what, "multireduce::nccl::reduce: rank 1 passed int32 shards, rank 0 float32");
  EXPECT_EQ(mr::nccl::reduce(comm, stream, f.data(), 10, mr::sum{}, 0.0f), 10.0f * float(ranks_wanted));
}

TEST(NcclRank, DifferentInitIsAnErrorOnEveryRank) {
  if (ranks_wanted < 2) GTEST_SKIP() << "needs 2 ranks";
  const auto f = on_device(std::vector<float>(10, 1.0f));
  mc::device_buffer<float> out(10);
  auto error_of = [](auto call) {
    std::string what;
    try {
      call();
    } catch (const std::invalid_argument& e) {
      what = e.what();
    }
    return what;
  };
  EXPECT_EQ(error_of([&] { mr::nccl::reduce(comm, stream, f.data(), 10, mr::sum{}, my_rank == 1 ? 1000.0f : 0.0f); }),
            "multireduce::nccl::reduce: ranks disagree on the init: rank 1 passed 1000, rank 0 0");
  EXPECT_EQ(error_of([&] {
              mr::nccl::window_reduce(comm, stream, f.data(), 10, 3, out.data(), mr::sum{}, my_rank == 1 ? -0.0f : 0.0f);
            }),
            "multireduce::nccl::window_reduce: ranks disagree on the init: rank 1 passed -0, rank 0 0");
  EXPECT_EQ(mr::nccl::reduce(comm, stream, f.data(), 10, mr::sum{}, 1000.0f), 1000.0f + 10.0f * float(ranks_wanted));
}

// ---- the launcher ------------------------------------------------------------------------------

TEST(NcclLaunch, EveryRankPasses) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
  if (gpus < ranks_wanted)
    GTEST_SKIP() << ranks_wanted << " ranks need " << ranks_wanted << " GPUs (one process per GPU: NCCL refuses two "
                 << "ranks on one GPU); this machine has " << gpus;
  const std::string file = id_dir + "/nccl_front_" + std::to_string(ranks_wanted) + "_" + std::to_string(getpid()) + ".id";
  std::remove(file.c_str());
  std::vector<pid_t> children;
  for (int r = 0; r < ranks_wanted; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r), count = std::to_string(ranks_wanted);
      execl("/proc/self/exe", "multireduce_nccl_tests", "--rank", rank.c_str(), "--ranks", count.c_str(), "--id-file",
            file.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  std::vector<int> status(children.size(), -1);
  std::size_t left = children.size();
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (std::size_t r = 0; r < children.size(); ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(children[r], &st, WNOHANG) == children[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::size_t r = 0; r < children.size(); ++r)
    if (status[r] == -1) {  // a rank hangs: stop the ones this test started
      kill(children[r], SIGKILL);
      waitpid(children[r], nullptr, 0);
    }
  std::remove(file.c_str());
  for (std::size_t r = 0; r < children.size(); ++r) EXPECT_EQ(status[r], 0) << "rank " << r << " (-1: timed out)";
}

class failure_printer : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", my_rank, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }
};

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

/// A rank: its GPU, the id through the file, the communicators, the NcclRank tests.
int run_rank() {
  mc::check(cudaSetDevice(my_rank), "cudaSetDevice");
  ncclUniqueId id;
  if (my_rank == 0) {
    nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string tmp = id_file + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    if (std::rename(tmp.c_str(), id_file.c_str()) != 0) throw std::runtime_error("cannot write " + id_file);
  } else {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      std::ifstream in(id_file, std::ios::binary);
      if (in && in.read(reinterpret_cast<char*>(&id), sizeof id)) break;
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no NCCL id in " + id_file);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  nccl_check(ncclCommInitRank(&comm, ranks_wanted, id, my_rank), "ncclCommInitRank");
  int device = my_rank;
  nccl_check(ncclCommInitAll(&self, 1, &device), "ncclCommInitAll");
  mc::check(cudaStreamCreate(&stream), "cudaStreamCreate");
  if (my_rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failure_printer);
  }
  const int failed = RUN_ALL_TESTS();
  ncclCommDestroy(self);
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks") ranks_wanted = std::atoi(argv[++i]);
    else if (a == "--rank") my_rank = std::atoi(argv[++i]);
    else if (a == "--id-dir") id_dir = argv[++i];
    else if (a == "--id-file") id_file = argv[++i];
  }
  std::printf("multireduce::nccl tests: %d ranks%s, seed %llu (MULTIREDUCE_TEST_SEED)\n", ranks_wanted,
              my_rank >= 0 ? (", rank " + std::to_string(my_rank)).c_str() : " (launcher)",
              static_cast<unsigned long long>(rank_test::base_seed()));
  if (my_rank < 0) {
    ::testing::GTEST_FLAG(filter) = "NcclLaunch.*";
    return RUN_ALL_TESTS();
  }
  ::testing::GTEST_FLAG(filter) = "NcclRank*";
  try {
    return run_rank();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] %s\n", my_rank, e.what());
    return 2;
  }
}
