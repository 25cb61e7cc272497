// tests/cuda/device_array.cuh -- a device copy of a host vector for the GPU tests, poisoned
// (0xA5 bytes) when made without data, so an output a kernel forgets to write is caught.
#pragma once

#include <algorithm>
#include <vector>

#include "cuda_runner.cuh"

namespace mr_test {

template <class T>
struct dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit dev(std::size_t count, unsigned char poison = 0xA5) : n(count) {
    MR_TEST_CUDA(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
    MR_TEST_CUDA(cudaMemset(p, poison, std::max<std::size_t>(count, 1) * sizeof(T)));
  }
  explicit dev(const std::vector<T>& v) : dev(v.size()) {
    MR_TEST_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> v(n);
    MR_TEST_CUDA(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
};

}  // namespace mr_test
