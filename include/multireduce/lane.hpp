// multireduce/lane.hpp -- the lane seam: what warp and block code may ask of the thread it runs on.
//
// Warp- and block-level code in multireduce never reads threadIdx. It receives a *lane* object and
// talks to its warp only through it. Three lanes exist:
//   - multireduce::cuda_lane (cuda_lane.cuh): the real thing, __shfl_*_sync, __ballot_sync, ...
//   - multireduce::hip_lane (hip_lane.hip.hpp): an AMD wavefront of 64 or 32 lanes under hipcc,
//     HIP's __shfl_* and __ballot (compiled by the tests for gfx90a and gfx1030; not yet run on one).
//   - multireduce::host_lane (emulator/host_warp.hpp): one lane of a host-emulated warp of 32 or 64 lanes,
//     which follows PTX shfl semantics exactly and counts what the warp does.
// The same warp/block source therefore runs, and is tested, on the GPU and the emulator.
//
// A lane provides (all warp-collective calls must be made by every lane of the physical warp):
//   static int max_warp_size   the widest physical warp of this lane type (32 for CUDA, the target's
//                              wavefront for HIP, 64 on the emulator): logical warps wider than it do
//                              not compile
//   int  id()            physical lane index in the warp, 0 .. warp_size()-1
//   int  warp_size()     physical warp size (32 on NVIDIA; 64 or 32 on AMD; 32 or 64 on the emulator)
//   int  warp_id(), thread_rank(), block_size()   position of the thread in its block
//   u32  shfl_xor(u32 word, int lane_mask, int width)   PTX shfl.bfly with the logical width
//   u32  shfl_down(u32 word, int delta, int width)      PTX shfl.down
//   u32  shfl_up(u32 word, int delta, int width)        PTX shfl.up
//   u32  shfl_idx(u32 word, int src_lane, int width)    PTX shfl.idx
//   u64  ballot(bool)    bit i set when lane i's predicate is true
//   void sync()          warp barrier (__syncwarp)
//   void barrier()       block barrier (__syncthreads)
//   T    apply(op, a, b) one operator application (counted on the emulator)
//   T    select(p, a, b) p ? a : b, one lane-select or merge (counted on the emulator)
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "config.hpp"
#include "operators.hpp"

namespace multireduce {

/// The interface every lane type implements (see the file comment). Every warp and block
/// primitive takes its lane through this concept.
template <class L>
concept lane = requires(L& l, std::uint32_t w, int i, bool p) {
  { L::max_warp_size } -> std::convertible_to<int>;
  { l.id() } -> std::convertible_to<int>;
  { l.warp_size() } -> std::convertible_to<int>;
  { l.warp_id() } -> std::convertible_to<int>;
  { l.thread_rank() } -> std::convertible_to<int>;
  { l.block_size() } -> std::convertible_to<int>;
  { l.shfl_xor(w, i, i) } -> std::same_as<std::uint32_t>;
  { l.shfl_down(w, i, i) } -> std::same_as<std::uint32_t>;
  { l.shfl_up(w, i, i) } -> std::same_as<std::uint32_t>;
  { l.shfl_idx(w, i, i) } -> std::same_as<std::uint32_t>;
  { l.ballot(p) } -> std::convertible_to<std::uint64_t>;
  l.sync();
  l.barrier();
  { l.apply(sum{}, i, i) } -> std::same_as<int>;
  { l.select(p, i, i) } -> std::same_as<int>;
};

/// Types a warp can exchange: copied as 32-bit words, so anything trivially copyable works,
/// structs wider than 32 bits included (shuffled word by word).
template <class T>
concept shuffleable = std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>;

namespace detail {

template <class T>
inline constexpr int words_of = static_cast<int>((sizeof(T) + 3) / 4);

/// Moves T through 32-bit words: exchange(word) is called once per word.
template <class T, class Exchange>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T shuffle_words(const T& value, Exchange exchange) {
  static_assert(shuffleable<T>, "multireduce: warp values must be trivially copyable and default constructible");
  std::uint32_t words[words_of<T>] = {};
  std::memcpy(words, &value, sizeof(T));
MULTIREDUCE_UNROLL
  for (int w = 0; w < words_of<T>; ++w) words[w] = exchange(words[w]);
  T out;
  std::memcpy(&out, words, sizeof(T));
  return out;
}

}  // namespace detail

/// value of lane (id ^ lane_mask) within the logical warp of `width` lanes (PTX shfl.bfly).
template <lane Lane, class T>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T shuffle_xor(Lane& lane, const T& value, int lane_mask, int width) {
  return detail::shuffle_words(value, [&](std::uint32_t w) { return lane.shfl_xor(w, lane_mask, width); });
}
/// value of lane (id + delta), or the own value past the logical warp's end (PTX shfl.down).
template <lane Lane, class T>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T shuffle_down(Lane& lane, const T& value, int delta, int width) {
  return detail::shuffle_words(value, [&](std::uint32_t w) { return lane.shfl_down(w, delta, width); });
}
/// value of lane (id - delta), or the own value before the logical warp's start (PTX shfl.up).
template <lane Lane, class T>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T shuffle_up(Lane& lane, const T& value, int delta, int width) {
  return detail::shuffle_words(value, [&](std::uint32_t w) { return lane.shfl_up(w, delta, width); });
}
/// value of logical lane src_lane of this logical warp (PTX shfl.idx).
template <lane Lane, class T>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T shuffle_idx(Lane& lane, const T& value, int src_lane, int width) {
  return detail::shuffle_words(value, [&](std::uint32_t w) { return lane.shfl_idx(w, src_lane, width); });
}

/// Combines a lane's own partial with its partner's from shuffle_xor, keeping left-to-right lane
/// order: the lane whose `upper` bit is set holds the later lanes' part. For operators known to
/// be commutative this is a plain op(mine, theirs), with no selects.
template <lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE MULTIREDUCE_FORCEINLINE T combine_in_lane_order(Lane& lane, bool upper, const T& mine,
                                                                        const T& theirs, Op op) {
  if constexpr (is_commutative_v<Op>) {
    return lane.apply(op, mine, theirs);
  } else {
    const T left = lane.select(upper, theirs, mine);
    const T right = lane.select(upper, mine, theirs);
    return lane.apply(op, left, right);
  }
}

}  // namespace multireduce
