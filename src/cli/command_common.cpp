// command_common.cpp -- see command_common.hpp.
#include "command_common.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "output_file.hpp"
#include "runtime/backend.hpp"

namespace multireduce::cli {

int report(const char* command, const std::exception& e) {
  fmt::print(stderr, "multireduce {}: error: {}\n", command, e.what());
  return 1;
}

int report_out_of_memory(const char* command) {
  fmt::print(stderr, "multireduce {}: error: out of memory\n", command);
  return 1;
}

// ---- numbers ------------------------------------------------------------------------------------

std::string range_words(std::int64_t least, std::int64_t most) {
  constexpr auto max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
  if (least == min && most == max) return "an integer";
  if (most == max) return fmt::format("an integer of at least {}", least);
  if (least == min) return fmt::format("an integer of at most {}", most);
  return fmt::format("an integer from {} to {}", least, most);
}

namespace {
/// The text without one leading '+' (from_chars takes none).
std::string_view unsigned_text(std::string_view s) { return s.starts_with('+') ? s.substr(1) : s; }
}  // namespace

CLI::Option* add_integer(CLI::App& cmd, const std::string& name, std::function<void(std::int64_t)> store,
                         const std::string& help, std::int64_t least, std::int64_t most, const std::string& what) {
  auto* option = cmd.add_option_function<std::string>(
      name,
      [name, store, least, most, what](const std::string& text) {
        const std::string_view digits = unsigned_text(text);
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (digits.empty() || end != digits.data() + digits.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
          throw CLI::ValidationError(name, fmt::format("'{}' is not an integer ({} is {})", text, what,
                                                       range_words(least, most)));
        if (ec == std::errc::result_out_of_range || v < least || v > most)
          throw CLI::ValidationError(name, fmt::format("{} is out of range: {} is {}", text, what, range_words(least, most)));
        store(v);
      },
      help);
  option->type_name("INT");
  return option;
}

CLI::Option* add_number(CLI::App& cmd, const std::string& name, std::function<void(double)> store,
                        const std::string& help, double least, double most, bool open_below, const std::string& what) {
  const std::string range = fmt::format("a number {} {:g} and at most {:g}", open_below ? "above" : "of at least", least, most);
  auto* option = cmd.add_option_function<std::string>(
      name,
      [name, store, least, most, open_below, what, range](const std::string& text) {
        const std::string_view digits = unsigned_text(text);
        double v = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (digits.empty() || end != digits.data() + digits.size() || ec != std::errc() || !std::isfinite(v))
          throw CLI::ValidationError(name, fmt::format("'{}' is not a finite number ({} is {})", text, what, range));
        if (v > most || (open_below ? v <= least : v < least))
          throw CLI::ValidationError(name, fmt::format("{} is out of range: {} is {}", text, what, range));
        store(v);
      },
      help);
  option->type_name("NUMBER");
  return option;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; every usage error exits 2 (CLI11's own codes are 100 and up).
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    std::fputs(err.str().c_str(), stderr);
    try {
      print_stdout(out.str());
      flush_stdout();
    } catch (const std::exception& failed) {
      fmt::print(stderr, "{}: error: {}\n", program, failed.what());
      return 1;
    }
    return code == 0 ? 0 : 2;
  }
}

// ---- backend ------------------------------------------------------------------------------------

runtime::execution backend_options::execution() const {
  runtime::execution e;
  e.backend = backend;
  e.devices = devices.empty() ? runtime::device_set{{device}} : runtime::device_set{devices};
  return e;
}

namespace {

/// The devices of --devices, of runtime::splitting_devices_for(backend): "all", or device numbers
/// separated by commas (a number may repeat: two workers on one device). Throws
/// CLI::ValidationError naming what is wrong.
std::vector<int> parse_devices(const std::string& text, const std::string& backend) {
  const runtime::backend* owner = runtime::splitting_devices_for(backend);
  const std::string noun = owner ? std::string(owner->device_noun()) : "device that splits a job";
  const int count = owner ? owner->device_count() : 0;
  if (count == 0) throw CLI::ValidationError("--devices", fmt::format("{}: there is no {} here", text, noun));
  std::vector<int> devices;
  if (text == "all") {
    for (int d = 0; d < count; ++d) devices.push_back(d);
    return devices;
  }
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    int d = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || d < 0)
      throw CLI::ValidationError("--devices", fmt::format("'{}' is not a list of device numbers (\"0,1,3\") or \"all\"",
                                                          text));
    if (d >= count)
      throw CLI::ValidationError("--devices", fmt::format("{} is out of range: this machine has {} {}{}, "
                                                          "a device number is an integer from 0 to {}",
                                                          d, count, noun, count == 1 ? "" : "s", count - 1));
    devices.push_back(d);
    at = comma + 1;
  }
  return devices;
}

/// "a CUDA device", "an OpenCL device".
std::string with_article(std::string_view noun) {
  const bool vowel = !noun.empty() && std::string_view("AEIOUaeiou").find(noun.front()) != std::string_view::npos;
  return fmt::format("{} {}", vowel ? "an" : "a", noun);
}

/// --device's help, from the table: whose device a number names, by --backend.
std::string device_help() {
  const runtime::backend* otherwise = runtime::numbering_devices_for("auto");
  std::string help = "the device (default 0): ";
  help += otherwise ? with_article(otherwise->device_noun()) : "a device";
  for (const runtime::backend* b : runtime::backends())
    if (b != otherwise && !b->device_noun().empty())
      help += fmt::format(", or with --backend {} {}", b->name(), with_article(b->device_noun()));
  return help + " (multireduce --version lists them); it must exist, whatever the backend";
}

}  // namespace

std::string backend_help() {
  std::string help = "auto: the first backend that runs the job, in this order";
  for (const runtime::backend* b : runtime::backends())
    help += fmt::format("; {}: {}", b->name(), b->summary());
  return help + " (a named backend runs the job or says why not)";
}

void add_backend_options(CLI::App& cmd, backend_options& opts, const char* timing_help) {
  const std::vector<std::string> names = runtime::backend_names();
  cmd.add_option("--backend", opts.backend, backend_help())
      ->check(CLI::IsMember(names))
      ->type_name(fmt::format("{}", fmt::join(names, "|")))
      ->capture_default_str();
  add_integer(
      cmd, "--device",
      [&opts](std::int64_t d) {
        // --backend is parsed first: a device of the backend that numbers devices for it.
        const runtime::backend* owner = runtime::numbering_devices_for(opts.backend);
        const std::string noun = owner ? std::string(owner->device_noun()) : "numbered device";
        const int devices = owner ? owner->device_count() : 0;
        if (devices == 0)
          throw CLI::ValidationError("--device", fmt::format("{}: there is no {} here", d, noun));
        if (d >= devices)
          throw CLI::ValidationError("--device", fmt::format("{} is out of range: this machine has {} {}{}, "
                                                             "a device number is an integer from 0 to {}",
                                                             d, devices, noun, devices == 1 ? "" : "s", devices - 1));
        opts.device = static_cast<int>(d);
      },
      device_help(), 0, std::numeric_limits<int>::max(), "a device number");
  cmd.add_option_function<std::string>(
         "--devices", [&opts](const std::string& text) { opts.devices = parse_devices(text, opts.backend); },
         "several GPUs: \"all\" or device numbers such as 0,1,2,3 (a number may repeat); the whole-array jobs, the "
         "matcher's search and match-all split their work over them, with the same results as on one")
      ->type_name("LIST|all")
      ->excludes("--device");
  cmd.add_flag("--timing", opts.timing, timing_help);
}

void print_report(const char* command, const runtime::report& r, bool named, double command_seconds,
                  std::int64_t bytes_read, std::int64_t bytes_written) {
  fmt::print(stderr, "multireduce {}: backend {} ({}){}\n", command, r.backend, runtime::describe_device(r),
             named || r.passed_over.empty() ? "" : "; " + r.passed_over);
  const double gbps = command_seconds > 0 ? double(bytes_read) / command_seconds * 1e-9 : 0.0;
  fmt::print(stderr, "multireduce {}: {:.3f} s in all (reading, computing, writing): {} bytes read ({:.3f} GB/s), {} written\n",
             command, command_seconds, bytes_read, gbps, bytes_written);
  if (r.device >= 0)
    fmt::print(stderr, "multireduce {}: of which {:.6f} s on the device and {:.6f} s copying to and from it\n", command,
               r.seconds, r.transfer_seconds);
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

}  // namespace multireduce::cli
