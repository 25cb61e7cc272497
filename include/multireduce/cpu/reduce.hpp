// multireduce/cpu/reduce.hpp -- reduce, transform_reduce, argmin and argmax of one array on
// the CPU (all cores with OpenMP).
// Conventions: multireduce/cpu.hpp.
#pragma once

#include <cstdint>
#include <iterator>
#include <type_traits>

#include "../operators.hpp"
#include "detail/fold.hpp"
#include "detail/parallel.hpp"
#include "transform_iterator.hpp"

namespace multireduce::cpu {

/// init (+) in[0] (+) ... (+) in[n-1], with (+) = op and every element converted to Acc.
/// @param n    element count, >= 0; n == 0 returns init.
/// @param init the initial value; its type is the accumulator type.
/// @return the reduction. Commutative operators: chunk folds may associate differently from a
///         sequential loop (floating-point sums round differently, deterministically).
template <class It, class Op, class Acc>
Acc reduce(It in, std::int64_t n, Op op, Acc init) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
  detail::check_count(n, "reduce", "n");
  if (n == 0) return init;
  return op(init, detail::fold_chunks<Acc>(in, n, op));
}

/// init (+) transform(in[0], 0) (+) ... (+) transform(in[n-1], n-1): cuda::transform_reduce's
/// contract on the CPU. transform(x, index) -> Acc sees each element with its position.
template <class It, class Op, class Acc, class Transform>
Acc transform_reduce(It in, std::int64_t n, Op op, Acc init, Transform transform) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
  static_assert(std::is_invocable_r_v<Acc, const Transform&, std::iter_reference_t<It>, std::int64_t>,
                "multireduce::cpu::transform_reduce: transform must be callable as Acc transform(x, std::int64_t index)");
  detail::check_count(n, "transform_reduce", "n");
  if (n == 0) return init;
  return op(init, detail::fold_chunks<Acc>(transformed(in, transform), n, op));
}

/// The smallest element and its position, NumPy's rules: the lowest index among equal values, and
/// the first NaN if there is one. n == 0: {minimum::identity<V>(), -1}.
template <class It>
key_value<std::iter_value_t<It>, std::int64_t> argmin(It in, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmin, minimum>(in, n, "argmin");
}

/// The largest element and its position, NumPy's rules: the lowest index among equal values, and
/// the first NaN if there is one. n == 0: {maximum::identity<V>(), -1}.
template <class It>
key_value<std::iter_value_t<It>, std::int64_t> argmax(It in, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmax, maximum>(in, n, "argmax");
}

}  // namespace multireduce::cpu
