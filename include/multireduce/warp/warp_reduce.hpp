// multireduce/warp/warp_reduce.hpp -- one reduction per logical warp.
//
// A logical warp is LogicalWarpSize consecutive lanes (1, 2, 4, 8, 16, 32; 64 on the emulator and on
// wave64 AMD GPUs); logical lane = lane.id() % LogicalWarpSize. All lanes of the physical warp must
// call together.
//
// Performance notes:
//  - log2(LogicalWarpSize) shuffles (times the 32-bit words of T) and operator applications.
//  - warp_reduce uses shfl.down: lane 0 gets op(x0, x1, ..., xN-1) in lane order, so any
//    associative operator works, commutative or not.
//  - warp_all_reduce uses the xor butterfly; for operators not declared commutative it adds two
//    selects per step to keep lane order.
#pragma once

#include <bit>

#include "../lane.hpp"

namespace multireduce {

namespace detail {
template <int LogicalWarpSize>
inline constexpr bool is_logical_warp_size = LogicalWarpSize >= 1 && LogicalWarpSize <= 64 &&
                                             (LogicalWarpSize & (LogicalWarpSize - 1)) == 0;
template <int LogicalWarpSize, class Lane>
MULTIREDUCE_HOST_DEVICE constexpr void check_logical_warp_size() {
  static_assert(is_logical_warp_size<LogicalWarpSize>,
                "multireduce: LogicalWarpSize must be a power of two from 1 to 32 (64 on the host emulator and "
                "wave64 AMD GPUs)");
  static_assert(LogicalWarpSize <= Lane::max_warp_size,
                "multireduce: LogicalWarpSize is wider than this lane's warp (a CUDA warp has 32 lanes, an AMD "
                "wavefront 32 or 64)");
}
template <int LogicalWarpSize>
inline constexpr int log2_of = std::bit_width(unsigned(LogicalWarpSize)) - 1;
/// The smallest power of two >= N (1 for N <= 1), usable in device code.
template <int N>
inline constexpr int bit_ceil_of = static_cast<int>(std::bit_ceil(static_cast<unsigned>(N)));
MULTIREDUCE_HOST_DEVICE constexpr int bit_ceil(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}
}  // namespace detail

/// Reduces `value` over each logical warp.
/// @tparam LogicalWarpSize lanes per reduction, a power of two.
/// @return op(x_0, ..., x_{W-1}) in logical lane 0 of every logical warp (other lanes: partials).
template <int LogicalWarpSize = 32, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE T warp_reduce(Lane& lane, T value, Op op) {
  detail::check_logical_warp_size<LogicalWarpSize, Lane>();
  static_assert(is_reduction_operator_v<Op, T>, "multireduce::warp_reduce: op must be callable as T op(T, T)");
MULTIREDUCE_UNROLL
  for (int offset = 1; offset < LogicalWarpSize; offset *= 2) {
    const T other = shuffle_down(lane, value, offset, LogicalWarpSize);
    value = lane.apply(op, value, other);
  }
  return value;
}

/// Reduces `value` over the first `valid_lanes` lanes of each logical warp (1..LogicalWarpSize);
/// the other lanes' values are ignored, so no identity element is needed.
/// @return the reduction in logical lane 0.
template <int LogicalWarpSize = 32, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE T warp_reduce(Lane& lane, T value, Op op, int valid_lanes) {
  detail::check_logical_warp_size<LogicalWarpSize, Lane>();
  static_assert(is_reduction_operator_v<Op, T>, "multireduce::warp_reduce: op must be callable as T op(T, T)");
  const int logical = lane.id() & (LogicalWarpSize - 1);
MULTIREDUCE_UNROLL
  for (int offset = 1; offset < LogicalWarpSize; offset *= 2) {
    const T other = shuffle_down(lane, value, offset, LogicalWarpSize);
    const T combined = lane.apply(op, value, other);
    value = lane.select(logical + offset < valid_lanes, combined, value);
  }
  return value;
}

/// Reduces `value` over each logical warp with the result in every lane (an all-reduce).
/// @return op(x_0, ..., x_{W-1}) in every lane of the logical warp.
template <int LogicalWarpSize = 32, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE T warp_all_reduce(Lane& lane, T value, Op op) {
  detail::check_logical_warp_size<LogicalWarpSize, Lane>();
  static_assert(is_reduction_operator_v<Op, T>, "multireduce::warp_all_reduce: op must be callable as T op(T, T)");
MULTIREDUCE_UNROLL
  for (int offset = 1; offset < LogicalWarpSize; offset *= 2) {
    const T other = shuffle_xor(lane, value, offset, LogicalWarpSize);
    value = combine_in_lane_order(lane, (lane.id() & offset) != 0, value, other, op);
  }
  return value;
}

}  // namespace multireduce
