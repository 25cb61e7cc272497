// multireduce -- command-line tool: trace the multi-reduction pattern, run the benchmarks, reduce,
// summarise and match .npy files. Parsing and printing only: the work is src/runtime's and
// src/bench's.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <string>
#include <vector>

#include "bench/bench.hpp"
#include "match_cmd.hpp"
#include "reduce_cmd.hpp"
#include "runtime/trace.hpp"

namespace {

/// The names of the multi-reduce algorithms, from the library's own list.
std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto a : multireduce::all_multi_reduce_algorithms) names.emplace_back(multireduce::to_string(a));
  return names;
}

std::string joined(const std::vector<std::string>& names, const char* separator) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : separator) + n;
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"multireduce: GPU reductions and the multi-reduction pattern"};
  app.require_subcommand(1);

  multireduce::runtime::trace_options trace;
  std::string algorithm = "select-merge";
  auto* trace_cmd = app.add_subcommand("trace", "print the lane table of a multi-reduction (host emulator, no GPU needed)");
  trace_cmd->add_option("--algorithm,-a", algorithm, joined(algorithm_names(), " | "))
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  trace_cmd->add_option("--batches,-b", trace.batches, std::string("independent reductions: ") +
                                                           multireduce::runtime::trace_batches_text)
      ->capture_default_str();
  trace_cmd->add_option("--width,-w", trace.width, std::string("logical warp size: ") +
                                                       multireduce::runtime::trace_widths_text)
      ->capture_default_str();

  multireduce::bench::options bench;
  std::vector<std::string> suite_names;
  std::string suite_help = "suite:";
  for (const auto& s : multireduce::bench::suites()) {
    suite_names.emplace_back(s.name);
    suite_help += fmt::format("\n  {:<11} {}{}", s.name, s.description, s.needs_gpu ? " (GPU)" : " (this machine)");
  }
  auto* bench_cmd = app.add_subcommand("bench", "run a benchmark suite (verifies every result first)");
  bench_cmd->add_option("suite", bench.suite, suite_help)->required()->check(CLI::IsMember(suite_names));
  bench_cmd->add_option("--json", bench.json_path, "also write the results as JSON to this file");
  bench_cmd->add_option("--repetitions", bench.repetitions, "timed runs per kernel (median reported)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "untimed runs first")->check(CLI::Range(0, 100000))->capture_default_str();
  bench_cmd->add_option("--device", bench.device, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  bench_cmd->add_flag("--quick", bench.quick, "a reduced configuration set");

  multireduce::cli::reduce_options reduce;
  auto* reduce_cmd = multireduce::cli::add_reduce_command(app, reduce);
  multireduce::cli::stats_options stats;
  auto* stats_cmd = multireduce::cli::add_stats_command(app, stats);
  multireduce::cli::match_options match;
  auto* match_cmd = multireduce::cli::add_match_command(app, match);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; every usage error exits 2 (CLI11's own codes are 100 and up).
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*reduce_cmd) return multireduce::cli::run_reduce(reduce);
  if (*stats_cmd) return multireduce::cli::run_stats(stats);
  if (*match_cmd) return multireduce::cli::run_match(match);
  if (*trace_cmd) {
    multireduce::parse(algorithm, trace.algorithm);
    if (!multireduce::runtime::trace_supported(trace.batches, trace.width)) {
      fmt::print(stderr, "multireduce trace: --batches must be {} and --width {}\n",
                 multireduce::runtime::trace_batches_text, multireduce::runtime::trace_widths_text);
      return 2;
    }
    fmt::print("{}", multireduce::runtime::trace_table(trace));
    return 0;
  }
  return multireduce::bench::run(bench);
}
