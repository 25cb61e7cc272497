// multireduce -- command-line tool: trace the multi-reduction pattern, run the benchmarks, reduce,
// summarise and match .npy files. Parsing and printing only: the work is src/runtime's and
// src/bench's.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench.hpp"
#include "command_common.hpp"
#include "match_cmd.hpp"
#include "reduce_cmd.hpp"
#include "runtime/trace.hpp"

#ifndef MULTIREDUCE_VERSION
#error "the build defines MULTIREDUCE_VERSION (the project's version)"
#endif

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
  namespace cli = multireduce::cli;
  CLI::App app{"multireduce: GPU reductions and the multi-reduction pattern"};
  app.set_version_flag("--version", std::string("multireduce ") + MULTIREDUCE_VERSION);
  app.require_subcommand(1);

  multireduce::runtime::trace_options trace;
  std::string algorithm = "select-merge";
  auto* trace_cmd = app.add_subcommand("trace", "print the lane table of a multi-reduction (host emulator, no GPU needed)");
  trace_cmd->add_option("--algorithm,-a", algorithm, joined(algorithm_names(), " | "))
      ->check(CLI::IsMember(algorithm_names()))
      ->capture_default_str();
  cli::add_integer(*trace_cmd, "--batches,-b", [&trace](std::int64_t v) { trace.batches = int(v); },
                   std::string("independent reductions (4): ") + multireduce::runtime::trace_batches_text, 1, 64,
                   "a batch count");
  cli::add_integer(*trace_cmd, "--width,-w", [&trace](std::int64_t v) { trace.width = int(v); },
                   std::string("logical warp size (8): ") + multireduce::runtime::trace_widths_text, 2, 32,
                   "a warp width");

  multireduce::bench::options bench;
  std::string suite_help = "suite:";
  for (const auto& s : multireduce::bench::suites())
    suite_help += fmt::format("\n  {:<11} {}{}", s.name, s.description, s.needs_gpu ? " (GPU)" : " (this machine)");
  auto* bench_cmd = app.add_subcommand("bench", "run a benchmark suite, or every suite (verifies every result first)");
  bench_cmd->add_option("suite", bench.suite, suite_help + "\n(none: every suite, the GPU ones where there is a GPU)");
  bench_cmd->add_flag("--list", bench.list, "list the suites and exit");
  bench_cmd->add_option("--json", bench.json_path, "also write the results as JSON to this file (atomically)");
  bench_cmd->add_option("--csv", bench.csv_path, "also write every table's rows as CSV to this file (atomically)");
  cli::add_integer(*bench_cmd, "--repetitions", [&bench](std::int64_t v) { bench.repetitions = int(v); },
                   "timed runs per kernel, the median reported (51)", 1, 100000, "a repetition count");
  cli::add_integer(*bench_cmd, "--warmup", [&bench](std::int64_t v) { bench.warmup = int(v); },
                   "untimed runs first (5)", 0, 100000, "a warm-up count");
  cli::add_integer(*bench_cmd, "--device", [&bench](std::int64_t v) { bench.device = int(v); },
                   "CUDA device ordinal (0)", 0, std::numeric_limits<int>::max(), "a device number");
  bench_cmd->add_flag("--quick", bench.quick, "a reduced configuration set");
  bench_cmd->footer("Exit codes: 0 every result verified, 1 a result wrong or no GPU for a GPU suite, 2 usage errors.");

  cli::reduce_options reduce;
  auto* reduce_cmd = cli::add_reduce_command(app, reduce);
  cli::stats_options stats;
  auto* stats_cmd = cli::add_stats_command(app, stats);
  cli::match_options match;
  auto* match_cmd = cli::add_match_command(app, match);

  // A first word that is neither an option nor a subcommand: say so plainly.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      fmt::print(stderr, "multireduce: unknown subcommand '{}' (the subcommands: {}; --help says more)\n", argv[1],
                 names);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; every usage error exits 2 (CLI11's own codes are 100 and up).
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (*reduce_cmd) return cli::run_reduce(reduce);
  if (*stats_cmd) return cli::run_stats(stats);
  if (*match_cmd) return cli::run_match(match);
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
  (void)bench_cmd;
  return multireduce::bench::run(bench);
}
