// multireduce/cuda/detail/device_buffer.cuh -- the one owning buffer of the repository: device
// memory (cudaMalloc) or pinned host memory (cudaMallocHost), freed on destruction, move-only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "error.cuh"

namespace multireduce::cuda {

/// Where a buffer's memory is.
enum class memory_kind { device, pinned_host };

/// `count` elements of T in `Kind` memory (uninitialised), freed on destruction. Allocation
/// failures throw error (status cudaErrorMemoryAllocation when out of memory); the CUDA error
/// state is cleared, so later calls are not affected.
template <class T, memory_kind Kind = memory_kind::device>
class buffer {
 public:
  buffer() = default;
  explicit buffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    void* p = nullptr;
    const cudaError_t status =
        Kind == memory_kind::device ? cudaMalloc(&p, count * sizeof(T)) : cudaMallocHost(&p, count * sizeof(T));
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw error(status, "multireduce::cuda::buffer: allocating " + std::to_string(count * sizeof(T)) + " bytes of " +
                              (Kind == memory_kind::device ? "device" : "pinned host") + " memory");
    }
    data_ = static_cast<T*>(p);
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  buffer(buffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  buffer& operator=(buffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  ~buffer() {
    if (data_ == nullptr) return;
    if constexpr (Kind == memory_kind::device) cudaFree(data_);
    else cudaFreeHost(data_);
  }

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Copies host[0, host.size()) to the start of the buffer (synchronous).
  void upload(const std::vector<T>& host)
    requires(Kind == memory_kind::device)
  {
    if (host.size() > count_) throw error(cudaErrorInvalidValue, "multireduce::cuda::buffer::upload: more elements than the buffer holds");
    check(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "multireduce::cuda::buffer::upload");
  }
  /// The first `count` elements, on the host (synchronous).
  std::vector<T> download(std::size_t count) const
    requires(Kind == memory_kind::device)
  {
    if (count > count_) throw error(cudaErrorInvalidValue, "multireduce::cuda::buffer::download: more elements than the buffer holds");
    std::vector<T> host(count);
    check(cudaMemcpy(host.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost), "multireduce::cuda::buffer::download");
    return host;
  }
  /// Sets every byte to `byte` (synchronous): poisons outputs before a check.
  void fill_bytes(int byte)
    requires(Kind == memory_kind::device)
  {
    if (count_ > 0) check(cudaMemset(data_, byte, bytes()), "multireduce::cuda::buffer::fill_bytes");
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

template <class T>
using device_buffer = buffer<T, memory_kind::device>;
template <class T>
using pinned_buffer = buffer<T, memory_kind::pinned_host>;

/// A device copy of `host` (synchronous).
template <class T>
device_buffer<T> to_device(const std::vector<T>& host) {
  device_buffer<T> d(host.size());
  d.upload(host);
  return d;
}

}  // namespace multireduce::cuda
