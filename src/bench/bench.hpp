// bench.hpp -- the benchmark harness entry point shared by the CLI (`multireduce bench SUITE`).
#pragma once

#include <string>

namespace multireduce::bench {

struct options {
  std::string suite;        ///< "warp" (later issues add more suites)
  std::string json_path;    ///< write results as JSON here ("" = don't)
  int repetitions = 51;     ///< timed runs per kernel; the median is reported
  int warmup = 5;           ///< untimed runs first
  int device = 0;           ///< CUDA device ordinal
  bool quick = false;       ///< a reduced configuration set (smoke test)
};

/// Runs one suite; prints a table to stdout. @return a process exit code (0 = all verified).
int run(const options& opts);

/// Suites this build offers.
std::string suites();

}  // namespace multireduce::bench
