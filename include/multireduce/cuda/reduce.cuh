// multireduce/cuda/reduce.cuh -- device-wide reduction of one array: one launch for every size.
//
// Design: detail/reduce/kernels.cuh (thread -> warp -> block -> device); the launch shape and the
// measurements behind it: detail/reduce/tuning.cuh.
//
// Determinism: the partition depends only on n and the device's multiprocessor count, and every
// fold happens in a fixed order, so the same input gives bitwise the same result on every run on
// the same GPU (not across GPUs with different SM counts).
//
// The last block finds out that it is last through a ticket in the temporary storage, which must
// start at zero; the last block resets it. The CUB-style entry points clear it with one
// cudaMemsetAsync when more than one block runs; `workspace` keeps its storage's ticket zeroed
// between calls and launches nothing else.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../operators.hpp"
#include "detail/launch.cuh"
#include "detail/reduce/kernels.cuh"
#include "detail/temporary_storage.cuh"

namespace multireduce::cuda {

/// Converts an input element to the accumulator type (the default transform).
template <class Acc>
struct convert_to {
  template <class T>
  __host__ __device__ __forceinline__ Acc operator()(const T& x, std::int64_t) const {
    return static_cast<Acc>(x);
  }
};

/// Pairs an element with its position: the transform of argmin and argmax.
template <class T>
struct with_index {
  __host__ __device__ __forceinline__ key_value<T> operator()(const T& x, std::int64_t i) const {
    return key_value<T>{x, i};
  }
};

namespace detail {

/// The one host function behind every reduce-like entry point: plan the grid, carve the temporary
/// storage (the ticket, one partial per block), clear the ticket unless the caller keeps it zero,
/// launch.
template <class It, class Acc, class Op, class Transform>
cudaError_t reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out, std::int64_t n, Op op, Acc init,
                   Acc empty_result, Transform transform, cudaStream_t stream, bool ticket_is_zero) {
  using Part = typename partial<Acc, Op>::type;
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::reduce: op must be callable as Acc op(Acc, Acc), Acc = the type of init");
  if (n < 0) return cudaErrorInvalidValue;
  const int blocks = reduce_grid_size<T>(n, sm_count());
  temporary_storage<2> temp{{ticket_bytes, sizeof(Part) * static_cast<std::size_t>(blocks)}};
  if (cudaError_t status; !temp.bind(temp_storage, temp_bytes, status)) return status;
  auto* ticket = temp.get<unsigned>(0);
  if (blocks > 1 && !ticket_is_zero) {
    if (const cudaError_t e = cudaMemsetAsync(ticket, 0, ticket_clear_bytes, stream); e != cudaSuccess) return e;
  }
  constexpr int threads = reduce_tuning::block_threads;
  return launch(reduce_kernel<threads, It, Acc, Op, Transform>, blocks, threads, 0, stream, in, n, out, op, init,
                empty_result, transform, temp.get<Part>(1), ticket);
}

}  // namespace detail

/// Reduces n elements into *out = op(init, op(in[0], ..., in[n-1])) (init when n == 0), CUB style:
/// call with temp_storage == nullptr to get temp_bytes, then again with that much device memory.
/// Acc (the type of init) is the accumulator: each element is converted with static_cast<Acc>.
/// @return cudaSuccess, cudaErrorInvalidValue for n < 0 or too little temporary storage, or the
/// launch error. Asynchronous on `stream`; *out is valid once the stream reaches this point.
template <class It, class Acc, class Op>
[[nodiscard]] cudaError_t reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out, std::int64_t n, Op op,
                                 Acc init, cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, op, init, init, convert_to<Acc>{}, stream, false);
}

/// Like reduce, but each element first goes through transform(x, index) -> Acc.
template <class It, class Acc, class Op, class Transform>
[[nodiscard]] cudaError_t transform_reduce(void* temp_storage, std::size_t& temp_bytes, It in, Acc* out,
                                           std::int64_t n, Op op, Acc init, Transform transform,
                                           cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, op, init, init, transform, stream, false);
}

/// The smallest element and its index (the first among equals; a NaN wins, the first NaN).
/// n == 0 gives {identity, -1}. Otherwise as reduce.
template <class T>
[[nodiscard]] cudaError_t argmin(void* temp_storage, std::size_t& temp_bytes, const T* in, key_value<T>* out,
                                 std::int64_t n, cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, multireduce::argmin{},
                        multireduce::argmin::identity<key_value<T>>(), key_value<T>{minimum::identity<T>(), -1},
                        with_index<T>{}, stream, false);
}

/// The largest element and its index (the first among equals; a NaN wins, the first NaN).
/// n == 0 gives {identity, -1}. Otherwise as reduce.
template <class T>
[[nodiscard]] cudaError_t argmax(void* temp_storage, std::size_t& temp_bytes, const T* in, key_value<T>* out,
                                 std::int64_t n, cudaStream_t stream = 0) {
  return detail::reduce(temp_storage, temp_bytes, in, out, n, multireduce::argmax{},
                        multireduce::argmax::identity<key_value<T>>(), key_value<T>{maximum::identity<T>(), -1},
                        with_index<T>{}, stream, false);
}

}  // namespace multireduce::cuda
