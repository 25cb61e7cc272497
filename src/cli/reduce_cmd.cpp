// reduce_cmd.cpp -- `multireduce reduce` and `multireduce stats` (see reduce_cmd.hpp): read the
// .npy input, turn the options into one runtime job, run it, write or print the result.
#include "reduce_cmd.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "command_common.hpp"
#include "npy/npy.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::cli {

namespace {

namespace rt = multireduce::runtime;

/// One value as printed: integers in decimal, floats as the shortest text that reads back to the
/// same value (fmt's "{}": "0.1", "1e+30", "nan", "inf", "-inf"); float16 as its float32 value.
template <class T>
std::string format_value(T x) {
  if constexpr (std::is_same_v<T, npy::float16_bits>)
    return fmt::format("{}", npy::to_float(x));
  else if constexpr (std::is_floating_point_v<T>)
    return fmt::format("{}", x);
  else if constexpr (std::is_signed_v<T>)
    return fmt::format("{}", static_cast<std::int64_t>(x));
  else
    return fmt::format("{}", static_cast<std::uint64_t>(x));
}

/// The rows x cols C-order array `in` of `size`-byte elements, transposed (cols x rows).
std::vector<std::byte> transpose(const std::vector<std::byte>& in, std::int64_t rows, std::int64_t cols,
                                 std::size_t size) {
  std::vector<std::byte> out(in.size());
  auto run = [&](auto element) {
    using E = decltype(element);
    const auto* src = reinterpret_cast<const E*>(in.data());
    auto* dst = reinterpret_cast<E*>(out.data());
    constexpr std::int64_t tile = 32;  // tiles keep both sides' cache lines in use
    for (std::int64_t r0 = 0; r0 < rows; r0 += tile)
      for (std::int64_t c0 = 0; c0 < cols; c0 += tile)
        for (std::int64_t r = r0; r < std::min(rows, r0 + tile); ++r)
          for (std::int64_t c = c0; c < std::min(cols, c0 + tile); ++c) dst[c * rows + r] = src[r * cols + c];
  };
  switch (size) {
    case 1:
      run(std::uint8_t{});
      break;
    case 2:
      run(std::uint16_t{});
      break;
    case 4:
      run(std::uint32_t{});
      break;
    default:
      run(std::uint64_t{});
      break;
  }
  return out;
}

/// The offsets file as int64 (a 1-d int32 or int64 array of at least one element).
std::vector<std::int64_t> read_offsets(const std::string& path) {
  const npy::array a = npy::read(path);
  if (a.shape.size() != 1)
    throw command_error(fmt::format("{}: offsets must be a 1-d array, got shape {}", path, shape_string(a.shape)));
  std::vector<std::int64_t> o;
  if (a.type == npy::dtype::int64) {
    const auto v = a.values<std::int64_t>();
    o.assign(v.begin(), v.end());
  } else if (a.type == npy::dtype::int32) {
    const auto v = a.values<std::int32_t>();
    o.assign(v.begin(), v.end());
  } else {
    throw command_error(fmt::format("{}: offsets must be int32 or int64, got {}", path, npy::name_of(a.type)));
  }
  if (o.empty()) throw command_error(fmt::format("{}: offsets need at least one element (S + 1 for S segments)", path));
  return o;  // their values are checked with the job (runtime::validate)
}

// ---- reduce ------------------------------------------------------------------------------------

int reduce_body(const reduce_options& opts) {
  const rt::op_kind op = *rt::parse_op(opts.op);
  const npy::array in = npy::read(opts.input);
  const std::int64_t n = in.count();
  const std::size_t ndim = in.shape.size();

  if (rt::info(op).integers_only && rt::is_floating(in.type))
    throw command_error(
        fmt::format("--op {} needs an integer dtype; {} holds {}", opts.op, opts.input, npy::name_of(in.type)));

  const bool segmented = opts.segment_length || !opts.offsets.empty() || opts.window;
  if (ndim > 2)
    throw command_error(fmt::format("{} is {}-d, shape {}: reduce takes 1-d and 2-d arrays (reshape first)", opts.input,
                                    ndim, shape_string(in.shape)));
  if (ndim != 1 && segmented)
    throw command_error(fmt::format("--segment-length, --offsets and --window apply to 1-d input; {} has shape {}",
                                    opts.input, shape_string(in.shape)));
  if (ndim == 0 && opts.axis) throw command_error(fmt::format("--axis: {} is 0-d, it has no axis", opts.input));
  if (ndim == 1 && opts.axis && *opts.axis != 0 && *opts.axis != -1)
    throw command_error(fmt::format("--axis {}: {} is 1-d, the axis must be 0 or -1", *opts.axis, opts.input));
  if (ndim == 2 && opts.axis && (*opts.axis < -2 || *opts.axis > 1))
    throw command_error(fmt::format("--axis {}: {} is 2-d, the axis must be 0, 1, -1 or -2", *opts.axis, opts.input));

  rt::reduce_job job;
  job.input = rt::array_view{in.type, in.data.data(), n};
  job.op = op;
  std::vector<std::int64_t> out_shape;  // the reduced axis disappears, as in NumPy
  std::vector<std::int64_t> offsets;
  std::vector<std::byte> transposed;
  if (ndim == 2) {
    const std::int64_t rows = in.shape[0], cols = in.shape[1];
    const bool along_rows = !opts.axis || *opts.axis == 1 || *opts.axis == -1;  // reduce each row
    if (!along_rows) {
      transposed = transpose(in.data, rows, cols, npy::size_of(in.type));
      job.input.data = transposed.data();
    }
    job.shape = rt::shape_kind::fixed_segments;
    job.segments = along_rows ? rows : cols;
    job.length = along_rows ? cols : rows;
    out_shape = {job.segments};
  } else if (opts.segment_length) {
    const std::int64_t length = *opts.segment_length;
    if (n % length != 0)
      throw command_error(fmt::format("--segment-length {} does not divide the input's length {}", length, n));
    job.shape = rt::shape_kind::fixed_segments;
    job.length = length;
    job.segments = n / length;
    out_shape = {job.segments};
  } else if (!opts.offsets.empty()) {
    offsets = read_offsets(opts.offsets);
    job.shape = rt::shape_kind::offsets;
    job.offsets = offsets.data();
    job.segments = static_cast<std::int64_t>(offsets.size()) - 1;
    out_shape = {job.segments};
  } else if (opts.window) {
    job.shape = rt::shape_kind::window;
    job.length = *opts.window;
    out_shape = {n >= job.length ? n - job.length + 1 : 0};
  } else {
    job.shape = rt::shape_kind::whole;  // 1-d or 0-d: a 0-d result
  }
  if (!opts.output.empty()) check_not_an_input(opts.output, {opts.input, opts.offsets});
  rt::validate(job);

  const rt::dtype result_type = rt::output_dtype(job);
  const std::int64_t count = rt::output_count(job);
  std::vector<std::byte> result(static_cast<std::size_t>(count) * rt::size_of(result_type));
  const rt::report how = rt::reduce(job, rt::output_view{result_type, result.data(), count}, opts.backend.execution());
  if (opts.backend.timing) print_report("reduce", how, opts.backend.backend == "cpu");

  if (!opts.output.empty()) {
    npy::write(opts.output, result_type, out_shape, result.data());
    return 0;
  }
  fmt::memory_buffer text;
  npy::visit(result_type, [&](auto element) {
    using T = decltype(element);
    for (std::int64_t i = 0; i < count; ++i) {
      T x;
      std::memcpy(&x, result.data() + i * sizeof(T), sizeof(T));
      fmt::format_to(std::back_inserter(text), "{}\n", format_value(x));
    }
  });
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

// ---- stats -------------------------------------------------------------------------------------

/// JSON has no NaN or infinity: those become null.
template <class T>
nlohmann::ordered_json json_value(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(x)) return nullptr;
    return static_cast<double>(x);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<std::int64_t>(x);
  } else {
    return static_cast<std::uint64_t>(x);
  }
}

template <class T>
void print_statistics(const statistics<T>& s, bool json) {
  if (json) {
    nlohmann::ordered_json j;
    j["count"] = s.count;
    j["sum"] = json_value(s.sum);
    j["mean"] = json_value(s.mean);
    j["var"] = json_value(s.var);
    j["std"] = json_value(s.std);
    j["min"] = json_value(s.min);
    j["argmin"] = s.argmin;
    j["max"] = json_value(s.max);
    j["argmax"] = s.argmax;
    j["l1"] = json_value(s.l1);
    j["l2"] = json_value(s.l2);
    // nlohmann writes each double as the shortest text that reads back to the same value.
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print(
      "count: {}\nsum: {}\nmean: {}\nvar: {}\nstd: {}\nmin: {}\nargmin: {}\nmax: {}\nargmax: {}\nl1: {}\nl2: {}\n",
      s.count, format_value(s.sum), format_value(s.mean), format_value(s.var), format_value(s.std), format_value(s.min),
      s.argmin, format_value(s.max), s.argmax, format_value(s.l1), format_value(s.l2));
}

int stats_body(const stats_options& opts) {
  const npy::array in = npy::read(opts.input);
  rt::any_statistics s;
  const rt::report how = rt::statistics(rt::array_view{in.type, in.data.data(), in.count()}, s, opts.backend.execution());
  if (opts.backend.timing) print_report("stats", how, opts.backend.backend == "cpu");
  std::visit([&](const auto& result) { print_statistics(result, opts.json); }, s);
  return 0;
}

}  // namespace

CLI::App* add_reduce_command(CLI::App& app, reduce_options& opts) {
  auto* cmd = app.add_subcommand("reduce", "reduce a .npy array: whole, along an axis, in segments or sliding windows");
  cmd->add_option("input", opts.input, "input .npy file (1-d or 2-d; 0-d counts as one element)")->required();
  std::vector<std::string> ops;
  for (const auto& op : rt::op_table) ops.emplace_back(op.name);
  cmd->add_option("--op", opts.op, rt::op_names())->required()->check(CLI::IsMember(ops));
  cmd->add_option("-o,--output", opts.output, "write the result to this .npy file (atomically) instead of printing it");
  auto* seg = cmd->add_option_function<std::int64_t>(
                     "--segment-length", [&opts](const std::int64_t& v) { opts.segment_length = v; },
                     "1-d: reduce consecutive segments of this length (must divide the length); result (n / L,)")
                  ->check(integer_at_least(1));
  auto* off = cmd->add_option("--offsets", opts.offsets,
                              "1-d: a .npy of S + 1 non-decreasing int32/int64 offsets; segment s is "
                              "[o[s], o[s+1]); result (S,)");
  auto* win = cmd->add_option_function<std::int64_t>(
                     "--window", [&opts](const std::int64_t& v) { opts.window = v; },
                     "1-d: every window of W consecutive elements; result (n - W + 1,), empty when W > n")
                  ->check(integer_at_least(1));
  seg->excludes(off)->excludes(win);
  off->excludes(win);
  cmd->add_option_function<int>(
      "--axis", [&opts](const int& v) { opts.axis = v; },
      "2-d: the axis reduced: -1 or 1 (each row, the default), 0 or -2 (each column); 1-d: 0 or -1");
  add_backend_options(*cmd, opts.backend, "print the backend, the time and the bandwidth to stderr");
  cmd->footer(
      "Results follow NumPy: the reduced axis disappears (a whole 1-d reduction is 0-d, shape ()).\n"
      "sum/prod: int64 for signed integers, uint64 for unsigned (wrapping), floats keep their type\n"
      "(float16 is accumulated in float32 and written as float16). min/max/and/or/xor keep the input\n"
      "type; argmin/argmax give int64 positions within the segment or window (the first extreme; a\n"
      "NaN wins, the first NaN). and/or/xor need integers.\n"
      "Empty input or segment: the operator's identity (0, 1, all bits set); min/max of nothing give\n"
      "+inf/-inf or the type's max/lowest (NumPy raises instead); argmin/argmax of nothing give -1.\n"
      "Without -o the result is printed, one value per line (a 0-d result: one line); floats as the\n"
      "shortest text that reads back to the same value (nan, inf, -inf); float16 as its float32 value.\n"
      "Exit codes: 0 done, 1 bad data or options that do not fit the data, 2 usage errors.");
  return cmd;
}

CLI::App* add_stats_command(CLI::App& app, stats_options& opts) {
  auto* cmd = app.add_subcommand(
      "stats", "count, sum, mean, var, std, min, argmin, max, argmax, l1, l2 of a .npy array, one pass");
  cmd->add_option("input", opts.input, "input .npy file (any shape, taken flat in C order)")->required();
  cmd->add_flag("--json", opts.json, "print a JSON object instead of key: value lines");
  add_backend_options(*cmd, opts.backend, "print the backend, the time and the bandwidth to stderr");
  cmd->footer(
      "var and std are the population's (ddof = 0); l1 = sum |x|, l2 = sqrt(sum x^2). sum: int64 for\n"
      "signed integers, uint64 for unsigned (wrapping, as NumPy), float64 for floats; mean/var/std/l1/l2\n"
      "are float64. argmin/argmax: the first extreme, a NaN wins (NumPy). Empty input: count 0, sum 0,\n"
      "mean/var/std nan, min/max the identities (+inf/-inf or the type's max/lowest), argmin/argmax -1.\n"
      "float16 is widened to float32 (CPU only). Text: floats as the shortest text that reads back to\n"
      "the same value (nan, inf). JSON: NaN and infinities become null (JSON has neither).");
  return cmd;
}

int run_reduce(const reduce_options& opts) {
  return guarded("reduce", [&] { return reduce_body(opts); });
}

int run_stats(const stats_options& opts) {
  return guarded("stats", [&] { return stats_body(opts); });
}

}  // namespace multireduce::cli
