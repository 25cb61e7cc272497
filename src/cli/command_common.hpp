// command_common.hpp -- what the .npy commands (reduce, stats, match) share: the exit-code-1 error
// type, error reporting, the --backend/--device/--timing options, the timing report, integer
// checks, shapes as text, and the guard that outputs never overwrite inputs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <new>
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

/// The options every data command takes: --backend auto|cuda|cpu, --device N, --timing.
struct backend_options {
  std::string backend = "auto";
  int device = 0;
  bool timing = false;
  runtime::execution execution() const;
};
/// Adds them to `cmd` (`timing_help` says what --timing prints).
void add_backend_options(CLI::App& cmd, backend_options& opts, const char* timing_help);

/// Prints how a call ran (--timing): the backend, why not the GPU, the time and the bandwidth.
void print_report(const char* command, const runtime::report& r, bool cpu_asked);

/// An integer option's check: >= `least` (a non-integer is left to CLI11's own conversion error).
CLI::Validator integer_at_least(long long least);

/// "(3,)", "(2, 5)", "()".
std::string shape_string(const std::vector<std::int64_t>& shape);

/// Throws command_error when `output` names the same file as one of `inputs`.
void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace multireduce::cli
