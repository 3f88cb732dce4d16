// The names of a run's databases, which files belong to a run (per rank), and the claim on an
// output name that keeps two launchers from writing the same databases.
#include "output_names.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pyprof::launch {
namespace {

// A folder of its own under the test's temporary directory, removed with its files.
class TempDir {
 public:
  TempDir() {
    std::string templ = ::testing::TempDir() + "output_names_test.XXXXXX";
    path_ = ::mkdtemp(templ.data()) != nullptr ? templ : std::string();
  }
  ~TempDir() {
    if (path_.empty()) return;
    // Only the plain files the tests made.
    for (const char* name : kMade) ::unlink((path_ + "/" + name).c_str());
    ::rmdir(path_.c_str());
  }
  void touch(const char* name) const { std::ofstream(path_ + "/" + name) << ""; }
  const std::string& path() const { return path_; }

  static constexpr const char* kMade[] = {
      "net.sqlite",   "net.rank1.sqlite", "net.rank1.sqlite-journal", "net.pid5.sqlite",
      "other.sqlite", "net.dict",         ".net.pyprof-lock",         ".net.rank1.pyprof-lock"};

 private:
  std::string path_;
};

TEST(OutputNames, SplitOutputName) {
  struct Case {
    const char* name;
    const char* dir;
    const char* base;
  };
  const Case cases[] = {{"runs/a", "runs", "a"},
                        {"a", ".", "a"},
                        {"/a", "/", "a"},
                        {"x/y/z", "x/y", "z"},
                        {"./net", ".", "net"}};
  for (const Case& c : cases) {
    const OutputName n = split_output_name(c.name);
    EXPECT_EQ(n.dir, c.dir) << c.name;
    EXPECT_EQ(n.base, c.base) << c.name;
  }
}

TEST(OutputNames, RootDatabaseAndFilesPerRank) {
  EXPECT_EQ(root_database_name("net", nullptr), "net.sqlite");
  EXPECT_EQ(root_database_name("net", ""), "net.sqlite");
  EXPECT_EQ(root_database_name("net", "3"), "net.rank3.sqlite");
  EXPECT_EQ(root_database_name("/d/net", "12"), "/d/net.rank12.sqlite");
  // A RANK that is no number names no file (the collector ignores it too): the root database
  // keeps the name the launcher lists, and no path comes in through the environment.
  EXPECT_EQ(root_database_name("net", "abc"), "net.sqlite");
  EXPECT_EQ(root_database_name("net", "0/../../x"), "net.sqlite");
  EXPECT_EQ(root_database_name("net", "1234567890"), "net.sqlite");
  // A launcher of one rank owns that rank's files only, and only for a numeric RANK.
  EXPECT_EQ(run_files_base("net", nullptr), "net");
  EXPECT_EQ(run_files_base("net", ""), "net");
  EXPECT_EQ(run_files_base("net", "3"), "net.rank3");
  EXPECT_EQ(run_files_base("net", "017"), "net.rank017");
  EXPECT_EQ(run_files_base("net", "x3"), "net");
  EXPECT_EQ(run_files_base("net", "-1"), "net");
}

TEST(OutputNames, WhichFilesBelongToARun) {
  struct Case {
    const char* file;
    const char* base;
    RunFileKind kind;
  };
  using K = RunFileKind;
  const Case cases[] = {
      {"net.sqlite", "net", K::kDatabase},
      {"net.rank3.sqlite", "net", K::kDatabase},
      {"net.pid42.sqlite", "net", K::kDatabase},
      {"net.rank3.pid42.sqlite", "net", K::kDatabase},
      // The collector's fallback when net.pid42.sqlite was taken (config.h).
      {"net.pid42.1.sqlite", "net", K::kDatabase},
      {"net.rank3.pid42.2.sqlite-wal", "net", K::kSidecar},
      {"net.1.sqlite", "net", K::kOther},
      {"net.sqlite-journal", "net", K::kSidecar},
      {"net.rank1.sqlite-wal", "net", K::kSidecar},
      {"net.pid7.sqlite-shm", "net", K::kSidecar},
      {"net.sqlite.bak", "net", K::kOther},
      {"net.sqlite-journal2", "net", K::kOther},
      {"network.sqlite", "net", K::kOther},
      {"net2.sqlite", "net", K::kOther},
      {"net.rank.sqlite", "net", K::kOther},  // no number
      {"net.pid42.rank3.sqlite", "net", K::kOther},
      {"net.dict", "net", K::kOther},
      {"net.sqlite", "", K::kOther},
      // a rank's own launcher (run_files_base): its rank's files, not another's
      {"net.rank3.sqlite", "net.rank3", K::kDatabase},
      {"net.rank3.pid9.sqlite", "net.rank3", K::kDatabase},
      {"net.rank31.sqlite", "net.rank3", K::kOther},
      {"net.sqlite", "net.rank3", K::kOther},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(classify_run_file(c.file, c.base), c.kind) << c.file << " of " << c.base;
  }
}

TEST(OutputNames, ListRunFiles) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  for (const char* name : {"net.sqlite", "net.rank1.sqlite", "net.rank1.sqlite-journal",
                           "net.pid5.sqlite", "other.sqlite", "net.dict"}) {
    dir.touch(name);
  }
  std::vector<std::string> names;
  ASSERT_TRUE(list_run_files(dir.path(), "net", false, names));
  EXPECT_EQ(names, (std::vector<std::string>{"net.pid5.sqlite", "net.rank1.sqlite", "net.sqlite"}));
  ASSERT_TRUE(list_run_files(dir.path(), "net", true, names));
  EXPECT_EQ(names, (std::vector<std::string>{"net.pid5.sqlite", "net.rank1.sqlite",
                                             "net.rank1.sqlite-journal", "net.sqlite"}));
  ASSERT_TRUE(list_run_files(dir.path(), "net.rank1", true, names));
  EXPECT_EQ(names, (std::vector<std::string>{"net.rank1.sqlite", "net.rank1.sqlite-journal"}));
  errno = 0;
  EXPECT_FALSE(list_run_files(dir.path() + "/missing", "net", false, names));
  EXPECT_EQ(errno, ENOENT);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(OutputClaim, OneLauncherAtATimePerName) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string lock = dir.path() + "/.net.pyprof-lock";
  {
    OutputClaim first;
    ASSERT_EQ(first.claim(dir.path(), "net"), OutputClaim::Outcome::kClaimed);
    EXPECT_EQ(first.lock_path(), lock);
    EXPECT_EQ(read_file(lock), std::to_string(::getpid()) + "\n");
    {
      OutputClaim second;  // flock() locks conflict between two opens in one process too
      EXPECT_EQ(second.claim(dir.path(), "net"), OutputClaim::Outcome::kInUse);
      EXPECT_EQ(second.holder_pid(), ::getpid());
    }
    EXPECT_TRUE(exists(lock));  // the refused claim left the holder's file alone
    OutputClaim rank;           // another name: another lock
    EXPECT_EQ(rank.claim(dir.path(), "net.rank1"), OutputClaim::Outcome::kClaimed);
  }
  EXPECT_FALSE(exists(lock));  // removed when the claim ends
  EXPECT_FALSE(exists(dir.path() + "/.net.rank1.pyprof-lock"));
  OutputClaim again;
  EXPECT_EQ(again.claim(dir.path(), "net"), OutputClaim::Outcome::kClaimed);
}

TEST(OutputClaim, ALockFileLeftBehindIsTakenOver) {
  // A launcher killed with SIGKILL leaves its lock file, but the kernel dropped its lock.
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::ofstream(dir.path() + "/.net.pyprof-lock") << "999999\n";
  OutputClaim claim;
  EXPECT_EQ(claim.claim(dir.path(), "net"), OutputClaim::Outcome::kClaimed);
  EXPECT_EQ(read_file(claim.lock_path()), std::to_string(::getpid()) + "\n");
}

TEST(OutputClaim, AMissingFolderFailsWithItsErrno) {
  OutputClaim claim;
  EXPECT_EQ(claim.claim("/nonexistent-pyprof-test-dir", "net"), OutputClaim::Outcome::kFailed);
  EXPECT_EQ(claim.error(), ENOENT);
  EXPECT_EQ(claim.lock_path(), "/nonexistent-pyprof-test-dir/.net.pyprof-lock");
}

}  // namespace
}  // namespace pyprof::launch
