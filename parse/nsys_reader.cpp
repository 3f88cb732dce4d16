#include "parse/nsys_reader.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/kernel_names.h"
#include "common/nsys_schema.h"
#include "parse/memory_events.h"
#include "parse/nsys_columns.h"

namespace pyprof::parse {

namespace {

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

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI callback names carry the API version
// (trace-formats.md §1.5); "_v2" style suffixes are part of the real API name and stay.
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
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on the inlined
    // `"\"" + std::string(...)` chain.
    std::string detail = "\"";
    detail += trace.pool.get(r.name).substr(0, 60);
    detail += "\" started at " + std::to_string(r.start) + " on thread " + std::to_string(r.tid);
    detail += ", ends at the session's end " + std::to_string(r.end);
    detail += ": kept as unclosed, enclosing nothing";
    trace.warn("range never closed (ended by the session's end)", detail);
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
        trace.warn(memcpy ? "copy without start/end" : "memset without start/end",
                   table + " row with NULL start or end: skipped");
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

}  // namespace pyprof::parse
