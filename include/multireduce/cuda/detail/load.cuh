// multireduce/cuda/detail/load.cuh -- how kernels read global memory: 16-byte vector loads through
// the read-only path, a thread's grid-stride walk over an array in vectors, L2-coherent loads of
// what other blocks of the same launch wrote, and the padded shared-memory index.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace multireduce::cuda::detail {

/// A shared-memory index with one pad word per 32 elements: a thread's run of 16 (or a stride-16
/// walk across a warp) then falls in distinct banks.
__host__ __device__ constexpr int padded(int i) { return i + (i >> 5); }

/// Elements of T in one 16-byte load (1 when T does not tile 16 bytes).
template <class T>
inline constexpr int vector_elements = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? int(16 / sizeof(T)) : 1;

template <class T>
struct alignas(16) vector16 {
  T v[vector_elements<T>];
};

/// Loads 16 bytes through the read-only path.
template <class T>
__device__ __forceinline__ vector16<T> load_vector(const vector16<T>* p) {
  const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
  vector16<T> v;
  std::memcpy(&v, &raw, sizeof v);
  return v;
}

/// Elements before the first 16-byte-aligned element of `p` (clamped to n). -1 if p is not even
/// aligned to sizeof(T) (then no vector loads are possible).
template <class T>
__host__ __device__ inline std::int64_t elements_to_alignment(const T* p, std::int64_t n) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % alignof(T) != 0 || 16 % sizeof(T) != 0) return -1;
  const std::int64_t head = static_cast<std::int64_t>(((16 - address % 16) % 16) / sizeof(T));
  return head < n ? head : n;
}

/// The vector loop of for_each_strided with the loads of the next group of InFlight vectors issued
/// before the current group is visited (two groups in registers, taken in turn), so that a thread
/// with much arithmetic per vector keeps memory busy while it computes. Visits the groups that
/// start at i, i + InFlight * threads, ... while whole; returns where the single vectors begin.
template <int InFlight, class T, class OnVector>
__device__ __forceinline__ std::int64_t visit_groups_prefetched(const vector16<T>* body, std::int64_t vectors,
                                                                std::int64_t i, std::int64_t threads,
                                                                std::int64_t head, OnVector& on_vector) {
  constexpr int V = vector_elements<T>;
  const std::int64_t step = InFlight * threads;
  auto whole = [&](std::int64_t at) { return at + (InFlight - 1) * threads < vectors; };
  auto load = [&](vector16<T> (&group)[InFlight], std::int64_t at) {
#pragma unroll
    for (int u = 0; u < InFlight; ++u) group[u] = load_vector(body + at + u * threads);
  };
  auto visit = [&](const vector16<T> (&group)[InFlight], std::int64_t at) {
#pragma unroll
    for (int u = 0; u < InFlight; ++u) on_vector(group[u].v, head + (at + u * threads) * V);
  };
  if (!whole(i)) return i;
  vector16<T> a[InFlight], b[InFlight];
  load(a, i);
  while (true) {  // a holds the group at i
    const bool more = whole(i + step);
    if (more) load(b, i + step);
    visit(a, i);
    i += step;
    if (!more) return i;
    const bool further = whole(i + step);  // b holds the group at i
    if (further) load(a, i + step);
    visit(b, i);
    i += step;
    if (!further) return i;
  }
}

/// Visits one thread's grid-stride share of in[0, n), in increasing index order: the unaligned
/// head through on_element(x, index), then 16-byte vectors (InFlight loads issued together; with
/// Prefetch, the next InFlight while the current ones are visited) through
/// on_vector(const T (&)[V], first_index), then the tail through on_element. Iterators that are not
/// pointers, and pointers not aligned to sizeof(T), go element by element.
template <int BlockThreads, int InFlight, bool Prefetch = false, class It, class OnVector, class OnElement>
__device__ __forceinline__ void for_each_strided(It in, std::int64_t n, OnVector&& on_vector, OnElement&& on_element) {
  const std::int64_t thread = std::int64_t(blockIdx.x) * BlockThreads + threadIdx.x;
  const std::int64_t threads = std::int64_t(gridDim.x) * BlockThreads;
  std::int64_t scalar_from = 0;  // elements before this went through the head or the vectors
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    constexpr int V = vector_elements<T>;
    const std::int64_t head = V > 1 ? elements_to_alignment(in, n) : -1;
    if (head >= 0) {
      if (thread < head) on_element(in[thread], thread);
      const std::int64_t vectors = (n - head) / V;
      const auto* body = reinterpret_cast<const vector16<T>*>(in + head);
      std::int64_t i = thread;
      if constexpr (Prefetch) {
        i = visit_groups_prefetched<InFlight>(body, vectors, i, threads, head, on_vector);
      } else {
        for (; i + (InFlight - 1) * threads < vectors; i += InFlight * threads) {
          vector16<T> v[InFlight];
#pragma unroll
          for (int u = 0; u < InFlight; ++u) v[u] = load_vector(body + i + u * threads);
#pragma unroll
          for (int u = 0; u < InFlight; ++u) on_vector(v[u].v, head + (i + u * threads) * V);
        }
      }
      for (; i < vectors; i += threads) on_vector(load_vector(body + i).v, head + i * V);
      scalar_from = head + vectors * V;
    }
  }
  for (std::int64_t i = scalar_from + thread; i < n; i += threads) on_element(in[i], i);
}

/// Copies a trivially copyable value word by word with L2-coherent loads (for data written by
/// other blocks of the same launch).
template <class T>
__device__ __forceinline__ T load_coherent(const T* p) {
  T out;
  if constexpr (sizeof(T) % 4 == 0) {
    auto* dst = reinterpret_cast<unsigned*>(&out);
    const auto* src = reinterpret_cast<const unsigned*>(p);
    for (std::size_t i = 0; i < sizeof(T) / 4; ++i) dst[i] = __ldcg(src + i);
  } else {
    auto* dst = reinterpret_cast<unsigned char*>(&out);
    const auto* src = reinterpret_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < sizeof(T); ++i) dst[i] = __ldcg(src + i);
  }
  return out;
}

/// Loads element i with an L2-coherent load (data written by other blocks of the same launch).
template <class T>
struct coherent_ptr {
  const T* p;
  __device__ T operator[](std::int64_t i) const { return load_coherent(p + i); }
  __device__ T operator*() const { return load_coherent(p); }
};

}  // namespace multireduce::cuda::detail
