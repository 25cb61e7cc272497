// tests/common/match_reference.hpp -- independent k-NN references for the matcher tests: every
// distance computed bit by bit, all pairs sorted by (distance, index), and for larger problems the
// same by 64-bit popcounts and a partial sort. Also random descriptors
// with many ties, and the OpenCV fixtures' location.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace mr_test {

/// Bit-by-bit Hamming distance (no popcount instruction, no word loads).
inline std::int32_t bitwise_hamming(const std::uint8_t* a, const std::uint8_t* b, int bytes) {
  std::int32_t d = 0;
  for (int j = 0; j < bytes; ++j)
    for (int bit = 0; bit < 8; ++bit) d += ((a[j] >> bit) & 1) != ((b[j] >> bit) & 1);
  return d;
}

/// The k nearest by sorting all pairs: idx/dist queries x k, -1 past the training set.
inline void reference_knn(const std::vector<std::uint8_t>& query, const std::vector<std::uint8_t>& train, int bytes,
                          int k, std::vector<std::int32_t>& idx, std::vector<std::int32_t>& dist) {
  const std::size_t nq = query.size() / std::size_t(bytes), nt = train.size() / std::size_t(bytes);
  idx.assign(nq * std::size_t(k), -1);
  dist.assign(nq * std::size_t(k), -1);
  std::vector<std::pair<std::int32_t, std::int32_t>> all(nt);
  for (std::size_t q = 0; q < nq; ++q) {
    for (std::size_t t = 0; t < nt; ++t)
      all[t] = {bitwise_hamming(&query[q * std::size_t(bytes)], &train[t * std::size_t(bytes)], bytes), std::int32_t(t)};
    std::sort(all.begin(), all.end());
    for (std::size_t j = 0; j < std::size_t(k) && j < nt; ++j)
      idx[q * std::size_t(k) + j] = all[j].second, dist[q * std::size_t(k) + j] = all[j].first;
  }
}

/// The same answer for larger problems: distances by 64-bit popcounts (rows of a multiple of 8
/// bytes), the k smallest (distance, index) pairs by a partial sort.
inline void popcount_reference_knn(const std::vector<std::uint8_t>& query, const std::vector<std::uint8_t>& train,
                                   int bytes, int k, std::vector<std::int32_t>& idx, std::vector<std::int32_t>& dist) {
  assert(bytes % 8 == 0);
  const std::size_t nq = query.size() / std::size_t(bytes), nt = train.size() / std::size_t(bytes), words = bytes / 8;
  auto word = [](const std::uint8_t* p) {
    std::uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | p[b];
    return w;
  };
  std::vector<std::uint64_t> t(nt * words);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = word(&train[i * 8]);
  idx.assign(nq * std::size_t(k), -1);
  dist.assign(nq * std::size_t(k), -1);
  std::vector<std::pair<std::int32_t, std::int32_t>> all(nt);
  std::vector<std::uint64_t> q(words);
  for (std::size_t r = 0; r < nq; ++r) {
    for (std::size_t w = 0; w < words; ++w) q[w] = word(&query[(r * words + w) * 8]);
    for (std::size_t c = 0; c < nt; ++c) {
      std::int32_t d = 0;
      for (std::size_t w = 0; w < words; ++w) d += std::popcount(q[w] ^ t[c * words + w]);
      all[c] = {d, std::int32_t(c)};
    }
    const std::size_t keep = std::min<std::size_t>(std::size_t(k), nt);
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(keep), all.end());
    for (std::size_t j = 0; j < keep; ++j)
      idx[r * std::size_t(k) + j] = all[j].second, dist[r * std::size_t(k) + j] = all[j].first;
  }
}

/// Random descriptors; `sparse` makes most bits zero so that equal distances (ties) are common.
inline std::vector<std::uint8_t> random_descriptors(std::size_t rows, int bytes, std::uint64_t seed, bool sparse) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(rows * std::size_t(bytes));
  for (auto& b : v) {
    const auto r = rng();
    b = sparse ? static_cast<std::uint8_t>((r & 0xff) & ((r >> 8) & 0xff) & ((r >> 16) & 0xff)) : static_cast<std::uint8_t>(r);
  }
  return v;
}

}  // namespace mr_test
