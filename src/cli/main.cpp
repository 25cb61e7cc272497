// multireduce -- command-line tool: trace the multi-reduction pattern, reduce, summarise and match
// .npy files, and run the benchmarks (`bench`: the program multireduce-bench, src/bench, beside
// this one). Parsing and printing only: the work is src/runtime's.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "command_common.hpp"
#include "extract_cmd.hpp"
#include "match_all_cmd.hpp"
#include "match_cmd.hpp"
#include "output_file.hpp"
#include "reduce_cmd.hpp"
#include "runtime/backend.hpp"
#include "runtime/trace.hpp"

#ifndef MULTIREDUCE_VERSION
#error "the build defines MULTIREDUCE_VERSION (the project's version)"
#endif
#if !defined(MULTIREDUCE_BENCH_PROGRAM) || !defined(MULTIREDUCE_BENCH_TARGET) || !defined(MULTIREDUCE_BUILD_DIR)
#error "the build defines MULTIREDUCE_BENCH_PROGRAM, MULTIREDUCE_BENCH_TARGET and MULTIREDUCE_BUILD_DIR (src/CMakeLists.txt)"
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

/// `multireduce bench ARGS...`: replaces this process with the benchmarks' program, found in this
/// program's directory, given ARGS (its exit code is then the command's); @return 1 when it cannot run.
int run_bench_program(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::error_code failed;
  const fs::path self = fs::read_symlink("/proc/self/exe", failed);  // the file itself, not a link to it
  const fs::path program = failed ? fs::path(MULTIREDUCE_BENCH_PROGRAM) : self.parent_path() / MULTIREDUCE_BENCH_PROGRAM;
  std::vector<char*> args{const_cast<char*>(program.c_str())};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(nullptr);
  if (failed) execvp(program.c_str(), args.data());  // no /proc: the one on PATH
  else execv(program.c_str(), args.data());
  const int why = errno;
  if (why == ENOENT) {
    fmt::print(stderr,
               "multireduce bench: the benchmarks are a separate program, {}, not built here (there is no {})\n"
               "  build it with: cmake --build {} --target {}\n",
               MULTIREDUCE_BENCH_PROGRAM, program.string(), MULTIREDUCE_BUILD_DIR, MULTIREDUCE_BENCH_TARGET);
  } else {
    fmt::print(stderr, "multireduce bench: cannot run {}: {}\n", program.string(), std::strerror(why));
  }
  return 1;
}

/// --version: the release, then each backend's devices (or why it has none).
std::string version_text() {
  std::string text = std::string("multireduce ") + MULTIREDUCE_VERSION;
  for (const multireduce::runtime::backend* b : multireduce::runtime::backends()) {
    const int count = b->device_count();
    if (count == 0) {
      text += fmt::format("\n  {}: no device ({})", b->name(), multireduce::runtime::unsupported_reason_for_knn(b->name(), 32));
      continue;
    }
    for (int d = 0; d < count; ++d) text += fmt::format("\n  {}: {}", b->name(), b->describe_device(d));
  }
  return text;
}

/// The tool, but for the check that what it printed went out (main).
int run_tool(int argc, char** argv) {
  namespace cli = multireduce::cli;
  // The benchmarks are a program of their own, given every argument after `bench` (its --help lists
  // the suites).
  if (argc > 1 && std::string_view(argv[1]) == "bench") return run_bench_program(argc - 2, argv + 2);
  CLI::App app{"multireduce: GPU reductions and the multi-reduction pattern"};
  app.set_version_flag("--version", version_text, "print the release and the devices each backend sees, and exit");
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

  // Listed here for --help and the subcommand names; run_bench_program runs it.
  auto* bench_cmd = app.add_subcommand("bench", "run a benchmark suite, or every suite (verifies every result first)");
  bench_cmd->prefix_command();

  cli::reduce_options reduce;
  auto* reduce_cmd = cli::add_reduce_command(app, reduce);
  cli::stats_options stats;
  auto* stats_cmd = cli::add_stats_command(app, stats);
  cli::match_options match;
  auto* match_cmd = cli::add_match_command(app, match);
  cli::match_all_options match_all;
  auto* match_all_cmd = cli::add_match_all_command(app, match_all);
  cli::extract_options extract;
  auto* extract_cmd = cli::add_extract_command(app, extract);

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
  if (const auto code = cli::parse_command_line(app, argc, argv, "multireduce")) return *code;
  if (*reduce_cmd) return cli::run_reduce(reduce);
  if (*stats_cmd) return cli::run_stats(stats);
  if (*match_cmd) return cli::run_match(match);
  if (*match_all_cmd) return cli::run_match_all(match_all);
  if (*extract_cmd) return cli::run_extract(extract);
  if (*trace_cmd) {
    multireduce::parse(algorithm, trace.algorithm);
    if (!multireduce::runtime::trace_supported(trace.batches, trace.width)) {
      fmt::print(stderr, "multireduce trace: --batches must be {} and --width {}\n",
                 multireduce::runtime::trace_batches_text, multireduce::runtime::trace_widths_text);
      return 2;
    }
    return cli::guarded("trace", [&] {
      cli::print_stdout(multireduce::runtime::trace_table(trace));
      cli::flush_stdout();
      return 0;
    });
  }
  if (*bench_cmd) {  // not the first word (run_tool took that case first)
    auto rest = bench_cmd->remaining();
    std::vector<char*> args;
    for (auto& a : rest) args.push_back(a.data());
    return run_bench_program(static_cast<int>(args.size()), args.data());
  }
  return 2;  // require_subcommand(1): not reached
}

}  // namespace

int main(int argc, char** argv) {
  // Every path that prints (--help and --version too) ends with standard output checked.
  return multireduce::cli::close_stdout("multireduce", run_tool(argc, argv));
}
