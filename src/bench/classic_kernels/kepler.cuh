// classic_kernels/kepler.cuh -- the kernels of Luitjens, "Faster Parallel Reductions on Kepler"
// (2014): warpReduceSum and blockReduceSum over __shfl_down, the two-pass deviceReduceKernel (the
// same kernel reduces the input, then its own partial sums), and the two one-launch atomic forms
// (one atomicAdd per warp, one per block); each with scalar, int2 and int4 loads ("vectorised
// solutions in the source on Github"). Integer sums. The post's __shfl_down is __shfl_down_sync
// with the full mask today (the plain form was removed in CUDA 9); nothing else changes.
#pragma once

#include <cstdint>

namespace multireduce::bench::kepler {

/// The post's launch: 512 threads, at most 1024 blocks (so that one block of 1024 threads can
/// reduce the partial sums in the second pass).
inline constexpr int threads = 512;
inline constexpr int max_blocks = 1024;

__device__ __forceinline__ int warp_reduce_sum(int val) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) val += __shfl_down_sync(0xffffffffu, val, offset);
  return val;
}

/// Warp sums to shared memory, then the first warp reduces them; the block's sum in thread 0.
__device__ __forceinline__ int block_reduce_sum(int val) {
  __shared__ int shared[32];
  const int lane = threadIdx.x % warpSize;
  const int wid = threadIdx.x / warpSize;
  val = warp_reduce_sum(val);
  if (lane == 0) shared[wid] = val;
  __syncthreads();
  val = threadIdx.x < blockDim.x / warpSize ? shared[lane] : 0;
  if (wid == 0) val = warp_reduce_sum(val);
  return val;
}

/// Loads of `Width` ints (1, 2 or 4: int, int2, int4).
template <int Width>
struct vector_of;
template <>
struct vector_of<1> {
  using type = int;
  __device__ static int sum(int v) { return v; }
};
template <>
struct vector_of<2> {
  using type = int2;
  __device__ static int sum(int2 v) { return v.x + v.y; }
};
template <>
struct vector_of<4> {
  using type = int4;
  __device__ static int sum(int4 v) { return v.x + v.y + v.z + v.w; }
};

/// A thread's grid-stride sum in registers: vector loads over the first n / Width vectors, then
/// the elements of the tail (fewer than Width), as the post's vectorised kernels do.
template <int Width>
__device__ __forceinline__ int thread_sum(const int* in, int n) {
  using V = vector_of<Width>;
  int sum = 0;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x, stride = blockDim.x * gridDim.x;
  const auto* vectors = reinterpret_cast<const typename V::type*>(in);
  for (int i = idx; i < n / Width; i += stride) sum += V::sum(vectors[i]);
  if (Width > 1) {
    const int tail = n / Width * Width + idx;
    if (tail < n) sum += in[tail];
  }
  return sum;
}

/// deviceReduceKernel (and its vectorised forms): one partial per block into out[blockIdx.x].
template <int Width>
__global__ void device_reduce_kernel(const int* in, int* out, int n) {
  const int sum = block_reduce_sum(thread_sum<Width>(in, n));
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

/// deviceReduceWarpAtomicKernel: each warp's sum added atomically to *out (zeroed first).
template <int Width>
__global__ void device_reduce_warp_atomic_kernel(const int* in, int* out, int n) {
  const int sum = warp_reduce_sum(thread_sum<Width>(in, n));
  if ((threadIdx.x & (warpSize - 1)) == 0) atomicAdd(out, sum);
}

/// deviceReduceBlockAtomicKernel: each block's sum added atomically to *out (zeroed first).
template <int Width>
__global__ void device_reduce_block_atomic_kernel(const int* in, int* out, int n) {
  const int sum = block_reduce_sum(thread_sum<Width>(in, n));
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

/// The post's grid for n ints read `Width` at a time: min((n / Width + threads - 1) / threads, 1024).
inline int blocks_for(std::int64_t n, int width) {
  const std::int64_t needed = (n / width + threads - 1) / threads;
  return static_cast<int>(needed < 1 ? 1 : (needed > max_blocks ? max_blocks : needed));
}

}  // namespace multireduce::bench::kepler
