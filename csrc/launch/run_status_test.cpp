// What the launcher makes of a finished run: the collectors' status-pipe reports and its exit
// status.
#include "run_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace pyprof::launch {
namespace {

TEST(RunStatus, WriteFailureReports) {
  const std::string text =
      "pyprof-write-failed\tpath=/d/net.sqlite\tusable=1\tranges=4096\tmarks=0\tkernels=0\t"
      "events_dropped=5110\tcuda_dropped=0\treason=disk full (or write failed) writing "
      "/d/net.sqlite: COMMIT: database or disk is full\n"
      "a line of something else\n"
      "pyprof-write-failedX\tpath=/d/not.sqlite\n"  // the prefix is followed by a tab
      "pyprof-write-failed\tpath=/d/net.pid7.sqlite\tusable=0\tno-equals\tfuture=1\t"
      "reason=a=b";  // the last line may lack its newline
  const std::vector<WriteFailure> failures = parse_write_failures(text);
  ASSERT_EQ(failures.size(), 2u);
  const WriteFailure& kept = failures[0];
  EXPECT_EQ(kept.path, "/d/net.sqlite");
  EXPECT_TRUE(kept.usable);
  EXPECT_EQ(kept.ranges, "4096");
  EXPECT_EQ(kept.marks, "0");
  EXPECT_EQ(kept.kernels, "0");
  EXPECT_EQ(kept.events_dropped, "5110");
  EXPECT_EQ(kept.cuda_dropped, "0");
  EXPECT_EQ(kept.reason,
            "disk full (or write failed) writing /d/net.sqlite: COMMIT: database or disk is full");
  const WriteFailure& lost = failures[1];
  EXPECT_EQ(lost.path, "/d/net.pid7.sqlite");
  EXPECT_FALSE(lost.usable);
  EXPECT_EQ(lost.ranges, "");
  EXPECT_EQ(lost.reason, "a=b");  // split at the first '=' only
  EXPECT_FALSE(lost.removed);
  EXPECT_TRUE(parse_write_failures("").empty());
}

// The wait status of a child that ran `body`.
template <typename Body>
int wait_status_of(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(99);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

TEST(RunStatus, ExitStatusOfAChild) {
  EXPECT_EQ(exit_status_of(wait_status_of([] { ::_exit(0); })), 0);
  EXPECT_EQ(exit_status_of(wait_status_of([] { ::_exit(3); })), 3);
  EXPECT_EQ(exit_status_of(wait_status_of([] { ::_exit(255); })), 255);
  EXPECT_EQ(exit_status_of(wait_status_of([] {
              ::signal(SIGTERM, SIG_DFL);
              ::raise(SIGTERM);
            })),
            128 + SIGTERM);
  EXPECT_EQ(exit_status_of(wait_status_of([] { ::raise(SIGKILL); })), 137);
}

TEST(RunStatus, LauncherExitStatus) {
  struct Case {
    int command;
    bool incomplete;
    int launcher;
  };
  const Case cases[] = {
      {0, false, 0},
      {0, true, kFailure},  // a successful run whose database is incomplete is no success
      {3, false, 3},
      {3, true, 3},  // the command's own failure says more
      {137, true, 137},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(launcher_exit_status(c.command, c.incomplete), c.launcher)
        << c.command << (c.incomplete ? " incomplete" : "");
  }
}

}  // namespace
}  // namespace pyprof::launch
