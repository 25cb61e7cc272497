// command_common.cpp -- see command_common.hpp.
#include "command_common.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace multireduce::cli {

int report(const char* command, const std::exception& e) {
  fmt::print(stderr, "multireduce {}: error: {}\n", command, e.what());
  return 1;
}

int report_out_of_memory(const char* command) {
  fmt::print(stderr, "multireduce {}: error: out of memory\n", command);
  return 1;
}

runtime::execution backend_options::execution() const {
  runtime::execution e;
  e.requested = runtime::parse_backend(backend).value_or(runtime::backend::automatic);
  e.device = device;
  return e;
}

void add_backend_options(CLI::App& cmd, backend_options& opts, const char* timing_help) {
  cmd.add_option("--backend", opts.backend,
                 "auto: the GPU when it supports the job, else the CPU; cuda: the GPU or an error saying why not; cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  cmd.add_option("--device", opts.device, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_flag("--timing", opts.timing, timing_help);
}

void print_report(const char* command, const runtime::report& r, bool cpu_asked) {
  const double gbps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds * 1e-9 : 0.0;
  if (r.used == runtime::backend::cuda) {
    fmt::print(stderr, "multireduce {}: backend cuda (device {}: {})\n", command, r.device, r.device_name);
    fmt::print(stderr,
               "multireduce {}: {:.6g} s on the device, {:.3f} GB/s ({} bytes read and written); transfers {:.6g} s\n",
               command, r.seconds, gbps, r.bytes, r.transfer_seconds);
    return;
  }
  fmt::print(stderr, "multireduce {}: backend cpu ({} threads){}\n", command, r.cpu_threads,
             cpu_asked || r.not_cuda.empty() ? "" : "; not the GPU: " + r.not_cuda);
  fmt::print(stderr, "multireduce {}: {:.6g} s, {:.3f} GB/s ({} bytes read and written)\n", command, r.seconds, gbps,
             r.bytes);
}

CLI::Validator integer_at_least(long long least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        long long v = 0;
        std::size_t used = 0;
        try {
          v = std::stoll(text, &used);
        } catch (const std::exception&) {
          return "";
        }
        return used == text.size() && v < least ? fmt::format("must be >= {}, got {}", least, text) : "";
      },
      fmt::format("INT>={}", least));
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

void check_not_an_input(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const auto& in : inputs)
    if (!in.empty() && std::filesystem::equivalent(output, in, ec))
      throw command_error(fmt::format("-o {}: that is an input file; inputs are never overwritten", output));
}

}  // namespace multireduce::cli
