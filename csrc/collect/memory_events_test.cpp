// End-to-end: memory_test_app (playing pyprof's annotator) runs with the collector injected; its
// allocations and frees, device facts and status are checked in the database it leaves
// (PYPROF_MEMORY_EVENTS, PYPROF_MEMORY_DEVICES, docs/formats.md §2.2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/app_runner.h"
#include "testing/test_db.h"

namespace pyprof::collect {
namespace {

using testing::AppRun;
using testing::AppRunner;
using testing::as_int;
using testing::as_text;
using testing::capture;
using testing::exists;
using testing::fact;
using testing::facts_of;
using testing::gtid;
using testing::Row;
using testing::TempDir;
using testing::TestDb;

struct MemoryRow {
  int64_t start = 0;
  uint64_t global_tid = 0;
  int64_t address = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0;
  int64_t total_reserved = 0;
  int64_t device_type = 0;
  int64_t device_id = 0;
};

std::vector<MemoryRow> memory_rows(const TestDb& db) {
  std::vector<MemoryRow> rows;
  for (const Row& row : db.query("SELECT start, globalTid, address, bytes, totalAllocated, "
                                 "totalReserved, deviceType, deviceId FROM PYPROF_MEMORY_EVENTS "
                                 "ORDER BY start")) {
    rows.push_back({as_int(row[0]), static_cast<uint64_t>(as_int(row[1])), as_int(row[2]),
                    as_int(row[3]), as_int(row[4]), as_int(row[5]), as_int(row[6]),
                    as_int(row[7])});
  }
  return rows;
}

struct Span {
  int64_t start = 0;
  int64_t end = 0;
  uint64_t global_tid = 0;
};

Span range_named(const TestDb& db, const std::string& text) {
  const std::vector<Row> rows =
      db.query("SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = '" + text + "'");
  EXPECT_EQ(rows.size(), 1u) << text;
  if (rows.empty()) return {};
  return {as_int(rows[0][0]), as_int(rows[0][1]), static_cast<uint64_t>(as_int(rows[0][2]))};
}

// Inside: the range's thread, and strictly between its ends (what parse attributes by).
bool inside(const MemoryRow& event, const Span& range) {
  return event.global_tid == range.global_tid && range.start < event.start &&
         event.start < range.end;
}

class MemoryEventsTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string base_ = dir_.file("run");
  AppRunner runner_{dir_, base_, MEMORY_TEST_APP};
};

TEST_F(MemoryEventsTest, EveryEventOnTheRangesClockAndThread) {
  const AppRun run = runner_.run("basic");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const auto facts = facts_of(run.out);
  const int64_t pid = fact(facts, "pid");
  const uint64_t main_tid = gtid(pid, fact(facts, "tid"));
  const uint64_t worker_tid = gtid(pid, fact(facts, "worker"));
  const std::string path = base_ + ".sqlite";
  ASSERT_TRUE(exists(path)) << run.describe();
  EXPECT_NE(
      run.err.find("memory (pid " + std::to_string(pid) + "): 5 allocations and frees, 0 dropped"),
      std::string::npos)
      << run.err;

  TestDb db(path);
  ASSERT_TRUE(db.intact());
  const std::vector<MemoryRow> rows = memory_rows(db);
  ASSERT_EQ(rows.size(), 5u);
  const Span op_a = range_named(db, "op A");
  const Span op_b = range_named(db, "op B");
  const Span worker_op = range_named(db, "worker op");

  // In the order they happened, each in the range it happened in.
  EXPECT_EQ(rows[0].address, 0x1000);
  EXPECT_EQ(rows[0].bytes, 256);
  EXPECT_EQ(rows[0].total_allocated, 256);
  EXPECT_TRUE(inside(rows[0], op_a));
  EXPECT_FALSE(inside(rows[0], op_b));
  EXPECT_EQ(rows[1].bytes, 1024);
  EXPECT_EQ(rows[1].total_allocated, 1280);
  EXPECT_TRUE(inside(rows[1], op_b));
  EXPECT_EQ(rows[2].bytes, -256);
  EXPECT_EQ(rows[2].total_allocated, 1024);
  EXPECT_TRUE(inside(rows[2], op_a));
  EXPECT_GT(rows[2].start, op_b.end);
  EXPECT_EQ(rows[3].bytes, -1024);
  EXPECT_EQ(rows[3].total_allocated, 0);
  EXPECT_EQ(rows[3].global_tid, main_tid);
  EXPECT_GT(rows[3].start, op_a.end);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(rows[i].global_tid, main_tid) << i;
    EXPECT_EQ(rows[i].device_type, 0) << i;
    EXPECT_EQ(rows[i].device_id, -1) << i;
    EXPECT_EQ(rows[i].total_reserved, 0) << i;
  }
  // The worker's CUDA allocation, with the caching allocator's reserve.
  EXPECT_EQ(rows[4].global_tid, worker_tid);
  EXPECT_TRUE(inside(rows[4], worker_op));
  EXPECT_EQ(rows[4].address, 0x7f0000200000);
  EXPECT_EQ(rows[4].bytes, 2 << 20);
  EXPECT_EQ(rows[4].total_allocated, 2 << 20);
  EXPECT_EQ(rows[4].total_reserved, 20 << 20);
  EXPECT_EQ(rows[4].device_type, 1);
  EXPECT_EQ(rows[4].device_id, 3);

  // Device facts: one row (the short struct was refused), unknown values NULL.
  const std::vector<Row> devices = db.query(
      "SELECT globalTid, deviceType, deviceId, moment, totalMemory, freeMemory, allocatorLimit, "
      "allocated, reserved, peakAllocated, peakReserved, allocRetries, ooms, start "
      "FROM PYPROF_MEMORY_DEVICES");
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(static_cast<uint64_t>(as_int(devices[0][0])), main_tid);
  EXPECT_EQ(as_int(devices[0][1]), 1);
  EXPECT_EQ(as_int(devices[0][2]), 3);
  EXPECT_EQ(as_text(devices[0][3]), "exit");
  EXPECT_EQ(as_int(devices[0][4]), 150'000'000'000);
  EXPECT_EQ(as_int(devices[0][5]), 149'000'000'000);
  EXPECT_TRUE(testing::is_null(devices[0][6]));
  EXPECT_EQ(as_int(devices[0][7]), 2 << 20);
  EXPECT_EQ(as_int(devices[0][8]), 20 << 20);
  EXPECT_EQ(as_int(devices[0][9]), 2 << 20);
  EXPECT_EQ(as_int(devices[0][10]), 20 << 20);
  EXPECT_EQ(as_int(devices[0][11]), 1);
  EXPECT_EQ(as_int(devices[0][12]), 0);
  EXPECT_GT(as_int(devices[0][13]), worker_op.end);

  EXPECT_EQ(capture(db, "PYPROF_MEMORY_CAPTURE"), "on");
  EXPECT_EQ(db.stat("memory_events"), 5);
  EXPECT_EQ(db.stat("memory_events_written"), 5);
  EXPECT_EQ(db.stat("memory_events_dropped"), 0);
  EXPECT_EQ(db.stat("memory_events_outside_window"), 0);
  EXPECT_EQ(db.stat("memory_ops_unseen"), 3);
  EXPECT_EQ(db.stat("memory_devices_written"), 1);
  // NVTX events are counted apart from allocations.
  EXPECT_EQ(db.stat("events_written"), 3);
  EXPECT_EQ(db.stat("ranges_written"), 3);
}

TEST_F(MemoryEventsTest, OutsideTheCaptureWindowCounted) {
  const AppRun run = runner_.run(
      "window", {{"PYPROF_DELAY_NS", "1000000000"}, {"PYPROF_DURATION_NS", "1000000000"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  const std::vector<MemoryRow> rows = memory_rows(db);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].address, 0x2000);
  EXPECT_GE(rows[0].start, 1'000'000'000);
  EXPECT_LT(rows[0].start, 2'000'000'000);
  EXPECT_EQ(db.stat("memory_events"), 1);
  EXPECT_EQ(db.stat("memory_events_outside_window"), 2);
  // No status was given: memory capture never said it was on.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM META_DATA_CAPTURE WHERE name = "
                      "'PYPROF_MEMORY_CAPTURE'"),
            0);
}

TEST_F(MemoryEventsTest, DroppedAtTheBufferLimitCounted) {
  const AppRun run = runner_.run("drop", {{"PYPROF_BUFFER_BYTES", "65536"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  const int64_t recorded = db.stat("memory_events");
  const int64_t written = db.stat("memory_events_written");
  const int64_t dropped = db.stat("memory_events_dropped");
  EXPECT_EQ(recorded, 200000);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(written + dropped, recorded);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM PYPROF_MEMORY_EVENTS"), written);
  EXPECT_EQ(db.stat("memory_events_write_failed"), 0);
  EXPECT_NE(run.err.find("events dropped"), std::string::npos) << run.err;
}

TEST_F(MemoryEventsTest, ForkChildWritesItsOwnAllocations) {
  const AppRun run = runner_.run("fork");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const int64_t child = fact(facts_of(run.out), "child");
  TestDb parent(base_ + ".sqlite");
  const std::vector<MemoryRow> parent_rows = memory_rows(parent);
  ASSERT_EQ(parent_rows.size(), 2u);
  EXPECT_EQ(parent_rows[0].bytes, 64);
  EXPECT_EQ(parent_rows[1].bytes, -64);
  const std::string child_path = base_ + ".pid" + std::to_string(child) + ".sqlite";
  ASSERT_TRUE(exists(child_path)) << run.describe();
  TestDb child_db(child_path);
  const std::vector<MemoryRow> child_rows = memory_rows(child_db);
  ASSERT_EQ(child_rows.size(), 1u);
  EXPECT_EQ(child_rows[0].bytes, 4096);
  EXPECT_EQ(child_rows[0].global_tid >> 24 & 0xFFFFFF, static_cast<uint64_t>(child));
  EXPECT_TRUE(inside(child_rows[0], range_named(child_db, "child op")));
  EXPECT_EQ(child_db.stat("memory_events_written"), 1);
}

TEST_F(MemoryEventsTest, AfterShutdownIgnored) {
  const AppRun run = runner_.run("after-shutdown");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  EXPECT_EQ(memory_rows(db).size(), 1u);
  EXPECT_EQ(db.stat("memory_events_written"), 1);
  EXPECT_EQ(capture(db, "FINALIZED_BY"), "pyprof_collect_shutdown");
}

}  // namespace
}  // namespace pyprof::collect
