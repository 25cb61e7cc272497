// What the COLMAP tests share: a collection built in memory, a read-only look at a database with
// SQLite itself, and a minimal COLMAP database made without the code under test.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../common/test_values.hpp"
#include "colmap/colmap.hpp"

namespace mr_test {

namespace colmap = multireduce::colmap;

inline std::uint64_t colmap_seed(std::uint64_t salt) { return base_seed() ^ (salt * 0x9E3779B97F4A7C15ull); }

/// The arrays behind a collection_matches.
struct collection {
  std::vector<std::string> names;
  std::vector<std::int32_t> pairs;
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int32_t> matches;
  std::vector<std::int64_t> image_rows;  // each image's descriptor count (empty: not given)

  void add(std::int32_t a, std::int32_t b, const std::vector<std::array<std::int32_t, 2>>& rows) {
    pairs.insert(pairs.end(), {a, b});
    for (const auto& r : rows) matches.insert(matches.end(), {r[0], r[1], 7});
    offsets.push_back(offsets.back() + static_cast<std::int64_t>(rows.size()));
  }
  colmap::collection_matches view() const { return {names, pairs, offsets, matches, image_rows}; }
};

/// `images` images with random keypoint counts and, for a random half of the pairs, random matches.
inline collection random_collection(int images, std::vector<std::int64_t>& keypoint_rows, std::mt19937_64& rng) {
  collection c;
  keypoint_rows.clear();
  for (int i = 0; i < images; ++i) {
    c.names.push_back("dir/IMG_" + std::to_string(1000 + i) + ".JPG");
    keypoint_rows.push_back(std::uniform_int_distribution<std::int64_t>(i == 0 ? 0 : 1, 60)(rng));
  }
  for (int a = 0; a < images; ++a) {
    for (int b = a + 1; b < images; ++b) {
      if (rng() % 2 == 0) continue;
      std::vector<std::array<std::int32_t, 2>> rows;
      const auto count = keypoint_rows[a] == 0 || keypoint_rows[b] == 0 ? 0 : rng() % 40;
      for (std::uint64_t r = 0; r < count; ++r) {
        rows.push_back({static_cast<std::int32_t>(rng() % keypoint_rows[a]),
                        static_cast<std::int32_t>(rng() % keypoint_rows[b])});
      }
      c.add(a, b, rows);
    }
  }
  return c;
}

/// A read-only look at a database with SQLite itself: every value of a query as bytes (integers
/// as their decimal text).
class sql {
 public:
  explicit sql(const std::filesystem::path& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~sql() { sqlite3_close_v2(db_); }
  sql(const sql&) = delete;
  sql& operator=(const sql&) = delete;

  std::vector<std::vector<std::string>> rows(const std::string& query) const {
    std::vector<std::vector<std::string>> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, query.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << query << ": " << sqlite3_errmsg(db_);
      return out;
    }
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      auto& row = out.emplace_back();
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt, i));
        const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(stmt, i));
        row.emplace_back(data == nullptr ? "" : std::string(data, bytes));
      }
    }
    sqlite3_finalize(stmt);
    return out;
  }
  std::int64_t number(const std::string& query) const {
    const auto r = rows(query);
    return r.empty() || r[0].empty() ? -1 : std::stoll(r[0][0]);
  }

 private:
  sqlite3* db_ = nullptr;
};

template <class T>
std::vector<T> blob_as(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A database as an older COLMAP (3.x) left it, made with SQLite alone: images in the order given
/// (ids 1, 2, ...), keypoints for those with rows >= 0 (x = row, y = 0).
inline void make_colmap3_database(const std::filesystem::path& path, const std::vector<std::string>& names,
                                  const std::vector<std::int64_t>& keypoint_rows) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string script =
      "CREATE TABLE cameras (camera_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, model INTEGER NOT NULL,"
      " width INTEGER NOT NULL, height INTEGER NOT NULL, params BLOB, prior_focal_length INTEGER NOT NULL);"
      "CREATE TABLE images (image_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, name TEXT NOT NULL UNIQUE,"
      " camera_id INTEGER NOT NULL, prior_qw REAL, prior_qx REAL, prior_qy REAL, prior_qz REAL, prior_tx REAL,"
      " prior_ty REAL, prior_tz REAL);"
      "CREATE TABLE keypoints (image_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
      " data BLOB);"
      "CREATE TABLE matches (pair_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL, cols INTEGER NOT NULL,"
      " data BLOB);"
      "CREATE TABLE two_view_geometries (pair_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL,"
      " cols INTEGER NOT NULL, data BLOB, config INTEGER NOT NULL, F BLOB, E BLOB, H BLOB, qvec BLOB, tvec BLOB);"
      "INSERT INTO cameras VALUES (1, 0, 100, 100, NULL, 0);";
  for (std::size_t i = 0; i < names.size(); ++i) {
    script += "INSERT INTO images(image_id, name, camera_id) VALUES (" + std::to_string(i + 1) + ", '" + names[i] +
              "', 1);";
    if (keypoint_rows[i] >= 0) {
      script += "INSERT INTO keypoints VALUES (" + std::to_string(i + 1) + ", " + std::to_string(keypoint_rows[i]) +
                ", 2, zeroblob(" + std::to_string(8 * keypoint_rows[i]) + "));";
    }
  }
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, script.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

}  // namespace mr_test
