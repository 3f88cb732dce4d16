// Reads Nsight Systems SQLite exports (2020.3 to today) and pyprof's own databases, which use
// the same layout (docs/formats.md §2). Tables and columns are discovered at run time; only
// start/end of each activity are essential.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "parse/sqlite_db.h"
#include "parse/trace.h"

namespace pyprof::parse {

// StringIds id -> pool id, looked up on first use (exports hold many strings parse never
// needs). One per connection.
class StringIdCache {
 public:
  bool open(const SqliteDb& db, std::string& error);
  uint32_t get(Trace& trace, int64_t id);

 private:
  Statement lookup_;
  std::unordered_map<int64_t, uint32_t> ids_;
};

// Nsight Systems writes a push/pop or start/end range that was never popped (ended) with the
// session's end (or the capture's: --duration, a capture range) as its end. Such ranges are
// found (end at or past ANALYSIS_DETAILS.stopTime when that lies after every other row; without
// it, the latest end when two ranges of one thread share it), reopened (end kOpenEnd), counted
// (ReadStats::ranges_closed_by_session) and named in a warning.
void reopen_ranges_closed_by_session(Trace& trace, std::optional<int64_t> stop_time);

class NsysReader : public TraceReader {
 public:
  explicit NsysReader(const SqliteDb& db) : db_(db) {}
  bool read(Trace& trace, std::string& error) override;
  std::string_view fetch_text(const Trace& trace, TextRef ref) override;

 private:
  bool read_metadata(Trace& trace, std::string& error);
  bool read_name_value_table(Trace& trace, const std::string& table, std::string& error,
                             const std::function<void(std::string_view, const Statement&)>& row);
  bool read_devices(Trace& trace, std::string& error);
  // ANALYSIS_DETAILS.stopTime (nsys >= 2022.1), when the file has it.
  bool read_session_stop(std::optional<int64_t>& stop_time, std::string& error);
  bool read_cuda_gpus(Trace& trace, std::string& error);
  bool read_kernels(Trace& trace, std::string& error);
  bool read_copies(Trace& trace, std::string& error);
  bool read_api_calls(Trace& trace, std::string& error);
  // PYPROF_CUDA_GRAPH_NODES (pyprof databases; nsys has no such table).
  bool read_graph_nodes(Trace& trace, std::string& error);
  // Reads NVTX_EVENTS; `other_tables` runs on this thread while a second thread reads part
  // of a large NVTX table.
  bool read_ranges(Trace& trace, std::string& error, const std::function<bool()>& other_tables);
  uint32_t string_id(Trace& trace, int64_t id) { return strings_.get(trace, id); }

  const SqliteDb& db_;
  StringIdCache strings_;
  Statement text_lookup_;
  std::string fetched_;
};

}  // namespace pyprof::parse
