// classic_kernels/hip_tutorial.hpp -- the kernels of the HIP documentation's reduction tutorial (a
// "rejuvenation and extension" of Harris's deck), written once over the lane seam (lane.hpp) so that
// the same source runs as CUDA kernels on the GPU (cuda_lane, 32-lane warps) and on the host
// emulator with 64-lane warps (host_lane), the wavefront of AMD's CDNA GPUs the tutorial targets.
//
// As in the tutorial, the warp size is a template parameter from the "omit superfluous
// synchronisation" step on, the block size one from "unroll all loops" on, and every kernel reduces
// `front` into one value per block in `back`; the host repeats passes until one value is left
// (passes()). The nine steps the tutorial's text describes, in its order:
//   0 naive                 shared tree, `tid % (2 * i) == 0`                ("The algorithm")
//   1 reduced divergence    `j = 2 * i * tid; j < blockDim.x`                ("Reducing thread divergence")
//   2 no bank conflicts     `i = blockDim.x / 2 ...; tid < i`                ("Resolving bank conflicts")
//   3 upper half            the first op during the load                    ("Utilize upper half of the block")
//   4 warp size template    the last warp's steps without __syncthreads     ("Omit superfluous synchronization")
//   5 block size template   __launch_bounds__, every loop unrolled          ("Unroll all loops")
//   6 warp shuffle          the last warp by __shfl_down                     ("Communicate using warp-collective functions")
//   7 items per thread      ItemsPerThread consecutive loads per thread      ("Amortize bookkeeping variable overhead")
//   8 two-pass              a grid a single block can finish, looping over the input ("Two-pass reduction")
// The tutorial's tmp::static_for is a loop over compile-time bounds here, which nvcc unrolls the
// same way; its __syncwarp(mask) of the active lanes is lane.sync() by the whole first warp (every
// lane of that warp reaches it, which the emulator checks).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include <multireduce/config.hpp>
#include <multireduce/lane.hpp>

namespace multireduce::bench::hip_tutorial {

enum class version : int {
  naive = 0,
  reduced_divergence,
  no_bank_conflicts,
  upper_half,
  warp_size_template,
  block_size_template,
  warp_shuffle,
  items_per_thread,
  two_pass,
};
inline constexpr int version_count = 9;

inline constexpr const char* version_name(version v) {
  constexpr std::array<const char*, version_count> names = {
      "v0 naive (tid % 2i)",          "v1 reduced divergence",       "v2 no bank conflicts",
      "v3 upper half of the block",   "v4 warp size template",       "v5 block size template",
      "v6 warp shuffle",              "v7 items per thread",         "v8 two-pass"};
  return names[static_cast<int>(v)];
}

/// The launch shape the GPU suite and the emulator use: 256-thread blocks, 4 items per thread.
inline constexpr int block_size = 256;
inline constexpr int items_per_thread = 4;

/// Elements one block reduces in one pass of version v (the tutorial's `factor`).
constexpr std::uint32_t factor(version v, int block, int items) {
  if (v < version::upper_half) return std::uint32_t(block);
  if (v < version::items_per_thread) return 2u * std::uint32_t(block);
  return std::uint32_t(block) * std::uint32_t(items);
}

/// Blocks of one pass over `front_size` elements; the two-pass version caps the grid at what one
/// block finishes in the second pass (`factor` partial sums).
constexpr std::uint32_t grid_of(version v, std::uint32_t front_size, int block, int items) {
  const std::uint32_t f = factor(v, block, items);
  const std::uint32_t blocks = std::max<std::uint32_t>((front_size + f - 1) / f, 1);  // n = 0: one block
  return v == version::two_pass ? std::min(blocks, f) : blocks;
}

/// Runs the passes: pass(front_size, grid) reduces front_size values into grid values, until one
/// is left (at least one pass, so that n = 1 goes through a kernel too).
template <class Pass>
void passes(version v, std::uint32_t n, int block, int items, Pass&& pass) {
  std::uint32_t current = n;
  do {
    const std::uint32_t grid = grid_of(v, current, block, items);
    pass(current, grid);
    current = grid;
  } while (current > 1);
}

/// One block of version V: reduces its share of front[0, front_size) into back[bid].
template <version V, int BlockSize, int WarpSize, int ItemsPerThread, lane Lane, class T, class Op>
MULTIREDUCE_HOST_DEVICE void reduce_block(Lane& lane, std::uint32_t bid, std::uint32_t grid, T* shared, const T* front,
                                          T* back, std::uint32_t front_size, Op op, T zero_elem) {
  static_assert(BlockSize % WarpSize == 0 && BlockSize >= 2 * WarpSize, "blocks of at least two warps");
  const std::uint32_t tid = static_cast<std::uint32_t>(lane.thread_rank());
  // Before the block size became a template parameter (v5), the kernels read blockDim.x.
  const std::uint32_t block_dim =
      V < version::block_size_template ? static_cast<std::uint32_t>(lane.block_size()) : std::uint32_t(BlockSize);
  auto read_global_safe = [&](std::uint32_t i) { return i < front_size ? front[i] : zero_elem; };
  auto apply = [&](const T& a, const T& b) { return lane.apply(op, a, b); };

  // ---- read input from the front buffer to shared memory ----
  if constexpr (V < version::upper_half) {
    shared[tid] = read_global_safe(bid * block_dim + tid);
  } else if constexpr (V < version::items_per_thread) {
    const std::uint32_t gid = bid * (block_dim * 2) + tid;
    shared[tid] = apply(read_global_safe(gid), read_global_safe(gid + block_dim));
  } else {
    // ItemsPerThread consecutive values, indexed by a signed int as the tutorial says (so that the
    // compiler may issue one vector load), all in range or padded with zero_elem.
    auto read_items = [&](std::int32_t i) {
      T res = zero_elem;
      if (i + ItemsPerThread <= std::int32_t(front_size)) {
        T items[ItemsPerThread];
        MULTIREDUCE_UNROLL
        for (int k = 0; k < ItemsPerThread; ++k) items[k] = front[i + k];
        res = items[0];
        MULTIREDUCE_UNROLL
        for (int k = 1; k < ItemsPerThread; ++k) res = apply(res, items[k]);
      } else {
        MULTIREDUCE_UNROLL
        for (int k = 0; k < ItemsPerThread; ++k)
          res = apply(res, i + k < std::int32_t(front_size) ? front[i + k] : zero_elem);
      }
      return res;
    };
    const std::int32_t gid = std::int32_t((bid * BlockSize + tid) * ItemsPerThread);
    if constexpr (V == version::items_per_thread) {
      shared[tid] = read_items(gid);
    } else {  // two-pass: the grid is capped, so each thread loops over the input
      T res = zero_elem;
      const std::int32_t stride = std::int32_t(grid * BlockSize * ItemsPerThread);
      for (std::int32_t i = gid; i < std::int32_t(front_size); i += stride) res = apply(res, read_items(i));
      shared[tid] = res;
    }
  }
  lane.barrier();

  // ---- the shared reduction ----
  if constexpr (V == version::naive) {
    for (std::uint32_t i = 1; i < block_dim; i *= 2) {
      if (tid % (2 * i) == 0) shared[tid] = apply(shared[tid], shared[tid + i]);
      lane.barrier();
    }
  } else if constexpr (V == version::reduced_divergence) {
    for (std::uint32_t i = 1; i < block_dim; i *= 2) {
      if (const std::uint32_t j = 2 * i * tid; j < block_dim) shared[j] = apply(shared[j], shared[j + i]);
      lane.barrier();
    }
  } else if constexpr (V <= version::upper_half) {
    for (std::uint32_t i = block_dim / 2; i != 0; i /= 2) {
      if (tid < i) shared[tid] = apply(shared[tid], shared[tid + i]);
      lane.barrier();
    }
  } else {
    // The block-wide steps down to two warps' worth; v4 loops over blockDim.x at run time, v5 on
    // over the compile-time block size (unrolled).
    if constexpr (V == version::warp_size_template) {
      for (std::uint32_t i = block_dim / 2; i > std::uint32_t(WarpSize); i /= 2) {
        if (tid < i) shared[tid] = apply(shared[tid], shared[tid + i]);
        lane.barrier();
      }
    } else {
      MULTIREDUCE_UNROLL
      for (int i = BlockSize / 2; i > WarpSize; i /= 2) {
        if (tid < std::uint32_t(i)) shared[tid] = apply(shared[tid], shared[tid + std::uint32_t(i)]);
        lane.barrier();
      }
    }
    if (tid >= std::uint32_t(WarpSize)) return;  // the first warp finishes alone
    if constexpr (V < version::warp_shuffle) {
      MULTIREDUCE_UNROLL
      for (int i = WarpSize; i != 0; i /= 2) {
        if (tid < std::uint32_t(i)) shared[tid] = apply(shared[tid], shared[tid + std::uint32_t(i)]);
        lane.sync();
      }
    } else {
      T res = apply(shared[tid], shared[tid + WarpSize]);
      MULTIREDUCE_UNROLL
      for (int delta = WarpSize / 2; delta != 0; delta /= 2) res = apply(res, shuffle_down(lane, res, delta, WarpSize));
      if (tid == 0) back[bid] = res;
      return;
    }
  }
  if (tid == 0) back[bid] = shared[0];
}

/// Calls f.template operator()<V>() for every version, in order.
template <class F>
void for_each_version(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f.template operator()<static_cast<version>(I)>(), ...);
  }(std::make_integer_sequence<int, version_count>{});
}

}  // namespace multireduce::bench::hip_tutorial
