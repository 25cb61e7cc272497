// multireduce/operators.hpp -- reduction operators, their identities, and (value, index) pairs.
//
// Every operator is a stateless functor `T operator()(T a, T b)` that is associative. Operators
// that are also commutative say so through `is_commutative_v`, which lets order-sensitive
// algorithms drop the operand swaps they otherwise need (see warp_multi_reduce.hpp).
// min, max, argmin and argmax follow NumPy for floating point: a NaN wins (propagates), and
// argmin/argmax return the lowest index among equal extremes (the first NaN if any).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "config.hpp"

namespace multireduce {

/// A value with the position it came from: the element type of argmin and argmax.
template <class V, class I = std::int64_t>
struct key_value {
  V value;
  I index;
};

namespace detail {

template <class T>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE constexpr bool is_nan(const T& x) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return !(x == x);  // works for float, double, __half and __nv_bfloat16
  }
}

/// Largest and smallest representable values, also for the CUDA 16-bit floating types.
template <class T>
struct extremes {
  MULTIREDUCE_HOST_DEVICE static constexpr T highest() {
    if constexpr (detail::limits<T>::has_infinity) return detail::limits<T>::infinity();
    else return detail::limits<T>::max();
  }
  MULTIREDUCE_HOST_DEVICE static constexpr T lowest() {
    if constexpr (detail::limits<T>::has_infinity) return -detail::limits<T>::infinity();
    else return detail::limits<T>::lowest();
  }
};
#if MULTIREDUCE_HAS_CUDA_FP16
template <>
struct extremes<__half> {
  MULTIREDUCE_HOST_DEVICE static __half highest() { return __ushort_as_half(0x7c00u); }
  MULTIREDUCE_HOST_DEVICE static __half lowest() { return __ushort_as_half(0xfc00u); }
};
template <>
struct extremes<__nv_bfloat16> {
  MULTIREDUCE_HOST_DEVICE static __nv_bfloat16 highest() { return __ushort_as_bfloat16(0x7f80u); }
  MULTIREDUCE_HOST_DEVICE static __nv_bfloat16 lowest() { return __ushort_as_bfloat16(0xff80u); }
};
#endif

}  // namespace detail

/// a + b. Identity 0.
struct sum {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    return static_cast<T>(a + b);
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() { return static_cast<T>(0); }
};

/// a * b. Identity 1.
struct product {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    return static_cast<T>(a * b);
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() { return static_cast<T>(1); }
};

namespace detail {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/// max (Max) or min of two floats as one sm_80+ instruction that propagates NaN (the canonical NaN).
template <bool Max>
__device__ __forceinline__ float nan_propagating(float a, float b) {
  float r;
  if constexpr (Max) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif

/// The smaller (Max = false) or larger of a and b; a NaN propagates. Identity: the type's highest
/// (lowest) value, infinities for floating point.
template <bool Max>
struct extreme {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    const bool b_wins = Max ? a < b : b < a;
    if constexpr (std::is_integral_v<T>) {
      return b_wins ? b : a;
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) return nan_propagating<Max>(a, b);
#endif
      return (b_wins || is_nan(b)) && !is_nan(a) ? b : a;
    }
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() {
    return Max ? extremes<T>::lowest() : extremes<T>::highest();
  }
};
}  // namespace detail

/// The smaller of a and b; a NaN propagates. Identity: +inf, or the type's maximum.
struct minimum : detail::extreme<false> {};

/// The larger of a and b; a NaN propagates. Identity: -inf, or the type's lowest value.
struct maximum : detail::extreme<true> {};

/// a & b for integers. Identity: all bits set.
struct bit_and {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    static_assert(std::is_integral_v<T>, "multireduce::bit_and needs an integer type");
    return static_cast<T>(a & b);
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() { return static_cast<T>(~T(0)); }
};

/// a | b for integers. Identity 0.
struct bit_or {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    static_assert(std::is_integral_v<T>, "multireduce::bit_or needs an integer type");
    return static_cast<T>(a | b);
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() { return static_cast<T>(0); }
};

/// a ^ b for integers. Identity 0.
struct bit_xor {
  template <class T>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T operator()(const T& a, const T& b) const {
    static_assert(std::is_integral_v<T>, "multireduce::bit_xor needs an integer type");
    return static_cast<T>(a ^ b);
  }
  template <class T>
  MULTIREDUCE_HOST_DEVICE static T identity() { return static_cast<T>(0); }
};

namespace detail {
/// argmin (Smallest = true) and argmax: the extreme value wins; equal values: the lowest index;
/// a NaN value wins over numbers, the first NaN over later ones (NumPy).
template <bool Smallest>
struct arg_extreme {
  template <class V, class I>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE key_value<V, I> operator()(const key_value<V, I>& a,
                                                                             const key_value<V, I>& b) const {
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    const V& first = Smallest ? b.value : a.value;   // b wins when first < second
    const V& second = Smallest ? a.value : b.value;
    bool take_b;
    if (a_nan || b_nan) take_b = b_nan && (!a_nan || b.index < a.index);
    else take_b = first < second || (!(second < first) && b.index < a.index);
    return take_b ? b : a;
  }
  template <class KV>
  MULTIREDUCE_HOST_DEVICE static KV identity() {
    using V = decltype(KV::value);
    return KV{Smallest ? extremes<V>::highest() : extremes<V>::lowest(), detail::limits<decltype(KV::index)>::max()};
  }
};
}  // namespace detail

/// The (value, index) pair with the smallest value; equal values: the lowest index wins;
/// a NaN value wins over numbers (NumPy's argmin). Identity: (+inf, max index).
struct argmin : detail::arg_extreme<true> {};

/// The (value, index) pair with the largest value; equal values: the lowest index wins;
/// a NaN value wins over numbers (NumPy's argmax). Identity: (-inf, max index).
struct argmax : detail::arg_extreme<false> {};

/// Whether op(a, b) == op(b, a) is known for the operator. Algorithms that must keep the lanes'
/// left-to-right order skip their operand swaps when this is true. User functors are assumed
/// non-commutative unless they declare `static constexpr bool commutative = true;`.
template <class Op>
inline constexpr bool is_commutative_v = [] {
  if constexpr (requires { Op::commutative; }) return bool(Op::commutative);
  else return false;
}();
template <> inline constexpr bool is_commutative_v<sum> = true;
template <> inline constexpr bool is_commutative_v<product> = true;
template <> inline constexpr bool is_commutative_v<minimum> = true;
template <> inline constexpr bool is_commutative_v<maximum> = true;
template <> inline constexpr bool is_commutative_v<bit_and> = true;
template <> inline constexpr bool is_commutative_v<bit_or> = true;
template <> inline constexpr bool is_commutative_v<bit_xor> = true;
template <> inline constexpr bool is_commutative_v<argmin> = true;
template <> inline constexpr bool is_commutative_v<argmax> = true;

/// Checks, with a readable message, that Op can reduce two T into a T.
template <class Op, class T>
inline constexpr bool is_reduction_operator_v = std::is_invocable_r_v<T, const Op&, const T&, const T&>;

}  // namespace multireduce
