// multireduce-bench -- the benchmark suites (src/bench), a program of their own so that the tool
// (src/cli) compiles none of their kernels; `multireduce bench ARGS...` runs this program with ARGS.
// Parsing and printing only: the suites register themselves (bench.hpp).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

#include "bench.hpp"
#include "cli/command_common.hpp"
#include "cli/output_file.hpp"

#ifndef MULTIREDUCE_VERSION
#error "the build defines MULTIREDUCE_VERSION (the project's version)"
#endif

namespace {

/// The program, but for the check that what it printed went out (main).
int run_bench(int argc, char** argv) {
  namespace cli = multireduce::cli;
  // Named as users call it: `multireduce bench` runs this program.
  CLI::App app{"run a benchmark suite, or every suite (verifies every result first)", "multireduce bench"};
  app.set_version_flag("--version", std::string("multireduce-bench ") + MULTIREDUCE_VERSION);

  multireduce::bench::options bench;
  std::string suite_help = "suite:";
  for (const auto& s : multireduce::bench::suites())
    suite_help += fmt::format("\n  {:<11} {}{}", s.name, s.description, s.needs_gpu ? " (GPU)" : " (this machine)");
  app.add_option("suite", bench.suite, suite_help + "\n(none: every suite, the GPU ones where there is a GPU)");
  app.add_flag("--list", bench.list, "list the suites and exit");
  app.add_option("--json", bench.json_path, "also write the results as JSON to this file (atomically)");
  app.add_option("--csv", bench.csv_path, "also write every table's rows as CSV to this file (atomically)");
  cli::add_integer(app, "--repetitions", [&bench](std::int64_t v) { bench.repetitions = int(v); },
                   "timed runs per kernel, the median reported (51)", 1, 100000, "a repetition count");
  cli::add_integer(app, "--warmup", [&bench](std::int64_t v) { bench.warmup = int(v); }, "untimed runs first (5)", 0,
                   100000, "a warm-up count");
  cli::add_integer(app, "--device", [&bench](std::int64_t v) { bench.device = int(v); }, "CUDA device ordinal (0); the opencl suite: an OpenCL device's (multireduce --version lists them)", 0,
                   std::numeric_limits<int>::max(), "a device number");
  app.add_flag("--quick", bench.quick, "a reduced configuration set");
  app.add_option("--kernel", bench.kernel,
                 "match, match-all: only this matcher kernel (wgmma: warpgroup MMA, sm_90a; mma_sync: the warp "
                 "MMA kernel, sm_80+; popcount: CUDA cores); default: each this GPU runs, side by side")
      ->check(CLI::IsMember({"wgmma", "mma_sync", "popcount"}));
  app.footer("Exit codes: 0 every result verified, 1 a result wrong or no GPU for a GPU suite, 2 usage errors.");

  if (const auto code = cli::parse_command_line(app, argc, argv, "multireduce bench")) return *code;
  const int status = multireduce::bench::run(bench);
  return status != 0 ? status : cli::guarded("bench", [] {  // its tables: printed unchecked, checked here
    cli::flush_stdout();
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Every path that prints (--help and --version too) ends with standard output checked.
  return multireduce::cli::close_stdout("multireduce bench", run_bench(argc, argv));
}
