// Runs a test body in a CUDA kernel: one block, the same body the emulator runs. Skips the test
// (GTEST_SKIP) when there is no usable GPU.
#pragma once

#include <cuda_runtime.h>
#include <multireduce/cuda_lane.cuh>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/warp_cases.hpp"

namespace mr_test {

#define MR_TEST_CUDA(call)                                                                                   \
  do {                                                                                                       \
    const cudaError_t status_ = (call);                                                                      \
    if (status_ != cudaSuccess)                                                                              \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(status_) + " at " +   \
                               __FILE__ + ":" + std::to_string(__LINE__));                                  \
  } while (0)

template <class Body>
__global__ void __launch_bounds__(1024) run_body_kernel(Body body) {  // any block size up to 1024
  extern __shared__ __align__(16) unsigned char shared[];
  multireduce::cuda_lane lane;
  body(lane, shared);
}

/// Device memory that frees itself.
template <class T>
class device_buffer {
 public:
  explicit device_buffer(std::size_t n) : n_(n) {
    void* p = nullptr;
    MR_TEST_CUDA(cudaMalloc(&p, (n > 0 ? n : 1) * sizeof(T)));
    p_.reset(static_cast<T*>(p));
  }
  T* get() const { return p_.get(); }
  std::size_t size() const { return n_; }

 private:
  struct free_device {
    void operator()(T* p) const { cudaFree(p); }
  };
  std::unique_ptr<T, free_device> p_;
  std::size_t n_;
};

inline bool gpu_available() {
  static const bool available = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  }();
  return available;
}

class cuda_runner {
 public:
  template <class Body, class In, class Out>
  void launch(int warp_size, int threads, const std::vector<In>& in, std::vector<Out>& out) {
    if (warp_size != 32) throw std::invalid_argument("CUDA warps have 32 lanes");
    device_buffer<In> d_in(in.size());
    device_buffer<Out> d_out(out.size());
    MR_TEST_CUDA(cudaMemcpy(d_in.get(), in.data(), in.size() * sizeof(In), cudaMemcpyHostToDevice));
    MR_TEST_CUDA(cudaMemcpy(d_out.get(), out.data(), out.size() * sizeof(Out), cudaMemcpyHostToDevice));  // poisoned
    MR_TEST_CUDA(cudaFuncSetAttribute(run_body_kernel<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes)));
    run_body_kernel<Body><<<1, threads, shared_bytes>>>(Body{d_in.get(), d_out.get()});
    MR_TEST_CUDA(cudaGetLastError());
    MR_TEST_CUDA(cudaDeviceSynchronize());
    MR_TEST_CUDA(cudaMemcpy(out.data(), d_out.get(), out.size() * sizeof(Out), cudaMemcpyDeviceToHost));
  }
};

#define MR_REQUIRE_GPU() \
  if (!::mr_test::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine"

}  // namespace mr_test
