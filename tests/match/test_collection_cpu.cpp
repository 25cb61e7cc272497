// The CPU collection matcher (cpu::match_collection, match/collection.hpp): every pair's matches
// against an independent bit-by-bit reference (common/collection_reference.hpp), across images of
// 0, 1 and k - 1 descriptors, 256 and 512 bits, every pair / a list / sequential, every rule; and
// the pair lists and the collection's checks. Random inputs from logged seeds.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <multireduce/match/collection.hpp>
#include <multireduce/match/cpu.hpp>

#include "../common/collection_reference.hpp"
#include "../common/test_values.hpp"

namespace mr_test {
namespace {

namespace mr = multireduce;

std::uint64_t logged_seed(const std::string& what) {
  const std::uint64_t s = base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu (MULTIREDUCE_TEST_SEED=%llu)\n", what.c_str(), (unsigned long long)s,
              (unsigned long long)base_seed());
  return s;
}

const mr::match_rule rules[] = {
    {},                                  // every query's nearest
    {.ratio = 0.8},                      // Lowe's test
    {.margin = 3},                       // the paper's rule
    {.max_distance = 60},                // a distance bound
    {.ratio = 0.9, .cross_check = true},  // the ratio test and the cross-check
    {.cross_check = true},
};

/// The collection matcher hands out every pair exactly once, each equal to the reference.
void expect_collection_matches_reference(const test_collection& c, const std::vector<mr::image_pair>& pairs, int k,
                                         const mr::match_rule& rule) {
  mr::collection_collector collector(pairs.size());
  mr::cpu::match_collection(c.view(), pairs, k, rule, collector.callback());
  const mr::collection_matches found = collector.take();
  ASSERT_EQ(found.offsets.size(), pairs.size() + 1);
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    SCOPED_TRACE("pair " + std::to_string(pairs[p].first) + " " + std::to_string(pairs[p].second));
    const auto want = reference_pair_matches(c, pairs[p], k, rule);
    const auto got = found.pair(std::int64_t(p));
    ASSERT_EQ(std::vector<mr::match>(got.begin(), got.end()), want);
  }
}

TEST(CpuCollection, EveryPairEqualsTheReference) {
  // Images of 0, 1 and k - 1 descriptors among larger ones.
  const std::vector<std::int64_t> sizes = {40, 0, 1, 1, 33, 70, 2};
  for (int bytes : {32, 64}) {
    for (bool sparse : {false, true}) {
      const test_collection c = random_collection(
          sizes, bytes, logged_seed("cpu collection " + std::to_string(bytes) + (sparse ? " sparse" : "")), sparse);
      for (const auto& rule : rules) {
        for (int k : {1, 2, 3}) {  // k = 1 and 3 with the plainest rules (the lists differ, not the rules)
          if (k != 2 && (rule.ratio > 0 || rule.margin >= 0 || rule.max_distance >= 0)) continue;
          SCOPED_TRACE("bytes " + std::to_string(bytes) + " k " + std::to_string(k) + " ratio " +
                       std::to_string(rule.ratio) + " margin " + std::to_string(rule.margin) + " cross " +
                       std::to_string(rule.cross_check));
          expect_collection_matches_reference(c, mr::all_pairs(std::int64_t(sizes.size())), k, rule);
        }
      }
      expect_collection_matches_reference(c, mr::sequential_pairs(std::int64_t(sizes.size()), 2), 2, {.ratio = 0.8});
      // Few pairs (one after the other, each with all cores) and many (whole pairs to each core).
      expect_collection_matches_reference(c, {{4, 5}, {0, 6}}, 2, {.ratio = 0.8});
      expect_collection_matches_reference(c, {{4, 5}, {0, 6}, {1, 2}, {0, 5}, {2, 3}, {1, 6}, {3, 5}, {0, 1}, {5, 6}},
                                          2, {.ratio = 0.8, .cross_check = true});
    }
  }
}

TEST(CpuCollection, PairLists) {
  EXPECT_EQ(mr::all_pairs(0).size(), 0u);
  EXPECT_EQ(mr::all_pairs(1).size(), 0u);
  EXPECT_EQ(mr::all_pairs(4), (std::vector<mr::image_pair>{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(mr::sequential_pairs(4, 1), (std::vector<mr::image_pair>{{0, 1}, {1, 2}, {2, 3}}));
  EXPECT_EQ(mr::sequential_pairs(4, 2), (std::vector<mr::image_pair>{{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(mr::sequential_pairs(3, 10), mr::all_pairs(3));
  EXPECT_THROW(mr::sequential_pairs(4, 0), std::invalid_argument);
  EXPECT_THROW(mr::all_pairs(-1), std::invalid_argument);
}

TEST(CpuCollection, BadCollectionsAndPairsAreRefused) {
  const test_collection c = random_collection({3, 4, 5}, 32, logged_seed("cpu collection refusals"), false);
  auto run = [&](const mr::descriptor_collection& view, std::vector<mr::image_pair> pairs, int k = 2,
                 mr::match_rule rule = {}) {
    mr::cpu::match_collection(view, pairs, k, rule, [](std::int64_t, std::span<const mr::match>) {
      FAIL() << "a refused call handed out a pair";
    });
  };
  EXPECT_THROW(run(c.view(), {{1, 1}}), std::invalid_argument);          // an image with itself
  EXPECT_THROW(run(c.view(), {{2, 1}}), std::invalid_argument);          // first > second
  EXPECT_THROW(run(c.view(), {{0, 3}}), std::invalid_argument);          // outside the collection
  EXPECT_THROW(run(c.view(), {{-1, 2}}), std::invalid_argument);
  EXPECT_THROW(run(c.view(), {{0, 1}}, 9), std::invalid_argument);      // k past 8
  EXPECT_THROW(run(c.view(), {{0, 1}}, 1, {.ratio = 0.8}), std::invalid_argument);  // the ratio test needs k >= 2
  EXPECT_THROW(run(c.view(), {{0, 1}}, 2, {.ratio = 1.5}), std::invalid_argument);
  mr::descriptor_collection odd = c.view();
  odd.bytes = 30;
  EXPECT_THROW(run(odd, {{0, 1}}), std::invalid_argument);              // not a multiple of 4
  const std::int64_t decreasing[] = {0, 5, 3};
  EXPECT_THROW(run({c.rows.data(), decreasing, 32}, {{0, 1}}), std::invalid_argument);
  const std::int64_t not_from_zero[] = {1, 5, 7};
  EXPECT_THROW(run({c.rows.data(), not_from_zero, 32}, {{0, 1}}), std::invalid_argument);
  EXPECT_THROW(run({c.rows.data(), {}, 32}, {}), std::invalid_argument);  // no offsets at all
  // No pairs: nothing is handed out, no error.
  run(c.view(), {});
}

TEST(CpuCollection, CollectorNamesAPairNeverHandedOut) {
  mr::collection_collector collector(2);
  collector(0, {});
  EXPECT_THROW(collector.take(), std::logic_error);
}

}  // namespace
}  // namespace mr_test
