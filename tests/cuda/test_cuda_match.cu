// The GPU matcher (multireduce/cuda/match.cuh), both paths, against an independent bit-by-bit
// brute force and OpenCV's BFMatcher results: every idx and dist checked, outputs poisoned first,
// random descriptors from logged seeds. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <multireduce/cuda.cuh>

#include "../common/match_reference.hpp"
#include "../common/test_values.hpp"
#include "cuda_runner.cuh"
#include "device_array.cuh"
#include "npy/npy.hpp"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;

/// The OpenCV fixtures: $MULTIREDUCE_MATCH_DATA, else tests/data/match of this source tree.
std::string match_data() {
  const char* env = std::getenv("MULTIREDUCE_MATCH_DATA");
  return env ? env : MULTIREDUCE_MATCH_DATA;
}



std::uint64_t match_seed(const std::string& what) {
  const std::uint64_t s = base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu (MULTIREDUCE_TEST_SEED=%llu)\n", what.c_str(), (unsigned long long)s,
              (unsigned long long)base_seed());
  return s;
}

constexpr mc::match_path paths[] = {mc::match_path::tensor_core, mc::match_path::popcount};
const char* name(mc::match_path p) { return p == mc::match_path::tensor_core ? "tensor_core" : "popcount"; }

/// Both GPU paths on queries q and training set t (rows of `bytes`) give exactly want_idx/want_dist
/// for k neighbours (outputs poisoned first).
void expect_both_paths_give(mc::workspace& ws, const std::vector<std::uint8_t>& q, const std::vector<std::uint8_t>& t,
                            int bytes, int k, const std::vector<std::int32_t>& want_idx,
                            const std::vector<std::int32_t>& want_dist) {
  const std::int64_t nq = std::int64_t(q.size()) / bytes, nt = std::int64_t(t.size()) / bytes;
  dev<std::uint8_t> dq(q), dt(t);
  for (auto path : paths) {
    SCOPED_TRACE(name(path));
    dev<std::int32_t> idx(std::size_t(nq * k)), dist(std::size_t(nq * k));
    ws.knn_hamming(dq.p, nq, dt.p, nt, bytes, k, idx.p, dist.p, path);
    ASSERT_EQ(idx.get(), want_idx);
    ASSERT_EQ(dist.get(), want_dist);
  }
}

TEST(CudaMatch, BothPathsAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = match_seed("match random");
  mc::workspace ws;
  int case_number = 0;
  // Sizes around the tiles: 16/32-query warp tiles, 64/128/256-query blocks, 128-row training
  // tiles, 8-lane groups, 512-row slices.
  for (int bytes : {4, 8, 32, 36, 64, 100, 128}) {
    for (auto [nq, nt] : {std::pair{0, 3}, {1, 0}, {1, 1}, {2, 2}, {17, 129}, {65, 300}, {257, 1100}, {1000, 3001}}) {
      for (int k : {1, 2, 3, 8}) {
        for (bool sparse : {false, true}) {
          if (nq * nt > 300000 && (k == 3 || bytes == 36 || bytes == 100)) continue;  // keep the reference quick
          const std::uint64_t s = seed + std::uint64_t(++case_number) * 7919;
          const auto q = random_descriptors(std::size_t(nq), bytes, s, sparse);
          const auto t = random_descriptors(std::size_t(nt), bytes, s + 1, sparse);
          std::vector<std::int32_t> want_idx, want_dist;
          reference_knn(q, t, bytes, k, want_idx, want_dist);
          SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " nq=" << nq << " nt=" << nt << " k=" << k
                                            << " sparse=" << sparse << " case seed " << s);
          expect_both_paths_give(ws, q, t, bytes, k, want_idx, want_dist);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Many queries: the tensor-core kernel's 64-query warps (256-bit and narrower, k <= 2).
TEST(CudaMatch, ManyQueriesAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = match_seed("match many queries");
  mc::workspace ws;
  for (int bytes : {8, 32}) {
    for (int k : {1, 2}) {
      const std::int64_t nq = 33001, nt = 130;
      const auto q = random_descriptors(std::size_t(nq), bytes, seed + std::uint64_t(bytes * 10 + k), true);
      const auto t = random_descriptors(std::size_t(nt), bytes, seed + std::uint64_t(bytes * 10 + k) + 1, true);
      std::vector<std::int32_t> want_idx, want_dist;
      reference_knn(q, t, bytes, k, want_idx, want_dist);
      SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " k=" << k);
      expect_both_paths_give(ws, q, t, bytes, k, want_idx, want_dist);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(CudaMatch, BothPathsReproduceOpenCv) {
  MR_REQUIRE_GPU();
  mc::workspace ws;
  for (const std::string kind : {"orb256", "brisk512"}) {
    const std::string dir = match_data() + "/astronaut_warp/";
    const auto query = multireduce::npy::read(dir + "query_" + kind + ".npy");
    const auto train = multireduce::npy::read(dir + "train_" + kind + ".npy");
    const auto idx_file = multireduce::npy::read(dir + "knn_" + kind + "_idx.npy");
    const auto dist_file = multireduce::npy::read(dir + "knn_" + kind + "_dist.npy");
    const auto want_idx = idx_file.values<std::int32_t>(), want_dist = dist_file.values<std::int32_t>();
    const auto qv = query.values<std::uint8_t>(), tv = train.values<std::uint8_t>();
    SCOPED_TRACE(kind);
    expect_both_paths_give(ws, std::vector<std::uint8_t>(qv.begin(), qv.end()), std::vector<std::uint8_t>(tv.begin(), tv.end()),
                           static_cast<int>(query.shape[1]), 2, std::vector<std::int32_t>(want_idx.begin(), want_idx.end()),
                           std::vector<std::int32_t>(want_dist.begin(), want_dist.end()));
  }
}

TEST(CudaMatch, BadArgumentsAreErrors) {
  MR_REQUIRE_GPU();
  dev<std::uint8_t> d(4096);
  dev<std::int32_t> out(64);
  std::size_t bytes = 0;
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.p, 1, d.p, 1, 132, 2, out.p, out.p), cudaErrorInvalidValue);  // > 128
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.p, 1, d.p, 1, 30, 2, out.p, out.p), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.p, 1, d.p, 1, 32, 9, out.p, out.p), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.p, -1, d.p, 1, 32, 2, out.p, out.p), cudaErrorInvalidValue);
  mc::workspace ws;
  EXPECT_THROW(ws.knn_hamming(d.p + 1, 2, d.p, 2, 32, 2, out.p, out.p), mc::error);  // misaligned rows
}

}  // namespace
}  // namespace mr_test
