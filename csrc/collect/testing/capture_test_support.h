// What the collector's end-to-end CUPTI tests share (cupti_capture_test.cpp,
// cupti_library_test.cpp): running testing/cupti_test_app (or the launcher) as a child process
// with a clean environment, reading the facts it prints, and reading the database it wrote.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/nsys_schema.h"
#include "test_db.h"

extern char** environ;

namespace pyprof::collect::testing {

inline constexpr auto kAppTimeout = std::chrono::seconds(120);

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline size_t lines_containing(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (const std::string& line : lines_of(text)) count += line.find(needle) != std::string::npos;
  return count;
}

inline uint64_t gtid(int64_t pid, int64_t tid) {
  return nsys::global_tid(static_cast<uint32_t>(pid), static_cast<uint32_t>(tid));
}

inline uint64_t gpid(int64_t pid) { return nsys::global_pid(static_cast<uint32_t>(pid)); }

// One "launch=<correlation id> <what> <range> <tid>" fact: a CUDA call the app made inside
// the NVTX range <range> ("-": none) on OS thread <tid>.
struct Launch {
  int64_t correlation = 0;
  std::string what;  // kernel, untimed-kernel, memcpy, memset, sync
  std::string range;
  int64_t tid = 0;
};

struct Facts {
  std::multimap<std::string, std::string> values;
  std::vector<Launch> launches;

  int64_t number(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? -1 : std::stoll(it->second);
  }
  std::string text(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? "<missing>" : it->second;
  }
  std::vector<Launch> launches_of(const std::string& what) const {
    std::vector<Launch> selected;
    for (const Launch& launch : launches) {
      if (launch.what == what) selected.push_back(launch);
    }
    return selected;
  }
};

inline Facts facts_of(const std::string& out) {
  Facts facts;
  for (const std::string& line : lines_of(out)) {
    const size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = line.substr(0, equals);
    const std::string value = line.substr(equals + 1);
    facts.values.emplace(key, value);
    if (key != "launch") continue;
    const size_t first = value.find(' ');
    const size_t second = value.find(' ', first + 1);
    const size_t last = value.rfind(' ');
    Launch launch;
    launch.correlation = std::stoll(value.substr(0, first));
    launch.what = value.substr(first + 1, second - first - 1);
    launch.range = value.substr(second + 1, last - second - 1);
    launch.tid = std::stoll(value.substr(last + 1));
    facts.launches.push_back(launch);
  }
  return facts;
}

struct AppRun {
  pid_t pid = -1;
  int status = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
  std::string out_path;
  std::string err_path;

  bool exited_ok() const { return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string describe() const {
    return (timed_out ? "TIMED OUT (killed)\n" : "status " + std::to_string(status) + "\n") +
           "stdout:\n" + out + "\nstderr:\n" + err;
  }
};

// Runs a command with a clean environment: PYPROF_*, RANK, the injection variables and
// FAKE_CUPTI_* removed, then `env` added (an empty value leaves the variable out).
class Runner {
 public:
  explicit Runner(const TempDir& dir) : dir_(dir) {}

  AppRun start(std::vector<std::string> argv, const std::map<std::string, std::string>& env) {
    AppRun run;
    const int index = runs_++;
    run.out_path = dir_.file("run" + std::to_string(index) + ".out");
    run.err_path = dir_.file("run" + std::to_string(index) + ".err");
    std::vector<std::string> variables;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string variable = *entry;
      bool ours = false;
      for (const char* prefix :
           {"PYPROF_", "RANK=", "NVTX_INJECTION", "CUDA_INJECTION", "FAKE_CUPTI_"}) {
        ours = ours || variable.rfind(prefix, 0) == 0;
      }
      if (!ours) variables.push_back(variable);
    }
    for (const auto& [name, value] : env) {
      if (!value.empty()) variables.push_back(name + "=" + value);
    }
    run.pid = spawn_with_output(std::move(argv), std::move(variables), run.out_path, run.err_path,
                                dir_.path());
    return run;
  }

  // Waits (at most kAppTimeout: a deadlock fails the test instead of hanging it).
  void wait(AppRun& run) {
    const auto deadline = std::chrono::steady_clock::now() + kAppTimeout;
    for (;;) {
      const pid_t done = waitpid(run.pid, &run.status, WNOHANG);
      if (done == run.pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(run.pid, SIGKILL);
        waitpid(run.pid, &run.status, 0);
        run.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    run.out = read_file(run.out_path);
    run.err = read_file(run.err_path);
  }

  AppRun run(std::vector<std::string> argv, const std::map<std::string, std::string>& env) {
    AppRun run = start(std::move(argv), env);
    wait(run);
    return run;
  }

 private:
  const TempDir& dir_;
  int runs_ = 0;
};

// Rows of a table as column name -> value.
using NamedRow = std::map<std::string, Value>;

inline std::vector<std::string> columns_of(const TestDb& db, const std::string& table) {
  std::vector<std::string> columns;
  for (const Row& row : db.query("PRAGMA table_info(" + table + ")")) {
    columns.push_back(as_text(row[1]));
  }
  return columns;
}

inline std::vector<NamedRow> rows_of(const TestDb& db, const std::string& table,
                                     const std::string& where = "") {
  const std::vector<std::string> columns = columns_of(db, table);
  std::vector<NamedRow> rows;
  for (const Row& row :
       db.query("SELECT * FROM " + table + (where.empty() ? "" : " WHERE ") + where)) {
    NamedRow named;
    for (size_t i = 0; i < columns.size() && i < row.size(); ++i) named[columns[i]] = row[i];
    rows.push_back(std::move(named));
  }
  return rows;
}

// Integer column (-1000000 when missing, NULL or not an integer, so comparisons fail loudly).
inline int64_t num(const NamedRow& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end() || !std::holds_alternative<int64_t>(it->second)) return -1'000'000;
  return as_int(it->second);
}

inline bool null_at(const NamedRow& row, const std::string& column) {
  const auto it = row.find(column);
  return it != row.end() && is_null(it->second);
}

inline std::string text_at(const NamedRow& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end() || !std::holds_alternative<std::string>(it->second)) return "<not text>";
  return as_text(it->second);
}

// The StringIds value a column refers to (nsys stores names as StringIds ids).
inline std::string string_id(const TestDb& db, const NamedRow& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end()) return "<no column " + column + ">";
  if (!std::holds_alternative<int64_t>(it->second)) return "<" + column + " is not a StringIds id>";
  return db.text("SELECT value FROM StringIds WHERE id = " + std::to_string(as_int(it->second)));
}

// Rows in `table`; 0 when the table does not exist (nsys, and we, create tables lazily).
inline int64_t row_count(const TestDb& db, const std::string& table) {
  if (db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" + table +
                "'") != 1) {
    return 0;
  }
  return db.scalar("SELECT count(*) FROM " + table);
}

inline std::map<int64_t, NamedRow> by_correlation(const std::vector<NamedRow>& rows) {
  std::map<int64_t, NamedRow> indexed;
  for (const NamedRow& row : rows) indexed[num(row, "correlationId")] = row;
  return indexed;
}

// NVTX push/pop and start/end ranges by message.
struct Range {
  int64_t start = 0;
  std::optional<int64_t> end;
  uint64_t global_tid = 0;
};

inline std::multimap<std::string, Range> ranges_of(const TestDb& db) {
  std::multimap<std::string, Range> ranges;
  for (const Row& row : db.query("SELECT coalesce(e.text, s.value, ''), e.start, e.end, "
                                 "e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s "
                                 "ON s.id = e.textId WHERE e.eventType IN (59, 60)")) {
    Range range;
    range.start = as_int(row[1]);
    if (!is_null(row[2])) range.end = as_int(row[2]);
    range.global_tid = static_cast<uint64_t>(as_int(row[3]));
    ranges.emplace(as_text(row[0]), range);
  }
  return ranges;
}

inline std::set<std::string> names_of(const std::multimap<std::string, Range>& ranges) {
  std::set<std::string> names;
  for (const auto& [name, range] : ranges) names.insert(name);
  return names;
}

inline std::set<std::string> kernel_names(const TestDb& db) {
  std::set<std::string> names;
  if (row_count(db, "CUPTI_ACTIVITY_KIND_KERNEL") == 0) return names;
  for (const NamedRow& row : rows_of(db, "CUPTI_ACTIVITY_KIND_KERNEL")) {
    names.insert(string_id(db, row, "mangledName"));
  }
  return names;
}

// What every run must satisfy: the fake saw no breach of CUPTI's rules.
inline void expect_no_violation(const AppRun& run, const Facts& facts) {
  EXPECT_EQ(lines_containing(run.err, "fake_cupti: contract violation"), 0u) << run.err;
  EXPECT_EQ(facts.number("fake.contract_violations"), 0) << run.describe();
}

// Kernel and API row of every launch, the API row inside the NVTX range the app had open
// (same thread, same clock), kernels after their launch call.
inline void expect_launches_in_ranges(const TestDb& db, const Facts& facts,
                                      const std::vector<Launch>& launches) {
  const int64_t pid = facts.number("pid");
  const auto api = by_correlation(rows_of(db, "CUPTI_ACTIVITY_KIND_RUNTIME"));
  const auto kernels = by_correlation(rows_of(db, "CUPTI_ACTIVITY_KIND_KERNEL"));
  const auto ranges = ranges_of(db);
  for (const Launch& launch : launches) {
    SCOPED_TRACE("launch " + std::to_string(launch.correlation) + " " + launch.what + " in '" +
                 launch.range + "'");
    const auto call = api.find(launch.correlation);
    ASSERT_NE(call, api.end()) << "no CUPTI_ACTIVITY_KIND_RUNTIME row";
    const NamedRow& row = call->second;
    EXPECT_EQ(static_cast<uint64_t>(num(row, "globalTid")), gtid(pid, launch.tid));
    EXPECT_LT(num(row, "start"), num(row, "end"));
    EXPECT_EQ(num(row, "returnValue"), 0);
    if (launch.range != "-") {
      bool inside = false;
      for (auto [it, end] = ranges.equal_range(launch.range); it != end; ++it) {
        const Range& range = it->second;
        inside = inside ||
                 (range.global_tid == gtid(pid, launch.tid) && range.start <= num(row, "start") &&
                  range.end && num(row, "end") <= *range.end);
      }
      EXPECT_TRUE(inside) << "API call [" << num(row, "start") << ", " << num(row, "end")
                          << "] is not inside NVTX range '" << launch.range << "' of its thread";
    }
    if (launch.what == "kernel") {
      const auto kernel = kernels.find(launch.correlation);
      ASSERT_NE(kernel, kernels.end()) << "no CUPTI_ACTIVITY_KIND_KERNEL row";
      EXPECT_EQ(static_cast<uint64_t>(num(kernel->second, "globalPid")), gpid(pid));
      EXPECT_GT(num(kernel->second, "start"), num(row, "end"));
      EXPECT_GT(num(kernel->second, "end"), num(kernel->second, "start"));
    }
  }
}

// A CUPTI release the fake libcupti plays (FAKE_CUPTI_VERSION): what its libcupti's
// cuptiGetVersion() returns, and so which records it writes (fake_cupti_records.h).
struct CuptiRelease {
  std::string name;         // the test name's suffix
  std::string api_version;  // FAKE_CUPTI_VERSION
};
inline const CuptiRelease kCuda13_0{"Cuda13_0", "130001"};
inline const CuptiRelease kCuda12_9{"Cuda12_9", "28"};
inline const CuptiRelease kCuda12_0{"Cuda12_0", "18"};  // and 12.1, which reports 18 too

inline void PrintTo(const CuptiRelease& release, std::ostream* out) {
  *out << release.name << " (CUPTI API version " << release.api_version << ")";
}

inline std::string release_name(const ::testing::TestParamInfo<CuptiRelease>& info) {
  return info.param.name;
}

// Runs cupti_test_app (CUPTI_TEST_APP) with both injections of the collector
// (PYPROF_COLLECT_LIBRARY) and the fake libcupti (FAKE_CUPTI_LIBRARY) playing the release the
// test is instantiated with.
class CuptiAppTest : public ::testing::TestWithParam<CuptiRelease> {
 protected:
  // cupti_test_app <scenario> [variant]; `env` adds to or overrides the defaults (an empty
  // value leaves a variable out).
  AppRun run_app(const std::string& scenario, const std::map<std::string, std::string>& env = {},
                 const std::string& variant = "") {
    AppRun run = start_app(scenario, env, variant);
    runner_.wait(run);
    return run;
  }

  AppRun start_app(const std::string& scenario, const std::map<std::string, std::string>& env,
                   const std::string& variant = "") {
    std::map<std::string, std::string> all = fake_cupti_env();
    all["NVTX_INJECTION64_PATH"] = PYPROF_COLLECT_LIBRARY;
    all["CUDA_INJECTION64_PATH"] = PYPROF_COLLECT_LIBRARY;
    all["PYPROF_OUTPUT"] = base_;
    for (const auto& [name, value] : env) all[name] = value;
    std::vector<std::string> argv = {CUPTI_TEST_APP, scenario};
    if (!variant.empty()) argv.push_back(variant);
    return runner_.start(argv, all);
  }

  // The fake libcupti, playing this test's release.
  std::map<std::string, std::string> fake_cupti_env() const {
    return {{"PYPROF_CUPTI_LIBRARY", FAKE_CUPTI_LIBRARY},
            {"FAKE_CUPTI_VERSION", GetParam().api_version}};
  }

  bool cuda12() const { return std::stoul(GetParam().api_version) < 130000; }

  std::string db_path() const { return base_ + ".sqlite"; }

  TempDir dir_;
  std::string base_ = dir_.file("out/run");
  Runner runner_{dir_};
};

}  // namespace pyprof::collect::testing
