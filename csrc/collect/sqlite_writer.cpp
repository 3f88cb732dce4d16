#include "sqlite_writer.h"

#include <cstring>
#include <deque>
#include <optional>
#include <string>

#include "common/nsys_schema.h"
#include "text_utils.h"

namespace pyprof::collect {
namespace {

// Column names and types follow the nsys export DDL (2024.6+: NVTX_EVENTS has 20 columns);
// parse discovers columns by name, so extra nsys columns we do not write are simply absent.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS StringIds (
    id                  INTEGER   NOT NULL   PRIMARY KEY,
    value               TEXT      NOT NULL
);
CREATE TABLE IF NOT EXISTS NVTX_EVENTS (
    start               INTEGER   NOT NULL,
    end                 INTEGER,
    eventType           INTEGER   NOT NULL,
    rangeId             INTEGER,
    category            INTEGER,
    color               INTEGER,
    text                TEXT,
    globalTid           INTEGER,
    endGlobalTid        INTEGER,
    textId              INTEGER,
    domainId            INTEGER,
    uint64Value         INTEGER,
    int64Value          INTEGER,
    doubleValue         REAL,
    uint32Value         INTEGER,
    int32Value          INTEGER,
    floatValue          REAL,
    jsonTextId          INTEGER,
    jsonText            TEXT,
    binaryData          TEXT
);
CREATE TABLE IF NOT EXISTS ThreadNames (
    nameId              INTEGER   NOT NULL,
    priority            INTEGER,
    globalTid           INTEGER
);
CREATE TABLE IF NOT EXISTS PROCESSES (
    globalPid           INTEGER,
    pid                 INTEGER,
    name                TEXT
);
CREATE TABLE IF NOT EXISTS TARGET_INFO_SESSION_START_TIME (
    utcEpochNs          INTEGER,
    utcTime             TEXT,
    localTime           TEXT,
    systemClockNs       INTEGER
);
CREATE TABLE IF NOT EXISTS META_DATA_EXPORT (
    name                TEXT      NOT NULL,
    value               TEXT
);
CREATE TABLE IF NOT EXISTS META_DATA_CAPTURE (
    name                TEXT      NOT NULL,
    value               TEXT
);
CREATE TABLE IF NOT EXISTS ENUM_NSYS_EVENT_TYPE (
    id                  INTEGER   NOT NULL   PRIMARY KEY,
    name                TEXT,
    label               TEXT
);
CREATE TABLE IF NOT EXISTS PYPROF_COLLECTOR_STATS (
    name                TEXT      NOT NULL   PRIMARY KEY,
    value               INTEGER
);
CREATE TABLE IF NOT EXISTS PYPROF_MEMORY_EVENTS (
    start               INTEGER   NOT NULL,
    globalTid           INTEGER   NOT NULL,
    address             INTEGER   NOT NULL,
    bytes               INTEGER   NOT NULL,
    totalAllocated      INTEGER   NOT NULL,
    totalReserved       INTEGER   NOT NULL,
    deviceType          INTEGER   NOT NULL,
    deviceId            INTEGER   NOT NULL
);
CREATE TABLE IF NOT EXISTS PYPROF_MEMORY_DEVICES (
    start               INTEGER   NOT NULL,
    globalTid           INTEGER,
    deviceType          INTEGER   NOT NULL,
    deviceId            INTEGER   NOT NULL,
    moment              TEXT,
    totalMemory         INTEGER,
    freeMemory          INTEGER,
    allocatorLimit      INTEGER,
    allocated           INTEGER,
    reserved            INTEGER,
    peakAllocated       INTEGER,
    peakReserved        INTEGER,
    allocRetries        INTEGER,
    ooms                INTEGER
);
)sql";

// GPU tables (trace-formats.md §1.3, §7): nsys column names and order, minus the columns CUPTI
// cannot fill (greenContextId, deprecatedSrcId, migrationCause, virtualAddress, callchainId).
constexpr const char* kGpuSchema = R"sql(
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    demangledName               INTEGER   NOT NULL,
    shortName                   INTEGER   NOT NULL,
    mangledName                 INTEGER,
    launchType                  INTEGER,
    cacheConfig                 INTEGER,
    registersPerThread          INTEGER   NOT NULL,
    gridX                       INTEGER   NOT NULL,
    gridY                       INTEGER   NOT NULL,
    gridZ                       INTEGER   NOT NULL,
    blockX                      INTEGER   NOT NULL,
    blockY                      INTEGER   NOT NULL,
    blockZ                      INTEGER   NOT NULL,
    staticSharedMemory          INTEGER   NOT NULL,
    dynamicSharedMemory         INTEGER   NOT NULL,
    localMemoryPerThread        INTEGER   NOT NULL,
    localMemoryTotal            INTEGER   NOT NULL,
    gridId                      INTEGER   NOT NULL,
    sharedMemoryExecuted        INTEGER,
    graphNodeId                 INTEGER,
    sharedMemoryLimitConfig     INTEGER,
    graphId                     INTEGER
);
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    correlationId               INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL
);
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    bytes                       INTEGER   NOT NULL,
    copyKind                    INTEGER   NOT NULL,
    srcKind                     INTEGER,
    dstKind                     INTEGER,
    srcDeviceId                 INTEGER,
    srcContextId                INTEGER,
    dstDeviceId                 INTEGER,
    dstContextId                INTEGER,
    graphNodeId                 INTEGER
);
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_MEMSET (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    value                       INTEGER   NOT NULL,
    bytes                       INTEGER   NOT NULL,
    graphNodeId                 INTEGER,
    memKind                     INTEGER
);
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER,
    contextId                   INTEGER   NOT NULL,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    syncType                    INTEGER   NOT NULL,
    eventId                     INTEGER   NOT NULL
);
CREATE TABLE IF NOT EXISTS PYPROF_CUDA_GRAPH_NODES (
    nodeId                      INTEGER   NOT NULL,
    originalNodeId              INTEGER,
    graphId                     INTEGER   NOT NULL,
    start                       INTEGER   NOT NULL,
    globalTid                   INTEGER   NOT NULL
);
CREATE TABLE IF NOT EXISTS CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION (
    externalKind                INTEGER   NOT NULL,
    externalId                  INTEGER   NOT NULL,
    correlationId               INTEGER   NOT NULL
);
CREATE TABLE IF NOT EXISTS TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,
    id                          INTEGER   NOT NULL,
    name                        TEXT,
    busLocation                 TEXT,
    isDiscrete                  INTEGER,
    l2CacheSize                 INTEGER,
    totalMemory                 INTEGER,
    memoryBandwidth             INTEGER,
    clockRate                   INTEGER,
    smCount                     INTEGER,
    uuid                        TEXT,
    cuDevice                    INTEGER,
    maxRegistersPerBlock        INTEGER,
    maxShmemPerBlock            INTEGER,
    maxShmemPerSm               INTEGER,
    maxRegistersPerSm           INTEGER,
    threadsPerWarp              INTEGER,
    asyncEngines                INTEGER,
    maxWarpsPerSm               INTEGER,
    maxBlocksPerSm              INTEGER,
    maxThreadsPerBlock          INTEGER,
    maxBlockDimX                INTEGER,
    maxBlockDimY                INTEGER,
    maxBlockDimZ                INTEGER,
    maxGridDimX                 INTEGER,
    maxGridDimY                 INTEGER,
    maxGridDimZ                 INTEGER,
    computeMajor                INTEGER,
    computeMinor                INTEGER,
    smMajor                     INTEGER,
    smMinor                     INTEGER
);
CREATE TABLE IF NOT EXISTS TARGET_INFO_CUDA_DEVICE (
    gpuId                       INTEGER   NOT NULL,
    cudaId                      INTEGER   NOT NULL,
    pid                         INTEGER   NOT NULL,
    uuid                        TEXT,
    numMultiprocessors          INTEGER
);
)sql";

constexpr const char* kInsertEvent =
    "INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, globalTid, "
    "endGlobalTid, textId, domainId, uint64Value, int64Value, doubleValue, uint32Value, "
    "int32Value, floatValue) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
    "?14, ?15, ?16, ?17)";

// NVTX_EVENTS parameter index of each payload column (payload_column() names them).
int payload_parameter(PayloadType type) {
  switch (type) {
    case PayloadType::kUint64:
      return 12;
    case PayloadType::kInt64:
      return 13;
    case PayloadType::kDouble:
      return 14;
    case PayloadType::kUint32:
      return 15;
    case PayloadType::kInt32:
      return 16;
    case PayloadType::kFloat:
      return 17;
    case PayloadType::kNone:
      break;
  }
  return 0;
}

// Binds UTF-8 text, repairing invalid sequences (messages are whatever bytes the app passed).
// `scratch` keeps a repaired copy alive until the statement has run.
int bind_text(sqlite3_stmt* statement, int index, std::string_view text, std::string& scratch) {
  if (!is_valid_utf8(text)) {
    scratch = repair_utf8(text);
    text = scratch;
  }
  return sqlite3_bind_text64(statement, index, text.data(), text.size(), SQLITE_STATIC,
                             SQLITE_UTF8);
}

int bind_optional_int(sqlite3_stmt* statement, int index, bool present, int64_t value) {
  return present ? sqlite3_bind_int64(statement, index, value)
                 : sqlite3_bind_null(statement, index);
}

// "2024-12-11T00:45:25", the nsys utcTime/localTime format.
std::string format_time(int64_t epoch_ns, bool local) {
  const time_t seconds = static_cast<time_t>(epoch_ns / 1'000'000'000);
  tm parts{};
  if (local) {
    localtime_r(&seconds, &parts);
  } else {
    gmtime_r(&seconds, &parts);
  }
  char buffer[32];
  const size_t length = strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &parts);
  return std::string(buffer, length);
}

}  // namespace

// NOMUTEX: the collector never uses one connection from two threads at once (every use holds
// its writer_busy_ lock), so SQLite's own per-call mutex was pure cost: without it the writer
// thread takes 17% less CPU per range (docs/benchmarks.md §3.1).
constexpr int kOpenFlags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;

std::unique_ptr<SqliteWriter> SqliteWriter::open(const std::string& path, std::string* error,
                                                 bool* storage_failure) {
  if (storage_failure != nullptr) *storage_failure = false;
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, kOpenFlags, nullptr);
  if (rc != SQLITE_OK) {
    if (error != nullptr) {
      *error = "cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    }
    sqlite3_close(db);
    return nullptr;
  }
  std::unique_ptr<SqliteWriter> writer(new SqliteWriter(db, path));
  // synchronous=OFF: a crash of the machine may lose the tail, a crash of the process may not
  // (the default rollback journal keeps the file consistent either way).
  bool ok = writer->exec("PRAGMA synchronous=OFF") && writer->begin() && writer->exec(kSchema) &&
            writer->prepare_statements();
  if (ok) {
    sqlite3_stmt* insert_enum = nullptr;
    ok = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO ENUM_NSYS_EVENT_TYPE VALUES (?1, ?2, ?3)",
                            -1, &insert_enum, nullptr) == SQLITE_OK;
    for (const nsys::EnumRow& row : nsys::kNvtxEventTypeRows) {
      if (!ok) break;
      sqlite3_bind_int(insert_enum, 1, row.id);
      sqlite3_bind_text(insert_enum, 2, row.name.data(), static_cast<int>(row.name.size()),
                        SQLITE_STATIC);
      sqlite3_bind_text(insert_enum, 3, row.label.data(), static_cast<int>(row.label.size()),
                        SQLITE_STATIC);
      // The error is read before reset/finalize, while it is still this statement's.
      ok = sqlite3_step(insert_enum) == SQLITE_DONE || writer->fail("ENUM_NSYS_EVENT_TYPE");
      sqlite3_reset(insert_enum);
    }
    sqlite3_finalize(insert_enum);
  }
  ok = ok && writer->commit();
  if (!ok) {
    if (error != nullptr)
      *error = "cannot create the schema in " + path + ": " + writer->last_error();
    if (storage_failure != nullptr) *storage_failure = writer->storage_failed();
    writer->rollback();
    return nullptr;
  }
  return writer;
}

SqliteWriter::~SqliteWriter() {
  if (db_ == nullptr) return;
  finalize_statements();
  sqlite3_close(db_);
}

void SqliteWriter::abandon() noexcept {
  db_ = nullptr;
  for (sqlite3_stmt*& statement : gpu_statements_) statement = nullptr;
  insert_event_ = insert_string_ = insert_thread_name_ = insert_process_ = nullptr;
  insert_session_start_ = insert_export_meta_ = insert_capture_meta_ = upsert_stat_ = nullptr;
  insert_memory_event_ = insert_memory_device_ = nullptr;
}

void SqliteWriter::finalize_statements() noexcept {
  for (sqlite3_stmt* statement :
       {insert_event_, insert_string_, insert_thread_name_, insert_process_, insert_session_start_,
        insert_export_meta_, insert_capture_meta_, upsert_stat_, insert_memory_event_,
        insert_memory_device_}) {
    sqlite3_finalize(statement);  // NULL is a no-op
  }
  for (sqlite3_stmt* statement : gpu_statements_) sqlite3_finalize(statement);
}

bool SqliteWriter::fail(const char* what) {
  if (db_ == nullptr) {
    last_error_ = std::string(what) + ": no database";
    storage_failed_ = false;
    return false;
  }
  record_error(what, sqlite3_errmsg(db_));
  return false;
}

void SqliteWriter::record_error(std::string_view what, const char* message) {
  const int code = sqlite3_extended_errcode(db_);
  const int system_errno = sqlite3_system_errno(db_);
  // sqlite3_errmsg says "not an error" once a later call succeeded; the code still names it.
  std::string text = message != nullptr ? message : "";
  if (text.empty() || text == "not an error") {
    text = code != SQLITE_OK ? sqlite3_errstr(code) : "unknown error";
  }
  // The errno is that of SQLite's last failed system call, which may be an older one: it only
  // explains the errors that come from the file system. SQLite reports ENOSPC as SQLITE_FULL,
  // and EFBIG (a file size limit) or EDQUOT as an I/O error.
  const int primary = code & 0xff;
  storage_failed_ = primary == SQLITE_FULL || primary == SQLITE_IOERR;
  if (system_errno != 0 && (storage_failed_ || primary == SQLITE_CANTOPEN)) {
    text += std::string(" (") + std::strerror(system_errno) + ")";
  }
  last_error_ = std::string(what) + ": " + text;
}

bool SqliteWriter::exec(const char* sql) {
  if (db_ == nullptr) return fail("exec");
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    record_error(std::string_view(sql).substr(0, 40), message);
    sqlite3_free(message);
    return false;
  }
  return true;
}

bool SqliteWriter::prepare_statements() {
  struct Statement {
    sqlite3_stmt** statement;
    const char* sql;
  };
  const Statement statements[] = {
      {&insert_event_, kInsertEvent},
      {&insert_string_, "INSERT OR REPLACE INTO StringIds (id, value) VALUES (?1, ?2)"},
      {&insert_thread_name_,
       "INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?1, ?2, ?3)"},
      {&insert_process_, "INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)"},
      {&insert_session_start_,
       "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime, "
       "systemClockNs) VALUES (?1, ?2, ?3, ?4)"},
      {&insert_export_meta_, "INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)"},
      {&insert_capture_meta_, "INSERT INTO META_DATA_CAPTURE (name, value) VALUES (?1, ?2)"},
      {&upsert_stat_,
       "INSERT OR REPLACE INTO PYPROF_COLLECTOR_STATS (name, value) VALUES (?1, ?2)"},
      {&insert_memory_event_,
       "INSERT INTO PYPROF_MEMORY_EVENTS (start, globalTid, address, bytes, totalAllocated, "
       "totalReserved, deviceType, deviceId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&insert_memory_device_,
       "INSERT INTO PYPROF_MEMORY_DEVICES (start, globalTid, deviceType, deviceId, moment, "
       "totalMemory, freeMemory, allocatorLimit, allocated, reserved, peakAllocated, "
       "peakReserved, allocRetries, ooms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
       "?12, ?13, ?14)"},
  };
  for (const Statement& s : statements) {
    if (sqlite3_prepare_v2(db_, s.sql, -1, s.statement, nullptr) != SQLITE_OK) {
      return fail(s.sql);
    }
  }
  return true;
}

bool SqliteWriter::begin() { return exec("BEGIN"); }

bool SqliteWriter::commit() { return exec("COMMIT"); }

void SqliteWriter::rollback() noexcept {
  if (db_ == nullptr) return;
  if (!sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  // After an I/O error (disk full) SQLite ends the transaction itself but can leave its journal
  // behind, "hot": read-only readers (pyprof parse) then cannot open the file at all. The next
  // read on this connection rolls the journal back, which needs no new space.
  sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
}

bool SqliteWriter::write_events(std::span<const CompletedEvent> events, std::string_view text) {
  if (db_ == nullptr) return fail("NVTX_EVENTS");
  sqlite3_stmt* s = insert_event_;
  std::string scratch;
  for (const CompletedEvent& event : events) {
    const EventAttributes& attrs = event.attrs;
    sqlite3_bind_int64(s, 1, event.start);
    bind_optional_int(s, 2, event.has_end, event.end);
    sqlite3_bind_int(s, 3, nsys::to_int(event.event_type));
    bind_optional_int(s, 4, event.range_id != 0, static_cast<int64_t>(event.range_id));
    bind_optional_int(s, 5, attrs.category != 0, attrs.category);
    bind_optional_int(s, 6, attrs.has_color, attrs.color);  // unsigned 32-bit ARGB
    if (attrs.has_text && event.text_offset + uint64_t{event.text_length} <= text.size()) {
      bind_text(s, 7, text.substr(event.text_offset, event.text_length), scratch);
    } else {
      sqlite3_bind_null(s, 7);
    }
    bind_optional_int(s, 8, event.global_tid != 0, static_cast<int64_t>(event.global_tid));
    bind_optional_int(s, 9, event.end_global_tid != 0, static_cast<int64_t>(event.end_global_tid));
    bind_optional_int(s, 10, attrs.text_id != 0, static_cast<int64_t>(attrs.text_id));
    sqlite3_bind_int64(s, 11, event.domain_id);
    for (int parameter = 12; parameter <= 17; ++parameter) sqlite3_bind_null(s, parameter);
    const int payload = payload_parameter(attrs.payload_type);
    switch (attrs.payload_type) {
      case PayloadType::kUint64:  // stored as the same 64 bits, as nsys does
        sqlite3_bind_int64(s, payload, static_cast<int64_t>(attrs.payload.u64));
        break;
      case PayloadType::kInt64:
        sqlite3_bind_int64(s, payload, attrs.payload.i64);
        break;
      case PayloadType::kDouble:
        sqlite3_bind_double(s, payload, attrs.payload.f64);
        break;
      case PayloadType::kUint32:
        sqlite3_bind_int64(s, payload, attrs.payload.u32);
        break;
      case PayloadType::kInt32:
        sqlite3_bind_int64(s, payload, attrs.payload.i32);
        break;
      case PayloadType::kFloat:
        sqlite3_bind_double(s, payload, attrs.payload.f32);
        break;
      case PayloadType::kNone:
        break;
    }
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return fail("NVTX_EVENTS");
  }
  sqlite3_clear_bindings(s);
  return true;
}

bool SqliteWriter::write_strings(std::span<const StringRow> rows) {
  if (db_ == nullptr) return fail("StringIds");
  std::string scratch;
  for (const StringRow& row : rows) {
    sqlite3_bind_int64(insert_string_, 1, static_cast<int64_t>(row.id));
    bind_text(insert_string_, 2, row.value, scratch);
    const int rc = sqlite3_step(insert_string_);
    sqlite3_reset(insert_string_);
    if (rc != SQLITE_DONE) return fail("StringIds");
  }
  return true;
}

bool SqliteWriter::write_thread_names(std::span<const ThreadNameRow> rows) {
  if (db_ == nullptr) return fail("ThreadNames");
  for (const ThreadNameRow& row : rows) {
    sqlite3_bind_int64(insert_thread_name_, 1, static_cast<int64_t>(row.name_id));
    bind_optional_int(insert_thread_name_, 2, row.priority.has_value(), row.priority.value_or(0));
    sqlite3_bind_int64(insert_thread_name_, 3, static_cast<int64_t>(row.global_tid));
    const int rc = sqlite3_step(insert_thread_name_);
    sqlite3_reset(insert_thread_name_);
    if (rc != SQLITE_DONE) return fail("ThreadNames");
  }
  return true;
}

bool SqliteWriter::write_process(const ProcessRow& row) {
  if (db_ == nullptr) return fail("PROCESSES");
  std::string scratch;
  sqlite3_bind_int64(insert_process_, 1, static_cast<int64_t>(row.global_pid));
  sqlite3_bind_int64(insert_process_, 2, row.pid);
  bind_text(insert_process_, 3, row.name, scratch);
  const int rc = sqlite3_step(insert_process_);
  sqlite3_reset(insert_process_);
  return rc == SQLITE_DONE || fail("PROCESSES");
}

bool SqliteWriter::write_session_start(const SessionStart& start) {
  if (db_ == nullptr) return fail("TARGET_INFO_SESSION_START_TIME");
  const std::string utc = format_time(start.utc_epoch_ns, false);
  const std::string local = format_time(start.utc_epoch_ns, true);
  sqlite3_stmt* s = insert_session_start_;
  sqlite3_bind_int64(s, 1, start.utc_epoch_ns);
  sqlite3_bind_text(s, 2, utc.c_str(), -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, local.c_str(), -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, start.monotonic_ns);
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  return rc == SQLITE_DONE || fail("TARGET_INFO_SESSION_START_TIME");
}

bool SqliteWriter::write_metadata(MetadataTable table, std::span<const MetadataRow> rows) {
  if (db_ == nullptr) return fail("META_DATA");
  sqlite3_stmt* s = table == MetadataTable::kExport ? insert_export_meta_ : insert_capture_meta_;
  std::string name_scratch;
  std::string value_scratch;
  for (const MetadataRow& row : rows) {
    bind_text(s, 1, row.name, name_scratch);
    bind_text(s, 2, row.value, value_scratch);
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return fail("META_DATA");
  }
  return true;
}

namespace {

// Binds one row's values to consecutive parameters.
class RowBinder {
 public:
  explicit RowBinder(sqlite3_stmt* statement) : statement_(statement) {}
  RowBinder& integer(int64_t value) {
    sqlite3_bind_int64(statement_, next_++, value);
    return *this;
  }
  RowBinder& null() {
    sqlite3_bind_null(statement_, next_++);
    return *this;
  }
  template <typename T>
  RowBinder& optional(const std::optional<T>& value) {
    if (value) return integer(static_cast<int64_t>(*value));
    sqlite3_bind_null(statement_, next_++);
    return *this;
  }
  // Each text parameter keeps its own repaired copy alive until step().
  RowBinder& text(std::string_view value) {
    bind_text(statement_, next_++, value, scratch_.emplace_back());
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(statement_);
    sqlite3_reset(statement_);
    return rc == SQLITE_DONE;
  }

 private:
  sqlite3_stmt* statement_;
  int next_ = 1;
  std::deque<std::string> scratch_;  // stable addresses: SQLite reads them at step()
};

}  // namespace

bool SqliteWriter::create_gpu_tables() {
  if (gpu_tables_ready_) return true;
  if (!exec(kGpuSchema)) return false;
  sqlite3_stmt* insert_enum = nullptr;
  for (const nsys::EnumTable& table : nsys::kCudaEnumTables) {
    const std::string name(table.name);
    const std::string sql = "CREATE TABLE IF NOT EXISTS " + name +
                            " (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT); "
                            "DELETE FROM " +
                            name + ";";
    if (!exec(sql.c_str())) return false;
    const std::string insert = "INSERT INTO " + name + " VALUES (?1, ?2, ?3)";
    if (sqlite3_prepare_v2(db_, insert.c_str(), -1, &insert_enum, nullptr) != SQLITE_OK) {
      return fail(table.name.data());
    }
    bool ok = true;
    for (size_t i = 0; ok && i < table.count; ++i) {
      const nsys::EnumRow& row = table.rows[i];
      ok = RowBinder(insert_enum).integer(row.id).text(row.name).text(row.label).step();
    }
    sqlite3_finalize(insert_enum);
    if (!ok) return fail(table.name.data());
  }
  const char* const statements[kGpuStatementCount] = {
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, "
      "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
      "dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, "
      "graphNodeId, sharedMemoryLimitConfig, graphId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
      "?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, "
      "?28)",
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
      "nameId, returnValue) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, srcContextId, "
      "dstDeviceId, dstContextId, graphNodeId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
      "?11, ?12, ?13, ?14, ?15, ?16)",
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, value, bytes, graphNodeId, memKind) VALUES (?1, ?2, ?3, ?4, ?5, "
      "?6, ?7, ?8, ?9, ?10, ?11)",
      "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, "
      "streamId, correlationId, globalPid, syncType, eventId) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9)",
      "INSERT INTO CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION (externalKind, externalId, "
      "correlationId) VALUES (?1, ?2, ?3)",
      "INSERT INTO TARGET_INFO_GPU (vmId, id, name, isDiscrete, l2CacheSize, "
      "totalMemory, memoryBandwidth, clockRate, smCount, uuid, cuDevice, maxRegistersPerBlock, "
      "maxShmemPerBlock, maxShmemPerSm, maxRegistersPerSm, threadsPerWarp, asyncEngines, "
      "maxWarpsPerSm, maxBlocksPerSm, maxThreadsPerBlock, maxBlockDimX, maxBlockDimY, "
      "maxBlockDimZ, maxGridDimX, maxGridDimY, maxGridDimZ, computeMajor, computeMinor, smMajor, "
      "smMinor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
      "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
      "INSERT INTO TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid, uuid, numMultiprocessors) VALUES "
      "(?1, ?2, ?3, ?4, ?5)",
      "INSERT INTO PYPROF_CUDA_GRAPH_NODES (nodeId, originalNodeId, graphId, start, globalTid) "
      "VALUES (?1, ?2, ?3, ?4, ?5)",
  };
  for (int i = 0; i < kGpuStatementCount; ++i) {
    if (sqlite3_prepare_v2(db_, statements[i], -1, &gpu_statements_[i], nullptr) != SQLITE_OK) {
      return fail(statements[i]);
    }
  }
  gpu_tables_ready_ = true;
  return true;
}

bool SqliteWriter::write_gpu_batch(const GpuBatch& batch) {
  if (db_ == nullptr) return fail("GPU tables");
  if (batch.rows() == 0) return true;
  if (!create_gpu_tables()) return false;
  for (const KernelRow& k : batch.kernels) {
    RowBinder row(gpu_statements_[kInsertKernel]);
    row.integer(k.start).integer(k.end).integer(k.device_id).integer(k.context_id);
    row.integer(k.stream_id).integer(k.correlation_id).integer(static_cast<int64_t>(k.global_pid));
    row.integer(static_cast<int64_t>(k.demangled_name)).integer(static_cast<int64_t>(k.short_name));
    row.integer(static_cast<int64_t>(k.mangled_name)).integer(k.launch_type);
    row.integer(k.cache_config).integer(k.registers_per_thread);
    for (int32_t g : k.grid) row.integer(g);
    for (int32_t b : k.block) row.integer(b);
    row.integer(k.static_shared_memory).integer(k.dynamic_shared_memory);
    row.integer(k.local_memory_per_thread).integer(static_cast<int64_t>(k.local_memory_total));
    row.integer(k.grid_id).integer(k.shared_memory_executed).optional(k.graph_node_id);
    row.integer(k.shared_memory_limit_config).optional(k.graph_id);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_KERNEL");
  }
  for (const ApiRow& a : batch.api_calls) {
    RowBinder row(gpu_statements_[kInsertApi]);
    row.integer(a.start).integer(a.end).integer(a.event_class);
    row.integer(static_cast<int64_t>(a.global_tid)).integer(a.correlation_id);
    row.integer(static_cast<int64_t>(a.name_id)).integer(a.return_value);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_RUNTIME");
  }
  for (const MemcpyRow& m : batch.memcpys) {
    RowBinder row(gpu_statements_[kInsertMemcpy]);
    row.integer(m.start).integer(m.end).integer(m.device_id).integer(m.context_id);
    row.integer(m.stream_id).integer(m.correlation_id).integer(static_cast<int64_t>(m.global_pid));
    row.integer(static_cast<int64_t>(m.bytes)).integer(m.copy_kind).integer(m.src_kind);
    row.integer(m.dst_kind).optional(m.src_device_id).optional(m.src_context_id);
    row.optional(m.dst_device_id).optional(m.dst_context_id).optional(m.graph_node_id);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_MEMCPY");
  }
  for (const MemsetRow& m : batch.memsets) {
    RowBinder row(gpu_statements_[kInsertMemset]);
    row.integer(m.start).integer(m.end).integer(m.device_id).integer(m.context_id);
    row.integer(m.stream_id).integer(m.correlation_id).integer(static_cast<int64_t>(m.global_pid));
    row.integer(m.value).integer(static_cast<int64_t>(m.bytes)).optional(m.graph_node_id);
    row.integer(m.mem_kind);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_MEMSET");
  }
  for (const SyncRow& y : batch.syncs) {
    RowBinder row(gpu_statements_[kInsertSync]);
    row.integer(y.start).integer(y.end).optional(y.device_id).integer(y.context_id);
    row.integer(y.stream_id).integer(y.correlation_id).integer(static_cast<int64_t>(y.global_pid));
    row.integer(y.sync_type).integer(y.event_id);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
  }
  for (const ExternalCorrelationRow& e : batch.external_correlations) {
    RowBinder row(gpu_statements_[kInsertExternalCorrelation]);
    row.integer(e.external_kind).integer(static_cast<int64_t>(e.external_id));
    row.integer(e.correlation_id);
    if (!row.step()) return fail("CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION");
  }
  for (const GpuInfoRow& g : batch.gpus) {
    RowBinder row(gpu_statements_[kInsertGpu]);
    row.integer(static_cast<int64_t>(nsys::kHardwareId << 48)).integer(g.id).text(g.name);
    row.null().integer(g.l2_cache_size);  // isDiscrete: CUPTI's device record does not say
    row.integer(static_cast<int64_t>(g.total_memory));
    row.integer(static_cast<int64_t>(g.memory_bandwidth));
    row.integer(static_cast<int64_t>(g.clock_rate)).integer(g.sm_count).text(g.uuid);
    row.integer(g.id).integer(g.max_registers_per_block).integer(g.max_shmem_per_block);
    row.integer(g.max_shmem_per_sm).integer(g.max_registers_per_sm).integer(g.threads_per_warp);
    row.integer(g.memcpy_engines).integer(g.max_warps_per_sm).integer(g.max_blocks_per_sm);
    row.integer(g.max_threads_per_block);
    for (uint32_t d : g.max_block_dim) row.integer(d);
    for (uint32_t d : g.max_grid_dim) row.integer(d);
    row.integer(g.compute_major).integer(g.compute_minor);
    row.integer(g.compute_major).integer(g.compute_minor);
    if (!row.step()) return fail("TARGET_INFO_GPU");
    RowBinder device(gpu_statements_[kInsertCudaDevice]);
    device.integer(g.id).integer(g.id).integer(g.pid).text(g.uuid).integer(g.sm_count);
    if (!device.step()) return fail("TARGET_INFO_CUDA_DEVICE");
  }
  for (const GraphNodeRow& n : batch.graph_nodes) {
    RowBinder row(gpu_statements_[kInsertGraphNode]);
    row.integer(static_cast<int64_t>(n.node_id));
    if (n.original_node_id) {
      row.integer(static_cast<int64_t>(*n.original_node_id));
    } else {
      row.null();
    }
    row.integer(n.graph_id).integer(n.start).integer(static_cast<int64_t>(n.global_tid));
    if (!row.step()) return fail("PYPROF_CUDA_GRAPH_NODES");
  }
  return true;
}

bool SqliteWriter::write_memory_events(std::span<const MemoryEvent> events) {
  if (db_ == nullptr) return fail("PYPROF_MEMORY_EVENTS");
  for (const MemoryEvent& event : events) {
    // Addresses and the unsigned totals keep their 64 bits in SQLite's signed INTEGER (a user
    // space address and a byte count stay far below 2^63).
    RowBinder row(insert_memory_event_);
    row.integer(event.time).integer(static_cast<int64_t>(event.global_tid));
    row.integer(static_cast<int64_t>(event.address)).integer(event.bytes);
    row.integer(static_cast<int64_t>(event.total_allocated));
    row.integer(static_cast<int64_t>(event.total_reserved));
    row.integer(event.device_type).integer(event.device_index);
    if (!row.step()) return fail("PYPROF_MEMORY_EVENTS");
  }
  return true;
}

bool SqliteWriter::write_memory_devices(std::span<const MemoryDeviceRow> rows) {
  if (db_ == nullptr) return fail("PYPROF_MEMORY_DEVICES");
  for (const MemoryDeviceRow& device : rows) {
    RowBinder row(insert_memory_device_);
    row.integer(device.start).optional(device.global_tid);
    row.integer(device.device_type).integer(device.device_index).text(device.moment);
    row.optional(device.total_memory).optional(device.free_memory);
    row.optional(device.allocator_limit).optional(device.allocated).optional(device.reserved);
    row.optional(device.peak_allocated).optional(device.peak_reserved);
    row.optional(device.alloc_retries).optional(device.ooms);
    if (!row.step()) return fail("PYPROF_MEMORY_DEVICES");
  }
  return true;
}

bool SqliteWriter::write_stats(std::span<const StatRow> rows) {
  if (db_ == nullptr) return fail("PYPROF_COLLECTOR_STATS");
  std::string scratch;
  for (const StatRow& row : rows) {
    bind_text(upsert_stat_, 1, row.name, scratch);
    sqlite3_bind_int64(upsert_stat_, 2, row.value);
    const int rc = sqlite3_step(upsert_stat_);
    sqlite3_reset(upsert_stat_);
    if (rc != SQLITE_DONE) return fail("PYPROF_COLLECTOR_STATS");
  }
  return true;
}

}  // namespace pyprof::collect
