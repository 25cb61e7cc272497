// multireduce/cuda/statistics.cuh -- count, sum, mean, var, std, min, argmin, max, argmax, l1 and
// l2 of one array in one pass and one launch (design: detail/statistics/kernels.cuh).
//
// Deterministic like reduce: the partition depends on n and the SM count only, and every merge
// happens in a fixed order.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "../statistics.hpp"
#include "detail/launch.cuh"
#include "detail/statistics/kernels.cuh"
#include "detail/temporary_storage.cuh"

namespace multireduce::cuda {
namespace detail {

/// The host function: plan the grid (enough blocks that each thread has a few vectors, at most as
/// many as stay resident), carve the temporary storage (the ticket, one state per block), clear
/// the ticket unless the caller keeps it zero, launch.
template <class It, class T>
cudaError_t statistics(void* temp_storage, std::size_t& temp_bytes, It in, multireduce::statistics<T>* out,
                       std::int64_t n, cudaStream_t stream, bool ticket_is_zero) {
  using tuning = statistics_tuning;
  if (n < 0) return cudaErrorInvalidValue;
  constexpr int threads = tuning::block_threads;
  constexpr std::int64_t per_block = std::int64_t(threads) * vector_elements<T> * tuning::vectors_in_flight;
  const std::int64_t wanted = (n + per_block - 1) / per_block, resident = std::int64_t(sm_count()) * tuning::blocks_per_sm;
  const int blocks = static_cast<int>(wanted < 1 ? 1 : wanted < resident ? wanted : resident);
  temporary_storage<2> temp{{ticket_bytes, sizeof(statistics_accumulator<T>) * std::size_t(blocks)}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  auto* ticket = temp.get<unsigned>(0);
  if (blocks > 1 && !ticket_is_zero) {
    if (const cudaError_t e = cudaMemsetAsync(ticket, 0, ticket_clear_bytes, stream); e != cudaSuccess) return e;
  }
  return launch(statistics_kernel<threads, It>, blocks, threads, 0, stream, in, n, out,
                temp.get<statistics_accumulator<T>>(1), ticket);
}

}  // namespace detail

/// All of multireduce::statistics<T> (count, sum, mean, var, std, min, argmin, max, argmax, l1, l2)
/// of n elements in one pass, CUB style (temp_storage == nullptr: query temp_bytes). Writes *out on
/// the device, asynchronously on `stream`.
/// @return cudaSuccess, cudaErrorInvalidValue for n < 0 or too little temporary storage, or the
/// launch error.
template <class T>
[[nodiscard]] cudaError_t statistics(void* temp_storage, std::size_t& temp_bytes, const T* in,
                                     multireduce::statistics<T>* out, std::int64_t n, cudaStream_t stream = 0) {
  return detail::statistics(temp_storage, temp_bytes, in, out, n, stream, false);
}

}  // namespace multireduce::cuda
