// What a pyprof database says about itself besides the events: META_DATA_EXPORT and
// META_DATA_CAPTURE rows, the PROCESSES row and PYPROF_COLLECTOR_STATS. Shared by the collector
// and pyprof_collect_write_empty so both produce the same layout.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "db_rows.h"
#include "sqlite_writer.h"

namespace pyprof::collect {

// Counters a finalized database reports in PYPROF_COLLECTOR_STATS.
struct CollectorStats {
  uint64_t events_recorded = 0;        // ranges + marks inside the window (written or dropped)
  uint64_t events_written = 0;         // NVTX_EVENTS rows of ranges + marks
  uint64_t events_dropped = 0;         // recorded but not written (buffer limit, write errors)
  uint64_t events_outside_window = 0;  // outside PYPROF_DELAY_NS/PYPROF_DURATION_NS
  uint64_t events_after_shutdown = 0;  // NVTX calls that arrived after finalization began
  uint64_t messages_truncated = 0;     // messages cut to kMaxMessageBytes
  uint64_t unclosed_ranges = 0;        // written with end NULL
  uint64_t unbalanced_pops = 0;        // pops of an empty stack (returned -1)
  uint64_t unknown_range_ends = 0;     // nvtxRangeEnd with an id we never handed out
  uint64_t threads = 0;                // threads that called NVTX
  uint64_t ranges_written = 0;         // eventType 59 + 60
  uint64_t marks_written = 0;          // eventType 34
  uint64_t write_errors = 0;           // failed SQLite batches
  uint64_t events_write_failed = 0;    // of events_dropped: lost to failed writes (disk full)
  uint64_t nvtx_inits = 0;             // InitializeInjectionNvtx2 calls (one per NVTX user .so)
  // CUDA activity (CUPTI). Every record CUPTI handed over is written, or counted in exactly one
  // of the other cupti_records_* counters.
  uint64_t cupti_records = 0;                 // records received from CUPTI
  uint64_t cupti_records_dropped = 0;         // lost inside CUPTI (cuptiActivityGetNumDropped...)
                                              // or refused by the buffer limit / failed writes
  uint64_t cupti_records_write_failed = 0;    // of cupti_records_dropped: lost to failed writes
  uint64_t cupti_records_no_timestamp = 0;    // start = end = 0: CUPTI could not time them
  uint64_t cupti_records_outside_window = 0;  // outside the delay/duration/capture range
  uint64_t cupti_records_after_shutdown = 0;  // delivered after finalization began
  uint64_t cupti_records_ignored = 0;         // kinds pyprof does not store
  uint64_t cuda_graph_nodes = 0;              // CUDA graph nodes created or cloned (recorded)
  uint64_t cuda_graph_nodes_unreadable = 0;   // ... whose ids CUPTI would not give
  uint64_t kernels_written = 0;
  uint64_t api_calls_written = 0;  // runtime + driver
  uint64_t memcpys_written = 0;
  uint64_t memsets_written = 0;
  uint64_t syncs_written = 0;
  uint64_t gpus_written = 0;
  // Memory capture (PYPROF_MEMORY_EVENTS). Every allocation and free reported inside the window
  // is written or counted in memory_events_dropped.
  uint64_t memory_events = 0;  // reported inside the window
  uint64_t memory_events_written = 0;
  uint64_t memory_events_dropped = 0;         // buffer limit, or a failed write
  uint64_t memory_events_write_failed = 0;    // of memory_events_dropped: a failed write
  uint64_t memory_events_outside_window = 0;  // outside the delay/duration/capture range
  uint64_t memory_events_after_shutdown = 0;  // reported after finalization began
  uint64_t memory_ops_unseen = 0;       // ops run while another profiler held torch's memory slot
  uint64_t memory_devices_written = 0;  // PYPROF_MEMORY_DEVICES rows

  std::vector<StatRow> rows() const;
};

struct ProcessInfo {
  pid_t pid = 0;
  std::string name;          // argv[0] (nsys shows the launched command), else /proc comm
  std::string command_line;  // arguments joined by spaces
};
ProcessInfo read_process_info(pid_t pid);

std::vector<MetadataRow> export_metadata();   // product, version, schema version
MetadataRow export_time_row(int64_t utc_ns);  // EXPORT_TIME_UTC, written at finalization
// Capture options; `process` is null for files written on behalf of another process.
std::vector<MetadataRow> capture_metadata(const CollectorConfig& config, const ProcessInfo* process,
                                          const std::string& output_path);
// PYPROF_CUDA_TRACE for a process in which CUDA never called InitializeInjection.
MetadataRow cuda_trace_not_started_row(const CollectorConfig& config);

// Writes the schema, metadata and all-zero stats into a new file at `path` (never overwrites),
// plus META_DATA_CAPTURE PYPROF_NOTE=note. Returns false and sets *error on failure.
bool write_empty_database(const std::string& path, const char* note, std::string* error);

}  // namespace pyprof::collect
