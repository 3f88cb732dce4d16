// Environment parsing and output file naming.
#include "config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <limits>

#include "testing/test_db.h"

namespace pyprof::collect {
namespace {

using testing::TempDir;

bool exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// Sets environment variables for one test and restores the previous values afterwards.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    saved_.emplace_back(name,
                        getenv(name) ? std::optional<std::string>(getenv(name)) : std::nullopt);
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(CollectorConfig, DefaultsWithoutEnvironment) {
  ScopedEnv env;
  for (const char* name :
       {"PYPROF_OUTPUT", "RANK", "PYPROF_ROOT_PID", "PYPROF_DELAY_NS", "PYPROF_DURATION_NS",
        "PYPROF_BUFFER_MB", "PYPROF_BUFFER_BYTES", "PYPROF_SESSION_START_MONO_NS",
        "PYPROF_SESSION_START_UTC_NS", "PYPROF_FINALIZE_TIMEOUT_S"}) {
    env.set(name, nullptr);
  }
  const CollectorConfig config = CollectorConfig::from_environment(1000, 5000);
  EXPECT_EQ(config.session_start_mono_ns, 1000);
  EXPECT_EQ(config.session_start_utc_ns, 5000);
  EXPECT_EQ(config.output_base, "pyprof_report");
  EXPECT_FALSE(config.rank);
  EXPECT_FALSE(config.root_pid);
  EXPECT_EQ(config.buffer_limit_bytes, uint64_t{1024} << 20);
  EXPECT_EQ(config.window_begin_ns(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(config.window_end_ns(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(preferred_output_path(config, 77, false), "pyprof_report.sqlite");
}

TEST(CollectorConfig, ARankThatIsNoNumberNamesNoFile) {
  for (const char* rank : {"abc", "0/../../etc/x", "-1", "1234567890"}) {
    ScopedEnv env;
    env.set("PYPROF_OUTPUT", "/tmp/x/net");
    env.set("RANK", rank);
    const CollectorConfig config = CollectorConfig::from_environment(1000, 5000);
    EXPECT_FALSE(config.rank) << rank;
    EXPECT_EQ(preferred_output_path(config, 77, false), "/tmp/x/net.sqlite") << rank;
  }
}

TEST(CollectorConfig, ReadsEnvironment) {
  ScopedEnv env;
  env.set("PYPROF_OUTPUT", "/tmp/x/net");
  env.set("RANK", "3");
  env.set("PYPROF_ROOT_PID", "12");
  env.set("PYPROF_DELAY_NS", "100");
  env.set("PYPROF_DURATION_NS", "50");
  env.set("PYPROF_BUFFER_MB", "2");
  env.set("PYPROF_BUFFER_BYTES", nullptr);
  env.set("PYPROF_SESSION_START_MONO_NS", "400");
  env.set("PYPROF_SESSION_START_UTC_NS", nullptr);
  const CollectorConfig config = CollectorConfig::from_environment(1000, 5000);
  EXPECT_EQ(config.output_base, "/tmp/x/net");
  EXPECT_EQ(config.rank, "3");
  EXPECT_EQ(config.root_pid, 12);
  EXPECT_EQ(config.window_begin_ns(), 100);
  EXPECT_EQ(config.window_end_ns(), 150);
  EXPECT_EQ(config.buffer_limit_bytes, uint64_t{2} << 20);
  EXPECT_EQ(config.session_start_mono_ns, 400);
  EXPECT_EQ(config.session_start_utc_ns, 5000 - 600);  // derived from the monotonic start

  env.set("PYPROF_BUFFER_BYTES", "4096");
  env.set("PYPROF_DELAY_NS", "soon");  // malformed: ignored (and reported)
  const CollectorConfig other = CollectorConfig::from_environment(1000, 5000);
  EXPECT_EQ(other.buffer_limit_bytes, 4096u);
  EXPECT_FALSE(other.delay_ns);
  EXPECT_EQ(other.window_begin_ns(), 0);  // duration alone: window starts at the session start
  EXPECT_EQ(other.window_end_ns(), 50);
}

TEST(OutputNaming, FollowsRootRankAndPidRules) {
  CollectorConfig config;
  config.output_base = "/tmp/x/net";
  config.root_pid = 100;
  EXPECT_EQ(preferred_output_path(config, 100, false), "/tmp/x/net.sqlite");
  EXPECT_EQ(preferred_output_path(config, 101, false), "/tmp/x/net.pid101.sqlite");
  EXPECT_EQ(preferred_output_path(config, 100, true), "/tmp/x/net.pid100.sqlite");
  config.rank = "2";
  EXPECT_EQ(preferred_output_path(config, 100, false), "/tmp/x/net.rank2.sqlite");
  EXPECT_EQ(preferred_output_path(config, 101, false), "/tmp/x/net.rank2.sqlite");
  EXPECT_EQ(preferred_output_path(config, 101, true), "/tmp/x/net.rank2.pid101.sqlite");
  EXPECT_EQ(pid_output_path(config, 101, 2), "/tmp/x/net.rank2.pid101.2.sqlite");
}

TEST(OutputNaming, NeverOverwritesAnExistingFile) {
  TempDir dir;
  CollectorConfig config;
  config.output_base = dir.file("sub/dir/run");  // parent folders are created
  std::string error;
  EXPECT_EQ(create_output_file(config, 55, false, &error), dir.file("sub/dir/run.sqlite"));
  EXPECT_TRUE(exists(dir.file("sub/dir/run.sqlite")));
  EXPECT_EQ(create_output_file(config, 55, false, &error), dir.file("sub/dir/run.pid55.sqlite"));
  EXPECT_EQ(create_output_file(config, 55, false, &error), dir.file("sub/dir/run.pid55.1.sqlite"));
  EXPECT_EQ(create_output_file(config, 55, true, &error), dir.file("sub/dir/run.pid55.2.sqlite"));

  config.output_base = "/proc/definitely/not/writable";
  EXPECT_FALSE(create_output_file(config, 55, false, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace pyprof::collect
