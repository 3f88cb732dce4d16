// End-to-end: nvtx_test_app runs as a child process with NVTX_INJECTION64_PATH = the built
// libpyprof_collect.so, and the databases it leaves are checked row by row.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/nsys_schema.h"
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
using testing::is_null;
using testing::read_file;
using testing::Row;
using testing::spawn_with_output;
using testing::TempDir;
using testing::TestDb;

// NVTX_EVENTS rows by message (text, or the registered string).
struct EventRow {
  int64_t start = 0;
  std::optional<int64_t> end;
  int64_t event_type = 0;
  std::optional<int64_t> range_id;
  std::optional<int64_t> category;
  std::optional<int64_t> color;
  std::optional<std::string> text;
  uint64_t global_tid = 0;
  std::optional<int64_t> end_global_tid;
  std::optional<int64_t> text_id;
  int64_t domain_id = 0;
  std::string name;  // coalesce(text, StringIds.value)
};

std::optional<int64_t> optional_int(const testing::Value& value) {
  return is_null(value) ? std::nullopt : std::optional<int64_t>(as_int(value));
}

std::multimap<std::string, EventRow> events_by_name(const TestDb& db) {
  std::multimap<std::string, EventRow> events;
  for (const Row& row :
       db.query("SELECT e.start, e.end, e.eventType, e.rangeId, e.category, e.color, e.text, "
                "e.globalTid, e.endGlobalTid, e.textId, e.domainId, coalesce(e.text, s.value, '') "
                "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId")) {
    EventRow event;
    event.start = as_int(row[0]);
    event.end = optional_int(row[1]);
    event.event_type = as_int(row[2]);
    event.range_id = optional_int(row[3]);
    event.category = optional_int(row[4]);
    event.color = optional_int(row[5]);
    if (!is_null(row[6])) event.text = as_text(row[6]);
    event.global_tid = is_null(row[7]) ? 0 : static_cast<uint64_t>(as_int(row[7]));
    event.end_global_tid = optional_int(row[8]);
    event.text_id = optional_int(row[9]);
    event.domain_id = as_int(row[10]);
    event.name = as_text(row[11]);
    events.emplace(event.name, event);
  }
  return events;
}

const EventRow& only(const std::multimap<std::string, EventRow>& events, const std::string& name) {
  static const EventRow missing;
  const auto count = events.count(name);
  EXPECT_EQ(count, 1u) << "rows named '" << name << "'";
  return count == 0 ? missing : events.find(name)->second;
}

class CollectorTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string base_ = dir_.file("out/run");  // the collector creates out/
  AppRunner runner_{dir_, base_, NVTX_TEST_APP};
};

TEST_F(CollectorTest, RecordsEveryKindOfEvent) {
  const AppRun run = runner_.run("basic");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const auto facts = facts_of(run.out);
  const int64_t pid = fact(facts, "pid");
  const uint64_t main_tid = gtid(pid, fact(facts, "tid"));
  const std::string path = base_ + ".sqlite";
  ASSERT_TRUE(exists(path)) << run.describe();
  EXPECT_NE(run.err.find("pyprof-collect: wrote " + path + " (pid " + std::to_string(pid) +
                         "): 12 ranges, 7 marks, 0 dropped"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("WARNING: 1 NVTX messages were longer than 65536 bytes"),
            std::string::npos)
      << run.err;

  TestDb db(path);
  ASSERT_TRUE(db.intact());
  const auto events = events_by_name(db);

  // Domain: one 75 row although "pyprof" was created twice; one 76 row.
  const std::vector<Row> domains =
      db.query("SELECT domainId, text, globalTid, end FROM NVTX_EVENTS WHERE eventType = 75");
  ASSERT_EQ(domains.size(), 1u);
  const int64_t pyprof_domain = as_int(domains[0][0]);
  EXPECT_GE(pyprof_domain, 1);
  EXPECT_EQ(as_text(domains[0][1]), "pyprof");
  EXPECT_EQ(static_cast<uint64_t>(as_int(domains[0][2])), main_tid);
  EXPECT_TRUE(is_null(domains[0][3]));
  EXPECT_EQ(db.scalar("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 76"), pyprof_domain);

  // Nesting in the default domain.
  const EventRow& outer = only(events, "outer");
  const EventRow& inner = only(events, "inner");
  EXPECT_EQ(outer.event_type, 59);
  EXPECT_EQ(outer.domain_id, 0);
  EXPECT_EQ(outer.global_tid, main_tid);
  EXPECT_FALSE(outer.range_id);
  EXPECT_FALSE(outer.end_global_tid);
  ASSERT_TRUE(outer.end && inner.end);
  EXPECT_LE(outer.start, inner.start);
  EXPECT_LE(*inner.end, *outer.end);
  EXPECT_GE(outer.start, 0);  // relative to the session start (collector init here)
  EXPECT_LT(*outer.end, int64_t{60} * 1'000'000'000);
  const EventRow& mark = only(events, "mark in inner");
  EXPECT_EQ(mark.event_type, 34);
  EXPECT_FALSE(mark.end);
  EXPECT_GE(mark.start, inner.start);
  EXPECT_LE(mark.start, *inner.end);

  // Registered string in the created domain, with color, category and payload.
  const EventRow& registered = only(events, "registered op");
  EXPECT_FALSE(registered.text);
  ASSERT_TRUE(registered.text_id);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM StringIds WHERE value = 'registered op'"), 1);
  EXPECT_EQ(registered.domain_id, pyprof_domain);
  EXPECT_EQ(registered.color, 4278255360LL);
  EXPECT_EQ(registered.category, 8);
  EXPECT_EQ(db.scalar("SELECT int64Value FROM NVTX_EVENTS WHERE textId = " +
                      std::to_string(*registered.text_id)),
            -42);

  // Messages: wide, special characters, truncated.
  EXPECT_EQ(only(events, "wide \xE2\x9C\x93 message").event_type, 59);
  EXPECT_EQ(only(events,
                 "say \"hi\"\n\tand 'bye' \xC3\xBCn\xC3\xAF"
                 "c\xC3\xB6"
                 "d\xC3\xA9 "
                 "\xE6\x97\xA5\xE6\x9C\xAC")
                .event_type,
            59);
  EXPECT_EQ(db.scalar("SELECT length(CAST(text AS BLOB)) FROM NVTX_EVENTS "
                      "WHERE text LIKE '\xE2\x82\xAC\xE2\x82\xAC%'"),
            65535);  // 64 KiB cap, cut before a partial character
  EXPECT_EQ(db.stat("messages_truncated"), 1);

  // Payload columns.
  EXPECT_EQ(db.scalar("SELECT uint64Value FROM NVTX_EVENTS WHERE text = 'payload u64'"), -1);
  EXPECT_EQ(db.query("SELECT doubleValue FROM NVTX_EVENTS WHERE text = 'payload double'")[0][0],
            testing::Value(3.25));
  EXPECT_EQ(db.scalar("SELECT uint32Value FROM NVTX_EVENTS WHERE text = 'payload u32'"),
            4000000000LL);
  EXPECT_EQ(db.scalar("SELECT int32Value FROM NVTX_EVENTS WHERE text = 'payload i32'"), -7);
  EXPECT_EQ(db.query("SELECT floatValue FROM NVTX_EVENTS WHERE text = 'payload float'")[0][0],
            testing::Value(0.5));
  EXPECT_EQ(only(events, "domain mark").domain_id, pyprof_domain);

  // Categories and NVTX thread names.
  EXPECT_EQ(db.text("SELECT text FROM NVTX_EVENTS WHERE eventType = 33 AND category = 7 "
                    "AND domainId = 0"),
            "category seven");
  EXPECT_EQ(db.text("SELECT text FROM NVTX_EVENTS WHERE eventType = 33 AND category = 8 "
                    "AND domainId = " +
                    std::to_string(pyprof_domain)),
            "domain category");
  EXPECT_EQ(
      static_cast<uint64_t>(db.scalar("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 39 AND "
                                      "text = 'nvtx-main'")),
      main_tid);

  // Start/end ranges, one ended on another thread.
  const uint64_t worker0 = gtid(pid, fact(facts, "worker0"));
  const EventRow& same = only(events, "same thread");
  EXPECT_EQ(same.event_type, 60);
  EXPECT_TRUE(same.range_id);
  EXPECT_FALSE(same.end_global_tid);
  const EventRow& cross = only(events, "cross thread");
  EXPECT_EQ(cross.event_type, 60);
  EXPECT_NE(cross.range_id, same.range_id);
  EXPECT_EQ(cross.global_tid, main_tid);
  EXPECT_EQ(cross.end_global_tid, static_cast<int64_t>(worker0));
  EXPECT_EQ(only(events, "domain start/end").domain_id, pyprof_domain);

  // Threads: their ranges and OS names.
  std::set<uint64_t> worker_tids;
  for (int i = 0; i < 3; ++i) {
    const uint64_t worker = gtid(pid, fact(facts, "worker" + std::to_string(i)));
    worker_tids.insert(worker);
    EXPECT_EQ(only(events, "worker range " + std::to_string(i)).global_tid, worker);
    EXPECT_EQ(db.text("SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                      "WHERE t.globalTid = " +
                      std::to_string(worker)),
              "worker-" + std::to_string(i));
  }
  EXPECT_EQ(worker_tids.size(), 3u);
  EXPECT_EQ(db.text("SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                    "WHERE t.globalTid = " +
                    std::to_string(main_tid)),
            "nvtx_test_app");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM ThreadNames"), 4);

  // Process, session, metadata, stats.
  const Row process = db.query("SELECT globalPid, pid FROM PROCESSES")[0];
  EXPECT_EQ(static_cast<uint64_t>(as_int(process[0])),
            nsys::global_pid(static_cast<uint32_t>(pid)));
  EXPECT_EQ(as_int(process[1]), pid);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM TARGET_INFO_SESSION_START_TIME"), 1);
  EXPECT_EQ(capture(db, "FINALIZED_BY"), "exit");
  EXPECT_NE(capture(db, "COMMAND_LINE").find("nvtx_test_app basic"), std::string::npos);
  EXPECT_EQ(capture(db, "PID"), std::to_string(pid));
  EXPECT_EQ(capture(db, "OUTPUT_FILE"), path);
  EXPECT_EQ(db.text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_NAME'"),
            "pyprof");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM META_DATA_EXPORT WHERE name = 'EXPORT_TIME_UTC'"), 1);
  EXPECT_EQ(db.stat("events_recorded"), 19);
  EXPECT_EQ(db.stat("events_written"), 19);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"), 19);
  EXPECT_EQ(db.stat("ranges_written"), 12);
  EXPECT_EQ(db.stat("marks_written"), 7);
  EXPECT_EQ(db.stat("events_dropped"), 0);
  EXPECT_EQ(db.stat("events_outside_window"), 0);
  EXPECT_EQ(db.stat("unclosed_ranges"), 0);
  EXPECT_EQ(db.stat("unbalanced_pops"), 2);  // one per domain
  EXPECT_EQ(db.stat("threads"), 4);
  EXPECT_EQ(db.stat("nvtx_inits"), 1);
  EXPECT_EQ(db.stat("events_after_shutdown"), 0);
}

TEST_F(CollectorTest, WritesUnclosedRangesAtExit) {
  const AppRun run = runner_.run("unclosed");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  const auto events = events_by_name(db);
  for (const char* name : {"open A", "open B", "open C"}) {
    EXPECT_EQ(only(events, name).event_type, 59) << name;
    EXPECT_FALSE(only(events, name).end) << name;
  }
  EXPECT_GT(only(events, "open C").domain_id, 0);
  EXPECT_EQ(only(events, "open start/end").event_type, 60);
  EXPECT_FALSE(only(events, "open start/end").end);
  EXPECT_TRUE(only(events, "open start/end").range_id);
  EXPECT_EQ(only(events, "closed mark").event_type, 34);
  EXPECT_EQ(db.stat("unclosed_ranges"), 4);
  EXPECT_EQ(db.stat("events_recorded"), 5);
  EXPECT_EQ(db.stat("events_written"), 5);
}

TEST_F(CollectorTest, SigtermFinalizesAndKeepsTheSignalExitStatus) {
  AppRun run = runner_.start("sigterm");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (read_file(run.out_path).find("ready") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(run.pid, SIGTERM), 0);
  runner_.wait(run);
  ASSERT_TRUE(WIFSIGNALED(run.status)) << run.describe();
  EXPECT_EQ(WTERMSIG(run.status), SIGTERM);
  EXPECT_NE(run.err.find("pyprof-collect: wrote"), std::string::npos) << run.err;

  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  const auto events = events_by_name(db);
  EXPECT_TRUE(only(events, "before signal").end);
  EXPECT_FALSE(only(events, "waiting for the signal").end);
  EXPECT_EQ(db.stat("unclosed_ranges"), 1);
  EXPECT_EQ(capture(db, "FINALIZED_BY"), "SIGTERM");
}

TEST_F(CollectorTest, LeavesSigtermToAProgramThatHandlesIt) {
  AppRun run = runner_.start("sigterm-own-handler");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (read_file(run.out_path).find("ready") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(run.pid, SIGTERM), 0);
  runner_.wait(run);
  ASSERT_TRUE(WIFEXITED(run.status)) << run.describe();
  EXPECT_EQ(WEXITSTATUS(run.status), 7);  // the program's own handler ran
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  EXPECT_EQ(capture(db, "FINALIZED_BY"), "exit");
  EXPECT_TRUE(only(events_by_name(db), "before signal").end);
}

TEST_F(CollectorTest, ForkChildWritesItsOwnFile) {
  const AppRun run = runner_.run("fork");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  const int64_t child = fact(facts_of(run.out), "child");
  const std::string child_path = base_ + ".pid" + std::to_string(child) + ".sqlite";
  EXPECT_EQ(facts_of(run.out).find("path")->second, child_path);

  TestDb parent(base_ + ".sqlite");
  ASSERT_TRUE(parent.intact());
  const auto parent_events = events_by_name(parent);
  EXPECT_EQ(parent_events.size(), 3u);
  EXPECT_TRUE(only(parent_events, "parent outer").end);
  EXPECT_TRUE(only(parent_events, "parent before fork").end);
  EXPECT_TRUE(only(parent_events, "parent after fork").end);
  EXPECT_EQ(parent.stat("events_written"), 3);

  TestDb child_db(child_path);
  ASSERT_TRUE(child_db.intact());
  const auto child_events = events_by_name(child_db);
  EXPECT_EQ(child_events.size(), 3u);
  EXPECT_EQ(child_events.count("parent before fork"), 0u);
  EXPECT_EQ(child_events.count("parent after fork"), 0u);
  EXPECT_TRUE(only(child_events, "child range").end);
  EXPECT_EQ(only(child_events, "child mark").event_type, 34);
  // The child continued inside the parent's open range and closed it itself.
  const EventRow& outer_in_child = only(child_events, "parent outer");
  EXPECT_TRUE(outer_in_child.end);
  EXPECT_LE(outer_in_child.start, only(child_events, "child range").start);
  for (const auto& [name, event] : child_events) {
    EXPECT_EQ(nsys::pid_of_global_id(event.global_tid), static_cast<uint32_t>(child)) << name;
  }
  EXPECT_EQ(child_db.scalar("SELECT pid FROM PROCESSES"), child);
  EXPECT_EQ(child_db.stat("events_written"), 3);
  EXPECT_EQ(child_db.stat("threads"), 1);
}

TEST_F(CollectorTest, ForkWhileOtherThreadsRecord) {
  const AppRun run = runner_.run("fork-stress");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb parent(base_ + ".sqlite");
  ASSERT_TRUE(parent.intact());
  EXPECT_EQ(parent.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'child%'"), 0);
  EXPECT_GT(parent.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text = 'hammer'"), 0);
  EXPECT_EQ(parent.stat("events_recorded"),
            parent.stat("events_written") + parent.stat("events_dropped"));
  int children = 0;
  const auto facts = facts_of(run.out);
  for (auto [it, end] = facts.equal_range("child"); it != end; ++it, ++children) {
    const std::string path = base_ + ".pid" + it->second + ".sqlite";
    TestDb child(path);
    ASSERT_TRUE(child.intact()) << path;
    EXPECT_EQ(child.scalar("SELECT count(*) FROM NVTX_EVENTS"), 100) << path;
    EXPECT_EQ(child.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text = 'child " +
                           std::to_string(children) + "'"),
              100)
        << path;
    EXPECT_EQ(child.stat("events_written"), 100) << path;
  }
  EXPECT_EQ(children, 5);
}

TEST_F(CollectorTest, CountsEventsDroppedAtTheBufferLimit) {
  const AppRun run = runner_.run("drop", {{"PYPROF_BUFFER_BYTES", "65536"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  const int64_t recorded = db.stat("events_recorded");
  const int64_t written = db.stat("events_written");
  const int64_t dropped = db.stat("events_dropped");
  EXPECT_EQ(recorded, 200000);
  EXPECT_GT(dropped, 0);
  EXPECT_GT(written, 0);
  EXPECT_EQ(dropped, recorded - written);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59"), written);
  EXPECT_NE(run.err.find("events dropped"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("PYPROF_BUFFER_MB"), std::string::npos) << run.err;
}

TEST_F(CollectorTest, RecordsOnlyTheCaptureWindow) {
  const AppRun run = runner_.run(
      "window", {{"PYPROF_DELAY_NS", "1000000000"}, {"PYPROF_DURATION_NS", "1000000000"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  const auto events = events_by_name(db);
  std::set<std::string> names;
  for (const auto& [name, event] : events) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"straddles start", "mark inside", "inside",
                                          "unclosed inside", "straddles end"}));
  EXPECT_LT(only(events, "straddles start").start, 1'000'000'000);
  EXPECT_GE(*only(events, "straddles end").end, 2'000'000'000);
  EXPECT_FALSE(only(events, "unclosed inside").end);
  EXPECT_EQ(db.stat("events_outside_window"), 5);
  EXPECT_EQ(db.stat("unclosed_ranges"), 1);
  EXPECT_EQ(capture(db, "DELAY_NS"), "1000000000");
}

TEST_F(CollectorTest, EverySharedObjectInitialisesTheSameCollector) {
  const AppRun run = runner_.run("libs");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  EXPECT_EQ(db.stat("nvtx_inits"), 3);  // the app and both libraries
  const auto events = events_by_name(db);
  EXPECT_EQ(only(events, "lib_a range").event_type, 59);
  EXPECT_EQ(only(events, "lib_b range").event_type, 59);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75"), 1);
  const int64_t domain = db.scalar("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75");
  EXPECT_EQ(only(events, "app range").domain_id, domain);
  EXPECT_EQ(events.count("lib registered"), 2u);
  for (auto [it, end] = events.equal_range("lib registered"); it != end; ++it) {
    EXPECT_EQ(it->second.domain_id, domain);
    EXPECT_TRUE(it->second.text_id);
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM StringIds WHERE value = 'lib registered'"), 1);
}

TEST_F(CollectorTest, ShutdownFinalizesOnceAndIgnoresLaterCalls) {
  const AppRun run = runner_.run("shutdown");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  EXPECT_EQ(facts_of(run.out).find("path")->second, base_ + ".sqlite");
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  const auto events = events_by_name(db);
  EXPECT_EQ(events.size(), 2u);
  EXPECT_TRUE(only(events, "before shutdown").end);
  EXPECT_FALSE(only(events, "open at shutdown").end);
  EXPECT_EQ(capture(db, "FINALIZED_BY"), "pyprof_collect_shutdown");
  EXPECT_EQ(db.stat("events_written"), 2);
}

TEST_F(CollectorTest, NamesFilesByRankAndRootPidWithoutOverwriting) {
  // RANK set: BASE.rank<R>.sqlite.
  AppRun run = runner_.run("naming", {{"RANK", "2"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  EXPECT_EQ(facts_of(run.out).find("path")->second, base_ + ".rank2.sqlite");
  EXPECT_EQ(TestDb(base_ + ".rank2.sqlite").scalar("SELECT count(*) FROM NVTX_EVENTS"), 1);

  // Not the root process: pid form.
  run = runner_.run("naming", {{"PYPROF_ROOT_PID", "1"}});
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  int64_t pid = fact(facts_of(run.out), "pid");
  EXPECT_EQ(facts_of(run.out).find("path")->second,
            base_ + ".pid" + std::to_string(pid) + ".sqlite");

  // The root file exists already: it is kept, the new one takes the pid form.
  {
    std::ofstream existing(base_ + ".sqlite");
    existing << "keep me";
  }
  run = runner_.run("naming");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  pid = fact(facts_of(run.out), "pid");
  EXPECT_EQ(facts_of(run.out).find("path")->second,
            base_ + ".pid" + std::to_string(pid) + ".sqlite");
  EXPECT_EQ(read_file(base_ + ".sqlite"), "keep me");
}

TEST_F(CollectorTest, ReclaimsBuffersOfExitedThreads) {
  const AppRun run = runner_.run("thread-churn");
  ASSERT_TRUE(run.exited_ok()) << run.describe();
  TestDb db(base_ + ".sqlite");
  ASSERT_TRUE(db.intact());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'churn %'"), 40);
  EXPECT_EQ(db.stat("threads"), 41);
  EXPECT_EQ(db.stat("events_written"), 41);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                      "WHERE s.value LIKE 'churn %'"),
            40);
}

// The shared library itself: exports only the C API; write_empty works without injection.
TEST(CollectorLibrary, ExportsOnlyTheCApi) {
  std::FILE* pipe =
      popen(("nm -D --defined-only " + std::string(PYPROF_COLLECT_LIBRARY) + " | awk '{print $3}'")
                .c_str(),
            "r");
  ASSERT_NE(pipe, nullptr);
  std::set<std::string> symbols;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::string symbol(line);
    while (!symbol.empty() && (symbol.back() == '\n' || symbol.back() == ' ')) symbol.pop_back();
    if (!symbol.empty()) symbols.insert(symbol);
  }
  pclose(pipe);
  EXPECT_EQ(symbols,
            (std::set<std::string>{
                "InitializeInjectionNvtx2", "InitializeInjection", "pyprof_collect_shutdown",
                "pyprof_collect_output_path", "pyprof_collect_write_empty",
                "pyprof_collect_database_finished", "pyprof_collect_cupti_request",
                "pyprof_collect_database_is_empty_note", "pyprof_collect_memory_event",
                "pyprof_collect_memory_device", "pyprof_collect_memory_capture"}));
}

TEST(CollectorLibrary, WriteEmptyThroughTheCApi) {
  TempDir dir;
  void* library = dlopen(PYPROF_COLLECT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto write_empty = reinterpret_cast<int (*)(const char*, const char*)>(
      dlsym(library, "pyprof_collect_write_empty"));
  auto shutdown = reinterpret_cast<int (*)()>(dlsym(library, "pyprof_collect_shutdown"));
  auto output_path =
      reinterpret_cast<const char* (*)()>(dlsym(library, "pyprof_collect_output_path"));
  ASSERT_TRUE(write_empty && shutdown && output_path);
  const std::string path = dir.file("empty.sqlite");
  EXPECT_EQ(write_empty(path.c_str(), "no NVTX calls"), 0);
  EXPECT_EQ(write_empty(path.c_str(), "again"), -1);  // never overwrites
  EXPECT_EQ(shutdown(), 1);                           // never initialised in this process
  EXPECT_EQ(output_path(), nullptr);
  TestDb db(path);
  EXPECT_TRUE(db.intact());
  EXPECT_EQ(capture(db, "PYPROF_NOTE"), "no NVTX calls");
  EXPECT_EQ(db.stat("events_written"), 0);

  // The launcher replaces only such a file without --force: never a recorded profile, a link to
  // it, or something that is not ours.
  auto is_empty_note = reinterpret_cast<int (*)(const char*)>(
      dlsym(library, "pyprof_collect_database_is_empty_note"));
  ASSERT_TRUE(is_empty_note);
  EXPECT_EQ(is_empty_note(path.c_str()), 1);
  const std::string link = dir.file("link.sqlite");
  ASSERT_EQ(symlink(path.c_str(), link.c_str()), 0);
  EXPECT_EQ(is_empty_note(link.c_str()), 0);
  EXPECT_EQ(is_empty_note(dir.file("missing.sqlite").c_str()), -1);
  EXPECT_EQ(is_empty_note("/dev/null"), 0);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw,
                           "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
                           "VALUES (1, 2, 59, 'aten::add', 1)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  EXPECT_EQ(is_empty_note(path.c_str()), 0);  // it holds a range now: a profile
}

}  // namespace
}  // namespace pyprof::collect
