// features/image_features.cpp -- what does not need OpenCV: descriptor kinds and image names.
#include "features/image_features.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace multireduce::features {

std::optional<descriptor_kind> parse_descriptor_kind(std::string_view name) {
  if (name == "orb") return descriptor_kind::orb;
  if (name == "brisk") return descriptor_kind::brisk;
  return std::nullopt;
}

const char* display_name(descriptor_kind kind) { return kind == descriptor_kind::orb ? "ORB" : "BRISK"; }

int descriptor_bytes(descriptor_kind kind) { return kind == descriptor_kind::orb ? 32 : 64; }

bool is_image_name(const std::filesystem::path& path) {
  static constexpr std::array<std::string_view, 11> extensions = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp",
                                                                  ".webp", ".pgm", ".ppm", ".pnm", ".jp2"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

}  // namespace multireduce::features
