// multireduce/cuda.cuh -- the device-wide algorithms on the GPU (include from .cu files).
//
// Two layers:
//  - CUB-style entry points (reduce, transform_reduce, argmin, argmax, statistics,
//    segmented_reduce, fixed_segmented_reduce, window_reduce, knn_hamming): query the temporary bytes with
//    temp_storage == nullptr, then run on a stream; they return a cudaError_t and never throw.
//  - `workspace`: owns (and grows) the temporary storage for one stream, runs the same algorithms,
//    throws multireduce::cuda::error with a message, and keeps reduce's ticket zeroed between
//    calls, so a reduction is exactly one kernel launch.
#pragma once

#include <utility>

#include "cuda/common.cuh"
#include "cuda/match.cuh"
#include "cuda/reduce.cuh"
#include "cuda/segmented_reduce.cuh"
#include "cuda/statistics.cuh"
#include "cuda/window_reduce.cuh"

namespace multireduce::cuda {

class workspace {
 public:
  explicit workspace(cudaStream_t stream = 0) : stream_(stream) {}
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;
  workspace(workspace&& other) noexcept { *this = std::move(other); }
  workspace& operator=(workspace&& other) noexcept {
    std::swap(stream_, other.stream_);
    std::swap(storage_, other.storage_);
    std::swap(bytes_, other.bytes_);
    std::swap(result_, other.result_);
    return *this;
  }
  ~workspace() {
    if (storage_ != nullptr) cudaFree(storage_);
    if (result_ != nullptr) cudaFree(result_);
  }
  cudaStream_t stream() const { return stream_; }

  /// *d_out = op(init, fold of in[0, n)), one kernel launch, asynchronous.
  template <class It, class Acc, class Op>
  void reduce(It in, std::int64_t n, Acc* d_out, Op op, Acc init) {
    run("multireduce::cuda::workspace::reduce", [&](void* t, std::size_t& b) {
      return detail::reduce(t, b, in, d_out, n, op, init, init, convert_to<Acc>{}, stream_, t != nullptr);
    }, true);
  }
  /// The reduction, copied to the host (synchronises the stream).
  template <class It, class Acc, class Op>
  Acc reduce(It in, std::int64_t n, Op op, Acc init) {
    Acc* d = scratch<Acc>();
    reduce(in, n, d, op, init);
    return fetch(d);
  }
  /// argmin/argmax, copied to the host: {value, index}; n == 0 gives index -1.
  template <class T>
  key_value<T> argmin(const T* in, std::int64_t n) { return arg_extreme<multireduce::argmin>(in, n, minimum::identity<T>()); }
  template <class T>
  key_value<T> argmax(const T* in, std::int64_t n) { return arg_extreme<multireduce::argmax>(in, n, maximum::identity<T>()); }

  /// All statistics in one pass, copied to the host.
  template <class T>
  multireduce::statistics<T> statistics(const T* in, std::int64_t n) {
    auto* d = scratch<multireduce::statistics<T>>();
    run("multireduce::cuda::workspace::statistics",
        [&](void* t, std::size_t& b) { return detail::statistics(t, b, in, d, n, stream_, t != nullptr); }, true);
    return fetch(d);
  }

  template <class It, class Out, class OffIt, class Acc, class Op>
  void segmented_reduce(It in, std::int64_t n, Out out, std::int64_t segments, OffIt begin_offsets, OffIt end_offsets,
                        Op op, Acc init) {
    run("multireduce::cuda::workspace::segmented_reduce", [&](void* t, std::size_t& b) {
      return detail::segmented_reduce(t, b, in, n, out, segments, begin_offsets, end_offsets, op, init, stream_);
    }, false);
  }
  template <class It, class Out, class Acc, class Op>
  void fixed_segmented_reduce(It in, Out out, std::int64_t segments, std::int64_t segment_length, Op op, Acc init) {
    run("multireduce::cuda::workspace::fixed_segmented_reduce", [&](void* t, std::size_t& b) {
      return detail::fixed_segmented_reduce(t, b, in, out, segments, segment_length, op, init, stream_);
    }, false);
  }
  template <class It, class Out, class Acc, class Op>
  std::int64_t window_reduce(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
    run("multireduce::cuda::workspace::window_reduce", [&](void* t, std::size_t& b) {
      return detail::window_reduce(t, b, in, n, window, out, op, init, stream_);
    }, false);
    return n - window + 1 > 0 ? n - window + 1 : 0;
  }
  /// The k nearest training descriptors of every query (multireduce/cuda/match.cuh).
  void knn_hamming(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                   int bytes, int k, std::int32_t* idx, std::int32_t* dist, match_path path = match_path::automatic) {
    run("multireduce::cuda::workspace::knn_hamming", [&](void* t, std::size_t& b) {
      return cuda::knn_hamming(t, b, query, queries, train, trains, bytes, k, idx, dist, path, stream_);
    }, false);
  }

 private:
  // Layout: [256-byte ticket region, zero between reductions][general temporary storage]. reduce
  // and statistics get the whole buffer (their ticket first); the others start past the ticket.
  static constexpr std::size_t ticket_region = detail::ticket_bytes;

  template <class F>
  void run(const char* what, F&& algorithm, bool uses_ticket) {
    std::size_t bytes = 0;
    if (cudaError_t e = algorithm(nullptr, bytes); e != cudaSuccess) throw error(e, std::string(what) + ": bad arguments");
    const std::size_t total = uses_ticket ? bytes : bytes + ticket_region;
    grow(total);
    void* t = uses_ticket ? storage_ : static_cast<void*>(static_cast<char*>(storage_) + ticket_region);
    std::size_t available = uses_ticket ? bytes_ : bytes_ - ticket_region;
    check(algorithm(t, available), what);
  }
  void grow(std::size_t bytes) {
    if (bytes <= bytes_ && storage_ != nullptr) return;
    check(cudaStreamSynchronize(stream_), "multireduce::cuda::workspace");
    if (storage_ != nullptr) cudaFree(storage_);
    storage_ = nullptr;
    bytes_ = 0;
    const std::size_t want = bytes < 2 * ticket_region ? 2 * ticket_region : bytes;
    check(cudaMalloc(&storage_, want), "multireduce::cuda::workspace: allocating temporary storage");
    bytes_ = want;
    check(cudaMemsetAsync(storage_, 0, ticket_region, stream_), "multireduce::cuda::workspace");
  }
  template <class R>
  R* scratch() {
    static_assert(sizeof(R) <= 256);
    if (result_ == nullptr) check(cudaMalloc(&result_, 256), "multireduce::cuda::workspace: allocating the result");
    return static_cast<R*>(result_);
  }
  template <class R>
  R fetch(const R* d) {
    R value;
    check(cudaMemcpyAsync(&value, d, sizeof(R), cudaMemcpyDeviceToHost, stream_), "multireduce::cuda::workspace: copying the result");
    check(cudaStreamSynchronize(stream_), "multireduce::cuda::workspace: running the reduction");
    return value;
  }
  template <class Op, class T>
  key_value<T> arg_extreme(const T* in, std::int64_t n, T empty_value) {
    auto* d = scratch<key_value<T>>();
    run("multireduce::cuda::workspace::argmin/argmax", [&](void* t, std::size_t& b) {
      return detail::reduce(t, b, in, d, n, Op{}, Op::template identity<key_value<T>>(), key_value<T>{empty_value, -1},
                            with_index<T>{}, stream_, t != nullptr);
    }, true);
    return fetch(d);
  }

  cudaStream_t stream_ = 0;
  void* storage_ = nullptr;
  std::size_t bytes_ = 0;
  void* result_ = nullptr;
};

}  // namespace multireduce::cuda
