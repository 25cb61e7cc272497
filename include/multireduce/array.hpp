// multireduce/array.hpp -- a fixed-size array usable in host and device code.
//
// std::array's members are host functions to nvcc (without --expt-relaxed-constexpr), so the
// per-lane value lists of the warp primitives travel in this aggregate instead. Index it only with
// compile-time constants (unrolled loops) in device code: a run-time index moves it to local memory.
#pragma once

#include <cstddef>
#include <utility>

#include "config.hpp"

namespace multireduce {

template <class T, int N>
struct array {
  static_assert(N >= 0, "multireduce::array: negative size");
  T elements[N > 0 ? N : 1];

  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE constexpr T& operator[](int i) { return elements[i]; }
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE constexpr const T& operator[](int i) const { return elements[i]; }
  MULTIREDUCE_HOST_DEVICE static constexpr int size() { return N; }
};

namespace detail {
#if defined(__CUDACC__)
#define MULTIREDUCE_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define MULTIREDUCE_EXEC_CHECK_DISABLE
#endif

// f may be a host-only or a device-only callable: the call is checked where it is instantiated.
MULTIREDUCE_EXEC_CHECK_DISABLE
template <class F, int... I>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE constexpr void for_each_index_of(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}

/// Calls f(std::integral_constant<int, I>{}) for I = 0 .. N-1, unrolled at compile time.
MULTIREDUCE_EXEC_CHECK_DISABLE
template <int N, class F>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE constexpr void for_each_index(F&& f) {
  for_each_index_of(f, std::make_integer_sequence<int, N>{});
}
}  // namespace detail

}  // namespace multireduce
