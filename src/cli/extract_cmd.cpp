// extract_cmd.cpp -- `multireduce extract` (extract_cmd.hpp): the images listed, every one's
// features computed (features/image_features.hpp), then all the files written together.
#include "cli/extract_cmd.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "cli/command_common.hpp"
#include "cli/output_file.hpp"
#include "cli/progress.hpp"
#include "features/image_features.hpp"
#include "files/temporary_files.hpp"
#include "npy/npy.hpp"

namespace multireduce::cli {
namespace {

namespace fs = std::filesystem;

/// The image files of a folder (regular files through their links, by extension), sorted by name.
std::vector<fs::path> list_image_files(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw command_error(fmt::format("{}: not a folder (extract takes a folder of images)", folder));
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!features::is_image_name(entry.path()) || !fs::is_regular_file(entry.path(), ec)) continue;
    const std::string name = entry.path().filename().string();
    if (name.starts_with("."))
      continue;  // (hidden files: an editor's or a tool's, not the user's images)
    found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  if (found.empty())
    throw command_error(fmt::format("{}: no images in the folder (files named .jpg, .jpeg, .png, .tif, .tiff, .bmp, "
                                    ".webp, .pgm, .ppm, .pnm or .jp2)", folder));
  return found;
}

/// The features folder: made when missing (its parent must exist); a .npy in it that is not one of
/// these images' feature files is refused, since match-all would read it as one more image.
void prepare_features_folder(const std::string& folder, const std::vector<fs::path>& images) {
  std::error_code ec;
  const fs::file_status st = fs::status(folder, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw command_error(fmt::format("{}: exists and is not a folder (extract writes a folder of NAME.npy files)", folder));
  if (!fs::exists(st)) {
    const fs::path parent = fs::path(folder).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw command_error(fmt::format("{}: its folder {} does not exist", folder, parent.string()));
    return;  // (made once every image has been read: a failure leaves nothing)
  }
  std::set<std::string> ours;
  for (const fs::path& image : images) {
    ours.insert(image.filename().string() + ".npy");
    ours.insert(image.filename().string() + ".xy.npy");
  }
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".npy") && !name.starts_with(".") && !ours.contains(name))
      throw command_error(fmt::format("{}: not a feature file of these images, and match-all would read it as one "
                                      "more image: write the features into a new or empty folder", entry.path().string()));
  }
}

std::vector<std::byte> npy_of(npy::dtype type, std::int64_t rows, std::int64_t cols, const void* data) {
  const std::int64_t shape[2] = {rows, cols};
  return npy::encode(type, shape, data);
}

int extract_body(const extract_options& o) {
  const auto kind = features::parse_descriptor_kind(o.descriptor);
  if (!kind) throw command_error(fmt::format("--descriptor {}: not orb or brisk", o.descriptor));
  if (!features::available()) throw command_error(features::library_description());
  const std::vector<fs::path> images = list_image_files(o.images);
  prepare_features_folder(o.features, images);

  const features::extraction_options options{*kind, o.max_features};
  std::vector<features::image_features> found;
  found.reserve(images.size());
  progress_bar bar("multireduce extract", "images");
  for (std::size_t n = 0; n < images.size(); ++n) {
    try {
      found.push_back(features::extract(images[n], options));
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw command_error(e.what());
    }
    if (bar.enabled()) bar.update(std::int64_t(n + 1), std::int64_t(images.size()));
  }
  bar.finish();

  // All or nothing: the folder made, every file written and flushed to its temporary, then all
  // renamed; a signal meanwhile waits for the end of the writing and undoes it.
  std::error_code ec;
  const bool made = !fs::exists(o.features, ec);
  if (made && !fs::create_directory(o.features, ec))
    throw command_error(fmt::format("{}: cannot make the folder: {}", o.features, ec.message()));
  std::vector<std::unique_ptr<output_file>> outputs;
  std::vector<named_input> inputs;
  for (const fs::path& image : images) inputs.push_back({"an image", image.string()});
  try {
    const files::signal_deferral defer;
    for (std::size_t n = 0; n < images.size(); ++n) {
      const std::string name = images[n].filename().string();
      const features::image_features& f = found[n];
      const auto descriptors = npy_of(npy::dtype::uint8, f.count(), f.bytes, f.descriptors.data());
      const auto keypoints = npy_of(npy::dtype::float32, f.count(), 2, f.xy.data());
      for (const auto& [file, bytes] : {std::pair{name + ".npy", &descriptors}, std::pair{name + ".xy.npy", &keypoints}}) {
        outputs.push_back(std::make_unique<output_file>("FEATURES", (fs::path(o.features) / file).string()));
        outputs.back()->write(bytes->data(), bytes->size());
      }
    }
    std::vector<const output_file*> planned;
    for (const auto& out : outputs) planned.push_back(out.get());
    check_outputs(planned, inputs);
    for (const auto& out : outputs) out->finish();
    if (const int sig = files::deferred_signal(); sig != 0)
      throw command_error(fmt::format("stopped by signal {} before any file was written", sig));
    for (const auto& out : outputs) out->commit();
  } catch (...) {
    outputs.clear();  // (their temporaries removed)
    if (made) fs::remove(o.features, ec);
    throw;
  }

  std::int64_t least = found.front().count(), most = least, total = 0;
  bool one_size = true;
  for (const auto& f : found) {
    least = std::min(least, f.count()), most = std::max(most, f.count()), total += f.count();
    one_size = one_size && f.width == found.front().width && f.height == found.front().height;
  }
  fmt::print(stderr, "multireduce extract: {} images, {} ({} bits, up to {} per image, {}): {} to {} keypoints per "
                     "image, {} in all, into {}\n",
             images.size(), features::display_name(*kind), found.front().bytes * 8, o.max_features,
             features::library_description(), least, most, total, o.features);
  if (one_size)
    fmt::print(stderr, "multireduce extract: every image is {} x {}: `multireduce match-all {} --colmap-db DB "
                       "--image-size {} {}` makes a COLMAP database of them\n",
               found.front().width, found.front().height, o.features, found.front().width, found.front().height);
  else
    fmt::print(stderr, "multireduce extract: the images differ in size; match-all's --image-size gives every camera "
                       "one size (docs/colmap.md)\n");
  return 0;
}

}  // namespace

CLI::App* add_extract_command(CLI::App& app, extract_options& opts) {
  auto* cmd = app.add_subcommand("extract", "compute the binary descriptors of a folder of images (OpenCV's ORB or "
                                            "BRISK) as the NAME.npy files match-all reads");
  cmd->add_option("images", opts.images, "the folder of images (JPEG, PNG, TIFF, ...; read as grey)")->required();
  cmd->add_option("features", opts.features,
                  "the folder to write: NAME.npy (uint8 descriptors, N x bytes) and NAME.xy.npy (float32 keypoints, "
                  "N x 2) per image file NAME; made if missing")
      ->required();
  cmd->add_option("--descriptor", opts.descriptor, "orb (256 bits, the default) or brisk (512 bits)")
      ->check(CLI::IsMember({"orb", "brisk"}));
  add_integer(
      *cmd, "--max-features", [&opts](std::int64_t v) { opts.max_features = int(v); },
      "at most this many keypoints per image (8192)", 1, 1 << 20, "a keypoint count");
  cmd->footer(
      "Images are listed in sorted name order, as match-all lists their .npy files; each is read as grey and\n"
      "given to OpenCV: ORB::create(max)->detectAndCompute, or BRISK's detect, the max strongest kept (by response,\n"
      "ties in detection order), compute.\n"
      "A .npy in FEATURES that is not one of these images' files is refused (match-all would read it). Every\n"
      "file is written and flushed before any replaces its path. Then:\n"
      "  multireduce match-all FEATURES --ratio 0.8 --colmap-db DB --image-size W H   (docs/colmap.md)\n"
      "Exit codes: 0 done, 1 an image that cannot be read or a build without OpenCV, 2 usage errors.");
  return cmd;
}

int run_extract(const extract_options& opts) {
  return guarded("extract", [&] { return extract_body(opts); });
}

}  // namespace multireduce::cli
