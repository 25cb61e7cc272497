// format.hpp -- values as the tool prints them, in text and in JSON alike: integers in decimal,
// floats as the shortest text that reads back to the same value of their own type (float16 too:
// 0.6, not its float32 value 0.60009766), "nan", "inf", "-inf". Header-only.
#pragma once

#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "runtime/dtype.hpp"

namespace multireduce::cli {

/// The shortest decimal text that rounds back to the float16 h.
inline std::string format_float16(runtime::float16_bits h) {
  const float f = runtime::to_float(h);
  if (!std::isfinite(f)) return fmt::format("{}", f);
  for (int digits = 1; digits < 6; ++digits) {  // 5 significant digits always suffice
    const std::string text = fmt::format("{:.{}g}", f, digits);
    const float back = std::strtof(text.c_str(), nullptr);
    if (runtime::to_float16(back).bits == h.bits) return fmt::format("{}", back);
  }
  return fmt::format("{}", f);
}

/// One value as printed.
template <class T>
std::string format_value(T x) {
  if constexpr (std::is_same_v<T, runtime::float16_bits>)
    return format_float16(x);
  else if constexpr (std::is_floating_point_v<T>)
    return fmt::format("{}", x);
  else if constexpr (std::is_signed_v<T>)
    return fmt::format("{}", static_cast<std::int64_t>(x));
  else
    return fmt::format("{}", static_cast<std::uint64_t>(x));
}

/// The same value in JSON: the same digits; null for NaN and infinities (JSON has neither).
template <class T>
std::string json_value(T x) {
  if constexpr (std::is_same_v<T, runtime::float16_bits>) {
    if (!std::isfinite(runtime::to_float(x))) return "null";
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(x)) return "null";
  }
  return format_value(x);
}

}  // namespace multireduce::cli
