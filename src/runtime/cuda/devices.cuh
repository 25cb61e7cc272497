// runtime/cuda/devices.cuh -- the CUDA backend's jobs on a set of several GPUs: one host thread per
// entry of the set (runtime::device_set), each with its GPU current and a stream of its own, while
// the calling thread hands out what they produce (results, progress) on itself, as the runtime's
// callbacks promise. Which jobs split, and how: staging.cuh (a host source's pieces), knn.cu (the
// training set in shards), collection.cu (the collection's pairs, work stealing).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "../runtime.hpp"

namespace multireduce::runtime::cuda_backend_detail {

/// "" when every entry of the set is a GPU of this machine (entries may repeat); else why not.
std::string unusable_devices(const device_set& devices);

/// The threads of one job on a device set. The constructor starts work(slot, stream) on one thread
/// per entry (slot = its place in the set); wait() returns when all have returned, running
/// between() on the calling thread each time a worker calls wake() and at least every 100 ms, and
/// once more at the end. A worker that throws makes stopping() true for the others (they check it
/// between units of work) and wait() rethrows its exception (the lowest slot's, if several threw).
class device_threads {
 public:
  using work_function = std::function<void(int slot, cudaStream_t stream)>;
  device_threads(const device_set& devices, work_function work);
  ~device_threads();
  device_threads(const device_threads&) = delete;
  device_threads& operator=(const device_threads&) = delete;

  void wait(const std::function<void()>& between = {});
  void wake();
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

 private:
  void run(int slot, int device);
  void join();

  work_function work_;
  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int running_ = 0;
  bool woken_ = false;
  std::atomic<bool> stop_{false};
};

/// The report of a job run by several devices: every device, the slowest one's times.
void merge_device_reports(report& r, const std::vector<report>& per_device, const device_set& devices);

}  // namespace multireduce::runtime::cuda_backend_detail
