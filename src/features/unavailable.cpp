// features/unavailable.cpp -- the build without OpenCV: extract() says what to install.
#include <stdexcept>

#include "features/image_features.hpp"

namespace multireduce::features {

bool available() { return false; }

std::string library_description() {
  return "this multireduce was built without OpenCV (configure found none): install libopencv-features2d-dev "
         "and libopencv-imgcodecs-dev (Debian/Ubuntu) and configure again, or extract from Python with "
         "mr.extract (pip install opencv-python-headless)";
}

image_features extract(const std::filesystem::path&, const extraction_options&) {
  throw std::runtime_error(library_description());
}

}  // namespace multireduce::features
