// Test helpers shared by the collector's tests: read an SQLite file back with the sqlite3 C API,
// temporary folders, and running a test app as a child process with its output in files.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace pyprof::collect::testing {

using Value = std::variant<std::nullptr_t, int64_t, double, std::string>;
using Row = std::vector<Value>;

inline bool is_null(const Value& value) { return std::holds_alternative<std::nullptr_t>(value); }
inline int64_t as_int(const Value& value) { return std::get<int64_t>(value); }
inline double as_double(const Value& value) { return std::get<double>(value); }
inline const std::string& as_text(const Value& value) { return std::get<std::string>(value); }

class TestDb {
 public:
  explicit TestDb(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~TestDb() { sqlite3_close(db_); }
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  std::vector<Row> query(const std::string& sql) const {
    std::vector<Row> rows;
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return rows;
    }
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
      Row row;
      for (int i = 0; i < sqlite3_column_count(statement); ++i) {
        switch (sqlite3_column_type(statement, i)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(statement, i)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(statement, i));
            break;
          case SQLITE_NULL:
            row.emplace_back(nullptr);
            break;
          default:
            row.emplace_back(
                std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, i)),
                            static_cast<size_t>(sqlite3_column_bytes(statement, i))));
        }
      }
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(statement);
    return rows;
  }

  // First column of the first row as an integer (-1 if there is none or it is NULL).
  int64_t scalar(const std::string& sql) const {
    const std::vector<Row> rows = query(sql);
    if (rows.empty() || rows[0].empty() || !std::holds_alternative<int64_t>(rows[0][0])) return -1;
    return as_int(rows[0][0]);
  }

  std::string text(const std::string& sql) const {
    const std::vector<Row> rows = query(sql);
    if (rows.empty() || rows[0].empty() || !std::holds_alternative<std::string>(rows[0][0])) {
      return "<none>";
    }
    return as_text(rows[0][0]);
  }

  int64_t stat(const std::string& name) const {
    return scalar("SELECT value FROM PYPROF_COLLECTOR_STATS WHERE name = '" + name + "'");
  }

  // PRAGMA integrity_check == "ok".
  bool intact() const { return text("PRAGMA integrity_check") == "ok"; }

 private:
  sqlite3* db_ = nullptr;
};

// A fresh folder under /tmp, removed (with its files) at destruction.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/pyprof_collect_test_XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = made != nullptr ? made : "/tmp";
  }
  ~TempDir() {
    const std::string command = "rm -rf '" + path_ + "'";
    if (path_ != "/tmp") static_cast<void>(std::system(command.c_str()));
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// META_DATA_CAPTURE value of `name` ("<none>" if absent).
inline std::string capture(const TestDb& db, const std::string& name) {
  return db.text("SELECT value FROM META_DATA_CAPTURE WHERE name = '" + name + "'");
}

// fork + execve of argv[0] with exactly `environment`, stdout and stderr into the two files, in
// `directory`. Returns the child's pid (exit 126: cannot chdir, 127: cannot exec).
inline pid_t spawn_with_output(std::vector<std::string> argv, std::vector<std::string> environment,
                               const std::string& out_path, const std::string& err_path,
                               const std::string& directory) {
  std::vector<char*> envp;
  for (std::string& variable : environment) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    if (chdir(directory.c_str()) != 0) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace pyprof::collect::testing
