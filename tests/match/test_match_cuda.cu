// The GPU matcher (multireduce/match/cuda.cuh), both paths, against an independent bit-by-bit
// brute force and OpenCV's BFMatcher results: every idx and dist checked, outputs poisoned first,
// random descriptors from logged seeds. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <multireduce/match/cuda.cuh>

#include "../common/device_test.cuh"
#include "../common/match_reference.hpp"
#include "npy/npy.hpp"

namespace mr_test {
namespace {

namespace mc = multireduce::cuda;

/// The OpenCV fixtures: $MULTIREDUCE_MATCH_DATA, else tests/data/match of this source tree.
std::string match_data() {
  const char* env = std::getenv("MULTIREDUCE_MATCH_DATA");
  return env ? env : MULTIREDUCE_MATCH_DATA;
}


constexpr mc::match_path paths[] = {mc::match_path::tensor_core, mc::match_path::popcount};
const char* name(mc::match_path p) { return p == mc::match_path::tensor_core ? "tensor_core" : "popcount"; }

/// Both GPU paths on queries q and training set t (rows of `bytes`) give exactly want_idx/want_dist
/// for k neighbours (outputs poisoned first).
void expect_both_paths_give(mc::workspace& ws, const std::vector<std::uint8_t>& q, const std::vector<std::uint8_t>& t,
                            int bytes, int k, const std::vector<std::int32_t>& want_idx,
                            const std::vector<std::int32_t>& want_dist) {
  const std::int64_t nq = std::int64_t(q.size()) / bytes, nt = std::int64_t(t.size()) / bytes;
  auto dq = on_device<std::uint8_t>(q);
  auto dt = on_device<std::uint8_t>(t);
  for (auto path : paths) {
    SCOPED_TRACE(name(path));
    auto idx = on_device<std::int32_t>(std::size_t(nq * k));
    auto dist = on_device<std::int32_t>(std::size_t(nq * k));
    mc::knn_hamming_async(ws, dq.data(), nq, dt.data(), nt, bytes, k, idx.data(), dist.data(), path);
    ASSERT_EQ(host_copy(idx), want_idx);
    ASSERT_EQ(host_copy(dist), want_dist);
  }
}

TEST(CudaMatch, BothPathsAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match random");
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
  const std::uint64_t seed = seed_for("match many queries");
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

// Batches: 70 pairs of random sizes (two launches of up to 48, some pairs without queries or
// without training rows), each pair checked against its own brute force.
TEST(CudaMatch, BatchedPairsAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match batched");
  std::mt19937_64 rng(seed);
  mc::workspace ws;
  for (int bytes : {32, 64}) {
    for (int k : {2, 5}) {
      constexpr int pairs = 70;
      std::vector<std::vector<std::uint8_t>> q(pairs), t(pairs);
      std::vector<multireduce::cuda::device_buffer<std::uint8_t>> dq, dt;
      std::vector<multireduce::cuda::device_buffer<std::int32_t>> idx, dist;
      std::vector<mc::knn_pair> batch(pairs);
      for (int i = 0; i < pairs; ++i) {
        const std::int64_t nq = i % 17 == 3 ? 0 : std::int64_t(rng() % 300), nt = i % 13 == 5 ? 0 : std::int64_t(rng() % 1300);
        q[i] = random_descriptors(std::size_t(nq), bytes, rng(), i % 2 == 0);
        t[i] = random_descriptors(std::size_t(nt), bytes, rng(), i % 2 == 0);
        dq.push_back(on_device<std::uint8_t>(q[i]));
        dt.push_back(on_device<std::uint8_t>(t[i]));
        idx.push_back(on_device<std::int32_t>(std::size_t(nq * k)));
        dist.push_back(on_device<std::int32_t>(std::size_t(nq * k)));
        batch[i] = mc::knn_pair{dq[i].data(), nq, dt[i].data(), nt, idx[i].data(), dist[i].data()};
      }
      std::vector<std::vector<std::int32_t>> want_idx(pairs), want_dist(pairs);
      for (int i = 0; i < pairs; ++i) reference_knn(q[i], t[i], bytes, k, want_idx[i], want_dist[i]);
      for (auto path : paths) {
        SCOPED_TRACE(::testing::Message() << name(path) << " bytes=" << bytes << " k=" << k);
        for (int i = 0; i < pairs; ++i) {  // poison again for the second path
          idx[i].fill_bytes(0xA5);
          dist[i].fill_bytes(0xA5);
        }
        mc::knn_hamming_batched_async(ws, batch.data(), pairs, bytes, k, path);
        for (int i = 0; i < pairs; ++i) {
          SCOPED_TRACE(::testing::Message() << "pair " << i << " nq=" << batch[i].queries << " nt=" << batch[i].trains);
          ASSERT_EQ(host_copy(idx[i]), want_idx[i]);
          ASSERT_EQ(host_copy(dist[i]), want_dist[i]);
        }
      }
    }
  }
}

// A training set searched in pieces (first_train_index, merge) gives the whole set's answer; the
// streamed search does that from host memory, pageable or pinned, with chunks of any size.
TEST(CudaMatch, PiecesAndStreamingGiveTheWholeAnswer) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match streamed");
  mc::workspace ws;
  for (int bytes : {32, 64}) {
    for (int k : {1, 2, 8}) {
      const std::int64_t nq = 300, nt = 5003;
      const auto q = random_descriptors(std::size_t(nq), bytes, seed + std::uint64_t(bytes + k), true);
      const auto t = random_descriptors(std::size_t(nt), bytes, seed + std::uint64_t(bytes + k) + 1, true);
      std::vector<std::int32_t> want_idx, want_dist;
      reference_knn(q, t, bytes, k, want_idx, want_dist);
      auto dq = on_device<std::uint8_t>(q);
      auto dt = on_device<std::uint8_t>(t);
      for (auto path : paths) {
        SCOPED_TRACE(::testing::Message() << name(path) << " bytes=" << bytes << " k=" << k);
        {  // pieces of 1, 999, 2003 and the rest rows, one call each
          auto idx = on_device<std::int32_t>(std::size_t(nq * k));
          auto dist = on_device<std::int32_t>(std::size_t(nq * k));
          std::int64_t first = 0;
          for (std::int64_t rows : {1, 999, 2003, 2000}) {
            mc::knn_pair piece{dq.data(), nq, dt.data() + first * bytes, rows, idx.data(), dist.data()};
            piece.first_train_index = first;
            piece.merge = first > 0;
            mc::knn_hamming_batched_async(ws, &piece, 1, bytes, k, path);
            first += rows;
          }
          ASSERT_EQ(first, nt);
          ASSERT_EQ(host_copy(idx), want_idx);
          ASSERT_EQ(host_copy(dist), want_dist);
        }
        multireduce::cuda::pinned_buffer<std::uint8_t> pinned_copy(t.size());
        std::uint8_t* pinned = pinned_copy.data();
        std::copy(t.begin(), t.end(), pinned);
        const std::uint8_t* sources[] = {t.data(), pinned, dt.data()};
        for (const std::uint8_t* source : sources) {
          for (std::int64_t chunk : {0, 1000, 2048, 9999}) {
            SCOPED_TRACE(::testing::Message() << "source " << (source == t.data() ? "pageable" : source == pinned ? "pinned" : "device")
                                              << " chunk_rows=" << chunk);
            auto idx = on_device<std::int32_t>(std::size_t(nq * k));
            auto dist = on_device<std::int32_t>(std::size_t(nq * k));
            mc::knn_hamming_streamed(ws, dq.data(), nq, source, nt, bytes, k, idx.data(), dist.data(), chunk, path);
            EXPECT_EQ(host_copy(idx), want_idx);
            EXPECT_EQ(host_copy(dist), want_dist);
          }
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(CudaMatch, BadArgumentsAreErrors) {
  MR_REQUIRE_GPU();
  auto d = on_device<std::uint8_t>(4096);
  auto out = on_device<std::int32_t>(64);
  std::size_t bytes = 0;
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.data(), 1, d.data(), 1, 132, 2, out.data(), out.data()), cudaErrorInvalidValue);  // > 128
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.data(), 1, d.data(), 1, 30, 2, out.data(), out.data()), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.data(), 1, d.data(), 1, 32, 9, out.data(), out.data()), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.data(), -1, d.data(), 1, 32, 2, out.data(), out.data()), cudaErrorInvalidValue);
  mc::knn_pair pair{d.data(), 1, d.data(), 1, out.data(), out.data()};
  pair.first_train_index = INT32_MAX;  // indices past int32
  EXPECT_EQ(mc::knn_hamming_batched(nullptr, bytes, &pair, 1, 32, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming_batched(nullptr, bytes, &pair, -1, 32, 2), cudaErrorInvalidValue);
  EXPECT_EQ(mc::knn_hamming_batched(nullptr, bytes, nullptr, 1, 32, 2), cudaErrorInvalidValue);
  mc::workspace ws;
  EXPECT_THROW(mc::knn_hamming_async(ws, d.data() + 1, 2, d.data(), 2, 32, 2, out.data(), out.data()), mc::error);  // misaligned rows
  EXPECT_THROW(mc::knn_hamming_batched_async(ws, &pair, 1, 32, 2), mc::error);
  std::vector<std::uint8_t> host(64);
  EXPECT_THROW(mc::knn_hamming_streamed(ws, d.data(), 1, host.data(), 2, 32, 2, out.data(), out.data(), -1), mc::error);  // chunk < 0
  EXPECT_THROW(mc::knn_hamming_streamed(ws, d.data(), 1, host.data(), 2, 30, 2, out.data(), out.data()), mc::error);      // width
}

}  // namespace
}  // namespace mr_test
