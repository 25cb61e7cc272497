// features/opencv_features.cpp -- extract() through OpenCV: the image read as grey, then ORB or
// BRISK exactly as a user calling OpenCV would (the tests compare with such calls, element by
// element).
#include <opencv2/core.hpp>
#include <opencv2/core/version.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "features/image_features.hpp"

namespace multireduce::features {

bool available() { return true; }

std::string library_description() { return std::string("OpenCV ") + CV_VERSION; }

image_features extract(const std::filesystem::path& path, const extraction_options& options) {
  // OpenCV's own warnings ("can't open/read file") would repeat, less clearly, what the error says.
  static const bool quiet = (cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_ERROR), true);
  (void)quiet;
  cv::Mat grey;
  try {
    grey = cv::imread(path.string(), cv::IMREAD_GRAYSCALE);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(path.string() + ": cannot be read as an image (" + e.what() + ")");
  }
  if (grey.empty()) throw std::runtime_error(path.string() + ": not an image OpenCV can read (or an empty one)");
  std::vector<cv::KeyPoint> keypoints;
  cv::Mat descriptors;
  try {
    if (options.kind == descriptor_kind::orb) {
      cv::ORB::create(options.max_features)->detectAndCompute(grey, cv::noArray(), keypoints, descriptors);
    } else {
      const cv::Ptr<cv::BRISK> brisk = cv::BRISK::create();
      brisk->detect(grey, keypoints);
      // The strongest by response, ties in the detector's order: a rule Python's cv2 can follow
      // too (cv::KeyPointsFilter::retainBest's order is its std::nth_element's, and cv2 lacks it).
      std::stable_sort(keypoints.begin(), keypoints.end(),
                       [](const cv::KeyPoint& a, const cv::KeyPoint& b) { return a.response > b.response; });
      if (keypoints.size() > std::size_t(options.max_features)) keypoints.resize(std::size_t(options.max_features));
      brisk->compute(grey, keypoints, descriptors);
    }
  } catch (const cv::Exception& e) {
    throw std::runtime_error(path.string() + ": OpenCV failed on it (" + e.what() + ")");
  }
  image_features f;
  f.width = grey.cols;
  f.height = grey.rows;
  f.bytes = descriptor_bytes(options.kind);
  if (!keypoints.empty() && (descriptors.type() != CV_8U || descriptors.cols != f.bytes ||
                             descriptors.rows != static_cast<int>(keypoints.size())))
    throw std::runtime_error(path.string() + ": OpenCV gave descriptors of an unexpected shape");
  f.xy.resize(2 * keypoints.size());
  for (std::size_t n = 0; n < keypoints.size(); ++n) {
    f.xy[2 * n] = keypoints[n].pt.x;
    f.xy[2 * n + 1] = keypoints[n].pt.y;
  }
  f.descriptors.resize(keypoints.size() * std::size_t(f.bytes));
  for (int r = 0; r < descriptors.rows; ++r)
    std::memcpy(f.descriptors.data() + std::size_t(r) * std::size_t(f.bytes), descriptors.ptr(r), std::size_t(f.bytes));
  return f;
}

}  // namespace multireduce::features
