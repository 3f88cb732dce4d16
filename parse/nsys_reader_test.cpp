// The Nsight Systems / pyprof database reader on small SQLite databases made here, table by
// table: what each column becomes, the columns that differ between versions (each optional
// one missing in turn), the essential ones refused by name, pyprof's own metadata, and a
// kernel followed through reader and correlation to the op around its launch.
#include "parse/nsys_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/nsys_schema.h"
#include "parse/correlate.h"

namespace pyprof::parse {
namespace {

// globalTid / globalPid as nsys and pyprof write them.
std::string gtid(uint32_t pid, uint32_t tid) { return std::to_string(nsys::global_tid(pid, tid)); }
std::string gpid(uint32_t pid) { return std::to_string(nsys::global_pid(pid)); }

// A database file written with SQL, removed with the object.
class TestDb {
 public:
  TestDb() {
    static std::atomic<int> count{0};
    path_ = ::testing::TempDir() + "nsys_reader_test." + std::to_string(::getpid()) + "." +
            std::to_string(count++) + ".sqlite";
    ::unlink(path_.c_str());
  }
  ~TestDb() { ::unlink(path_.c_str()); }
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    EXPECT_EQ(rc, SQLITE_OK) << (message ? message : "") << "\n" << sql;
    sqlite3_free(message);
    sqlite3_close(db);
  }
  // Reads the file into `trace`; false with `error` as the reader says it.
  bool read(Trace& trace, std::string& error) {
    SqliteDb db;
    if (!db.open(path_, error)) return false;
    NsysReader reader(db);
    return reader.read(trace, error);
  }
  Trace read_ok() {
    Trace trace;
    std::string error;
    EXPECT_TRUE(read(trace, error)) << error;
    return trace;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const Trace::WarningGroup* warning(const Trace& trace, std::string_view category) {
  for (const auto& group : trace.warnings) {
    if (group.category == category) return &group;
  }
  return nullptr;
}

constexpr const char* kKernelColumns =
    "start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, "
    "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, "
    "gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, "
    "blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER, "
    "dynamicSharedMemory INTEGER";

// One process (4242), one thread (17): an emit_nvtx op range around the launch of one kernel,
// and a mark, as `nsys export --type sqlite` writes them.
void write_small_export(TestDb& db) {
  db.exec(
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'),"
      " (2, 'void at::native::reduce_kernel<512, 1>(int)'), (3, 'reduce_kernel');"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(" +
      std::string(kKernelColumns) +
      ");"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 1500, 0, 1, 7, 42, " +
      gpid(4242) +
      ", 2, 3, 4, 1, 1, 128, 1, 1, 86, 16384, 0);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, eventClass INTEGER,"
      " globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (900, 950, 0, " +
      gtid(4242, 17) +
      ", 42, 1, 0);"
      "CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER,"
      " category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,"
      " textId INTEGER, domainId INTEGER, uint64Value INTEGER);"
      "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid) VALUES"
      " (800, 1000, 59, 'aten::sum, seq = 10, op_id = 7', " +
      gtid(4242, 17) + "), (850, NULL, 34, 'a mark', " + gtid(4242, 17) + ");");
}

TEST(NsysReader, ReadsEachTableOfAnExport) {
  TestDb db;
  write_small_export(db);
  const Trace t = db.read_ok();
  EXPECT_EQ(t.format, "nsys");
  ASSERT_EQ(t.activities.size(), 1u);
  const GpuActivity& k = t.activities[0];
  EXPECT_EQ(k.kind, ActivityKind::kKernel);
  EXPECT_EQ(k.start, 1000);
  EXPECT_EQ(k.end, 1500);
  EXPECT_EQ(k.device, 0);
  EXPECT_EQ(k.context, 1);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.correlation_id, 42);
  EXPECT_EQ(k.pid, 4242u);
  EXPECT_EQ(t.pool.get(k.long_name), "void at::native::reduce_kernel<512, 1>(int)");
  EXPECT_EQ(t.pool.get(k.short_name), "reduce_kernel");
  EXPECT_EQ(k.grid[0], 4);
  EXPECT_EQ(k.grid[2], 1);
  EXPECT_EQ(k.block[0], 128);
  EXPECT_EQ(k.registers, 86);
  EXPECT_EQ(k.static_shared, 16384);
  EXPECT_EQ(k.dynamic_shared, 0);
  EXPECT_EQ(k.graph_node_id, -1);  // no graphNodeId column
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].pid, 4242u);
  EXPECT_EQ(t.api_calls[0].tid, 17u);
  EXPECT_EQ(t.api_calls[0].correlation_id, 42);
  EXPECT_EQ(t.pool.get(t.api_calls[0].name), "cudaLaunchKernel");
  ASSERT_EQ(t.ranges.size(), 2u);
  const RangeRecord& op = t.ranges[0];
  EXPECT_EQ(op.kind, MarkerKind::kOp);
  EXPECT_EQ(op.dialect, Dialect::kEmitNvtx);
  EXPECT_EQ(t.pool.get(op.name), "aten::sum");
  EXPECT_EQ(op.seq, 10);
  EXPECT_EQ(op.op_id, 7);
  EXPECT_EQ(op.start, 800);
  EXPECT_EQ(op.end, 1000);
  EXPECT_EQ(op.tid, 17u);
  EXPECT_EQ(op.shape, RangeShape::kPushPop);
  EXPECT_EQ(t.ranges[1].shape, RangeShape::kMark);
  EXPECT_EQ(t.ranges[1].end, 850);  // a mark ends where it starts
  EXPECT_EQ(t.stats.kernels, 1);
  EXPECT_EQ(t.stats.api_calls, 1);
  EXPECT_EQ(t.stats.ranges, 1);
  EXPECT_EQ(t.stats.marks, 1);
  EXPECT_TRUE(t.warnings.empty());
}

TEST(NsysReader, AKernelIsFollowedToTheOpAroundItsLaunch) {
  TestDb db;
  write_small_export(db);
  Trace t = db.read_ok();
  const Correlation c = correlate(t);
  ASSERT_EQ(c.attributions.size(), 1u);
  EXPECT_EQ(c.attributions[0].launch, 0);
  EXPECT_EQ(c.attributions[0].op, 0);
  EXPECT_EQ(c.attributions[0].dir, Direction::kForward);
}

// The kernel table of each export generation: a column missing, the value its reader falls
// back on.
TEST(NsysReader, KernelColumnsOfEveryVersion) {
  struct Case {
    const char* what;
    const char* columns;
    const char* values;
    const char* long_name;
    const char* short_name;
    int32_t grid_x, registers, static_shared;
    int64_t graph_node;
  };
  const Case cases[] = {
      {"names as nsys writes them", "demangledName, shortName", "1, 2", "void ns::k<4>(float*)",
       "k4", 0, -1, -1, -1},
      {"no shortName: cut from the demangled name", "demangledName", "1", "void ns::k<4>(float*)",
       "k", 0, -1, -1, -1},
      {"only the mangled name: demangled here", "mangledName", "3", "foo(float*)", "foo", 0, -1, -1,
       -1},
      {"launch dimensions and resources",
       "demangledName, gridX, registersPerThread, "
       "staticSharedMemory",
       "1, 64, 32, 1024", "void ns::k<4>(float*)", "k", 64, 32, 1024, -1},
      {"a CUDA graph's node (pyprof, nsys 2021+)", "demangledName, graphNodeId", "1, 77",
       "void ns::k<4>(float*)", "k", 0, -1, -1, 77},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TestDb db;
    db.exec(std::string("CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
                        "INSERT INTO StringIds VALUES (1, 'void ns::k<4>(float*)'), (2, 'k4'),"
                        " (3, '_Z3fooPf');"
                        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, ") +
            c.columns + ");INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, " + c.values +
            ");");
    const Trace t = db.read_ok();
    ASSERT_EQ(t.activities.size(), 1u);
    const GpuActivity& k = t.activities[0];
    EXPECT_EQ(t.pool.get(k.long_name), c.long_name);
    EXPECT_EQ(t.pool.get(k.short_name), c.short_name);
    EXPECT_EQ(k.grid[0], c.grid_x);
    EXPECT_EQ(k.registers, c.registers);
    EXPECT_EQ(k.static_shared, c.static_shared);
    EXPECT_EQ(k.graph_node_id, c.graph_node);
    EXPECT_EQ(k.device, -1);  // no deviceId column
    EXPECT_EQ(k.correlation_id, -1);
  }
}

TEST(NsysReader, ApiNamesLoseTheirCallbackVersionOnly) {
  const std::pair<const char*, const char*> cases[] = {
      {"cudaLaunchKernel_v7000", "cudaLaunchKernel"},
      {"cudaMemcpyAsync_v3020", "cudaMemcpyAsync"},
      {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2"},  // part of the driver API's name
      {"cuLaunchKernel_v2_ptsz", "cuLaunchKernel_v2_ptsz"},
      {"cudaFoo_v70a0", "cudaFoo_v70a0"},
      {"cudaDeviceSynchronize", "cudaDeviceSynchronize"},
  };
  TestDb db;
  std::string sql =
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId);";
  for (size_t i = 0; i < std::size(cases); ++i) {
    sql += "INSERT INTO StringIds VALUES (" + std::to_string(i + 1) + ", '" + cases[i].first +
           "');INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (" + std::to_string(i * 10) + ", " +
           std::to_string(i * 10 + 5) + ", " + gtid(1, 1) + ", " + std::to_string(i + 1) + ", " +
           std::to_string(i + 1) + ");";
  }
  db.exec(sql);
  const Trace t = db.read_ok();
  ASSERT_EQ(t.api_calls.size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(t.pool.get(t.api_calls[i].name), cases[i].second);
  }
}

TEST(NsysReader, EssentialColumnsAreRefusedByName) {
  struct Case {
    const char* table_sql;
    const char* error;
  };
  const Case cases[] = {
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, deviceId)",
       "table CUPTI_ACTIVITY_KIND_KERNEL has no column 'end' (not an Nsight Systems export?)"},
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, correlationId)",
       "table CUPTI_ACTIVITY_KIND_RUNTIME has no column 'globalTid' (not an Nsight Systems "
       "export?)"},
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(end, bytes)",
       "table CUPTI_ACTIVITY_KIND_MEMCPY has no column 'start' (not an Nsight Systems export?)"},
      {"CREATE TABLE StringIds(id, text)",
       "table StringIds has no column 'value' (not an Nsight Systems export?)"},
      {"CREATE TABLE NVTX_EVENTS(start, end, eventType, globalTid)",
       "table NVTX_EVENTS has neither 'text' nor 'textId'"},
      {"CREATE TABLE NVTX_EVENTS(start, end, text)",
       "table NVTX_EVENTS has no column 'eventType' (not an Nsight Systems export?)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.table_sql);
    TestDb db;
    db.exec(std::string(c.table_sql) + ";");
    Trace t;
    std::string error;
    EXPECT_FALSE(db.read(t, error));
    EXPECT_EQ(error, c.error);
  }
}

TEST(NsysReader, RowsWithoutTheirEssentialValuesAreSkippedAndCounted) {
  TestDb db;
  db.exec(
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (NULL, 20, 1), (30, 40, 2);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, NULL, 1), (3, 4, " +
      gtid(1, 1) +
      ", 2);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, bytes);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (50, NULL, 3, 64);");
  const Trace t = db.read_ok();
  ASSERT_EQ(t.activities.size(), 1u);
  EXPECT_EQ(t.activities[0].start, 30);
  // A memset is named as one (the warning once said "copy" for both tables).
  ASSERT_NE(warning(t, "memset without start/end"), nullptr);
  EXPECT_EQ(warning(t, "copy without start/end"), nullptr);
  ASSERT_EQ(t.api_calls.size(), 1u);
  EXPECT_EQ(t.api_calls[0].correlation_id, 2);
  EXPECT_EQ(t.stats.rows_skipped, 3);
  ASSERT_NE(warning(t, "kernel without start/end"), nullptr);
  ASSERT_NE(warning(t, "API call without time or thread"), nullptr);
  EXPECT_EQ(warning(t, "API call without time or thread")->examples[0],
            "a CUPTI_ACTIVITY_KIND_RUNTIME row has NULL start, end or globalTid: skipped");
}

TEST(NsysReader, KernelsWithoutAnApiTableAreReadAndWarnedAbout) {
  TestDb db;
  db.exec(
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20);");
  const Trace t = db.read_ok();
  EXPECT_EQ(t.activities.size(), 1u);
  ASSERT_NE(warning(t, "no API calls"), nullptr);
  EXPECT_EQ(warning(t, "no API calls")->examples[0],
            "the database has GPU activities but no CUPTI_ACTIVITY_KIND_RUNTIME table: no kernel "
            "can be attributed");
}

TEST(NsysReader, CopiesAndSets) {
  TestDb db;
  db.exec(
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, globalPid, bytes,"
      " copyKind, srcKind, dstKind);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10, 20, 5, " +
      gpid(9) +
      ", 4096, 1, 0, 2);"
      // an older export without the memory kinds
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, bytes, value);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (30, 35, 6, 64, 255);");
  const Trace t = db.read_ok();
  ASSERT_EQ(t.activities.size(), 2u);
  const GpuActivity& copy = t.activities[0];
  EXPECT_EQ(copy.kind, ActivityKind::kMemcpy);
  EXPECT_EQ(copy.pid, 9u);
  EXPECT_EQ(copy.bytes, 4096);
  EXPECT_EQ(copy.copy_kind, 1);
  EXPECT_EQ(copy.src_kind, 0);
  EXPECT_EQ(copy.dst_kind, 2);
  const GpuActivity& set = t.activities[1];
  EXPECT_EQ(set.kind, ActivityKind::kMemset);
  EXPECT_EQ(set.bytes, 64);
  EXPECT_EQ(set.memset_value, 255);
  EXPECT_EQ(set.dst_kind, 7);  // unknown
  EXPECT_EQ(t.stats.memcpys, 1);
  EXPECT_EQ(t.stats.memsets, 1);
}

// pyprof's markers: registered strings (module markers and interned op markers, whose op id
// and seq are the row's payload and category) and text ones, in the "pyprof" domain.
TEST(NsysReader, PyprofMarkersInTheirDomain) {
  TestDb db;
  const std::string t1 = gtid(4242, 1);
  db.exec(
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
      "INSERT INTO StringIds VALUES (1, '{\"v\":1,\"module\":\"Net.fc\",\"type\":\"Linear\"}'),"
      " (2, '{\"v\":2,\"op\":\"aten::addmm\",\"tid\":0,\"scope\":\"function\","
      "\"args\":{\"self\":[4]}}');"
      "CREATE TABLE NVTX_EVENTS(start, end, eventType, text, globalTid, textId, domainId,"
      " category, uint64Value);"
      // The domain's creation row may come after its ranges.
      "INSERT INTO NVTX_EVENTS VALUES (0, 100, 59, NULL, " +
      t1 + ", 1, 1, NULL, NULL), (10, 90, 59, NULL, " + t1 +
      ", 2, 1, 8, 42),"
      " (20, 30, 59, '{\"v\":1,\"op\":\"aten::t\",\"id\":43,\"seq\":-1,\"tid\":0,"
      "\"args\":{\"self\":[4,4]}}', " +
      t1 + ", NULL, 1, NULL, NULL), (0, NULL, 75, 'pyprof', " + t1 +
      ", NULL, 1, NULL, NULL),"
      " (40, 50, 59, 'elsewhere', " +
      t1 + ", NULL, 9, NULL, NULL);");
  SqliteDb sqlite;
  std::string error;
  ASSERT_TRUE(sqlite.open(db.path(), error)) << error;
  NsysReader reader(sqlite);
  Trace t;
  ASSERT_TRUE(reader.read(t, error)) << error;
  ASSERT_EQ(t.ranges.size(), 4u);
  const RangeRecord& module = t.ranges[0];
  EXPECT_EQ(module.kind, MarkerKind::kModule);
  EXPECT_EQ(t.pool.get(module.name), "Net.fc");
  EXPECT_EQ(t.pool.get(module.detail), "Linear");
  EXPECT_EQ(t.pool.get(module.domain), "pyprof");
  const RangeRecord& addmm = t.ranges[1];
  EXPECT_EQ(addmm.kind, MarkerKind::kOp);
  EXPECT_EQ(addmm.dialect, Dialect::kPyprof);
  EXPECT_EQ(addmm.op_id, 42);  // uint64Value
  EXPECT_EQ(addmm.seq, 7);     // category - 1
  EXPECT_EQ(addmm.rf_tid, 0);
  EXPECT_TRUE(addmm.has_args);
  const RangeRecord& text_op = t.ranges[2];
  EXPECT_EQ(t.pool.get(text_op.name), "aten::t");
  EXPECT_EQ(text_op.op_id, 43);
  EXPECT_EQ(text_op.seq, -1);
  // A text message is not kept: its row is read again when a record needs it.
  ASSERT_EQ(text_op.text.where, TextRef::Where::kRow);
  EXPECT_EQ(reader.fetch_text(t, text_op.text),
            R"({"v":1,"op":"aten::t","id":43,"seq":-1,"tid":0,"args":{"self":[4,4]}})");
  // Domain 9 was never created: its ranges are user ranges of a named domain.
  const RangeRecord& elsewhere = t.ranges[3];
  EXPECT_EQ(elsewhere.kind, MarkerKind::kUser);
  EXPECT_EQ(t.pool.get(elsewhere.domain), "domain#9");
  ASSERT_NE(warning(t, "unknown NVTX domain"), nullptr);
  EXPECT_EQ(warning(t, "unknown NVTX domain")->examples[0],
            "ranges use domain id 9 of process 4242, which has no creation row");
}

// META_DATA_EXPORT says who wrote the file; pyprof's own databases add META_DATA_CAPTURE and
// PYPROF_COLLECTOR_STATS.
TEST(NsysReader, PyprofCaptureMetadata) {
  const std::string export_table =
      "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
      "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'pyprof'),"
      " ('EXPORT_PRODUCT_VERSION', '0.1.0');"
      "CREATE TABLE META_DATA_CAPTURE(name TEXT, value TEXT);"
      "CREATE TABLE PYPROF_COLLECTOR_STATS(name TEXT, value INTEGER);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, " +
      gtid(7, 1) + ", 1), (3, 4, " + gtid(7, 2) + ", 2), (5, 6, " + gtid(7, 2) + ", 3);";
  {
    SCOPED_TRACE("finished, with a rank");
    TestDb db;
    db.exec(export_table +
            "INSERT INTO META_DATA_CAPTURE VALUES ('RANK', '3'), ('WORLD_SIZE', '8'),"
            " ('FINALIZED_BY', 'exit'), ('PYPROF_CUDA_TRACE', 'on: CUPTI API version 130000');"
            "INSERT INTO PYPROF_COLLECTOR_STATS VALUES ('events_dropped', 0);");
    const Trace t = db.read_ok();
    EXPECT_EQ(t.format, "pyprof");
    EXPECT_EQ(t.version, "0.1.0");
    EXPECT_EQ(t.cuda_trace, "on: CUPTI API version 130000");
    ASSERT_TRUE(t.distributed.has_value());
    EXPECT_EQ(t.distributed->rank, 3);
    EXPECT_EQ(t.distributed->world_size, 8);
    EXPECT_FALSE(t.unfinished_capture);
    EXPECT_FALSE(t.write_failure.has_value());
    EXPECT_EQ(t.stats.capture_stats,
              (std::vector<std::pair<std::string, int64_t>>{{"events_dropped", 0}}));
  }
  {
    SCOPED_TRACE("killed: neither FINALIZED_BY nor statistics");
    TestDb db;
    db.exec(export_table + "INSERT INTO META_DATA_CAPTURE VALUES ('RANK', 'x3');");
    const Trace t = db.read_ok();
    EXPECT_TRUE(t.unfinished_capture);
    EXPECT_EQ(t.capture_threads, 2);          // threads 1 and 2 recorded
    EXPECT_FALSE(t.distributed.has_value());  // not a rank number
  }
  {
    SCOPED_TRACE("a full disk: the final record says what was lost");
    TestDb db;
    db.exec(export_table +
            "INSERT INTO META_DATA_CAPTURE VALUES ('FINALIZED_BY', 'exit'),"
            " ('PYPROF_WRITE_ERROR', 'disk full (or write failed) writing x.sqlite');"
            "INSERT INTO PYPROF_COLLECTOR_STATS VALUES ('write_errors', 2),"
            " ('events_write_failed', 10), ('cupti_records_write_failed', 4);");
    const Trace t = db.read_ok();
    EXPECT_FALSE(t.unfinished_capture);
    ASSERT_TRUE(t.write_failure.has_value());
    EXPECT_EQ(t.write_failure->message, "disk full (or write failed) writing x.sqlite");
    EXPECT_EQ(t.write_failure->failed_transactions, 2);
    EXPECT_EQ(t.write_failure->events_lost, 10);
    EXPECT_EQ(t.write_failure->cuda_records_lost, 4);
  }
  {
    SCOPED_TRACE("an nsys export: the capture tables are not ours to read");
    TestDb db;
    db.exec(
        "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
        "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.6.2');"
        "CREATE TABLE META_DATA_CAPTURE(name TEXT, value TEXT);"
        "INSERT INTO META_DATA_CAPTURE VALUES ('RANK', '3');");
    const Trace t = db.read_ok();
    EXPECT_EQ(t.format, "nsys");
    EXPECT_EQ(t.version, "2024.6.2");
    EXPECT_FALSE(t.distributed.has_value());
    EXPECT_FALSE(t.unfinished_capture);
  }
}

TEST(NsysReader, AMetadataTableOfAnotherLayoutIsSkippedWithAWarning) {
  TestDb db;
  db.exec(
      "CREATE TABLE META_DATA_EXPORT(name TEXT, val TEXT);"
      "INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'pyprof');");
  const Trace t = db.read_ok();
  EXPECT_EQ(t.format, "nsys");
  ASSERT_NE(warning(t, "table of an unknown layout"), nullptr);
  EXPECT_EQ(warning(t, "table of an unknown layout")->examples[0],
            "table META_DATA_EXPORT has no column 'value': skipped");
}

TEST(NsysReader, DevicesOfNewAndOldExports) {
  {
    SCOPED_TRACE("TARGET_INFO_GPU, numbered per machine, mapped to the CUDA ordinal");
    TestDb db;
    db.exec(
        "CREATE TABLE TARGET_INFO_GPU(id, name, smCount, clockRate, memoryBandwidth,"
        " totalMemory, computeMajor, computeMinor);"
        "INSERT INTO TARGET_INFO_GPU VALUES (5, 'NVIDIA H100', 132, 1980000000,"
        " 3352000000000, 85000000000, 9, 0);"
        "CREATE TABLE TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid);"
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (5, 1, 10), (5, 0, 11);");
    const Trace t = db.read_ok();
    ASSERT_EQ(t.devices.size(), 1u);
    const Trace::Device& d = t.devices[0];
    EXPECT_EQ(d.id, 0);
    EXPECT_EQ(d.name, "NVIDIA H100");
    EXPECT_EQ(d.sm_count, 132);
    EXPECT_EQ(d.clock_hz, 1980000000);
    EXPECT_EQ(d.memory_bandwidth, 3352000000000);
    EXPECT_EQ(d.total_memory, 85000000000);
    EXPECT_EQ(d.compute_major, 9);
    EXPECT_EQ(d.compute_minor, 0);
  }
  {
    SCOPED_TRACE("nsys 2020.x: TARGET_INFO_CUDA_GPU in kHz, KB/s and MiB, a row per process");
    TestDb db;
    db.exec(
        "CREATE TABLE TARGET_INFO_GPU(name);"  // 2020.5: names only, no id
        "CREATE TABLE TARGET_INFO_CUDA_GPU(deviceId, name, numMultiprocessors, coreClockRate,"
        " globalMemoryBandwidth, globalMemorySize, computeCapabilityMajor,"
        " computeCapabilityMinor);"
        "INSERT INTO TARGET_INFO_CUDA_GPU VALUES (0, 'Tesla V100', 80, 1530000, 898048000,"
        " 32510, 7, 0), (0, 'Tesla V100', 80, 1530000, 898048000, 32510, 7, 0);");
    const Trace t = db.read_ok();
    ASSERT_EQ(t.devices.size(), 1u);
    const Trace::Device& d = t.devices[0];
    EXPECT_EQ(d.id, 0);
    EXPECT_EQ(d.name, "Tesla V100");
    EXPECT_EQ(d.clock_hz, 1530000000);
    EXPECT_EQ(d.memory_bandwidth, 898048000000);
    EXPECT_EQ(d.total_memory, int64_t{32510} << 20);
    EXPECT_EQ(d.compute_major, 7);
  }
}

TEST(NsysReader, CudaGraphNodes) {
  TestDb db;
  db.exec(
      "CREATE TABLE PYPROF_CUDA_GRAPH_NODES(nodeId, originalNodeId, graphId, start,"
      " globalTid);"
      "INSERT INTO PYPROF_CUDA_GRAPH_NODES VALUES (7, NULL, 1, 50, " +
      gtid(4242, 17) + "), (70, 7, 2, 400, " + gtid(4242, 17) + ");");
  const Trace t = db.read_ok();
  ASSERT_EQ(t.graph_nodes.size(), 2u);
  EXPECT_EQ(t.graph_nodes[0].node_id, 7);
  EXPECT_EQ(t.graph_nodes[0].original_node_id, -1);
  EXPECT_EQ(t.graph_nodes[0].start, 50);
  EXPECT_EQ(t.graph_nodes[0].pid, 4242u);
  EXPECT_EQ(t.graph_nodes[0].tid, 17u);
  EXPECT_EQ(t.graph_nodes[1].original_node_id, 7);
}

}  // namespace
}  // namespace pyprof::parse
