// multireduce/cpu/window_reduce.hpp -- sliding-window reductions with any associative operator
// on the CPU (all cores with OpenMP; van Herk / Gil-Werman, no inverse needed).
// Conventions: multireduce/cpu.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "../operators.hpp"
#include "detail/parallel.hpp"
#include "detail/window.hpp"

namespace multireduce::cpu {

/// Sliding windows: out[i] = init (+) in[i] (+) ... (+) in[i + W - 1] for i in [0, n - W], the same
/// as a segment [i, i + W). Needs no inverse operator (min/max windows are O(n)); operands stay in
/// left-to-right order, so non-commutative operators are right.
/// @param window W >= 1.
/// @return the number of outputs written: max(0, n - W + 1).
/// Floating-point results may round differently from segmented_reduce for W > 4 (vHGW associates
/// each window as suffix-of-block (+) prefix-of-next-block).
template <class It, class Out, class Op, class Acc>
std::int64_t window_reduce(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
  detail::check_count(n, "window_reduce", "n");
  detail::require(window >= 1, "window_reduce", "window must be >= 1, got " + std::to_string(window));
  if (n < window) return 0;
  const std::int64_t outputs = n - window + 1;
  static_assert(detail::direct_window_max == 4, "one window_direct instantiation per direct length");
  if (window == 1) detail::window_direct<1>(in, outputs, out, op, init);
  else if (window == 2) detail::window_direct<2>(in, outputs, out, op, init);
  else if (window == 3) detail::window_direct<3>(in, outputs, out, op, init);
  else if (window == 4) detail::window_direct<4>(in, outputs, out, op, init);
  else if (window <= detail::window_tile) {
    detail::window_blocks<Acc>(in, n, window, out, op, init);
  } else {
    detail::window_subtiles<Acc>(in, n, window, out, op, init);
  }
  return outputs;
}

}  // namespace multireduce::cpu
