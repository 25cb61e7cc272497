// reduce_cmd.cpp -- `multireduce reduce` and `multireduce stats` (see reduce_cmd.hpp): open the
// .npy input (its header first), plan the output, turn the options into one runtime job, and run
// it on the file piece by piece, the outputs written or printed as they come.
#include "reduce_cmd.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "command_common.hpp"
#include "format.hpp"
#include "npy/input_file.hpp"
#include "output_file.hpp"
#include "progress.hpp"
#include "runtime/runtime.hpp"

namespace multireduce::cli {

namespace {

namespace rt = multireduce::runtime;

static_assert(std::endian::native == std::endian::little, "the .npy outputs are written in this machine's order");

/// The offsets file as int64: a 1-d array of any integer dtype whose values fit in int64.
std::vector<std::int64_t> read_offsets(const std::string& path) {
  const npy::array a = npy::read(path);
  if (a.shape.size() != 1)
    throw command_error(fmt::format("{}: offsets must be a 1-d array, got shape {}", path, shape_string(a.shape)));
  if (rt::is_floating(a.type))
    throw command_error(fmt::format("{}: offsets must be integers, got {}", path, npy::name_of(a.type)));
  std::vector<std::int64_t> o(a.data.size() / rt::size_of(a.type));
  npy::visit(a.type, [&](auto element) {
    using T = decltype(element);
    if constexpr (std::is_integral_v<T>) {
      const auto v = a.values<T>();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if constexpr (std::is_same_v<T, std::uint64_t>)
          if (v[i] > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            throw command_error(fmt::format("{}: offsets[{}] = {} does not fit in int64", path, i, v[i]));
        o[i] = static_cast<std::int64_t>(v[i]);
      }
    }
  });
  if (o.empty()) throw command_error(fmt::format("{}: offsets need at least one element (S + 1 for S segments)", path));
  return o;  // their values are checked with the job (runtime::validate)
}

/// The outputs of a job as a .npy file, written as they come: the header first (the shape is known
/// before the first output), then each batch -- each once the input file it was made from is known
/// to be whole (`watch`: the file the job reads, or null).
class npy_sink final : public rt::output_sink {
 public:
  npy_sink(output_file& file, rt::dtype type, const std::vector<std::int64_t>& shape, bool fortran_order,
           const npy::input_file* watch)
      : file_(file), size_(rt::size_of(type)), watch_(watch) {
    const auto header = npy::encode_header(type, shape, fortran_order);
    file_.write(header.data(), header.size());
  }
  void write(const void* values, std::int64_t n) override {
    if (watch_ != nullptr) watch_->check_intact();
    file_.write(values, std::size_t(n) * size_);
  }

 private:
  output_file& file_;
  std::size_t size_;
  const npy::input_file* watch_;
};

/// The outputs printed one value per line, in C order of the result's shape: as they come, or --
/// a Fortran-order result of two or more dimensions -- all at the end, transposed. Each batch once
/// the input file it was made from is known to be whole (`watch`, as for npy_sink).
class print_sink final : public rt::output_sink {
 public:
  print_sink(rt::dtype type, std::vector<std::int64_t> shape, bool fortran_order, const npy::input_file* watch)
      : type_(type), shape_(std::move(shape)), hold_(fortran_order), watch_(watch) {}
  void write(const void* values, std::int64_t n) override {
    if (watch_ != nullptr) watch_->check_intact();
    const auto* p = static_cast<const std::byte*>(values);
    if (hold_) {
      held_.insert(held_.end(), p, p + std::size_t(n) * rt::size_of(type_));
      return;
    }
    print(p, n);
  }
  void finish() {
    if (!hold_) return;
    const auto c_order = npy::fortran_to_c_order(held_, shape_, rt::size_of(type_));
    print(c_order.data(), std::int64_t(c_order.size() / rt::size_of(type_)));
  }

 private:
  void print(const std::byte* p, std::int64_t n) {
    fmt::memory_buffer text;
    npy::visit(type_, [&](auto element) {
      using T = decltype(element);
      for (std::int64_t i = 0; i < n; ++i) {
        T x;
        std::memcpy(&x, p + i * sizeof(T), sizeof(T));
        fmt::format_to(std::back_inserter(text), "{}\n", format_value(x));
      }
    });
    print_stdout({text.data(), text.size()});
  }

  rt::dtype type_;
  std::vector<std::int64_t> shape_;
  bool hold_;
  std::vector<std::byte> held_;
  const npy::input_file* watch_;
};

/// An array read whole into memory, as a source.
struct held_source {
  npy::array array;
  rt::memory_source source;
  explicit held_source(npy::array a)
      : array(std::move(a)), source(rt::array_view{array.type, array.data.data(), array.count()}) {}
};

/// The input as the job reads it: the file itself, piece by piece -- or, when C order decides the
/// answer and the file is in Fortran order (argmin, argmax and statistics of the whole array: the
/// first extreme in C order), its C-order copy in memory.
rt::array_source& source_for(npy::input_file& in, bool c_order_needed, std::unique_ptr<held_source>& held) {
  if (!c_order_needed || !in.info().fortran_order || in.info().shape.size() < 2) return in;
  held = std::make_unique<held_source>(in.read_all());
  return held->source;
}

/// The input file a job reads directly (not a copy in memory), whose data may be cut short under
/// it: what the sinks and with_progress check before anything made from it leaves (null: none).
const npy::input_file* watched(const npy::input_file& in, const rt::array_source& source) {
  return &source == &in ? &in : nullptr;
}

/// Runs `job` with a progress bar for the input's bytes; then, or when it fails, checks that the
/// input file it read (`watch`, or null) was not cut short meanwhile -- that is the error to report
/// then, whatever the job made of it.
template <class Run>
rt::report with_progress(const char* label, rt::execution exec, const rt::array_source& in,
                         const npy::input_file* watch, Run&& run) {
  progress_bar bar(label, "B");
  const auto size = static_cast<std::int64_t>(rt::size_of(in.type()));
  exec.progress = [&bar, size](std::int64_t done, std::int64_t total) { bar.update(done * size, total * size); };
  rt::report r;
  try {
    r = run(exec);
  } catch (...) {
    if (watch != nullptr) watch->check_intact();  // (a CUDA copy may fail on the lost pages instead)
    throw;
  }
  bar.finish();
  if (watch != nullptr) watch->check_intact();
  return r;
}

// ---- reduce ------------------------------------------------------------------------------------

int reduce_body(const reduce_options& opts) {
  const command_clock clock;
  const rt::op_kind op = *rt::parse_op(opts.op);
  std::optional<output_file> output;
  if (!opts.output.empty()) output.emplace("-o", opts.output);
  auto in = npy::input_file::open(opts.input);
  const npy::header& h = in->info();
  if (output) check_outputs({&*output}, {{"the input", opts.input, in.get()}, {"--offsets", opts.offsets, nullptr}});

  if (rt::info(op).integers_only && rt::is_floating(h.type))
    throw command_error(
        fmt::format("--op {} needs an integer dtype; {} holds {}", opts.op, opts.input, npy::name_of(h.type)));
  const auto ndim = static_cast<std::int64_t>(h.shape.size());
  const bool fortran = h.fortran_order && ndim >= 2;
  const bool segmented = opts.segment_length || !opts.offsets.empty() || opts.window;
  if (ndim != 1 && segmented)
    throw command_error(fmt::format("--segment-length, --offsets and --window apply to 1-d input; {} has shape {}",
                                    opts.input, shape_string(h.shape)));

  rt::reduce_job job;
  job.input = rt::array_view{h.type, nullptr, h.count()};
  job.op = op;
  std::vector<std::int64_t> out_shape;  // the reduced axis disappears, as in NumPy
  bool out_fortran = false;
  std::vector<std::int64_t> offsets;
  const std::int64_t n = h.count();
  if (opts.axis) {
    // A Fortran-order file holds the C-order data of the reversed shape: reduce the mapped axis,
    // and the result is in Fortran order too (as NumPy keeps it).
    std::vector<std::int64_t> stored = h.shape;
    if (fortran) std::reverse(stored.begin(), stored.end());
    const std::int64_t k = *opts.axis;
    const std::int64_t a = k < 0 ? k + ndim : k;
    try {
      job = rt::axis_job(job.input, op, stored, fortran && a >= 0 && a < ndim ? ndim - 1 - a : k);
    } catch (const std::invalid_argument& e) {
      throw command_error(fmt::format("--axis {}: {}", k, e.what()));
    }
    out_shape = h.shape;
    out_shape.erase(out_shape.begin() + a);
    out_fortran = fortran && out_shape.size() >= 2;
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
    job.shape = rt::shape_kind::whole;  // any number of dimensions: a 0-d result
  }

  const rt::dtype result_type = rt::output_dtype(job);
  std::unique_ptr<held_source> held;
  rt::array_source& source =
      source_for(*in, job.shape == rt::shape_kind::whole && rt::info(op).positional, held);
  const npy::input_file* watch = watched(*in, source);
  rt::report how;
  if (output) {
    npy_sink sink(*output, result_type, out_shape, out_fortran, watch);
    how = with_progress("multireduce reduce", opts.backend.execution(), source, watch,
                        [&](const rt::execution& exec) { return rt::reduce(job, source, sink, exec); });
    output->commit();
  } else {
    print_sink sink(result_type, out_shape, out_fortran, watch);
    how = with_progress("multireduce reduce", opts.backend.execution(), source, watch,
                        [&](const rt::execution& exec) { return rt::reduce(job, source, sink, exec); });
    sink.finish();
    flush_stdout();
  }
  if (opts.backend.timing)
    print_report("reduce", how, opts.backend.backend != "auto", clock.seconds(), h.data_bytes(), how.bytes_written);
  return 0;
}

// ---- stats -------------------------------------------------------------------------------------

/// Prints the statistics as "key: value" lines or a JSON object, with the same digits; min and max
/// of float16 data as float16 values.
template <class T>
void print_statistics(const statistics<T>& s, bool json, bool float16) {
  const auto extreme = [&](T x) {
    if constexpr (std::is_same_v<T, float>)
      if (float16) return json ? json_value(rt::to_float16(x)) : format_value(rt::to_float16(x));
    return json ? json_value(x) : format_value(x);
  };
  const auto number = [&](auto x) { return json ? json_value(x) : format_value(x); };
  const std::pair<const char*, std::string> fields[] = {
      {"count", number(s.count)}, {"sum", number(s.sum)},        {"mean", number(s.mean)},
      {"var", number(s.var)},     {"std", number(s.std)},        {"min", extreme(s.min)},
      {"argmin", number(s.argmin)}, {"max", extreme(s.max)},     {"argmax", number(s.argmax)},
      {"l1", number(s.l1)},       {"l2", number(s.l2)},
  };
  std::string text = json ? "{\n" : "";
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    if (json) text += fmt::format("  \"{}\": {}{}\n", fields[i].first, fields[i].second, i + 1 < std::size(fields) ? "," : "");
    else text += fmt::format("{}: {}\n", fields[i].first, fields[i].second);
  }
  if (json) text += "}\n";
  print_stdout(text);
}

int stats_body(const stats_options& opts) {
  const command_clock clock;
  auto in = npy::input_file::open(opts.input);
  std::unique_ptr<held_source> held;
  rt::array_source& source = source_for(*in, true, held);
  rt::any_statistics s;
  const rt::report how = with_progress("multireduce stats", opts.backend.execution(), source, watched(*in, source),
                                       [&](const rt::execution& exec) { return rt::statistics(source, s, exec); });
  std::visit([&](const auto& result) { print_statistics(result, opts.json, in->info().type == rt::dtype::float16); }, s);
  flush_stdout();
  if (opts.backend.timing)
    print_report("stats", how, opts.backend.backend != "auto", clock.seconds(), in->info().data_bytes(), 0);
  return 0;
}

}  // namespace

CLI::App* add_reduce_command(CLI::App& app, reduce_options& opts) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  auto* cmd = app.add_subcommand("reduce", "reduce a .npy array: whole, along an axis, in segments or sliding windows");
  cmd->add_option("input", opts.input, "input .npy file (any shape; - reads standard input)")->required();
  std::vector<std::string> ops;
  for (const auto& op : rt::op_table) ops.emplace_back(op.name);
  cmd->add_option("--op", opts.op, rt::op_names())->required()->check(CLI::IsMember(ops));
  cmd->add_option("-o,--output", opts.output,
                  "write the result to this .npy file (atomically; - or a device/FIFO: directly) instead of printing it");
  auto* seg = add_integer(
      *cmd, "--segment-length", [&opts](std::int64_t v) { opts.segment_length = v; },
      "1-d: reduce consecutive segments of this length (must divide the length); result (n / L,)", 1, max,
      "a segment length");
  auto* off = cmd->add_option("--offsets", opts.offsets,
                              "1-d: a .npy of S + 1 non-decreasing integer offsets (any integer dtype); segment s is "
                              "[o[s], o[s+1]); result (S,)");
  auto* win = add_integer(
      *cmd, "--window", [&opts](std::int64_t v) { opts.window = v; },
      "1-d: every window of W consecutive elements; result (n - W + 1,), empty when W > n", 1, max, "a window length");
  auto* axis = add_integer(
      *cmd, "--axis", [&opts](std::int64_t v) { opts.axis = v; },
      "reduce this axis (negative: from the end, as NumPy); the result keeps the other axes in order. Without "
      "--axis (and the options above) the whole array is reduced",
      std::numeric_limits<std::int64_t>::min(), max, "an axis");
  seg->excludes(off)->excludes(win)->excludes(axis);
  off->excludes(win)->excludes(axis);
  win->excludes(axis);
  add_backend_options(*cmd, opts.backend, "print the backend and the whole command's time and bandwidth to stderr");
  cmd->footer(
      "Results follow NumPy: the reduced axis disappears (a whole-array reduction is 0-d, shape ()).\n"
      "sum/prod: int64 for signed integers, uint64 for unsigned (wrapping), floats keep their type\n"
      "(float16 is accumulated in float32 and written as float16); float sums are NumPy's pairwise sums\n"
      "on the CPU (bit for bit), except sliding windows: float32 windows on the CPU are summed in float64\n"
      "and rounded once (closer to the exact sums than NumPy's), float64 windows and windows on a GPU or\n"
      "OpenCL device are within (W - 1) eps sum|x| of them. min/max/and/or/xor keep the input type; argmin/argmax give int64\n"
      "positions within the axis, segment or window (the first extreme in C order; a NaN wins, the first\n"
      "NaN). and/or/xor need integers. Fortran-order files are read as they are (their result is in\n"
      "Fortran order too). Files are read piece by piece (memory-mapped, or streamed from a pipe).\n"
      "Empty input or segment: the operator's identity (0, 1, all bits set); min/max of nothing give\n"
      "+inf/-inf or the type's max/lowest (NumPy raises instead); argmin/argmax of nothing give -1.\n"
      "Without -o the result is printed, one value per line in C order; floats as the shortest text\n"
      "that reads back to the same value of their type (nan, inf, -inf).\n"
      "Exit codes: 0 done, 1 bad data or options that do not fit the data, 2 usage errors.");
  return cmd;
}

CLI::App* add_stats_command(CLI::App& app, stats_options& opts) {
  auto* cmd = app.add_subcommand(
      "stats", "count, sum, mean, var, std, min, argmin, max, argmax, l1, l2 of a .npy array, one pass");
  cmd->add_option("input", opts.input, "input .npy file (any shape, taken flat in C order; - reads standard input)")
      ->required();
  cmd->add_flag("--json", opts.json, "print a JSON object instead of key: value lines");
  add_backend_options(*cmd, opts.backend, "print the backend and the whole command's time and bandwidth to stderr");
  cmd->footer(
      "var and std are the population's (ddof = 0); l1 = sum |x|, l2 = sqrt(sum x^2). sum: int64 for\n"
      "signed integers, uint64 for unsigned (wrapping, as NumPy), float64 for floats; mean/var/std/l1/l2\n"
      "are float64. argmin/argmax: the first extreme in C order, a NaN wins (NumPy). Empty input: count\n"
      "0, sum 0, mean/var/std nan, min/max the identities (+inf/-inf or the type's max/lowest),\n"
      "argmin/argmax -1. float16 is widened to float32 (CPU only); its min and max print as float16.\n"
      "Text and JSON give the same digits: the shortest that read back to the same value (text: nan,\n"
      "inf; JSON: null, as JSON has neither).");
  return cmd;
}

int run_reduce(const reduce_options& opts) {
  return guarded("reduce", [&] { return reduce_body(opts); });
}

int run_stats(const stats_options& opts) {
  return guarded("stats", [&] { return stats_body(opts); });
}

}  // namespace multireduce::cli
