#include "parse/sqlite_db.h"

#include <cstdio>
#include <cstring>

namespace pyprof::parse {

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

bool SqliteDb::open(const std::string& path, std::string& error) {
  path_ = path;
  // Check the file ourselves first: SQLite opens a missing or empty file "successfully".
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  char header[16] = {};
  size_t n = std::fread(header, 1, sizeof header, f);
  std::fclose(f);
  if (n == 0) {
    error = path + ": empty file (not an SQLite database)";
    return false;
  }
  if (n < sizeof header || std::memcmp(header, "SQLite format 3", 16) != 0) {
    error = path + ": not an SQLite database (expected an nsys, nvprof or pyprof .sqlite file)";
    return false;
  }
  // immutable=1: never take locks or look for a journal (the file may sit on read-only media
  // or belong to another user); the profile is not being written while we read it.
  std::string uri = "file:" + path + "?immutable=1";
  int rc = sqlite3_open_v2(uri.c_str(), &db_,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    error = path + ": cannot open database: " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    return false;
  }
  sqlite3_stmt* stmt = nullptr;
  rc = sqlite3_prepare_v2(db_, "SELECT name FROM sqlite_master WHERE type IN ('table','view')", -1,
                          &stmt, nullptr);
  if (rc != SQLITE_OK) {
    error = path + ": corrupt or unreadable database: " + sqlite3_errmsg(db_);
    return false;
  }
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const unsigned char* name = sqlite3_column_text(stmt, 0);
    if (name) tables_.insert(reinterpret_cast<const char*>(name));
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) {
    error = path + ": corrupt or unreadable database: " + sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

std::set<std::string> SqliteDb::columns(std::string_view table) const {
  std::set<std::string> out;
  if (!has_table(table)) return out;
  std::string sql = "PRAGMA table_info(\"" + std::string(table) + "\")";
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* name = sqlite3_column_text(stmt, 1);
    if (name) out.insert(reinterpret_cast<const char*>(name));
  }
  sqlite3_finalize(stmt);
  return out;
}

Statement SqliteDb::prepare(const std::string& sql, std::string& error) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    // The readers check tables and columns before they query, so this is a layout they did
    // not foresee; the message says what SQLite missed, not our SQL.
    error = std::string("unexpected database layout: ") + sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return Statement();
  }
  return Statement(stmt);
}

std::string SqliteDb::last_error() const { return db_ ? sqlite3_errmsg(db_) : "no database"; }

bool require_columns(const std::set<std::string>& have, const std::string& table,
                     std::initializer_list<const char*> names, std::string& error,
                     std::string_view what, std::string_view hint) {
  for (const char* name : names) {
    if (!have.count(name)) {
      error = std::string(what) + (what.empty() ? "" : " ") + "table " + table +
              " has no column '" + name + "'" + std::string(hint);
      return false;
    }
  }
  return true;
}

bool step_failed(const SqliteDb& db, const std::string& table, std::string& error,
                 std::string_view what) {
  error = "error reading " + std::string(what) + (what.empty() ? "" : " ") + "table " + table +
          ": " + db.last_error();
  return false;
}

}  // namespace pyprof::parse
