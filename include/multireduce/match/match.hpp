// multireduce/match/match.hpp -- brute-force Hamming k-nearest-neighbour matching of binary
// descriptors (ORB, BRIEF, BRISK, FREAK, LATCH, AKAZE): the types and the acceptance rules, shared
// by the CPU path (match/cpu.hpp) and the GPU path (match/cuda.cuh). Plain C++20.
//
// Descriptors are rows of bytes as OpenCV stores them (uint8, N x bytes, bytes a multiple of 4):
// byte j holds bits 8j .. 8j+7. For every query the k nearest training descriptors are listed by
// increasing distance, ties by increasing training index (OpenCV's BFMatcher order); -1 fills the
// places past the training set's size.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

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

/// Which kernel the GPU matcher runs. automatic: wgmma where the code was built for sm_90a and
/// runs on an sm_90 GPU (H100, H200), else tensor_core on sm_80 and newer, else popcount (the
/// figures behind the choice: docs/match.md, match/detail/tuning.cuh).
///  - wgmma: warpgroup binary MMA (wgmma.mma_async, sm_90a only) with a packed 16-bit epilogue;
///  - tensor_core: warp binary MMA (mma.sync m16n8k256, sm_80 and newer);
///  - popcount: CUDA cores only, any GPU.
enum class match_path { automatic, tensor_core, popcount, wgmma };

/// One search of a batch: the k nearest of each of the `queries` rows of `query` among the
/// `trains` rows of `train`, written to idx and dist (queries x k int32). All pointers are in the
/// memory of the backend that runs the search (device memory for the GPU).
struct knn_pair {
  const std::uint8_t* query = nullptr;
  std::int64_t queries = 0;
  const std::uint8_t* train = nullptr;
  std::int64_t trains = 0;
  std::int32_t* idx = nullptr;
  std::int32_t* dist = nullptr;
  /// Added to every training index reported: `train`'s first row's place in a larger training
  /// set that is searched a piece at a time (first_train_index + trains must fit int32).
  std::int64_t first_train_index = 0;
  /// Merge the new neighbours into the lists already in idx/dist (an earlier piece's result, with
  /// lower training indices) instead of overwriting them.
  bool merge = false;
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
/// entries; may be null when rule.cross_check is false or either set is empty).
inline std::vector<match> accept_matches(const std::int32_t* idx, const std::int32_t* dist, std::int64_t queries, int k,
                                         const match_rule& rule, const std::int32_t* reverse_nearest = nullptr) {
  check_match_rule(rule);
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
    if (rule.cross_check) {  // (empty sets never get here: they need no reverse search)
      if (reverse_nearest == nullptr)
        throw std::invalid_argument("the cross-check needs every training descriptor's nearest query");
      if (reverse_nearest[t] != q) continue;
    }
    kept.push_back(match{static_cast<std::int32_t>(q), t, d});
  }
  return kept;
}

}  // namespace multireduce
