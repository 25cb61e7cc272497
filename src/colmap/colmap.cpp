// write_database: the matches into an existing COLMAP database in one transaction, or into a new
// one built in a temporary file and renamed into place.
#include "colmap/colmap.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "colmap/detail.hpp"
#include "files/temporary_files.hpp"

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

/// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool is_utf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned c = *p;
    int more = 0;
    unsigned least = 0, code = 0;
    if (c < 0x80) {
      ++p;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      more = 1, least = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      more = 2, least = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      more = 3, least = 0x10000, code = c & 0x07;
    } else {
      return false;
    }
    if (end - p <= more) return false;
    for (int k = 1; k <= more; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
      code = (code << 6) | (p[k] & 0x3F);
    }
    if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    p += more + 1;
  }
  return true;
}

/// A name as messages show it: printable ASCII as it is, other bytes as \xNN.
std::string shown(std::string_view name) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// What a database needs of `m` beyond check_collection: UTF-8 names (COLMAP's readers, pycolmap
/// among them, decode them as UTF-8), a descriptor count per name where counts are given.
void check_for_database(const collection_matches& m) {
  for (const std::string& name : m.names)
    if (!is_utf8(name))
      throw std::invalid_argument("colmap: the image name '" + shown(name) +
                                  "' is not UTF-8: COLMAP and pycolmap read a database's names as UTF-8 and "
                                  "could not read this one (rename the file)");
  if (!m.image_rows.empty() && m.image_rows.size() != m.names.size())
    throw std::invalid_argument("colmap: " + std::to_string(m.names.size()) + " images need as many descriptor "
                                "counts, got " + std::to_string(m.image_rows.size()));
}

/// A signal held by a deferral (files::signal_deferral) stops the write at the next pair: the
/// transaction is rolled back or the temporary removed on the way out, then the signal ends the
/// process.
void stop_if_signalled(const std::string& db) {
  if (const int sig = files::deferred_signal(); sig != 0)
    throw std::runtime_error(db + ": stopped by signal " + std::to_string(sig) + " (" + strsignal(sig) +
                             "); the database is left as it was");
}

/// Writes every pair's matches: the keypoint indices checked against the images' keypoint rows,
/// the columns swapped where the first image has the larger id; and forgets the pair's verified
/// geometry when the database has that table.
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
    stop_if_signalled(db.label());
    const std::int32_t a = m.pairs[2 * p], b = m.pairs[2 * p + 1];
    const bool swap = ids[a] > ids[b];
    const std::int64_t begin = m.offsets[p], rows = m.offsets[p + 1] - begin;
    blob.resize(2 * static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int32_t* match = &m.matches[3 * static_cast<std::size_t>(begin + r)];
      for (int side = 0; side < 2; ++side) {
        const std::int32_t image = side == 0 ? a : b;
        const std::int64_t limit = keypoint_rows[image];
        if (match[side] < 0 || match[side] >= limit) {
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

/// Whether the file at `path` is a directory (a database path that names one).
bool names_a_directory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

}  // namespace

/// What a staged write holds: the open transaction of an existing database, or the new database's
/// temporary file.
struct staged_database::state {
  fs::path path;
  // An existing database.
  std::optional<connection> db;
  std::optional<detail::transaction> tx;
  // A new one: its temporary, listed for removal should a signal end the process.
  fs::path temporary;
  int listed = -1;
  bool committed = false;

  ~state() {
    if (!committed) undo();
    files::unlist_for_removal(listed);
  }

  /// Undoes what is not committed: ROLLBACK and close (an existing database; then the hot
  /// journal that a failed rollback left, an I/O error on a full disk say, applied by opening the
  /// database again), or the temporary removed (a new one). @return the journal still left
  /// beside the database ("" when none is).
  std::string undo() noexcept {
    tx.reset();
    const bool was_open = db.has_value();
    db.reset();
    if (!temporary.empty()) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      fs::remove(fs::path(temporary.string() + "-journal"), ignored);
      temporary.clear();
    }
    if (!was_open) return "";
    std::error_code ec;
    const auto left = [&] {
      for (const char* suffix : {"-journal", "-wal"})
        if (const std::string f = path.string() + suffix; fs::exists(f, ec)) return f;
      return std::string();
    };
    if (left().empty()) return "";
    try {  // a read-write open with a read applies a hot journal (or folds in a log), as COLMAP's next open would
      connection again(path, SQLITE_OPEN_READWRITE, path.string());
      again.exec("SELECT count(*) FROM sqlite_master", "applying the rollback journal");
    } catch (const std::exception&) {
    }
    return left();
  }

  /// Runs `step`; should it throw, undoes everything first and says so if a journal is left.
  template <class F>
  void or_undo(F&& step) {
    try {
      step();
    } catch (const std::exception& e) {
      const std::string journal = undo();
      if (journal.empty()) throw;
      if (journal.ends_with("-wal"))
        throw std::runtime_error(std::string(e.what()) + "; the database's write-ahead log " + journal +
                                 " is left beside it: it holds nothing of this run (SQLite ignores what was not "
                                 "committed), and the next open of the database folds it in or removes it");
      throw std::runtime_error(std::string(e.what()) + "; the database's rollback journal " + journal +
                               " is left beside it: SQLite applies it (the database as it was) the next time "
                               "the database is opened for writing -- keep the two together until then, a "
                               "copy of the database alone is not a database");
    }
  }
};

staged_database::staged_database(std::unique_ptr<state> s) : state_(std::move(s)) {}
staged_database::staged_database(staged_database&&) noexcept = default;
staged_database& staged_database::operator=(staged_database&&) noexcept = default;
staged_database::~staged_database() = default;

void staged_database::commit() {
  if (!state_) throw std::logic_error("colmap: a staged database committed twice");
  const files::signal_deferral defer;  // a signal now waits until the commit is done or undone
  const std::unique_ptr<state> s = std::move(state_);
  stop_if_signalled(s->path.string());
  if (s->tx) {
    s->or_undo([&] { s->tx->commit(); });
    s->committed = true;
    return;
  }
  // Into place, never over a file that appeared meanwhile (RENAME_NOREPLACE; where the file system
  // cannot, a hard link does the same).
  bool linked = false;
  if (::renameat2(AT_FDCWD, s->temporary.c_str(), AT_FDCWD, s->path.c_str(), RENAME_NOREPLACE) != 0) {
    int error = errno;
    if (error == EINVAL || error == ENOSYS) {
      error = ::link(s->temporary.c_str(), s->path.c_str()) == 0 ? 0 : errno;
      linked = error == 0;
    }
    if (error != 0) {
      throw std::runtime_error(s->path.string() + ": cannot move the new database into place: " +
                               (error == EEXIST ? std::string("a file of that name appeared meanwhile")
                                                : std::string(std::strerror(error))));
    }
  }
  if (linked) ::unlink(s->temporary.c_str());  // (the temporary was a second name of the database)
  s->temporary.clear();
  s->committed = true;
}

namespace {

/// An existing database: COLMAP's tables checked, the images found by name and their keypoints
/// checked, the matches written -- all in one transaction, left open for the commit.
void stage_existing(staged_database::state& s, const collection_matches& m) {
  const fs::path& path = s.path;
  if (names_a_directory(path)) throw std::runtime_error(path.string() + ": is a directory, not a COLMAP database");
  connection& db = s.db.emplace(path, SQLITE_OPEN_READWRITE, path.string());
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

  s.tx.emplace(db);
  statement find(db, "SELECT image_id FROM images WHERE name = ?", "looking up images by name");
  statement count(db, "SELECT rows, cols, length(data) FROM keypoints WHERE image_id = ?", "reading the keypoint counts");
  std::vector<std::int64_t> ids(m.names.size(), -1), keypoint_rows(m.names.size(), -1);
  std::vector<std::string_view> absent;
  for (std::size_t i = 0; i < m.names.size(); ++i) {
    find.bind(1, m.names[i]);
    if (!find.step()) {
      absent.push_back(m.names[i]);
      find.reset();
      continue;
    }
    ids[i] = find.column_int64(0);
    find.reset();
    count.bind(1, ids[i]);
    const std::string& name = m.names[i];
    if (!count.step()) {
      throw std::runtime_error(db.label() + ": the image " + name + " has no keypoints in the database: COLMAP "
                               "would index keypoints that do not exist (run COLMAP's feature extractor, or "
                               "make a new database with --image-size)");
    }
    const std::int64_t rows = count.column_int64(0), cols = count.column_int64(1), bytes = count.column_int64(2);
    count.reset();
    if (rows < 0 || (cols != 2 && cols != 4 && cols != 6) || bytes != rows * cols * std::int64_t(sizeof(float))) {
      throw std::runtime_error(db.label() + ": the keypoints of " + name + " are not what COLMAP reads: rows " +
                               std::to_string(rows) + ", cols " + std::to_string(cols) + ", " +
                               std::to_string(bytes) + " bytes of data (rows >= 0, 2, 4 or 6 columns of float32)");
    }
    if (!m.image_rows.empty() && rows != m.image_rows[i]) {
      throw std::runtime_error(db.label() + ": the image " + name + " has " + std::to_string(rows) +
                               " keypoints in the database and " + std::to_string(m.image_rows[i]) +
                               " descriptors in the collection: the descriptors are not those of the database's "
                               "keypoints, so the matches would index other keypoints");
    }
    keypoint_rows[i] = rows;
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
}

/// A new database: built in a hidden temporary file beside the path, complete (its own transaction
/// committed), waiting for the rename.
void stage_new(staged_database::state& s, const collection_matches& m, const new_database& create) {
  const fs::path& path = s.path;
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
    if (!m.image_rows.empty() && k.rows != m.image_rows[i]) {
      fail("the image " + m.names[i] + " has " + std::to_string(k.rows) + " keypoints and " +
           std::to_string(m.image_rows[i]) + " descriptors: each descriptor needs its keypoint");
    }
    // x and y (and what COLMAP reads of the shape) must be numbers: a NaN or infinite position
    // would reach COLMAP's geometric verification as it is.
    const int read = (k.cols == 2 || k.cols == 4 || k.cols == 6) ? k.cols : 2;
    for (std::int64_t r = 0; r < k.rows; ++r)
      for (int c = 0; c < read; ++c)
        if (const float v = k.values[static_cast<std::size_t>(r) * k.cols + c]; !std::isfinite(v))
          fail("the keypoints of " + m.names[i] + ": keypoint " + std::to_string(r) + " has " +
               (std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf") + " in column " + std::to_string(c) +
               " (positions must be finite)");
  }
  if (names_a_directory(path)) throw std::runtime_error(path.string() + ": is a directory (a new database is a file)");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    throw std::runtime_error(path.string() + ": already exists (a new database is never written over a file)");
  }
  const std::string dir = path.parent_path().empty() ? std::string(".") : path.parent_path().string();
  const std::string name = path.filename().string();
  files::remove_stale_temporaries(dir, name);  // what a killed run left
  const std::string temporary = files::temporary_name(dir, name);
  s.listed = files::list_for_removal(temporary);
  const int fd = ::open(temporary.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot create it: " + std::strerror(errno));
  ::close(fd);
  s.temporary = temporary;
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

}  // namespace

staged_database stage_database(const fs::path& db, const collection_matches& m, const new_database* create) {
  detail::check_collection(m);
  check_for_database(m);
  // A signal while the rows are written stops the write at the next pair, the database as it was.
  const files::signal_deferral defer;
  auto s = std::make_unique<staged_database::state>();
  s->path = db;
  if (create != nullptr) {
    stage_new(*s, m, *create);
  } else {
    s->or_undo([&] { stage_existing(*s, m); });
  }
  return staged_database(std::move(s));
}

void write_database(const fs::path& db, const collection_matches& m, const new_database* create) {
  stage_database(db, m, create).commit();
}

}  // namespace multireduce::colmap
