// reduce_cmd.hpp -- `multireduce reduce` and `multireduce stats`: reductions and statistics of
// .npy files through the runtime (src/runtime: the GPU or the CPU), with NumPy's result types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "command_common.hpp"

namespace CLI {
class App;
}

namespace multireduce::cli {

struct reduce_options {
  std::string input;
  std::string output;                          ///< "" prints the result instead
  std::string op;                              ///< sum, prod, min, max, and, or, xor, argmin, argmax
  std::optional<std::int64_t> segment_length;  ///< 1-d only; at most one of segment_length, offsets, window
  std::string offsets;                         ///< a .npy file of S + 1 integer offsets
  std::optional<std::int64_t> window;          ///< sliding windows of this length
  std::optional<std::int64_t> axis;            ///< the axis reduced (negative: from the end); none: the whole array
  backend_options backend;
};

struct stats_options {
  std::string input;
  bool json = false;
  backend_options backend;
};

/// Adds the `reduce` subcommand to `app`, parsing into `opts` (which must outlive the parse).
CLI::App* add_reduce_command(CLI::App& app, reduce_options& opts);
/// Adds the `stats` subcommand to `app`, parsing into `opts`.
CLI::App* add_stats_command(CLI::App& app, stats_options& opts);

/// Runs the command. Errors go to stderr. @return the exit code: 0, or 1 for bad data or arguments
/// that do not fit the data (usage errors were already reported by the parser, with 2).
int run_reduce(const reduce_options& opts);
int run_stats(const stats_options& opts);

}  // namespace multireduce::cli
