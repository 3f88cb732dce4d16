// PhaseTimer: with its environment variable set (PYPROF_PARSE_TIMING for pyprof-parse,
// PYPROF_PROF_TIMING for pyprof-prof), each lap() prints to stderr how long the phase since the
// previous lap took, the process's peak resident memory so far and what is resident now. For the
// benchmarks (benchmarks/parse_bench.py, docs/benchmarks.md): where the time of a large input goes,
// without a profiler. Silent, and a getenv at construction only, when the variable is unset.
#pragma once

#include <fmt/core.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pyprof {

class PhaseTimer {
 public:
  // `tool` prefixes each line ("pyprof parse"); `variable` turns the timer on.
  PhaseTimer(const char* tool, const char* variable)
      : tool_(tool), enabled_(std::getenv(variable) != nullptr) {}
  void lap(const char* phase) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    fmt::print(stderr, "{}: {:<10} {:.3f} s, peak RSS {} MB, RSS now {} MB\n", tool_, phase,
               std::chrono::duration<double>(now - last_).count(), status_mb("VmHWM:"),
               status_mb("VmRSS:"));
    last_ = now;
  }

 private:
  // A memory size from /proc/self/status ("VmHWM:" the peak, "VmRSS:" now) in MB; -1 where
  // there is none.
  static int64_t status_mb(const char* field) {
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    int64_t kb = -1;
    const size_t field_length = std::strlen(field);
    while (std::fgets(line, sizeof line, status)) {
      if (std::strncmp(line, field, field_length) == 0) {
        if (std::sscanf(line + field_length, " %" SCNd64, &kb) != 1) kb = -1;
        break;
      }
    }
    std::fclose(status);
    return kb < 0 ? -1 : kb / 1024;
  }

  const char* tool_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace pyprof
