// multireduce/cuda/detail/error.cuh -- the CUDA layer's one error type and one check.
//
// CUB-style entry points return a cudaError_t and never throw; the convenience layer
// (workspace.cuh, the matcher's streamed search) and the owning buffers throw error.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace multireduce::cuda {

/// Thrown by the convenience layer on CUDA errors and bad arguments: what was being done, then
/// CUDA's name and description of the error. `status()` is the CUDA error (cudaErrorInvalidValue
/// for bad arguments, cudaErrorMemoryAllocation when the GPU is out of memory).
class error : public std::runtime_error {
 public:
  error(cudaError_t status, const std::string& what)
      : std::runtime_error(what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"),
        status_(status) {}
  cudaError_t status() const { return status_; }

 private:
  cudaError_t status_;
};

/// Throws error(status, what) unless status is cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw error(status, what);
}

}  // namespace multireduce::cuda
