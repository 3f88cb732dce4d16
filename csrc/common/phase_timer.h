// PhaseTimer: with its environment variable set (PYPROF_PARSE_TIMING for pyprof-parse,
// PYPROF_PROF_TIMING for pyprof-prof), each lap() prints to stderr how long the phase since the
// previous lap took and the process's peak resident memory so far. For the benchmarks
// (benchmarks/parse_bench.py, docs/benchmarks.md): where the time of a large input goes, without
// a profiler. Silent, and a getenv at construction only, when the variable is unset.
#pragma once

#include <fmt/core.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace pyprof {

class PhaseTimer {
 public:
  // `tool` prefixes each line ("pyprof parse"); `variable` turns the timer on.
  PhaseTimer(const char* tool, const char* variable)
      : tool_(tool), enabled_(std::getenv(variable) != nullptr) {}
  void lap(const char* phase) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    fmt::print(stderr, "{}: {:<10} {:.3f} s, peak RSS {} MB\n", tool_, phase,
               std::chrono::duration<double>(now - last_).count(), peak_rss_mb());
    last_ = now;
  }

 private:
  // VmHWM from /proc/self/status; -1 where there is none.
  static int64_t peak_rss_mb() {
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    int64_t kb = -1;
    while (std::fgets(line, sizeof line, status)) {
      if (std::sscanf(line, "VmHWM: %" SCNd64 " kB", &kb) == 1) break;
    }
    std::fclose(status);
    return kb < 0 ? -1 : kb / 1024;
  }

  const char* tool_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace pyprof
