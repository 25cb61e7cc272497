// multireduce -- command-line tool: trace the multi-reduction pattern, run the benchmarks.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <map>
#include <string>

#include "bench/bench.hpp"
#include "trace.hpp"

int main(int argc, char** argv) {
  CLI::App app{"multireduce: GPU reductions and the multi-reduction pattern"};
  app.require_subcommand(1);

  multireduce::cli::trace_options trace;
  std::string algorithm = "select-merge";
  auto* trace_cmd = app.add_subcommand("trace", "print the lane table of a multi-reduction (host emulator, no GPU needed)");
  trace_cmd->add_option("--algorithm,-a", algorithm, "butterfly | select-merge | swap | order-preserving | shared-exchange")
      ->check(CLI::IsMember({"butterfly", "select-merge", "swap", "order-preserving", "shared-exchange"}))
      ->capture_default_str();
  trace_cmd->add_option("--batches,-b", trace.batches, "independent reductions: 1..16, 32 or 64")->capture_default_str();
  trace_cmd->add_option("--width,-w", trace.width, "logical warp size: 2, 4, 8, 16 or 32")->capture_default_str();

  multireduce::bench::options bench;
  auto* bench_cmd = app.add_subcommand("bench", "run a benchmark suite on the GPU (verifies every result first)");
  bench_cmd->add_option("suite", bench.suite, "suite: warp")->required()->check(CLI::IsMember({"warp"}));
  bench_cmd->add_option("--json", bench.json_path, "also write the results as JSON to this file");
  bench_cmd->add_option("--repetitions", bench.repetitions, "timed runs per kernel (median reported)")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  bench_cmd->add_option("--warmup", bench.warmup, "untimed runs first")->check(CLI::Range(0, 100000))->capture_default_str();
  bench_cmd->add_option("--device", bench.device, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  bench_cmd->add_flag("--quick", bench.quick, "a reduced configuration set");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);  // usage message; non-zero for errors
  }
  if (*trace_cmd) {
    multireduce::parse(algorithm, trace.algorithm);
    return multireduce::cli::run_trace(trace);
  }
  return multireduce::bench::run(bench);
}
