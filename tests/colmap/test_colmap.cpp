// colmap::write_database read back with SQLite itself: a new database (COLMAP's schema, cameras,
// rigs, frames, keypoints, every pair's matches under COLMAP's pair_id), an existing one by name
// (columns swapped where the ids are reversed, replaced pairs, their geometries dropped), and every
// failure leaving the database as it was or no file at all.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "../common/scratch_dir.hpp"
#include "colmap_test_util.hpp"
#include "files/temporary_files.hpp"

namespace {

using namespace mr_test;
namespace fs = std::filesystem;
namespace files = multireduce::files;

static_assert(colmap::pair_id(1, 2) == 2147483647LL + 2);
static_assert(colmap::pair_id(2, 1) == colmap::pair_id(1, 2));
static_assert(colmap::pair_id(2147483646, 2147483645) == 2147483647LL * 2147483645 + 2147483646);

using colmap_database = scratch_dir;

/// The message of what `f` throws as E ("" if it throws nothing).
template <class E, class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/// Checks that the database holds exactly the collection's matches under `ids` (image index ->
/// image_id), smaller image id's keypoint first.
void expect_matches(const sql& db, const collection& c, const std::vector<std::int64_t>& ids) {
  std::map<std::int64_t, std::vector<std::string>> rows;
  for (auto& r : db.rows("SELECT pair_id, rows, cols, data FROM matches")) rows[std::stoll(r[0])] = r;
  ASSERT_EQ(rows.size(), c.pairs.size() / 2);
  for (std::size_t p = 0; p < c.pairs.size() / 2; ++p) {
    const std::int64_t a = ids[c.pairs[2 * p]], b = ids[c.pairs[2 * p + 1]];
    const std::int64_t id = 2147483647LL * std::min(a, b) + std::max(a, b);
    SCOPED_TRACE(::testing::Message() << "pair " << p << " ids " << a << ", " << b);
    ASSERT_TRUE(rows.count(id));
    const auto& row = rows[id];
    const std::int64_t count = c.offsets[p + 1] - c.offsets[p];
    EXPECT_EQ(std::stoll(row[1]), count);
    EXPECT_EQ(row[2], "2");
    const auto data = blob_as<std::uint32_t>(row[3]);
    ASSERT_EQ(static_cast<std::int64_t>(data.size()), 2 * count);
    for (std::int64_t r = 0; r < count; ++r) {
      const auto* m = &c.matches[3 * (c.offsets[p] + r)];
      const auto first = static_cast<std::uint32_t>(a < b ? m[0] : m[1]);
      const auto second = static_cast<std::uint32_t>(a < b ? m[1] : m[0]);
      EXPECT_EQ(data[2 * r], first) << "row " << r;
      EXPECT_EQ(data[2 * r + 1], second) << "row " << r;
    }
  }
}

TEST_F(colmap_database, new_database_round_trip) {
  const std::uint64_t seed = colmap_seed(1);
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (MULTIREDUCE_TEST_SEED=" << base_seed() << ")");
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> counts;
  const collection c = random_collection(7, counts, rng);
  colmap::new_database create{640, 480, {}};
  for (std::size_t i = 0; i < c.names.size(); ++i) {
    const int cols = i == 1 ? 4 : i == 2 ? 3 : 2;  // 4 kept, 3 cut to x, y
    auto& k = create.image_keypoints.emplace_back(colmap::keypoints{{}, counts[i], cols});
    for (std::int64_t v = 0; v < counts[i] * cols; ++v) k.values.push_back(static_cast<float>(rng() % 100000) / 7);
  }
  const fs::path path = dir / "new.db";
  colmap::write_database(path, c.view(), &create);
  EXPECT_EQ(listing(), std::vector<std::string>{"new.db"});  // no temporary, no journal left

  const sql db(path);
  EXPECT_EQ(db.number("PRAGMA user_version"), 4020100);
  for (const char* table : {"cameras", "rigs", "frames", "frame_data", "images", "keypoints"}) {
    EXPECT_EQ(db.number(std::string("SELECT count(*) FROM ") + table), 7) << table;
  }
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < c.names.size(); ++i) {
    SCOPED_TRACE(c.names[i]);
    const auto image = db.rows("SELECT image_id, camera_id FROM images WHERE name = '" + c.names[i] + "'");
    ASSERT_EQ(image.size(), 1u);
    ids.push_back(std::stoll(image[0][0]));
    EXPECT_EQ(ids.back(), static_cast<std::int64_t>(i + 1));
    const auto camera = db.rows("SELECT model, width, height, params, prior_focal_length FROM cameras "
                                "WHERE camera_id = " + image[0][1]);
    ASSERT_EQ(camera.size(), 1u);
    EXPECT_EQ(camera[0][0], "2");  // SIMPLE_RADIAL
    EXPECT_EQ(camera[0][1], "640");
    EXPECT_EQ(camera[0][2], "480");
    EXPECT_EQ(blob_as<double>(camera[0][3]), (std::vector<double>{768, 320, 240, 0}));
    EXPECT_EQ(camera[0][4], "0");
    // The image is its frame's data, the frame its camera's rig's.
    EXPECT_EQ(db.number("SELECT count(*) FROM frame_data JOIN frames USING (frame_id) JOIN rigs USING (rig_id) "
                        "WHERE data_id = " + image[0][0] + " AND sensor_id = " + image[0][1] +
                        " AND sensor_type = 0 AND ref_sensor_id = " + image[0][1] + " AND ref_sensor_type = 0"),
              1);
    const auto k = db.rows("SELECT rows, cols, data FROM keypoints WHERE image_id = " + image[0][0]);
    ASSERT_EQ(k.size(), 1u);
    const auto& given = create.image_keypoints[i];
    EXPECT_EQ(std::stoll(k[0][0]), given.rows);
    const int cols = given.cols == 3 ? 2 : given.cols;
    EXPECT_EQ(std::stoi(k[0][1]), cols);
    const auto values = blob_as<float>(k[0][2]);
    ASSERT_EQ(static_cast<std::int64_t>(values.size()), given.rows * cols);
    for (std::int64_t r = 0; r < given.rows; ++r) {
      for (int j = 0; j < cols; ++j) EXPECT_EQ(values[r * cols + j], given.values[r * given.cols + j]);
    }
  }
  expect_matches(db, c, ids);
}

TEST_F(colmap_database, new_database_schema_is_colmaps) {
  collection c;
  c.names = {"a.jpg", "b.jpg"};
  c.add(0, 1, {{0, 1}});
  const colmap::new_database create{10, 20, {{{0, 0, 1, 1}, 2, 2}, {{0, 0, 1, 1}, 2, 2}}};
  colmap::write_database(dir / "c.db", c.view(), &create);
  const sql db(dir / "c.db");
  std::vector<std::string> names;
  for (auto& r : db.rows("SELECT name FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")) names.push_back(r[0]);
  EXPECT_EQ(names, (std::vector<std::string>{"rigs", "sqlite_sequence", "rig_ref_sensor_assignment", "rig_sensors",
                                             "rig_sensor_assignment", "cameras", "frames", "frame_data",
                                             "frame_sensor_assignment", "images", "index_name", "pose_priors",
                                             "pose_prior_data_assignment", "keypoints", "descriptors", "matches",
                                             "two_view_geometries"}));
  EXPECT_EQ(db.rows("SELECT sql FROM sqlite_master WHERE name = 'matches'")[0][0],
            "CREATE TABLE matches   (pair_id  INTEGER  PRIMARY KEY  NOT NULL,    rows     INTEGER               NOT "
            "NULL,    cols     INTEGER               NOT NULL,    data     BLOB)");
  EXPECT_EQ(db.number("SELECT count(*) FROM matches"), 1);
}

TEST_F(colmap_database, existing_database_by_name) {
  const std::uint64_t seed = colmap_seed(2);
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (MULTIREDUCE_TEST_SEED=" << base_seed() << ")");
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> counts;
  collection c = random_collection(6, counts, rng);
  // The database lists the images in the other order, plus one the collection lacks: every pair's
  // ids are reversed, so every row's columns are swapped.
  std::vector<std::string> db_names(c.names.rbegin(), c.names.rend());
  std::vector<std::int64_t> db_counts(counts.rbegin(), counts.rend());
  db_names.push_back("other.jpg");
  db_counts.push_back(5);
  const fs::path path = dir / "old.db";
  make_colmap3_database(path, db_names, db_counts);
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < c.names.size(); ++i) ids.push_back(static_cast<std::int64_t>(c.names.size() - i));
  ASSERT_GT(c.pairs.size(), 0u);
  {  // matches already there for a pair we write (replaced, its geometry dropped) and one we don't (kept)
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::int64_t ours = colmap::pair_id(ids[c.pairs[0]], ids[c.pairs[1]]), theirs = colmap::pair_id(1, 7);
    const std::string script = "INSERT INTO matches VALUES (" + std::to_string(ours) + ", 1, 2, zeroblob(8));" +
                               "INSERT INTO matches VALUES (" + std::to_string(theirs) + ", 1, 2, zeroblob(8));" +
                               "INSERT INTO two_view_geometries(pair_id, rows, cols, config) VALUES (" +
                               std::to_string(ours) + ", 0, 2, 2), (" + std::to_string(theirs) + ", 0, 2, 2);";
    ASSERT_EQ(sqlite3_exec(db, script.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  colmap::write_database(path, c.view(), nullptr);

  const sql db(path);
  auto rows = db.rows("SELECT pair_id FROM matches WHERE pair_id = " + std::to_string(colmap::pair_id(1, 7)));
  EXPECT_EQ(rows.size(), 1u);
  const auto geometries = db.rows("SELECT pair_id FROM two_view_geometries");
  ASSERT_EQ(geometries.size(), 1u);
  EXPECT_EQ(std::stoll(geometries[0][0]), colmap::pair_id(1, 7));
  // expect_matches wants exactly the collection's rows: drop the other pair from the view.
  collection with_other = c;
  with_other.names.push_back("other.jpg");
  with_other.add(static_cast<std::int32_t>(c.names.size()) - 1, 6, {{0, 0}});  // ids 1 and 7
  ids.push_back(7);
  expect_matches(db, with_other, ids);
}

TEST_F(colmap_database, missing_names_leave_it_unchanged) {
  collection c;
  c.names = {"a.jpg", "b.jpg", "c.jpg", "d.jpg"};
  c.add(0, 1, {{0, 0}});
  c.add(2, 3, {{0, 0}});
  const fs::path path = dir / "db";
  make_colmap3_database(path, {"a.jpg", "c.jpg"}, {4, 4});
  const std::string before = file_bytes(path);
  const std::string message = thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); });
  EXPECT_NE(message.find("2 of the 4 images are not in the database (b.jpg, d.jpg)"), std::string::npos) << message;
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
}

TEST_F(colmap_database, keypoint_out_of_range_rolls_back) {
  collection c;
  c.names = {"a.jpg", "b.jpg", "c.jpg"};
  c.add(0, 1, {{3, 2}});
  c.add(0, 2, {{0, 0}, {1, 9}});  // c.jpg has 9 keypoints: 9 is one too many; the first pair was written
  const fs::path path = dir / "db";
  make_colmap3_database(path, c.names, {4, 4, 9});
  const std::string before = file_bytes(path);
  std::string message = thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); });
  EXPECT_NE(message.find("pair (a.jpg, c.jpg), match 1: keypoint 9 of c.jpg is out of range (it has 9 keypoints)"),
            std::string::npos) << message;
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(sql(path).number("SELECT count(*) FROM matches"), 0);

  // A negative index.
  c.matches[0] = -3;
  message = thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); });
  EXPECT_NE(message.find("keypoint -3 of a.jpg is negative"), std::string::npos) << message;
  EXPECT_EQ(file_bytes(path), before);

  // A new database checks against the keypoints it is given, and leaves no file.
  c.matches[0] = 3;
  const colmap::new_database create{8, 8, {{{}, 0, 2}, {{}, 0, 2}, {{}, 0, 2}}};
  message = thrown<std::runtime_error>([&] { colmap::write_database(dir / "new.db", c.view(), &create); });
  EXPECT_NE(message.find("keypoint 3 of a.jpg is out of range (it has 0 keypoints)"), std::string::npos) << message;
  EXPECT_EQ(listing(), (std::vector<std::string>{"db"}));
}

TEST_F(colmap_database, not_a_colmap_database) {
  collection c;
  c.names = {"a.jpg", "b.jpg"};
  c.add(0, 1, {});
  write_text(dir / "text.db", std::string(4096, 'x'));
  std::string message = thrown<std::runtime_error>([&] { colmap::write_database(dir / "text.db", c.view(), nullptr); });
  EXPECT_NE(message.find("not a COLMAP database (not an SQLite file)"), std::string::npos) << message;
  EXPECT_EQ(file_bytes(dir / "text.db"), std::string(4096, 'x'));

  for (const auto& [schema, missing] : std::vector<std::pair<std::string, std::string>>{
           {"CREATE TABLE t (x);", "no table `images`"},
           {"CREATE TABLE images (image_id, name, camera_id); CREATE TABLE keypoints (image_id, rows, cols, data);"
            "CREATE TABLE matches (pair_id, rows, data);",
            "table `matches` has no column `cols`"}}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "other.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, schema.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    message = thrown<std::runtime_error>([&] { colmap::write_database(dir / "other.db", c.view(), nullptr); });
    EXPECT_NE(message.find("other.db: not a COLMAP database: " + missing), std::string::npos) << message;
    fs::remove(dir / "other.db");
  }
}

TEST_F(colmap_database, unwritable_paths) {
  collection c;
  c.names = {"a.jpg", "b.jpg"};
  c.add(0, 1, {{0, 0}});
  const colmap::new_database create{8, 8, {{{1, 1}, 1, 2}, {{1, 1}, 1, 2}}};
  // An existing database that is not there is not made.
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir / "absent.db", c.view(), nullptr); })
                .find("absent.db: cannot be opened"), std::string::npos);
  EXPECT_TRUE(listing().empty());
  // A new one where there is no directory, or where a file is.
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir / "no/such/dir.db", c.view(), &create); })
                .find("cannot create it: No such file or directory"), std::string::npos);
  write_text(dir / "there.db", "keep me");
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir / "there.db", c.view(), &create); })
                .find("there.db: already exists"), std::string::npos);
  EXPECT_EQ(file_bytes(dir / "there.db"), "keep me");
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir, c.view(), nullptr); }), "");
  EXPECT_EQ(listing(), std::vector<std::string>{"there.db"});
}

TEST_F(colmap_database, read_only_database) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: a read-only file is writable";
  collection c;
  c.names = {"a.jpg", "b.jpg"};
  c.add(0, 1, {{0, 0}});
  make_colmap3_database(dir / "ro.db", c.names, {1, 1});
  fs::permissions(dir / "ro.db", fs::perms::owner_read);
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir / "ro.db", c.view(), nullptr); })
                .find("ro.db: not writable"), std::string::npos);
}

TEST_F(colmap_database, malformed_collections) {
  collection good;
  good.names = {"a", "b", "c"};
  good.add(0, 1, {{0, 0}});
  good.add(1, 2, {{0, 0}});
  make_colmap3_database(dir / "db", good.names, {1, 1, 1});
  const auto rejects = [&](collection c, const std::string& what) {
    const std::string message =
        thrown<std::invalid_argument>([&] { colmap::write_database(dir / "db", c.view(), nullptr); });
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  auto c = good;
  c.pairs[2] = 2, c.pairs[3] = 1;
  rejects(c, "pair 1 (2, 1): the first image must come before the second");
  c = good, c.pairs[3] = 3;
  rejects(c, "pair 1 (1, 3): an image index out of range of the 3 names");
  c = good, c.offsets[1] = 3;
  rejects(c, "pair 0 (0, 1): its offsets [0, 3) are not a range of the 2 matches");
  c = good, c.offsets.pop_back();
  rejects(c, "2 pairs need 3 offsets, got 2");
  c = good, c.pairs[2] = 0, c.pairs[3] = 1;
  rejects(c, "pair (0, 1) is listed twice");
  c = good, c.names[2] = "a";
  rejects(c, "the image name 'a' is given twice");
  c = good, c.matches.pop_back();
  rejects(c, "matches must be M x 3");
  EXPECT_EQ(sql(dir / "db").number("SELECT count(*) FROM matches"), 0);
  // No pairs at all: nothing to write, and nothing fails.
  collection none;
  none.names = {"a"};
  colmap::write_database(dir / "db", none.view(), nullptr);
  none.offsets.clear();
  const colmap::new_database create{8, 8, {{{}, 0, 2}}};
  colmap::write_database(dir / "empty.db", none.view(), &create);
  EXPECT_EQ(sql(dir / "empty.db").number("SELECT count(*) FROM images"), 1);
}

// ---- keypoints that do not fit, names COLMAP cannot read, staged writes, signals ------------------

/// The collection of three images a.jpg, b.jpg, c.jpg of 4, 4 and 9 descriptors, one match a pair.
collection three_images() {
  collection c;
  c.names = {"a.jpg", "b.jpg", "c.jpg"};
  c.add(0, 1, {{3, 2}});
  c.add(0, 2, {{0, 8}});
  c.image_rows = {4, 4, 9};
  return c;
}

void run_sql(const fs::path& path, const std::string& script) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, script.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST_F(colmap_database, keypoints_that_do_not_fit_the_descriptors_are_refused) {
  const collection c = three_images();
  const fs::path path = dir / "db";
  // Each case: the keypoints table as it is made wrong, what the message says; the database unchanged.
  for (const auto& [script, what] : std::vector<std::pair<std::string, std::string>>{
           {"UPDATE keypoints SET rows = 5000, data = zeroblob(40000) WHERE image_id = 3",
            "the image c.jpg has 5000 keypoints in the database and 9 descriptors in the collection"},
           {"UPDATE keypoints SET rows = -5 WHERE image_id = 2", "the keypoints of b.jpg are not what COLMAP reads: rows -5"},
           {"DELETE FROM keypoints WHERE image_id = 1", "the image a.jpg has no keypoints in the database"},
           {"UPDATE keypoints SET data = zeroblob(8) WHERE image_id = 3",
            "the keypoints of c.jpg are not what COLMAP reads: rows 9, cols 2, 8 bytes of data"},
           {"UPDATE keypoints SET cols = 3, data = zeroblob(108) WHERE image_id = 3",
            "the keypoints of c.jpg are not what COLMAP reads: rows 9, cols 3"}}) {
    SCOPED_TRACE(script);
    fs::remove(path);
    make_colmap3_database(path, c.names, {4, 4, 9});
    colmap::write_database(path, c.view(), nullptr);  // as made, it fits
    run_sql(path, script);
    const std::string before = file_bytes(path);
    const std::string message = thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); });
    EXPECT_NE(message.find(what), std::string::npos) << message;
    EXPECT_EQ(file_bytes(path), before);
    EXPECT_EQ(listing(), std::vector<std::string>{"db"});  // no journal left
  }
  // Without the descriptor counts, 5000 keypoints only bound the indices.
  fs::remove(path);
  make_colmap3_database(path, c.names, {4, 4, 5000});
  collection unknown = c;
  unknown.image_rows.clear();
  colmap::write_database(path, unknown.view(), nullptr);
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); })
                .find("5000 keypoints in the database and 9 descriptors"), std::string::npos);

  // A new database: the keypoints given must be the descriptors' count, and finite.
  colmap::new_database create{8, 8, {{std::vector<float>(8, 1.0f), 4, 2}, {std::vector<float>(8, 1.0f), 4, 2},
                                     {std::vector<float>(16, 1.0f), 8, 2}}};
  EXPECT_NE(thrown<std::invalid_argument>([&] { colmap::write_database(dir / "new.db", c.view(), &create); })
                .find("the image c.jpg has 8 keypoints and 9 descriptors"), std::string::npos);
  create.image_keypoints[2] = {std::vector<float>(18, 1.0f), 9, 2};
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    create.image_keypoints[1].values[5] = bad;
    const std::string message =
        thrown<std::invalid_argument>([&] { colmap::write_database(dir / "new.db", c.view(), &create); });
    EXPECT_NE(message.find("the keypoints of b.jpg: keypoint 2 has"), std::string::npos) << message;
    EXPECT_NE(message.find("in column 1 (positions must be finite)"), std::string::npos) << message;
  }
  create.image_keypoints[1].values[5] = 2.0f;
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
  colmap::write_database(dir / "new.db", c.view(), &create);
  EXPECT_EQ(sql(dir / "new.db").number("SELECT count(*) FROM matches"), 2);
}

TEST_F(colmap_database, names_that_are_not_utf8_are_refused) {
  collection c = three_images();
  c.names[1] = std::string("b\xff\xfe.jpg");
  const fs::path path = dir / "db";
  make_colmap3_database(path, {"a.jpg", "c.jpg"}, {4, 9});
  const std::string before = file_bytes(path);
  const colmap::new_database create{8, 8, {{std::vector<float>(8), 4, 2}, {std::vector<float>(8), 4, 2},
                                           {std::vector<float>(18), 9, 2}}};
  for (const colmap::new_database* how : {static_cast<const colmap::new_database*>(nullptr), &create}) {
    const fs::path where = how == nullptr ? path : dir / "new.db";
    const std::string message = thrown<std::invalid_argument>([&] { colmap::write_database(where, c.view(), how); });
    EXPECT_NE(message.find("the image name 'b\\xff\\xfe.jpg' is not UTF-8"), std::string::npos) << message;
  }
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {  // overlong, surrogate, > U+10FFFF, cut short
    c.names[1] = bad;
    EXPECT_NE(thrown<std::invalid_argument>([&] { colmap::write_database(path, c.view(), nullptr); }), "") << bad;
  }
  c.names[1] = "b\xc3\xa9\xe2\x82\xac\xf0\x9f\x93\xb7.jpg";  // é € 📷: UTF-8, and not in the database
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(path, c.view(), nullptr); })
                .find("not in the database"), std::string::npos);
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
}

TEST_F(colmap_database, a_directory_is_no_database) {
  const collection c = three_images();
  fs::create_directory(dir / "sub.db");
  EXPECT_NE(thrown<std::runtime_error>([&] { colmap::write_database(dir / "sub.db", c.view(), nullptr); })
                .find("sub.db: is a directory"), std::string::npos);
}

TEST_F(colmap_database, a_staged_write_changes_nothing_until_its_commit) {
  const collection c = three_images();
  const fs::path path = dir / "db";
  make_colmap3_database(path, c.names, {4, 4, 9});
  const std::string before = file_bytes(path);
  {
    colmap::staged_database staged = colmap::stage_database(path, c.view(), nullptr);
    // (the transaction holds the write lock: a reader sees the database as it was)
    EXPECT_EQ(sql(path).number("SELECT count(*) FROM matches"), 0);
  }
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
  colmap::stage_database(path, c.view(), nullptr).commit();
  EXPECT_EQ(sql(path).number("SELECT count(*) FROM matches"), 2);

  const colmap::new_database create{8, 8, {{std::vector<float>(8), 4, 2}, {std::vector<float>(8), 4, 2},
                                           {std::vector<float>(18), 9, 2}}};
  {
    colmap::staged_database staged = colmap::stage_database(dir / "new.db", c.view(), &create);
    const auto files = listing();
    ASSERT_EQ(files.size(), 2u);  // the database and the new one's hidden temporary
    EXPECT_TRUE(files[0].starts_with(".new.db.tmp-")) << files[0];
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
  colmap::staged_database staged = colmap::stage_database(dir / "new.db", c.view(), &create);
  write_text(dir / "new.db", "appeared meanwhile");
  EXPECT_NE(thrown<std::runtime_error>([&] { staged.commit(); }).find("a file of that name appeared meanwhile"),
            std::string::npos);
  EXPECT_EQ(file_bytes(dir / "new.db"), "appeared meanwhile");
  EXPECT_EQ(listing(), (std::vector<std::string>{"db", "new.db"}));
}

/// A process id that runs no process (a child that has exited and been waited for).
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) std::_Exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST_F(colmap_database, a_new_database_removes_what_a_killed_run_left) {
  const collection c = three_images();
  const colmap::new_database create{8, 8, {{std::vector<float>(8), 4, 2}, {std::vector<float>(8), 4, 2},
                                           {std::vector<float>(18), 9, 2}}};
  // The temporaries' host tag, from one made here.
  const std::string mine = fs::path(files::temporary_name(dir.string(), "new.db")).filename().string();
  const std::string prefix = mine.substr(0, mine.rfind('-', mine.rfind('-') - 1) + 1);  // ".new.db.tmp-HOST-"
  const std::string dead = prefix + std::to_string(dead_pid()) + "-0";
  const std::string alive = prefix + std::to_string(::getppid()) + "-3";
  for (const std::string& name : {dead, dead + "-journal", alive, std::string(".new.db.tmp-elsewhere-1-0"),
                                  prefix + "notapid-0", std::string(".other.db") + prefix.substr(7) + "1-0"})
    write_text(dir / name, "left");
  colmap::write_database(dir / "new.db", c.view(), &create);
  const auto left = listing();
  EXPECT_EQ(std::count(left.begin(), left.end(), dead), 0) << "a dead process's temporary stays";
  EXPECT_EQ(std::count(left.begin(), left.end(), dead + "-journal"), 0);
  EXPECT_EQ(left.size(), 5u) << "only the dead process's files go: the live one's, another host's and other names stay";
  EXPECT_EQ(std::count(left.begin(), left.end(), alive), 1);
}

TEST_F(colmap_database, a_signal_while_the_matches_are_written_leaves_the_database_as_it_was) {
  // SIGTERM arrives inside a deferral (as the tool holds one around its writes): the write stops at
  // the next pair, the transaction is rolled back, then the signal ends the process.
  const collection c = three_images();
  const fs::path path = dir / "db";
  make_colmap3_database(path, c.names, {4, 4, 9});
  const std::string before = file_bytes(path);
  pid_t child = ::fork();
  if (child == 0) {
    const files::signal_deferral defer;
    ::raise(SIGTERM);
    if (files::deferred_signal() != SIGTERM) std::_Exit(3);
    try {
      colmap::stage_database(path, c.view(), nullptr).commit();
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("stopped by signal") == std::string::npos) std::_Exit(4);
      std::_Exit(5);  // the deferral is still held: it would end the process at its end
    }
    std::_Exit(6);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 5) << "status " << status;
  EXPECT_EQ(file_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"db"});
  // The deferral ends: the signal ends the process.
  child = ::fork();
  if (child == 0) {
    {
      const files::signal_deferral defer;
      ::raise(SIGTERM);
    }
    std::_Exit(0);
  }
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
}

}  // namespace
