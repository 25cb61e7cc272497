// classic_kernels/shared_vs_warp.cuh -- the post on shared memory against warp shuffles
// ("用Shuffle加速CUDA上的Reduce操作", 2020, on a V100): the multi-level reduction of 2^30 unsigned
// ints by blocks of 1024 threads through shared memory, against the same levels by warps through
// __shfl_down_sync (a level divides the length by 1024 or by 32), with the post's input generator
// and its checksum (1064985537 for 2^30 values).
//
// One change to the post's warp version: it launches len / 1024 blocks of 1024 threads, which is
// zero blocks at the last level (len = 32); that launch fails (invalid configuration) and the post
// printed the checksum its shared-memory run had left in dst_d[0]. Here a warp level launches
// min(len, 1024) threads per block and len / that many blocks (the post's launch whenever
// len >= 1024), and a shared-memory level ceil(len / 1024) blocks whose loads past len read 0, so
// that any power of two n >= 32 works (the quick run uses 2^25).
#pragma once

#include <cstddef>
#include <cstdint>

namespace multireduce::bench::shared_vs_warp {

inline constexpr unsigned full_mask = 0xffffffffu;
inline constexpr std::size_t warp_size = 32;
inline constexpr std::size_t block_size = 1024;

/// The post's reduce_shared_kernel: a block sums reduce_size consecutive values in shared memory.
template <std::size_t ReduceSize>
__global__ void reduce_shared_kernel(const unsigned* src_d, unsigned* dst_d, std::size_t n) {
  extern __shared__ unsigned shared[];
  const std::size_t global_id = threadIdx.x + std::size_t(blockDim.x) * blockIdx.x;
  const std::size_t reduce_id = global_id % ReduceSize;
  shared[reduce_id] = global_id < n ? src_d[global_id] : 0u;
  __syncthreads();
  for (std::size_t offset = ReduceSize >> 1; offset > 0; offset >>= 1) {
    if (reduce_id < offset) shared[reduce_id] += shared[reduce_id + offset];
    __syncthreads();
  }
  if (reduce_id == 0) dst_d[global_id / ReduceSize] = shared[reduce_id];
}

/// The post's reduce_warp_kernel: a warp sums reduce_size consecutive values by shuffles.
template <std::size_t ReduceSize>
__global__ void reduce_warp_kernel(const unsigned* src_d, unsigned* dst_d, std::size_t n) {
  const std::size_t global_id = threadIdx.x + std::size_t(blockDim.x) * blockIdx.x;
  const std::size_t reduce_id = global_id % ReduceSize;
  const unsigned mask = __ballot_sync(full_mask, global_id < n);
  unsigned val = global_id < n ? src_d[global_id] : 0u;
  for (std::size_t offset = ReduceSize >> 1; offset > 0; offset >>= 1)
    val += __shfl_down_sync(mask, val, static_cast<unsigned>(offset));
  if (reduce_id == 0) dst_d[global_id / ReduceSize] = val;
}

/// The post's msws() generator (Widynski's middle-square Weyl sequence), the same sequence from the
/// same start, so that 2^30 values sum to the post's checksum.
struct msws {
  std::uint64_t x = 0, w = 0;
  unsigned operator()() {
    x *= x;
    x += w += 0xb5ad4eceda1ce2a9ull;
    x = x >> 32 | x << 32;
    return static_cast<unsigned>(x);
  }
};

/// The checksum the post printed for n = 2^30.
inline constexpr unsigned published_checksum = 1064985537u;

}  // namespace multireduce::bench::shared_vs_warp
