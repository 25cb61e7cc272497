// multireduce/match.hpp -- brute-force Hamming k-nearest-neighbour matching of binary descriptors
// (ORB, BRIEF, BRISK, FREAK, LATCH, AKAZE): the types, the acceptance rules and the CPU path.
//
// Descriptors are rows of bytes as OpenCV stores them (uint8, N x bytes, bytes a multiple of 4):
// byte j holds bits 8j .. 8j+7. For every query the k nearest training descriptors are listed by
// increasing distance, ties by increasing training index (OpenCV's BFMatcher order); -1 fills the
// places past the training set's size. The GPU paths are in multireduce/cuda/match.cuh.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/detail.hpp"  // MULTIREDUCE_OMP

namespace multireduce {

/// The largest k the matchers keep.
inline constexpr int match_max_k = 8;

/// Which matches to keep (every enabled test must pass). A query without a second neighbour (a
/// training set of one) passes the ratio and margin tests: there is nothing to be ambiguous with.
struct match_rule {
  double ratio = 0;          ///< > 0: keep when nearest < ratio * second nearest (0 < ratio <= 1)
  int margin = -1;           ///< >= 0: keep when second nearest - nearest > margin (the paper's rule)
  int max_distance = -1;     ///< >= 0: keep when nearest <= max_distance
  bool cross_check = false;  ///< keep only when the query is its nearest training descriptor's nearest query
};

/// One accepted match.
struct match {
  std::int32_t query, train, distance;
  friend bool operator==(const match&, const match&) = default;
};

/// Throws std::invalid_argument when the sizes cannot be matched: a width that is not a positive
/// multiple of 4 bytes, k outside 1..8, negative counts, or counts past int32 indices.
inline void check_match_arguments(std::int64_t queries, std::int64_t trains, int bytes, int k) {
  if (bytes <= 0 || bytes % 4 != 0)
    throw std::invalid_argument("descriptor width must be a positive multiple of 4 bytes, got " + std::to_string(bytes));
  if (k < 1 || k > match_max_k)
    throw std::invalid_argument("k must be 1.." + std::to_string(match_max_k) + ", got " + std::to_string(k));
  if (queries < 0 || trains < 0) throw std::invalid_argument("descriptor counts must not be negative");
  if (queries > INT32_MAX || trains > INT32_MAX)
    throw std::invalid_argument("descriptor counts must fit int32 indices (at most 2^31-1 rows)");
}

/// Throws std::invalid_argument for a rule that makes no sense (ratio outside (0, 1], ...).
inline void check_match_rule(const match_rule& rule) {
  if (rule.ratio != 0 && !(rule.ratio > 0 && rule.ratio <= 1))
    throw std::invalid_argument("ratio must be in (0, 1], got " + std::to_string(rule.ratio));
  if (rule.margin < -1) throw std::invalid_argument("margin must not be negative");
  if (rule.max_distance < -1) throw std::invalid_argument("max distance must not be negative");
}

/// The accepted matches, in query order, from the k-NN lists (idx/dist: queries x k, k >= 1) and,
/// for the cross-check, every training descriptor's nearest query (`reverse_nearest`, trains
/// entries; may be null when rule.cross_check is false).
inline std::vector<match> accept_matches(const std::int32_t* idx, const std::int32_t* dist, std::int64_t queries, int k,
                                         const match_rule& rule, const std::int32_t* reverse_nearest = nullptr) {
  check_match_rule(rule);
  if (rule.cross_check && reverse_nearest == nullptr)
    throw std::invalid_argument("the cross-check needs every training descriptor's nearest query");
  if ((rule.ratio > 0 || rule.margin >= 0) && k < 2)
    throw std::invalid_argument("the ratio and margin tests need k >= 2");
  std::vector<match> kept;
  for (std::int64_t q = 0; q < queries; ++q) {
    const std::int32_t t = idx[q * k], d = dist[q * k];
    if (t < 0) continue;  // an empty training set
    const bool has_second = k >= 2 && idx[q * k + 1] >= 0;
    const std::int32_t d2 = has_second ? dist[q * k + 1] : 0;
    if (rule.ratio > 0 && has_second && !(double(d) < rule.ratio * double(d2))) continue;
    if (rule.margin >= 0 && has_second && !(d2 - d > rule.margin)) continue;
    if (rule.max_distance >= 0 && d > rule.max_distance) continue;
    if (rule.cross_check && reverse_nearest[t] != q) continue;
    kept.push_back(match{static_cast<std::int32_t>(q), t, d});
  }
  return kept;
}

namespace cpu {

namespace detail {

/// Keeps the k smallest (distance, index) keys seen, sorted; indices arrive in increasing order,
/// so a strictly smaller distance is needed to pass an equal one.
struct top_k {
  int k;
  std::int32_t dist[match_max_k], idx[match_max_k];
  int size = 0;
  void push(std::int32_t d, std::int32_t i) {
    if (size == k && d >= dist[k - 1]) return;
    int p = size < k ? size++ : k - 1;
    while (p > 0 && dist[p - 1] > d) {
      dist[p] = dist[p - 1], idx[p] = idx[p - 1];
      --p;
    }
    dist[p] = d, idx[p] = i;
  }
};

/// On x86-64 with GCC or Clang (not in nvcc's host pass): clones of the distance loop for CPUs with
/// AVX-512 VPOPCNTDQ, AVX2 and POPCNT, picked at load time, so a portable build still uses the
/// popcount instructions.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__CUDACC__) && !defined(__NVCOMPILER) && !defined(__INTEL_LLVM_COMPILER)
#define MULTIREDUCE_POPCOUNT_CLONES __attribute__((target_clones("arch=icelake-server", "arch=haswell", "popcnt", "default")))
#else
#define MULTIREDUCE_POPCOUNT_CLONES
#endif

/// d[i] = hamming(a, train row first + i) for i < count (rows of `words` 64-bit words, a copy of
/// the bytes: no alignment needed). A plain loop over rows the compiler vectorises.
MULTIREDUCE_POPCOUNT_CLONES
inline void hamming_row_block(const std::uint64_t* a, const std::uint64_t* rows, int words, std::int64_t count,
                              std::int32_t* d) {
  for (std::int64_t i = 0; i < count; ++i) {
    std::int32_t sum = 0;
    for (int w = 0; w < words; ++w) sum += std::popcount(a[w] ^ rows[i * words + w]);
    d[i] = sum;
  }
}

}  // namespace detail

/// The k nearest training descriptors of every query by Hamming distance (idx, dist: queries x k,
/// -1 past the training set's size), with all cores (OpenMP) and 64-bit popcounts (POPCNT or
/// AVX-512 VPOPCNTDQ where the CPU has them). Query blocks against training blocks that stay in
/// cache: the distances of one query to a training block first, then its top-k list.
inline void knn_hamming(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                        int bytes, int k, std::int32_t* idx, std::int32_t* dist) {
  check_match_arguments(queries, trains, bytes, k);
  constexpr std::int64_t query_block = 64, train_block = 1024;
  const int words = (bytes + 7) / 8;  // rows widened to whole 64-bit words (zero padding)
  const std::int64_t blocks = (queries + query_block - 1) / query_block;
  MULTIREDUCE_OMP(parallel for schedule(dynamic, 1))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t q0 = b * query_block, q1 = std::min(queries, q0 + query_block);
    std::vector<detail::top_k> best(static_cast<std::size_t>(q1 - q0), detail::top_k{k, {}, {}, 0});
    std::vector<std::uint64_t> a(static_cast<std::size_t>((q1 - q0) * words), 0), rows(std::size_t(train_block * words));
    for (std::int64_t q = q0; q < q1; ++q) std::memcpy(&a[std::size_t((q - q0) * words)], query + q * bytes, std::size_t(bytes));
    std::vector<std::int32_t> d(static_cast<std::size_t>(train_block));
    for (std::int64_t t0 = 0; t0 < trains; t0 += train_block) {
      const std::int64_t t1 = std::min(trains, t0 + train_block);
      std::fill(rows.begin(), rows.end(), 0);
      for (std::int64_t t = t0; t < t1; ++t)
        std::memcpy(&rows[std::size_t((t - t0) * words)], train + t * bytes, std::size_t(bytes));
      for (std::int64_t q = q0; q < q1; ++q) {
        detail::hamming_row_block(&a[std::size_t((q - q0) * words)], rows.data(), words, t1 - t0, d.data());
        auto& list = best[static_cast<std::size_t>(q - q0)];
        for (std::int64_t t = t0; t < t1; ++t) list.push(d[std::size_t(t - t0)], static_cast<std::int32_t>(t));
      }
    }
    for (std::int64_t q = q0; q < q1; ++q) {
      const auto& list = best[static_cast<std::size_t>(q - q0)];
      for (int j = 0; j < k; ++j) {
        idx[q * k + j] = j < list.size ? list.idx[j] : -1;
        dist[q * k + j] = j < list.size ? list.dist[j] : -1;
      }
    }
  }
}

/// knn_hamming, then accept_matches (with the reverse 1-NN search when rule.cross_check).
inline std::vector<match> match_descriptors(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                                            std::int64_t trains, int bytes, int k, const match_rule& rule,
                                            std::vector<std::int32_t>* knn_idx = nullptr,
                                            std::vector<std::int32_t>* knn_dist = nullptr) {
  check_match_rule(rule);
  std::vector<std::int32_t> idx(static_cast<std::size_t>(queries * k)), dist(idx.size());
  knn_hamming(query, queries, train, trains, bytes, k, idx.data(), dist.data());
  std::vector<std::int32_t> reverse;
  if (rule.cross_check) {
    reverse.resize(static_cast<std::size_t>(trains));
    std::vector<std::int32_t> reverse_dist(reverse.size());
    knn_hamming(train, trains, query, queries, bytes, 1, reverse.data(), reverse_dist.data());
  }
  auto kept = accept_matches(idx.data(), dist.data(), queries, k, rule, rule.cross_check ? reverse.data() : nullptr);
  if (knn_idx) *knn_idx = std::move(idx);
  if (knn_dist) *knn_dist = std::move(dist);
  return kept;
}

}  // namespace cpu
}  // namespace multireduce
