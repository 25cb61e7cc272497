// multireduce/match/collection.hpp -- matching a whole image collection: the descriptors of N
// images in one array, the image pairs to match (every pair, a list, or each image with the next
// W), and the matches of each pair handed out as soon as they are ready. Shared by the CPU path
// (match/cpu.hpp, cpu::match_collection) and the GPU path (match/collection_cuda.cuh,
// cuda::match_collection). Plain C++20.
//
// Every pair (first, second) is matched as match_descriptors would match image `first`'s
// descriptors (the queries) against image `second`'s (the training set): the same k-NN lists,
// the same rules, the same matches in the same (query) order.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "match.hpp"

namespace multireduce {

/// How two descriptors are compared. Only Hamming distance exists today; a second kind (uint8
/// vectors compared by L2, as COLMAP stores SIFT) would be another value here.
enum class descriptor_metric { hamming };

/// The descriptors of a collection: one array of rows of `bytes` bytes, image n's rows at
/// [offsets[n], offsets[n + 1]) (offsets: images + 1 non-decreasing values from 0).
struct descriptor_collection {
  const std::uint8_t* rows = nullptr;
  std::span<const std::int64_t> offsets;
  int bytes = 32;
  descriptor_metric metric = descriptor_metric::hamming;

  std::int64_t images() const { return offsets.empty() ? 0 : static_cast<std::int64_t>(offsets.size()) - 1; }
  std::int64_t rows_of(std::int64_t image) const { return offsets[image + 1] - offsets[image]; }
  std::int64_t total_rows() const { return offsets.empty() ? 0 : offsets.back(); }
  const std::uint8_t* image(std::int64_t n) const { return rows + offsets[n] * bytes; }
};

/// Two images of a collection by index; a pair to match has first < second.
struct image_pair {
  std::int32_t first = 0, second = 0;
  friend bool operator==(const image_pair&, const image_pair&) = default;
};

/// Every pair i < j of `images` images, in order (0,1), (0,2), ..., (1,2), ...
inline std::vector<image_pair> all_pairs(std::int64_t images) {
  if (images < 0 || images > INT32_MAX) throw std::invalid_argument("the image count must be 0..2^31-1");
  std::vector<image_pair> pairs;
  pairs.reserve(static_cast<std::size_t>(images * (images > 0 ? images - 1 : 0) / 2));
  for (std::int64_t i = 0; i < images; ++i)
    for (std::int64_t j = i + 1; j < images; ++j)
      pairs.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
  return pairs;
}

/// Each image with the next `window` images (a video, a walk): (i, i+1), ..., (i, i+window).
inline std::vector<image_pair> sequential_pairs(std::int64_t images, std::int64_t window) {
  if (images < 0 || images > INT32_MAX) throw std::invalid_argument("the image count must be 0..2^31-1");
  if (window < 1) throw std::invalid_argument("the sequential window must be at least 1, got " + std::to_string(window));
  std::vector<image_pair> pairs;
  for (std::int64_t i = 0; i < images; ++i)
    for (std::int64_t j = i + 1; j < images && j <= i + window; ++j)
      pairs.push_back({static_cast<std::int32_t>(i), static_cast<std::int32_t>(j)});
  return pairs;
}

/// Throws std::invalid_argument for a collection or pair list that cannot be matched: a width
/// that is not a positive multiple of 4, offsets that do not start at 0 or decrease, an image past
/// int32 rows, a pair outside the collection, a pair of an image with itself or with first > second.
inline void check_collection(const descriptor_collection& c, std::span<const image_pair> pairs, int k) {
  if (c.offsets.empty()) throw std::invalid_argument("a collection needs images + 1 offsets (at least the 0)");
  if (c.offsets.front() != 0) throw std::invalid_argument("the collection's offsets must start at 0");
  for (std::int64_t n = 0; n < c.images(); ++n) {
    if (c.rows_of(n) < 0) throw std::invalid_argument("the collection's offsets must not decrease (image " + std::to_string(n) + ")");
    check_match_arguments(c.rows_of(n), 0, c.bytes, k);
  }
  if (c.images() == 0 || c.bytes <= 0 || c.bytes % 4 != 0) check_match_arguments(0, 0, c.bytes, k);
  if (c.total_rows() > 0 && c.rows == nullptr) throw std::invalid_argument("the collection has rows but no data");
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const image_pair& q = pairs[p];
    if (q.first < 0 || q.second < 0 || q.first >= c.images() || q.second >= c.images())
      throw std::invalid_argument("pair " + std::to_string(p) + " (" + std::to_string(q.first) + ", " +
                                  std::to_string(q.second) + ") names an image outside the collection of " +
                                  std::to_string(c.images()));
    if (q.first >= q.second)
      throw std::invalid_argument("pair " + std::to_string(p) + " (" + std::to_string(q.first) + ", " +
                                  std::to_string(q.second) + ") must have first < second");
  }
}

/// Receives the matches of one pair, by its index in the pair list, as soon as they are ready:
/// (query row in image first, training row in image second, distance), in match_descriptors'
/// order. Called on the thread that called the matcher, one pair at a time, in no set order.
using pair_matches_callback = std::function<void(std::int64_t pair, std::span<const match> kept)>;

/// The matches of a collection gathered in pair-list order (what the callback hands out,
/// collected): pair p's matches at matches[offsets[p], offsets[p + 1]).
struct collection_matches {
  std::vector<std::int64_t> offsets;
  std::vector<match> matches;
  std::span<const match> pair(std::int64_t p) const {
    return {matches.data() + offsets[p], static_cast<std::size_t>(offsets[p + 1] - offsets[p])};
  }
};

/// Collects what a matcher hands out, pair by pair, into pair-list order.
class collection_collector {
 public:
  explicit collection_collector(std::size_t pairs) : per_pair_(pairs), done_(pairs, false) {}
  void operator()(std::int64_t pair, std::span<const match> kept) {
    per_pair_[static_cast<std::size_t>(pair)].assign(kept.begin(), kept.end());
    done_[static_cast<std::size_t>(pair)] = true;
  }
  pair_matches_callback callback() {
    return [this](std::int64_t pair, std::span<const match> kept) { (*this)(pair, kept); };
  }
  /// Throws std::logic_error if a pair was never handed out.
  collection_matches take() {
    collection_matches out;
    out.offsets.reserve(per_pair_.size() + 1);
    out.offsets.push_back(0);
    std::size_t total = 0;
    for (const auto& m : per_pair_) total += m.size();
    out.matches.reserve(total);
    for (std::size_t p = 0; p < per_pair_.size(); ++p) {
      if (!done_[p]) throw std::logic_error("the matcher did not hand out pair " + std::to_string(p));
      out.matches.insert(out.matches.end(), per_pair_[p].begin(), per_pair_[p].end());
      out.offsets.push_back(static_cast<std::int64_t>(out.matches.size()));
      std::vector<match>().swap(per_pair_[p]);
    }
    return out;
  }

 private:
  std::vector<std::vector<match>> per_pair_;
  std::vector<bool> done_;
};

}  // namespace multireduce
