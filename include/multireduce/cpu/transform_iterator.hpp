// multireduce/cpu/transform_iterator.hpp -- an array seen through a function of each element and its
// position: the CPU side of cuda::transform_reduce's transform(x, index), usable by every CPU
// algorithm.
//
// `transformed(in, f)[i]` is `f(in[i], i)`. `indexed(in)[i]` is `key_value<V, std::int64_t>{in[i], i}`:
// what argmin and argmax reduce, so the segmented and window reductions find positions as well as
// values:
//
//   cpu::segmented_reduce(cpu::indexed(x), n, out, segments, begins, ends, argmin{},
//                         argmin::identity<key_value<float>>());
//
// The index is the position relative to the iterator given, so `indexed(x + 10)[0]` has index 0;
// pass a first index (`indexed(x, 10)`) to number from there instead.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <iterator>
#include <type_traits>

#include "../operators.hpp"

namespace multireduce::cpu {

/// A random-access iterator over `transform(base[i], first_index + i)`; the elements are produced
/// on the fly (the reference type is the value type), the base is only read.
template <class It, class Transform>
class transform_iterator {
 public:
  using value_type =
      std::remove_cvref_t<std::invoke_result_t<const Transform&, std::iter_reference_t<It>, std::int64_t>>;
  using reference = value_type;
  using difference_type = std::int64_t;
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::input_iterator_tag;  // C++17's categories need a true reference

  transform_iterator() = default;
  transform_iterator(It base, Transform transform, std::int64_t first_index = 0)
      : base_(base), transform_(transform), index_(first_index) {}

  value_type operator*() const { return transform_(*base_, index_); }
  value_type operator[](difference_type i) const { return transform_(base_[i], index_ + i); }

  transform_iterator& operator++() { ++base_; ++index_; return *this; }
  transform_iterator operator++(int) { auto old = *this; ++*this; return old; }
  transform_iterator& operator--() { --base_; --index_; return *this; }
  transform_iterator operator--(int) { auto old = *this; --*this; return old; }
  transform_iterator& operator+=(difference_type d) { base_ += d; index_ += d; return *this; }
  transform_iterator& operator-=(difference_type d) { base_ -= d; index_ -= d; return *this; }
  friend transform_iterator operator+(transform_iterator i, difference_type d) { return i += d; }
  friend transform_iterator operator+(difference_type d, transform_iterator i) { return i += d; }
  friend transform_iterator operator-(transform_iterator i, difference_type d) { return i -= d; }
  friend difference_type operator-(const transform_iterator& a, const transform_iterator& b) { return a.index_ - b.index_; }
  friend bool operator==(const transform_iterator& a, const transform_iterator& b) { return a.index_ == b.index_; }
  friend std::strong_ordering operator<=>(const transform_iterator& a, const transform_iterator& b) {
    return a.index_ <=> b.index_;
  }

  /// The underlying iterator at the current position.
  It base() const { return base_; }

 private:
  It base_{};
  Transform transform_{};
  std::int64_t index_ = 0;
};

/// `in` seen as transform(in[i], first_index + i).
template <class It, class Transform>
transform_iterator<It, Transform> transformed(It in, Transform transform, std::int64_t first_index = 0) {
  return transform_iterator<It, Transform>(in, transform, first_index);
}

/// The transform of indexed(): an element and its position as a key_value (cuda::with_index on the CPU).
struct with_index {
  template <class V>
  key_value<std::remove_cvref_t<V>, std::int64_t> operator()(const V& x, std::int64_t i) const {
    return {x, i};
  }
};

template <class It>
using indexed_iterator = transform_iterator<It, with_index>;

/// `in` seen as (value, index) pairs numbered from `first_index`: the input of argmin/argmax
/// through the generic segmented and window reductions.
template <class It>
indexed_iterator<It> indexed(It in, std::int64_t first_index = 0) {
  return indexed_iterator<It>(in, with_index{}, first_index);
}

}  // namespace multireduce::cpu
