// runtime/cuda/devices.cu -- the threads of a job on several GPUs (devices.cuh).
#include "devices.cuh"

#include <algorithm>
#include <chrono>
#include <string>

#include "context.cuh"

namespace multireduce::runtime::cuda_backend_detail {

std::string unusable_devices(const device_set& devices) {
  if (devices.ordinals.empty()) return "the device set is empty: name at least one GPU";
  for (int d : devices.ordinals)
    if (std::string why = missing_device(d); !why.empty()) return why;
  return "";
}

device_threads::device_threads(const device_set& devices, work_function work)
    : work_(std::move(work)), errors_(devices.size()) {
  running_ = static_cast<int>(devices.size());
  threads_.reserve(devices.size());
  try {
    for (std::size_t slot = 0; slot < devices.size(); ++slot)
      threads_.emplace_back(&device_threads::run, this, static_cast<int>(slot), devices.ordinals[slot]);
  } catch (...) {  // no thread to be had: stop those that started, count the others as done
    stop_ = true;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      running_ -= static_cast<int>(devices.size() - threads_.size());
    }
    join();
    throw;
  }
}

device_threads::~device_threads() {
  stop_ = true;
  join();
}

void device_threads::join() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void device_threads::run(int slot, int device) {
  try {
    const current_device current(device);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreate(&stream), "creating a stream");
    struct destroy {
      cudaStream_t s;
      ~destroy() {
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
      }
    } guard{stream};
    work_(slot, stream);
  } catch (...) {
    errors_[std::size_t(slot)] = std::current_exception();
    stop_ = true;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  changed_.notify_all();
}

void device_threads::wake() {
  const std::lock_guard<std::mutex> lock(mutex_);
  woken_ = true;
  changed_.notify_all();
}

void device_threads::wait(const std::function<void()>& between) {
  for (;;) {
    bool finished = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, std::chrono::milliseconds(100), [&] { return woken_ || running_ == 0; });
      woken_ = false;
      finished = running_ == 0;
    }
    if (between) {
      try {
        between();
      } catch (...) {  // the caller's callback threw: stop the workers, then let it go through
        stop_ = true;
        join();
        throw;
      }
    }
    if (finished) break;
  }
  join();
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

void merge_device_reports(report& r, const std::vector<report>& per_device, const device_set& devices) {
  r.devices = devices.ordinals;
  r.device = devices.first();
  for (const report& d : per_device) {
    r.seconds = std::max(r.seconds, d.seconds);
    r.transfer_seconds = std::max(r.transfer_seconds, d.transfer_seconds);
    r.bytes_read += d.bytes_read;
  }
}

}  // namespace multireduce::runtime::cuda_backend_detail
