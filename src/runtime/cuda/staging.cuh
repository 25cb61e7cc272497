// runtime/cuda/staging.cuh -- how the CUDA backend's jobs reach data in host memory: copies in and
// out (timed as transfers), the size of the pieces a host source goes through the GPU in, and the
// fold of a queued job over those pieces.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <cstdint>
#include <vector>

#include "context.cuh"
#include "devices.cuh"

namespace multireduce::runtime::cuda_backend_detail {

/// Copies `bytes` of host memory to the device, timed as a transfer.
inline void upload(void* d, const void* host, std::size_t bytes, cudaStream_t stream, event_timer& timer, report& r) {
  if (bytes == 0) return;
  timer.start();
  mc::check(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, stream), "uploading the input");
  r.transfer_seconds += timer.stop();
}

/// How host data goes through the GPU. piece_bytes_max = 256 MiB: a host array or source goes in
/// pieces of at most this (and at most half the free memory), so that every array over 256 MiB has
/// pieces for each GPU of a set to take, and one GPU's result is the set's (the same pieces, folded
/// the same way). A piece costs one wait for its result (about 20 us on an H100) beside its copy
/// (about 10 ms from pageable memory): the pieces are free.
struct staging_tuning {
  static constexpr std::size_t piece_bytes_max = std::size_t(256) << 20;
};

/// Elements per piece when streaming n elements of `bytes_per_element` through the GPU: half of
/// its free memory, at most staging_tuning::piece_bytes_max.
inline std::int64_t chunk_elements(std::int64_t n, std::size_t bytes_per_element) {
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
  const auto fit = static_cast<std::int64_t>(std::min(free_bytes / 2, staging_tuning::piece_bytes_max) / bytes_per_element);
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

/// A piece of a host source: elements [first, first + count).
struct piece_range {
  std::int64_t first = 0, count = 0;
};

/// The pieces of `piece` elements (the last one shorter) that n elements go through the GPU in.
inline std::vector<piece_range> even_pieces(std::int64_t n, std::int64_t piece) {
  std::vector<piece_range> pieces;
  for (std::int64_t first = 0; first < n; first += piece) pieces.push_back({first, std::min(piece, n - first)});
  return pieces;
}

/// Runs fold_piece(device pointer, count, index of its first element, stream) over `pieces` of a
/// host source (in order, covering it front to back) and returns the partials in piece order.
/// One device: this thread, exec's stream, one device buffer the size of the largest piece. A set
/// of several (devices.cuh): the pieces cut into runs of consecutive pieces of about equal elements,
/// one run per entry of the set, each read from a part of the source of its own
/// (array_source::open_part) on its own thread, GPU and stream. The same pieces are folded the same
/// way wherever they run, so the partials, and whatever the caller makes of them, do not depend on
/// the set.
template <class T, class FoldPiece>
auto fold_pieces(array_source& in, const std::vector<piece_range>& pieces, report& r, const execution& exec,
                 FoldPiece&& fold_piece) {
  using Partial = decltype(fold_piece(static_cast<const T*>(nullptr), std::int64_t(0), std::int64_t(0), cudaStream_t{}));
  const std::int64_t n = in.count();
  std::vector<Partial> partials(pieces.size());
  r.bytes_read += n * std::int64_t(sizeof(T));
  if (pieces.empty()) return partials;
  std::int64_t largest = 1;
  for (const piece_range& p : pieces) largest = std::max(largest, p.count);

  // Folds pieces [begin, end) of `source` (whose element 0 is element `offset` of the input).
  auto fold_run = [&](array_source& source, std::int64_t offset, std::size_t begin, std::size_t end,
                      cudaStream_t stream, report& rr, auto&& done) {
    if (begin == end) return;
    mc::device_buffer<T> d(static_cast<std::size_t>(largest));
    event_timer timer(stream);
    for (std::size_t i = begin; i < end; ++i) {
      const piece_range p = pieces[i];
      upload(d.data(), source.read(p.first - offset, p.count), sizeof(T) * std::size_t(p.count), stream, timer, rr);
      timer.start();
      partials[i] = fold_piece(d.data(), p.count, p.first, stream);
      rr.seconds += timer.stop();
      done(p.first + p.count - offset);
    }
  };
  if (exec.devices.size() <= 1) {
    fold_run(in, 0, 0, pieces.size(), stream_of(exec), r, [&](std::int64_t read) {
      if (exec.progress) exec.progress(read, n);
    });
    return partials;
  }

  // Several devices: run s takes the pieces from about s/N of the elements on.
  const std::size_t runs = exec.devices.size();
  std::vector<std::size_t> run_first(runs + 1, pieces.size());
  for (std::size_t s = 0, i = 0; s < runs; ++s) {
    const std::int64_t from = static_cast<std::int64_t>(double(n) * double(s) / double(runs));
    while (i < pieces.size() && pieces[i].first + pieces[i].count <= from) ++i;
    run_first[s] = s == 0 ? 0 : std::max(i, run_first[s - 1]);
  }
  std::vector<std::unique_ptr<array_source>> parts(runs);
  for (std::size_t s = 0; s < runs; ++s) {
    if (run_first[s] == run_first[s + 1]) continue;
    const std::int64_t first = pieces[run_first[s]].first;
    const piece_range last = pieces[run_first[s + 1] - 1];
    parts[s] = in.open_part(first, last.first + last.count - first);
    if (!parts[s])
      throw unsupported_error("cuda", "several GPUs read a host source in parts at the same time, and this one is read "
                                      "front to back only (a pipe, standard input): name one device");
  }
  std::vector<report> per_device(runs);
  std::vector<std::atomic<std::int64_t>> read(runs);
  for (auto& a : read) a = 0;
  device_threads threads(exec.devices, [&](int slot, cudaStream_t stream) {
    const auto s = std::size_t(slot);
    if (!parts[s]) return;
    fold_run(*parts[s], pieces[run_first[s]].first, run_first[s], run_first[s + 1], stream, per_device[s],
             [&](std::int64_t done) { read[s] = done; });
  });
  threads.wait([&] {
    if (!exec.progress) return;
    std::int64_t total = 0;
    for (const auto& a : read) total += a.load();
    exec.progress(total, n);
  });
  merge_device_reports(r, per_device, exec.devices);
  return partials;
}

}  // namespace multireduce::runtime::cuda_backend_detail
