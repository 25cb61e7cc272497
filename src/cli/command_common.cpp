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

void add_backend_options(CLI::App& cmd, std::string& backend, int& device, bool& timing, const char* timing_help) {
  cmd.add_option("--backend", backend,
                 "auto: the GPU when it supports the job, else the CPU; cuda: the GPU or an error saying why not; cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  cmd.add_option("--device", device, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd.add_flag("--timing", timing, timing_help);
}

std::string choose_backend(const std::string& backend, const std::string& reason) {
  if (backend == "cpu") return "--backend cpu";
  if (backend == "cuda" && !reason.empty()) throw command_error("--backend cuda: " + reason);
  return reason;
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
