// multireduce/cuda/detail/partial.cuh -- partial reductions for operators with or without an
// identity element.
#pragma once

#include <concepts>
#include <type_traits>

namespace multireduce::cuda::detail {

/// The operator has a static identity<Acc>() (all of multireduce's built-in operators do).
template <class Op, class Acc>
concept has_identity = requires {
  { Op::template identity<Acc>() } -> std::convertible_to<Acc>;
};

/// A partial reduction that may be empty: for user operators without an identity element.
template <class Acc>
struct maybe {
  Acc value;
  int valid;
};

/// Any operator lifted to maybe<T>: an empty side leaves the other unchanged; order is kept.
template <class Op>
struct maybe_op {
  Op op;
  template <class T>
  __host__ __device__ __forceinline__ maybe<T> operator()(const maybe<T>& a, const maybe<T>& b) const {
    if (!a.valid) return b;
    if (!b.valid) return a;
    return maybe<T>{op(a.value, b.value), 1};
  }
};

/// How a kernel carries partial reductions: the plain accumulator when the operator has an
/// identity (cheapest), else maybe<Acc> with an emptiness flag.
template <class Acc, class Op>
struct partial {
  static constexpr bool plain = has_identity<Op, Acc>;
  using type = std::conditional_t<plain, Acc, maybe<Acc>>;

  __host__ __device__ static type empty() {
    if constexpr (plain) return Op::template identity<Acc>();
    else return type{Acc{}, 0};
  }
  __host__ __device__ static type of(const Acc& x) {
    if constexpr (plain) return x;
    else return type{x, 1};
  }
  /// The value of a partial known not to be empty.
  __host__ __device__ static Acc value(const type& p) {
    if constexpr (plain) return p;
    else return p.value;
  }
  /// The reduction's value given the caller's initial value: op(init, p) (init alone if empty).
  __host__ __device__ static Acc finish(const Op& op, const Acc& init, const type& p) {
    if constexpr (plain) return op(init, p);
    else return p.valid ? op(init, p.value) : init;
  }
};

/// The operator on partials: keeps left-to-right order, so non-commutative operators stay right.
template <class Acc, class Op>
struct partial_op {
  Op op;
  using type = typename partial<Acc, Op>::type;
  __host__ __device__ __forceinline__ type operator()(const type& a, const type& b) const {
    if constexpr (partial<Acc, Op>::plain) return op(a, b);
    else return maybe_op<Op>{op}(a, b);
  }
};

}  // namespace multireduce::cuda::detail
