// What the collector's source files share and nothing else needs: collector.cpp (start-up, the
// NVTX event API, chunks), collector_writer.cpp (writer thread, SQLite writes),
// collector_finalize.cpp (finalization, exit and signal hooks) and collector_fork.cpp (fork
// handlers). Not part of the collector's interface: include collector.h for that.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "collector.h"
#include "common/nsys_schema.h"
#include "event_types.h"
#include "session_metadata.h"
#include "thread_buffer.h"

namespace pyprof::collect::detail {

// window_begin_ while a cudaProfilerApi capture range has not started: no range can overlap.
inline constexpr int64_t kNeverBegun = std::numeric_limits<int64_t>::max();

// The calling thread's buffer. `generation` must match Collector::generation_: a fork child bumps
// it, so a pointer cached in the parent is never trusted after fork.
struct ThreadCache {
  ThreadBuffer* buffer = nullptr;
  uint64_t generation = 0;
};
// Defined in collector.cpp. constinit because the fork handlers use it from another file: without
// it each of their accesses would first call a check for a dynamic initializer.
extern constinit thread_local ThreadCache t_cache;

uint32_t current_tid();
std::string current_thread_name();

// The *_written GPU counters of `from`, added once their transaction has committed.
inline void add_gpu_written(CollectorStats& into, const CollectorStats& from) {
  into.kernels_written += from.kernels_written;
  into.api_calls_written += from.api_calls_written;
  into.memcpys_written += from.memcpys_written;
  into.memsets_written += from.memsets_written;
  into.syncs_written += from.syncs_written;
  into.gpus_written += from.gpus_written;
}

// The message of a failed write, naming the file once (SQLite's open errors name it already):
// "disk full (or write failed) writing PATH: why" for a storage failure (SQLITE_FULL, I/O
// errors), "cannot write PATH: why" otherwise.
inline std::string write_failure_message(bool storage_failure, const std::string& path,
                                         const std::string& why) {
  const char* what = storage_failure ? "disk full (or write failed)" : "cannot write";
  if (why.find(path) != std::string::npos) return std::string(what) + ": " + why;
  return std::string(what) + (storage_failure ? " writing " : " ") + path + ": " + why;
}

inline void add_counters(ThreadCounters& into, const ThreadCounters& from) {
  into.events_recorded += from.events_recorded;
  into.events_dropped += from.events_dropped;
  into.events_outside_window += from.events_outside_window;
  into.unbalanced_pops += from.unbalanced_pops;
  into.messages_truncated += from.messages_truncated;
  into.memory_recorded += from.memory_recorded;
  into.memory_dropped += from.memory_dropped;
  into.memory_outside_window += from.memory_outside_window;
}

struct Tally {
  uint64_t events = 0;  // ranges + marks
  uint64_t ranges = 0;
  uint64_t marks = 0;
  uint64_t memory = 0;  // allocations and frees
  void add(const EventChunk& chunk) {
    using nsys::NvtxEventType;
    memory += chunk.memory.size();
    for (const CompletedEvent& event : chunk.events) {
      if (event.event_type == NvtxEventType::kMark) {
        ++marks;
        ++events;
      } else if (event.event_type == NvtxEventType::kPushPopRange ||
                 event.event_type == NvtxEventType::kStartEndRange) {
        ++ranges;
        ++events;
      }
    }
  }
};

// The process-level hooks, installed once by Collector::initialize() after the collector is
// published (they find it through Collector::instance()).
void install_exit_hook();        // collector_finalize.cpp
void install_fork_hooks();       // collector_fork.cpp
void install_signal_handlers();  // collector_finalize.cpp

}  // namespace pyprof::collect::detail
