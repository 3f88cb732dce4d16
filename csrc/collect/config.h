// Everything the collector takes from the environment, read once at initialisation, and the
// output-file naming rules. The launcher (csrc/launch) sets these variables; a program run by
// hand with only NVTX_INJECTION64_PATH set gets the defaults.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace pyprof::collect {

struct CollectorConfig {
  // PYPROF_SESSION_START_MONO_NS / PYPROF_SESSION_START_UTC_NS, else the time of initialisation.
  // If only the monotonic start is given, the UTC start is derived from it.
  int64_t session_start_mono_ns = 0;
  int64_t session_start_utc_ns = 0;
  // PYPROF_OUTPUT: base path without extension; default "pyprof_report" (cwd).
  std::string output_base = "pyprof_report";
  // RANK (torchrun & co.): set -> BASE.rank<R>[...].sqlite.
  std::optional<std::string> rank;
  // WORLD_SIZE, as given: recorded only.
  std::optional<std::string> world_size;
  // PYPROF_ROOT_PID: the process that writes BASE.sqlite. Unset -> this process counts as root.
  std::optional<int64_t> root_pid;
  // PYPROF_LAUNCH_CMDLINE: the command the launcher ran (kept in META_DATA_CAPTURE).
  std::optional<std::string> launch_command_line;
  // PYPROF_DELAY_NS / PYPROF_DURATION_NS: capture window relative to the session start.
  std::optional<int64_t> delay_ns;
  std::optional<int64_t> duration_ns;
  // PYPROF_BUFFER_MB (default 1024); PYPROF_BUFFER_BYTES overrides it with a byte count (for
  // tests and for limits below 1 MiB).
  uint64_t buffer_limit_bytes = uint64_t{1024} << 20;
  // PYPROF_FINALIZE_TIMEOUT_S (default 120): how long exit waits for the writer to drain.
  int64_t finalize_timeout_ns = int64_t{120} * 1'000'000'000;
  // PYPROF_CAPTURE_RANGE=cudaProfilerApi: record only between the first cudaProfilerStart()
  // and the following cudaProfilerStop() (inside the delay/duration window, if any).
  bool capture_range_cuda_profiler = false;
  // PYPROF_CUDA_TRACE=0: never start CUPTI, even when CUDA calls InitializeInjection.
  bool cuda_trace = true;
  // PYPROF_STATUS_FD: the launcher's pipe for write failures (-1: none) and its inode.
  int status_fd = -1;
  uint64_t status_pipe_inode = 0;
  // PYPROF_CUPTI_LIBRARY: the libcupti to load instead of searching for one.
  std::optional<std::string> cupti_library;

  // Window [window_begin_ns, window_end_ns) in ns since session start; INT64_MIN/MAX if open.
  int64_t window_begin_ns() const;
  int64_t window_end_ns() const;

  // Reads the variables above. Malformed values are reported on stderr and ignored.
  static CollectorConfig from_environment(int64_t now_mono_ns, int64_t now_utc_ns);
};

// The file a process should write, before the "already exists" fallback:
//   root process without RANK  -> BASE.sqlite
//   RANK=R (not a forked child)-> BASE.rankR.sqlite
//   any other process / fork   -> BASE[.rankR].pid<PID>.sqlite
std::string preferred_output_path(const CollectorConfig& config, pid_t pid, bool forked_child);
// The fallback name: BASE[.rankR].pid<PID>.sqlite, or with ".<n>" before ".sqlite" for n >= 1.
std::string pid_output_path(const CollectorConfig& config, pid_t pid, int attempt);

// Creates the output file exclusively (O_CREAT|O_EXCL, empty: SQLite accepts an empty file as
// an empty database) and returns its path. Never overwrites: an existing preferred file falls
// back to the pid form, then to numbered pid forms. Creates missing parent directories.
// Returns nullopt (and sets *error) if no file could be created.
std::optional<std::string> create_output_file(const CollectorConfig& config, pid_t pid,
                                              bool forked_child, std::string* error);

}  // namespace pyprof::collect
