// multireduce/cuda_lane.cuh -- the CUDA implementation of the lane seam (see lane.hpp).
//
// The only place in the warp and block layers that reads the hardware thread position. Every
// warp-collective call uses the full mask: all 32 lanes of the warp must make it together.
#pragma once

#include <cstdint>
#include <type_traits>

#include "lane.hpp"

namespace multireduce {

/// The calling CUDA thread, seen as a lane of its warp and a thread of its (1-D, 2-D or 3-D) block.
class cuda_lane {
 public:
  static constexpr unsigned full_mask = 0xffffffffu;
  /// A CUDA warp has 32 lanes: wider logical warps are a compile error (lane.hpp).
  static constexpr int max_warp_size = 32;

  __device__ __forceinline__ cuda_lane() {
    rank_ = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  }
  __device__ __forceinline__ int id() const { return rank_ & 31; }
  __device__ __forceinline__ static constexpr int warp_size() { return 32; }
  __device__ __forceinline__ int warp_id() const { return rank_ >> 5; }
  __device__ __forceinline__ int thread_rank() const { return rank_; }
  __device__ __forceinline__ int block_size() const { return static_cast<int>(blockDim.x * blockDim.y * blockDim.z); }

  __device__ __forceinline__ std::uint32_t shfl_xor(std::uint32_t w, int lane_mask, int width) {
    return __shfl_xor_sync(full_mask, w, lane_mask, width);
  }
  __device__ __forceinline__ std::uint32_t shfl_down(std::uint32_t w, int delta, int width) {
    return __shfl_down_sync(full_mask, w, static_cast<unsigned>(delta), width);
  }
  __device__ __forceinline__ std::uint32_t shfl_up(std::uint32_t w, int delta, int width) {
    return __shfl_up_sync(full_mask, w, static_cast<unsigned>(delta), width);
  }
  __device__ __forceinline__ std::uint32_t shfl_idx(std::uint32_t w, int src_lane, int width) {
    return __shfl_sync(full_mask, w, src_lane, width);
  }
  /// A 64-bit integer of lane src_lane (shfl_idx) or of lane id ^ lane_mask (shfl_xor), for the
  /// CUDA-only kernels that move segment bounds and matcher keys: CUDA's own 64-bit shuffles, high
  /// word first, as those kernels were measured with (lane.hpp's shuffle_idx and shuffle_xor move
  /// any T word by word, low word first, which the compiler schedules differently).
  template <class T>
    requires(std::is_integral_v<T> && sizeof(T) == 8)
  __device__ __forceinline__ T shfl_idx64(T w, int src_lane, int width) {
    return __shfl_sync(full_mask, w, src_lane, width);
  }
  template <class T>
    requires(std::is_integral_v<T> && sizeof(T) == 8)
  __device__ __forceinline__ T shfl_xor64(T w, int lane_mask, int width) {
    return __shfl_xor_sync(full_mask, w, lane_mask, width);
  }
  __device__ __forceinline__ std::uint64_t ballot(bool p) { return __ballot_sync(full_mask, p); }
  __device__ __forceinline__ void sync() { __syncwarp(full_mask); }
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
  int rank_;
};

}  // namespace multireduce
