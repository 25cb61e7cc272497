// multireduce/cuda/window_reduce.cuh -- sliding-window reduction with any associative operator.
//
// out[i] = op(init, in[i] op in[i+1] op ... op in[i+W-1]) for i in [0, n-W]: NumPy's
// sliding_window_view(x, W).<op>(-1). Operators need no inverse (max and min work), so this is not
// a difference of prefix sums. The method is van Herk / Gil-Werman, blocked: cut the input into
// blocks of B < W; S = suffix folds within each block, P = prefix folds within each block, A = the
// blocks' folds; a window starting in block b and ending in block c is
//     op(S[i], A[b+1] op ... op A[c-1], P[i+W-1])
// (operands in array order, so non-commutative operators work). Three kernels
// (detail/window_reduce/; shapes and measurements in its tuning.cuh):
//  - "tile": W up to a quarter of a tile (2048 for accumulators of up to 8 bytes); each block
//    takes tiles of 512 x 16 consecutive inputs in registers, B a compile-time power of two, the
//    middles of long windows from van Herk again over the threads' folds with warp shuffles;
//    windows leave through shared memory as coalesced 16-byte stores;
//  - "stream": 32 < W <= 2048 with 4-byte accumulators and outputs: a block walks a contiguous run
//    of tiles and each tile writes the windows that end in it, the suffix folds of the W - 1
//    positions before it still in a ring in shared memory, so no input is loaded twice;
//  - "doubling", longer windows: windows of 2^k elements are doubled in place over global memory
//    and combined along W's binary digits (2 log2 W elementwise passes; correct for any W, slower).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "detail/launch.cuh"
#include "detail/temporary_storage.cuh"
#include "detail/window_reduce/kernels.cuh"

namespace multireduce::cuda {
namespace detail {

/// The host function: windows up to the tile kernel's reach take one launch and no temporary
/// storage; longer ones double windows of 2^k elements in two device arrays of n accumulators.
template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream) {
  using tuning = window_reduce_tuning;
  using shape = tuning::tile_shape<Acc>;
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::window_reduce: op must be callable as Acc op(Acc, Acc)");
  if (n < 0 || window < 1) return cudaErrorInvalidValue;
  const bool tile = shape::items > 0 && window <= shape::max_window;
  const std::size_t doubling_bytes = tile ? 0 : sizeof(Acc) * std::size_t(n);
  temporary_storage<2> temp{{doubling_bytes, doubling_bytes}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  const std::int64_t outputs = n - window + 1;
  if (outputs <= 0) return cudaSuccess;
  if constexpr (shape::items > 0) {
    if (tile) return launch_window_tiles<shape::threads, shape::items>(in, n, window, out, op, init, stream);
  }
  // Doubling: D holds folds of 2^k elements; `out` accumulates W's binary digits from the lowest.
  Acc* d = temp.get<Acc>(0);
  Acc* e = temp.get<Acc>(1);
  const int blocks = sm_count() * tuning::doubling_blocks_per_sm, threads = tuning::doubling_threads;
  if (const cudaError_t err = launch(window_convert_kernel<Acc, It, Acc*>, blocks, threads, 0, stream, in, n, d);
      err != cudaSuccess)
    return err;
  std::int64_t covered = 0;  // out[i] holds the fold of in[i, i + covered)
  for (std::int64_t size = 1; size <= window; size *= 2) {
    if (window & size) {
      const cudaError_t err =
          covered == 0 ? launch(window_convert_kernel<Acc, const Acc*, Out>, blocks, threads, 0, stream,
                                static_cast<const Acc*>(d), outputs, out)
                       : launch(window_combine_kernel<Out, Acc, Op>, blocks, threads, 0, stream, out, d, covered,
                                outputs, out, op);
      if (err != cudaSuccess) return err;
      covered += size;
    }
    if (size * 2 <= window) {  // D(2^(k+1))[i] = op(D[i], D[i + 2^k]) for the positions still needed
      if (const cudaError_t err = launch(window_combine_kernel<Acc*, Acc, Op>, blocks, threads, 0, stream, d, d, size,
                                         n - 2 * size + 1, e, op);
          err != cudaSuccess)
        return err;
      std::swap(d, e);
    }
  }
  return launch(window_finish_kernel<Out, Acc, Op>, blocks, threads, 0, stream, out, outputs, op, init);
}

}  // namespace detail

/// Sliding-window reduction: out[i] = op(init, fold of in[i, i+W)) for i in [0, n-W]; writes
/// max(0, n-W+1) outputs. Any W >= 1 and any associative operator (no inverse needed).
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
/// @return cudaSuccess, cudaErrorInvalidValue for n < 0, W < 1 or too little temporary storage, or
/// a launch error.
template <class It, class Out, class Acc, class Op>
[[nodiscard]] cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n,
                                        std::int64_t window, Out out, Op op, Acc init, cudaStream_t stream = 0) {
  return detail::window_reduce(temp_storage, temp_bytes, in, n, window, out, op, init, stream);
}

}  // namespace multireduce::cuda
