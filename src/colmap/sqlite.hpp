// What colmap.cpp and new_database.cpp share: SQLite's connection and prepared statements as
// owning objects whose failures throw std::runtime_error naming the database and what was being
// done, and a transaction rolled back unless committed. Internal to multireduce_colmap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace multireduce::colmap::detail {

/// An open database: sqlite3_open_v2 with `flags`; closed by the destructor.
class connection {
 public:
  connection(const std::filesystem::path& path, int flags, std::string label);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  sqlite3* get() const { return db_; }
  /// What messages call it: the path as the caller gave it.
  const std::string& label() const { return label_; }
  /// Runs SQL without results (pragmas, BEGIN, schema).
  void exec(const char* sql, std::string_view doing);
  /// Throws std::runtime_error "LABEL: DOING: SQLite's message".
  [[noreturn]] void fail(std::string_view doing) const;
  /// Whether the table exists and has every one of the columns.
  bool has_columns(std::string_view table, std::initializer_list<std::string_view> columns, std::string* missing);

 private:
  sqlite3* db_ = nullptr;
  std::string label_;
};

/// A prepared statement: bind, step, read columns; reset() makes it ready for the next row.
class statement {
 public:
  statement(connection& db, std::string_view sql, std::string_view doing);
  ~statement();
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int index, std::int64_t value);
  statement& bind(int index, std::string_view text);
  statement& bind_blob(int index, const void* data, std::size_t bytes);
  /// Steps once: true for a row, false when done.
  bool step();
  /// Steps to the end (a write).
  void run() {
    while (step()) {
    }
  }
  void reset();
  std::int64_t column_int64(int column) const;
  std::string column_text(int column) const;

 private:
  connection& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string doing_;
};

/// BEGIN IMMEDIATE (the write lock now, so that a busy database fails before any work); ROLLBACK
/// in the destructor unless commit() ran.
class transaction {
 public:
  explicit transaction(connection& db);
  ~transaction();
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  void commit();

 private:
  connection& db_;
  bool open_ = true;
};

}  // namespace multireduce::colmap::detail
