// command_common.hpp -- what the tool's commands share: the exit-code-1 error type and the guard
// that reports failures, numeric options that refuse what does not fit (instead of clamping it) and
// say their range in words, the --backend/--device/--timing options, the --timing report of the
// whole command, and shapes as text.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/runtime.hpp"

namespace multireduce::cli {

/// A problem with the data or with options that do not fit the data: exit code 1.
struct command_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Prints a command's failure ("multireduce COMMAND: error: ..."); @return its exit code, 1.
int report(const char* command, const std::exception& e);
int report_out_of_memory(const char* command);

/// Runs a command's body, turning every exception into a message and exit code 1.
template <class F>
int guarded(const char* command, F&& body) {
  try {
    return body();
  } catch (const runtime::unsupported_error& e) {
    return report(command, std::runtime_error("--backend " + e.backend + ": " + e.what()));
  } catch (const std::bad_alloc&) {
    return report_out_of_memory(command);
  } catch (const std::exception& e) {
    return report(command, e);
  }
}

// ---- numbers ----------------------------------------------------------------------------------------

/// Adds an integer option that takes exactly the values in [least, most]: anything else -- not an
/// integer, past int64, out of the range -- is a usage error (exit 2) that says the range in words:
/// `what` names the value ("a window length"), so "--window: 0 is not a window length of at least 1".
/// `store` receives the value.
CLI::Option* add_integer(CLI::App& cmd, const std::string& name, std::function<void(std::int64_t)> store,
                         const std::string& help, std::int64_t least, std::int64_t most, const std::string& what);
/// The same for a finite floating-point number (NaN and infinities refused) in (least, most] when
/// `open_below`, else [least, most].
CLI::Option* add_number(CLI::App& cmd, const std::string& name, std::function<void(double)> store,
                        const std::string& help, double least, double most, bool open_below, const std::string& what);

/// Parses the command line. --help and --version print CLI11's text (through the checked standard
/// output) and give 0, a usage error its message and 2, a failed standard output 1 ("PROGRAM: error:
/// ..."); nullopt when the command is to run.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* program);

/// "an integer of at least 1", "an integer from 0 to 7": a range in words.
std::string range_words(std::int64_t least, std::int64_t most);

// ---- where a command runs, and what it reports -----------------------------------------------------

/// The options every data command takes: --backend (auto or a backend of the runtime's table), --device N
/// or --devices LIST (several GPUs: the jobs that split over them, runtime::device_set), --timing.
struct backend_options {
  std::string backend = "auto";
  int device = 0;
  /// --devices: several GPUs (ordinals, repeats allowed); empty: --device alone.
  std::vector<int> devices;
  bool timing = false;
  runtime::execution execution() const;
};
/// Adds them to `cmd` (`timing_help` says what --timing prints). --device must name a device of this
/// machine whatever the backend: one of runtime::numbering_devices_for(--backend) ("a device number
/// from 0 to 7"); --devices, several of runtime::splitting_devices_for(--backend).
void add_backend_options(CLI::App& cmd, backend_options& opts, const char* timing_help);

/// The wall clock of one command, from its start (reading included) to its last output.
struct command_clock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

/// Prints how a command ran (--timing): the backend and its device (for "auto", why it passed the
/// backends before it over; `named`: the user named the backend), the whole command's time and
/// bandwidth over what it read, and on a device its time and copy times.
void print_report(const char* command, const runtime::report& r, bool named, double command_seconds,
                  std::int64_t bytes_read, std::int64_t bytes_written);

/// "(3,)", "(2, 5)", "()".
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace multireduce::cli
