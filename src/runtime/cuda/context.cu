// runtime/cuda/context.cu -- the CUDA backend's device, errors, streams and temporary storage
// (context.cuh).
#include "context.cuh"

#include <multireduce/cuda/detail/memory_pool.cuh>

#include <deque>
#include <map>
#include <utility>

namespace multireduce::runtime::cuda_backend_detail {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw device_error(int(status), std::string("GPU: ") + what + ": " + cudaGetErrorString(status));
  }
}

current_device::current_device(int device) {
  check(cudaGetDevice(&previous_), "finding the current device");
  if (previous_ != device) {
    check(cudaSetDevice(device), "selecting the device");
    changed_ = true;
  }
}

current_device::~current_device() {
  if (changed_) cudaSetDevice(previous_);
}

std::string device_name(int device) {
  // cudaGetDeviceProperties takes about 100 us, as long as a small job itself: read once.
  static std::mutex guard;
  static std::map<int, std::string> names;
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = names.find(device); it != names.end()) return it->second;
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "reading the device's name");
  return names[device] = p.name;
}

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string missing_device(int device) {
  const int count = visible_devices();
  if (count == 0) return "no CUDA device is available";
  if (device < 0 || device >= count)
    return "device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " device(s))";
  return "";
}

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    // The legacy default stream while another thread captures in global mode: not this stream's
    // capture, and work queued on it would break that one; the call that queues it says so.
    cudaGetLastError();
    return false;
  }
  return status == cudaStreamCaptureStatusActive;
}

namespace {

/// The temporary storage of queued jobs: the GPU's kept pool (cuda/detail/memory_pool.cuh).
cudaMemPool_t temporary_pool(int device) { return mc::detail::kept_memory_pool(device); }

}  // namespace

stream_storage::stream_storage(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
  const std::size_t size = bytes > 0 ? bytes : 1;
  if (capturing(stream)) {  // a memory node of the graph, freed by a node after the job's
    mc::check(cudaMallocAsync(&data_, size, stream), "allocating temporary storage in the captured graph");
    return;
  }
  int device = 0;
  mc::check(cudaGetDevice(&device), "allocating temporary storage");
  mc::check(cudaMallocFromPoolAsync(&data_, size, temporary_pool(device), stream), "allocating temporary storage");
}

stream_storage::~stream_storage() { cudaFreeAsync(data_, stream_); }

stream_state::stream_state(cudaStream_t stream) : ws(stream), bad_offset(1), unread_mark(1), bad_offset_host(1) {
  mc::check(cudaMemsetAsync(bad_offset.data(), 0xff, sizeof(unsigned long long), stream), "preparing the stream");
}

std::shared_ptr<stream_state> state_of(cudaStream_t stream) {
  static std::mutex guard;
  static std::map<std::pair<int, unsigned long long>, std::shared_ptr<stream_state>> states;
  static std::deque<std::pair<int, unsigned long long>> met;  // in the order first met
  int device = 0;
  unsigned long long id = 0;
  mc::check(cudaGetDevice(&device), "finding the stream's state");
  mc::check(cudaStreamGetId(stream, &id), "finding the stream's state");
  const std::pair<int, unsigned long long> key{device, id};
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = states.find(key); it != states.end()) return it->second;
  if (states.size() >= stream_state_tuning::streams_kept) {
    states.erase(met.front());
    met.pop_front();
  }
  met.push_back(key);
  return states[key] = std::make_shared<stream_state>(stream);
}

}  // namespace multireduce::runtime::cuda_backend_detail
