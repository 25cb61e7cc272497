// bench.hpp -- `multireduce bench SUITE`: the suites register themselves here (a suite's file
// defines it and registers it at static initialisation), the CLI lists and runs them.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace multireduce::bench {

struct options {
  std::string suite;        ///< a registered suite's name; "" = every suite this build has
  std::string csv_path;     ///< write the rows of every table as CSV here ("" = don't)
  bool list = false;        ///< print the suites and exit
  std::string json_path;    ///< write results as JSON here ("" = don't)
  int repetitions = 51;     ///< timed runs per kernel; the median is reported
  int warmup = 5;           ///< untimed runs first
  int device = 0;           ///< CUDA device ordinal
  bool quick = false;       ///< a reduced configuration set (smoke test)
  std::string kernel;       ///< the matcher suites: "" every kernel, else wgmma, mma_sync or popcount
};

/// A benchmark suite: prints its tables, fills `record` (a JSON object it owns the keys of), and
/// returns the process exit code (0 = every result verified).
struct suite {
  const char* name;
  const char* description;
  bool needs_gpu;
  int (*run)(const options& opts, nlohmann::json& record);
  /// Runs only when named (`multireduce bench NAME`), not in a run of every suite.
  bool only_when_named = false;
};

/// The suites that need a GPU, registered only in a build with CUDA (a build without says so).
inline constexpr std::array<std::string_view, 14> gpu_suite_names{
    "devices", "harris", "hip-tutorial", "kepler", "match", "match-all", "match-huge", "paper", "reduce", "segmented",
    "shared-vs-warp", "stats", "warp", "window"};

/// Adds a suite; @return true (so that `const bool registered = register_suite(...)` runs it at
/// static initialisation).
bool register_suite(const suite& s);
/// The registered suites, by name.
const std::vector<suite>& suites();
/// "warp, reduce, ..." for help texts and messages.
std::string suite_names();

/// Lets a build with CUDA tell `bench` how many GPUs there are (bench.cu registers it at static
/// initialisation); @return true.
bool set_gpu_probe(int (*probe)());

/// Runs the suite opts.suite (every suite when it is empty, the GPU ones only where there is a GPU),
/// writes its JSON record and CSV rows; @return a process exit code.
int run(const options& opts);

/// The rows of every table in a suite's record (or in an all-suites record), flattened to CSV:
/// one header of every column seen, a "suite" and a "table" column first.
std::string csv_of(const nlohmann::json& record);

}  // namespace multireduce::bench
