// multireduce/match/cuda.cuh -- brute-force Hamming k-NN of binary descriptors on the GPU: the
// CUB-style entry points and, on a cuda::workspace, the convenience calls (batched and streamed
// searches included). The contract is match/match.hpp's: for every query the k nearest training
// descriptors, by distance then by training index (OpenCV's order), -1 past the training set.
//
// Three kernels (match_path; automatic picks as docs/match.md says):
//  - wgmma (sm_90 GPUs, code built for sm_90a, detail/wgmma_kernel.cuh): warpgroup binary MMA,
//    wgmma.mma_async m64n128k256 with AND + popcount, and an epilogue on two pairs per instruction;
//  - tensor_core (sm_80 and newer, detail/tensor_kernel.cuh): binary mma.sync with AND + popcount,
//    hamming(a, b) = popc(a) + popc(b) - 2 popc(a AND b); the top-k epilogue is the cost;
//  - popcount (any GPU, detail/popcount_kernel.cuh): the paper's section-8 kernel, the distances
//    of 8 queries summed over a group of 8 lanes by warp_multi_reduce<8, 8, swap>.
// Lanes see training rows in increasing index order, so a lane's list needs a strictly smaller
// distance to replace an entry; lists of different lanes, warps and training slices are merged by
// the key (distance, index). When there are too few queries to fill the GPU the training set is
// cut into slices and a second kernel merges the slices' lists (detail/plan.cuh; shapes and
// measurements in detail/tuning.cuh).
// Batches: every launch carries a table of up to 46 searches (kernel parameters), each with its
// own query blocks and slices, so many small image pairs share one launch and fill the GPU
// together. A search can also be one piece of a larger training set (knn_pair::first_train_index,
// knn_pair::merge): knn_hamming_streamed uses that.
// Descriptor widths: multiples of 4 bytes up to match_max_bytes (ORB 32, BRISK/FREAK/LATCH/AKAZE 64).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "../cuda/detail/device_buffer.cuh"
#include "../cuda/detail/error.cuh"
#include "../cuda/detail/stream.cuh"
#include "../cuda/workspace.cuh"
#include "detail/plan.cuh"
#include "match.hpp"

namespace multireduce::cuda {

using multireduce::knn_pair;
using multireduce::match_path;

/// The k nearest training descriptors of every query by Hamming distance: idx and dist are
/// queries x k int32 arrays on the device; -1 past the training set's size. Descriptors are rows of
/// `bytes` bytes (a multiple of 4, at most match_max_bytes) in device memory aligned to 4 bytes.
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
/// @return cudaErrorInvalidValue for bad sizes or misaligned rows, cudaErrorNotSupported for
/// match_path::tensor_core below sm_80 or match_path::wgmma where the sm_90a kernel is not there
/// (another GPU, or code built without sm_90a), or the launch error.
[[nodiscard]] inline cudaError_t knn_hamming(void* temp_storage, std::size_t& temp_bytes, const std::uint8_t* query,
                                             std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                                             int bytes, int k, std::int32_t* idx, std::int32_t* dist,
                                             match_path path = match_path::automatic, cudaStream_t stream = 0) {
  const knn_pair pair{query, queries, train, trains, idx, dist};
  return detail::knn_hamming_batched(temp_storage, temp_bytes, &pair, 1, bytes, k, path, stream);
}

/// Many independent searches (image pairs of different sizes) of one descriptor width and one k,
/// with as few launches as possible: up to 46 searches share one launch, the GPU's blocks shared
/// out by each search's work, so a batch of small pairs fills the GPU. `pairs` is a host array of
/// searches over device memory; each is the k nearest of its queries among its training rows,
/// exactly as knn_hamming. CUB style, asynchronous on `stream`; errors as knn_hamming.
[[nodiscard]] inline cudaError_t knn_hamming_batched(void* temp_storage, std::size_t& temp_bytes,
                                                     const knn_pair* pairs, int count, int bytes, int k,
                                                     match_path path = match_path::automatic,
                                                     cudaStream_t stream = 0) {
  return detail::knn_hamming_batched(temp_storage, temp_bytes, pairs, count, bytes, k, path, stream);
}

// ---- on a workspace (throw cuda::error) ------------------------------------------------------------

/// knn_hamming in the workspace's temporary storage, asynchronously on its stream.
inline void knn_hamming_async(workspace& ws, const std::uint8_t* query, std::int64_t queries,
                              const std::uint8_t* train, std::int64_t trains, int bytes, int k, std::int32_t* idx,
                              std::int32_t* dist, match_path path = match_path::automatic) {
  ws.run_async("multireduce::cuda::knn_hamming", [&](void* t, std::size_t& b) {
    return knn_hamming(t, b, query, queries, train, trains, bytes, k, idx, dist, path, ws.stream());
  });
}

/// knn_hamming_batched in the workspace's temporary storage, asynchronously on its stream.
inline void knn_hamming_batched_async(workspace& ws, const knn_pair* pairs, int count, int bytes, int k,
                                      match_path path = match_path::automatic) {
  ws.run_async("multireduce::cuda::knn_hamming_batched", [&](void* t, std::size_t& b) {
    return knn_hamming_batched(t, b, pairs, count, bytes, k, path, ws.stream());
  });
}

/// The default chunk of knn_hamming_streamed: rows of `bytes` in 256 MiB, or in a quarter of the
/// free GPU memory when that is less (two chunks are on the GPU at once, and the wgmma kernel's
/// tiles of one, about its size again).
inline std::int64_t streamed_chunk_rows(int bytes) {
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "multireduce::cuda::streamed_chunk_rows");
  const std::size_t budget = free_bytes / 4 < (std::size_t(256) << 20) ? free_bytes / 4 : std::size_t(256) << 20;
  const auto rows = static_cast<std::int64_t>(budget / std::size_t(bytes > 0 ? bytes : 1));
  return rows > 1 ? rows : 1;
}

/// knn_hamming with the training set in host memory, of any size: it goes through the GPU
/// `chunk_rows` rows at a time (0: streamed_chunk_rows), the copy of the next chunk overlapping the
/// search of this one (two device buffers; pageable rows are staged through two pinned buffers),
/// and each chunk's neighbours are merged into idx/dist (knn_pair::merge), so the result is exactly
/// knn_hamming's. A training set already on the device is searched in one go. Returns when done
/// (synchronises the workspace's stream).
inline void knn_hamming_streamed(workspace& ws, const std::uint8_t* query, std::int64_t queries,
                                 const std::uint8_t* train, std::int64_t trains, int bytes, int k, std::int32_t* idx,
                                 std::int32_t* dist, std::int64_t chunk_rows = 0,
                                 match_path path = match_path::automatic) {
  const std::string what = "multireduce::cuda::knn_hamming_streamed";
  const cudaStream_t stream = ws.stream();
  std::size_t unused = 0;  // knn_hamming's own checks of the sizes (the rows' place does not matter)
  if (chunk_rows < 0 ||
      knn_hamming(nullptr, unused, query, queries, nullptr, trains, bytes, k, idx, dist, path) != cudaSuccess)
    throw error(cudaErrorInvalidValue, what + ": bad arguments");
  cudaPointerAttributes where{};
  check(cudaPointerGetAttributes(&where, train), what.c_str());
  if (queries == 0 || trains == 0 || where.type == cudaMemoryTypeDevice || where.type == cudaMemoryTypeManaged) {
    knn_hamming_async(ws, query, queries, train, trains, bytes, k, idx, dist, path);
    check(cudaStreamSynchronize(stream), what.c_str());
    return;
  }
  if (chunk_rows == 0) chunk_rows = streamed_chunk_rows(bytes);
  if (chunk_rows > trains) chunk_rows = trains;
  const bool pinned = where.type == cudaMemoryTypeHost;
  const std::size_t chunk_bytes = std::size_t(chunk_rows) * std::size_t(bytes);
  device_buffer<std::uint8_t> device[2] = {device_buffer<std::uint8_t>(chunk_bytes), device_buffer<std::uint8_t>(chunk_bytes)};
  pinned_buffer<std::uint8_t> staging[2] = {pinned_buffer<std::uint8_t>(pinned ? 0 : chunk_bytes),
                                            pinned_buffer<std::uint8_t>(pinned ? 0 : chunk_bytes)};
  owned_stream copies;
  owned_event copied[2] = {owned_event(false), owned_event(false)}, searched[2] = {owned_event(false), owned_event(false)};
  for (std::int64_t first = 0, c = 0; first < trains; first += chunk_rows, ++c) {
    const int slot = static_cast<int>(c & 1);
    const std::int64_t rows = trains - first < chunk_rows ? trains - first : chunk_rows;
    const std::size_t size = std::size_t(rows) * std::size_t(bytes);
    const std::uint8_t* from = train + first * bytes;
    if (!pinned) {
      if (c >= 2) check(cudaEventSynchronize(copied[slot].get()), what.c_str());  // the staging buffer is free
      std::memcpy(staging[slot].data(), from, size);
      from = staging[slot].data();
    }
    if (c >= 2) check(cudaStreamWaitEvent(copies.get(), searched[slot].get(), 0), what.c_str());  // so is the device one
    check(cudaMemcpyAsync(device[slot].data(), from, size, cudaMemcpyHostToDevice, copies.get()), what.c_str());
    check(cudaEventRecord(copied[slot].get(), copies.get()), what.c_str());
    check(cudaStreamWaitEvent(stream, copied[slot].get(), 0), what.c_str());
    knn_pair piece{query, queries, device[slot].data(), rows, idx, dist};
    piece.first_train_index = first;
    piece.merge = c > 0;
    knn_hamming_batched_async(ws, &piece, 1, bytes, k, path);
    check(cudaEventRecord(searched[slot].get(), stream), what.c_str());
  }
  check(cudaStreamSynchronize(stream), what.c_str());
}

}  // namespace multireduce::cuda
