#include "parse/memory_events.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <set>
#include <unordered_set>

#include "common/nsys_schema.h"

namespace pyprof::parse {

namespace {

// c10::DeviceType::CPU: the CPU allocator, written as device -1 (docs/formats.md §3.2).
constexpr int64_t kCpuDeviceType = 0;

int32_t device_of(int64_t device_type, int64_t device_id) {
  if (device_type == kCpuDeviceType) return -1;
  return to_i32(device_id);
}

void set_source(Trace& trace, std::string_view source) {
  if (trace.memory_source.empty()) trace.memory_source = std::string(source);
}

}  // namespace

bool read_memory_table(const SqliteDb& db, Trace& trace, std::string& error) {
  const std::string table = "PYPROF_MEMORY_EVENTS";
  // Capture was on and nothing was allocated: still a statement about memory (zero events).
  if (trace.memory_capture == "on") set_source(trace, dict::memory_source::kPyprof);
  if (!db.has_table(table)) return true;
  const std::set<std::string> cols = db.columns(table);
  std::string layout_error;
  if (!require_columns(cols, table, {"start", "globalTid", "address", "bytes"}, layout_error)) {
    trace.warn("table of an unknown layout", layout_error + ": skipped");
    return true;
  }
  // Optional columns are read as NULL when absent.
  auto column = [&](const char* name) {
    return cols.count(name) ? std::string(name) : std::string("NULL");
  };
  const std::string sql = "SELECT start, globalTid, address, bytes, " + column("totalAllocated") +
                          ", " + column("totalReserved") + ", " + column("deviceType") + ", " +
                          column("deviceId") + " FROM " + table;
  Statement s = db.prepare(sql, error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.is_null(0) || s.is_null(1) || s.is_null(2) || s.is_null(3)) {
      ++trace.stats.rows_skipped;
      trace.warn("memory event without a time, thread, address or size",
                 "a " + table + " row has NULL start, globalTid, address or bytes: skipped");
      continue;
    }
    MemoryEvent e;
    e.start = s.int64(0);
    const auto gtid = static_cast<uint64_t>(s.int64(1));
    e.pid = nsys::pid_of_global_id(gtid);
    e.tid = nsys::tid_of_global_tid(gtid);
    e.address = s.int64(2);
    e.bytes = s.int64(3);
    if (!s.is_null(4)) e.total_allocated = s.int64(4);
    if (!s.is_null(5)) e.total_reserved = s.int64(5);
    // Without a device type, a device id says CUDA (the CPU's is -1).
    e.device = s.is_null(6) ? (s.is_null(7) ? -1 : to_i32(s.int64(7)))
                            : device_of(s.int64(6), s.int64_or(7, -1));
    trace.memory_events.push_back(e);
  }
  if (rc != SQLITE_DONE) return step_failed(db, table, error);
  if (!trace.memory_events.empty()) set_source(trace, dict::memory_source::kPyprof);
  return true;
}

KinetoMemoryEvents::KinetoMemoryEvents() : parser_(std::make_unique<simdjson::dom::parser>()) {}
KinetoMemoryEvents::~KinetoMemoryEvents() = default;

bool KinetoMemoryEvents::add(std::string_view json, int64_t start, uint32_t pid, uint32_t tid,
                             Trace& trace, std::string& why) {
  simdjson::dom::element event;
  if (parser_->parse(json.data(), json.size()).get(event) != simdjson::SUCCESS) {
    why = "a [memory] event that is not valid JSON";
    return false;
  }
  simdjson::dom::object args;
  if (event["args"].get_object().get(args) != simdjson::SUCCESS) {
    why = "a [memory] event without \"args\"";
    return false;
  }
  // An integer arg, or `fallback`; addresses above 2^63 (none in a user space) keep their bits.
  auto integer = [&](const char* key, int64_t fallback, bool& found) {
    simdjson::dom::element value;
    found = false;
    if (args[key].get(value) != simdjson::SUCCESS) return fallback;
    int64_t v;
    uint64_t u;
    if (value.get_int64().get(v) == simdjson::SUCCESS) {
      found = true;
      return v;
    }
    if (value.get_uint64().get(u) == simdjson::SUCCESS) {
      found = true;
      return static_cast<int64_t>(u);
    }
    return fallback;
  };
  bool found = false;
  MemoryEvent e;
  e.start = start;
  e.pid = pid;
  e.tid = tid;
  e.bytes = integer("Bytes", 0, found);
  if (!found) {
    why = "a [memory] event without an integer \"Bytes\"";
    return false;
  }
  e.address = integer("Addr", 0, found);
  e.total_allocated = integer("Total Allocated", MemoryEvent::kNoTotal, found);
  e.total_reserved = integer("Total Reserved", MemoryEvent::kNoTotal, found);
  bool has_type = false, has_id = false;
  const int64_t type = integer("Device Type", kCpuDeviceType, has_type);
  const int64_t id = integer("Device Id", -1, has_id);
  e.device = device_of(type, id);
  trace.memory_events.push_back(e);
  set_source(trace, dict::memory_source::kKineto);
  return true;
}

MemorySummary check_memory_events(Trace& trace, const Correlation& corr,
                                  const Iterations* iterations) {
  MemorySummary summary;
  summary.events = static_cast<int64_t>(corr.memory_order.size());
  const bool has_steps = iterations != nullptr && !iterations->steps.empty();
  // The blocks live at each point, by (device, address): a free of any other is one the capture
  // never saw allocated.
  struct BlockHash {
    size_t operator()(const std::pair<int32_t, int64_t>& b) const {
      return std::hash<int64_t>{}(b.second) ^ (static_cast<size_t>(b.first) << 1);
    }
  };
  std::unordered_set<std::pair<int32_t, int64_t>, BlockHash> live;
  for (int32_t i : corr.memory_order) {
    const MemoryEvent& e = trace.memory_events[static_cast<size_t>(i)];
    if (e.bytes >= 0) {
      ++summary.allocations;
      live.insert({e.device, e.address});
    } else {
      ++summary.frees;
      if (live.erase({e.device, e.address}) == 0) ++summary.frees_unknown;
    }
    const bool negative = (e.total_allocated != MemoryEvent::kNoTotal && e.total_allocated < 0) ||
                          (e.total_reserved != MemoryEvent::kNoTotal && e.total_reserved < 0);
    if (negative) {
      ++summary.negative_totals;
      trace.warn("memory events with a negative total (kept as reported)",
                 fmt::format(
                     "{} bytes at address {} on thread {} at {}: total allocated {}, "
                     "reserved {}",
                     e.bytes, e.address, e.tid, e.start,
                     e.total_allocated == MemoryEvent::kNoTotal ? std::string("none")
                                                                : std::to_string(e.total_allocated),
                     e.total_reserved == MemoryEvent::kNoTotal ? std::string("none")
                                                               : std::to_string(e.total_reserved)));
    }
    if (has_steps && iterations->step_at(e.start) < 0) ++summary.outside_steps;
  }
  return summary;
}

std::string memory_summary_line(const Trace& trace, const MemorySummary& summary) {
  if (trace.memory_source.empty()) {
    if (trace.memory_capture.starts_with("off")) {
      return "memory: not recorded (" + trace.memory_capture + ")";
    }
    return {};
  }
  std::string line =
      fmt::format("{} memory events ({} frees of blocks allocated before the capture)",
                  summary.events, summary.frees_unknown);
  if (summary.outside_steps > 0)
    line += fmt::format("; {} outside every step", summary.outside_steps);
  if (summary.negative_totals > 0) {
    line += fmt::format("; {} with a negative total, kept as reported", summary.negative_totals);
  }
  return line;
}

}  // namespace pyprof::parse
