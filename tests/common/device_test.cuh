// common/device_test.cuh -- what the GPU tests of the device-wide algorithms and the matcher share:
// device buffers made from host vectors or poisoned (0xA5 bytes, so an output a kernel forgets to
// write is caught), random inputs from logged seeds, and the skip without a GPU. The buffers are
// the library's one owning type (multireduce::cuda::device_buffer).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <multireduce/cuda/detail/device_buffer.cuh>

#include "cuda_runner.cuh"
#include "test_values.hpp"

namespace mr_test {

/// `count` elements of T on the device, every byte `poison`.
template <class T>
multireduce::cuda::device_buffer<T> on_device(std::size_t count, unsigned char poison = 0xA5) {
  multireduce::cuda::device_buffer<T> d(count);
  d.fill_bytes(poison);
  return d;
}
/// A device copy of `v`.
template <class T>
multireduce::cuda::device_buffer<T> on_device(const std::vector<T>& v) {
  return multireduce::cuda::to_device(v);
}
/// Every element of a device buffer, on the host.
template <class T>
std::vector<T> host_copy(const multireduce::cuda::device_buffer<T>& d) {
  return d.download(d.size());
}

/// The seed of one test's inputs, printed (MULTIREDUCE_TEST_SEED changes them all).
inline std::uint64_t seed_for(const char* what) {
  const std::uint64_t s = base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu (MULTIREDUCE_TEST_SEED=%llu)\n", what, (unsigned long long)s,
              (unsigned long long)base_seed());
  return s;
}

/// Multiples of 1/8 in [-125, 125]: exact in float, so sums are order-independent.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(d(g)) / 8.0f;
  return v;
}
inline std::vector<int> random_ints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(-1000000, 1000000);
  std::vector<int> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// 2x2 matrices mod p: associative, not commutative; detects any reordering.
struct mat2_mod {
  std::uint32_t a, b, c, d;
};
struct mat2_mod_product {
  __host__ __device__ mat2_mod operator()(const mat2_mod& x, const mat2_mod& y) const {
    constexpr std::uint64_t p = 65521;
    return mat2_mod{std::uint32_t((std::uint64_t(x.a) * y.a + std::uint64_t(x.b) * y.c) % p),
                    std::uint32_t((std::uint64_t(x.a) * y.b + std::uint64_t(x.b) * y.d) % p),
                    std::uint32_t((std::uint64_t(x.c) * y.a + std::uint64_t(x.d) * y.c) % p),
                    std::uint32_t((std::uint64_t(x.c) * y.b + std::uint64_t(x.d) * y.d) % p)};
  }
};
inline bool operator==(const mat2_mod& x, const mat2_mod& y) {
  return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d;
}
inline std::vector<mat2_mod> random_mats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<mat2_mod> v(n);
  for (auto& m : v)
    m = mat2_mod{std::uint32_t(g() % 65521), std::uint32_t(g() % 65521), std::uint32_t(g() % 65521),
                 std::uint32_t(g() % 65521)};
  return v;
}
inline const mat2_mod mat_identity{1, 0, 0, 1};

/// Sizes that cross every path: empty, one element, around a warp, a few blocks, past 2^20.
inline const std::int64_t sizes[] = {0, 1, 31, 32, 33, 1021, 65537, (1 << 20) + 7, 5'000'011};

/// out[s] = op(init, v[b[s]] ... v[e[s]-1]): the sequential reference of the segmented reductions.
template <class Acc, class T, class Op>
std::vector<Acc> reference_segments(const std::vector<T>& v, const std::vector<std::int64_t>& b,
                                    const std::vector<std::int64_t>& e, Op op, Acc init) {
  std::vector<Acc> out(b.size());
  for (std::size_t s = 0; s < b.size(); ++s) {
    Acc acc = init;
    for (std::int64_t i = b[s]; i < e[s]; ++i) acc = op(acc, static_cast<Acc>(v[std::size_t(i)]));
    out[s] = acc;
  }
  return out;
}

}  // namespace mr_test
