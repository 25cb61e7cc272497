// runtime/dtype.hpp -- the element types an array may hold (NumPy's names), as a run-time value:
// the vocabulary of the runtime, the .npy reader/writer and the Python binding. Header-only.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace multireduce::runtime {

/// Element types (NumPy's names). Booleans, complex numbers and objects are not reduced here.
enum class dtype { int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64 };

namespace detail {
struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;
};
inline constexpr std::array<dtype_info, 11> dtypes{{
    {dtype::int8, "int8", 1},       {dtype::int16, "int16", 2},     {dtype::int32, "int32", 4},
    {dtype::int64, "int64", 8},     {dtype::uint8, "uint8", 1},     {dtype::uint16, "uint16", 2},
    {dtype::uint32, "uint32", 4},   {dtype::uint64, "uint64", 8},   {dtype::float16, "float16", 2},
    {dtype::float32, "float32", 4}, {dtype::float64, "float64", 8},
}};
constexpr const dtype_info& info(dtype type) {
  for (const auto& i : dtypes)
    if (i.type == type) return i;
  throw std::invalid_argument("multireduce: invalid dtype value");
}
}  // namespace detail

/// Every dtype, in the order of the enum.
inline constexpr std::array<dtype, 11> all_dtypes{dtype::int8,   dtype::int16,   dtype::int32,   dtype::int64,
                                                  dtype::uint8,  dtype::uint16,  dtype::uint32,  dtype::uint64,
                                                  dtype::float16, dtype::float32, dtype::float64};

/// The size of one element in bytes (1, 2, 4 or 8).
constexpr std::size_t size_of(dtype type) { return detail::info(type).size; }
/// NumPy's name: "int8" ... "float64".
constexpr std::string_view name_of(dtype type) { return detail::info(type).name; }
/// The same as name_of, for symmetry with the project's other enums.
constexpr std::string_view to_string(dtype type) { return name_of(type); }
/// The dtype named exactly `name` ("float32", ...), or nullopt.
constexpr std::optional<dtype> parse_dtype_name(std::string_view name) {
  for (const auto& i : detail::dtypes)
    if (i.name == name) return i.type;
  return std::nullopt;
}
constexpr bool is_floating(dtype type) {
  return type == dtype::float16 || type == dtype::float32 || type == dtype::float64;
}
constexpr bool is_signed_integer(dtype type) {
  return type == dtype::int8 || type == dtype::int16 || type == dtype::int32 || type == dtype::int64;
}

/// The bits of an IEEE binary16 value; the element type of float16 arrays.
struct float16_bits {
  std::uint16_t bits;
};

/// The float16 value widened to float (exact; NaN payloads are kept).
inline float to_float(float16_bits h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// x rounded to the nearest float16 (ties to even; overflow to infinity; NaN stays NaN).
inline float16_bits to_float16(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t magnitude = f & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, top payload bits kept
    return {static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  if (magnitude >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // >= 65520: infinity
  // Keep `keep` = the float16 bits before rounding, `dropped` the bits below them, `half` the
  // weight of half a float16 unit in those bits; round to nearest, ties to even.
  std::uint32_t keep, dropped, half;
  if (magnitude >= 0x38800000u) {  // normal float16 (>= 2^-14): rebias the exponent by 127 - 15
    keep = (magnitude - 0x38000000u) >> 13;
    dropped = magnitude & 0x1fffu;
    half = 0x1000u;
  } else {  // subnormal float16: units of 2^-24
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return {sign};  // below 2^-25: rounds to zero
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    keep = mantissa >> shift;
    dropped = mantissa & ((1u << shift) - 1);
    half = 1u << (shift - 1);
  }
  if (dropped > half || (dropped == half && (keep & 1u))) ++keep;  // a carry may reach the exponent: right
  return {static_cast<std::uint16_t>(sign | keep)};
}

/// The dtype stored as elements of C++ type T: integers by size and signedness, float, double,
/// float16_bits. Other types do not compile.
template <class T>
consteval dtype dtype_of() {
  using U = std::remove_cv_t<T>;
  static_assert(!std::is_same_v<U, bool>, "there is no bool dtype here: use std::uint8_t");
  static_assert(std::is_integral_v<U> || std::is_same_v<U, float> || std::is_same_v<U, double> ||
                    std::is_same_v<U, float16_bits>,
                "T must be an integer of 1, 2, 4 or 8 bytes, float, double or float16_bits");
  if constexpr (std::is_same_v<U, float>) {
    return dtype::float32;
  } else if constexpr (std::is_same_v<U, double>) {
    return dtype::float64;
  } else if constexpr (std::is_same_v<U, float16_bits>) {
    return dtype::float16;
  } else {
    static_assert(sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8,
                  "T must be an integer of 1, 2, 4 or 8 bytes");
    constexpr bool s = std::is_signed_v<U>;
    if constexpr (sizeof(U) == 1) return s ? dtype::int8 : dtype::uint8;
    else if constexpr (sizeof(U) == 2) return s ? dtype::int16 : dtype::uint16;
    else if constexpr (sizeof(U) == 4) return s ? dtype::int32 : dtype::uint32;
    else return s ? dtype::int64 : dtype::uint64;
  }
}

/// Calls f(T{}) with T the C++ element type of `type` (float16_bits for float16): the one place
/// that maps a run-time dtype to a type.
template <class F>
decltype(auto) visit(dtype type, F&& f) {
  switch (type) {
    case dtype::int8: return f(std::int8_t{});
    case dtype::int16: return f(std::int16_t{});
    case dtype::int32: return f(std::int32_t{});
    case dtype::int64: return f(std::int64_t{});
    case dtype::uint8: return f(std::uint8_t{});
    case dtype::uint16: return f(std::uint16_t{});
    case dtype::uint32: return f(std::uint32_t{});
    case dtype::uint64: return f(std::uint64_t{});
    case dtype::float16: return f(float16_bits{});
    case dtype::float32: return f(float{});
    case dtype::float64: return f(double{});
  }
  throw std::logic_error("multireduce::runtime::visit: unknown dtype");
}

}  // namespace multireduce::runtime
