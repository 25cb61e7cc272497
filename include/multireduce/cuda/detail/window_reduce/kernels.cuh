// multireduce/cuda/detail/window_reduce/kernels.cuh -- the window kernels and the choice between
// them: the tile kernel, the streaming kernel for long windows, and the doubling passes past both.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "stream_kernel.cuh"
#include "tile_kernel.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// Windows up to the tile kernel's reach: the streaming kernel where it serves (4-byte
/// accumulators and outputs, (W - 1) / stream_items >= 2 and W - 1 <= stream_reach), else the tile
/// kernel with van Herk's block length for W (see window_block_for).
template <int Threads, int Items, class It, class Out, class Acc, class Op>
cudaError_t launch_window_tiles(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, cudaStream_t stream) {
  constexpr auto at_most = [](int b) { return b < Items ? b : Items; };
  switch (window_block_for<Items>(window)) {
    case 1: return launch_window_tile<Threads, Items, 1>(in, n, window, out, op, init, stream);
    case 2: return launch_window_tile<Threads, Items, at_most(2)>(in, n, window, out, op, init, stream);
    case 4: return launch_window_tile<Threads, Items, at_most(4)>(in, n, window, out, op, init, stream);
    case 8: return launch_window_tile<Threads, Items, at_most(8)>(in, n, window, out, op, init, stream);
    default:
      if constexpr (window_streams<Acc, Out>) {
        constexpr int items = window_reduce_tuning::stream_items;
        if ((window - 1) / items >= 2 && window - 1 <= window_reduce_tuning::stream_reach)
          return launch_window_stream<window_reduce_tuning::stream_threads, items>(in, n, window, out, op, init, stream);
      }
      return launch_window_tile<Threads, Items, Items>(in, n, window, out, op, init, stream);
  }
}

/// The doubling path, W past the tile kernel's reach: to[i] = in[i] as Acc.
template <class Acc, class It, class To>
__global__ void window_convert_kernel(It in, std::int64_t n, To to) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = static_cast<Acc>(in[i]);
}

/// to[i] = op(a[i], b[i + shift]) for i < count (a and to may be the same array).
template <class OutA, class Acc, class Op>
__global__ void window_combine_kernel(OutA a, Acc* b, std::int64_t shift, std::int64_t count, OutA to, Op op) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = op(static_cast<Acc>(a[i]), b[i + shift]);
}

template <class Out, class Acc, class Op>
__global__ void window_finish_kernel(Out out, std::int64_t count, Op op, Acc init) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = op(init, static_cast<Acc>(out[i]));
}

}  // namespace multireduce::cuda::detail
