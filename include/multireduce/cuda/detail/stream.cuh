// multireduce/cuda/detail/stream.cuh -- owned CUDA streams and events, and the one event timer.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "error.cuh"

namespace multireduce::cuda {

/// A non-blocking stream, synchronised and destroyed with the object.
class owned_stream {
 public:
  owned_stream() { check(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "multireduce::cuda: creating a stream"); }
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
  ~owned_stream() {
    cudaStreamSynchronize(handle_);
    cudaStreamDestroy(handle_);
  }
  cudaStream_t get() const { return handle_; }

 private:
  cudaStream_t handle_ = nullptr;
};

/// An event (timing or not), destroyed with the object.
class owned_event {
 public:
  explicit owned_event(bool timing = true) {
    check(cudaEventCreateWithFlags(&handle_, timing ? cudaEventDefault : cudaEventDisableTiming),
          "multireduce::cuda: creating an event");
  }
  owned_event(const owned_event&) = delete;
  owned_event& operator=(const owned_event&) = delete;
  owned_event(owned_event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ~owned_event() {
    if (handle_ != nullptr) cudaEventDestroy(handle_);
  }
  cudaEvent_t get() const { return handle_; }

 private:
  cudaEvent_t handle_ = nullptr;
};

/// Device time between start() and stop() on one stream, by CUDA events.
class event_timer {
 public:
  explicit event_timer(cudaStream_t stream = 0) : stream_(stream) {}
  void start() { check(cudaEventRecord(start_.get(), stream_), "multireduce::cuda::event_timer"); }
  /// Records the stop event, waits for it and returns the seconds since start().
  double stop() {
    check(cudaEventRecord(stop_.get(), stream_), "multireduce::cuda::event_timer");
    check(cudaEventSynchronize(stop_.get()), "multireduce::cuda::event_timer");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_.get(), stop_.get()), "multireduce::cuda::event_timer");
    return double(ms) * 1e-3;
  }

 private:
  cudaStream_t stream_;
  owned_event start_, stop_;
};

}  // namespace multireduce::cuda
