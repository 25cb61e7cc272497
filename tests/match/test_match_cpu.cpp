// tests/match/test_match_cpu.cpp -- the CPU matcher (multireduce/match/cpu.hpp) against an
// independent bit-by-bit brute force, OpenCV's BFMatcher results on real ORB and BRISK descriptors,
// and the acceptance rules. Random inputs come from seeds derived from MULTIREDUCE_TEST_SEED.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <multireduce/match/cpu.hpp>

#include "../common/match_reference.hpp"
#include "../common/test_values.hpp"
#include "npy/npy.hpp"

namespace {
namespace npy = multireduce::npy;

/// The OpenCV fixtures: $MULTIREDUCE_MATCH_DATA, else tests/data/match of this source tree.
std::string match_data() {
  const char* env = std::getenv("MULTIREDUCE_MATCH_DATA");
  return env ? env : MULTIREDUCE_MATCH_DATA;
}


std::uint64_t seed_for(std::uint64_t salt) {
  std::uint64_t h = mr_test::base_seed() ^ (salt * 0x9E3779B97F4A7C15ull);
  h ^= h >> 31;
  return h * 0xBF58476D1CE4E5B9ull;
}

TEST(CpuMatch, KnnAgainstBitwiseBruteForce) {
  for (int bytes : {4, 8, 32, 36, 60, 64, 128, 132}) {
    for (auto [nq, nt] : {std::pair{0, 5}, {1, 0}, {1, 1}, {2, 2}, {3, 17}, {65, 129}, {200, 301}}) {
      for (int k : {1, 2, 3, 8}) {
        for (bool sparse : {false, true}) {
          const std::uint64_t seed = seed_for(std::uint64_t(bytes) * 131 + std::uint64_t(nq) * 7 + std::uint64_t(nt) + std::uint64_t(k) * 1000 + sparse);
          SCOPED_TRACE(::testing::Message() << "bytes=" << bytes << " nq=" << nq << " nt=" << nt << " k=" << k
                                            << " sparse=" << sparse << " seed " << seed);
          const auto q = mr_test::random_descriptors(std::size_t(nq), bytes, seed, sparse);
          const auto t = mr_test::random_descriptors(std::size_t(nt), bytes, seed + 1, sparse);
          std::vector<std::int32_t> want_idx, want_dist;
          mr_test::reference_knn(q, t, bytes, k, want_idx, want_dist);
          std::vector<std::int32_t> idx(std::size_t(nq * k), -7), dist(idx.size(), -7);  // poisoned
          multireduce::cpu::knn_hamming(q.data(), nq, t.data(), nt, bytes, k, idx.data(), dist.data());
          EXPECT_EQ(idx, want_idx);
          EXPECT_EQ(dist, want_dist);
        }
      }
    }
  }
}

struct fixture {
  npy::array query, train, idx, dist;
};

fixture load(const std::string& kind) {
  const std::string dir = match_data() + "/astronaut_warp/";
  return {npy::read(dir + "query_" + kind + ".npy"), npy::read(dir + "train_" + kind + ".npy"),
          npy::read(dir + "knn_" + kind + "_idx.npy"), npy::read(dir + "knn_" + kind + "_dist.npy")};
}

TEST(CpuMatch, ReproducesOpenCvOnRealDescriptors) {
  for (const std::string kind : {"orb256", "brisk512"}) {
    SCOPED_TRACE(kind);
    const fixture f = load(kind);
    ASSERT_EQ(f.query.shape.size(), 2u);
    const int bytes = static_cast<int>(f.query.shape[1]);
    const std::int64_t nq = f.query.shape[0], nt = f.train.shape[0];
    std::vector<std::int32_t> idx(std::size_t(nq * 2), -7), dist(idx.size(), -7);
    multireduce::cpu::knn_hamming(f.query.values<std::uint8_t>().data(), nq, f.train.values<std::uint8_t>().data(), nt,
                                  bytes, 2, idx.data(), dist.data());
    const auto want_idx = f.idx.values<std::int32_t>(), want_dist = f.dist.values<std::int32_t>();
    EXPECT_EQ(idx, std::vector<std::int32_t>(want_idx.begin(), want_idx.end()));
    EXPECT_EQ(dist, std::vector<std::int32_t>(want_dist.begin(), want_dist.end()));
    // The data's README: OpenCV's ratio test at 0.8 keeps 5627 ORB and 1563 BRISK matches.
    multireduce::match_rule rule;
    rule.ratio = 0.8;
    const auto kept = multireduce::accept_matches(idx.data(), dist.data(), nq, 2, rule);
    EXPECT_EQ(kept.size(), kind == "orb256" ? 5627u : 1563u);
  }
}

TEST(CpuMatch, RulesAgainstTheirDefinitions) {
  const int bytes = 32, nq = 300, nt = 200;
  const std::uint64_t seed = seed_for(77);
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const auto q = mr_test::random_descriptors(nq, bytes, seed, true);
  const auto t = mr_test::random_descriptors(nt, bytes, seed + 1, true);
  std::vector<std::int32_t> idx, dist, rev_idx, rev_dist;
  mr_test::reference_knn(q, t, bytes, 2, idx, dist);
  mr_test::reference_knn(t, q, bytes, 1, rev_idx, rev_dist);
  for (double ratio : {0.0, 0.5, 0.8, 1.0}) {
    for (int margin : {-1, 0, 3}) {
      for (int max_distance : {-1, 40}) {
        for (bool cross : {false, true}) {
          multireduce::match_rule rule{ratio, margin, max_distance, cross};
          std::vector<multireduce::match> want;
          for (int i = 0; i < nq; ++i) {
            const int d1 = dist[std::size_t(2 * i)], d2 = dist[std::size_t(2 * i + 1)], tr = idx[std::size_t(2 * i)];
            if (ratio > 0 && !(d1 < ratio * d2)) continue;
            if (margin >= 0 && !(d2 - d1 > margin)) continue;
            if (max_distance >= 0 && d1 > max_distance) continue;
            if (cross && rev_idx[std::size_t(tr)] != i) continue;
            want.push_back({i, tr, d1});
          }
          std::vector<std::int32_t> got_idx, got_dist;
          const auto got = multireduce::cpu::match_descriptors(q.data(), nq, t.data(), nt, bytes, 2, rule, &got_idx, &got_dist);
          EXPECT_EQ(got, want) << "ratio " << ratio << " margin " << margin << " max " << max_distance << " cross " << cross;
          EXPECT_EQ(got_idx, idx);
        }
      }
    }
  }
}

TEST(CpuMatch, FewerTrainingDescriptorsThanK) {
  const auto q = mr_test::random_descriptors(5, 32, seed_for(5), false);
  const auto t = mr_test::random_descriptors(2, 32, seed_for(6), false);
  std::vector<std::int32_t> idx(5 * 4), dist(5 * 4);
  multireduce::cpu::knn_hamming(q.data(), 5, t.data(), 2, 32, 4, idx.data(), dist.data());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(idx[std::size_t(4 * i + 2)], -1);
    EXPECT_EQ(dist[std::size_t(4 * i + 3)], -1);
    EXPECT_GE(idx[std::size_t(4 * i + 1)], 0);
  }
  // One training descriptor: the ratio test cannot reject (no second neighbour).
  std::vector<std::int32_t> i1(5 * 2), d1(5 * 2);
  multireduce::cpu::knn_hamming(q.data(), 5, t.data(), 1, 32, 2, i1.data(), d1.data());
  multireduce::match_rule rule;
  rule.ratio = 0.5;
  EXPECT_EQ(multireduce::accept_matches(i1.data(), d1.data(), 5, 2, rule).size(), 5u);
}

TEST(CpuMatch, BadArgumentsThrow) {
  std::vector<std::uint8_t> d(64);
  std::vector<std::int32_t> idx(16), dist(16);
  EXPECT_THROW(multireduce::cpu::knn_hamming(d.data(), 1, d.data(), 1, 30, 2, idx.data(), dist.data()), std::invalid_argument);
  EXPECT_THROW(multireduce::cpu::knn_hamming(d.data(), 1, d.data(), 1, 32, 0, idx.data(), dist.data()), std::invalid_argument);
  EXPECT_THROW(multireduce::cpu::knn_hamming(d.data(), 1, d.data(), 1, 32, 9, idx.data(), dist.data()), std::invalid_argument);
  EXPECT_THROW(multireduce::cpu::knn_hamming(d.data(), -1, d.data(), 1, 32, 2, idx.data(), dist.data()), std::invalid_argument);
  multireduce::match_rule rule;
  rule.ratio = 1.5;
  EXPECT_THROW(multireduce::check_match_rule(rule), std::invalid_argument);
  rule.ratio = -0.1;
  EXPECT_THROW(multireduce::check_match_rule(rule), std::invalid_argument);
  rule = {};
  rule.margin = -3;
  EXPECT_THROW(multireduce::check_match_rule(rule), std::invalid_argument);
  rule = {};
  rule.ratio = 0.8;
  EXPECT_THROW(multireduce::accept_matches(idx.data(), dist.data(), 1, 1, rule), std::invalid_argument);  // k = 1
}

}  // namespace
