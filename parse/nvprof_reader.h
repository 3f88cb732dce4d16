// Reads legacy nvprof SQLite databases (`nvprof -o x.sql`, CUDA <= 10.x; trace-formats.md §2).
//
// nvprof stores raw CUPTI activity records: absolute times, raw CUPTI enum values (converted
// here to the Nsight Systems numbering the rest of parse uses), every string (kernel names
// mangled, marker messages, domain names) as an id into StringTable, API calls by callback id
// only, and NVTX ranges as one MARKER row per edge (START and END rows paired by `id`).
// Every table and every column other than times is optional. trace.version is the Version
// table's schema number (12 for CUDA 10.1's nvprof). The DEVICE table (CUPTI's device record)
// describes the GPUs in trace.devices, for peak rates downstream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "parse/sqlite_db.h"
#include "parse/trace.h"

namespace pyprof::parse {

class NvprofReader : public TraceReader {
 public:
  // `db` must outlive the reader.
  explicit NvprofReader(const SqliteDb& db) : db_(db) {}

  // nvprof databases are the ones with a StringTable (the test PyProf used, parse.py).
  static bool detect(const SqliteDb& db) { return db.has_table("StringTable"); }

  bool read(Trace& trace, std::string& error) override;
  // Every nvprof range message is kept in the pool (TextRef::kPool).
  std::string_view fetch_text(const Trace& trace, TextRef ref) override;

 private:
  bool read_version(Trace& trace, std::string& error);
  bool read_strings(std::string& error);
  bool read_devices(Trace& trace, std::string& error);
  bool read_api_calls(Trace& trace, bool driver, std::string& error);
  bool read_kernels(Trace& trace, const std::string& table, std::string& error);
  bool read_memcpys(Trace& trace, std::string& error);
  bool read_memsets(Trace& trace, std::string& error);
  bool read_markers(Trace& trace, std::string& error);
  // The StringTable value of `id`; empty, with a warning naming `what`, when there is none.
  std::string_view string(Trace& trace, int64_t id, std::string_view what);
  // The same, interned (0 when empty).
  uint32_t pooled_string(Trace& trace, int64_t id, std::string_view what);
  // The process of the API call with this correlation id, 0 when none was recorded.
  uint32_t pid_of(int64_t correlation_id) const;

  const SqliteDb& db_;
  std::unordered_map<int64_t, std::string> strings_;   // StringTable, read once
  std::unordered_map<int64_t, uint32_t> pooled_;       // StringTable id -> pool id
  std::unordered_map<int64_t, uint32_t> pid_of_corr_;  // API correlationId -> processId
};

}  // namespace pyprof::parse
