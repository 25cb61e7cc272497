// The GPU matcher (multireduce/match/cuda.cuh), every kernel this GPU runs (wgmma on sm_90 with
// sm_90a code, mma.sync on sm_80+, popcount everywhere), against an independent bit-by-bit
// brute force and OpenCV's BFMatcher results: every idx and dist checked, outputs poisoned first,
// random descriptors from logged seeds. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
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


/// The kernels the current GPU runs: wgmma where the code was built for sm_90a and the GPU is an
/// sm_90 one, mma.sync (tensor_core) from sm_80, popcount everywhere.
std::vector<mc::match_path> gpu_paths() {
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  std::vector<mc::match_path> paths;
  if (mc::detail::wgmma_usable(major, minor)) paths.push_back(mc::match_path::wgmma);
  if (major >= 8) paths.push_back(mc::match_path::tensor_core);
  paths.push_back(mc::match_path::popcount);
  return paths;
}
const char* name(mc::match_path p) {
  return p == mc::match_path::wgmma ? "wgmma" : p == mc::match_path::tensor_core ? "tensor_core" : "popcount";
}

/// Every GPU path on queries q and training set t (rows of `bytes`; the training rows `offset`
/// bytes past a 256-byte boundary) gives exactly want_idx/want_dist for k neighbours (outputs
/// poisoned first).
void expect_both_paths_give(mc::workspace& ws, const std::vector<std::uint8_t>& q, const std::vector<std::uint8_t>& t,
                            int bytes, int k, const std::vector<std::int32_t>& want_idx,
                            const std::vector<std::int32_t>& want_dist, int offset = 0) {
  const std::int64_t nq = std::int64_t(q.size()) / bytes, nt = std::int64_t(t.size()) / bytes;
  auto dq = on_device<std::uint8_t>(q);
  std::vector<std::uint8_t> shifted(std::size_t(offset), 0x5a);
  shifted.insert(shifted.end(), t.begin(), t.end());
  auto dt = on_device<std::uint8_t>(shifted);
  for (auto path : gpu_paths()) {
    SCOPED_TRACE(name(path));
    auto idx = on_device<std::int32_t>(std::size_t(nq * k));
    auto dist = on_device<std::int32_t>(std::size_t(nq * k));
    idx.fill_bytes(0xA5);
    dist.fill_bytes(0xA5);
    mc::knn_hamming_async(ws, dq.data(), nq, dt.data() + offset, nt, bytes, k, idx.data(), dist.data(), path);
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
  for (int bytes : {4, 8, 32, 36, 64, 80, 100, 128}) {
    for (auto [nq, nt] : {std::pair{0, 3}, {1, 0}, {1, 1}, {2, 2}, {17, 129}, {65, 300}, {257, 1100}, {1000, 3001}}) {
      for (int k : {1, 2, 3, 8}) {
        for (bool sparse : {false, true}) {
          if (nq * nt > 300000 && (k == 3 || bytes == 36 || bytes == 80 || bytes == 100)) continue;  // keep the reference quick
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

// Random queries and training rows from case seed s (sparse: few bits set), every path against
// `reference` (reference_knn or popcount_reference_knn).
template <class Reference>
void expect_random_case(mc::workspace& ws, std::int64_t queries, std::int64_t trains, int bytes, int k,
                        std::uint64_t s, bool sparse, Reference reference) {
  const auto q = random_descriptors(std::size_t(queries), bytes, s, sparse);
  const auto t = random_descriptors(std::size_t(trains), bytes, s + 1, sparse);
  std::vector<std::int32_t> want_idx, want_dist;
  reference(q, t, bytes, k, want_idx, want_dist);
  SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " k=" << k << " case seed " << s);
  expect_both_paths_give(ws, q, t, bytes, k, want_idx, want_dist);
}

// Many queries: the tensor-core kernel's 64-query warps (256-bit and narrower, k <= 2).
TEST(CudaMatch, ManyQueriesAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match many queries");
  mc::workspace ws;
  for (int bytes : {8, 32}) {
    for (int k : {1, 2}) {
      expect_random_case(ws, 33001, 130, bytes, k, seed + std::uint64_t(bytes * 10 + k), true, reference_knn);
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
      for (auto path : gpu_paths()) {
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
      for (auto path : gpu_paths()) {
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

// The warpgroup kernel is the one an sm_90 GPU runs by default when the code was built for sm_90a
// (the default build): a Hopper GPU that falls back to mma.sync is a build mistake.
TEST(CudaMatch, HopperRunsTheWarpgroupKernel) {
  MR_REQUIRE_GPU();
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (major != 9 || minor != 0) GTEST_SKIP() << "not an sm_90 GPU";
#if defined(MULTIREDUCE_TEST_EXPECT_SM90A)
  EXPECT_TRUE(mc::detail::wgmma_usable(major, minor));
#endif
  std::size_t bytes = 0;
  auto d = on_device<std::uint8_t>(64);
  auto out = on_device<std::int32_t>(4);
  if (!mc::detail::wgmma_usable(major, minor))
    EXPECT_EQ(mc::knn_hamming(nullptr, bytes, d.data(), 1, d.data(), 1, 32, 2, out.data(), out.data(),
                              mc::match_path::wgmma),
              cudaErrorNotSupported);
}

// Adversarial data for the packed epilogue and the tiles: every pair tied (all descriptors
// equal: OpenCV's order is the training index), descriptors one bit apart, all-ones rows (the
// largest distances), 0 and 1 training rows, training counts one below, at and one above the
// 128-row tiles and the 512-row slices, 256/384/512/768/1024 bits, k = 1..8, and training rows not
// 16-byte aligned (the word-by-word copies).
TEST(CudaMatch, AdversarialDataAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match adversarial");
  std::mt19937_64 rng(seed);
  mc::workspace ws;
  int case_number = 0;
  for (int bytes : {32, 48, 64, 96, 128}) {
    // Around the 128-row tiles of mma.sync, the wgmma kernel's 128-row parts and 512-row tiles.
    for (int trains : {0, 1, 127, 128, 129, 255, 256, 257, 511, 512, 513}) {
      for (int kind = 0; kind < 4; ++kind) {
        const int queries = kind == 3 ? 300 : 131;
        std::vector<std::uint8_t> q(std::size_t(queries) * bytes), t(std::size_t(trains) * bytes);
        if (kind == 0) {  // all equal: every distance the same
          const auto row = random_descriptors(1, bytes, rng(), false);
          for (std::size_t i = 0; i < q.size(); ++i) q[i] = row[i % bytes];
          for (std::size_t i = 0; i < t.size(); ++i) t[i] = row[i % bytes];
        } else if (kind == 1) {  // one base row, each descriptor with one bit flipped (or none)
          const auto row = random_descriptors(1, bytes, rng(), false);
          for (std::size_t i = 0; i < q.size(); ++i) q[i] = row[i % bytes];
          for (std::size_t i = 0; i < t.size(); ++i) t[i] = row[i % bytes];
          for (int r = 0; r < queries; ++r)
            if (const auto bit = rng() % (bytes * 8 + 1); bit < std::uint64_t(bytes) * 8)
              q[std::size_t(r) * bytes + bit / 8] ^= std::uint8_t(1u << (bit % 8));
          for (int r = 0; r < trains; ++r)
            if (const auto bit = rng() % (bytes * 8 + 1); bit < std::uint64_t(bytes) * 8)
              t[std::size_t(r) * bytes + bit / 8] ^= std::uint8_t(1u << (bit % 8));
        } else if (kind == 2) {  // all ones against all zeros and ones: distances 0 and bytes * 8
          for (std::size_t i = 0; i < q.size(); ++i) q[i] = (i / bytes) % 2 ? 0xff : 0x00;
          for (std::size_t i = 0; i < t.size(); ++i) t[i] = (i / bytes) % 3 ? 0xff : 0x00;
        } else {
          q = random_descriptors(std::size_t(queries), bytes, rng(), true);
          t = random_descriptors(std::size_t(trains), bytes, rng(), true);
        }
        for (int k : {1, 2, 3, 8}) {
          ++case_number;
          const int offset = case_number % 3 == 0 ? 4 : 0;
          std::vector<std::int32_t> want_idx, want_dist;
          reference_knn(q, t, bytes, k, want_idx, want_dist);
          SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " trains=" << trains << " kind=" << kind
                                            << " k=" << k << " offset=" << offset << " (seed " << seed << ")");
          expect_both_paths_give(ws, q, t, bytes, k, want_idx, want_dist, offset);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// Each query's two nearest in the same group of the wgmma kernel's row lists (columns 8j + c of
// one 128-row part, j = 0..15, the same c): the kernel keeps each group's least key only and finds
// the first's group's second at the end of the slice. Dense random rows; each of the first 300
// queries is a row a with one bit flipped, and a row b of a's part and c (another j) is a with
// another bit flipped, or, every third query, a and b both equal the query (a tie at 0, the lower
// index first). 700 training rows: parts of the first fill; 10,000 against 33,001 queries (one
// slice a query block on a GPU of 129 SMs or more): the screened parts after it too.
TEST(CudaMatch, TwoNearestInOneGroupAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match two nearest in one group");
  std::mt19937_64 rng(seed);
  mc::workspace ws;
  for (int bytes : {32, 64, 96}) {
    for (int trains : {700, 10000}) {
      const int queries = trains == 700 ? 300 : 33001, parts = trains / 128;
      auto t = random_descriptors(std::size_t(trains), bytes, rng(), false);
      auto q = random_descriptors(std::size_t(queries), bytes, rng(), false);
      std::vector<char> used(std::size_t(trains), 0);
      for (int r = 0; r < 300; ++r) {
        int a = 0, b = 0;
        do {
          const int part = int(rng() % std::uint64_t(parts)), c = int(rng() % 8), j1 = int(rng() % 16),
                    j2 = (j1 + 1 + int(rng() % 15)) % 16;
          a = part * 128 + 8 * j1 + c, b = part * 128 + 8 * j2 + c;
        } while (used[std::size_t(a)] || used[std::size_t(b)]);
        used[std::size_t(a)] = used[std::size_t(b)] = 1;
        const std::uint64_t bits = std::uint64_t(bytes) * 8, bit_a = rng() % bits, bit_b = (bit_a + 1 + rng() % (bits - 1)) % bits;
        auto flip = [&](std::vector<std::uint8_t>& rows, int row, std::uint64_t bit) {
          rows[std::size_t(row) * bytes + bit / 8] ^= std::uint8_t(1u << (bit % 8));
        };
        std::copy_n(t.begin() + std::ptrdiff_t(a) * bytes, bytes, q.begin() + std::ptrdiff_t(r) * bytes);
        flip(q, r, bit_a);
        if (r % 3 == 0) {
          std::copy_n(q.begin() + std::ptrdiff_t(r) * bytes, bytes, t.begin() + std::ptrdiff_t(a) * bytes);
          std::copy_n(q.begin() + std::ptrdiff_t(r) * bytes, bytes, t.begin() + std::ptrdiff_t(b) * bytes);
        } else {
          std::copy_n(t.begin() + std::ptrdiff_t(a) * bytes, bytes, t.begin() + std::ptrdiff_t(b) * bytes);
          flip(t, b, bit_b);
        }
      }
      std::vector<std::int32_t> three_idx, three_dist;  // k = 3; the lists of k = 1, 2 begin them
      popcount_reference_knn(q, t, bytes, 3, three_idx, three_dist);
      for (int k : {1, 2, 3}) {
        std::vector<std::int32_t> want_idx, want_dist;
        for (int r = 0; r < queries; ++r)
          for (int j = 0; j < k; ++j)
            want_idx.push_back(three_idx[std::size_t(3 * r + j)]), want_dist.push_back(three_dist[std::size_t(3 * r + j)]);
        SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " trains=" << trains << " k=" << k << " (seed " << seed << ")");
        expect_both_paths_give(ws, q, t, bytes, k, want_idx, want_dist);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Long training sets, where the lists are full and a pair must beat the k-th best of its row
// (dense random rows: many ties at the k-th distance).
TEST(CudaMatch, LongTrainingSetsAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match long training sets");
  mc::workspace ws;
  for (int bytes : {32, 64}) {
    for (int k : {2, 5}) {
      expect_random_case(ws, 500, 12007, bytes, k, seed + std::uint64_t(bytes * 10 + k), false,
                         reference_knn);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Slices long enough for every kernel to go round its ring of tiles twice (the wgmma kernel's 5,
// or 2 at 1024 bits, of 512 rows: 33,001 queries are 129 blocks, so that one slice is the cheapest
// plan on a GPU of at least 129 SMs, which the test checks), its buffers refilled and its barriers'
// phases back to the first, and for the row lists (k = 2 at 256 bits) past the first fill's 64
// parts of 128 rows into the screened parts. The reference counts 64-bit popcounts.
TEST(CudaMatch, LongSlicesGoRoundTheTileRing) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match long slices");
  mc::workspace ws;
  const std::int64_t queries = 33001, trains = 9000;
  for (int bytes : {32, 128}) {
    for (int k : {2, 5}) {
      int device = 0, major = 0, minor = 0;
      ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
      ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
      ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
      if (mc::detail::wgmma_usable(major, minor) && mc::detail::sm_count() >= 129) {
        const mc::knn_pair pair{nullptr, queries, nullptr, trains, nullptr, nullptr};
        mc::detail::knn_config c{};
        ASSERT_EQ(mc::detail::configure_knn(&pair, 1, bytes, k, mc::match_path::wgmma, c), cudaSuccess);
        const int chunks = (bytes / 4 + 7) / 8;
        const std::int64_t slice_rows = trains / mc::detail::plan_knn_pair(c, pair).slices;
        EXPECT_GT(slice_rows,
                  2 * std::int64_t(mc::detail::knn_tuning::wgmma_stages(chunks)) * mc::detail::knn_tuning::wgmma_train_tile);
        EXPECT_GT(slice_rows, mc::detail::knn_tuning::wgmma_fill_parts * 128);
      }
      expect_random_case(ws, queries, trains, bytes, k, seed + std::uint64_t(bytes * 10 + k), k == 5,
                         popcount_reference_knn);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Batches (and collections) of k <= 2 up to 512 bits take the wgmma kernel's two-warpgroup shape,
// two blocks an SM; lone searches, larger k and wider descriptors the four-warpgroup one. Two
// pairs of many queries (the batch's slices then long enough for the shape's ring of 5 tiles, or
// 3 at 512 bits, to go round once, and past the first fill; the last query blocks 65 and 4
// queries), dense random rows and training rows all alike (every pair tied, through the first
// fill and after it), k = 1 and 2, against a 64-bit popcount brute force.
TEST(CudaMatch, TwoWarpgroupBatchesAgainstBruteForce) {
  MR_REQUIRE_GPU();
  int device = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), cudaSuccess);
  if (!mc::detail::wgmma_usable(major, minor)) GTEST_SKIP() << "no wgmma kernel on this GPU";
  const std::uint64_t seed = seed_for("match two-warpgroup batches");
  std::mt19937_64 rng(seed);
  mc::workspace ws;
  constexpr int pairs = 2;
  const std::int64_t queries[pairs] = {40001, 36100}, trains[pairs] = {17000, 16800};
  for (int bytes : {32, 64}) {
    for (bool alike : {false, true}) {
      std::vector<std::vector<std::uint8_t>> q(pairs), t(pairs);
      std::vector<std::vector<std::int32_t>> want_idx(pairs), want_dist(pairs);  // k = 2
      for (int i = 0; i < pairs; ++i) {
        q[i] = random_descriptors(std::size_t(queries[i]), bytes, rng(), false);
        t[i] = random_descriptors(std::size_t(trains[i]), bytes, rng(), false);
        if (alike) std::fill(t[i].begin(), t[i].end(), std::uint8_t(0x96));
        popcount_reference_knn(q[i], t[i], bytes, 2, want_idx[i], want_dist[i]);
      }
      for (int k : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " k=" << k << " alike=" << alike << " (seed " << seed << ")");
        std::vector<mc::knn_pair> batch(pairs);
        for (int i = 0; i < pairs; ++i) batch[i] = mc::knn_pair{nullptr, queries[i], nullptr, trains[i], nullptr, nullptr};
        mc::detail::knn_config c{};
        ASSERT_EQ(mc::detail::configure_knn(batch.data(), pairs, bytes, k, mc::match_path::wgmma, c), cudaSuccess);
        EXPECT_EQ(c.wgmma_warpgroups, mc::detail::knn_tuning::wgmma_many_warpgroups);
        const int ring = mc::detail::knn_tuning::wgmma_stages(c.units, c.wgmma_warpgroups) *
                         mc::detail::knn_tuning::wgmma_train_tile;
        const int first_fill = mc::detail::knn_tuning::wgmma_fill_parts * 128;
        for (int i = 0; i < pairs; ++i)
          EXPECT_GT(trains[i] / mc::detail::plan_knn_pair(c, batch[i]).slices, std::max(ring, first_fill));
        std::vector<multireduce::cuda::device_buffer<std::uint8_t>> dq, dt;
        std::vector<multireduce::cuda::device_buffer<std::int32_t>> idx, dist;
        for (int i = 0; i < pairs; ++i) {
          dq.push_back(on_device<std::uint8_t>(q[i]));
          dt.push_back(on_device<std::uint8_t>(t[i]));
          idx.push_back(on_device<std::int32_t>(std::size_t(queries[i]) * k));
          dist.push_back(on_device<std::int32_t>(std::size_t(queries[i]) * k));
          idx[i].fill_bytes(0xA5), dist[i].fill_bytes(0xA5);
          batch[i] = mc::knn_pair{dq[i].data(), queries[i], dt[i].data(), trains[i], idx[i].data(), dist[i].data()};
        }
        mc::knn_hamming_batched_async(ws, batch.data(), pairs, bytes, k, mc::match_path::wgmma);
        for (int i = 0; i < pairs; ++i) {
          SCOPED_TRACE(::testing::Message() << "pair " << i);
          std::vector<std::int32_t> wi, wd;  // the reference's first k of each row
          for (std::int64_t r = 0; r < queries[i]; ++r)
            for (int j = 0; j < k; ++j) wi.push_back(want_idx[i][std::size_t(2 * r + j)]), wd.push_back(want_dist[i][std::size_t(2 * r + j)]);
          ASSERT_EQ(host_copy(idx[i]), wi);
          ASSERT_EQ(host_copy(dist[i]), wd);
        }
      }
    }
  }
  // The other shape: one search, k > 2, or more than 512 bits.
  const mc::knn_pair two[2] = {{nullptr, 100, nullptr, 100, nullptr, nullptr}, {nullptr, 100, nullptr, 100, nullptr, nullptr}};
  for (auto [count, bytes, k] : {std::tuple{1, 32, 2}, std::tuple{2, 32, 5}, std::tuple{2, 96, 2}}) {
    mc::detail::knn_config c{};
    ASSERT_EQ(mc::detail::configure_knn(two, count, bytes, k, mc::match_path::wgmma, c), cudaSuccess);
    EXPECT_EQ(c.wgmma_warpgroups, mc::detail::knn_tuning::wgmma_lone_warpgroups) << count << " " << bytes << " " << k;
  }
}

// The wgmma kernel's tiles of evenly cut slices: slice s of a search starts at tile begin / 512 +
// s, so the slices' tiles never overlap and fit the bound the host allocates, for any number of
// rows and slices. Host arithmetic: runs without a GPU too.
TEST(CudaMatch, TiledSlicesNeverOverlap) {
  const std::uint64_t seed = seed_for("match tiled slices");
  std::mt19937_64 rng(seed);
  constexpr std::int64_t tile = mc::detail::knn_tuning::wgmma_train_tile;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::int64_t slices = 1 + std::int64_t(rng() % (trial % 3 == 0 ? 2000 : 40));
    const std::int64_t trains = trial % 5 == 0 ? slices * std::int64_t(rng() % 700) : std::int64_t(rng() % 3000000);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " trains=" << trains << " slices=" << slices
                                      << " (seed " << seed << ")");
    std::int64_t next_free = 0;  // the first tile after the slices so far
    for (std::int64_t s = 0; s < slices; ++s) {
      const std::int64_t begin = trains * s / slices, end = trains * (s + 1) / slices;  // as slice_rows cuts them
      const std::int64_t first = mc::detail::wgmma_even_first_tile(begin, int(s));
      ASSERT_GE(first, next_free) << "slice " << s;
      next_free = first + (end - begin + tile - 1) / tile;
    }
    ASSERT_LE(next_free, mc::detail::wgmma_tiles_bound(trains, slices));
  }
}

// The wgmma kernel's slices have at most wgmma_slice_rows_most rows (its row lists keep a column's
// place in the slice in 21 bits): the plans of lone searches (either GPU size) and of batches cut
// longer training sets into more slices. Host arithmetic: runs without a GPU too.
TEST(CudaMatch, WgmmaSlicesStayUnderTheirRowLimit) {
  constexpr std::int64_t limit = mc::detail::wgmma_slice_rows_most;
  for (std::int64_t resident : {0, 132, 1056}) {
    for (std::int64_t queries : {1, 300, 65536, 1000000}) {
      for (std::int64_t trains : {std::int64_t(1), limit - 1, limit, limit + 1, 3 * limit + 7, std::int64_t(1) << 22,
                                  std::int64_t(INT32_MAX)}) {
        mc::detail::knn_config c{};
        c.wgmma = c.tensor = true, c.kcap = 2, c.units = 1, c.resident = resident;
        c.wgmma_warpgroups = resident > 0 ? mc::detail::knn_tuning::wgmma_lone_warpgroups
                                          : mc::detail::knn_tuning::wgmma_many_warpgroups;
        c.block_queries = mc::detail::knn_tuning::wgmma_block_queries(c.wgmma_warpgroups);
        c.want_blocks = 8 * 132, c.total_work = double(queries) * double(trains);
        const mc::knn_pair pair{nullptr, queries, nullptr, trains, nullptr, nullptr};
        const auto plan = mc::detail::plan_knn_pair(c, pair);
        SCOPED_TRACE(::testing::Message() << "resident=" << resident << " queries=" << queries << " trains=" << trains
                                          << " slices=" << plan.slices);
        EXPECT_GE(plan.slices, 1);
        EXPECT_LE(plan.slices, 65535);
        EXPECT_LE((trains + plan.slices - 1) / plan.slices, limit);  // slice_rows' longest slice
      }
    }
  }
}

// A batch mixing tiny and large pairs (one query against thousands of rows, thousands against
// one, and a 4000 x 9000 pair among them), every k from 1 to 8.
TEST(CudaMatch, MixedBatchAgainstBitwiseBruteForce) {
  MR_REQUIRE_GPU();
  const std::uint64_t seed = seed_for("match mixed batch");
  std::mt19937_64 rng(seed);
  mc::workspace ws;
  const int bytes = 32;
  const std::pair<int, int> sizes[] = {{1, 3000}, {3000, 1}, {4000, 9000}, {2, 2}, {129, 129}, {0, 50},
                                       {50, 0}, {700, 2500}, {1, 1}, {257, 513}};
  constexpr int pairs = sizeof(sizes) / sizeof(sizes[0]);
  std::vector<std::vector<std::uint8_t>> q(pairs), t(pairs);
  for (int i = 0; i < pairs; ++i) {
    q[i] = random_descriptors(std::size_t(sizes[i].first), bytes, rng(), i % 2 == 0);
    t[i] = random_descriptors(std::size_t(sizes[i].second), bytes, rng(), i % 2 == 0);
  }
  for (int k = 1; k <= 8; k += (k < 3 ? 1 : 5)) {
    std::vector<multireduce::cuda::device_buffer<std::uint8_t>> dq, dt;
    std::vector<multireduce::cuda::device_buffer<std::int32_t>> idx, dist;
    std::vector<mc::knn_pair> batch(pairs);
    for (int i = 0; i < pairs; ++i) {
      dq.push_back(on_device<std::uint8_t>(q[i]));
      dt.push_back(on_device<std::uint8_t>(t[i]));
      idx.push_back(on_device<std::int32_t>(std::size_t(sizes[i].first) * k));
      dist.push_back(on_device<std::int32_t>(std::size_t(sizes[i].first) * k));
      batch[i] = mc::knn_pair{dq[i].data(), sizes[i].first, dt[i].data(), sizes[i].second, idx[i].data(), dist[i].data()};
    }
    std::vector<std::vector<std::int32_t>> want_idx(pairs), want_dist(pairs);
    for (int i = 0; i < pairs; ++i) reference_knn(q[i], t[i], bytes, k, want_idx[i], want_dist[i]);
    for (auto path : gpu_paths()) {
      SCOPED_TRACE(::testing::Message() << name(path) << " k=" << k << " (seed " << seed << ")");
      for (int i = 0; i < pairs; ++i) idx[i].fill_bytes(0xA5), dist[i].fill_bytes(0xA5);
      mc::knn_hamming_batched_async(ws, batch.data(), pairs, bytes, k, path);
      for (int i = 0; i < pairs; ++i) {
        SCOPED_TRACE(::testing::Message() << "pair " << i);
        ASSERT_EQ(host_copy(idx[i]), want_idx[i]);
        ASSERT_EQ(host_copy(dist[i]), want_dist[i]);
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
