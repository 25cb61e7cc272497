// runtime/cuda/context.cuh -- what every job of the CUDA backend runs in: the device made current
// (and given back), CUDA errors turned into the runtime's, the per-stream state that makes a small
// queued job one launch, stream-ordered temporary storage, and CUDA graph capture.
//
// Capture: a job queued on a stream that is capturing a CUDA graph (torch.cuda.graph,
// cupy.cuda.Graph, cudaStreamBeginCapture) takes every temporary from stream-ordered allocations
// that become the graph's own memory nodes, and never touches the stream's kept state (whose
// grow-only storage and kept-zero words replays could not share) nor reads anything back.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <multireduce/cuda.cuh>
#include <multireduce/cuda/detail/stream.cuh>

#include "../runtime.hpp"

namespace multireduce::runtime::cuda_backend_detail {

namespace mc = multireduce::cuda;

/// The memory the CUDA backend reads in place.
inline constexpr memory cuda_memory = memory::of("cuda");

/// Throws the runtime's device_error for a failed CUDA call.
void check(cudaError_t status, const char* what);

/// Turns a cuda::error thrown by body() into the runtime's device_error / device_memory_error.
template <class F>
void translating_errors(const char* what, F&& body) {
  try {
    body();
  } catch (const mc::error& e) {
    const std::string message = std::string("GPU: ") + what + ": " + e.what();
    if (e.status() == cudaErrorMemoryAllocation) throw device_memory_error(int(e.status()), message);
    throw device_error(int(e.status()), message);
  }
}

/// Makes `device` current for its life and gives the caller's device back after it.
class current_device {
 public:
  explicit current_device(int device);
  ~current_device();
  current_device(const current_device&) = delete;
  current_device& operator=(const current_device&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

/// The GPU's name, read once per device and kept (calls from many threads are safe).
std::string device_name(int device);
/// "" when `device` exists; else why not.
std::string missing_device(int device);
/// CUDA devices this process sees (0 without a usable GPU).
int visible_devices();

inline cudaStream_t stream_of(const execution& exec) { return static_cast<cudaStream_t>(exec.stream); }

/// Whether `stream` is capturing a CUDA graph now.
bool capturing(cudaStream_t stream);

/// Device memory freed in stream order (neither its allocation nor its release waits for the
/// device): from the current GPU's kept pool, or under capture a memory node of the graph.
class stream_storage {
 public:
  stream_storage(std::size_t bytes, cudaStream_t stream);
  ~stream_storage();
  stream_storage(const stream_storage&) = delete;
  stream_storage& operator=(const stream_storage&) = delete;
  void* get() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

/// Runs a CUB-style call (the query, then the run) in stream-ordered temporary storage.
template <class Algorithm>
void run_queued(const char* what, cudaStream_t stream, Algorithm&& algorithm) {
  std::size_t bytes = 0;
  mc::check(algorithm(nullptr, bytes), what);
  stream_storage temp(bytes, stream);
  mc::check(algorithm(temp.get(), bytes), what);
}

/// What the queued jobs of one stream keep between calls, so that a small job is one launch and no
/// allocation: a workspace (temporary storage that only grows; reduce's ticket and the segmented
/// reduce's queue header kept zero, so no clearing either), and the offsets check's mark (~0
/// between calls) with a pinned host word it is read into. `busy` keeps two host threads queueing
/// on one stream apart; the stream's order keeps their kernels apart.
struct stream_state {
  explicit stream_state(cudaStream_t stream);
  std::mutex busy;
  mc::workspace ws;
  mc::device_buffer<unsigned long long> bad_offset;
  /// The mark given to the staged kernel when the caller vouches for the offsets
  /// (reduce_job::check_offsets false): never read, so bad_offset stays ~0 for the next check.
  mc::device_buffer<unsigned long long> unread_mark;
  mc::pinned_buffer<unsigned long long> bad_offset_host;
};

struct stream_state_tuning {
  /// Streams whose state is kept (the first ones met; past that the oldest is let go, its memory
  /// freed once no call uses it). PyTorch's and CuPy's streams come from small pools.
  static constexpr std::size_t streams_kept = 32;
  /// Temporary storage a stream's workspace may grow to; a job that needs more (a window longer
  /// than the tile kernel's reach: 2n accumulators) takes it from the pool and gives it back. The
  /// reduce, statistics, fixed-length and offsets jobs need at most a few MiB.
  static constexpr std::size_t workspace_bytes_max = 16u << 20;
};

/// The state of `stream` on the current device (made on first use; never under capture).
std::shared_ptr<stream_state> state_of(cudaStream_t stream);

/// Runs a CUB-style call on a stream: in its state's workspace (in_workspace(state)) when the
/// stream is not capturing and the call needs at most workspace_bytes_max, else in stream-ordered
/// storage (run_queued).
template <class Algorithm, class InWorkspace>
void run_on_stream(const char* what, cudaStream_t stream, Algorithm&& algorithm, InWorkspace&& in_workspace) {
  if (capturing(stream)) return run_queued(what, stream, algorithm);
  std::size_t bytes = 0;
  mc::check(algorithm(nullptr, bytes), what);
  if (bytes > stream_state_tuning::workspace_bytes_max) return run_queued(what, stream, algorithm);
  const std::shared_ptr<stream_state> state = state_of(stream);
  const std::lock_guard<std::mutex> lock(state->busy);
  in_workspace(*state);
}
template <class Algorithm>
void run_on_stream(const char* what, cudaStream_t stream, Algorithm&& algorithm) {
  run_on_stream(what, stream, algorithm, [&](stream_state& state) { state.ws.run_async(what, algorithm); });
}

/// Times the device work queued on a stream between start() and stop() (CUDA events), for the
/// report of a job whose data is staged through host memory; a queued job is not timed.
using mc::event_timer;

}  // namespace multireduce::runtime::cuda_backend_detail
