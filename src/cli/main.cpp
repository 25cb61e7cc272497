// multireduce -- command-line tool: trace the multi-reduction pattern, run the benchmarks, reduce
// and summarise .npy files.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <map>
#include <string>

#include <fstream>

#include <nlohmann/json.hpp>

#include "bench/bench.hpp"
#include "bench/bench_cpu.hpp"
#include "match_cmd.hpp"
#include "reduce_cmd.hpp"
#include "trace.hpp"

/// `multireduce bench cpu`: needs no GPU, so it runs here rather than in the CUDA harness.
static int run_cpu_bench(const multireduce::bench::options& opts) {
  nlohmann::json record;
  const int status = multireduce::bench::run_cpu_suite(opts.repetitions, opts.quick, record);
  if (!opts.json_path.empty()) {
    std::ofstream out(opts.json_path);
    out << record.dump(2) << '\n';
    if (!out) {
      fmt::print(stderr, "multireduce bench: could not write {}\n", opts.json_path);
      return status != 0 ? status : 1;
    }
  }
  return status;
}

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
  bench_cmd->add_option("suite", bench.suite, "suite: warp, reduce, segmented, stats, window, match, match-huge (GPU); cpu (this machine)")
      ->required()
      ->check(CLI::IsMember({"warp", "reduce", "segmented", "stats", "window", "match", "match-huge", "cpu"}));
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
    return multireduce::cli::run_trace(trace);
  }
  if (bench.suite == "cpu") return run_cpu_bench(bench);
  return multireduce::bench::run(bench);
}
