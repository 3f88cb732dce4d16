// The names of the databases one `pyprof profile -o NAME` run produces, all in NAME's directory:
//   NAME.sqlite                    the launched (root) process
//   NAME.rank<R>.sqlite            a process with a distributed rank R
//   NAME.pid<P>.sqlite             another process, by pid
//   NAME.rank<R>.pid<P>.sqlite     another process of rank R
// plus SQLite's sidecar files of each (-journal, -wal, -shm), which belong to the same run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pyprof::launch {

struct OutputName {
  std::string dir;   // "." when NAME has no directory part
  std::string base;  // the file name part of NAME
};

// "runs/a" -> {"runs", "a"}; "a" -> {".", "a"}; "/a" -> {"/", "a"}.
OutputName split_output_name(std::string_view name);

// The file name the launched (root) process writes: "NAME.sqlite", or "NAME.rank<R>.sqlite"
// when the environment it inherits sets RANK (the collector applies the same rule).
std::string root_database_name(std::string_view base, const char* rank_env);

enum class RunFileKind { kOther, kDatabase, kSidecar };

// Whether `filename` (no directory) is one of the files of the run named `base`.
RunFileKind classify_run_file(std::string_view filename, std::string_view base);

// The files of run `base` in `dir`, sorted by name: databases, and sidecars too if asked.
// Returns false (errno set) when the directory cannot be read.
bool list_run_files(const std::string& dir, std::string_view base, bool with_sidecars,
                    std::vector<std::string>& names);

}  // namespace pyprof::launch
