// Test bodies for the warp and block primitives, written once and run by a Runner: the host
// emulator (tests/common/host_runner.hpp), a CUDA kernel (tests/common/cuda_runner.cuh), or
// compiled by hipcc in a HIP kernel (tests/hip/compile_layers.hip). A body reads thread t's inputs
// at in[t * per_thread ...] and writes its outputs at out[t * outputs ...]. No GoogleTest here: the
// checks are in warp_cases.hpp (hipcc's clang 15 cannot compile GoogleTest's headers as C++20 in
// its device pass).
#pragma once

#include <multireduce/multireduce.hpp>

#include <cstddef>

#include "test_values.hpp"

namespace mr_test {

using namespace multireduce;
using algo = multi_reduce_algorithm;

/// Shared memory every body may use (bytes); the runners provide it, 16-byte aligned.
inline constexpr std::size_t shared_bytes = 48 * 1024;

// ---------------------------------------------------------------------------------------------
// Bodies

template <class T, class Op, int Batches, int W, algo A, result_layout L>
struct warp_multi_reduce_body {
  const T* in;
  T* out;
  template <class Lane>
  MULTIREDUCE_HOST_DEVICE void operator()(Lane& lane, unsigned char* shared) const {
    const int t = lane.thread_rank();
    array<T, Batches> v;
MULTIREDUCE_UNROLL
    for (int b = 0; b < Batches; ++b) v[b] = in[t * Batches + b];
    constexpr int R = results_per_lane<Batches, W>;
    array<T, R> r;
    if constexpr (A == algo::shared_exchange) {
      auto* storage = reinterpret_cast<warp_exchange_storage<T, 64>*>(shared) + lane.warp_id();
      r = warp_multi_reduce<Batches, W, L>(lane, v, Op{}, *storage);
    } else {
      r = warp_multi_reduce<Batches, W, A, L>(lane, v, Op{});
    }
MULTIREDUCE_UNROLL
    for (int j = 0; j < R; ++j) out[t * R + j] = r[j];
  }
};

template <class T, class Op, int W, int Mode>  // Mode 0: warp_reduce, 1: all-reduce, 2: partial
struct warp_reduce_body {
  const T* in;
  T* out;
  template <class Lane>
  MULTIREDUCE_HOST_DEVICE void operator()(Lane& lane, unsigned char*) const {
    const int t = lane.thread_rank();
    if constexpr (Mode == 0) out[t] = warp_reduce<W>(lane, in[t], Op{});
    else if constexpr (Mode == 1) out[t] = warp_all_reduce<W>(lane, in[t], Op{});
    else out[t] = warp_reduce<W>(lane, in[t], Op{}, W / 2 + 1 < W ? W / 2 + 1 : W);
  }
};

template <class T, class Op, int W, int Budget, int Streams>
struct online_body {
  const T* in;  // [thread][stream][step]
  T* out;       // [thread][stream]
  template <class Lane>
  MULTIREDUCE_HOST_DEVICE void operator()(Lane& lane, unsigned char*) const {
    const int t = lane.thread_rank();
    online_multi_reducer<T, Op, W, Budget, Streams> reducer;
    detail::for_each_index<W>([&](auto step) {
      array<T, Streams> v;
MULTIREDUCE_UNROLL
      for (int s = 0; s < Streams; ++s) v[s] = in[(t * Streams + s) * W + decltype(step)::value];
      reducer.template push<decltype(step)::value>(lane, v);
    });
MULTIREDUCE_UNROLL
    for (int s = 0; s < Streams; ++s) out[t * Streams + s] = reducer.results()[s];
  }
};

template <class T, class Op, int BlockThreads, int WarpThreads, bool All>
struct block_reduce_body {
  const T* in;
  T* out;
  template <class Lane>
  MULTIREDUCE_HOST_DEVICE void operator()(Lane& lane, unsigned char* shared) const {
    auto& storage = *reinterpret_cast<block_reduce_storage<T, BlockThreads, WarpThreads>*>(shared);
    const int t = lane.thread_rank();
    if constexpr (All) out[t] = block_all_reduce<BlockThreads, WarpThreads>(lane, in[t], Op{}, storage);
    else out[t] = block_reduce<BlockThreads, WarpThreads>(lane, in[t], Op{}, storage);
  }
};

template <class T, class Op, int Batches, int BlockThreads, algo A, int WarpThreads>
struct block_multi_reduce_body {
  const T* in;
  T* out;
  template <class Lane>
  MULTIREDUCE_HOST_DEVICE void operator()(Lane& lane, unsigned char* shared) const {
    using storage_t = block_multi_reduce_storage<T, Batches, BlockThreads, A, WarpThreads>;
    static_assert(sizeof(storage_t) <= shared_bytes);
    auto& storage = *reinterpret_cast<storage_t*>(shared);
    const int t = lane.thread_rank();
    array<T, Batches> v;
MULTIREDUCE_UNROLL
    for (int b = 0; b < Batches; ++b) v[b] = in[t * Batches + b];
    constexpr int R = block_results_per_thread<Batches, BlockThreads>;
    const auto r = block_multi_reduce<Batches, BlockThreads, A, WarpThreads>(lane, v, Op{}, storage);
MULTIREDUCE_UNROLL
    for (int j = 0; j < R; ++j) out[t * R + j] = r[j];
  }
};

}  // namespace mr_test
