// multireduce/cuda/detail/memory_pool.cuh -- the stream-ordered memory pool that the library's
// temporary storage comes from (the runtime's queued jobs, the NCCL front): one per GPU, made on
// first use and kept (in a table that a mutex guards) for the process's life.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "error.cuh"

namespace multireduce::cuda::detail {

/// How much a pool keeps. keep_bytes = 256 MiB: bytes a pool keeps between calls instead of
/// handing them back to the driver at every synchronisation, as the device's default pool does
/// (release threshold 0). Measured on the H200 (python -m multireduce.bench, CUDA events around
/// one call, 2026-11-24): with the default pool a 2^14-float sum took 73 us and a 2^26-float
/// segmented sum 188 us, 60-130 us of it mapping memory again; the library's own temporary storage
/// is at most a few MiB but the matcher's grows with the queries, hence a generous bound.
struct memory_pool_tuning {
  static constexpr std::uint64_t keep_bytes = std::uint64_t{256} << 20;
};

/// The pool of GPU `device`. Throws cuda::error when it cannot be made.
inline cudaMemPool_t kept_memory_pool(int device) {
  static std::mutex guard;
  static std::map<int, cudaMemPool_t> pools;
  const std::lock_guard<std::mutex> lock(guard);
  if (auto it = pools.find(device); it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  check(cudaMemPoolCreate(&pool, &props), "creating the temporary storage pool");
  std::uint64_t keep = memory_pool_tuning::keep_bytes;
  if (const cudaError_t e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep); e != cudaSuccess) {
    cudaMemPoolDestroy(pool);
    throw error(e, "creating the temporary storage pool");
  }
  return pools[device] = pool;
}

}  // namespace multireduce::cuda::detail
