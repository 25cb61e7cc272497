// multireduce/hip_lane.hip.hpp -- the HIP implementation of the lane seam (see lane.hpp), for AMD
// GPUs; compiled with hipcc (the suffix: like a .cuh, not for a plain C++ compiler).
//
// The wavefront is the warp: 64 lanes on CDNA (gfx90a) and GCN, 32 on RDNA (gfx1030), as the
// target's __AMDGCN_WAVEFRONT_SIZE says at compile time. HIP's shuffles take no mask (a wavefront
// runs in lockstep); every warp-collective call must still be made by all lanes of the wavefront.
// The shuffles give lane.hpp's PTX semantics: HIP's __shfl_xor/__shfl_down/__shfl_up clamp to the
// logical warp of `width` lanes as PTX does, and shfl_idx takes the source lane modulo `width` (as
// PTX does; HIP's __shfl alone would read past the logical warp).
#pragma once

#if !defined(__HIP__)
#error "multireduce/hip_lane.hip.hpp needs hipcc (HIP for AMD GPUs); CUDA code uses multireduce/cuda_lane.cuh"
#endif

#include <hip/hip_runtime.h>

#include <cstdint>

#include "lane.hpp"

namespace multireduce {

/// The calling HIP thread, seen as a lane of its wavefront and a thread of its (1-D, 2-D or 3-D)
/// block. Threads form wavefronts in order of their linear rank in the block, as on CUDA.
class hip_lane {
 public:
  /// The target's wavefront: wider logical warps are a compile error (lane.hpp). In hipcc's host
  /// pass, which compiles no device code, this is the host's default of 64.
  static constexpr int max_warp_size = __AMDGCN_WAVEFRONT_SIZE;
  static_assert(max_warp_size == 32 || max_warp_size == 64, "multireduce::hip_lane: a wavefront has 32 or 64 lanes");

  __device__ __forceinline__ hip_lane() {
    rank_ = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  }
  __device__ __forceinline__ int id() const { return rank_ & (max_warp_size - 1); }
  __device__ __forceinline__ static constexpr int warp_size() { return max_warp_size; }
  __device__ __forceinline__ int warp_id() const { return rank_ >> wave_shift; }
  __device__ __forceinline__ int thread_rank() const { return rank_; }
  __device__ __forceinline__ int block_size() const { return static_cast<int>(blockDim.x * blockDim.y * blockDim.z); }

  __device__ __forceinline__ std::uint32_t shfl_xor(std::uint32_t w, int lane_mask, int width) {
    return __shfl_xor(w, lane_mask, width);
  }
  __device__ __forceinline__ std::uint32_t shfl_down(std::uint32_t w, int delta, int width) {
    return __shfl_down(w, static_cast<unsigned>(delta), width);
  }
  __device__ __forceinline__ std::uint32_t shfl_up(std::uint32_t w, int delta, int width) {
    return __shfl_up(w, static_cast<unsigned>(delta), width);
  }
  __device__ __forceinline__ std::uint32_t shfl_idx(std::uint32_t w, int src_lane, int width) {
    return __shfl(w, src_lane & (width - 1), width);
  }
  __device__ __forceinline__ std::uint64_t ballot(bool p) { return __ballot(p); }
  /// The wavefront barrier: its lanes' shared-memory writes before it are seen by their reads
  /// after it (the lanes run in lockstep; the fences keep the compiler from moving the accesses).
  /// HIP 5.2 has no __syncwarp; this is the one later HIP releases define.
  __device__ __forceinline__ void sync() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
  }
  __device__ __forceinline__ void barrier() { __syncthreads(); }

  template <class Op, class T>
  __device__ __forceinline__ T apply(const Op& op, const T& a, const T& b) const {
    return op(a, b);
  }
  template <class T>
  __device__ __forceinline__ T select(bool p, const T& if_true, const T& if_false) const {
    return p ? if_true : if_false;
  }

 private:
  static constexpr int wave_shift = max_warp_size == 64 ? 6 : 5;
  int rank_;
};

}  // namespace multireduce
