// multireduce/cuda/workspace.cuh -- the convenience layer over the CUB-style entry points: owns
// (and grows) the temporary storage for one stream, throws multireduce::cuda::error with a
// message, and keeps reduce's ticket zeroed between calls, so a reduction is exactly one launch.
//
// Names say whether a call waits: `reduce`, `argmin`, `argmax` and `statistics` copy their result
// to the host and synchronise the stream; every `..._async` call only queues work on the stream
// and leaves its results in device memory. One workspace serves one stream at a time; a workspace
// per host thread (or per stream) keeps threads apart (there is no shared state).
//
//   multireduce::cuda::workspace ws(stream);
//   float total = ws.reduce(d_x, n, multireduce::sum{}, 0.0f);                // waits
//   ws.window_reduce_async(d_x, n, 1000, d_out, multireduce::maximum{}, -INFINITY);
//
// The matcher's convenience calls take a workspace too (multireduce/match/cuda.cuh).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "../operators.hpp"
#include "../statistics.hpp"
#include "detail/device_buffer.cuh"
#include "detail/error.cuh"
#include "detail/ticket.cuh"
#include "fixed_segmented_reduce.cuh"
#include "reduce.cuh"
#include "segmented_reduce.cuh"
#include "statistics.cuh"
#include "window_reduce.cuh"

namespace multireduce::cuda {

class workspace {
 public:
  explicit workspace(cudaStream_t stream = 0) : stream_(stream) {}
  workspace(workspace&&) noexcept = default;
  workspace& operator=(workspace&&) noexcept = default;
  cudaStream_t stream() const { return stream_; }

  /// Grows the temporary storage to at least `bytes` now (it only grows). A stream captured into
  /// a CUDA graph cannot allocate: a workspace used under capture must already hold what its calls
  /// need -- reserve it, or make each call once before the capture. The captured calls then use
  /// this storage at every replay (replays of one graph, and eager calls, must not overlap), and
  /// the kept-zero ticket stays zero from replay to replay.
  void reserve(std::size_t bytes) { grow(bytes + detail::ticket_bytes); }
  /// The bytes of temporary storage held now.
  std::size_t reserved_bytes() const { return storage_.bytes(); }

  // ---- results on the host (each call synchronises the stream) --------------------------------

  /// op(init, fold of in[0, n)): one kernel launch, then the copy to the host.
  template <class It, class Acc, class Op>
  Acc reduce(It in, std::int64_t n, Op op, Acc init) {
    Acc* d = scratch<Acc>();
    reduce_async(in, n, d, op, init);
    return fetch(d);
  }
  /// {value, index} of the smallest element (the first among equals; a NaN wins); n == 0 gives
  /// index -1.
  template <class T>
  key_value<T> argmin(const T* in, std::int64_t n) {
    auto* d = scratch<key_value<T>>();
    argmin_async(in, n, d);
    return fetch(d);
  }
  /// {value, index} of the largest element, as argmin.
  template <class T>
  key_value<T> argmax(const T* in, std::int64_t n) {
    auto* d = scratch<key_value<T>>();
    argmax_async(in, n, d);
    return fetch(d);
  }
  /// All statistics in one pass.
  template <class T>
  multireduce::statistics<T> statistics(const T* in, std::int64_t n) {
    auto* d = scratch<multireduce::statistics<T>>();
    statistics_async(in, n, d);
    return fetch(d);
  }

  // ---- asynchronous: results stay in device memory ----------------------------------------------

  /// *d_out = op(init, fold of in[0, n)), one kernel launch.
  template <class It, class Acc, class Op>
  void reduce_async(It in, std::int64_t n, Acc* d_out, Op op, Acc init) {
    run_with_ticket("multireduce::cuda::workspace::reduce", [&](void* t, std::size_t& b) {
      return detail::reduce(t, b, in, d_out, n, op, init, init, convert_to<Acc>{}, stream_, t != nullptr);
    });
  }
  /// *d_out = {value, index} of the smallest element, as argmin.
  template <class T>
  void argmin_async(const T* in, std::int64_t n, key_value<T>* d_out) {
    arg_extreme_async<multireduce::argmin>(in, n, d_out, minimum::identity<T>());
  }
  /// *d_out = {value, index} of the largest element, as argmax.
  template <class T>
  void argmax_async(const T* in, std::int64_t n, key_value<T>* d_out) {
    arg_extreme_async<multireduce::argmax>(in, n, d_out, maximum::identity<T>());
  }
  /// *d_out = all statistics of in[0, n), one kernel launch.
  template <class T>
  void statistics_async(const T* in, std::int64_t n, multireduce::statistics<T>* d_out) {
    run_with_ticket("multireduce::cuda::workspace::statistics",
                    [&](void* t, std::size_t& b) { return detail::statistics(t, b, in, d_out, n, stream_, t != nullptr); });
  }
  /// segmented_reduce (segmented_reduce.cuh) into `out`, its long-segment queue's header kept zero
  /// in the ticket region (no zeroing kernel). d_bad_offset non-null: the offsets are unchecked
  /// (one offsets array, many short segments: detail::segmented_reduce_is_staged, else
  /// cudaErrorInvalidValue); the kernel that reads them marks at *d_bad_offset (~0 before) the
  /// first bad one and reads nothing outside `in` whatever they say (see detail::segmented_reduce).
  template <class It, class Out, class OffIt, class Acc, class Op>
  void segmented_reduce_async(It in, std::int64_t n, Out out, std::int64_t segments, OffIt begin_offsets,
                              OffIt end_offsets, Op op, Acc init, unsigned long long* d_bad_offset = nullptr) {
    try {
      run_async("multireduce::cuda::workspace::segmented_reduce", [&](void* t, std::size_t& b) {
        return detail::segmented_reduce(t, b, in, n, out, segments, begin_offsets, end_offsets, op, init, stream_,
                                        d_bad_offset, t != nullptr ? kept_zero_queue() : nullptr);
      });
    } catch (...) {  // a launch failed: the header may be left as a kernel before it wrote it
      if (storage_.data() != nullptr) cudaMemsetAsync(kept_zero_queue(), 0, sizeof(detail::long_queue), stream_);
      throw;
    }
  }
  /// fixed_segmented_reduce (fixed_segmented_reduce.cuh) into `out`.
  template <class It, class Out, class Acc, class Op>
  void fixed_segmented_reduce_async(It in, Out out, std::int64_t segments, std::int64_t segment_length, Op op, Acc init) {
    run_async("multireduce::cuda::workspace::fixed_segmented_reduce", [&](void* t, std::size_t& b) {
      return detail::fixed_segmented_reduce(t, b, in, out, segments, segment_length, op, init, stream_);
    });
  }
  /// window_reduce (window_reduce.cuh) into `out`. @return the number of outputs, max(0, n - W + 1).
  template <class It, class Out, class Acc, class Op>
  std::int64_t window_reduce_async(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
    run_async("multireduce::cuda::workspace::window_reduce", [&](void* t, std::size_t& b) {
      return detail::window_reduce(t, b, in, n, window, out, op, init, stream_);
    });
    return n - window + 1 > 0 ? n - window + 1 : 0;
  }

  /// Runs any CUB-style call in this workspace's temporary storage, asynchronously on its stream:
  /// algorithm(void* temp_storage, std::size_t& temp_bytes) -> cudaError_t, called first with a
  /// null pointer (the query), then with the storage. A failure throws error naming `what` (a
  /// failed query: cudaErrorInvalidValue, "bad arguments").
  template <class Algorithm>
  void run_async(const char* what, Algorithm&& algorithm) {
    std::size_t bytes = 0;
    query(what, algorithm, bytes);
    grow(bytes + detail::ticket_bytes);
    std::size_t available = storage_.bytes() - detail::ticket_bytes;
    check(algorithm(storage_.data() + detail::ticket_bytes, available), what);
  }

 private:
  // The storage: [ticket region, zero between reductions][general temporary storage]. reduce and
  // statistics get the whole buffer (their ticket is its first piece, 16 bytes) and leave the
  // ticket zero; segmented_reduce keeps its queue header zero at byte kept_zero_queue_offset;
  // every other call starts past the ticket region.
  template <class Algorithm>
  void run_with_ticket(const char* what, Algorithm&& algorithm) {
    std::size_t bytes = 0;
    query(what, algorithm, bytes);
    grow(bytes);
    std::size_t available = storage_.bytes();
    check(algorithm(storage_.data(), available), what);
  }
  template <class Algorithm>
  static void query(const char* what, Algorithm& algorithm, std::size_t& bytes) {
    if (const cudaError_t e = algorithm(nullptr, bytes); e != cudaSuccess) throw error(e, std::string(what) + ": bad arguments");
  }
  void grow(std::size_t bytes) {
    if (bytes <= storage_.bytes()) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone)
      throw error(cudaErrorStreamCaptureUnsupported,
                  "multireduce::cuda::workspace: the temporary storage must grow to " + std::to_string(bytes) +
                      " bytes while the stream is captured into a CUDA graph; call reserve() (or the same call once) "
                      "before the capture");
    check(cudaStreamSynchronize(stream_), "multireduce::cuda::workspace");  // calls in flight may use the old storage
    storage_ = device_buffer<unsigned char>();
    storage_ = device_buffer<unsigned char>(bytes < 2 * detail::ticket_bytes ? 2 * detail::ticket_bytes : bytes);
    check(cudaMemsetAsync(storage_.data(), 0, detail::ticket_bytes, stream_), "multireduce::cuda::workspace");
  }
  static constexpr std::size_t kept_zero_queue_offset = 64;
  static_assert(kept_zero_queue_offset >= detail::ticket_clear_bytes &&
                kept_zero_queue_offset + sizeof(detail::long_queue) <= detail::ticket_bytes);
  detail::long_queue* kept_zero_queue() {
    return reinterpret_cast<detail::long_queue*>(storage_.data() + kept_zero_queue_offset);
  }
  template <class R>
  R* scratch() {
    static_assert(sizeof(R) <= 256, "multireduce::cuda::workspace: a result of at most 256 bytes");
    if (result_.size() == 0) result_ = device_buffer<unsigned char>(256);
    return reinterpret_cast<R*>(result_.data());
  }
  template <class R>
  R fetch(const R* d) {
    R value;
    check(cudaMemcpyAsync(&value, d, sizeof(R), cudaMemcpyDeviceToHost, stream_),
          "multireduce::cuda::workspace: copying the result");
    check(cudaStreamSynchronize(stream_), "multireduce::cuda::workspace: running the reduction");
    return value;
  }
  template <class Op, class T>
  void arg_extreme_async(const T* in, std::int64_t n, key_value<T>* d_out, T empty_value) {
    run_with_ticket("multireduce::cuda::workspace::argmin/argmax", [&](void* t, std::size_t& b) {
      return detail::reduce(t, b, in, d_out, n, Op{}, Op::template identity<key_value<T>>(), key_value<T>{empty_value, -1},
                            with_index<T>{}, stream_, t != nullptr);
    });
  }

  cudaStream_t stream_ = 0;
  device_buffer<unsigned char> storage_;
  device_buffer<unsigned char> result_;
};

}  // namespace multireduce::cuda
