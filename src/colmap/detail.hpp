// The pieces of write_database (colmap.cpp) that its new-database half (new_database.cpp) and the
// text files (text.cpp) share. Internal to multireduce_colmap.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "colmap/colmap.hpp"
#include "colmap/sqlite.hpp"

namespace multireduce::colmap::detail {

/// Checks that `m` holds what collection_matches promises (sizes, ranges, first < second, no pair
/// twice, names unique); throws std::invalid_argument saying what is wrong.
void check_collection(const collection_matches& m);

/// The user_version of the schema create_database writes: COLMAP 4.2.1 (major * 1000000 + minor * 10000 +
/// patch * 100 + schema revision, COLMAP's MakeDatabaseVersionNumber).
inline constexpr int schema_version = 4020100;

/// In a new, empty database inside a transaction: COLMAP's tables, then per name in order a
/// SIMPLE_RADIAL camera, a rig, the image, a frame and its keypoints. @return the image ids (1, 2,
/// ...) and each image's keypoint rows.
void create_database(connection& db, std::span<const std::string> names, const new_database& create,
                     std::vector<std::int64_t>& image_ids, std::vector<std::int64_t>& keypoint_rows);

}  // namespace multireduce::colmap::detail
