// multireduce/cpu/detail/parallel.hpp -- the CPU backend's OpenMP seam, its fixed unit of parallel
// work and its argument checks.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(_OPENMP)
#include <omp.h>
#endif

// `#pragma omp ...` only where OpenMP is on: no unknown-pragma warnings elsewhere (nvcc's host
// pass, -Wall builds without -fopenmp); the code is then plain serial C++.
#if defined(_OPENMP)
#define MULTIREDUCE_DETAIL_PRAGMA(...) _Pragma(#__VA_ARGS__)
#define MULTIREDUCE_OMP(...) MULTIREDUCE_DETAIL_PRAGMA(omp __VA_ARGS__)
#else
#define MULTIREDUCE_OMP(...)
#endif

namespace multireduce::cpu {

/// The fixed unit of parallel work, in elements: a reduction is split into chunks of this many
/// elements whatever the number of threads, and chunk results are combined left to right, so
/// every result is the same with 1 thread or 64. (256 KiB of floats: a chunk stays in L2 while
/// argmin/argmax re-scan it.)
inline constexpr std::int64_t chunk_elements = std::int64_t{1} << 16;

/// Threads an OpenMP parallel region would use now (1 without OpenMP).
inline int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

inline void require(bool ok, const char* function, const std::string& message) {
  if (!ok) throw std::invalid_argument(std::string("multireduce::cpu::") + function + ": " + message);
}

inline void check_count(std::int64_t n, const char* function, const char* name) {
  require(n >= 0, function, std::string(name) + " must be >= 0, got " + std::to_string(n));
}

}  // namespace detail
}  // namespace multireduce::cpu

/// Checks, first in a CPU algorithm's body (so that its message is the first error), that Op
/// reduces two Acc into an Acc; a trait, not a call, so nothing fails to compile before it.
#define MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc)                                                              \
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,                               \
                "multireduce::cpu: op must be callable as Acc op(const Acc&, const Acc&) const, where Acc is " \
                "the type of init")

namespace multireduce::cpu {
namespace detail {

}  // namespace detail
}  // namespace multireduce::cpu
