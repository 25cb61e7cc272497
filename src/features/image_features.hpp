// features/image_features.hpp -- binary descriptors of images and their keypoints, for
// `multireduce extract`: OpenCV's ORB (256 bits) or BRISK (512 bits), read grey, exactly as OpenCV's
// own calls give them (opencv_features.cpp; without OpenCV, unavailable.cpp says what to install).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace multireduce::features {

enum class descriptor_kind { orb, brisk };

/// "orb" / "brisk" (nullopt for anything else).
std::optional<descriptor_kind> parse_descriptor_kind(std::string_view name);
/// "ORB", "BRISK".
const char* display_name(descriptor_kind kind);
/// Bytes of one descriptor row: ORB 32, BRISK 64.
int descriptor_bytes(descriptor_kind kind);

struct extraction_options {
  descriptor_kind kind = descriptor_kind::orb;
  /// At most this many keypoints per image (ORB's nfeatures; BRISK's strongest by response).
  int max_features = 8192;
};

/// One image's features: keypoint n is (xy[2n], xy[2n + 1]) in pixels, its descriptor the bytes
/// [n * bytes, (n + 1) * bytes) of `descriptors`.
struct image_features {
  int width = 0, height = 0;
  int bytes = 0;
  std::vector<float> xy;
  std::vector<std::uint8_t> descriptors;
  std::int64_t count() const { return static_cast<std::int64_t>(xy.size() / 2); }
};

/// Whether this build has OpenCV to extract with.
bool available();
/// "OpenCV 4.6.0", or why there is none and what to install.
std::string library_description();

/// The features of the image file at `path` (any format OpenCV reads: JPEG, PNG, TIFF, ...), read
/// as grey (8 bits). ORB: cv::ORB::create(max_features)->detectAndCompute. BRISK:
/// cv::BRISK::create()->detect, the max_features strongest by response kept (a stable sort: ties
/// in the detector's order), then compute.
/// Throws std::runtime_error naming the file when it cannot be read or decoded, or without OpenCV.
image_features extract(const std::filesystem::path& path, const extraction_options& options);

/// Whether a file name has an image extension extract() reads (case-insensitive): .jpg .jpeg .png
/// .tif .tiff .bmp .webp .pgm .ppm .pnm .jp2.
bool is_image_name(const std::filesystem::path& path);

}  // namespace multireduce::features
