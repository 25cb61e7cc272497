// features::extract against OpenCV called directly, as a user would call it, on the repository's
// images: every keypoint position and every descriptor byte; and its refusals.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "features/image_features.hpp"

namespace {

namespace fs = std::filesystem;
namespace features = multireduce::features;

const fs::path images = MULTIREDUCE_TEST_IMAGES;

/// What a user calling OpenCV gets: the keypoints and the descriptor rows.
void opencv_directly(const fs::path& path, features::descriptor_kind kind, int limit, std::vector<cv::KeyPoint>& keypoints,
                     cv::Mat& rows) {
  const cv::Mat grey = cv::imread(path.string(), cv::IMREAD_GRAYSCALE);
  ASSERT_FALSE(grey.empty()) << path;
  if (kind == features::descriptor_kind::orb) {
    cv::ORB::create(limit)->detectAndCompute(grey, cv::noArray(), keypoints, rows);
    return;
  }
  const auto brisk = cv::BRISK::create();
  brisk->detect(grey, keypoints);
  std::stable_sort(keypoints.begin(), keypoints.end(),
                   [](const cv::KeyPoint& a, const cv::KeyPoint& b) { return a.response > b.response; });
  if (keypoints.size() > std::size_t(limit)) keypoints.resize(std::size_t(limit));
  brisk->compute(grey, keypoints, rows);
}

struct case_ {
  features::descriptor_kind kind;
  int limit;
};

class ExtractIsOpenCv : public ::testing::TestWithParam<case_> {};

TEST_P(ExtractIsOpenCv, EveryKeypointAndByte) {
  ASSERT_TRUE(features::available());
  const auto [kind, limit] = GetParam();
  for (int n = 0; n < 4; ++n) {
    const fs::path path = images / ("view_" + std::to_string(n) + ".jpg");
    std::vector<cv::KeyPoint> keypoints;
    cv::Mat rows;
    opencv_directly(path, kind, limit, keypoints, rows);
    const features::image_features f = features::extract(path, {kind, limit});
    EXPECT_EQ(f.width, 512);
    EXPECT_EQ(f.height, 512);
    ASSERT_EQ(f.bytes, features::descriptor_bytes(kind));
    ASSERT_EQ(f.count(), std::int64_t(keypoints.size())) << path;
    ASSERT_GT(f.count(), 0);
    ASSERT_LE(f.count(), limit);
    ASSERT_EQ(rows.rows, int(keypoints.size()));
    for (std::size_t k = 0; k < keypoints.size(); ++k) {
      ASSERT_EQ(f.xy[2 * k], keypoints[k].pt.x) << path << " keypoint " << k;
      ASSERT_EQ(f.xy[2 * k + 1], keypoints[k].pt.y) << path << " keypoint " << k;
      ASSERT_EQ(std::memcmp(f.descriptors.data() + k * std::size_t(f.bytes), rows.ptr(int(k)), std::size_t(f.bytes)), 0)
          << path << " descriptor " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Descriptors, ExtractIsOpenCv,
                         ::testing::Values(case_{features::descriptor_kind::orb, 8192},
                                           case_{features::descriptor_kind::orb, 500},
                                           case_{features::descriptor_kind::brisk, 8192},
                                           case_{features::descriptor_kind::brisk, 300}));

TEST(Extract, ANonImageIsAnErrorNamingTheFile) {
  const fs::path bad = fs::temp_directory_path() / "multireduce_features_test_not_an_image.jpg";
  std::ofstream(bad) << "not a JPEG";
  try {
    features::extract(bad, {});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  fs::remove(bad);
  EXPECT_THROW(features::extract(images / "no_such_image.png", {}), std::runtime_error);
}

TEST(Extract, ImageNamesAndKinds) {
  EXPECT_TRUE(features::is_image_name("IMG_0001.JPG"));
  EXPECT_TRUE(features::is_image_name("a.b.Png"));
  EXPECT_TRUE(features::is_image_name("scan.tiff"));
  EXPECT_FALSE(features::is_image_name("view_0.npy"));
  EXPECT_FALSE(features::is_image_name("jpg"));
  EXPECT_FALSE(features::is_image_name("notes.txt"));
  EXPECT_EQ(features::parse_descriptor_kind("orb"), features::descriptor_kind::orb);
  EXPECT_EQ(features::parse_descriptor_kind("brisk"), features::descriptor_kind::brisk);
  EXPECT_FALSE(features::parse_descriptor_kind("sift"));
  EXPECT_EQ(features::descriptor_bytes(features::descriptor_kind::brisk), 64);
}

}  // namespace
