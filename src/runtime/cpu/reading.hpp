// runtime/cpu/reading.hpp -- how the CPU backend reads a source: elements as the type they are
// reduced in (float16 widened to float), in pieces (progress_report, pieces.hpp, tells the caller's progress as it goes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <multireduce/config.hpp>

#include "../pairwise.hpp"
#include "../pieces.hpp"
#include "../runtime.hpp"

namespace multireduce::runtime::cpu_backend_detail {

/// The C++ type elements of T are reduced in: float16 as float.
template <class T>
using element_t = std::conditional_t<std::is_same_v<T, float16_bits>, float, T>;

/// Elements of a float16 source are widened into a buffer of at most this many floats a piece.
constexpr std::int64_t widened_piece_max = std::int64_t{1} << 24;

/// Elements per piece when reading `in` as elements of T.
template <class T>
std::int64_t piece_cap(const array_source& in) {
  const std::int64_t cap = std::max<std::int64_t>(in.piece_elements(), pairwise::block);
  return std::is_same_v<T, float16_bits> ? std::min(cap, widened_piece_max) : cap;
}

/// Reads pieces of a source as elements of element_t<T>: as they are, or widened from float16.
template <class T>
class element_reader {
 public:
  explicit element_reader(array_source& in) : in_(in) {}
  const element_t<T>* read(std::int64_t first, std::int64_t n) {
    const void* p = in_.read(first, n);
    if constexpr (std::is_same_v<T, float16_bits>) {
      wide_.resize(static_cast<std::size_t>(n));
      const auto* h = static_cast<const float16_bits*>(p);
      MULTIREDUCE_OMP(parallel for if(n > (1 << 16)))
      for (std::int64_t i = 0; i < n; ++i) wide_[std::size_t(i)] = to_float(h[i]);
      return wide_.data();
    } else {
      return static_cast<const T*>(p);
    }
  }

 private:
  array_source& in_;
  std::vector<float> wide_;
};

}  // namespace multireduce::runtime::cpu_backend_detail
