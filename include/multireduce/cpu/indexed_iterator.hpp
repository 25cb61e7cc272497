// multireduce/cpu/indexed_iterator.hpp -- view an array as its (value, index) pairs.
//
// `indexed(in)[i]` is `key_value<V, std::int64_t>{in[i], i}`: what argmin and argmax reduce. With
// it the segmented and window reductions of the CPU backend find positions as well as values:
//
//   cpu::segmented_reduce(cpu::indexed(x), n, out, segments, begins, ends, argmin{},
//                         argmin::identity<key_value<float>>());
//
// The index is the position relative to the iterator given to `indexed`, so `indexed(x + 10)[0]`
// has index 0; pass `indexed(x, 10)` to number from 10 instead.
#pragma once

#include <compare>
#include <cstdint>
#include <iterator>

#include "../operators.hpp"

namespace multireduce::cpu {

/// A random-access iterator over `key_value<V, std::int64_t>{base[i], first_index + i}`; the
/// elements are produced on the fly (the reference type is the value type), the base is only read.
template <class It>
class indexed_iterator {
 public:
  using value_type = key_value<std::iter_value_t<It>, std::int64_t>;
  using reference = value_type;
  using difference_type = std::int64_t;
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::input_iterator_tag;  // C++17's categories need a true reference

  indexed_iterator() = default;
  explicit indexed_iterator(It base, std::int64_t first_index = 0) : base_(base), index_(first_index) {}

  value_type operator*() const { return value_type{*base_, index_}; }
  value_type operator[](difference_type i) const { return value_type{base_[i], index_ + i}; }

  indexed_iterator& operator++() { ++base_; ++index_; return *this; }
  indexed_iterator operator++(int) { auto old = *this; ++*this; return old; }
  indexed_iterator& operator--() { --base_; --index_; return *this; }
  indexed_iterator operator--(int) { auto old = *this; --*this; return old; }
  indexed_iterator& operator+=(difference_type d) { base_ += d; index_ += d; return *this; }
  indexed_iterator& operator-=(difference_type d) { base_ -= d; index_ -= d; return *this; }
  friend indexed_iterator operator+(indexed_iterator i, difference_type d) { return i += d; }
  friend indexed_iterator operator+(difference_type d, indexed_iterator i) { return i += d; }
  friend indexed_iterator operator-(indexed_iterator i, difference_type d) { return i -= d; }
  friend difference_type operator-(const indexed_iterator& a, const indexed_iterator& b) { return a.index_ - b.index_; }
  friend bool operator==(const indexed_iterator& a, const indexed_iterator& b) { return a.index_ == b.index_; }
  friend std::strong_ordering operator<=>(const indexed_iterator& a, const indexed_iterator& b) {
    return a.index_ <=> b.index_;
  }

  /// The underlying iterator at the current position.
  It base() const { return base_; }

 private:
  It base_{};
  std::int64_t index_ = 0;
};

/// `in` seen as (value, index) pairs numbered from `first_index`: the input of argmin/argmax
/// through the generic segmented and window reductions.
template <class It>
indexed_iterator<It> indexed(It in, std::int64_t first_index = 0) {
  return indexed_iterator<It>(in, first_index);
}

}  // namespace multireduce::cpu
