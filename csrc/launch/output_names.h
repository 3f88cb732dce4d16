// The names of the databases one `pyprof profile -o NAME` run produces, all in NAME's directory:
//   NAME.sqlite                    the launched (root) process
//   NAME.rank<R>.sqlite            a process with a distributed rank R
//   NAME.pid<P>.sqlite             another process, by pid
//   NAME.rank<R>.pid<P>.sqlite     another process of rank R
// plus SQLite's sidecar files of each (-journal, -wal, -shm), which belong to the same run.
// While a run is going, its launcher holds a lock on .NAME.pyprof-lock (see OutputClaim).
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

// The name this launcher's files start with: `base`, or "base.rank<R>" when the launcher itself
// runs with a numeric RANK=R (one launcher per rank, e.g. under srun): the launchers of a job's
// other ranks share NAME, and their files, lock and listing are theirs.
std::string run_files_base(std::string_view base, const char* rank_env);

enum class RunFileKind { kOther, kDatabase, kSidecar };

// Whether `filename` (no directory) is one of the files of the run named `base`.
RunFileKind classify_run_file(std::string_view filename, std::string_view base);

// The files of run `base` in `dir`, sorted by name: databases, and sidecars too if asked.
// Returns false (errno set) when the directory cannot be read.
bool list_run_files(const std::string& dir, std::string_view base, bool with_sidecars,
                    std::vector<std::string>& names);

// The claim of one output name for the length of a run, so that two `pyprof profile -o NAME`
// started together cannot both write (the collector would quietly give the second one a pid
// name). It is an exclusive flock() on the lock file .NAME.pyprof-lock in NAME's directory,
// which holds the claiming launcher's pid: the kernel drops the lock when the launcher ends in
// any way, so a file left by a killed launcher does not block the next run. The lock file is
// separate from the databases because SQLite locks those itself (and on NFS, flock() is
// emulated with the same byte-range locks SQLite uses).
class OutputClaim {
 public:
  enum class Outcome {
    kClaimed,      // this process holds the name until the claim is destroyed
    kInUse,        // another process holds it; holder_pid() says which when it is known
    kUnsupported,  // the file system has no flock(): nothing is held (error() says why)
    kFailed,       // the lock file cannot be created or locked (error() says why)
  };

  OutputClaim() = default;
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;
  ~OutputClaim();  // removes the lock file, then releases the lock

  Outcome claim(const std::string& dir, std::string_view base);

  const std::string& lock_path() const { return lock_path_; }
  int error() const { return error_; }             // errno value of kUnsupported or kFailed
  long holder_pid() const { return holder_pid_; }  // 0 when unknown

 private:
  std::string lock_path_;
  int fd_ = -1;
  int error_ = 0;
  long holder_pid_ = 0;
};

}  // namespace pyprof::launch
