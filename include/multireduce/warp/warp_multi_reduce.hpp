// multireduce/warp/warp_multi_reduce.hpp -- many independent reductions in one logical warp
// (the multi-reduction pattern of Parker & MacKinnon).
//
// Every lane holds `Batches` values; batch b's result is the reduction of value b over the lanes
// of the logical warp. Instead of Batches separate butterflies (Batches x log2 W shuffles), the
// pattern merges two half-done reductions into one register after every step, so each later step
// shuffles half as many values.
//
// Where the results are (the contract; batch_in_lane() computes it):
//  - Batches <= W: one result per lane; logical lane i holds batch i for i < Batches (with copies
//    in lane i + k*P, P = the next power of two >= Batches).
//  - Batches > W: results_per_lane = ceil(Batches / W) results per lane, in CUB's layouts:
//      striped: slot j of lane i holds batch j*W + i;
//      blocked: slot j of lane i holds batch i*R + j (R = results_per_lane).
//
// Algorithms (multi_reduce_algorithm), counts for 32 batches on 32 lanes of 32-bit values:
//  - butterfly:        160 shuffles, one xor butterfly per batch; the baseline.
//  - select_merge:     62 shuffles, 31 merges (paper section 2).
//  - swap:             31 shuffles, 62 selects (paper section 4): half the shuffles, a swap per pair.
//  - order_preserving: select_merge that keeps the lanes' left-to-right order at no extra cost on
//                      merged levels: the result equals op(x_0, op(x_1, ...)) folded over lanes, so
//                      non-commutative associative operators work (paper section 5).
//  - shared_exchange:  select_merge through shared memory instead of shuffles (paper section 6):
//                      62 shared stores, 31 loads; needs a warp_exchange_storage.
// butterfly, select_merge, swap and shared_exchange need a commutative operator.
#pragma once

#include <bit>
#include <string_view>

#include "../array.hpp"
#include "../lane.hpp"
#include "warp_reduce.hpp"

namespace multireduce {

enum class multi_reduce_algorithm { butterfly, select_merge, swap, order_preserving, shared_exchange };

constexpr std::string_view to_string(multi_reduce_algorithm a) {
  switch (a) {
    case multi_reduce_algorithm::butterfly: return "butterfly";
    case multi_reduce_algorithm::select_merge: return "select-merge";
    case multi_reduce_algorithm::swap: return "swap";
    case multi_reduce_algorithm::order_preserving: return "order-preserving";
    case multi_reduce_algorithm::shared_exchange: return "shared-exchange";
  }
  return "?";
}

/// Every algorithm, in the enum's order.
inline constexpr multi_reduce_algorithm all_multi_reduce_algorithms[] = {
    multi_reduce_algorithm::butterfly, multi_reduce_algorithm::select_merge, multi_reduce_algorithm::swap,
    multi_reduce_algorithm::order_preserving, multi_reduce_algorithm::shared_exchange};

/// Parses the names to_string gives; false if `name` is none of them.
constexpr bool parse(std::string_view name, multi_reduce_algorithm& out) {
  for (auto a : all_multi_reduce_algorithms)
    if (to_string(a) == name) return out = a, true;
  return false;
}

/// Where results go when there are more batches than lanes (CUB's vocabulary).
enum class result_layout { striped, blocked };

constexpr std::string_view to_string(result_layout l) { return l == result_layout::striped ? "striped" : "blocked"; }

/// Results each lane holds: ceil(Batches / LogicalWarpSize).
template <int Batches, int LogicalWarpSize>
inline constexpr int results_per_lane = (Batches + LogicalWarpSize - 1) / LogicalWarpSize;

namespace detail {
/// How many batches chunk `slot` reduces at once (each chunk has at most W batches).
MULTIREDUCE_HOST_DEVICE constexpr int chunk_batches(int batches, int width, result_layout layout, int slot) {
  const int per_lane = (batches + width - 1) / width;
  if (slot < 0 || slot >= per_lane) return 0;
  if (layout == result_layout::striped) return batches - slot * width < width ? batches - slot * width : width;
  return (batches - slot + per_lane - 1) / per_lane;  // lanes i with i*R + slot < batches
}
}  // namespace detail

/// The batch whose result logical lane `logical_lane` holds in result slot `slot` after
/// warp_multi_reduce, or -1 if that register holds no result.
MULTIREDUCE_HOST_DEVICE constexpr int batch_in_lane(int batches, int logical_warp_size, result_layout layout, int logical_lane, int slot) {
  const int count = detail::chunk_batches(batches, logical_warp_size, layout, slot);
  if (count == 0) return -1;
  const int element = logical_lane % detail::bit_ceil(count);
  if (element >= count) return -1;
  const int per_lane = (batches + logical_warp_size - 1) / logical_warp_size;
  return layout == result_layout::striped ? slot * logical_warp_size + element : element * per_lane + slot;
}

/// Shared memory for multi_reduce_algorithm::shared_exchange: one per physical warp.
template <class T, int WarpThreads = 32>
struct warp_exchange_storage {
  T slots[2 * WarpThreads];
};

namespace detail {

struct no_storage {};

// One step of the pattern at lane distance Offset for a pair of partial reductions (a, b): returns
// a in lanes whose Offset bit is clear, b in the others, each reduced one step further.
template <multi_reduce_algorithm Algorithm, int Offset, int W, lane Lane, class T, class Op, class Storage>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T merge_pair(Lane& lane, bool upper, const T& a, const T& b, Op op,
                                                             Storage& storage) {
  if constexpr (Algorithm == multi_reduce_algorithm::select_merge) {
    const T a2 = lane.apply(op, a, shuffle_xor(lane, a, Offset, W));
    const T b2 = lane.apply(op, b, shuffle_xor(lane, b, Offset, W));
    return lane.select(upper, b2, a2);
  } else if constexpr (Algorithm == multi_reduce_algorithm::order_preserving) {
    // a is kept by the lower lanes, b by the upper ones: the operand order is known statically.
    const T a2 = lane.apply(op, a, shuffle_xor(lane, a, Offset, W));
    const T b2 = lane.apply(op, shuffle_xor(lane, b, Offset, W), b);
    return lane.select(upper, b2, a2);
  } else if constexpr (Algorithm == multi_reduce_algorithm::swap) {
    const T send = lane.select(upper, a, b);
    const T keep = lane.select(upper, b, a);
    return lane.apply(op, keep, shuffle_xor(lane, send, Offset, W));
  } else {
    static_assert(Algorithm == multi_reduce_algorithm::shared_exchange);
    T* s = storage.slots;
    const int t = lane.id(), ws = lane.warp_size();
    s[t] = a;
    s[t + ws] = b;
    lane.sync();
    const T mine = lane.select(upper, b, a);
    const T theirs = s[(t ^ Offset) + (upper ? ws : 0)];
    lane.sync();
    return lane.apply(op, mine, theirs);
  }
}

// One step at lane distance Offset for a single partial reduction (no partner to merge with).
template <multi_reduce_algorithm Algorithm, int Offset, int W, lane Lane, class T, class Op, class Storage>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T reduce_single(Lane& lane, bool upper, const T& x, Op op,
                                                                Storage& storage) {
  if constexpr (Algorithm == multi_reduce_algorithm::shared_exchange) {
    T* s = storage.slots;
    const int t = lane.id();
    s[t] = x;
    lane.sync();
    const T theirs = s[t ^ Offset];
    lane.sync();
    return lane.apply(op, x, theirs);
  } else if constexpr (Algorithm == multi_reduce_algorithm::order_preserving) {
    return combine_in_lane_order(lane, upper, x, shuffle_xor(lane, x, Offset, W), op);
  } else {
    return lane.apply(op, x, shuffle_xor(lane, x, Offset, W));
  }
}

// The merging levels: N partial reductions, done over lane distances < Offset, become (N+1)/2.
template <multi_reduce_algorithm Algorithm, int Offset, int W, int N, lane Lane, class T, class Op, class Storage>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T reduce_levels(Lane& lane, const array<T, N>& x, Op op,
                                                                Storage& storage) {
  if constexpr (Offset >= W) {
    static_assert(N == 1);
    return x[0];
  } else {
    const bool upper = (lane.id() & Offset) != 0;
    constexpr int M = (N + 1) / 2;
    array<T, M> y;
MULTIREDUCE_UNROLL
    for (int i = 0; i < N / 2; ++i)
      y[i] = merge_pair<Algorithm, Offset, W>(lane, upper, x[2 * i], x[2 * i + 1], op, storage);
    if constexpr (N % 2 == 1) y[M - 1] = reduce_single<Algorithm, Offset, W>(lane, upper, x[N - 1], op, storage);
    return reduce_levels<Algorithm, 2 * Offset, W, M>(lane, y, op, storage);
  }
}

// Reduces N <= W batches; logical lane i gets batch i % bit_ceil(N) (when that is < N).
template <multi_reduce_algorithm Algorithm, int W, int N, lane Lane, class T, class Op, class Storage>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T multi_reduce_chunk(Lane& lane, const array<T, N>& x, Op op,
                                                                     Storage& storage) {
  static_assert(N >= 1 && N <= W);
  if constexpr (Algorithm == multi_reduce_algorithm::butterfly) {
    constexpr int P = bit_ceil_of<N>;
    const int element = lane.id() & (P - 1);
    T result = warp_all_reduce<W>(lane, x[0], op);
MULTIREDUCE_UNROLL
    for (int k = 1; k < N; ++k) {
      const T reduced = warp_all_reduce<W>(lane, x[k], op);
      result = lane.select(element == k, reduced, result);
    }
    return result;
  } else {
    return reduce_levels<Algorithm, 1, W, N>(lane, x, op, storage);
  }
}

template <int Batches, int W, multi_reduce_algorithm Algorithm, result_layout Layout, lane Lane, class T, class Op,
          class Storage>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE array<T, results_per_lane<Batches, W>> warp_multi_reduce_impl(
    Lane& lane, const array<T, Batches>& values, Op op, Storage& storage) {
  check_logical_warp_size<W, Lane>();
  static_assert(Batches >= 0, "multireduce::warp_multi_reduce: Batches must be >= 0");
  static_assert(is_reduction_operator_v<Op, T>, "multireduce::warp_multi_reduce: op must be callable as T op(T, T)");
  constexpr int R = results_per_lane<Batches, W>;
  array<T, R> out;
  for_each_index<R>([&](auto slot) {
    constexpr int J = decltype(slot)::value;
    constexpr int count = chunk_batches(Batches, W, Layout, J);
    array<T, count> chunk;
MULTIREDUCE_UNROLL
    for (int k = 0; k < count; ++k) chunk[k] = values[Layout == result_layout::striped ? J * W + k : k * R + J];
    out[J] = multi_reduce_chunk<Algorithm, W>(lane, chunk, op, storage);
  });
  return out;
}

}  // namespace detail

/// Reduces each of `Batches` per-lane values over the logical warp, with the shuffle-based
/// multi-reduction `Algorithm`. All lanes of the physical warp must call it together.
/// @tparam Batches number of independent reductions (0 or more; any count).
/// @tparam LogicalWarpSize lanes per reduction (power of two, <= 32; 64 on the emulator and on wave64
/// AMD GPUs).
/// @tparam Algorithm butterfly, select_merge, swap or order_preserving (shared_exchange: see below).
/// @tparam Layout striped or blocked, for Batches > LogicalWarpSize.
/// @param values this lane's value of every batch (an array of exactly Batches elements).
/// @return results_per_lane<Batches, W> results; batch_in_lane() says which batch each one is.
template <int Batches, int LogicalWarpSize = 32,
          multi_reduce_algorithm Algorithm = multi_reduce_algorithm::select_merge,
          result_layout Layout = result_layout::striped, lane Lane, class T, int N, class Op>
MULTIREDUCE_HOST_DEVICE array<T, results_per_lane<Batches, LogicalWarpSize>> warp_multi_reduce(
    Lane& lane, const array<T, N>& values, Op op) {
  static_assert(N == Batches, "multireduce::warp_multi_reduce: the values array must have exactly Batches elements");
  static_assert(Algorithm != multi_reduce_algorithm::shared_exchange,
                "multireduce::warp_multi_reduce: shared_exchange needs a warp_exchange_storage argument");
  detail::no_storage none;
  return detail::warp_multi_reduce_impl<Batches, LogicalWarpSize, Algorithm, Layout>(lane, values, op, none);
}

/// The same for plain arrays: `T values[Batches]`.
template <int Batches, int LogicalWarpSize = 32,
          multi_reduce_algorithm Algorithm = multi_reduce_algorithm::select_merge,
          result_layout Layout = result_layout::striped, lane Lane, class T, std::size_t N, class Op>
MULTIREDUCE_HOST_DEVICE array<T, results_per_lane<Batches, LogicalWarpSize>> warp_multi_reduce(
    Lane& lane, const T (&values)[N], Op op) {
  static_assert(N == Batches, "multireduce::warp_multi_reduce: the values array must have exactly Batches elements");
  array<T, Batches> copy;
MULTIREDUCE_UNROLL
  for (int i = 0; i < Batches; ++i) copy[i] = values[i];
  return warp_multi_reduce<Batches, LogicalWarpSize, Algorithm, Layout>(lane, copy, op);
}

/// Multi-reduction through shared memory (paper section 6): for hardware or APIs without
/// shuffles. `storage` is this physical warp's; the call synchronises the warp (__syncwarp).
template <int Batches, int LogicalWarpSize = 32, result_layout Layout = result_layout::striped, lane Lane, class T,
          int N, class Op, int WarpThreads>
MULTIREDUCE_HOST_DEVICE array<T, results_per_lane<Batches, LogicalWarpSize>> warp_multi_reduce(
    Lane& lane, const array<T, N>& values, Op op, warp_exchange_storage<T, WarpThreads>& storage) {
  static_assert(N == Batches, "multireduce::warp_multi_reduce: the values array must have exactly Batches elements");
  return detail::warp_multi_reduce_impl<Batches, LogicalWarpSize, multi_reduce_algorithm::shared_exchange, Layout>(
      lane, values, op, storage);
}

}  // namespace multireduce
