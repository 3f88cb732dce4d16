#include "parse/sqlite_db.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace pyprof::parse {

namespace {

// SQLite's URI for `path`: every byte but unreserved ones and '/' percent-encoded, so names with
// '?', '#' or '%' open as themselves, and leading slashes folded into one ("//x" would be read
// as an authority).
std::string file_uri(const std::string& path, const char* query) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  size_t i = 0;
  if (!path.empty() && path[0] == '/') {
    uri += '/';
    while (i < path.size() && path[i] == '/') ++i;
  }
  for (; i < path.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri + "?" + query;
}

bool nonempty_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

}  // namespace

SqliteDb::~SqliteDb() {
  sqlite3_close(db_);
  if (!recovered_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(recovered_dir_, ignored);
  }
}

bool SqliteDb::open(const std::string& path, std::string& error) {
  path_ = path;
  opened_path_ = path;
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
  int rc = SQLITE_OK;
  if (nonempty_file(path + "-journal") && recover_copy(path)) {
    // Opening the copy read-write lets SQLite roll its journal back on the first read.
    rc = sqlite3_open_v2(file_uri(opened_path_, "mode=rw").c_str(), &db_,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  } else {
    // immutable=1: never take locks or look for a journal (the file may sit on read-only media
    // or belong to another user); the profile is not being written while we read it.
    rc = sqlite3_open_v2(file_uri(path, "immutable=1").c_str(), &db_,
                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  }
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

// A rollback journal beside the file means a write was cut off (the program was killed while
// it committed): the file may hold half of that transaction. SQLite undoes it on the next
// read-write open, but parse never writes the user's files, so the undo runs on a private copy
// of both. When no copy can be made, the file is read as it is, with a warning.
bool SqliteDb::recover_copy(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string journal = path + "-journal";
  auto cannot_copy = [&](const std::string& why) {
    note_ = journal +
            " exists (a write was cut off) and no temporary copy could be made to undo it (" + why +
            "): the file is read as it is, and its last transaction may be half written";
    return false;
  };
  const char* tmp = std::getenv("TMPDIR");
  std::string dir_template =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/pyprof-parse-recovered-XXXXXX";
  if (!::mkdtemp(dir_template.data())) return cannot_copy(std::strerror(errno));
  recovered_dir_ = dir_template;
  const std::string copy = recovered_dir_ + "/profile.sqlite";
  std::error_code ec;
  fs::copy_file(path, copy, ec);
  if (!ec) fs::copy_file(journal, copy + "-journal", ec);
  if (ec) {
    std::error_code ignored;
    fs::remove_all(recovered_dir_, ignored);
    recovered_dir_.clear();
    return cannot_copy(ec.message());
  }
  opened_path_ = copy;
  note_ = journal +
          " exists: the profiled program was killed while it wrote, so its last "
          "transaction was undone (on a temporary copy; the file is left as it is)";
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
