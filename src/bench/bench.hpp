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
  std::string suite;        ///< a registered suite's name
  std::string json_path;    ///< write results as JSON here ("" = don't)
  int repetitions = 51;     ///< timed runs per kernel; the median is reported
  int warmup = 5;           ///< untimed runs first
  int device = 0;           ///< CUDA device ordinal
  bool quick = false;       ///< a reduced configuration set (smoke test)
};

/// A benchmark suite: prints its tables, fills `record` (a JSON object it owns the keys of), and
/// returns the process exit code (0 = every result verified).
struct suite {
  const char* name;
  const char* description;
  bool needs_gpu;
  int (*run)(const options& opts, nlohmann::json& record);
};

/// The suites that need a GPU, registered only in a build with CUDA (a build without says so).
inline constexpr std::array<std::string_view, 7> gpu_suite_names{"match", "match-huge", "reduce", "segmented",
                                                                  "stats", "warp", "window"};

/// Adds a suite; @return true (so that `const bool registered = register_suite(...)` runs it at
/// static initialisation).
bool register_suite(const suite& s);
/// The registered suites, by name.
const std::vector<suite>& suites();
/// "warp, reduce, ..." for help texts and messages.
std::string suite_names();

/// Runs the suite opts.suite, writes its JSON record; @return a process exit code.
int run(const options& opts);

}  // namespace multireduce::bench
