// extract_cmd.hpp -- `multireduce extract IMAGES FEATURES`: the binary descriptors of every image
// of a folder (OpenCV's ORB or BRISK, read grey) and their keypoints, written as the collection
// folder `match-all` reads: NAME.npy (uint8, N x bytes) and NAME.xy.npy (float32, N x 2) for each
// image file NAME (IMG_0001.JPG -> IMG_0001.JPG.npy), all or nothing.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace multireduce::cli {

struct extract_options {
  std::string images;    ///< the folder of images
  std::string features;  ///< the folder to write (made if missing; its parent must exist)
  std::string descriptor = "orb";
  int max_features = 8192;
};

/// Adds the `extract` subcommand to `app`, parsing into `opts` (which must outlive the parse).
CLI::App* add_extract_command(CLI::App& app, extract_options& opts);

/// Runs the command. @return 0, or 1 for bad data, unreadable images or a build without OpenCV.
int run_extract(const extract_options& opts);

}  // namespace multireduce::cli
