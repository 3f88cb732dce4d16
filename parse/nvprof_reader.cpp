#include "parse/nvprof_reader.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/kernel_names.h"
#include "common/nsys_schema.h"

namespace pyprof::parse {

namespace {

// One column to select: `fallback` (an SQL literal) stands for NULL and for a column the table
// lacks, so that the row loop reads plain values; without one, NULL reads as NULL.
struct Column {
  Column(const char* name, const char* fallback = nullptr) : name(name), fallback(fallback) {}
  const char* name;
  const char* fallback;
};

// Builds a SELECT of `columns` from `table` (positions fixed whatever the schema), and one more
// column, last, that is 1 when any of the `essential` columns is NULL. Defaults and NULL checks
// run inside SQLite: each sqlite3_column_* call costs a mutex round trip.
std::string select_columns(const std::set<std::string>& have, const std::string& table,
                           std::initializer_list<Column> columns,
                           std::initializer_list<const char*> essential) {
  auto quoted = [](const char* name) { return std::string("\"") + name + "\""; };
  std::string sql = "SELECT ";
  for (const Column& c : columns) {
    if (have.count(c.name)) {
      sql += c.fallback ? "coalesce(" + quoted(c.name) + ", " + c.fallback + ")" : quoted(c.name);
    } else {
      sql += c.fallback ? c.fallback : "NULL";
    }
    sql += ", ";
  }
  sql += "(0";
  for (const char* name : essential) sql += " OR " + quoted(name) + " IS NULL";
  return sql + ") FROM \"" + table + "\"";
}

constexpr std::string_view kNvprof = "nvprof";

// CUPTI stores 32-bit process and thread ids in signed columns (pthread_self() truncated to 32
// bits shows up negative); the low 32 bits are the id.
uint32_t low32(int64_t v) { return static_cast<uint32_t>(static_cast<uint64_t>(v) & 0xFFFFFFFFu); }

// nvprof stores CUPTI's memory kinds; records carry nsys' numbering. A value past uint32 is as
// unknown as any other stray one.
uint8_t nsys_mem_kind(int64_t cupti) {
  if (cupti < 0 || cupti > std::numeric_limits<uint32_t>::max()) return nsys::kMemKindUnknown;
  return static_cast<uint8_t>(nsys::mem_kind_from_cupti(static_cast<uint32_t>(cupti)));
}

// CUpti_ActivityMemcpyKind 0-10 equals ENUM_CUDA_MEMCPY_OPER 0-10; nothing else is known.
uint8_t nsys_copy_kind(int64_t cupti) {
  return (cupti >= 0 && cupti <= 10) ? static_cast<uint8_t>(cupti) : 0;
}

// nvprof records API calls by callback id only. Names from cupti_runtime_cbid.h /
// cupti_driver_cbid.h (the ids never change between CUDA versions), "_vNNNN" suffix dropped as
// for nsys names; the launches, copies, sets and syncs that parse and reports look at.
struct CbidName {
  int cbid;
  const char* name;
};
constexpr CbidName kRuntimeNames[] = {
    {3, "cudaGetDeviceCount"},
    {4, "cudaGetDeviceProperties"},
    {8, "cudaConfigureCall"},
    {9, "cudaSetupArgument"},
    {10, "cudaGetLastError"},
    {11, "cudaPeekAtLastError"},
    {13, "cudaLaunch"},
    {15, "cudaFuncGetAttributes"},
    {16, "cudaSetDevice"},
    {17, "cudaGetDevice"},
    {20, "cudaMalloc"},
    {22, "cudaFree"},
    {25, "cudaMallocHost"},
    {26, "cudaFreeHost"},
    {27, "cudaHostAlloc"},
    {31, "cudaMemcpy"},
    {32, "cudaMemcpy2D"},
    {33, "cudaMemcpyToArray"},
    {34, "cudaMemcpy2DToArray"},
    {35, "cudaMemcpyFromArray"},
    {36, "cudaMemcpy2DFromArray"},
    {37, "cudaMemcpyArrayToArray"},
    {38, "cudaMemcpy2DArrayToArray"},
    {39, "cudaMemcpyToSymbol"},
    {40, "cudaMemcpyFromSymbol"},
    {41, "cudaMemcpyAsync"},
    {42, "cudaMemcpyToArrayAsync"},
    {43, "cudaMemcpyFromArrayAsync"},
    {44, "cudaMemcpy2DAsync"},
    {45, "cudaMemcpy2DToArrayAsync"},
    {46, "cudaMemcpy2DFromArrayAsync"},
    {47, "cudaMemcpyToSymbolAsync"},
    {48, "cudaMemcpyFromSymbolAsync"},
    {49, "cudaMemset"},
    {50, "cudaMemset2D"},
    {51, "cudaMemsetAsync"},
    {52, "cudaMemset2DAsync"},
    {126, "cudaThreadSynchronize"},
    {129, "cudaStreamCreate"},
    {131, "cudaStreamSynchronize"},
    {132, "cudaStreamQuery"},
    {133, "cudaEventCreate"},
    {134, "cudaEventCreateWithFlags"},
    {135, "cudaEventRecord"},
    {137, "cudaEventSynchronize"},
    {138, "cudaEventQuery"},
    {139, "cudaEventElapsedTime"},
    {142, "cudaMemset3D"},
    {143, "cudaMemset3DAsync"},
    {144, "cudaMemcpy3D"},
    {145, "cudaMemcpy3DAsync"},
    {147, "cudaStreamWaitEvent"},
    {151, "cudaPointerGetAttributes"},
    {160, "cudaMemcpyPeer"},
    {161, "cudaMemcpyPeerAsync"},
    {162, "cudaMemcpy3DPeer"},
    {163, "cudaMemcpy3DPeerAsync"},
    {165, "cudaDeviceSynchronize"},
    {198, "cudaStreamCreateWithFlags"},
    {200, "cudaDeviceGetAttribute"},
    {202, "cudaStreamCreateWithPriority"},
    {211, "cudaLaunchKernel"},
    {213, "cudaLaunch_ptsz"},
    {214, "cudaLaunchKernel_ptsz"},
    {215, "cudaMemcpy_ptds"},
    {216, "cudaMemcpy2D_ptds"},
    {217, "cudaMemcpyToArray_ptds"},
    {218, "cudaMemcpy2DToArray_ptds"},
    {219, "cudaMemcpyFromArray_ptds"},
    {220, "cudaMemcpy2DFromArray_ptds"},
    {221, "cudaMemcpyArrayToArray_ptds"},
    {222, "cudaMemcpy2DArrayToArray_ptds"},
    {223, "cudaMemcpyToSymbol_ptds"},
    {224, "cudaMemcpyFromSymbol_ptds"},
    {225, "cudaMemcpyAsync_ptsz"},
    {226, "cudaMemcpyToArrayAsync_ptsz"},
    {227, "cudaMemcpyFromArrayAsync_ptsz"},
    {228, "cudaMemcpy2DAsync_ptsz"},
    {229, "cudaMemcpy2DToArrayAsync_ptsz"},
    {230, "cudaMemcpy2DFromArrayAsync_ptsz"},
    {231, "cudaMemcpyToSymbolAsync_ptsz"},
    {232, "cudaMemcpyFromSymbolAsync_ptsz"},
    {233, "cudaMemset_ptds"},
    {234, "cudaMemset2D_ptds"},
    {235, "cudaMemsetAsync_ptsz"},
    {236, "cudaMemset2DAsync_ptsz"},
    {239, "cudaStreamSynchronize_ptsz"},
    {242, "cudaEventRecord_ptsz"},
    {243, "cudaMemset3D_ptds"},
    {244, "cudaMemset3DAsync_ptsz"},
    {245, "cudaMemcpy3D_ptds"},
    {246, "cudaMemcpy3DAsync_ptsz"},
    {247, "cudaStreamWaitEvent_ptsz"},
    {249, "cudaMemcpy3DPeer_ptds"},
    {250, "cudaMemcpy3DPeerAsync_ptsz"},
    {251, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"},
    {269, "cudaLaunchCooperativeKernel"},
    {270, "cudaLaunchCooperativeKernel_ptsz"},
    {311, "cudaGraphLaunch"},
    {312, "cudaGraphLaunch_ptsz"},
    {373, "cudaMallocAsync"},
    {375, "cudaFreeAsync"},
    {430, "cudaLaunchKernelExC"},
    {431, "cudaLaunchKernelExC_ptsz"},
};
constexpr CbidName kDriverNames[] = {
    {17, "cuCtxSynchronize"},
    {43, "cuMemcpyHtoD"},
    {45, "cuMemcpyDtoH"},
    {47, "cuMemcpyDtoD"},
    {60, "cuMemcpyHtoDAsync"},
    {62, "cuMemcpyDtoHAsync"},
    {64, "cuMemcpyDtoDAsync"},
    {71, "cuMemsetD8"},
    {73, "cuMemsetD16"},
    {75, "cuMemsetD32"},
    {115, "cuLaunch"},
    {116, "cuLaunchGrid"},
    {117, "cuLaunchGridAsync"},
    {119, "cuEventRecord"},
    {121, "cuEventSynchronize"},
    {126, "cuStreamSynchronize"},
    {216, "cuMemsetD8Async"},
    {218, "cuMemsetD16Async"},
    {220, "cuMemsetD32Async"},
    {243, "cuMemAlloc_v2"},
    {245, "cuMemFree_v2"},
    {249, "cuMemsetD8_v2"},
    {250, "cuMemsetD16_v2"},
    {251, "cuMemsetD32_v2"},
    {252, "cuMemsetD2D8_v2"},
    {253, "cuMemsetD2D16_v2"},
    {254, "cuMemsetD2D32_v2"},
    {276, "cuMemcpyHtoD_v2"},
    {277, "cuMemcpyHtoDAsync_v2"},
    {278, "cuMemcpyDtoH_v2"},
    {279, "cuMemcpyDtoHAsync_v2"},
    {280, "cuMemcpyDtoD_v2"},
    {281, "cuMemcpyDtoDAsync_v2"},
    {287, "cuMemcpy2D_v2"},
    {289, "cuMemcpy2DAsync_v2"},
    {290, "cuMemcpy3D_v2"},
    {291, "cuMemcpy3DAsync_v2"},
    {295, "cuStreamWaitEvent"},
    {305, "cuMemcpy"},
    {306, "cuMemcpyAsync"},
    {307, "cuLaunchKernel"},
    {318, "cuMemcpyPeer"},
    {319, "cuMemcpyPeerAsync"},
    {442, "cuLaunchKernel_ptsz"},
    {477, "cuLaunchCooperativeKernel"},
    {478, "cuLaunchCooperativeKernel_ptsz"},
    {514, "cuGraphLaunch"},
    {515, "cuGraphLaunch_ptsz"},
    {598, "cuMemAllocAsync"},
    {599, "cuMemAllocAsync_ptsz"},
    {600, "cuMemFreeAsync"},
    {601, "cuMemFreeAsync_ptsz"},
    {652, "cuLaunchKernelEx"},
    {653, "cuLaunchKernelEx_ptsz"},
};

std::string api_name(bool driver, int64_t cbid) {
  if (driver) {
    for (const auto& e : kDriverNames) {
      if (e.cbid == cbid) return e.name;
    }
    return "driver cbid:" + std::to_string(cbid);
  }
  for (const auto& e : kRuntimeNames) {
    if (e.cbid == cbid) return e.name;
  }
  return "cbid:" + std::to_string(cbid);
}

// CUPTI_ACTIVITY_FLAG_MARKER_* (cupti_activity.h).
constexpr int64_t kMarkerInstantaneous = 1 << 0;
constexpr int64_t kMarkerStart = 1 << 1;
constexpr int64_t kMarkerEnd = 1 << 2;

// CUpti_ActivityObjectKind values whose objectId holds {uint32 processId, uint32 threadId}
// (the other kinds hold device/context/stream ids).
bool object_is_thread(int64_t kind) { return kind >= 0 && kind <= 2; }

constexpr size_t kObjectIdBytes = 12;  // sizeof(CUpti_ActivityObjectKindId)

uint32_t read_le32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  }
  return v;
}

}  // namespace

bool NvprofReader::read(Trace& trace, std::string& error) {
  trace.format = "nvprof";
  strings_.clear();
  pooled_.clear();
  pid_of_corr_.clear();
  bool ok = read_version(trace, error) && read_strings(error) && read_devices(trace, error) &&
            read_api_calls(trace, false, error) && read_api_calls(trace, true, error);
  if (ok) {
    const std::string concurrent = "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL";
    const std::string serial = "CUPTI_ACTIVITY_KIND_KERNEL";  // nvprof --analysis-metrics
    if (!db_.has_table(concurrent) && !db_.has_table(serial)) {
      trace.warn("no kernel table",
                 "the database has neither " + concurrent + " nor " + serial + ": no kernels");
    }
    ok = read_kernels(trace, concurrent, error) && read_kernels(trace, serial, error) &&
         read_memcpys(trace, error) && read_memsets(trace, error) && read_markers(trace, error);
  }
  // Only the reading needs these; fetch_text reads the pool.
  strings_ = {};
  pooled_ = {};
  pid_of_corr_ = {};
  return ok;
}

std::string_view NvprofReader::fetch_text(const Trace& trace, TextRef ref) {
  if (ref.where != TextRef::Where::kPool || ref.id < 0 ||
      static_cast<uint64_t>(ref.id) >= trace.pool.size()) {
    return {};
  }
  return trace.pool.get(static_cast<uint32_t>(ref.id));
}

bool NvprofReader::read_version(Trace& trace, std::string& error) {
  if (!db_.columns("Version").count("version")) return true;
  Statement s = db_.prepare("SELECT \"version\" FROM \"Version\"", error);
  if (!s.valid()) return false;
  int rc = s.step();
  if (rc == SQLITE_ROW && !s.is_null(0)) trace.version = std::string(s.text(0));
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return step_failed(db_, "Version", error, kNvprof);
  return true;
}

bool NvprofReader::read_strings(std::string& error) {
  const std::string table = "StringTable";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"value"}, error, kNvprof)) return false;
  // _id_ is the INTEGER PRIMARY KEY in every nvprof file; rowid is the same thing.
  Statement s = db_.prepare(std::string("SELECT ") + (cols.count("_id_") ? "\"_id_\"" : "rowid") +
                                ", value FROM " + table,
                            error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.is_null(0) || s.is_null(1)) continue;  // a reference to it warns as a missing string
    strings_.emplace(s.int64(0), std::string(s.text(1)));
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  return true;
}

// CUPTI's device record as nvprof stores it (CUpti_ActivityDevice2, one row per GPU the run
// used): coreClockRate in kHz and globalMemoryBandwidth in KB/s (the CUDA 10.1 LM trace's V100
// holds 1530000 and 898048000: 877 MHz HBM2 x 4096 bits x 2), globalMemorySize in bytes, the
// name as a StringTable id, and `id` the device ordinal the GPU rows' deviceId holds. nvprof
// declares every column NOT NULL; a NULL or missing fact is read as 0, which the header
// documents as unknown.
bool NvprofReader::read_devices(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_DEVICE";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  for (const char* needed : {"id", "name"}) {
    if (!cols.count(needed)) {
      trace.warn("GPU table of an unknown layout",
                 "table " + table + " has no column '" + needed + "': GPUs not described");
      return true;
    }
  }
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"id",
                                            "name",
                                            {"numMultiprocessors", "0"},
                                            {"coreClockRate", "0"},
                                            {"globalMemoryBandwidth", "0"},
                                            {"globalMemorySize", "0"},
                                            {"computeCapabilityMajor", "0"},
                                            {"computeCapabilityMinor", "0"}},
                                           {"id"}),
                            error);
  if (!s.valid()) return false;
  // A fact in the header's unit (`scale` of the stored unit, 1000 for kHz and KB/s), or 0
  // (unknown) when the stored value is negative or its product does not fit in 64 bits.
  auto fact = [&](int64_t device, int col, const char* column, int64_t scale, const char* unit) {
    int64_t stored = s.int64(col);
    if (std::optional<int64_t> value = Trace::Device::in_header_units(stored, scale)) return *value;
    trace.warn("GPU fact out of range", table + " device " + std::to_string(device) + ": " +
                                            column + " " + std::to_string(stored) + unit +
                                            " is negative or too large: read as unknown (0)");
    return int64_t{0};
  };
  std::set<int64_t> seen;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(8)) {
      trace.warn("GPU without id", table + " row with NULL id: that GPU is not described");
      continue;
    }
    int64_t id = s.int64(0);
    if (!seen.insert(id).second) {
      trace.warn("GPU described twice", table + " has more than one row for device " +
                                            std::to_string(id) + ": the first is kept");
      continue;
    }
    Trace::Device& d = trace.devices.emplace_back();
    d.id = id;
    if (!s.is_null(1)) d.name = std::string(string(trace, s.int64(1), "GPU name"));
    d.sm_count = fact(id, 2, "numMultiprocessors", 1, "");
    d.clock_hz = fact(id, 3, "coreClockRate", 1000, " kHz");
    d.memory_bandwidth = fact(id, 4, "globalMemoryBandwidth", 1000, " KB/s");
    d.total_memory = fact(id, 5, "globalMemorySize", 1, " B");
    d.compute_major = fact(id, 6, "computeCapabilityMajor", 1, "");
    d.compute_minor = fact(id, 7, "computeCapabilityMinor", 1, "");
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  // In id order, as the nsys readers list them; the rows were read in table order, so the
  // first of two rows for one device is the one nvprof wrote first.
  std::stable_sort(trace.devices.begin(), trace.devices.end(),
                   [](const Trace::Device& a, const Trace::Device& b) { return a.id < b.id; });
  return true;
}

std::string_view NvprofReader::string(Trace& trace, int64_t id, std::string_view what) {
  auto it = strings_.find(id);
  if (it == strings_.end()) {
    trace.warn("missing string", "StringTable has no id " + std::to_string(id) + " (" +
                                     std::string(what) + "): read as empty");
    strings_.emplace(id, std::string());  // warn once per id
    return {};
  }
  if (id == 0 && it->second == "-- null --") return {};  // nvprof's placeholder for "none"
  return it->second;
}

uint32_t NvprofReader::pooled_string(Trace& trace, int64_t id, std::string_view what) {
  auto cached = pooled_.find(id);
  if (cached != pooled_.end()) return cached->second;
  uint32_t pool_id = trace.pool.intern(string(trace, id, what));
  pooled_.emplace(id, pool_id);
  return pool_id;
}

uint32_t NvprofReader::pid_of(int64_t correlation_id) const {
  auto it = pid_of_corr_.find(correlation_id);
  return it == pid_of_corr_.end() ? 0 : it->second;
}

bool NvprofReader::read_api_calls(Trace& trace, bool driver, std::string& error) {
  const std::string table = driver ? "CUPTI_ACTIVITY_KIND_DRIVER" : "CUPTI_ACTIVITY_KIND_RUNTIME";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end"}, error, kNvprof)) return false;
  Statement s = db_.prepare(
      select_columns(
          cols, table,
          {"start", "end", "cbid", {"processId", "0"}, {"threadId", "0"}, {"correlationId", "-1"}},
          {"start", "end"}),
      error);
  if (!s.valid()) return false;
  std::unordered_map<int64_t, uint32_t> name_of_cbid;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(6)) {
      ++trace.stats.rows_skipped;
      trace.warn("API call without start/end", table + " row with NULL start or end: skipped");
      continue;
    }
    ApiCall call;
    call.start = s.int64(0);
    call.end = s.int64(1);
    if (!s.is_null(2)) {
      int64_t cbid = s.int64(2);
      auto it = name_of_cbid.find(cbid);
      if (it == name_of_cbid.end()) {
        it = name_of_cbid.emplace(cbid, trace.pool.intern(api_name(driver, cbid))).first;
      }
      call.name = it->second;
    }
    call.pid = low32(s.int64(3));
    call.tid = low32(s.int64(4));
    call.correlation_id = s.int64(5);
    // CUPTI numbers correlations from 1; 0 means the call launched nothing.
    if (call.correlation_id > 0) {
      auto [it, inserted] = pid_of_corr_.emplace(call.correlation_id, call.pid);
      if (!inserted && it->second != call.pid) {
        trace.warn("correlation id in two processes",
                   "correlation id " + std::to_string(call.correlation_id) +
                       " is used by processes " + std::to_string(it->second) + " and " +
                       std::to_string(call.pid) + ": GPU work is given to the first");
      }
    }
    trace.api_calls.push_back(call);
    ++trace.stats.api_calls;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  return true;
}

bool NvprofReader::read_kernels(Trace& trace, const std::string& table, std::string& error) {
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end"}, error, kNvprof)) return false;
  if (!cols.count("name")) {
    trace.warn("kernel without name", table + " has no column 'name': kernels are unnamed");
  }
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"start",
                                            "end",
                                            {"deviceId", "-1"},
                                            {"contextId", "-1"},
                                            {"streamId", "-1"},
                                            {"correlationId", "-1"},
                                            "name",
                                            {"gridX", "0"},
                                            {"gridY", "0"},
                                            {"gridZ", "0"},
                                            {"blockX", "0"},
                                            {"blockY", "0"},
                                            {"blockZ", "0"},
                                            {"registersPerThread", "-1"},
                                            {"staticSharedMemory", "-1"},
                                            {"dynamicSharedMemory", "-1"},
                                            {"graphNodeId", "-1"}},
                                           {"start", "end"}),
                            error);
  if (!s.valid()) return false;
  // StringTable id -> (long, short) pool ids: each distinct name is demangled once.
  std::unordered_map<int64_t, std::pair<uint32_t, uint32_t>> names;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(17)) {
      ++trace.stats.rows_skipped;
      trace.warn("kernel without start/end", table + " row with NULL start or end: skipped");
      continue;
    }
    GpuActivity k;
    k.kind = ActivityKind::kKernel;
    k.start = s.int64(0);
    k.end = s.int64(1);
    k.device = to_i32(s.int64(2));
    k.context = to_i32(s.int64(3));
    k.stream = s.int64(4);
    k.correlation_id = s.int64(5);
    k.pid = pid_of(k.correlation_id);
    if (!s.is_null(6)) {
      int64_t name_id = s.int64(6);
      auto it = names.find(name_id);
      if (it == names.end()) {
        uint32_t long_name = trace.pool.intern(demangle(string(trace, name_id, "kernel name")));
        uint32_t short_name = trace.pool.intern(short_kernel_name(trace.pool.get(long_name)));
        it = names.emplace(name_id, std::make_pair(long_name, short_name)).first;
      }
      k.long_name = it->second.first;
      k.short_name = it->second.second;
    } else if (cols.count("name")) {
      trace.warn("kernel without name", table + " row with NULL name: kept unnamed");
    }
    for (int i = 0; i < 3; ++i) {
      k.grid[i] = to_i32(s.int64(7 + i));
      k.block[i] = to_i32(s.int64(10 + i));
    }
    k.registers = to_i32(s.int64(13));
    k.static_shared = to_i32(s.int64(14));
    k.dynamic_shared = to_i32(s.int64(15));
    k.graph_node_id = s.int64(16);
    trace.activities.push_back(k);
    ++trace.stats.kernels;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  return true;
}

bool NvprofReader::read_memcpys(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_MEMCPY";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end"}, error, kNvprof)) return false;
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"start",
                                            "end",
                                            {"deviceId", "-1"},
                                            {"contextId", "-1"},
                                            {"streamId", "-1"},
                                            {"correlationId", "-1"},
                                            {"runtimeCorrelationId", "0"},
                                            {"bytes", "-1"},
                                            {"copyKind", "0"},
                                            {"srcKind", "0"},
                                            {"dstKind", "0"}},
                                           {"start", "end"}),
                            error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(11)) {
      ++trace.stats.rows_skipped;
      trace.warn("copy without start/end", table + " row with NULL start or end: skipped");
      continue;
    }
    GpuActivity c;
    c.kind = ActivityKind::kMemcpy;
    c.start = s.int64(0);
    c.end = s.int64(1);
    c.device = to_i32(s.int64(2));
    c.context = to_i32(s.int64(3));
    c.stream = s.int64(4);
    c.correlation_id = s.int64(5);
    c.pid = pid_of(c.correlation_id);
    // Older CUPTI gave some copies the driver call's id and the runtime call's id separately;
    // the launch is whichever one an API row has.
    int64_t runtime_corr = s.int64(6);
    if (c.pid == 0 && runtime_corr > 0 && pid_of_corr_.count(runtime_corr)) {
      c.correlation_id = runtime_corr;
      c.pid = pid_of(runtime_corr);
    }
    c.bytes = s.int64(7);
    c.copy_kind = nsys_copy_kind(s.int64(8));
    c.src_kind = nsys_mem_kind(s.int64(9));
    c.dst_kind = nsys_mem_kind(s.int64(10));
    trace.activities.push_back(c);
    ++trace.stats.memcpys;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  return true;
}

bool NvprofReader::read_memsets(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_MEMSET";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "end"}, error, kNvprof)) return false;
  Statement s = db_.prepare(select_columns(cols, table,
                                           {"start",
                                            "end",
                                            {"deviceId", "-1"},
                                            {"contextId", "-1"},
                                            {"streamId", "-1"},
                                            {"correlationId", "-1"},
                                            {"bytes", "-1"},
                                            {"value", "0"},
                                            {"memoryKind", "0"}},
                                           {"start", "end"}),
                            error);
  if (!s.valid()) return false;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(9)) {
      ++trace.stats.rows_skipped;
      trace.warn("memset without start/end", table + " row with NULL start or end: skipped");
      continue;
    }
    GpuActivity m;
    m.kind = ActivityKind::kMemset;
    m.start = s.int64(0);
    m.end = s.int64(1);
    m.device = to_i32(s.int64(2));
    m.context = to_i32(s.int64(3));
    m.stream = s.int64(4);
    m.correlation_id = s.int64(5);
    m.pid = pid_of(m.correlation_id);
    m.bytes = s.int64(6);
    m.memset_value = s.int64(7);
    m.dst_kind = nsys_mem_kind(s.int64(8));
    trace.activities.push_back(m);
    ++trace.stats.memsets;
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  return true;
}

// One MARKER row per edge. START rows carry the message, domain and thread; END rows only the
// `id` and time. Rows are not guaranteed to be in order, so all rows are read first and paired
// by id in memory.
bool NvprofReader::read_markers(Trace& trace, std::string& error) {
  const std::string table = "CUPTI_ACTIVITY_KIND_MARKER";
  if (!db_.has_table(table)) return true;
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"flags", "timestamp", "id"}, error, kNvprof)) return false;
  Statement s = db_.prepare(
      select_columns(
          cols, table,
          {"flags", "timestamp", "id", {"objectKind", "2"}, "objectId", "name", {"domain", "0"}},
          {"flags", "timestamp", "id"}),
      error);
  if (!s.valid()) return false;

  struct Opening {
    int64_t time;
    int64_t id;
    RangeRecord base;
    uint32_t text;
  };
  std::vector<Opening> openings;              // START and mark rows, in table order
  std::unordered_map<int64_t, int64_t> ends;  // id -> END time
  std::unordered_set<int64_t> skipped_ids;    // START rows already counted as skipped
  int64_t unsupported = 0;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (s.int64(7)) {
      ++trace.stats.rows_skipped;
      trace.warn("marker without flags/time/id",
                 table + " row with NULL flags, timestamp or id: skipped");
      continue;
    }
    int64_t flags = s.int64(0), time = s.int64(1), id = s.int64(2);
    bool start = (flags & kMarkerStart) != 0;
    bool mark = !start && (flags & kMarkerInstantaneous) != 0 && (flags & kMarkerEnd) == 0;
    if (!start && !mark) {
      if ((flags & kMarkerEnd) == 0) {
        ++unsupported;  // NVTX sync-object markers (acquire/release): not ranges
        continue;
      }
      if (!ends.emplace(id, time).second) {
        ++trace.stats.rows_skipped;
        trace.warn("marker END without START",
                   "a second END row for marker id " + std::to_string(id) + ": skipped");
      }
      continue;
    }
    RangeRecord base;
    base.start = time;
    base.shape = mark ? RangeShape::kMark : RangeShape::kPushPop;
    if (cols.count("objectId")) {
      std::string_view object = s.text(4);
      if (object.size() != kObjectIdBytes) {
        ++trace.stats.rows_skipped;
        if (!mark) skipped_ids.insert(id);
        trace.warn("marker with malformed objectId",
                   "marker id " + std::to_string(id) + " has a " + std::to_string(object.size()) +
                       "-byte objectId (expected " + std::to_string(kObjectIdBytes) + "): skipped");
        continue;
      }
      if (object_is_thread(s.int64(3))) {
        base.pid = read_le32(object, 0);
        base.tid = read_le32(object, 4);
      }
    }
    uint32_t text = s.is_null(5) ? 0 : pooled_string(trace, s.int64(5), "marker message");
    int64_t domain = s.int64(6);
    if (domain != 0) base.domain = pooled_string(trace, domain, "marker domain");
    openings.push_back({time, id, base, text});
  }
  if (rc != SQLITE_DONE) return step_failed(db_, table, error, kNvprof);
  if (unsupported > 0) {
    trace.warn("unsupported marker rows", std::to_string(unsupported) + " " + table +
                                              " rows are neither START, END nor a mark "
                                              "(NVTX sync markers?): ignored");
  }

  Marker marker;
  for (Opening& o : openings) {
    if (o.base.shape == RangeShape::kMark) {
      o.base.end = o.time;
    } else if (auto it = ends.find(o.id); it != ends.end()) {
      o.base.end = it->second;
      ends.erase(it);
    }  // else: never closed, end stays kOpenEnd and add_range counts it
    add_range(trace, o.base, trace.pool.get(o.text), TextRef{TextRef::Where::kPool, o.text},
              marker);
  }
  std::vector<std::pair<int64_t, int64_t>> orphans;  // sorted, so that warnings are stable
  for (const auto& [id, time] : ends) {
    if (!skipped_ids.count(id)) orphans.emplace_back(id, time);  // else counted with its START
  }
  std::sort(orphans.begin(), orphans.end());
  for (const auto& [id, time] : orphans) {
    ++trace.stats.rows_skipped;
    trace.warn("marker END without START", "END row for marker id " + std::to_string(id) + " at " +
                                               std::to_string(time) + " has no START row: skipped");
  }
  return true;
}

}  // namespace pyprof::parse
