#include "sqlite_writer.h"

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

std::unique_ptr<SqliteWriter> SqliteWriter::open(const std::string& path, std::string* error) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
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
      ok = sqlite3_step(insert_enum) == SQLITE_DONE;
      sqlite3_reset(insert_enum);
    }
    sqlite3_finalize(insert_enum);
    if (!ok) writer->fail("ENUM_NSYS_EVENT_TYPE");
  }
  ok = ok && writer->commit();
  if (!ok) {
    if (error != nullptr)
      *error = "cannot create the schema in " + path + ": " + writer->last_error();
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
  insert_event_ = insert_string_ = insert_thread_name_ = insert_process_ = nullptr;
  insert_session_start_ = insert_export_meta_ = insert_capture_meta_ = upsert_stat_ = nullptr;
}

void SqliteWriter::finalize_statements() noexcept {
  for (sqlite3_stmt* statement :
       {insert_event_, insert_string_, insert_thread_name_, insert_process_, insert_session_start_,
        insert_export_meta_, insert_capture_meta_, upsert_stat_}) {
    sqlite3_finalize(statement);  // NULL is a no-op
  }
}

bool SqliteWriter::fail(const char* what) {
  last_error_ = std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "no database");
  return false;
}

bool SqliteWriter::exec(const char* sql) {
  if (db_ == nullptr) return fail("exec");
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    last_error_ = std::string(sql).substr(0, 40) + ": " + (message ? message : "error");
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
  if (db_ != nullptr && !sqlite3_get_autocommit(db_)) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
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
