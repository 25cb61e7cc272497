// classic_kernels/hip_tutorial_emulated.hpp -- the HIP tutorial's kernels (hip_tutorial.hpp) run on
// the host warp emulator, with warps of 32 or 64 lanes: every block of every pass, lane by lane,
// exactly as PTX (or a wavefront's DPP/ds_swizzle shuffles) would exchange the values. Slow (one
// fiber per lane), so for inputs of thousands, not millions, of elements.
#pragma once

#include <cstdint>
#include <vector>

#include <multireduce/emulator/host_warp.hpp>

#include "hip_tutorial.hpp"

namespace multireduce::bench::hip_tutorial {

/// The reduction of `input` by version V with WarpSize-lane warps, every pass on the emulator.
template <version V, int WarpSize, int BlockSize = block_size, int ItemsPerThread = items_per_thread, class T, class Op>
T emulate(const std::vector<T>& input, Op op, T zero_elem) {
  host_block block(WarpSize, BlockSize / WarpSize);
  std::vector<T> front = input, back, shared(BlockSize);  // n = 0: one pass of one block gives zero_elem
  passes(V, std::uint32_t(front.size()), BlockSize, ItemsPerThread, [&](std::uint32_t front_size, std::uint32_t grid) {
    back.assign(grid, T{});
    for (std::uint32_t bid = 0; bid < grid; ++bid) {
      block.run([&](host_lane& lane) {
        reduce_block<V, BlockSize, WarpSize, ItemsPerThread>(lane, bid, grid, shared.data(), front.data(), back.data(),
                                                             front_size, op, zero_elem);
      });
    }
    front.swap(back);
  });
  return front[0];
}

/// The unsigned sums of `input` by every version (in order), with 64-lane and with 32-lane warps,
/// on the emulator (hip_tutorial_emulated.cpp: compiled as plain C++, since the emulator's lane is
/// host code that nvcc would refuse inside the kernels' host-and-device source).
struct emulated_sums {
  std::vector<unsigned> warp64, warp32;
};
emulated_sums emulate_every_version(const std::vector<unsigned>& input);

}  // namespace multireduce::bench::hip_tutorial
