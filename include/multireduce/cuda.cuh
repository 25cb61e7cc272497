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

#include <cstring>
#include <string>
#include <utility>

#include "cuda/common.cuh"
#include "cuda/match.cuh"
#include "cuda/reduce.cuh"
#include "cuda/segmented_reduce.cuh"
#include "cuda/statistics.cuh"
#include "cuda/window_reduce.cuh"

namespace multireduce::cuda {
namespace detail {

/// Owning handles for the streamed search's buffers (device or pinned host memory), stream and
/// events (host code only).
struct owned_buffer {
  void* data = nullptr;
  bool pinned;
  owned_buffer(std::size_t bytes, bool pinned_host) : pinned(pinned_host) {
    if (bytes > 0)
      check(pinned ? cudaMallocHost(&data, bytes) : cudaMalloc(&data, bytes), "multireduce::cuda: allocating a buffer");
  }
  owned_buffer(const owned_buffer&) = delete;
  ~owned_buffer() { pinned ? cudaFreeHost(data) : cudaFree(data); }
};
struct copy_stream {
  cudaStream_t handle = nullptr;
  copy_stream() { check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "multireduce::cuda: creating a stream"); }
  copy_stream(const copy_stream&) = delete;
  ~copy_stream() {
    cudaStreamSynchronize(handle);
    cudaStreamDestroy(handle);
  }
};
struct event {
  cudaEvent_t handle = nullptr;
  event() { check(cudaEventCreateWithFlags(&handle, cudaEventDisableTiming), "multireduce::cuda: creating an event"); }
  event(const event&) = delete;
  ~event() { cudaEventDestroy(handle); }
};

}  // namespace detail

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
  /// Many independent searches of one width and one k (multireduce/cuda/match.cuh); `pairs` is a
  /// host array of device pointers.
  void knn_hamming_batched(const knn_pair* pairs, int count, int bytes, int k,
                           match_path path = match_path::automatic) {
    run("multireduce::cuda::workspace::knn_hamming_batched", [&](void* t, std::size_t& b) {
      return cuda::knn_hamming_batched(t, b, pairs, count, bytes, k, path, stream_);
    }, false);
  }
  /// The default chunk of knn_hamming_streamed: rows of `bytes` in 256 MiB, or in a quarter of
  /// the free GPU memory when that is less (two chunks are on the GPU at once).
  static std::int64_t streamed_chunk_rows(int bytes) {
    std::size_t free_bytes = 0, total = 0;
    check(cudaMemGetInfo(&free_bytes, &total), "multireduce::cuda::workspace::streamed_chunk_rows");
    const std::size_t budget = free_bytes / 4 < (std::size_t(256) << 20) ? free_bytes / 4 : std::size_t(256) << 20;
    const auto rows = static_cast<std::int64_t>(budget / std::size_t(bytes > 0 ? bytes : 1));
    return rows > 1 ? rows : 1;
  }
  /// knn_hamming with the training set in host memory, of any size: it goes through the GPU
  /// `chunk_rows` rows at a time (0: streamed_chunk_rows), the copy of the next chunk overlapping the search of this one (two device buffers;
  /// pageable rows are staged through two pinned buffers), and each chunk's neighbours are merged
  /// into idx/dist (knn_pair::merge), so the result is exactly knn_hamming's. A training set
  /// already on the device is searched in one go. Returns when done (synchronises the stream).
  void knn_hamming_streamed(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                            std::int64_t trains, int bytes, int k, std::int32_t* idx, std::int32_t* dist,
                            std::int64_t chunk_rows = 0, match_path path = match_path::automatic) {
    const std::string what = "multireduce::cuda::workspace::knn_hamming_streamed";
    std::size_t unused = 0;  // knn_hamming's own checks of the sizes (the rows' place does not matter)
    if (chunk_rows < 0 ||
        cuda::knn_hamming(nullptr, unused, query, queries, nullptr, trains, bytes, k, idx, dist, path) != cudaSuccess)
      throw error(cudaErrorInvalidValue, what + ": bad arguments");
    cudaPointerAttributes where{};
    check(cudaPointerGetAttributes(&where, train), what.c_str());
    if (queries == 0 || trains == 0 || where.type == cudaMemoryTypeDevice || where.type == cudaMemoryTypeManaged) {
      knn_hamming(query, queries, train, trains, bytes, k, idx, dist, path);
      check(cudaStreamSynchronize(stream_), what.c_str());
      return;
    }
    if (chunk_rows == 0) chunk_rows = streamed_chunk_rows(bytes);
    if (chunk_rows > trains) chunk_rows = trains;
    const bool pinned = where.type == cudaMemoryTypeHost;
    const std::size_t chunk_bytes = std::size_t(chunk_rows) * std::size_t(bytes);
    detail::owned_buffer device[2] = {{chunk_bytes, false}, {chunk_bytes, false}};
    detail::owned_buffer staging[2] = {{pinned ? 0 : chunk_bytes, true}, {pinned ? 0 : chunk_bytes, true}};
    detail::copy_stream copies;
    detail::event copied[2], searched[2];
    for (std::int64_t first = 0, c = 0; first < trains; first += chunk_rows, ++c) {
      const int slot = static_cast<int>(c & 1);
      const std::int64_t rows = trains - first < chunk_rows ? trains - first : chunk_rows;
      const std::size_t size = std::size_t(rows) * std::size_t(bytes);
      const std::uint8_t* from = train + first * bytes;
      if (!pinned) {
        if (c >= 2) check(cudaEventSynchronize(copied[slot].handle), what.c_str());  // the staging buffer is free
        std::memcpy(staging[slot].data, from, size);
        from = static_cast<const std::uint8_t*>(staging[slot].data);
      }
      if (c >= 2) check(cudaStreamWaitEvent(copies.handle, searched[slot].handle, 0), what.c_str());  // so is the device one
      check(cudaMemcpyAsync(device[slot].data, from, size, cudaMemcpyHostToDevice, copies.handle), what.c_str());
      check(cudaEventRecord(copied[slot].handle, copies.handle), what.c_str());
      check(cudaStreamWaitEvent(stream_, copied[slot].handle, 0), what.c_str());
      knn_pair piece{query, queries, static_cast<const std::uint8_t*>(device[slot].data), rows, idx, dist};
      piece.first_train_index = first;
      piece.merge = c > 0;
      knn_hamming_batched(&piece, 1, bytes, k, path);
      check(cudaEventRecord(searched[slot].handle, stream_), what.c_str());
    }
    check(cudaStreamSynchronize(stream_), what.c_str());
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
