// runtime/cuda/staging.cuh -- how the CUDA backend's jobs reach data in host memory: copies in and
// out (timed as transfers), the size of the pieces a host source goes through the GPU in, and the
// fold of a queued job over those pieces.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "context.cuh"

namespace multireduce::runtime::cuda_backend_detail {

/// Copies `bytes` of host memory to the device, timed as a transfer.
inline void upload(void* d, const void* host, std::size_t bytes, cudaStream_t stream, event_timer& timer, report& r) {
  if (bytes == 0) return;
  timer.start();
  mc::check(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, stream), "uploading the input");
  r.transfer_seconds += timer.stop();
}

/// Elements per piece when streaming n elements of `bytes_per_element` through the GPU: half of
/// its free memory.
inline std::int64_t chunk_elements(std::int64_t n, std::size_t bytes_per_element) {
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
  const auto fit = static_cast<std::int64_t>(free_bytes / 2 / bytes_per_element);
  return n < fit ? n : (fit > 1 ? fit : 1);
}

/// The result of a queued job on one piece (queued(device slot)), downloaded.
template <class V, class Queue>
V result_of(Queue&& queued, cudaStream_t stream) {
  stream_storage slot(sizeof(V), stream);
  queued(slot.as<V>());
  V value{};
  mc::check(cudaMemcpyAsync(&value, slot.get(), sizeof(V), cudaMemcpyDeviceToHost, stream), "downloading the result");
  mc::check(cudaStreamSynchronize(stream), "downloading the result");
  return value;
}

/// Runs fold_piece(device pointer, count, index of its first element) over a host source, piece
/// by piece through one device buffer of `piece` elements, and returns the pieces' partials in
/// order (none for an empty input).
template <class T, class FoldPiece>
auto fold_pieces(array_source& in, std::int64_t piece, cudaStream_t stream, report& r, const execution& exec,
                 FoldPiece&& fold_piece) {
  using Partial = decltype(fold_piece(static_cast<const T*>(nullptr), std::int64_t(0), std::int64_t(0)));
  std::vector<Partial> partials;
  const std::int64_t n = in.count();
  r.bytes_read += n * std::int64_t(sizeof(T));
  if (n == 0) return partials;
  mc::device_buffer<T> d(static_cast<std::size_t>(std::min(piece, n)));
  event_timer timer(stream);
  for (std::int64_t first = 0; first < n; first += piece) {
    const std::int64_t count = std::min(piece, n - first);
    upload(d.data(), in.read(first, count), sizeof(T) * std::size_t(count), stream, timer, r);
    timer.start();
    partials.push_back(fold_piece(d.data(), count, first));
    r.seconds += timer.stop();
    if (exec.progress) exec.progress(first + count, n);
  }
  return partials;
}

}  // namespace multireduce::runtime::cuda_backend_detail
