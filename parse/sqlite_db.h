// A read-only SQLite database with schema discovery: the readers select columns by name and
// treat every table and column as optional, because Nsight Systems changes its export schema
// in almost every release (trace-formats.md §1.2).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

namespace pyprof::parse {

class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept {
    if (this != &other) {
      sqlite3_finalize(stmt_);
      stmt_ = other.stmt_;
      other.stmt_ = nullptr;
    }
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool valid() const { return stmt_ != nullptr; }
  // SQLITE_ROW, SQLITE_DONE or an error code (the database's message says why).
  int step() { return sqlite3_step(stmt_); }
  void reset() { sqlite3_reset(stmt_); }
  void bind_int64(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  // The column's integer, or `fallback` when it is NULL. SQLite reads NULL as 0, so only a 0
  // costs the second call that tells NULL from 0 (the readers' hot loops read millions).
  int64_t int64_or(int col, int64_t fallback) const {
    const int64_t value = int64(col);
    return value != 0 || !is_null(col) ? value : fallback;
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  // Text or blob bytes; NULs inside are kept. Valid until the next step().
  std::string_view text(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
             : std::string_view();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteDb {
 public:
  SqliteDb() = default;
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Opens `path` read-only and checks that it is an SQLite database (reads the schema). Paths
  // may hold any character. A rollback journal beside it (a write cut off) is undone on a copy.
  // On failure returns false and a one-line reason naming the file.
  bool open(const std::string& path, std::string& error);
  bool has_table(std::string_view table) const { return tables_.count(std::string(table)) > 0; }
  // Column names of `table` (PRAGMA table_info); empty if the table does not exist.
  std::set<std::string> columns(std::string_view table) const;
  // Prepares `sql`; an invalid statement (and `error` set) on failure.
  Statement prepare(const std::string& sql, std::string& error) const;
  // The database's last error message.
  std::string last_error() const;
  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // The file SQLite reads: path(), or a private copy where a cut-off write was undone (a second
  // connection to the same database opens this).
  const std::string& opened_path() const { return opened_path_; }
  // What the reader should warn about opening the file (a cut-off write), or empty.
  const std::string& open_note() const { return note_; }

 private:
  bool recover_copy(const std::string& path);

  sqlite3* db_ = nullptr;
  std::string path_, opened_path_, note_;
  std::string recovered_dir_;  // the private copy's folder, removed with this object
  std::set<std::string> tables_;
};

// Helpers both readers use, so that their messages read alike. `what` names the kind of
// database in messages ("nvprof table X ..."; empty for nsys/pyprof files).

// False, with "table T has no column 'c'<hint>", unless `table` has every column in `names`.
bool require_columns(const std::set<std::string>& have, const std::string& table,
                     std::initializer_list<const char*> names, std::string& error,
                     std::string_view what = "", std::string_view hint = "");
// False, with "error reading table T: <SQLite's message>", after a failed step.
bool step_failed(const SqliteDb& db, const std::string& table, std::string& error,
                 std::string_view what = "");
// An id or size column as int32; -1 when it does not fit.
inline int32_t to_i32(int64_t v) {
  return (v < INT32_MIN || v > INT32_MAX) ? -1 : static_cast<int32_t>(v);
}

}  // namespace pyprof::parse
