// Running a test app as a child process with the collector injected, for the collector's
// end-to-end tests (collector_test, memory_events_test): its stdout, stderr, exit status and the
// "key=value" facts it prints.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/nsys_schema.h"
#include "test_db.h"

extern char** environ;

namespace pyprof::collect::testing {

// "key=value" lines printed by the app.
inline std::multimap<std::string, std::string> facts_of(const std::string& out) {
  std::multimap<std::string, std::string> facts;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t equals = line.find('=');
    if (equals != std::string::npos) facts.emplace(line.substr(0, equals), line.substr(equals + 1));
  }
  return facts;
}

inline int64_t fact(const std::multimap<std::string, std::string>& facts, const std::string& key) {
  const auto it = facts.find(key);
  return it == facts.end() ? -1 : std::stoll(it->second);
}

inline uint64_t gtid(int64_t pid, int64_t tid) {
  return nsys::global_tid(static_cast<uint32_t>(pid), static_cast<uint32_t>(tid));
}

struct AppRun {
  pid_t pid = -1;
  int status = 0;
  std::string out;
  std::string err;
  std::string out_path;
  std::string err_path;

  bool exited_ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  std::string describe() const {
    return "status " + std::to_string(status) + "\nstdout:\n" + out + "\nstderr:\n" + err;
  }
};

// Runs `app` <scenario> with the collector (PYPROF_COLLECT_LIBRARY) injected and PYPROF_OUTPUT =
// base. `env` adds or (with an empty value) removes variables; other PYPROF_* and RANK are
// cleared.
class AppRunner {
 public:
  AppRunner(const TempDir& dir, std::string base, std::string app)
      : dir_(dir), base_(std::move(base)), app_(std::move(app)) {}

  AppRun start(const std::string& scenario, const std::map<std::string, std::string>& env = {}) {
    AppRun run;
    const int index = runs_++;
    run.out_path = dir_.file("app" + std::to_string(index) + ".out");
    run.err_path = dir_.file("app" + std::to_string(index) + ".err");
    std::vector<std::string> variables;
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string variable = *entry;
      if (variable.rfind("PYPROF_", 0) == 0 || variable.rfind("RANK=", 0) == 0 ||
          variable.rfind("NVTX_INJECTION", 0) == 0) {
        continue;
      }
      variables.push_back(variable);
    }
    variables.push_back(std::string("NVTX_INJECTION64_PATH=") + PYPROF_COLLECT_LIBRARY);
    variables.push_back("PYPROF_OUTPUT=" + base_);
    for (const auto& [name, value] : env) {
      if (!value.empty()) variables.push_back(name + "=" + value);
    }
    run.pid = spawn_with_output({app_, scenario}, std::move(variables), run.out_path, run.err_path,
                                dir_.path());
    return run;
  }

  void wait(AppRun& run) {
    waitpid(run.pid, &run.status, 0);
    run.out = read_file(run.out_path);
    run.err = read_file(run.err_path);
  }

  AppRun run(const std::string& scenario, const std::map<std::string, std::string>& env = {}) {
    AppRun run = start(scenario, env);
    wait(run);
    return run;
  }

 private:
  const TempDir& dir_;
  std::string base_;
  std::string app_;
  int runs_ = 0;
};

}  // namespace pyprof::collect::testing
