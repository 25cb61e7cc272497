// common/collection_reference.hpp -- random image collections and their matches by an independent
// reference, for the collection matcher's tests: every pair's k-NN lists by sorting all distances
// bit by bit (match_reference.hpp), the rules by accept_matches, the cross-check's other direction
// by the same brute force.
#pragma once

#include <cstdint>
#include <vector>

#include <multireduce/match/collection.hpp>
#include <multireduce/match/match.hpp>

#include "match_reference.hpp"

namespace mr_test {

/// A collection of images of the given sizes (random rows; `sparse`: many ties).
struct test_collection {
  std::vector<std::uint8_t> rows;
  std::vector<std::int64_t> offsets{0};
  int bytes = 32;
  multireduce::descriptor_collection view() const { return {rows.data(), offsets, bytes}; }
  std::vector<std::uint8_t> image(std::int64_t n) const {
    return {rows.begin() + offsets[n] * bytes, rows.begin() + offsets[n + 1] * bytes};
  }
};

inline test_collection random_collection(const std::vector<std::int64_t>& sizes, int bytes, std::uint64_t seed,
                                         bool sparse) {
  test_collection c;
  c.bytes = bytes;
  for (std::int64_t s : sizes) c.offsets.push_back(c.offsets.back() + s);
  c.rows = random_descriptors(std::size_t(c.offsets.back()), bytes, seed, sparse);
  return c;
}

/// Pair (first, second) matched by the reference: queries image first, training set image second.
inline std::vector<multireduce::match> reference_pair_matches(const test_collection& c, multireduce::image_pair p,
                                                              int k, const multireduce::match_rule& rule) {
  const auto q = c.image(p.first), t = c.image(p.second);
  std::vector<std::int32_t> idx, dist, nearest, nearest_dist;
  reference_knn(q, t, c.bytes, k, idx, dist);
  if (rule.cross_check) reference_knn(t, q, c.bytes, 1, nearest, nearest_dist);
  return multireduce::accept_matches(idx.data(), dist.data(), std::int64_t(q.size()) / c.bytes, k, rule,
                                     rule.cross_check ? nearest.data() : nullptr);
}

}  // namespace mr_test
