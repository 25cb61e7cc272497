// multireduce/cuda/detail/ptx.cuh -- the inline PTX the kernels use, each behind a named helper:
// asynchronous copies into shared memory (cp.async, sm_80), overlapped launches (griddepcontrol,
// sm_90) and bulk copies announced through an mbarrier (the tensor memory accelerator, sm_90).
#pragma once

#include <cuda_runtime.h>

#include <cuda/ptx>

#include <cstdint>

namespace multireduce::cuda::detail {

// ---- asynchronous copies into shared memory (cp.async, sm_80) ------------------------------------
// A thread issues copies, commits them as a group (commit_copies), and later waits for its groups
// (wait_copies<Pending>); the copies hold no registers meanwhile. Before sm_80 they are plain
// loads and stores, complete at once.

/// Copies 16 bytes (both addresses 16-byte aligned) from global to shared memory.
__device__ __forceinline__ void copy_async16(void* to, const void* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from)
               : "memory");
#else
  *static_cast<uint4*>(to) = *static_cast<const uint4*>(from);
#endif
}
/// Copies one 32-bit word from global to shared memory; valid == false writes a zero instead.
__device__ __forceinline__ void copy_word_async(std::uint32_t* to, const std::uint32_t* from, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(address), "l"(from), "r"(valid ? 4 : 0) : "memory");
#else
  *to = valid ? __ldg(from) : 0u;
#endif
}
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` of this thread's committed copy groups are still in flight.
template <int Pending>
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// ---- overlapped launches (programmatic dependent launch, sm_90) --------------------------------
// A kernel launched with launch_overlapped (launch.cuh) may be scheduled while the kernel before it in the
// stream is still running, once every block of that kernel has called allow_next_grid() (or
// exited). Before it reads anything that kernel wrote, it calls wait_for_previous_grid(), which
// returns once the previous kernel has completed and its writes are visible. Before sm_90 both
// are no-ops and the launch is an ordinary one.

/// Lets the next kernel in the stream be scheduled (its blocks then wait in wait_for_previous_grid).
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Waits until the previous kernel in the stream has completed and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Called at a block's end by a kernel that may not have waited for the previous one: thread 0
/// waits, so that this kernel completes only after the previous one (and a kernel that waits for
/// this one sees both complete).
__device__ __forceinline__ void complete_after_previous_grid() {
  if (threadIdx.x == 0) wait_for_previous_grid();
}

// ---- bulk copies into shared memory (the tensor memory accelerator, sm_90) ---------------------
// A stage of shared memory is filled by one thread with one bulk copy and announced through an
// mbarrier: stage_expect(bar, bytes) + stage_bulk_copy(...) by the issuing thread, stage_wait(bar,
// parity) by every reader (parity: 0 on the first use of `bar`, then alternating). Only launched
// on sm_90 and later; on older architectures these trap.

__device__ __forceinline__ void stage_barrier_init(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::mbarrier_init(bar, 1);
  ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
#else
  __trap();
#endif
}

/// Arrives on `bar` (count 1), expecting `bytes` more from bulk copies (0: the phase completes now).
__device__ __forceinline__ void stage_expect(std::uint64_t* bar, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta, ::cuda::ptx::space_shared, bar,
                                       bytes);
#else
  __trap();
#endif
}

/// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory.
__device__ __forceinline__ void stage_bulk_copy(void* to, const void* from, std::uint32_t bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, to, from, bytes, bar);
#else
  __trap();
#endif
}

__device__ __forceinline__ void stage_wait(std::uint64_t* bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
#else
  __trap();
#endif
}

/// stage_wait for a barrier given by its shared-memory address (__cvta_generic_to_shared), which
/// a loop can compute once: the generic pointer's conversion reads the block's shared window (a
/// special register) at every wait.
__device__ __forceinline__ void stage_wait(std::uint32_t bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n.reg .pred ready;\nwait_for_phase:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
      "@!ready bra wait_for_phase;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace multireduce::cuda::detail
