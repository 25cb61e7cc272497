// classic_kernels/harris.cuh -- the reduction kernels of Harris, "Optimizing Parallel Reduction in
// CUDA" (2007), as Crovella's "Atomics, reductions, warp shuffle" (2020) re-tells them: Harris's
// kernels 1-7, then the slides' versions 8 (grid-stride loop), 9 (atomicAdd finish) and the
// warp-shuffle kernel. Integer sums, as in the slides' table ("Time (2^22 ints)").
//
// Each kernel is the slide's code with three changes, all needed for a correct answer today:
//   - loads past the end read 0 (the slides assume n is a multiple of the block's reach; the later
//     passes over the partial sums are not);
//   - the unrolled last warp (kernels 5-7) puts __syncwarp() between its steps and reads before it
//     writes: since Volta the lanes of a warp are not in lock-step, and the slides' volatile code is
//     a data race there (compute-sanitizer racecheck reports it);
//   - version 8 strides by gridDim.x * blockDim.x: the slide's `blockDim.x * blockDim.x` is the grid
//     width only when the grid has as many blocks as a block has threads.
// The host side (bench_classic.cu) launches kernels 1-6 recursively over the partial sums, as the
// slides do ("recursive kernel invocation"), until one value is left.
#pragma once

#include <cstdint>

namespace multireduce::bench::harris {

/// The slides' block size for the table ("On G80, best perf with 64-256 blocks of 128 threads").
inline constexpr unsigned block_size = 128;

/// Kernel 1: interleaved addressing with divergent branching (`tid % (2*s)`). One element per thread.
__global__ void reduce1(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[block_size];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? g_idata[i] : 0;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// Kernel 2: interleaved addressing, no divergence, but bank conflicts (`index = 2*s*tid`).
__global__ void reduce2(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[block_size];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? g_idata[i] : 0;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// Kernel 3: sequential addressing (`s = blockDim.x/2 ... 1`, `tid < s`): no conflicts, half the
/// threads idle from the first step.
__global__ void reduce3(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[block_size];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? g_idata[i] : 0;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// The first add during the global load (kernels 4-7): two elements a block's width apart.
__device__ __forceinline__ int load_two(const int* g_idata, unsigned i, unsigned n, unsigned width) {
  return (i < n ? g_idata[i] : 0) + (i + width < n ? g_idata[i + width] : 0);
}

/// Kernel 4: first add during global load; each block reduces 2 * blockDim.x elements.
__global__ void reduce4(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[block_size];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  sdata[tid] = load_two(g_idata, i, n, blockDim.x);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// The slides' warpReduce over the first 64 shared values by the first warp, made race-free for
/// independent thread scheduling: each step reads, synchronises the warp, writes, synchronises.
template <unsigned BlockSize>
__device__ __forceinline__ void warp_reduce(int* sdata, unsigned tid) {
#pragma unroll
  for (unsigned s = 32; s > 0; s >>= 1) {
    if (BlockSize >= 2 * s) {
      const int v = sdata[tid] + sdata[tid + s];
      __syncwarp();
      sdata[tid] = v;
      __syncwarp();
    }
  }
}

/// Kernel 5: unroll the last warp (the loop stops at s > 32; the first warp finishes alone).
__global__ void reduce5(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[block_size];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  sdata[tid] = load_two(g_idata, i, n, blockDim.x);
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) warp_reduce<block_size>(sdata, tid);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// Kernel 6: completely unrolled (the block size a template parameter).
template <unsigned BlockSize>
__global__ void reduce6(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[BlockSize];
  const unsigned tid = threadIdx.x;
  const unsigned i = blockIdx.x * (BlockSize * 2) + threadIdx.x;
  sdata[tid] = load_two(g_idata, i, n, BlockSize);
  __syncthreads();
  if (BlockSize >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
  if (BlockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
  if (BlockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
  if (tid < 32) warp_reduce<BlockSize>(sdata, tid);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// Kernel 7: multiple elements per thread (algorithm cascading): a grid-stride while loop adds
/// pairs, then kernel 6's tree. Launched with a grid sized to the GPU, then once more with one
/// block over the partial sums.
template <unsigned BlockSize>
__global__ void reduce7(const int* g_idata, int* g_odata, unsigned n) {
  __shared__ int sdata[BlockSize];
  const unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * (BlockSize * 2) + tid;
  const unsigned grid_size = BlockSize * 2 * gridDim.x;
  int sum = 0;
  while (i < n) {
    sum += load_two(g_idata, i, n, BlockSize);
    i += grid_size;
  }
  sdata[tid] = sum;
  __syncthreads();
  if (BlockSize >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
  if (BlockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
  if (BlockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
  if (tid < 32) warp_reduce<BlockSize>(sdata, tid);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

/// The block size of versions 8, 9 and the warp-shuffle kernel (the slides' homework, 256).
inline constexpr unsigned crovella_block = 256;

/// The shared tree of versions 8 and 9: `for (s = blockDim.x/2; s > 0; s >>= 1)`, synchronising first.
__device__ __forceinline__ int grid_stride_block_sum(const int* gdata, std::int64_t n, int* sdata) {
  const unsigned tid = threadIdx.x;
  int sum = 0;
  for (std::int64_t idx = threadIdx.x + std::int64_t(blockDim.x) * blockIdx.x; idx < n;
       idx += std::int64_t(gridDim.x) * blockDim.x)
    sum += gdata[idx];
  sdata[tid] = sum;
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (tid < s) sdata[tid] += sdata[tid + s];
  }
  return sdata[0];
}

/// Version 8: grid-stride loop, one partial per block (the slides sum them on the host; here a
/// second launch of one block does).
__global__ void reduce8(const int* gdata, int* out, std::int64_t n) {
  __shared__ int sdata[crovella_block];
  const int sum = grid_stride_block_sum(gdata, n, sdata);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

/// Version 9: version 8 finishing with one atomicAdd per block (one launch; *out zeroed first).
__global__ void reduce9(const int* gdata, int* out, std::int64_t n) {
  __shared__ int sdata[crovella_block];
  const int sum = grid_stride_block_sum(gdata, n, sdata);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

/// The warp-shuffle reduction (reduce_ws): grid-stride sum in a register, __shfl_down_sync within
/// each warp, the warps' sums through shared memory to warp 0, one atomicAdd per block.
__global__ void reduce_ws(const int* gdata, int* out, std::int64_t n) {
  __shared__ int sdata[32];
  const unsigned tid = threadIdx.x;
  const unsigned mask = 0xFFFFFFFFu;
  const unsigned lane = threadIdx.x % warpSize;
  const unsigned warp_id = threadIdx.x / warpSize;
  int val = 0;
  for (std::int64_t idx = threadIdx.x + std::int64_t(blockDim.x) * blockIdx.x; idx < n;
       idx += std::int64_t(gridDim.x) * blockDim.x)
    val += gdata[idx];
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) val += __shfl_down_sync(mask, val, offset);
  if (lane == 0) sdata[warp_id] = val;
  __syncthreads();
  if (warp_id == 0) {
    val = tid < blockDim.x / warpSize ? sdata[lane] : 0;
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) val += __shfl_down_sync(mask, val, offset);
    if (tid == 0) atomicAdd(out, val);
  }
}

}  // namespace multireduce::bench::harris
