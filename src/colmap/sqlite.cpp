// SQLite as owning objects that throw (sqlite.hpp).
#include "colmap/sqlite.hpp"

#include <sqlite3.h>

#include <stdexcept>
#include <utility>
#include <vector>

namespace multireduce::colmap::detail {

namespace {

/// What a failure's code means to the user, before SQLite's own message.
std::string hint(int code) {
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return "not a COLMAP database (not an SQLite file)";
    case SQLITE_READONLY:
      return "not writable (read-only)";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "locked by another program (COLMAP's GUI, a matcher?)";
    case SQLITE_CANTOPEN:
      return "cannot be opened";
    case SQLITE_FULL:
      return "the disk is full";
    default:
      return {};
  }
}

}  // namespace

connection::connection(const std::filesystem::path& path, int flags, std::string label) : label_(std::move(label)) {
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    const std::string why = hint(rc);
    throw std::runtime_error(label_ + ": " + (why.empty() ? "" : why + ": ") + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another program writing it (COLMAP's GUI) holds the lock for moments: wait that long, not forever.
  sqlite3_busy_timeout(db_, 10000);
}

connection::~connection() { sqlite3_close_v2(db_); }

void connection::fail(std::string_view doing) const {
  const std::string why = hint(sqlite3_extended_errcode(db_));
  throw std::runtime_error(label_ + ": " + (why.empty() ? "" : why + ": ") + std::string(doing) + ": " +
                           sqlite3_errmsg(db_));
}

void connection::exec(const char* sql, std::string_view doing) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(doing);
}

bool connection::has_columns(std::string_view table, std::initializer_list<std::string_view> columns,
                             std::string* missing) {
  statement info(*this, "SELECT name FROM pragma_table_info(?)", "reading its tables");
  info.bind(1, table);
  std::vector<std::string> found;
  while (info.step()) found.push_back(info.column_text(0));
  if (found.empty()) {
    *missing = "no table `" + std::string(table) + "`";
    return false;
  }
  for (const std::string_view column : columns) {
    bool present = false;
    for (const std::string& f : found) present = present || f == column;
    if (!present) {
      *missing = "table `" + std::string(table) + "` has no column `" + std::string(column) + "`";
      return false;
    }
  }
  return true;
}

statement::statement(connection& db, std::string_view sql, std::string_view doing) : db_(db), doing_(doing) {
  if (sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK) {
    db_.fail(doing_);
  }
}

statement::~statement() { sqlite3_finalize(stmt_); }

statement& statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) db_.fail(doing_);
  return *this;
}

statement& statement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK) {
    db_.fail(doing_);
  }
  return *this;
}

statement& statement::bind_blob(int index, const void* data, std::size_t bytes) {
  // SQLite stores an empty blob given a null pointer as NULL: COLMAP writes zero-length blobs.
  static const char empty = 0;
  if (sqlite3_bind_blob64(stmt_, index, bytes == 0 ? &empty : data, bytes, SQLITE_STATIC) != SQLITE_OK) {
    db_.fail(doing_);
  }
  return *this;
}

bool statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(doing_);
}

void statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t statement::column_int64(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string statement::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_, column);
  return text != nullptr ? std::string(reinterpret_cast<const char*>(text),
                                       static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
                         : std::string();
}

transaction::transaction(connection& db) : db_(db) { db_.exec("BEGIN IMMEDIATE", "starting a transaction"); }

transaction::~transaction() {
  if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void transaction::commit() {
  db_.exec("COMMIT", "committing");
  open_ = false;
}

}  // namespace multireduce::colmap::detail
