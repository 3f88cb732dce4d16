// Memory events (docs/formats.md §3.2): placed by correlation like a launch at their time on
// their thread (op, direction, backward pairing, module, user ranges), checked (frees of blocks
// never allocated, negative totals, events outside every step), written as `"kind":"memory"`
// lines with the header's `memory`; read from PYPROF_MEMORY_EVENTS and from a torch.profiler
// trace's `[memory]` instants. The expected values are worked out by hand from each trace.
#include "parse/memory_events.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/nsys_schema.h"
#include "parse/record_writer.h"
#include "parse/trace_builder_test_util.h"

namespace pyprof::parse {
namespace {

MemoryEvent event(int64_t start, int64_t address, int64_t bytes, int64_t total, uint32_t tid = 1,
                  int32_t device = -1) {
  MemoryEvent e;
  e.start = start;
  e.address = address;
  e.bytes = bytes;
  e.total_allocated = total;
  e.total_reserved = 0;
  e.pid = 1;
  e.tid = tid;
  e.device = device;
  return e;
}

// A Linear's forward on thread 1 and its backward on thread 2, with an allocation in each op,
// one beside the ops in the module, and one on a thread with no ranges.
struct LinearTrace {
  TraceBuilder b;
  int32_t module, addmm, node, mm, step;
  LinearTrace() {
    step = b.range("step 0", 0, 1000);
    module = b.module("Net.fc", 5, 100, "Linear");
    addmm = b.op("aten::addmm", 10, 50, /*seq=*/5);
    node = b.node("AddmmBackward0", 200, 300, /*seq=*/5, /*fwd_tid=*/0, /*tid=*/2);
    mm = b.op("aten::mm", 210, 250, -1, /*tid=*/2);
    b.trace.memory_source = "pyprof";
    // In source order (each thread's), not time order: correlation sorts them.
    b.trace.memory_events = {
        event(220, 0x2000, 64, 96, 2),     // in aten::mm inside AddmmBackward0
        event(20, 0x1000, 32, 32),         // the output of aten::addmm
        event(60, 0x1000, -32, 0),         // freed in the module, beside every op
        event(1500, 0x3000, -16, -16, 3),  // a thread with no ranges, after the step
    };
  }
};

TEST(MemoryEvents, AttributedLikeALaunchAtTheirTime) {
  LinearTrace t;
  const Correlation corr = correlate(t.b.trace);
  ASSERT_EQ(corr.memory_order, (std::vector<int32_t>{1, 2, 0, 3}));
  ASSERT_EQ(corr.memory_attributions.size(), 4u);
  const Attribution& alloc = corr.memory_attributions[0];
  EXPECT_EQ(alloc.dir, Direction::kForward);
  EXPECT_EQ(alloc.op, t.addmm);
  EXPECT_EQ(alloc.module, t.module);
  EXPECT_EQ(alloc.innermost, t.addmm);
  const Attribution& beside = corr.memory_attributions[1];
  EXPECT_EQ(beside.dir, Direction::kNone);
  EXPECT_EQ(beside.op, -1);
  EXPECT_EQ(beside.innermost, t.module);
  // Backward: the forward op and its module, as a bprop record's; the node is the instance.
  const Attribution& backward = corr.memory_attributions[2];
  EXPECT_EQ(backward.dir, Direction::kBackward);
  EXPECT_TRUE(backward.paired);
  EXPECT_EQ(backward.op, t.addmm);
  EXPECT_EQ(backward.node, t.node);
  EXPECT_EQ(backward.bwd_op, t.mm);
  EXPECT_EQ(backward.module, t.module);
  const Attribution& nowhere = corr.memory_attributions[3];
  EXPECT_EQ(nowhere.innermost, -1);
  EXPECT_EQ(nowhere.dir, Direction::kNone);
}

TEST(MemoryEvents, NoEventsLeaveCorrelationAsItWas) {
  TraceBuilder b;
  b.op("aten::addmm", 10, 50);
  const Correlation corr = correlate(b.trace);
  EXPECT_TRUE(corr.memory_order.empty());
  EXPECT_TRUE(corr.memory_attributions.empty());
}

Iterations one_step(int64_t start, int64_t end) {
  Iterations it;
  it.rule = IterationRule::kUserRange;
  it.range = "step N";
  it.steps.push_back({start, end, "step 0", false});
  return it;
}

TEST(MemoryEvents, ChecksCountUnknownFreesNegativeTotalsAndEventsOutsideSteps) {
  LinearTrace t;
  const Correlation corr = correlate(t.b.trace);
  const Iterations steps = one_step(0, 1000);
  const MemorySummary s = check_memory_events(t.b.trace, corr, &steps);
  EXPECT_EQ(s.events, 4);
  EXPECT_EQ(s.allocations, 2);
  EXPECT_EQ(s.frees, 2);
  EXPECT_EQ(s.frees_unknown, 1);  // 0x3000 was never allocated
  EXPECT_EQ(s.negative_totals, 1);
  EXPECT_EQ(s.outside_steps, 1);  // at 1500
  ASSERT_FALSE(t.b.trace.warnings.empty());
  EXPECT_EQ(t.b.trace.warnings.back().category,
            "memory events with a negative total (kept as reported)");
  EXPECT_EQ(memory_summary_line(t.b.trace, s),
            "4 memory events (1 frees of blocks allocated before the capture); 1 outside every "
            "step; 1 with a negative total, kept as reported");
  // Without steps nothing is outside them.
  EXPECT_EQ(check_memory_events(t.b.trace, corr, nullptr).outside_steps, 0);
}

TEST(MemoryEvents, AnAddressIsKnownAgainOnlyAfterItsNextAllocation) {
  TraceBuilder b;
  b.trace.memory_source = "kineto";
  b.trace.memory_events = {event(1, 0x10, 8, 8), event(2, 0x10, -8, 0), event(3, 0x10, -8, -8),
                           event(4, 0x10, 8, 8, 1, /*device=*/0), event(5, 0x10, -8, 0, 1, -1)};
  const Correlation corr = correlate(b.trace);
  const MemorySummary s = check_memory_events(b.trace, corr, nullptr);
  // The second free of 0x10, and the CPU free of an address only the GPU allocated.
  EXPECT_EQ(s.frees_unknown, 2);
}

std::vector<std::string> write_lines(Trace& trace, const Iterations* iterations) {
  const Correlation corr = correlate(trace);
  const MemorySummary summary = check_memory_events(trace, corr, iterations);
  PoolTextReader reader;
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  if (file == nullptr) return {};
  {
    RecordWriter writer(file, trace, corr, reader);
    writer.set_iterations(iterations);
    writer.set_memory(&summary);
    EXPECT_TRUE(writer.write("net.sqlite"));
  }
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  std::fclose(file);
  std::vector<std::string> lines;
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) break;
    lines.push_back(text.substr(start, end - start));
  }
  return lines;
}

std::vector<std::string> lines_of_kind(const std::vector<std::string>& lines,
                                       std::string_view kind) {
  std::vector<std::string> out;
  const std::string prefix = "{\"kind\":\"" + std::string(kind) + "\"";
  for (const std::string& line : lines) {
    if (line.starts_with(prefix)) out.push_back(line);
  }
  return out;
}

TEST(MemoryEvents, WrittenAfterTheRecordsInTimeOrderWithTheHeadersCounts) {
  LinearTrace t;
  const Iterations steps = one_step(0, 1000);
  const std::vector<std::string> lines = write_lines(t.b.trace, &steps);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find(R"("memory":{"events":4,"source":"pyprof","frees_unknown":1,)"
                          R"("negative_totals":1,"outside_steps":1})"),
            std::string::npos)
      << lines[0];
  const std::vector<std::string> memory = lines_of_kind(lines, "memory");
  ASSERT_EQ(memory.size(), 4u);
  // Instances: the ranges' positions in (process, thread, start) order, from 1: step 1,
  // Net.fc 2, aten::addmm 3 on thread 1; AddmmBackward0 4, aten::mm 5 on thread 2.
  EXPECT_EQ(memory[0],
            R"({"kind":"memory","start":20,"bytes":32,"addr":4096,"device":-1,)"
            R"("total_allocated":32,"total_reserved":0,"pid":1,"tid":1,"op":"aten::addmm",)"
            R"("dir":"fprop","instance":3,"module":"Net.fc","step":0,"user_ranges":["step 0"]})");
  EXPECT_EQ(memory[1],
            R"({"kind":"memory","start":60,"bytes":-32,"addr":4096,"device":-1,)"
            R"("total_allocated":0,"total_reserved":0,"pid":1,"tid":1,"op":null,"dir":null,)"
            R"("step":0,"user_ranges":["step 0"]})");
  EXPECT_EQ(memory[2],
            R"({"kind":"memory","start":220,"bytes":64,"addr":8192,"device":-1,)"
            R"("total_allocated":96,"total_reserved":0,"pid":1,"tid":2,"op":"aten::addmm",)"
            R"("dir":"bprop","instance":4,"module":"Net.fc","step":0})");
  EXPECT_EQ(memory[3],
            R"({"kind":"memory","start":1500,"bytes":-16,"addr":12288,"device":-1,)"
            R"("total_allocated":-16,"total_reserved":0,"pid":1,"tid":3,"op":null,"dir":null})");
  // After every record.
  size_t last_record = 0, first_memory = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with(R"({"kind":"op")")) last_record = i;
    if (lines[i].starts_with(R"({"kind":"memory")") && first_memory == lines.size()) {
      first_memory = i;
    }
  }
  EXPECT_LT(last_record, first_memory);
}

TEST(MemoryEvents, NothingWrittenForAnInputThatRecordsNoMemory) {
  LinearTrace t;
  t.b.trace.memory_events.clear();
  t.b.trace.memory_source.clear();
  for (const std::string& line : write_lines(t.b.trace, nullptr)) {
    EXPECT_EQ(line.find("memory"), std::string::npos) << line;
  }
}

TEST(MemoryEvents, CaptureOnWithoutEventsSaysZero) {
  LinearTrace t;
  t.b.trace.memory_events.clear();
  const std::vector<std::string> lines = write_lines(t.b.trace, nullptr);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find(R"("memory":{"events":0,"source":"pyprof")"), std::string::npos);
  EXPECT_TRUE(lines_of_kind(lines, "memory").empty());
}

TEST(KinetoMemoryEvents, ReadsTheArgsOfAMemoryInstant) {
  Trace trace;
  KinetoMemoryEvents reader;
  std::string why;
  ASSERT_TRUE(reader.add(
      R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, )"
      R"("tid": 8, "ts": 5.5, "args": {"Total Reserved": 0, "Total Allocated": 36, "Bytes": 4, )"
      R"("Device Id": -1, "Device Type": 0, "Addr": 93977417945024, "finished": false}})",
      5500, 7, 8, trace, why))
      << why;
  ASSERT_TRUE(reader.add(
      R"({"ph":"i","name":"[memory]","args":{"Total Reserved":2097152,"Total Allocated":512,)"
      R"("Bytes":-512,"Device Id":1,"Device Type":1,"Addr":139872312672256}})",
      6000, 7, 9, trace, why))
      << why;
  ASSERT_EQ(trace.memory_events.size(), 2u);
  const MemoryEvent& cpu = trace.memory_events[0];
  EXPECT_EQ(cpu.start, 5500);
  EXPECT_EQ(cpu.pid, 7u);
  EXPECT_EQ(cpu.tid, 8u);
  EXPECT_EQ(cpu.bytes, 4);
  EXPECT_EQ(cpu.address, 93977417945024);
  EXPECT_EQ(cpu.total_allocated, 36);
  EXPECT_EQ(cpu.total_reserved, 0);
  EXPECT_EQ(cpu.device, -1);
  const MemoryEvent& gpu = trace.memory_events[1];
  EXPECT_EQ(gpu.bytes, -512);
  EXPECT_EQ(gpu.device, 1);
  EXPECT_EQ(gpu.total_reserved, 2097152);
  EXPECT_EQ(trace.memory_source, "kineto");
}

TEST(KinetoMemoryEvents, RefusesAnEventWithoutBytesAndKeepsMissingTotalsAbsent) {
  Trace trace;
  KinetoMemoryEvents reader;
  std::string why;
  EXPECT_FALSE(reader.add(R"({"name":"[memory]","args":{"Bytes":"many"}})", 1, 1, 1, trace, why));
  EXPECT_EQ(why, "a [memory] event without an integer \"Bytes\"");
  EXPECT_FALSE(reader.add(R"({"name":"[memory]"})", 1, 1, 1, trace, why));
  EXPECT_FALSE(reader.add(R"({"name":"[memory]",)", 1, 1, 1, trace, why));
  EXPECT_TRUE(trace.memory_events.empty());
  EXPECT_TRUE(trace.memory_source.empty());
  ASSERT_TRUE(
      reader.add(R"({"name":"[memory]","args":{"Bytes":16,"Addr":1}})", 1, 1, 1, trace, why));
  EXPECT_EQ(trace.memory_events[0].total_allocated, MemoryEvent::kNoTotal);
  EXPECT_EQ(trace.memory_events[0].total_reserved, MemoryEvent::kNoTotal);
  EXPECT_EQ(trace.memory_events[0].device, -1);  // no device type: the CPU's
}

// A database file written with SQL, removed with the object.
class MemoryDb {
 public:
  MemoryDb() {
    path_ = ::testing::TempDir() + "memory_events_test." + std::to_string(::getpid()) + "." +
            std::to_string(count_++) + ".sqlite";
    ::unlink(path_.c_str());
  }
  ~MemoryDb() { ::unlink(path_.c_str()); }
  MemoryDb(const MemoryDb&) = delete;
  MemoryDb& operator=(const MemoryDb&) = delete;
  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
        << (message ? message : "");
    sqlite3_free(message);
    sqlite3_close(db);
  }
  bool read(Trace& trace, std::string& error) {
    SqliteDb db;
    return db.open(path_, error) && read_memory_table(db, trace, error);
  }

 private:
  static inline int count_ = 0;
  std::string path_;
};

TEST(ReadMemoryTable, ReadsRowsSkipsIncompleteOnesAndMapsDevices) {
  MemoryDb db;
  const std::string gtid = std::to_string(nsys::global_tid(4242, 17));
  db.exec(
      "CREATE TABLE PYPROF_MEMORY_EVENTS (start INTEGER, globalTid INTEGER, address INTEGER, "
      "bytes INTEGER, totalAllocated INTEGER, totalReserved INTEGER, deviceType INTEGER, "
      "deviceId INTEGER);"
      "INSERT INTO PYPROF_MEMORY_EVENTS VALUES (100, " +
      gtid + ", 4096, 32, 32, 0, 0, -1), (200, " + gtid +
      ", 8192, 512, 512, 2097152, 1, 0), (300, " + gtid + ", NULL, 8, 8, 0, 0, -1), (400, " + gtid +
      ", 4096, -32, 512, 2097152, 0, 3);");
  Trace trace;
  std::string error;
  ASSERT_TRUE(db.read(trace, error)) << error;
  ASSERT_EQ(trace.memory_events.size(), 3u);
  EXPECT_EQ(trace.memory_source, "pyprof");
  EXPECT_EQ(trace.memory_events[0].pid, 4242u);
  EXPECT_EQ(trace.memory_events[0].tid, 17u);
  EXPECT_EQ(trace.memory_events[0].device, -1);
  EXPECT_EQ(trace.memory_events[1].device, 0);
  EXPECT_EQ(trace.memory_events[1].total_reserved, 2097152);
  EXPECT_EQ(trace.memory_events[2].bytes, -32);
  EXPECT_EQ(trace.memory_events[2].device, -1);  // a CPU event, whatever its id says
  EXPECT_EQ(trace.stats.rows_skipped, 1);
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0].category, "memory event without a time, thread, address or size");
}

TEST(ReadMemoryTable, NoTableNoMemoryUnlessCaptureWasOn) {
  MemoryDb db;
  db.exec("CREATE TABLE other (x INTEGER);");
  Trace trace;
  std::string error;
  ASSERT_TRUE(db.read(trace, error)) << error;
  EXPECT_TRUE(trace.memory_source.empty());
  Trace on;
  on.memory_capture = "on";
  ASSERT_TRUE(db.read(on, error)) << error;
  EXPECT_EQ(on.memory_source, "pyprof");
  EXPECT_TRUE(on.memory_events.empty());
}

TEST(ReadMemoryTable, ATableOfAnotherLayoutIsSkippedWithAWarning) {
  MemoryDb db;
  db.exec("CREATE TABLE PYPROF_MEMORY_EVENTS (start INTEGER, bytes INTEGER);");
  Trace trace;
  std::string error;
  ASSERT_TRUE(db.read(trace, error)) << error;
  EXPECT_TRUE(trace.memory_events.empty());
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_EQ(trace.warnings[0].category, "table of an unknown layout");
}

}  // namespace
}  // namespace pyprof::parse
