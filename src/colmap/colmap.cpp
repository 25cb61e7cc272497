// write_database: the matches into an existing COLMAP database in one transaction, or into a new
// one built in a temporary file and renamed into place.
#include "colmap/colmap.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "colmap/detail.hpp"

namespace multireduce::colmap {

namespace fs = std::filesystem;

namespace detail {

void check_collection(const collection_matches& m) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("colmap: " + what); };
  if (m.names.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) fail("too many images");
  if (m.pairs.size() % 2 != 0) fail("pairs must be P x 2, got " + std::to_string(m.pairs.size()) + " values");
  if (m.matches.size() % 3 != 0) fail("matches must be M x 3, got " + std::to_string(m.matches.size()) + " values");
  const std::size_t count = m.pairs.size() / 2;
  const auto rows = static_cast<std::int64_t>(m.matches.size() / 3);
  if (m.offsets.size() != count + 1 && !(count == 0 && m.offsets.empty())) {
    fail(std::to_string(count) + " pairs need " + std::to_string(count + 1) + " offsets, got " +
         std::to_string(m.offsets.size()));
  }
  const auto n = static_cast<std::int64_t>(m.names.size());
  std::vector<std::int64_t> keys(count);
  for (std::size_t p = 0; p < count; ++p) {
    const std::int32_t a = m.pairs[2 * p], b = m.pairs[2 * p + 1];
    const std::string which = "pair " + std::to_string(p) + " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
    if (a < 0 || b < 0 || a >= n || b >= n) fail(which + ": an image index out of range of the " +
                                                 std::to_string(n) + " names");
    if (a >= b) fail(which + ": the first image must come before the second");
    if (m.offsets[p] < 0 || m.offsets[p] > m.offsets[p + 1] || m.offsets[p + 1] > rows) {
      fail(which + ": its offsets [" + std::to_string(m.offsets[p]) + ", " + std::to_string(m.offsets[p + 1]) +
           ") are not a range of the " + std::to_string(rows) + " matches");
    }
    keys[p] = a * n + b;
  }
  std::sort(keys.begin(), keys.end());
  if (const auto twice = std::adjacent_find(keys.begin(), keys.end()); twice != keys.end()) {
    fail("pair (" + std::to_string(*twice / n) + ", " + std::to_string(*twice % n) + ") is listed twice");
  }
  std::vector<std::string_view> sorted(m.names.begin(), m.names.end());
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    fail("the image name '" + std::string(*twice) + "' is given twice");
  }
}

}  // namespace detail

namespace {

using detail::connection;
using detail::statement;

/// Writes every pair's matches: the keypoint indices checked against the images' keypoint rows
/// (-1: unknown), the columns swapped where the first image has the larger id; and forgets the
/// pair's verified geometry when the database has that table.
void write_pairs(connection& db, const collection_matches& m, const std::vector<std::int64_t>& ids,
                 const std::vector<std::int64_t>& keypoint_rows, bool forget_geometries) {
  statement insert(db, "INSERT OR REPLACE INTO matches(pair_id, rows, cols, data) VALUES(?, ?, 2, ?)",
                   "writing matches");
  std::optional<statement> forget;
  if (forget_geometries) {
    forget.emplace(db, "DELETE FROM two_view_geometries WHERE pair_id = ?", "removing a replaced pair's geometry");
  }
  std::vector<std::uint32_t> blob;
  for (std::size_t p = 0; p + 1 < m.offsets.size(); ++p) {
    const std::int32_t a = m.pairs[2 * p], b = m.pairs[2 * p + 1];
    const bool swap = ids[a] > ids[b];
    const std::int64_t begin = m.offsets[p], rows = m.offsets[p + 1] - begin;
    blob.resize(2 * static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int32_t* match = &m.matches[3 * static_cast<std::size_t>(begin + r)];
      for (int side = 0; side < 2; ++side) {
        const std::int32_t image = side == 0 ? a : b;
        const std::int64_t limit = keypoint_rows[image];
        if (match[side] < 0 || (limit >= 0 && match[side] >= limit)) {
          throw std::runtime_error(
              db.label() + ": pair (" + m.names[a] + ", " + m.names[b] + "), match " + std::to_string(r) +
              ": keypoint " + std::to_string(match[side]) + " of " + m.names[image] +
              (match[side] < 0 ? " is negative" : " is out of range (it has " + std::to_string(limit) + " keypoints)"));
        }
        blob[2 * r + (side ^ static_cast<int>(swap))] = static_cast<std::uint32_t>(match[side]);
      }
    }
    const std::int64_t id = pair_id(ids[a], ids[b]);
    insert.bind(1, id).bind(2, rows).bind_blob(3, blob.data(), blob.size() * sizeof(std::uint32_t)).run();
    insert.reset();
    if (forget) {
      forget->bind(1, id).run();
      forget->reset();
    }
  }
}

/// An existing database: COLMAP's tables checked, the images found by name, all in one transaction.
void write_existing(const fs::path& path, const collection_matches& m) {
  connection db(path, SQLITE_OPEN_READWRITE, path.string());
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    throw std::runtime_error(db.label() + ": not writable (a read-only file or directory)");
  }
  std::string missing;
  if (!db.has_columns("images", {"image_id", "name", "camera_id"}, &missing) ||
      !db.has_columns("keypoints", {"image_id", "rows", "cols", "data"}, &missing) ||
      !db.has_columns("matches", {"pair_id", "rows", "cols", "data"}, &missing)) {
    throw std::runtime_error(db.label() + ": not a COLMAP database: " + missing);
  }
  const bool geometries = db.has_columns("two_view_geometries", {"pair_id"}, &missing);

  detail::transaction tx(db);
  statement find(db, "SELECT image_id FROM images WHERE name = ?", "looking up images by name");
  statement count(db, "SELECT rows FROM keypoints WHERE image_id = ?", "reading the keypoint counts");
  std::vector<std::int64_t> ids(m.names.size(), -1), keypoint_rows(m.names.size(), -1);
  std::vector<std::string_view> absent;
  for (std::size_t i = 0; i < m.names.size(); ++i) {
    find.bind(1, m.names[i]);
    if (find.step()) {
      ids[i] = find.column_int64(0);
      count.bind(1, ids[i]);
      if (count.step()) keypoint_rows[i] = count.column_int64(0);
      count.reset();
    } else {
      absent.push_back(m.names[i]);
    }
    find.reset();
  }
  if (!absent.empty()) {
    std::string list;
    for (std::size_t i = 0; i < std::min<std::size_t>(absent.size(), 5); ++i) {
      list += (i == 0 ? "" : ", ") + std::string(absent[i]);
    }
    if (absent.size() > 5) list += ", ...";
    throw std::runtime_error(db.label() + ": " + std::to_string(absent.size()) + " of the " +
                             std::to_string(m.names.size()) + " images are not in the database (" + list +
                             "); COLMAP names an image by its path relative to the image folder");
  }
  write_pairs(db, m, ids, keypoint_rows, geometries);
  tx.commit();
}

std::atomic<unsigned> temporaries{0};

/// A new database: built in a hidden temporary file beside `path`, renamed into place when complete.
void write_new(const fs::path& path, const collection_matches& m, const new_database& create) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("colmap: " + what); };
  if (create.width <= 0 || create.height <= 0) {
    fail("a new database needs the image size, got " + std::to_string(create.width) + " x " +
         std::to_string(create.height));
  }
  if (create.image_keypoints.size() != m.names.size()) {
    fail("a new database needs keypoints for each of the " + std::to_string(m.names.size()) + " images, got " +
         std::to_string(create.image_keypoints.size()));
  }
  for (std::size_t i = 0; i < m.names.size(); ++i) {
    const keypoints& k = create.image_keypoints[i];
    if (k.rows < 0 || k.cols < 2 || k.values.size() != static_cast<std::size_t>(k.rows) * k.cols) {
      fail("the keypoints of " + m.names[i] + " are not rows x cols (cols >= 2): " + std::to_string(k.rows) +
           " x " + std::to_string(k.cols) + " with " + std::to_string(k.values.size()) + " values");
    }
  }
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    throw std::runtime_error(path.string() + ": already exists (a new database is never written over a file)");
  }
  const fs::path temporary = path.parent_path() / ("." + path.filename().string() + ".tmp-" +
                                                   std::to_string(::getpid()) + "-" + std::to_string(temporaries++));
  const int fd = ::open(temporary.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot create it: " + std::strerror(errno));
  ::close(fd);
  // Removed on the way out, whatever happens: after the rename it is gone already, after the link
  // it is a second name.
  struct remove_on_exit {
    const fs::path& file;
    ~remove_on_exit() {
      std::error_code ignored;
      fs::remove(file, ignored);
      fs::remove(fs::path(file.string() + "-journal"), ignored);
    }
  } cleanup{temporary};
  {
    connection db(temporary, SQLITE_OPEN_READWRITE, path.string());
    // The rollback journal in memory (a failure deletes the file anyway), nothing beside the file
    // to rename with it; COLMAP switches the database to WAL when it opens it.
    db.exec("PRAGMA journal_mode = MEMORY", "setting the journal");
    db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
    detail::transaction tx(db);
    std::vector<std::int64_t> ids, keypoint_rows;
    detail::create_database(db, m.names, create, ids, keypoint_rows);
    write_pairs(db, m, ids, keypoint_rows, false);
    tx.commit();
  }
  // Into place, never over a file that appeared meanwhile (RENAME_NOREPLACE; where the file system
  // cannot, a hard link does the same).
  if (::renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    int error = errno;
    if (error == EINVAL || error == ENOSYS) {
      error = ::link(temporary.c_str(), path.c_str()) == 0 ? 0 : errno;
    }
    if (error != 0) {
      throw std::runtime_error(path.string() + ": cannot move the new database into place: " +
                               (error == EEXIST ? std::string("a file of that name appeared meanwhile")
                                                : std::string(std::strerror(error))));
    }
  }
}

}  // namespace

void write_database(const fs::path& db, const collection_matches& m, const new_database* create) {
  detail::check_collection(m);
  if (create != nullptr) {
    write_new(db, m, *create);
  } else {
    write_existing(db, m);
  }
}

}  // namespace multireduce::colmap
