// match_all_cmd.hpp -- `multireduce match-all DIR`: every pair of a collection of images (one
// NAME.npy of uint8 descriptor rows per image, in sorted name order), or the pairs of a COLMAP
// pair list, or each image with the next W, matched on the GPU or the CPU with the rules of
// `match` (multireduce/match/collection.hpp). Writes an .npz, a COLMAP database and COLMAP's
// text for matches_importer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "command_common.hpp"

namespace multireduce::cli {

struct match_all_options {
  std::string folder;
  std::string pairs_file;             ///< COLMAP's pair list ("" = every pair)
  std::optional<std::int64_t> sequential;  ///< each image with the next W
  int k = 2;
  std::optional<double> ratio;
  std::optional<int> margin, max_distance;
  bool cross_check = false;
  std::string output;        ///< the .npz
  std::string colmap_db;     ///< a COLMAP database to write the matches into
  std::vector<int> image_size;  ///< W H: a new database, with cameras, images and keypoints
  std::string colmap_txt;    ///< COLMAP's raw match text
  std::string homographies;  ///< N x 3 x 3: image n's pixel = H[n] (reference pixel): check the matches
  double inlier_px = 3;
  std::int64_t gpu_memory_mib = 0;  ///< > 0: the GPU's budget (smaller forces the image blocks)
  backend_options backend;
};

/// Adds the `match-all` subcommand to `app`, parsing into `opts` (which must outlive the parse).
CLI::App* add_match_all_command(CLI::App& app, match_all_options& opts);

/// Runs the command. @return 0, or 1 for bad data or options that do not fit the data.
int run_match_all(const match_all_options& opts);

}  // namespace multireduce::cli
