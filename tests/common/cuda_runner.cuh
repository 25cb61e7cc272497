// Runs a test body in a CUDA kernel: one block, the same body the emulator runs. Skips the test
// (GTEST_SKIP) when there is no usable GPU.
#pragma once

#include <cuda_runtime.h>
#include <multireduce/cuda/detail/device_buffer.cuh>
#include <multireduce/cuda/detail/error.cuh>
#include <multireduce/cuda/detail/launch.cuh>
#include <multireduce/cuda_lane.cuh>

#include <stdexcept>
#include <vector>

#include "warp_cases.hpp"

namespace mr_test {

/// Checks a CUDA call of a test: a failure throws multireduce::cuda::error naming the call.
#define MR_TEST_CUDA(call) ::multireduce::cuda::check((call), #call)

template <class Body>
__global__ void __launch_bounds__(1024) run_body_kernel(Body body) {  // any block size up to 1024
  extern __shared__ __align__(16) unsigned char shared[];
  multireduce::cuda_lane lane;
  body(lane, shared);
}

inline bool gpu_available() {
  static const bool available = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return available;
}

/// Launches run_body_kernel<Body> on `threads` threads: the one part of a run that depends on the body.
template <class Body, class In, class Out>
void launch_body_kernel(int threads, const In* in, Out* out) {
  MR_TEST_CUDA(cudaFuncSetAttribute(run_body_kernel<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(shared_bytes)));
  MR_TEST_CUDA(multireduce::cuda::launch(run_body_kernel<Body>, 1, threads, shared_bytes, nullptr, Body{in, out}));
}

/// The rest of a run (copies in and out, the wait), once per value type rather than once per body:
/// a namespace-scope template without `inline`, so that -O3 does not copy it into every launch.
template <class In, class Out>
void run_body_on_gpu(int warp_size, int threads, const std::vector<In>& in, std::vector<Out>& out,
                void (*launch_kernel)(int threads, const In* in, Out* out)) {
  if (warp_size != 32) throw std::invalid_argument("CUDA warps have 32 lanes");
  const auto d_in = multireduce::cuda::to_device(in);
  const auto d_out = multireduce::cuda::to_device(out);  // poisoned
  launch_kernel(threads, d_in.data(), d_out.data());
  MR_TEST_CUDA(cudaDeviceSynchronize());
  out = d_out.download(out.size());
}

class cuda_runner {
 public:
  template <class Body, class In, class Out>
  void launch(int warp_size, int threads, const std::vector<In>& in, std::vector<Out>& out) {
    run_body_on_gpu(warp_size, threads, in, out, &launch_body_kernel<Body, In, Out>);
  }
};

#define MR_REQUIRE_GPU() \
  if (!::mr_test::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

}  // namespace mr_test
