// multireduce/cuda/window_reduce.cuh -- sliding-window reduction with any associative operator.
//
// out[i] = op(init, in[i] op in[i+1] op ... op in[i+W-1]) for i in [0, n-W]: NumPy's
// sliding_window_view(x, W).<op>(-1). Operators need no inverse (max and min work), so this is not
// a difference of prefix sums. The method is van Herk / Gil-Werman: cut the input into chunks of W;
// S[r] = fold from r to the end of r's chunk (a suffix scan), P[r] = fold from the start of r's
// chunk to r (a prefix scan); then every window is op(S[i], P[i+W-1]) -- 3 operator applications
// per element whatever W is, and the operand order is kept, so non-commutative operators work.
//  - W <= 2048, "tile": a block loads 4096 consecutive inputs once (coalesced, into shared memory),
//    runs both scans as block-wide segmented scans, and writes 4097-W windows.
//  - W > 2048, "doubling": windows of 2^k elements are doubled in place over global memory and
//    combined along W's binary digits (2 log2 W elementwise passes; correct for any W, slower).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "common.cuh"

namespace multireduce::cuda {
namespace detail {

inline constexpr int window_tile_threads = 256;
inline constexpr int window_tile_items = 16;
inline constexpr int window_tile_inputs = window_tile_threads * window_tile_items;  // 4096
inline constexpr std::int64_t window_tile_max = 2048;

template <class Acc>
struct flagged {
  Acc value;
  int head;  // 1: a chunk starts here (the scan restarts)
};

/// Segmented scan operator; Reverse: the scan runs right to left, so operands swap.
template <class Op, bool Reverse>
struct segmented_scan_op {
  Op op;
  template <class Acc>
  __device__ __forceinline__ flagged<Acc> operator()(const flagged<Acc>& a, const flagged<Acc>& b) const {
    if (b.head) return flagged<Acc>{b.value, 1};
    return flagged<Acc>{Reverse ? op(b.value, a.value) : op(a.value, b.value), a.head};
  }
};

template <class Acc>
struct window_tile_storage {
  using scan = cub::BlockScan<flagged<Acc>, window_tile_threads>;
  union {
    typename scan::TempStorage scan_storage;
    Acc staged[window_tile_inputs + window_tile_inputs / 32];
  };
  Acc prefix[window_tile_inputs];
  Acc suffix[window_tile_inputs];
};

__device__ __forceinline__ int padded_index(int i) { return i + (i >> 5); }

template <class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(window_tile_threads)
    window_tile_kernel(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
  constexpr int items = window_tile_items;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& s = *reinterpret_cast<window_tile_storage<Acc>*>(shared_bytes);
  using scan = typename window_tile_storage<Acc>::scan;
  const int w = static_cast<int>(window);
  const std::int64_t outputs = n - window + 1;
  const std::int64_t per_tile = window_tile_inputs - window + 1;
  for (std::int64_t o0 = std::int64_t(blockIdx.x) * per_tile; o0 < outputs; o0 += std::int64_t(gridDim.x) * per_tile) {
    const int count = n - o0 < window_tile_inputs ? static_cast<int>(n - o0) : window_tile_inputs;
    for (int i = threadIdx.x; i < count; i += window_tile_threads) s.staged[padded_index(i)] = static_cast<Acc>(in[o0 + i]);
    __syncthreads();
    flagged<Acc> forward[items], backward[items];
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const int r = threadIdx.x * items + j;            // forward position
      const int q = window_tile_inputs - 1 - r;          // backward position
      const int rc = r < count ? r : count - 1, qc = q < count ? q : count - 1;  // past the end: any value
      forward[j] = flagged<Acc>{s.staged[padded_index(rc)], r % w == 0};
      backward[j] = flagged<Acc>{s.staged[padded_index(qc)], (q + 1) % w == 0 || q == window_tile_inputs - 1};
    }
    __syncthreads();
    scan(s.scan_storage).InclusiveScan(forward, forward, segmented_scan_op<Op, false>{op});
    __syncthreads();
    scan(s.scan_storage).InclusiveScan(backward, backward, segmented_scan_op<Op, true>{op});
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const int r = threadIdx.x * items + j;
      s.prefix[r] = forward[j].value;
      s.suffix[window_tile_inputs - 1 - r] = backward[j].value;
    }
    __syncthreads();
    const int tile_outputs = outputs - o0 < per_tile ? static_cast<int>(outputs - o0) : static_cast<int>(per_tile);
    for (int r = threadIdx.x; r < tile_outputs; r += window_tile_threads) {
      const Acc x = r % w == 0 ? s.suffix[r] : op(s.suffix[r], s.prefix[r + w - 1]);
      out[o0 + r] = op(init, x);
    }
    __syncthreads();
  }
}

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

template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream) {
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::window_reduce: op must be callable as Acc op(Acc, Acc)");
  if (n < 0 || window < 1) return cudaErrorInvalidValue;
  const bool tile = window <= window_tile_max;
  const std::size_t needed = tile ? 1 : 2 * round_up(sizeof(Acc) * std::size_t(n));
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  const std::int64_t outputs = n - window + 1;
  if (outputs <= 0) return cudaSuccess;
  const int sms = sm_count();
  if (tile) {
    const int shared = static_cast<int>(sizeof(window_tile_storage<Acc>));
    auto kernel = window_tile_kernel<It, Out, Acc, Op>;
    if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
        e != cudaSuccess)
      return e;
    const std::int64_t per_tile = window_tile_inputs - window + 1;
    std::int64_t blocks = (outputs + per_tile - 1) / per_tile;
    if (blocks > std::int64_t(sms) * 16) blocks = std::int64_t(sms) * 16;
    kernel<<<static_cast<int>(blocks), window_tile_threads, shared, stream>>>(in, n, window, out, op, init);
    return cudaPeekAtLastError();
  }
  // Doubling: D holds folds of 2^k elements; `out` accumulates W's binary digits from the lowest.
  Acc* d = static_cast<Acc*>(temp_storage);
  Acc* e = reinterpret_cast<Acc*>(static_cast<char*>(temp_storage) + round_up(sizeof(Acc) * std::size_t(n)));
  const int blocks = sms * 8, threads = 256;
  window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(in, n, d);
  std::int64_t covered = 0;  // out[i] holds the fold of in[i, i + covered)
  for (std::int64_t size = 1; size <= window; size *= 2) {
    if (window & size) {
      if (covered == 0) {
        window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(static_cast<const Acc*>(d), outputs, out);
      } else {
        window_combine_kernel<<<blocks, threads, 0, stream>>>(out, d, covered, outputs, out, op);
      }
      covered += size;
    }
    if (size * 2 <= window) {  // D(2^(k+1))[i] = op(D[i], D[i + 2^k]) for the positions still needed
      window_combine_kernel<<<blocks, threads, 0, stream>>>(d, d, size, n - 2 * size + 1, e, op);
      std::swap(d, e);
    }
    if (const cudaError_t err = cudaPeekAtLastError(); err != cudaSuccess) return err;
  }
  window_finish_kernel<<<blocks, threads, 0, stream>>>(out, outputs, op, init);
  return cudaPeekAtLastError();
}

}  // namespace detail

/// Sliding-window reduction: out[i] = op(init, fold of in[i, i+W)) for i in [0, n-W]; writes
/// max(0, n-W+1) outputs. Any W >= 1 and any associative operator (no inverse needed).
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream = 0) {
  return detail::window_reduce(temp_storage, temp_bytes, in, n, window, out, op, init, stream);
}

}  // namespace multireduce::cuda
