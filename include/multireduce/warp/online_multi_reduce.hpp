// multireduce/warp/online_multi_reduce.hpp -- the iterative (online) multi-reducer of paper section 3.
//
// Push one value per lane per step; after LogicalWarpSize pushes, logical lane i holds the
// reduction over the logical warp of the values pushed at step i. The pattern works like a binary
// counter: a pushed value is shuffled one step and parked; the next push is shuffled, merged with
// the parked one by a lane-select, and the merged value moves up a level. Steps are compile-time
// constants (push<Step>), so every branch below folds away and only the lane-selects remain.
//
// RegisterBudget: one register per merged level plus one (the paper's 6 for 32 lanes, the default).
// With a smaller budget the top levels fall back to plain butterflies on completed groups of
// 2^(budget-1) pushes, as the paper describes: fewer registers, more shuffles.
// Streams: independent reductions interleaved step by step for instruction-level parallelism (the
// paper's benchmark "doubles up" the pattern).
//
// Counts for 32 lanes, full budget, per stream: 62 shuffles, 62 operator applications, 31 selects.
// Keeps lane order for merged levels at no cost, and on the fallback levels with two selects per
// step for operators not declared commutative: any associative operator works.
#pragma once

#include "../array.hpp"
#include "../lane.hpp"
#include "warp_reduce.hpp"

namespace multireduce {

/// Online multi-reducer; see the file comment.
/// @tparam T value type. @tparam Op associative operator.
/// @tparam LogicalWarpSize lanes per reduction, and pushes per round.
/// @tparam RegisterBudget 1 .. log2(LogicalWarpSize)+1 (the default, the paper's full budget).
/// @tparam Streams independent reductions pushed together.
template <class T, class Op, int LogicalWarpSize = 32, int RegisterBudget = detail::log2_of<LogicalWarpSize> + 1,
          int Streams = 1>
class online_multi_reducer {
  static_assert(detail::is_logical_warp_size<LogicalWarpSize>,
                "multireduce: LogicalWarpSize must be a power of two from 1 to 32 (64 on the host emulator and "
                "wave64 AMD GPUs)");
  static constexpr int levels = detail::log2_of<LogicalWarpSize>;
  static_assert(RegisterBudget >= 1 && RegisterBudget <= levels + 1,
                "multireduce::online_multi_reducer: RegisterBudget must be 1 .. log2(LogicalWarpSize) + 1");
  static_assert(Streams >= 1, "multireduce::online_multi_reducer: Streams must be >= 1");
  static_assert(is_reduction_operator_v<Op, T>, "multireduce::online_multi_reducer: op must be callable as T op(T, T)");

 public:
  /// Levels merged by lane-selects; the rest are plain butterflies on completed groups.
  static constexpr int merged_levels = RegisterBudget - 1;
  static constexpr int group_pushes = 1 << merged_levels;

  MULTIREDUCE_HOST_DEVICE explicit online_multi_reducer(Op op = {}) : op_(op) {}

  /// Pushes this lane's value of step `Step` (0 .. LogicalWarpSize-1, in order) for every stream.
  template <int Step, lane Lane>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE void push(Lane& lane, const array<T, Streams>& values) {
    static_assert(Step >= 0 && Step < LogicalWarpSize, "multireduce::online_multi_reducer: Step out of range");
    detail::check_logical_warp_size<LogicalWarpSize, Lane>();
    array<T, Streams> x = values;
    if (!merge_up<Step, 0>(lane, x)) return;  // parked at some level
    // A group of group_pushes pushes is merged over lanes' low bits: finish it with a butterfly.
MULTIREDUCE_UNROLL
    for (int offset = group_pushes; offset < LogicalWarpSize; offset *= 2) {
      const bool upper = (lane.id() & offset) != 0;
MULTIREDUCE_UNROLL
      for (int s = 0; s < Streams; ++s)
        x[s] = combine_in_lane_order(lane, upper, x[s], shuffle_xor(lane, x[s], offset, LogicalWarpSize), op_);
    }
    constexpr int group = Step / group_pushes;
    if constexpr (group == 0) {
      result_ = x;
    } else {
      const bool mine = ((lane.id() & (LogicalWarpSize - 1)) >> merged_levels) == group;
MULTIREDUCE_UNROLL
      for (int s = 0; s < Streams; ++s) result_[s] = lane.select(mine, x[s], result_[s]);
    }
  }

  /// push for a single stream.
  template <int Step, lane Lane>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE void push(Lane& lane, const T& value) {
    static_assert(Streams == 1, "multireduce::online_multi_reducer: pass one value per stream");
    push<Step>(lane, array<T, 1>{{value}});
  }

  /// After LogicalWarpSize pushes: logical lane i holds each stream's reduction of step i.
  MULTIREDUCE_HOST_DEVICE const array<T, Streams>& results() const { return result_; }
  MULTIREDUCE_HOST_DEVICE const T& result() const { return result_[0]; }

 private:
  // Level k: x is reduced over lane distances < 2^k. Returns true when x has climbed all merged
  // levels (its group is complete), false when it was parked.
  template <int Step, int K, lane Lane>
  MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE bool merge_up(Lane& lane, array<T, Streams>& x) {
    if constexpr (K == merged_levels) {
      return true;
    } else {
      constexpr int offset = 1 << K;
      constexpr bool newer = (Step >> K) & 1;  // the lanes with bit K set keep the newer half
MULTIREDUCE_UNROLL
      for (int s = 0; s < Streams; ++s) {
        const T theirs = shuffle_xor(lane, x[s], offset, LogicalWarpSize);
        x[s] = newer ? lane.apply(op_, theirs, x[s]) : lane.apply(op_, x[s], theirs);
      }
      if constexpr (!newer) {
        parked_[K] = x;
        return false;
      } else {
        const bool upper = (lane.id() & offset) != 0;
MULTIREDUCE_UNROLL
        for (int s = 0; s < Streams; ++s) x[s] = lane.select(upper, x[s], parked_[K][s]);
        return merge_up<Step, K + 1>(lane, x);
      }
    }
  }

  Op op_;
  array<array<T, Streams>, merged_levels> parked_;
  array<T, Streams> result_;
};

/// Runs a full round of the online multi-reducer: value(std::integral_constant<int, i>{}) gives
/// this lane's value for step i. @return in logical lane i, the reduction of step i's values.
template <int LogicalWarpSize = 32, int RegisterBudget = detail::log2_of<LogicalWarpSize> + 1, lane Lane, class Op,
          class ValueOfStep>
MULTIREDUCE_HOST_DEVICE auto online_multi_reduce(Lane& lane, Op op, ValueOfStep value_of_step) {
  using T = decltype(value_of_step(std::integral_constant<int, 0>{}));
  online_multi_reducer<T, Op, LogicalWarpSize, RegisterBudget> reducer(op);
  detail::for_each_index<LogicalWarpSize>([&](auto step) {
    reducer.template push<decltype(step)::value>(lane, value_of_step(step));
  });
  return reducer.result();
}

}  // namespace multireduce
