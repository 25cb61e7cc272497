// runtime/ops.hpp -- the one operator table of the runtime: the reductions a user names ("sum",
// "argmax", ...), what they give for each dtype (NumPy's result types), and the multireduce
// operator and initial value each one runs with, the same on every backend.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include <multireduce/operators.hpp>

#include "dtype.hpp"

namespace multireduce::runtime {

enum class op_kind { sum, prod, min, max, bit_and, bit_or, bit_xor, argmin, argmax };

struct op_info {
  op_kind kind;
  std::string_view name;  ///< as users write it
  bool integers_only;     ///< the bitwise operators
  bool positional;        ///< argmin and argmax: the result is a position, not a value
};

inline constexpr std::array<op_info, 9> op_table{{
    {op_kind::sum, "sum", false, false},
    {op_kind::prod, "prod", false, false},
    {op_kind::min, "min", false, false},
    {op_kind::max, "max", false, false},
    {op_kind::bit_and, "and", true, false},
    {op_kind::bit_or, "or", true, false},
    {op_kind::bit_xor, "xor", true, false},
    {op_kind::argmin, "argmin", false, true},
    {op_kind::argmax, "argmax", false, true},
}};

constexpr const op_info& info(op_kind op) {
  for (const auto& i : op_table)
    if (i.kind == op) return i;
  throw std::invalid_argument("multireduce: invalid operator value");
}
constexpr std::string_view name_of(op_kind op) { return info(op).name; }
/// The operator named `name` ("sum", "and", ...), or nullopt.
constexpr std::optional<op_kind> parse_op(std::string_view name) {
  for (const auto& i : op_table)
    if (i.name == name) return i.kind;
  return std::nullopt;
}
/// "sum | prod | ... | argmax", for help texts and messages.
inline std::string op_names(std::string_view separator = " | ") {
  std::string names;
  for (const auto& i : op_table) names += std::string(names.empty() ? "" : separator) + std::string(i.name);
  return names;
}

/// NumPy's result dtype of `op` over `input`: sum and prod of signed integers give int64, of
/// unsigned ones uint64 (wrapping), floats keep their type; min, max and the bitwise operators keep
/// the input's; argmin and argmax give int64 positions.
constexpr dtype result_dtype(op_kind op, dtype input) {
  if (info(op).positional) return dtype::int64;
  if ((op == op_kind::sum || op == op_kind::prod) && !is_floating(input))
    return is_signed_integer(input) ? dtype::int64 : dtype::uint64;
  return input;
}

/// The accumulator of sum and prod over elements of T: floats keep their type; integers add and
/// multiply in uint64, whose wrapping is defined (signed overflow is not in C++) and gives the same
/// bits as NumPy's wrapping int64.
template <class T>
using sum_accumulator = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;

/// A set of operators, one bit each: which ones a visit_value_op instantiates.
constexpr unsigned op_bit(op_kind op) { return 1u << static_cast<unsigned>(op); }
inline constexpr unsigned value_ops = op_bit(op_kind::sum) | op_bit(op_kind::prod) | op_bit(op_kind::min) |
                                      op_bit(op_kind::max) | op_bit(op_kind::bit_and) | op_bit(op_kind::bit_or) |
                                      op_bit(op_kind::bit_xor);

/// Calls f(op_functor, init) with the multireduce operator of a value-producing `op` over elements
/// of T and its initial value: the only place that maps an op_kind to an operator. f must return
/// void. Only the operators in Ops are instantiated; any other op, bitwise operators on floating T
/// and positional operators throw std::invalid_argument.
template <class T, unsigned Ops = value_ops, class F>
void visit_value_op(op_kind op, F&& f) {
  using acc = sum_accumulator<T>;
  constexpr bool bitwise = std::is_integral_v<T>;
  switch (op) {
    case op_kind::sum:
      if constexpr ((Ops & op_bit(op_kind::sum)) != 0) return f(multireduce::sum{}, acc(0));
      break;
    case op_kind::prod:
      if constexpr ((Ops & op_bit(op_kind::prod)) != 0) return f(multireduce::product{}, acc(1));
      break;
    case op_kind::min:
      if constexpr ((Ops & op_bit(op_kind::min)) != 0) return f(multireduce::minimum{}, multireduce::minimum::identity<T>());
      break;
    case op_kind::max:
      if constexpr ((Ops & op_bit(op_kind::max)) != 0) return f(multireduce::maximum{}, multireduce::maximum::identity<T>());
      break;
    case op_kind::bit_and:
      if constexpr (bitwise && (Ops & op_bit(op_kind::bit_and)) != 0)
        return f(multireduce::bit_and{}, multireduce::bit_and::identity<T>());
      break;
    case op_kind::bit_or:
      if constexpr (bitwise && (Ops & op_bit(op_kind::bit_or)) != 0)
        return f(multireduce::bit_or{}, multireduce::bit_or::identity<T>());
      break;
    case op_kind::bit_xor:
      if constexpr (bitwise && (Ops & op_bit(op_kind::bit_xor)) != 0)
        return f(multireduce::bit_xor{}, multireduce::bit_xor::identity<T>());
      break;
    case op_kind::argmin:
    case op_kind::argmax:
      break;
  }
  throw std::invalid_argument("multireduce: " + std::string(name_of(op)) + " is not one of this call's operators");
}

}  // namespace multireduce::runtime
