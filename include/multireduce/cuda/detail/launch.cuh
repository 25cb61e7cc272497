// multireduce/cuda/detail/launch.cuh -- the one way the library launches a kernel, the device's
// attributes that size grids, and grid sizing.
//
// MULTIREDUCE_DEBUG_SYNC: defined before the first multireduce include, every launch the library
// makes synchronises its stream and returns the kernel's own error (CUB_DEBUG_SYNC's idea), so an
// asynchronous fault is reported by the call that caused it rather than by a later one. Slow, for
// debugging only; without it a launch returns only the launch's own error (cudaPeekAtLastError).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace multireduce::cuda {

/// A launch's `status` on `stream`, and in MULTIREDUCE_DEBUG_SYNC builds, when the launch itself
/// succeeded, the kernel's own status (the stream synchronised).
inline cudaError_t after_launch(cudaError_t status, [[maybe_unused]] cudaStream_t stream) {
#if defined(MULTIREDUCE_DEBUG_SYNC)
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream);
#endif
  return status;
}

/// kernel<<<grid, block, shared_bytes, stream>>>(args...), then its status (cudaPeekAtLastError,
/// and the kernel's own in MULTIREDUCE_DEBUG_SYNC builds): every plain kernel launch of the
/// library, its benchmarks and its tests goes through here.
template <class... Params, class... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                   Args&&... args) {
  kernel<<<grid, block, shared_bytes, stream>>>(static_cast<Params>(std::forward<Args>(args))...);
  return after_launch(cudaPeekAtLastError(), stream);
}

namespace detail {

/// An attribute of the current device, `fallback` when it cannot be read. Cached per device
/// ordinal (the first 64) in atomics: any number of host threads, each on its own device, may ask
/// at once; two threads that both miss read the same value twice.
template <cudaDeviceAttr Attribute>
inline int current_device_attribute(int fallback) {
  constexpr int cached_devices = 64;
  static std::atomic<int> cache[cached_devices];  // 0: not read yet (no attribute used here is 0)
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return fallback;
  auto read = [&] {
    int value = fallback;
    return cudaDeviceGetAttribute(&value, Attribute, device) == cudaSuccess ? value : fallback;
  };
  if (device >= cached_devices) return read();
  int value = cache[device].load(std::memory_order_relaxed);
  if (value == 0) {
    value = read();
    cache[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

/// Multiprocessors of the current device.
inline int sm_count() { return current_device_attribute<cudaDevAttrMultiProcessorCount>(1); }

/// Compute capability major version of the current device.
inline int device_major() { return current_device_attribute<cudaDevAttrComputeCapabilityMajor>(0); }

/// Blocks for `work_items` items of `per_block` each: at least 1, at most max_blocks.
inline int grid_for(std::int64_t work_items, int per_block, int max_blocks) {
  const std::int64_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<int>(blocks < 1 ? 1 : blocks > max_blocks ? max_blocks : blocks);
}

/// A fact about a kernel launch shape that the runtime is asked once per (device, kernel, threads,
/// bytes) and that is then kept, in a table per Fact that a mutex guards: a small job's launch
/// should not pay for the question each time. ask(int& value) -> cudaError_t; a failure is
/// returned and not kept (a later call asks again).
template <class Fact, class Ask>
inline cudaError_t asked_once(const void* kernel, int threads, std::size_t bytes, int& value, Ask&& ask) {
  struct known {
    int device;
    const void* kernel;
    int threads;
    std::size_t bytes;
    int value;
  };
  static std::mutex guard;
  static std::vector<known> table;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  {
    std::lock_guard<std::mutex> lock(guard);
    for (const known& k : table)
      if (k.device == device && k.kernel == kernel && k.threads == threads && k.bytes == bytes) {
        value = k.value;
        return cudaSuccess;
      }
  }
  if (const cudaError_t e = ask(value); e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(guard);
  table.push_back(known{device, kernel, threads, bytes, value});
  return cudaSuccess;
}

struct resident_blocks_fact {};
struct dynamic_shared_fact {};
struct shared_carveout_fact {};

/// Blocks of `kernel` that fit on the device at once (at least one per SM): the grid of a
/// kernel whose blocks loop over their work, so that no block starts only after others finish.
/// The occupancy is asked once (asked_once).
template <class Kernel>
inline int resident_grid(Kernel kernel, int threads, std::size_t shared = 0) {
  int per_sm = 0;
  const cudaError_t e = asked_once<resident_blocks_fact>(
      reinterpret_cast<const void*>(kernel), threads, shared, per_sm, [&](int& value) {
        const cudaError_t asked = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&value, kernel, threads, shared);
        return asked == cudaSuccess && value < 1 ? cudaErrorInvalidConfiguration : asked;
      });
  if (e != cudaSuccess) {
    cudaGetLastError();
    return sm_count();
  }
  return sm_count() * per_sm;
}

/// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes), once per device, kernel and
/// bytes (asked_once): the attribute stays set, and the call costs a small job's launch a few
/// microseconds of host time.
template <class Kernel>
inline cudaError_t allow_dynamic_shared(Kernel kernel, std::size_t bytes) {
  int unused = 0;
  return asked_once<dynamic_shared_fact>(reinterpret_cast<const void*>(kernel), 0, bytes, unused, [&](int&) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  });
}

/// Asks the device to give `kernel`'s SMs the most shared memory it can (the rest of their 256 KB
/// goes to L1), so that several blocks that each take much of it fit an SM at once; once per device
/// and kernel (asked_once).
template <class Kernel>
inline cudaError_t prefer_shared_memory(Kernel kernel) {
  int unused = 0;
  return asked_once<shared_carveout_fact>(reinterpret_cast<const void*>(kernel), 0, 0, unused, [&](int&) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared));
  });
}

/// launch(), overlapping the tail of the previous kernel in the stream on sm_90 and later when
/// `overlap` (programmatic dependent launch): the kernel may be scheduled once every block of the
/// previous one has called allow_next_grid() (ptx.cuh) or exited, and must call
/// wait_for_previous_grid() before it reads what that kernel wrote. Otherwise, and before sm_90,
/// an ordinary launch.
template <class... Params, class... Args>
cudaError_t launch_overlapped_if(bool overlap_previous, void (*kernel)(Params...), int blocks, int threads,
                                 std::size_t shared, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  if (overlap_previous && device_major() >= 9) {
    config.attrs = &overlap;
    config.numAttrs = 1;
  }
  return after_launch(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...), stream);
}

/// launch_overlapped_if(true, ...): a kernel that follows another of the same call.
template <class... Params, class... Args>
cudaError_t launch_overlapped(void (*kernel)(Params...), int blocks, int threads, std::size_t shared,
                              cudaStream_t stream, Args&&... args) {
  return launch_overlapped_if(true, kernel, blocks, threads, shared, stream, std::forward<Args>(args)...);
}

}  // namespace detail
}  // namespace multireduce::cuda
