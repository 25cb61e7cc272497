// multireduce/cuda/detail/window_reduce/common.cuh -- what both window kernels share: a thread's
// run of inputs loaded in vectors, outputs staged for coalesced stores, van Herk's block length
// and lane groups, and the group scans over the threads' folds.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../../../cuda_lane.cuh"
#include "../../../lane.hpp"
#include "../partial.cuh"

namespace multireduce::cuda::detail {

/// The widest load of a thread's run of Items elements of T: 16 bytes, or the whole run if it is
/// shorter (8 or 4 bytes); 0 when the run cannot be loaded in words.
template <class T, int Items>
inline constexpr int run_vector_bytes = (16 % sizeof(T) != 0) ? 0
                                        : Items * int(sizeof(T)) >= 16 ? 16
                                        : (Items * int(sizeof(T)) == 8 || Items * int(sizeof(T)) == 4) ? Items * int(sizeof(T))
                                                                                                        : 0;
template <int Bytes>
using raw_vector = std::conditional_t<Bytes == 16, uint4, std::conditional_t<Bytes == 8, uint2, unsigned>>;

/// Loads a thread's Items consecutive inputs in[base + first + j] as Acc, in vectors when the
/// input is a suitably aligned pointer and the run is whole; positions at or past `count`
/// (relative to base) get a copy of the last input (no window that is written reads them).
template <int Items, class It, class Acc>
__device__ __forceinline__ void load_items(It in, std::int64_t base, int first, int count, Acc (&x)[Items]) {
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    constexpr int bytes = run_vector_bytes<T, Items>;
    if constexpr (bytes > 0) {
      constexpr int per = bytes / int(sizeof(T));
      using R = raw_vector<bytes>;
      const T* p = in + base + first;
      if (first + Items <= count && reinterpret_cast<std::uintptr_t>(p) % bytes == 0) {
        R v[Items / per];
#pragma unroll
        for (int u = 0; u < Items / per; ++u) v[u] = __ldg(reinterpret_cast<const R*>(p) + u);
#pragma unroll
        for (int u = 0; u < Items / per; ++u) {
          T e[per];
          std::memcpy(e, &v[u], bytes);
#pragma unroll
          for (int k = 0; k < per; ++k) x[u * per + k] = static_cast<Acc>(e[k]);
        }
        return;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int i = first + j < count ? first + j : count - 1;
    x[j] = static_cast<Acc>(in[base + i]);
  }
}

/// Stores y[j] to out[base + first + j] for first + j < count, one by one (whole tiles of
/// arithmetic outputs leave staged instead, see window_staged).
template <int Items, class Out, class Acc>
__device__ __forceinline__ void store_items(Out out, std::int64_t base, int first, int count, const Acc (&y)[Items]) {
#pragma unroll
  for (int j = 0; j < Items; ++j)
    if (first + j < count) out[base + first + j] = y[j];
}

/// The element type of the tile kernel's output when it is a pointer to an arithmetic type whose
/// runs of Items fill whole 16-byte chunks: then windows leave through shared memory as coalesced
/// 16-byte stores. Otherwise void (each thread stores its own windows).
template <class Out, int Items>
struct window_staged {
  using type = void;
};
template <class T, int Items>
  requires(std::is_arithmetic_v<T> && (Items * sizeof(T)) % 16 == 0)
struct window_staged<T*, Items> {
  using type = T;
};
template <class Out, int Items>
using window_staged_t = typename window_staged<Out, Items>::type;

/// Where 16-byte chunk m of a staged tile lives: an XOR swizzle that keeps both a thread's
/// consecutive chunks and consecutive threads' chunks in distinct banks.
__device__ __forceinline__ int staged_slot(int m) { return m ^ ((m >> 3) & 7); }

/// van Herk's block length for window W: the largest power of two below W, at most MaxItems (a
/// thread's items are whole blocks), so that every window ends in a later block than it starts;
/// W = 1 copies.
template <int MaxItems>
inline int window_block_for(std::int64_t window) {
  int block = MaxItems;
  while (block > 1 && block >= window) block /= 2;
  return window == 1 ? MaxItems : block;
}

/// log2 of van Herk's lane groups over the threads' folds for a middle of q - 1 folds: the largest
/// power of two below q - 1, at most a warp (groups are then found with shifts, not divisions).
__device__ __forceinline__ int window_group_shift(int q) {
  int group_shift = 5;
  while (group_shift > 0 && (1 << group_shift) >= q - 1) --group_shift;
  return group_shift;
}

/// Whether the windows need op(init, .): not when init is the identity of an arithmetic Op.
template <class Op, class Acc>
bool window_applies_init(const Acc& init) {
  if constexpr (has_identity<Op, Acc> && std::is_arithmetic_v<Acc>) {
    const Acc identity = Op::template identity<Acc>();
    return std::memcmp(&identity, &init, sizeof(Acc)) != 0;
  }
  return true;
}

/// van Herk's scans over the threads' folds, within groups of 2^group_shift lanes (at most a
/// warp): stores this lane's fold `a` folded with the ones before it in its group at prefix[at],
/// with the ones after it at suffix[at], and (by the group's first lane) the group's fold at
/// group_folds[at >> group_shift]. Every lane of the warp calls it.
template <class Acc, class Op>
__device__ __forceinline__ void store_group_scans(cuda_lane& lane, Acc a, int group_shift, const Op& op, int at,
                                                  Acc* prefix, Acc* suffix, Acc* group_folds) {
  const int group = 1 << group_shift, in_group = lane.id() & (group - 1);
  Acc before = a, after = a;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    if (d >= group) break;
    const Acc up = shuffle_up(lane, before, d, group), down = shuffle_down(lane, after, d, group);
    if (in_group >= d) before = op(up, before);
    if (in_group + d < group) after = op(after, down);
  }
  prefix[at] = before;
  suffix[at] = after;
  if (in_group == 0) group_folds[at >> group_shift] = after;
}

}  // namespace multireduce::cuda::detail
