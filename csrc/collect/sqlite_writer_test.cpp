// SqliteWriter on its own: the nsys-compatible layout, every NVTX row kind, metadata, stats and
// the empty database the launcher writes.
#include "sqlite_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>
#include <map>
#include <utility>

#include "common/nsys_schema.h"
#include "registries.h"
#include "session_metadata.h"
#include "testing/test_db.h"

namespace pyprof::collect {
namespace {

using nsys::NvtxEventType;
using testing::as_double;
using testing::as_int;
using testing::as_text;
using testing::is_null;
using testing::Row;
using testing::TempDir;
using testing::TestDb;

using Columns = std::vector<std::pair<std::string, std::string>>;  // (name, declared type)

Columns columns_of(const TestDb& db, const std::string& table) {
  Columns columns;
  for (const Row& row : db.query("PRAGMA table_info(" + table + ")")) {
    columns.emplace_back(as_text(row[1]), as_text(row[2]));
  }
  return columns;
}

std::unique_ptr<SqliteWriter> open_writer(const std::string& path) {
  std::string error;
  std::unique_ptr<SqliteWriter> writer = SqliteWriter::open(path, &error);
  EXPECT_NE(writer, nullptr) << error;
  return writer;
}

// The ranges and marks of a small session on one process.
constexpr uint32_t kPid = 4242;
constexpr uint64_t kMainTid = nsys::global_tid(kPid, kPid);
constexpr uint64_t kWorkerTid = nsys::global_tid(kPid, kPid + 1);

CompletedEvent range(NvtxEventType type, int64_t start, int64_t end) {
  CompletedEvent event;
  event.event_type = type;
  event.start = start;
  event.end = end;
  event.has_end = true;
  event.global_tid = kMainTid;
  event.attrs.has_text = true;
  return event;
}

TEST(NsysSchema, GlobalIdsPackLikeNsys) {
  // Value seen in a real nsys export: globalTid 281980910466508 = hw 1, pid 30156, tid 30156.
  EXPECT_EQ(nsys::global_tid(30156, 30156), 281980910466508ULL);
  EXPECT_EQ(nsys::global_pid(30156), 281980910436352ULL);
  EXPECT_EQ(nsys::pid_of_global_id(281980910466508ULL), 30156u);
  EXPECT_EQ(nsys::tid_of_global_tid(281980910466508ULL), 30156u);
  EXPECT_EQ(nsys::hardware_id_of_global_id(281980910466508ULL), 1u);
  EXPECT_EQ(nsys::global_pid_of_global_tid(kWorkerTid), nsys::global_pid(kPid));
  // pid/tid keep 24 bits.
  EXPECT_EQ(nsys::global_tid(0x1000005, 0x2000007), nsys::global_tid(5, 7));
  EXPECT_EQ(nsys::payload_column(nsys::PayloadType::kFloat), "floatValue");
  EXPECT_TRUE(nsys::payload_column(nsys::PayloadType::kNone).empty());
}

TEST(SqliteWriter, CreatesTheNsysLayout) {
  TempDir dir;
  const std::string path = dir.file("layout.sqlite");
  ASSERT_NE(open_writer(path), nullptr);
  TestDb db(path);

  const std::map<std::string, Columns> expected = {
      {"StringIds", {{"id", "INTEGER"}, {"value", "TEXT"}}},
      {"NVTX_EVENTS",
       {{"start", "INTEGER"},      {"end", "INTEGER"},       {"eventType", "INTEGER"},
        {"rangeId", "INTEGER"},    {"category", "INTEGER"},  {"color", "INTEGER"},
        {"text", "TEXT"},          {"globalTid", "INTEGER"}, {"endGlobalTid", "INTEGER"},
        {"textId", "INTEGER"},     {"domainId", "INTEGER"},  {"uint64Value", "INTEGER"},
        {"int64Value", "INTEGER"}, {"doubleValue", "REAL"},  {"uint32Value", "INTEGER"},
        {"int32Value", "INTEGER"}, {"floatValue", "REAL"},   {"jsonTextId", "INTEGER"},
        {"jsonText", "TEXT"},      {"binaryData", "TEXT"}}},
      {"ThreadNames", {{"nameId", "INTEGER"}, {"priority", "INTEGER"}, {"globalTid", "INTEGER"}}},
      {"PROCESSES", {{"globalPid", "INTEGER"}, {"pid", "INTEGER"}, {"name", "TEXT"}}},
      {"TARGET_INFO_SESSION_START_TIME",
       {{"utcEpochNs", "INTEGER"},
        {"utcTime", "TEXT"},
        {"localTime", "TEXT"},
        {"systemClockNs", "INTEGER"}}},
      {"META_DATA_EXPORT", {{"name", "TEXT"}, {"value", "TEXT"}}},
      {"META_DATA_CAPTURE", {{"name", "TEXT"}, {"value", "TEXT"}}},
      {"ENUM_NSYS_EVENT_TYPE", {{"id", "INTEGER"}, {"name", "TEXT"}, {"label", "TEXT"}}},
      {"PYPROF_COLLECTOR_STATS", {{"name", "TEXT"}, {"value", "INTEGER"}}},
  };
  for (const auto& [table, columns] : expected) {
    EXPECT_EQ(columns_of(db, table), columns) << table;
  }
  // NOT NULL / PRIMARY KEY where nsys has them.
  const std::vector<Row> string_ids = db.query("PRAGMA table_info(StringIds)");
  EXPECT_EQ(as_int(string_ids[0][3]), 1);                                  // id NOT NULL
  EXPECT_EQ(as_int(string_ids[0][5]), 1);                                  // id PRIMARY KEY
  EXPECT_EQ(as_int(db.query("PRAGMA table_info(NVTX_EVENTS)")[1][3]), 0);  // end nullable

  const std::vector<Row> enums = db.query("SELECT id, name, label FROM ENUM_NSYS_EVENT_TYPE");
  ASSERT_EQ(enums.size(), nsys::kNvtxEventTypeRows.size());
  std::map<int64_t, std::string> names;
  for (const Row& row : enums) {
    names[as_int(row[0])] = as_text(row[1]);
    EXPECT_EQ(as_text(row[1]), as_text(row[2]));
  }
  EXPECT_EQ(names[33], "NvtxCategory");
  EXPECT_EQ(names[34], "NvtxMark");
  EXPECT_EQ(names[39], "NvtxThread");
  EXPECT_EQ(names[59], "NvtxPushPopRange");
  EXPECT_EQ(names[60], "NvtxStartEndRange");
  EXPECT_EQ(names[75], "NvtxDomainCreate");
  EXPECT_EQ(names[76], "NvtxDomainDestroy");
  EXPECT_TRUE(db.intact());
}

TEST(SqliteWriter, WritesEveryEventKind) {
  TempDir dir;
  const std::string path = dir.file("events.sqlite");
  StringTable strings;
  const uint64_t registered = strings.intern("registered name");
  EXPECT_EQ(strings.intern("registered name"), registered);  // StringIds dedup
  const uint64_t other = strings.intern("other");
  EXPECT_NE(other, registered);

  EventChunk chunk;
  // 59: push/pop range, ASCII text, ARGB color above 2^31, category, uint64 payload.
  CompletedEvent push_pop = range(NvtxEventType::kPushPopRange, 100, 250);
  push_pop.attrs.has_color = true;
  push_pop.attrs.color = 0xFFFF0000u;
  push_pop.attrs.category = 7;
  push_pop.attrs.payload_type = PayloadType::kUint64;
  push_pop.attrs.payload.u64 = 0xFFFFFFFFFFFFFFFFULL;
  chunk.add(push_pop, "outer \"quoted\"\nline");
  // 59 in a created domain, registered string: textId, text NULL.
  CompletedEvent in_domain = range(NvtxEventType::kPushPopRange, 110, 120);
  in_domain.attrs.has_text = false;
  in_domain.attrs.text_id = registered;
  in_domain.domain_id = 3;
  chunk.add(in_domain, "");
  // 60: start/end range ended on another thread.
  CompletedEvent start_end = range(NvtxEventType::kStartEndRange, 130, 400);
  start_end.range_id = 17;
  start_end.end_global_tid = kWorkerTid;
  start_end.attrs.payload_type = PayloadType::kDouble;
  start_end.attrs.payload.f64 = 2.5;
  chunk.add(start_end, "cross-thread");
  // 34: mark, end NULL, one payload of each remaining type on separate marks.
  const std::vector<std::pair<PayloadType, PayloadValue>> payloads = {
      {PayloadType::kInt64, PayloadValue{.i64 = -5}},
      {PayloadType::kUint32, PayloadValue{.u32 = 4000000000u}},
      {PayloadType::kInt32, PayloadValue{.i32 = -7}},
      {PayloadType::kFloat, PayloadValue{.f32 = 1.5f}},
  };
  for (size_t i = 0; i < payloads.size(); ++i) {
    CompletedEvent mark;
    mark.event_type = NvtxEventType::kMark;
    mark.start = 500 + static_cast<int64_t>(i);
    mark.global_tid = kWorkerTid;
    mark.attrs.has_text = true;
    mark.attrs.payload_type = payloads[i].first;
    mark.attrs.payload = payloads[i].second;
    chunk.add(mark, "mark " + std::to_string(i));
  }
  // 75/76/33/39 rows.
  CompletedEvent create;
  create.event_type = NvtxEventType::kDomainCreate;
  create.start = -20;  // before the session start, as nsys allows
  create.global_tid = kMainTid;
  create.domain_id = 3;
  create.attrs.has_text = true;
  chunk.add(create, "pyprof");
  CompletedEvent destroy = create;
  destroy.event_type = NvtxEventType::kDomainDestroy;
  destroy.start = 900;
  destroy.attrs.has_text = false;
  chunk.add(destroy, "");
  CompletedEvent category;
  category.event_type = NvtxEventType::kCategory;
  category.start = 5;
  category.global_tid = kMainTid;
  category.domain_id = 3;
  category.attrs.category = 9;
  category.attrs.has_text = true;
  chunk.add(category, "forward");
  CompletedEvent thread;
  thread.event_type = NvtxEventType::kThread;
  thread.start = 6;
  thread.global_tid = kWorkerTid;
  thread.attrs.has_text = true;
  chunk.add(thread, "worker");
  // Invalid UTF-8 is repaired, never stored as-is.
  CompletedEvent broken = range(NvtxEventType::kPushPopRange, 600, 700);
  chunk.add(broken, std::string("bad \xC3\x28 byte"));

  {
    std::unique_ptr<SqliteWriter> writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->begin());
    ASSERT_TRUE(writer->write_strings(strings.take_unwritten()));
    EXPECT_TRUE(strings.take_unwritten().empty());  // each string handed out once
    ASSERT_TRUE(writer->write_events(chunk)) << writer->last_error();
    ASSERT_TRUE(writer->commit());
  }

  TestDb db(path);
  EXPECT_TRUE(db.intact());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM StringIds"), 2);
  EXPECT_EQ(db.text("SELECT value FROM StringIds WHERE id = " + std::to_string(registered)),
            "registered name");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 12);

  const std::string columns =
      "SELECT start, end, eventType, rangeId, category, color, text, globalTid, endGlobalTid, "
      "textId, domainId, uint64Value, int64Value, doubleValue, uint32Value, int32Value, "
      "floatValue, jsonTextId, jsonText, binaryData FROM NVTX_EVENTS ";
  std::vector<Row> rows = db.query(columns + "WHERE start = 100");
  ASSERT_EQ(rows.size(), 1u);
  Row row = rows[0];
  EXPECT_EQ(as_int(row[1]), 250);
  EXPECT_EQ(as_int(row[2]), 59);
  EXPECT_TRUE(is_null(row[3]));
  EXPECT_EQ(as_int(row[4]), 7);
  EXPECT_EQ(as_int(row[5]), 4294901760LL);  // ARGB as unsigned 32-bit
  EXPECT_EQ(as_text(row[6]), "outer \"quoted\"\nline");
  EXPECT_EQ(static_cast<uint64_t>(as_int(row[7])), kMainTid);
  EXPECT_TRUE(is_null(row[8]));
  EXPECT_TRUE(is_null(row[9]));
  EXPECT_EQ(as_int(row[10]), 0);   // default domain
  EXPECT_EQ(as_int(row[11]), -1);  // uint64 max, same 64 bits
  for (int i = 12; i <= 19; ++i) EXPECT_TRUE(is_null(row[i])) << i;

  row = db.query(columns + "WHERE start = 110")[0];
  EXPECT_TRUE(is_null(row[6]));                                 // text NULL ...
  EXPECT_EQ(as_int(row[9]), static_cast<int64_t>(registered));  // ... textId set
  EXPECT_EQ(as_int(row[10]), 3);
  EXPECT_TRUE(is_null(row[4]));  // category 0 -> NULL
  EXPECT_TRUE(is_null(row[5]));  // no color -> NULL
  EXPECT_EQ(db.text("SELECT s.value FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId"),
            "registered name");

  row = db.query(columns + "WHERE start = 130")[0];
  EXPECT_EQ(as_int(row[2]), 60);
  EXPECT_EQ(as_int(row[3]), 17);
  EXPECT_EQ(static_cast<uint64_t>(as_int(row[8])), kWorkerTid);
  EXPECT_DOUBLE_EQ(as_double(row[13]), 2.5);

  rows = db.query(columns + "WHERE eventType = 34 ORDER BY start");
  ASSERT_EQ(rows.size(), 4u);
  for (const Row& mark : rows) EXPECT_TRUE(is_null(mark[1]));  // marks: end NULL
  EXPECT_EQ(as_int(rows[0][12]), -5);
  EXPECT_EQ(as_int(rows[1][14]), 4000000000LL);
  EXPECT_EQ(as_int(rows[2][15]), -7);
  EXPECT_DOUBLE_EQ(as_double(rows[3][16]), 1.5);
  EXPECT_TRUE(is_null(rows[0][11]));
  EXPECT_TRUE(is_null(rows[3][13]));

  row = db.query(columns + "WHERE eventType = 75")[0];
  EXPECT_EQ(as_int(row[0]), -20);
  EXPECT_TRUE(is_null(row[1]));
  EXPECT_EQ(as_text(row[6]), "pyprof");
  EXPECT_EQ(as_int(row[10]), 3);
  row = db.query(columns + "WHERE eventType = 76")[0];
  EXPECT_TRUE(is_null(row[6]));
  EXPECT_EQ(as_int(row[10]), 3);
  row = db.query(columns + "WHERE eventType = 33")[0];
  EXPECT_EQ(as_int(row[4]), 9);
  EXPECT_EQ(as_text(row[6]), "forward");
  row = db.query(columns + "WHERE eventType = 39")[0];
  EXPECT_EQ(as_text(row[6]), "worker");
  EXPECT_EQ(static_cast<uint64_t>(as_int(row[7])), kWorkerTid);

  EXPECT_EQ(db.text("SELECT text FROM NVTX_EVENTS WHERE start = 600"), "bad \xEF\xBF\xBD( byte");
}

TEST(SqliteWriter, WritesMetadataThreadsProcessesAndStats) {
  TempDir dir;
  const std::string path = dir.file("meta.sqlite");
  {
    std::unique_ptr<SqliteWriter> writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->begin());
    EXPECT_TRUE(writer->write_strings(std::vector<StringRow>{{1, "main"}, {2, "worker"}}));
    EXPECT_TRUE(writer->write_thread_names(
        std::vector<ThreadNameRow>{{kMainTid, 1, std::nullopt}, {kWorkerTid, 2, 20}}));
    EXPECT_TRUE(writer->write_process({nsys::global_pid(kPid), kPid, "python3"}));
    EXPECT_TRUE(writer->write_session_start({1733877925987393218LL, 123456789}));
    EXPECT_TRUE(writer->write_metadata(MetadataTable::kExport, export_metadata()));
    EXPECT_TRUE(
        writer->write_metadata(MetadataTable::kCapture, std::vector<MetadataRow>{{"RANK", "3"}}));
    CollectorStats stats;
    stats.events_recorded = 10;
    stats.events_written = 8;
    stats.events_dropped = 2;
    EXPECT_TRUE(writer->write_stats(stats.rows()));
    stats.events_written = 9;  // a name written again replaces its value
    EXPECT_TRUE(writer->write_stats(stats.rows()));
    ASSERT_TRUE(writer->commit());
  }
  TestDb db(path);
  EXPECT_EQ(db.text("SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                    "WHERE t.globalTid = " +
                    std::to_string(kWorkerTid)),
            "worker");
  EXPECT_EQ(db.scalar("SELECT priority FROM ThreadNames WHERE nameId = 2"), 20);
  EXPECT_TRUE(is_null(db.query("SELECT priority FROM ThreadNames WHERE nameId = 1")[0][0]));
  const Row process = db.query("SELECT globalPid, pid, name FROM PROCESSES")[0];
  EXPECT_EQ(static_cast<uint64_t>(as_int(process[0])), nsys::global_pid(kPid));
  EXPECT_EQ(as_int(process[1]), kPid);
  EXPECT_EQ(as_text(process[2]), "python3");
  const Row start = db.query("SELECT * FROM TARGET_INFO_SESSION_START_TIME")[0];
  EXPECT_EQ(as_int(start[0]), 1733877925987393218LL);
  EXPECT_EQ(as_text(start[1]), "2024-12-11T00:45:25");
  EXPECT_EQ(as_int(start[3]), 123456789);
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_NAME'"),
            "pyprof");
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'"),
            "0.1.0");
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"),
            "1");
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_CAPTURE WHERE name = 'RANK'"), "3");
  EXPECT_EQ(db.stat("events_recorded"), 10);
  EXPECT_EQ(db.stat("events_written"), 9);
  EXPECT_EQ(db.stat("events_dropped"), 2);
  for (const char* name : {"events_outside_window", "events_after_shutdown", "messages_truncated",
                           "unclosed_ranges", "unbalanced_pops", "threads"}) {
    EXPECT_EQ(db.stat(name), 0) << name;
  }
}

TEST(SqliteWriter, FailedTransactionLeavesNoRows) {
  TempDir dir;
  const std::string path = dir.file("rollback.sqlite");
  std::unique_ptr<SqliteWriter> writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  EventChunk chunk;
  chunk.add(range(NvtxEventType::kPushPopRange, 1, 2), "x");
  ASSERT_TRUE(writer->begin());
  ASSERT_TRUE(writer->write_events(chunk));
  writer->rollback();
  writer.reset();
  TestDb db(path);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 0);
}

// Limits the size of files this process writes (RLIMIT_FSIZE) while it lives, so that writes
// past it fail with EFBIG (SIGXFSZ ignored) as on a full disk; no privileges needed.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t previous_handler_ = SIG_DFL;
};

TEST(SqliteWriter, FullDiskAtSchemaCreationIsAStorageFailureNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("full.sqlite");
  std::string error;
  bool storage_failure = false;
  {
    FileSizeLimit limit(1024);  // less than one page
    EXPECT_EQ(SqliteWriter::open(path, &error, &storage_failure), nullptr);
  }
  EXPECT_TRUE(storage_failure);
  // The file and the cause are named, not left blank.
  EXPECT_NE(error.find("cannot create the schema in " + path + ": "), std::string::npos) << error;
  EXPECT_NE(error.find(": disk I/O error"), std::string::npos) << error;
}

TEST(SqliteWriter, FullDiskMidwayKeepsCommittedRows) {
  TempDir dir;
  const std::string path = dir.file("midway.sqlite");
  std::unique_ptr<SqliteWriter> writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  EventChunk small;
  small.add(range(NvtxEventType::kPushPopRange, 1, 2), "kept");
  ASSERT_TRUE(writer->begin() && writer->write_events(small) && writer->commit());
  EXPECT_FALSE(writer->storage_failed());

  // Far more than the limit allows: 2000 ranges of 1 KiB text.
  const std::string text(1024, 'x');
  EventChunk big;
  for (int i = 0; i < 2000; ++i) big.add(range(NvtxEventType::kPushPopRange, 10 + i, 11 + i), text);
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  {
    FileSizeLimit limit(static_cast<rlim_t>(before.st_size) + 64 * 1024);
    const bool ok = writer->begin() && writer->write_events(big) && writer->commit();
    EXPECT_FALSE(ok);
    EXPECT_TRUE(writer->storage_failed()) << writer->last_error();
    EXPECT_NE(writer->last_error().find(": disk I/O error"), std::string::npos)
        << writer->last_error();
    writer->rollback();  // still under the limit, as after a real full disk
  }
  writer.reset();
  // No hot journal is left behind: a read-only reader sees the committed row.
  TestDb db(path);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 1);
}

TEST(SqliteWriter, OtherErrorsAreNotStorageFailures) {
  TempDir dir;
  std::unique_ptr<SqliteWriter> writer = open_writer(dir.file("no_transaction.sqlite"));
  ASSERT_NE(writer, nullptr);
  EXPECT_FALSE(writer->commit());  // no transaction is open
  EXPECT_FALSE(writer->storage_failed());
  EXPECT_NE(writer->last_error().find("COMMIT: "), std::string::npos) << writer->last_error();
}

// A chunk's allocations and frees go to PYPROF_MEMORY_EVENTS with its ranges; device facts to
// PYPROF_MEMORY_DEVICES, unknown values NULL (docs/formats.md §2.2).
TEST(SqliteWriter, WritesMemoryEventsAndDeviceFacts) {
  TempDir dir;
  const std::string path = dir.file("memory.sqlite");
  std::unique_ptr<SqliteWriter> writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  EventChunk chunk;
  chunk.add(range(NvtxEventType::kPushPopRange, 100, 900), "aten::linear");
  MemoryEvent alloc;
  alloc.time = 200;
  alloc.global_tid = kMainTid;
  alloc.address = 0x7f0012345000;  // a user-space address: its 64 bits stay as they are
  alloc.bytes = 4 * 16 * 4;
  alloc.total_allocated = 5120;
  alloc.total_reserved = 0;
  alloc.device_type = 0;
  alloc.device_index = -1;
  chunk.add_memory(alloc);
  MemoryEvent cuda_free = alloc;
  cuda_free.time = 300;
  cuda_free.global_tid = kWorkerTid;
  cuda_free.bytes = -2097152;
  cuda_free.total_allocated = 0;
  cuda_free.total_reserved = 20971520;
  cuda_free.device_type = 1;
  cuda_free.device_index = 3;
  chunk.add_memory(cuda_free);
  EXPECT_EQ(chunk.bytes(), sizeof(CompletedEvent) + 12 + 2 * sizeof(MemoryEvent));

  MemoryDeviceRow gpu;
  gpu.start = 950;
  gpu.global_tid = kMainTid;
  gpu.device_type = 1;
  gpu.device_index = 3;
  gpu.moment = "exit";
  gpu.total_memory = 150'000'000'000;
  gpu.free_memory = 140'000'000'000;
  gpu.allocated = 0;
  gpu.reserved = 20971520;
  gpu.peak_allocated = 2097152;
  gpu.peak_reserved = 20971520;
  gpu.alloc_retries = 0;
  gpu.ooms = 0;
  MemoryDeviceRow cpu;  // what the host says: no allocator counters
  cpu.start = 960;
  cpu.moment = "exit";
  cpu.total_memory = 25'000'000'000;

  ASSERT_TRUE(writer->begin() && writer->write_events(chunk) &&
              writer->write_memory_devices(std::vector<MemoryDeviceRow>{gpu, cpu}) &&
              writer->commit())
      << writer->last_error();
  writer.reset();

  TestDb db(path);
  EXPECT_EQ(columns_of(db, "PYPROF_MEMORY_EVENTS"), (Columns{{"start", "INTEGER"},
                                                             {"globalTid", "INTEGER"},
                                                             {"address", "INTEGER"},
                                                             {"bytes", "INTEGER"},
                                                             {"totalAllocated", "INTEGER"},
                                                             {"totalReserved", "INTEGER"},
                                                             {"deviceType", "INTEGER"},
                                                             {"deviceId", "INTEGER"}}));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 1);
  const std::vector<Row> events = db.query(
      "SELECT start, globalTid, address, bytes, totalAllocated, totalReserved, deviceType, "
      "deviceId FROM PYPROF_MEMORY_EVENTS ORDER BY start");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (Row{int64_t{200}, static_cast<int64_t>(kMainTid), int64_t{0x7f0012345000},
                            int64_t{256}, int64_t{5120}, int64_t{0}, int64_t{0}, int64_t{-1}}));
  EXPECT_EQ(events[1],
            (Row{int64_t{300}, static_cast<int64_t>(kWorkerTid), int64_t{0x7f0012345000},
                 int64_t{-2097152}, int64_t{0}, int64_t{20971520}, int64_t{1}, int64_t{3}}));
  const std::vector<Row> devices = db.query(
      "SELECT start, globalTid, deviceType, deviceId, moment, totalMemory, freeMemory, "
      "allocatorLimit, allocated, reserved, peakAllocated, peakReserved, allocRetries, ooms "
      "FROM PYPROF_MEMORY_DEVICES ORDER BY start");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0], (Row{int64_t{950}, static_cast<int64_t>(kMainTid), int64_t{1}, int64_t{3},
                             std::string("exit"), int64_t{150'000'000'000},
                             int64_t{140'000'000'000}, nullptr, int64_t{0}, int64_t{20971520},
                             int64_t{2097152}, int64_t{20971520}, int64_t{0}, int64_t{0}}));
  EXPECT_EQ(devices[1], (Row{int64_t{960}, nullptr, int64_t{0}, int64_t{-1}, std::string("exit"),
                             int64_t{25'000'000'000}, nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, nullptr}));
}

TEST(WriteEmptyDatabase, HasEveryTableMetadataAndZeroStats) {
  TempDir dir;
  const std::string path = dir.file("empty.sqlite");
  std::string error;
  ASSERT_TRUE(write_empty_database(path, "program never called NVTX", &error)) << error;
  TestDb db(path);
  EXPECT_TRUE(db.intact());
  for (const char* table :
       {"StringIds", "NVTX_EVENTS", "ThreadNames", "PROCESSES", "TARGET_INFO_SESSION_START_TIME",
        "META_DATA_EXPORT", "META_DATA_CAPTURE", "ENUM_NSYS_EVENT_TYPE", "PYPROF_COLLECTOR_STATS",
        "PYPROF_MEMORY_EVENTS", "PYPROF_MEMORY_DEVICES"}) {
    EXPECT_EQ(
        db.scalar(std::string("SELECT count(*) FROM sqlite_master WHERE name = '") + table + "'"),
        1)
        << table;
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS"), 0);
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_CAPTURE WHERE name = 'PYPROF_NOTE'"),
            "program never called NVTX");
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_NAME'"),
            "pyprof");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'EXPORT_TIME_UTC'"), 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM TARGET_INFO_SESSION_START_TIME"), 1);
  EXPECT_EQ(db.stat("events_recorded"), 0);
  EXPECT_EQ(db.stat("events_written"), 0);
  EXPECT_EQ(db.stat("threads"), 0);
  EXPECT_EQ(db.stat("memory_events"), 0);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM PYPROF_MEMORY_EVENTS"), 0);

  // Never overwrites.
  EXPECT_FALSE(write_empty_database(path, "again", &error));
  EXPECT_NE(error.find("exists"), std::string::npos) << error;
}

}  // namespace
}  // namespace pyprof::collect
