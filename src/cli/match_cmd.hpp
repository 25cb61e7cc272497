// match_cmd.hpp -- `multireduce match`: brute-force Hamming matching of two .npy descriptor sets
// (uint8, N x bytes, as OpenCV stores them) on the GPU or the CPU, with the ratio, margin and
// maximum-distance rules and the cross-check (multireduce/match/match.hpp).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "command_common.hpp"
#include "npy/npy.hpp"

namespace multireduce::cli {

struct match_options {
  std::string query, train;
  int k = 2;
  std::optional<double> ratio;
  std::optional<int> margin, max_distance;
  bool cross_check = false;
  std::string output;             ///< .csv or .npy; "" prints the matches as CSV
  std::string format;             ///< "csv" or "npy"; "" = by -o's extension (CSV for - and special files)
  std::string knn_idx, knn_dist;  ///< .npy files of the k nearest (int32, queries x k)
  backend_options backend;
  std::int64_t train_chunk = 0;  ///< > 0: stream the training set through the GPU this many rows at a time
  /// Checking the kept matches against a known geometry: a 3 x 3 homography mapping query (x, y, 1)
  /// to train, the keypoint positions of both sets ((N, 2) float), and the tolerance in pixels.
  std::string homography, query_xy, train_xy;
  double inlier_px = 3;
};

/// Reads a descriptor set: a 2-d uint8 array of rows whose width is a positive multiple of 4
/// (command_error naming the file otherwise).
npy::array read_descriptors(const std::string& path);

/// The matcher's rule options, shared by `match` and `match-all`: --k (k_help says what it lists),
/// --ratio, --margin, --max-distance (each excluding the others) and --cross-check.
void add_match_rule_options(CLI::App& cmd, int& k, std::optional<double>& ratio, std::optional<int>& margin,
                            std::optional<int>& max_distance, bool& cross_check, const char* k_help);

/// Adds the `match` subcommand to `app`, parsing into `opts` (which must outlive the parse).
CLI::App* add_match_command(CLI::App& app, match_options& opts);

/// Runs the command. @return 0, or 1 for bad data or options that do not fit the data.
int run_match(const match_options& opts);

}  // namespace multireduce::cli
