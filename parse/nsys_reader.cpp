#include "parse/nsys_reader.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "common/env_vars.h"
#include "common/kernel_names.h"
#include "common/nsys_schema.h"
#include "parse/memory_events.h"

namespace pyprof::parse {

namespace {

// Builds a SELECT of `names` from `table`; a column the table lacks reads as NULL, so one
// query serves every schema version.
std::string select_columns(const std::set<std::string>& have, const std::string& table,
                           std::initializer_list<const char*> names, const char* extra = "") {
  std::string sql = "SELECT ";
  bool first = true;
  for (const char* name : names) {
    if (!first) sql += ", ";
    first = false;
    if (std::string_view(name) == "rowid") {
      sql += name;  // quoted, "rowid" would read as a string literal when no column has the name
    } else if (have.count(name)) {
      sql += '"';
      sql += name;
      sql += '"';
    } else {
      sql += "NULL";
    }
  }
  sql += " FROM \"" + table + "\"";
  sql += extra;
  return sql;
}

// Messages name the file kind only when it is likely wrong.
constexpr std::string_view kNotNsys = " (not an Nsight Systems export?)";

int64_t or_default(const Statement& s, int col, int64_t fallback) {
  return s.int64_or(col, fallback);
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI callback names carry the API version
// (trace-formats.md §1.5); "_v2" style suffixes are part of the real API name and stay.
// "3" -> 3; anything but a plain decimal below 2^31 (empty, "-1", "3x") -> false.
bool parse_rank_number(std::string_view text, int64_t& out) {
  if (text.empty() || text.size() > 9) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

std::string_view strip_api_version(std::string_view name) {
  size_t pos = name.rfind("_v");
  if (pos == std::string_view::npos || name.size() - pos - 2 < 4) return name;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, pos);
}

}  // namespace

bool StringIdCache::open(const SqliteDb& db, std::string& error) {
  if (!db.has_table("StringIds")) return true;
  if (!require_columns(db.columns("StringIds"), "StringIds", {"id", "value"}, error, "",
                       kNotNsys)) {
    return false;
  }
  lookup_ = db.prepare("SELECT value FROM StringIds WHERE id = ?", error);
  return lookup_.valid();
}

uint32_t StringIdCache::get(Trace& trace, int64_t id) {
  auto it = ids_.find(id);
  if (it != ids_.end()) return it->second;
  uint32_t pool_id = 0;
  if (lookup_.valid()) {
    lookup_.reset();
    lookup_.bind_int64(1, id);
    if (lookup_.step() == SQLITE_ROW) pool_id = trace.pool.intern(lookup_.text(0));
  }
  if (pool_id == 0 && id != 0) {
    trace.warn("missing string", "StringIds has no id " + std::to_string(id));
  }
  ids_.emplace(id, pool_id);
  return pool_id;
}

void reopen_ranges_closed_by_session(Trace& trace, std::optional<int64_t> stop_time) {
  // The last thing the file shows happening outside NVTX; the session ended after it.
  int64_t last_activity = INT64_MIN;
  for (const ApiCall& call : trace.api_calls) last_activity = std::max(last_activity, call.end);
  for (const GpuActivity& act : trace.activities) last_activity = std::max(last_activity, act.end);
  int64_t last_end = INT64_MIN;
  for (const RangeRecord& r : trace.ranges) {
    if (r.shape != RangeShape::kMark && r.end != kOpenEnd) last_end = std::max(last_end, r.end);
  }
  if (last_end == INT64_MIN || last_end < last_activity) return;
  // The ends the session wrote: at or past its stop time (when that lies after everything else,
  // i.e. is on the events' clock), else the latest end when two ranges of one thread share it
  // (two pops are two calls: on a nanosecond clock they never end at the same instant).
  int64_t closed_at = INT64_MAX;
  if (stop_time && *stop_time >= last_activity && last_end >= *stop_time) {
    closed_at = *stop_time;
  } else {
    std::set<uint64_t> threads;
    for (const RangeRecord& r : trace.ranges) {
      if (r.shape == RangeShape::kMark || r.end != last_end) continue;
      if (!threads.insert(thread_key(r.pid, r.tid)).second) {
        closed_at = last_end;
        break;
      }
    }
  }
  if (closed_at == INT64_MAX) return;
  for (RangeRecord& r : trace.ranges) {
    if (r.shape == RangeShape::kMark || r.end == kOpenEnd || r.end < closed_at) continue;
    trace.warn("range never closed (ended by the session's end)",
               "\"" + std::string(trace.pool.get(r.name).substr(0, 60)) + "\" started at " +
                   std::to_string(r.start) + " on thread " + std::to_string(r.tid) +
                   ", ends at the session's end " + std::to_string(r.end) +
                   ": kept as unclosed, enclosing nothing");
    r.end = kOpenEnd;
    ++trace.stats.ranges_unclosed;
    ++trace.stats.ranges_closed_by_session;
  }
}

bool NsysReader::read_session_stop(std::optional<int64_t>& stop_time, std::string& error) {
  const std::string table = "ANALYSIS_DETAILS";
  if (!db_.has_table(table) || !db_.columns(table).count("stopTime")) return true;
  Statement s = db_.prepare("SELECT max(stopTime) FROM ANALYSIS_DETAILS", error);
  if (!s.valid()) return false;
  if (s.step() == SQLITE_ROW && !s.is_null(0)) stop_time = s.int64(0);
  return true;
}

bool NsysReader::read(Trace& trace, std::string& error) {
  trace.format = "nsys";
  if (!strings_.open(db_, error)) return false;
  // The GPU and API tables are read while a second thread decodes part of NVTX_EVENTS.
  bool ok =
      read_metadata(trace, error) && read_devices(trace, error) && read_ranges(trace, error, [&] {
        return read_kernels(trace, error) && read_copies(trace, error) &&
               read_api_calls(trace, error) && read_graph_nodes(trace, error) &&
               read_memory_table(db_, trace, error);
      });
  if (ok && trace.format == "nsys") {
    std::optional<int64_t> stop_time;
    if (!read_session_stop(stop_time, error)) return false;
    reopen_ranges_closed_by_session(trace, stop_time);
  }
  if (ok && trace.unfinished_capture) {
    // Each thread that recorded may have lost its last buffer: count them.
    std::set<std::pair<uint32_t, uint32_t>> threads;
    for (const RangeRecord& r : trace.ranges) threads.emplace(r.pid, r.tid);
    for (const ApiCall& call : trace.api_calls) threads.emplace(call.pid, call.tid);
    trace.capture_threads = static_cast<int64_t>(threads.size());
  }
  return ok;
}

// Name/value tables (metadata, our statistics) are optional: one of another layout is named in
// a warning and skipped. Calls `row(name, statement)` for each row.
bool NsysReader::read_name_value_table(
    Trace& trace, const std::string& table, std::string& error,
    const std::function<void(std::string_view, const Statement&)>& row) {
  if (!db_.has_table(table)) return true;
  std::string layout_error;
  if (!require_columns(db_.columns(table), table, {"name", "value"}, layout_error)) {
    trace.warn("table of an unknown layout", layout_error + ": skipped");
    return true;
  }
  Statement s = db_.prepare("SELECT name, value FROM \"" + table + "\"", error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) row(s.text(0), s);
  if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  return true;
}

bool NsysReader::read_metadata(Trace& trace, std::string& error) {
  for (const char* table : {"META_DATA_EXPORT", "EXPORT_META_DATA"}) {
    bool ok =
        read_name_value_table(trace, table, error, [&](std::string_view name, const Statement& s) {
          std::string_view value = s.text(1);
          if (name == "EXPORT_PRODUCT_NAME" && value == "pyprof") trace.format = "pyprof";
          if (name == "EXPORT_PRODUCT_VERSION") trace.version = std::string(value);
        });
    if (!ok) return false;
  }
  if (trace.format != "pyprof") return true;  // the rest is our own
  // The collector writes FINALIZED_BY and its statistics in its last transaction (the launcher
  // writes statistics into the empty database it leaves for a program that recorded nothing).
  // Without both, the program was killed (SIGKILL, OOM killer) or that transaction failed (a
  // full disk): what the threads still held was never written.
  bool finalized = false;
  std::optional<std::string> write_error;
  std::optional<int64_t> delay, duration;
  bool ok =
      read_name_value_table(
          trace, "META_DATA_CAPTURE", error,
          [&](std::string_view name, const Statement& s) {
            if (name == "PYPROF_CUDA_TRACE") {
              trace.cuda_trace = std::string(s.text(1));
            }
            if (name == "PYPROF_MEMORY_CAPTURE") trace.memory_capture = std::string(s.text(1));
            if (name == "FINALIZED_BY") finalized = true;
            // The collector's window, ns since the session started (the records' timebase):
            // [DELAY_NS, DELAY_NS + DURATION_NS), either end open when not given.
            if (name == "DELAY_NS" || name == "DURATION_NS") {
              const std::string_view text = s.text(1);
              int64_t v = -1;
              auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
              if (ec == std::errc() && end == text.data() + text.size() && v >= 0) {
                (name == "DELAY_NS" ? delay : duration) = v;
              }
            }
            // torchrun's RANK / WORLD_SIZE, when the program had them.
            if (name == "RANK" || name == "WORLD_SIZE") {
              int64_t v = -1;
              if (parse_rank_number(s.text(1), v)) {
                if (!trace.distributed) trace.distributed.emplace();
                (name == "RANK" ? trace.distributed->rank : trace.distributed->world_size) = v;
              }
            }
            if (name == "PYPROF_WRITE_ERROR") {
              write_error = std::string(s.text(1));
            }
          }) &&
      read_name_value_table(trace, "PYPROF_COLLECTOR_STATS", error,
                            [&](std::string_view name, const Statement& s) {
                              trace.stats.capture_stats.emplace_back(std::string(name), s.int64(1));
                            });
  trace.unfinished_capture = !finalized && trace.stats.capture_stats.empty();
  if (delay) trace.capture_window_begin = *delay;
  if (duration) {
    trace.capture_window_begin = std::max<int64_t>(trace.capture_window_begin, 0);
    trace.capture_window_end = trace.capture_window_begin + std::min(*duration, INT64_MAX / 2);
  }
  // A failed write (a full disk) is also written into the final record when that still fits
  // (docs/formats.md §2): the database is then incomplete by a known amount.
  Trace::WriteFailure failure;
  for (const auto& [name, value] : trace.stats.capture_stats) {
    if (name == "write_errors") failure.failed_transactions = value;
    if (name == "events_write_failed") failure.events_lost = value;
    if (name == "cupti_records_write_failed") failure.cuda_records_lost = value;
  }
  if (write_error || failure.failed_transactions > 0) {
    failure.message = write_error.value_or("");
    trace.write_failure = std::move(failure);
  }
  return ok;
}

// nsys 2020.x: TARGET_INFO_CUDA_GPU, one row per (process, GPU) in CUPTI's device-record
// units as nsys stored them: coreClockRate kHz, globalMemoryBandwidth KB/s (0 when not
// recorded), globalMemorySize MiB (the 2020.3 export holds 32510 for a 32 GB V100).
bool NsysReader::read_cuda_gpus(Trace& trace, std::string& error) {
  const std::string table = "TARGET_INFO_CUDA_GPU";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!cols.count("deviceId") || !cols.count("name")) {
    trace.warn("GPU table of an unknown layout",
               "table " + table + " has no column 'deviceId' or 'name': GPUs not described");
    return true;
  }
  Statement s =
      db_.prepare(select_columns(cols, table,
                                 {"deviceId", "name", "numMultiprocessors", "coreClockRate",
                                  "globalMemoryBandwidth", "globalMemorySize",
                                  "computeCapabilityMajor", "computeCapabilityMinor"},
                                 " ORDER BY deviceId"),
                  error);
  if (!s.valid()) return false;
  std::set<int64_t> seen;  // a row per process: one device each
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    int64_t id = or_default(s, 0, -1);
    if (!seen.insert(id).second) continue;
    Trace::Device& d = trace.devices.emplace_back();
    d.id = id;
    d.name = std::string(s.text(1));
    d.sm_count = or_default(s, 2, 0);
    // A damaged fact is unknown (0), never a wrapped peak.
    d.clock_hz = Trace::Device::in_header_units(or_default(s, 3, 0), 1000).value_or(0);
    d.memory_bandwidth = Trace::Device::in_header_units(or_default(s, 4, 0), 1000).value_or(0);
    d.total_memory =
        Trace::Device::in_header_units(or_default(s, 5, 0), int64_t{1} << 20).value_or(0);
    d.compute_major = or_default(s, 6, 0);
    d.compute_minor = or_default(s, 7, 0);
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  return true;
}

bool NsysReader::read_devices(Trace& trace, std::string& error) {
  const std::string table = "TARGET_INFO_GPU";
  // Before 2021.2 the GPU facts are in TARGET_INFO_CUDA_GPU; 2020.5 has both, its
  // TARGET_INFO_GPU holding only names.
  if (!db_.has_table(table)) return read_cuda_gpus(trace, error);
  auto cols = db_.columns(table);
  if (!cols.count("id") || !cols.count("name")) return read_cuda_gpus(trace, error);
  // nsys numbers GPUs per machine (id) and maps each process' CUDA ordinal through
  // TARGET_INFO_CUDA_DEVICE; without that table the two are the same.
  std::map<int64_t, int64_t> ordinal_of_gpu;
  if (db_.has_table("TARGET_INFO_CUDA_DEVICE")) {
    auto device_cols = db_.columns("TARGET_INFO_CUDA_DEVICE");
    if (device_cols.count("gpuId") && device_cols.count("cudaId")) {
      Statement m = db_.prepare(
          "SELECT gpuId, min(cudaId) FROM TARGET_INFO_CUDA_DEVICE GROUP BY gpuId", error);
      if (!m.valid()) return false;
      while (m.step() == SQLITE_ROW) ordinal_of_gpu[m.int64(0)] = m.int64(1);
    }
  }
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"id", "name", "smCount", "clockRate", "memoryBandwidth",
                                            "totalMemory", "computeMajor", "computeMinor"},
                                           " ORDER BY id"),
                            error);
  if (!s.valid()) return false;
  while (s.step() == SQLITE_ROW) {
    Trace::Device& d = trace.devices.emplace_back();
    d.id = or_default(s, 0, -1);
    if (auto mapped = ordinal_of_gpu.find(d.id); mapped != ordinal_of_gpu.end()) {
      d.id = mapped->second;
    }
    d.name = std::string(s.text(1));
    d.sm_count = or_default(s, 2, 0);
    d.clock_hz = or_default(s, 3, 0);
    d.memory_bandwidth = or_default(s, 4, 0);
    d.total_memory = or_default(s, 5, 0);
    d.compute_major = or_default(s, 6, 0);
    d.compute_minor = or_default(s, 7, 0);
  }
  return true;
}

bool NsysReader::read_kernels(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_KERNEL";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end"}, error, "", kNotNsys)) return false;
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"start",
                                            "end",
                                            "deviceId",
                                            "contextId",
                                            "streamId",
                                            "correlationId",
                                            "globalPid",
                                            "demangledName",
                                            "shortName",
                                            "mangledName",
                                            "gridX",
                                            "gridY",
                                            "gridZ",
                                            "blockX",
                                            "blockY",
                                            "blockZ",
                                            "registersPerThread",
                                            "staticSharedMemory",
                                            "dynamicSharedMemory",
                                            "graphNodeId"}),
                            error);
  if (!s.valid()) return false;
  std::unordered_map<uint32_t, uint32_t> short_of_long;  // demangled -> computed short name
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.is_null(0) || s.is_null(1)) {
      ++trace.stats.rows_skipped;
      trace.warn("kernel without start/end", "a kernel row has NULL start or end: skipped");
      continue;
    }
    GpuActivity k;
    k.kind = ActivityKind::kKernel;
    k.start = s.int64(0);
    k.end = s.int64(1);
    k.device = to_i32(or_default(s, 2, -1));
    k.context = to_i32(or_default(s, 3, -1));
    k.stream = or_default(s, 4, -1);
    k.correlation_id = or_default(s, 5, -1);
    k.pid = nsys::pid_of_global_id(static_cast<uint64_t>(or_default(s, 6, 0)));
    if (!s.is_null(7)) {
      k.long_name = string_id(trace, s.int64(7));
    } else if (!s.is_null(9)) {
      k.long_name = trace.pool.intern(demangle(trace.pool.get(string_id(trace, s.int64(9)))));
    }
    if (!s.is_null(8)) {
      k.short_name = string_id(trace, s.int64(8));
    } else if (k.long_name != 0) {
      auto it = short_of_long.find(k.long_name);
      if (it == short_of_long.end()) {
        uint32_t id = trace.pool.intern(short_kernel_name(trace.pool.get(k.long_name)));
        it = short_of_long.emplace(k.long_name, id).first;
      }
      k.short_name = it->second;
    }
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = to_i32(or_default(s, 10 + i, 0));
      k.block[i] = to_i32(or_default(s, 13 + i, 0));
    }
    k.registers = to_i32(or_default(s, 16, -1));
    k.static_shared = to_i32(or_default(s, 17, -1));
    k.dynamic_shared = to_i32(or_default(s, 18, -1));
    k.graph_node_id = or_default(s, 19, -1);
    trace.activities.push_back(k);
    ++trace.stats.kernels;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  return true;
}

bool NsysReader::read_copies(Trace& trace, std::string& error) {
  for (bool memcpy : {true, false}) {
    const std::string table = memcpy ? "CUPTI_ACTIVITY_KIND_MEMCPY" : "CUPTI_ACTIVITY_KIND_MEMSET";
    if (!db_.has_table(table)) continue;
    auto cols = db_.columns(table);
    if (!require_columns(cols, table, {"start", "end"}, error, "", kNotNsys)) return false;
    Statement s =
        memcpy ? db_.prepare(select_columns(cols, table,
                                            {"start", "end", "deviceId", "contextId", "streamId",
                                             "correlationId", "globalPid", "bytes", "copyKind",
                                             "srcKind", "dstKind", "graphNodeId"}),
                             error)
               : db_.prepare(select_columns(cols, table,
                                            {"start", "end", "deviceId", "contextId", "streamId",
                                             "correlationId", "globalPid", "bytes", "value",
                                             "memKind", "memKind", "graphNodeId"}),
                             error);
    if (!s.valid()) return false;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      if (s.is_null(0) || s.is_null(1)) {
        ++trace.stats.rows_skipped;
        trace.warn("copy without start/end", table + " row with NULL start or end: skipped");
        continue;
      }
      GpuActivity a;
      a.kind = memcpy ? ActivityKind::kMemcpy : ActivityKind::kMemset;
      a.start = s.int64(0);
      a.end = s.int64(1);
      a.device = to_i32(or_default(s, 2, -1));
      a.context = to_i32(or_default(s, 3, -1));
      a.stream = or_default(s, 4, -1);
      a.correlation_id = or_default(s, 5, -1);
      a.pid = nsys::pid_of_global_id(static_cast<uint64_t>(or_default(s, 6, 0)));
      a.bytes = or_default(s, 7, -1);
      if (memcpy) {
        a.copy_kind = static_cast<uint8_t>(or_default(s, 8, 0) & 0xFF);
        a.src_kind = static_cast<uint8_t>(or_default(s, 9, 7) & 0xFF);
        a.dst_kind = static_cast<uint8_t>(or_default(s, 10, 7) & 0xFF);
        ++trace.stats.memcpys;
      } else {
        a.memset_value = or_default(s, 8, 0);
        a.dst_kind = static_cast<uint8_t>(or_default(s, 9, 7) & 0xFF);
        ++trace.stats.memsets;
      }
      a.graph_node_id = or_default(s, 11, -1);
      trace.activities.push_back(a);
    }
    if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  }
  return true;
}

bool NsysReader::read_api_calls(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_RUNTIME";
  if (!db_.has_table(table)) {
    if (!trace.activities.empty()) {
      trace.warn("no API calls", "the database has GPU activities but no " + table +
                                     " table: no kernel can be attributed");
    }
    return true;
  }
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end", "globalTid", "correlationId"}, error, "",
                       kNotNsys)) {
    return false;
  }
  Statement s = db_.prepare(
      select_columns(cols, table, {"start", "end", "globalTid", "correlationId", "nameId"}), error);
  if (!s.valid()) return false;
  std::unordered_map<int64_t, uint32_t> names;  // nameId -> stripped name
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.is_null(0) || s.is_null(1) || s.is_null(2)) {
      ++trace.stats.rows_skipped;
      trace.warn("API call without time or thread",
                 "a " + table + " row has NULL start, end or globalTid: skipped");
      continue;
    }
    ApiCall call;
    call.start = s.int64(0);
    call.end = s.int64(1);
    auto gtid = static_cast<uint64_t>(s.int64(2));
    call.pid = nsys::pid_of_global_id(gtid);
    call.tid = nsys::tid_of_global_tid(gtid);
    call.correlation_id = or_default(s, 3, -1);
    if (!s.is_null(4)) {
      int64_t name_id = s.int64(4);
      auto it = names.find(name_id);
      if (it == names.end()) {
        uint32_t raw = string_id(trace, name_id);
        it =
            names.emplace(name_id, trace.pool.intern(strip_api_version(trace.pool.get(raw)))).first;
      }
      call.name = it->second;
    }
    trace.api_calls.push_back(call);
    ++trace.stats.api_calls;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  return true;
}

bool NsysReader::read_graph_nodes(Trace& trace, std::string& error) {
  const std::string table = "PYPROF_CUDA_GRAPH_NODES";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"nodeId", "originalNodeId", "start", "globalTid"}, error, "",
                       kNotNsys)) {
    return false;
  }
  Statement s = db_.prepare(
      select_columns(cols, table, {"nodeId", "originalNodeId", "start", "globalTid"}), error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.is_null(0) || s.is_null(2) || s.is_null(3)) {
      ++trace.stats.rows_skipped;
      trace.warn("CUDA graph node without id, time or thread",
                 "a " + table + " row has NULL nodeId, start or globalTid: skipped");
      continue;
    }
    GraphNode n;
    n.node_id = s.int64(0);
    n.original_node_id = or_default(s, 1, -1);
    n.start = s.int64(2);
    auto gtid = static_cast<uint64_t>(s.int64(3));
    n.pid = nsys::pid_of_global_id(gtid);
    n.tid = nsys::tid_of_global_tid(gtid);
    trace.graph_nodes.push_back(n);
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error);
  return true;
}

namespace {

// Domains are per process: (pid << 32 | domainId) -> domain name.
using DomainNames = std::unordered_map<uint64_t, std::string>;

// NVTX domains without a creation row: (pid, domain id).
using UnknownDomains = std::vector<std::pair<uint32_t, int64_t>>;

uint64_t domain_key(uint32_t pid, int64_t id) {
  return (uint64_t{pid} << 32) | static_cast<uint32_t>(id);
}

// The database's size in bytes (page count times page size); 0 when SQLite does not say.
uint64_t db_file_bytes(const SqliteDb& db) {
  uint64_t product = 1;
  for (const char* pragma : {"PRAGMA page_count", "PRAGMA page_size"}) {
    std::string error;
    Statement s = db.prepare(pragma, error);
    if (!s.valid() || s.step() != SQLITE_ROW || s.int64(0) <= 0) return 0;
    product *= static_cast<uint64_t>(s.int64(0));
  }
  return product;
}

// Reads the NVTX_EVENTS rows with rowid in [lo, hi] into `trace` (ranges, marks, their pool
// strings, stats, warnings), with room reserved for `expected_rows`. Runs on its own connection,
// so two chunks can be read at once. Domains without a creation row are added to
// `unknown_domains` ((pid, id), in the order first used) for warn_unknown_domains, once the
// whole table is read.
bool read_range_chunk(const SqliteDb& db, const std::string& select, int64_t lo, int64_t hi,
                      size_t expected_rows, const DomainNames& domain_names, Trace& trace,
                      UnknownDomains& unknown_domains, std::string& error) {
  Statement s = db.prepare(select + " WHERE rowid BETWEEN ? AND ?", error);
  if (!s.valid()) return false;
  s.bind_int64(1, lo);
  s.bind_int64(2, hi);
  StringIdCache strings;
  if (!strings.open(db, error)) return false;
  // Nearly every row is a range: sized once, the vector never holds two copies while growing
  // (3.2M ranges at 1M kernels: ~300 MB).
  trace.ranges.reserve(trace.ranges.size() + expected_rows);
  auto string_id = [&](int64_t id) { return strings.get(trace, id); };
  std::unordered_map<uint64_t, uint32_t> domains;  // domain_key -> pool id
  auto domain_of = [&](uint32_t pid, int64_t id) -> uint32_t {
    uint64_t key = domain_key(pid, id);
    auto it = domains.find(key);
    if (it != domains.end()) return it->second;
    auto name = domain_names.find(key);
    uint32_t pool_id;
    if (name != domain_names.end()) {
      pool_id = trace.pool.intern(name->second);
    } else {
      pool_id = trace.pool.intern("domain#" + std::to_string(id));
      unknown_domains.emplace_back(pid, id);
    }
    domains.emplace(key, pool_id);
    return pool_id;
  };

  using nsys::NvtxEventType;
  using nsys::to_int;
  Marker marker;
  // Registered strings (module markers, interned op markers) are decoded once per (string,
  // domain): a training loop pushes the same few thousand of them millions of times.
  struct Registered {
    Marker marker;
    MarkerPoolIds ids;
  };
  std::unordered_map<uint64_t, Registered> registered;
  TextMarkerCache text_markers;  // text op markers (version 1), decoded once per signature
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    int64_t type = s.int64_or(3, -1);
    RangeRecord base;
    // Ranges nsys imported from NVTXT files behave like the ones it recorded.
    if (type == to_int(NvtxEventType::kPushPopRange) ||
        type == to_int(NvtxEventType::kNvtxtPushPopRange)) {
      base.shape = RangeShape::kPushPop;
    } else if (type == to_int(NvtxEventType::kStartEndRange) ||
               type == to_int(NvtxEventType::kNvtxtStartEndRange)) {
      base.shape = RangeShape::kStartEnd;
    } else if (type == to_int(NvtxEventType::kMark)) {
      base.shape = RangeShape::kMark;
    } else {
      continue;  // domains (read beforehand), categories, thread names: not ranges
    }
    if (s.is_null(1)) {
      ++trace.stats.rows_skipped;
      trace.warn("range without start", "an NVTX_EVENTS row has NULL start: skipped");
      continue;
    }
    auto gtid = static_cast<uint64_t>(or_default(s, 4, 0));
    base.start = s.int64(1);
    base.end = base.shape == RangeShape::kMark ? base.start : or_default(s, 2, kOpenEnd);
    base.pid = nsys::pid_of_global_id(gtid);
    base.tid = nsys::tid_of_global_tid(gtid);
    int64_t domain_id = or_default(s, 5, 0);
    if (domain_id != 0) base.domain = domain_of(base.pid, domain_id);
    RangeValues values;
    values.uint64_value = static_cast<uint64_t>(s.int64(9));
    values.has_uint64 = values.uint64_value != 0 || !s.is_null(9);
    const int64_t category = or_default(s, 8, 0);
    if (category > 0 && category <= int64_t{UINT32_MAX}) {
      values.category = static_cast<uint32_t>(category);
    }
    if (const int64_t text_id = s.int64(6); text_id != 0 || !s.is_null(6)) {
      const uint32_t id = string_id(text_id);
      const std::string_view text = trace.pool.get(id);
      const TextRef ref{TextRef::Where::kPool, id};
      auto [it, fresh] = registered.try_emplace((uint64_t{id} << 32) | base.domain);
      if (fresh) decode_marker(text, marker_domain(trace, base), it->second.marker);
      add_decoded_range(trace, base, text, ref, it->second.marker, values, &it->second.ids);
    } else {
      const std::string_view text = s.text(7);
      // A rowid past what a TextRef holds (a hand-made table) keeps its text in the pool.
      const int64_t row = s.int64(0);
      const TextRef ref = row >= 0 && row <= kMaxTextRowId
                              ? TextRef{TextRef::Where::kRow, row}
                              : TextRef{TextRef::Where::kPool, trace.pool.intern(text)};
      text_markers.add_range(trace, base, text, ref, marker, values);
    }
  }
  if (rc != SQLITE_DONE) {
    error = "error reading table NVTX_EVENTS: " + db.last_error();
    return false;
  }
  return true;
}

// One warning per domain without a creation row, in the order the table first used them.
void warn_unknown_domains(const UnknownDomains& domains, Trace& trace) {
  std::set<std::pair<uint32_t, int64_t>> warned;
  for (const auto& [pid, id] : domains) {
    if (!warned.insert({pid, id}).second) continue;
    trace.warn("unknown NVTX domain", "ranges use domain id " + std::to_string(id) +
                                          " of process " + std::to_string(pid) +
                                          ", which has no creation row");
  }
}

// Moves `part`'s ranges, counts and warnings into `trace`, renumbering its pool ids.
void merge_ranges(Trace& part, Trace& trace) {
  std::vector<uint32_t> remap(part.pool.size(), UINT32_MAX);
  auto map = [&](uint32_t id) {
    if (remap[id] == UINT32_MAX) remap[id] = trace.pool.intern(part.pool.get(id));
    return remap[id];
  };
  trace.ranges.reserve(trace.ranges.size() + part.ranges.size());
  for (RangeRecord r : part.ranges) {
    r.name = map(r.name);
    r.domain = map(r.domain);
    r.detail = map(r.detail);
    r.stack = map(r.stack);
    if (r.text.where == TextRef::Where::kPool) {
      r.text.id = map(static_cast<uint32_t>(r.text.id));
    }
    if (r.args_length == kArgsInPool) r.args_offset = map(r.args_offset);
    trace.ranges.push_back(r);
  }
  // The trace-level marks: the last settings mark in table order wins, compiled kernels join.
  if (!part.torch_settings.empty()) trace.torch_settings = std::move(part.torch_settings);
  merge_compiled_kernels(part, trace);
  trace.interned_args_bytes += part.interned_args_bytes;
  ReadStats& a = trace.stats;
  const ReadStats& b = part.stats;
  a.ranges += b.ranges;
  a.marks += b.marks;
  a.malformed_markers += b.malformed_markers;
  a.ranges_end_before_start += b.ranges_end_before_start;
  a.ranges_unclosed += b.ranges_unclosed;
  a.rows_skipped += b.rows_skipped;
  for (auto& group : part.warnings) {
    for (int64_t i = 0; i < group.count; ++i) {
      trace.warn(group.category, i < static_cast<int64_t>(group.examples.size())
                                     ? std::move(group.examples[i])
                                     : std::string());
    }
  }
}

}  // namespace

bool NsysReader::read_ranges(Trace& trace, std::string& error,
                             const std::function<bool()>& other_tables) {
  const std::string table = "NVTX_EVENTS";
  if (!db_.has_table(table)) return other_tables();
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "eventType"}, error, "", kNotNsys)) return false;
  if (!cols.count("text") && !cols.count("textId")) {
    error = "table NVTX_EVENTS has neither 'text' nor 'textId'";
    return false;
  }
  if (cols.count("text")) {
    text_lookup_ = db_.prepare("SELECT text FROM NVTX_EVENTS WHERE rowid = ?", error);
    if (!text_lookup_.valid()) return false;
  }
  // Domain names must be known before any message is decoded (only the "pyprof" domain holds
  // JSON markers), and a range can come before its domain's creation row in table order.
  auto read_domain_names = [&](const SqliteDb& db, DomainNames& names, std::string& err) {
    Statement s = db.prepare(
        select_columns(cols, table, {"globalTid", "domainId", "text"}, " WHERE eventType = ?"),
        err);
    if (!s.valid()) return false;
    s.bind_int64(1, nsys::to_int(nsys::NvtxEventType::kDomainCreate));
    while (s.step() == SQLITE_ROW) {
      auto pid = nsys::pid_of_global_id(static_cast<uint64_t>(or_default(s, 0, 0)));
      names[domain_key(pid, or_default(s, 1, 0))] = std::string(s.text(2));
    }
    return true;
  };
  // Two single-aggregate queries: SQLite answers each from the b-tree's ends.
  int64_t lo = 0, hi = -1;
  for (const char* agg : {"min", "max"}) {
    Statement s = db_.prepare(std::string("SELECT ") + agg + "(rowid) FROM NVTX_EVENTS", error);
    if (!s.valid()) return false;
    if (s.step() == SQLITE_ROW && !s.is_null(0)) (agg[1] == 'i' ? lo : hi) = s.int64(0);
  }
  DomainNames domain_names;
  const std::string select =
      select_columns(cols, table,
                     {"rowid", "start", "end", "eventType", "globalTid", "domainId", "textId",
                      "text", "category", "uint64Value"});
  uint64_t parallel_rows = 200000, chunk_rows = uint64_t{1} << 18;
  if (const char* set = std::getenv(env::kParseChunkRows); set != nullptr && std::atoll(set) > 0) {
    parallel_rows = 0;
    chunk_rows = static_cast<uint64_t>(std::atoll(set));
  }
  // The chunks below split the rowid span, which in the files nsys and pyprof write is the row
  // count. Any table may have gaps (rows deleted, rowids given by hand, negative ones): a span
  // longer than the whole file could hold rows is read in one pass instead, without a reserve
  // for rows that are not there. (No row of NVTX_EVENTS takes less than 16 bytes of the file.)
  const uint64_t extent = hi >= lo ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 0;
  const bool dense_enough = hi >= lo && extent < db_file_bytes(db_) / 16;
  if (hi < lo || extent < parallel_rows || !dense_enough) {
    UnknownDomains unknown;
    const size_t expected_rows = dense_enough ? static_cast<size_t>(extent + 1) : 0;
    if (!other_tables() || !read_domain_names(db_, domain_names, error) ||
        (hi >= lo && !read_range_chunk(db_, select, lo, hi, expected_rows, domain_names, trace,
                                       unknown, error)))
      return false;
    warn_unknown_domains(unknown, trace);
    return true;
  }
  // Decoding messages is most of the read time. The table is read in chunks of rows, each into a
  // Trace of its own, by two threads on their own connections: a second thread reads the domain
  // names and starts on the chunks at once, this one joins in once it has read the other tables.
  // The chunks are merged in table order as they are done, so the trace (its pool ids included)
  // is the same whichever thread read which chunk, and few chunks wait in memory at a time.
  const auto chunks = static_cast<size_t>(extent / chunk_rows + 1);
  struct Chunk {
    std::unique_ptr<Trace> trace;
    UnknownDomains unknown_domains;
    std::string error;
    bool done = false, ok = false;
  };
  std::vector<Chunk> parts(chunks);
  // The trace's budget for interned args is shared between the chunks: merged, they stay in it.
  const size_t args_budget_per_chunk =
      (trace.interned_args_budget -
       std::min(trace.interned_args_bytes, trace.interned_args_budget)) /
      chunks;
  std::mutex mutex;
  std::condition_variable chunk_done;
  size_t next = 0;
  bool stop = false;
  // Range arrays of merged chunks, emptied, for the chunks still to read (under `mutex`): the
  // kernel zeroes every page of a fresh array when it is first written, ~25 MB a chunk.
  std::vector<std::vector<RangeRecord>> spare_ranges;
  // Reads chunks until none is left (or one failed, or stop); `merge` runs after each.
  auto read_chunks = [&](const SqliteDb& db, const std::function<void()>& merge) {
    for (;;) {
      size_t c;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (stop || next >= chunks) return;
        c = next++;
      }
      auto part = std::make_unique<Trace>();
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!spare_ranges.empty()) {
          part->ranges = std::move(spare_ranges.back());
          spare_ranges.pop_back();
        }
      }
      part->interned_args_budget = args_budget_per_chunk;
      std::string part_error;
      // In range: the extent is below the file's size, far from int64's limits.
      const int64_t first = lo + static_cast<int64_t>(c * chunk_rows);
      const int64_t last = std::min(hi, first + static_cast<int64_t>(chunk_rows) - 1);
      UnknownDomains unknown;
      const bool ok =
          read_range_chunk(db, select, first, last, static_cast<size_t>(last - first + 1),
                           domain_names, *part, unknown, part_error);
      {
        std::lock_guard<std::mutex> lock(mutex);
        parts[c].trace = std::move(part);
        parts[c].unknown_domains = std::move(unknown);
        parts[c].error = std::move(part_error);
        parts[c].ok = ok;
        parts[c].done = true;
        if (!ok) stop = true;
      }
      chunk_done.notify_all();
      if (merge) merge();
    }
  };
  std::string worker_error;
  std::promise<bool> names_ready;
  std::thread worker([&] {
    SqliteDb second;
    bool ok = second.open(db_.opened_path(), worker_error) &&
              read_domain_names(second, domain_names, worker_error);
    names_ready.set_value(ok);
    if (ok) read_chunks(second, nullptr);
  });
  trace.ranges.reserve(trace.ranges.size() + static_cast<size_t>(extent + 1));
  // Merges the chunks that are done, in order, from `merged` on; with `wait`, all of them.
  size_t merged = 0;
  bool merge_ok = true;
  UnknownDomains unknown;
  auto merge_done = [&](bool wait) {
    while (merge_ok && merged < chunks) {
      Chunk* part;
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (wait) {
          chunk_done.wait(lock, [&] { return parts[merged].done || (stop && next <= merged); });
        }
        if (!parts[merged].done) return;
        part = &parts[merged];
      }
      if (!part->ok) {
        error = part->error;
        merge_ok = false;
        return;
      }
      merge_ranges(*part->trace, trace);
      std::vector<RangeRecord> ranges = std::move(part->trace->ranges);
      ranges.clear();
      part->trace.reset();
      {
        // One spare a reading thread: the chunks read ahead while this thread read the other
        // tables are not all kept, which would raise the read's peak by their size.
        std::lock_guard<std::mutex> lock(mutex);
        if (spare_ranges.size() < 2) spare_ranges.push_back(std::move(ranges));
      }
      unknown.insert(unknown.end(), part->unknown_domains.begin(), part->unknown_domains.end());
      ++merged;
    }
  };
  bool ok = other_tables();
  const bool names_ok = names_ready.get_future().get();
  if (ok && names_ok) {
    read_chunks(db_, [&] { merge_done(false); });
    merge_done(true);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  worker.join();
  if (!ok) return false;
  if (!names_ok) {
    error = worker_error;
    return false;
  }
  if (!merge_ok) return false;
  if (merged < chunks) {
    error = "NVTX_EVENTS: chunk " + std::to_string(merged) + " was not read";
    return false;
  }
  warn_unknown_domains(unknown, trace);
  return true;
}

std::string_view NsysReader::fetch_text(const Trace& trace, TextRef ref) {
  if (ref.where == TextRef::Where::kPool) return trace.pool.get(static_cast<uint32_t>(ref.id));
  if (ref.where != TextRef::Where::kRow || !text_lookup_.valid()) return {};
  text_lookup_.reset();
  text_lookup_.bind_int64(1, ref.id);
  if (text_lookup_.step() != SQLITE_ROW) return {};
  fetched_.assign(text_lookup_.text(0));
  return fetched_;
}

}  // namespace pyprof::parse
