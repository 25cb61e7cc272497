// multireduce_cli_check -- compares what `multireduce reduce|stats` produced with NumPy's answer
// (tests/cli/expected, made by make_fixtures.py). Exit 0 when they agree, 1 with the differences.
//
//   multireduce_cli_check npy        ACTUAL.npy  EXPECTED.npy  RTOL ATOL   same dtype, shape, values
//   multireduce_cli_check print      STDOUT.txt  EXPECTED.npy  RTOL ATOL   one value per line
//   multireduce_cli_check stats-json STDOUT.txt  EXPECTED.json RTOL ATOL   the JSON object
//   multireduce_cli_check stats-text STDOUT.txt  EXPECTED.json RTOL ATOL   "key: value" lines
//   multireduce_cli_check same-digits TEXT.txt   JSON.txt      0 0         stats text and JSON agree
//
// Integers must match exactly; floats within ATOL + RTOL * |expected| (RTOL = ATOL = 0: exactly),
// NaN matches NaN. In the expected JSON, non-finite values are the strings "nan", "inf", "-inf":
// the text output must print exactly that, the JSON output must have null there.
#include <fmt/core.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "npy/npy.hpp"

namespace npy = multireduce::npy;

namespace {

double rel_tol = 0, abs_tol = 0;
int failures = 0;

template <class... A>
void fail(fmt::format_string<A...> format, A&&... args) {
  if (++failures <= 20) fmt::print(stderr, "{}\n", fmt::format(format, std::forward<A>(args)...));
}

bool close(double actual, double expected) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected;
  if (rel_tol == 0 && abs_tol == 0) return actual == expected;
  return std::fabs(actual - expected) <= abs_tol + rel_tol * std::fabs(expected);
}

std::string read_text(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail("cannot read {}", path);
    return {};
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class T>
double as_double(T x) {
  if constexpr (std::is_same_v<T, npy::float16_bits>)
    return npy::to_float(x);
  else
    return static_cast<double>(x);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (auto d : shape) s += std::to_string(d) + ",";
  return s + ")";
}

void check_npy(const char* actual_path, const char* expected_path) {
  const npy::array a = npy::read(actual_path), e = npy::read(expected_path);
  if (a.type != e.type)
    return fail("dtype {}, expected {}", std::string(npy::name_of(a.type)).c_str(),
                std::string(npy::name_of(e.type)).c_str());
  if (a.shape != e.shape)
    return fail("shape {}, expected {}", shape_text(a.shape).c_str(), shape_text(e.shape).c_str());
  npy::visit(a.type, [&](auto element) {
    using T = decltype(element);
    const auto av = a.values<T>(), ev = e.values<T>();
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        if (av[i] != ev[i])
          fail("[{}]: {}, expected {}", i, std::to_string(av[i]).c_str(), std::to_string(ev[i]).c_str());
      } else if (!close(as_double(av[i]), as_double(ev[i]))) {
        fail("[{}]: {}, expected {}", i, as_double(av[i]), as_double(ev[i]));
      }
    }
  });
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void check_print(const char* stdout_path, const char* expected_path) {
  const std::string text = read_text(stdout_path);
  if (!text.empty() && text.back() != '\n') fail("the output does not end with a newline");
  const auto lines = lines_of(text);
  const npy::array e = npy::read(expected_path);
  if (static_cast<std::int64_t>(lines.size()) != e.count())
    return fail("{} lines, expected {} values", lines.size(), static_cast<long long>(e.count()));
  npy::visit(e.type, [&](auto element) {
    using T = decltype(element);
    const auto ev = e.values<T>();
    for (std::size_t i = 0; i < ev.size(); ++i) {
      const char* s = lines[i].c_str();
      char* end = nullptr;
      errno = 0;
      bool ok;
      if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        ok = std::strtoll(s, &end, 10) == static_cast<long long>(ev[i]);
      } else if constexpr (std::is_integral_v<T>) {
        ok = std::strtoull(s, &end, 10) == static_cast<unsigned long long>(ev[i]);
      } else {
        // Printed floats must read back to the very value of their type.
        const double parsed = std::strtod(s, &end);
        const double want = as_double(ev[i]);
        if constexpr (std::is_same_v<T, npy::float16_bits>)
          ok = (rel_tol == 0 && abs_tol == 0) ? npy::to_float16(static_cast<float>(parsed)).bits == ev[i].bits
                                              : close(parsed, want);
        else
          ok = std::is_same_v<T, double> ? close(parsed, want) : close(static_cast<float>(parsed), want);
      }
      if (!ok || end == s || *end != '\0' || errno != 0) fail("line {}: '{}', expected {}", i + 1, s, as_double(ev[i]));
    }
  });
}

/// One statistic: `actual` (JSON value, or text when `text`) against the expected JSON value.
void check_stat(const std::string& key, const nlohmann::json& expected, const nlohmann::json* actual_json,
                const std::string* actual_text) {
  if (expected.is_string()) {  // "nan", "inf", "-inf"
    if (actual_json && !actual_json->is_null())
      fail("{}: {}, expected null ({})", key.c_str(), actual_json->dump().c_str(), expected.get<std::string>().c_str());
    if (actual_text && *actual_text != expected.get<std::string>())
      fail("{}: '{}', expected '{}'", key.c_str(), actual_text->c_str(), expected.get<std::string>().c_str());
    return;
  }
  const std::string got = actual_json ? actual_json->dump() : *actual_text;
  if (expected.is_number_integer()) {  // counts, indices, integer sums and extremes: exact
    if ((actual_json && !actual_json->is_number_integer()) || got != expected.dump())
      fail("{}: {}, expected {}", key.c_str(), got.c_str(), expected.dump().c_str());
    return;
  }
  char* end = nullptr;
  const double value = actual_json ? (actual_json->is_number() ? actual_json->get<double>() : std::nan(""))
                                   : std::strtod(actual_text->c_str(), &end);
  if ((actual_text && (end == actual_text->c_str() || *end != '\0')) || (actual_json && !actual_json->is_number()) ||
      !(close(value, expected.get<double>()) ||
        // min/max of float32 input are printed as float32: the shortest text of that float.
        static_cast<double>(static_cast<float>(value)) == expected.get<double>()))
    fail("{}: {}, expected {}", key.c_str(), got.c_str(), expected.get<double>());
}

void check_stats(const char* stdout_path, const char* expected_path, bool json) {
  const auto expected = nlohmann::json::parse(read_text(expected_path));
  const std::string text = read_text(stdout_path);
  std::set<std::string> want;
  for (const auto& [key, value] : expected.items()) want.insert(key);
  if (json) {
    nlohmann::json actual;
    try {
      actual = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      return fail("not JSON: {}", e.what());
    }
    if (!actual.is_object()) return fail("not a JSON object");
    std::set<std::string> got;
    for (const auto& [key, value] : actual.items()) got.insert(key);
    if (got != want) return fail("keys differ from count, sum, mean, var, std, min, argmin, max, argmax, l1, l2");
    for (const auto& [key, value] : expected.items()) check_stat(key, value, &actual[key], nullptr);
    return;
  }
  std::map<std::string, std::string> actual;
  for (const auto& line : lines_of(text)) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) return fail("not a 'key: value' line: '{}'", line.c_str());
    if (!actual.emplace(line.substr(0, colon), line.substr(colon + 2)).second)
      return fail("key twice: '{}'", line.c_str());
  }
  std::set<std::string> got;
  for (const auto& [key, value] : actual) got.insert(key);
  if (got != want) return fail("keys differ from count, sum, mean, var, std, min, argmin, max, argmax, l1, l2");
  for (const auto& [key, value] : expected.items()) check_stat(key, value, nullptr, &actual[key]);
}

/// stdout of `stats` and of `stats --json` for one input: every value with the same digits (null in
/// JSON where the text says nan, inf or -inf).
void check_same_digits(const char* text_path, const char* json_path) {
  std::map<std::string, std::string> text;
  for (const auto& line : lines_of(read_text(text_path))) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) return fail("not a 'key: value' line: '{}'", line.c_str());
    text[line.substr(0, colon)] = line.substr(colon + 2);
  }
  std::map<std::string, std::string> json;
  for (const auto& line : lines_of(read_text(json_path))) {  // "  \"key\": value," lines
    const auto open = line.find('"'), close_quote = line.find("\": ");
    if (open == std::string::npos || close_quote == std::string::npos) continue;
    std::string value = line.substr(close_quote + 3);
    if (!value.empty() && value.back() == ',') value.pop_back();
    json[line.substr(open + 1, close_quote - open - 1)] = value;
  }
  if (text.size() != 11 || json.size() != 11) return fail("{} text values and {} JSON values, expected 11", text.size(), json.size());
  for (const auto& [key, value] : text) {
    const bool non_finite = value == "nan" || value == "inf" || value == "-inf";
    const std::string want = non_finite ? "null" : value;
    if (json[key] != want) fail("{}: text '{}', JSON '{}'", key.c_str(), value.c_str(), json[key].c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s npy|print|stats-json|stats-text|same-digits ACTUAL EXPECTED RTOL ATOL\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  rel_tol = std::strtod(argv[4], nullptr);
  abs_tol = std::strtod(argv[5], nullptr);
  try {
    if (mode == "npy")
      check_npy(argv[2], argv[3]);
    else if (mode == "print")
      check_print(argv[2], argv[3]);
    else if (mode == "stats-json")
      check_stats(argv[2], argv[3], true);
    else if (mode == "stats-text")
      check_stats(argv[2], argv[3], false);
    else if (mode == "same-digits")
      check_same_digits(argv[2], argv[3]);
    else
      fail("unknown mode {}", mode.c_str());
  } catch (const std::exception& e) {
    fail("{}", e.what());
  }
  if (failures > 20) fmt::print(stderr, "... {} differences in all\n", failures);
  return failures == 0 ? 0 : 1;
}
