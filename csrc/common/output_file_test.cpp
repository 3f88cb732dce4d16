// What parse, prof, diff and export do with special files and signals: common/output_file.h and
// common/input_files.h. Each case that changes the process's state (signal handlers, protected
// inputs, standard descriptors) runs in a child process of its own (a gtest death test).
#include "common/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/input_files.h"

namespace pyprof {
namespace {

namespace fs = std::filesystem;

class SpecialFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pyprof_output_file_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string read(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  fs::path dir_;
};

// In a child: SIGTERM while an output is half written.
void terminate_while_writing(const std::string& out) {
  guard_outputs();
  OutputFile file;
  std::string error;
  if (!file.open(out, error)) std::_Exit(3);
  file.write("half of it");
  std::fflush(file.stream());
  std::raise(SIGTERM);
  std::_Exit(4);  // not reached
}

// SIGTERM while an output is half written: the temporary goes, the tool ends by the signal.
TEST_F(SpecialFiles, SignalRemovesTheTemporaryOfAnUncommittedOutput) {
  EXPECT_EXIT(terminate_while_writing(path("net.dict")), ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_EQ(listing(), std::vector<std::string>{});
}

// In a child: one output committed, another pending, then SIGINT.
void commit_one_then_interrupt(const std::string& done, const std::string& pending) {
  guard_outputs();
  OutputFile first;
  OutputFile second;
  std::string error;
  if (!first.open(done, error) || !second.open(pending, error)) std::_Exit(3);
  first.write("complete\n");
  second.write("not yet");
  if (!first.finish(error)) std::_Exit(5);
  std::raise(SIGINT);
  std::_Exit(4);
}

TEST_F(SpecialFiles, SignalLeavesCommittedOutputsAndRemovesTheRest) {
  const std::string done = path("done.csv"), pending = path("pending.csv");
  EXPECT_EXIT(commit_one_then_interrupt(done, pending), ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EQ(listing(), std::vector<std::string>{"done.csv"});
  EXPECT_EQ(read(done), "complete\n");
}

// In a child: SIGHUP ignored by the parent (nohup), then raised.
void hangup_while_ignored(const std::string& out) {
  std::signal(SIGHUP, SIG_IGN);
  guard_outputs();
  OutputFile file;
  std::string error;
  if (!file.open(out, error)) std::_Exit(3);
  file.write("whole\n");
  std::raise(SIGHUP);
  std::_Exit(file.finish(error) ? 0 : 5);
}

// A signal the parent left ignored (nohup) stays ignored: the tool finishes its work.
TEST_F(SpecialFiles, IgnoredSignalStaysIgnored) {
  EXPECT_EXIT(hangup_while_ignored(path("out.txt")), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(read(path("out.txt")), "whole\n");
}

// In a child (protect_inputs() changes the process's state): exits 0 when the input is refused
// as an output by its path and through both kinds of link, and other outputs are not.
void write_over_protected_input(const std::string& dir, const std::string& input) {
  protect_inputs({input});
  std::string error;
  OutputFile same;
  OutputFile through_link;
  OutputFile hard_link;
  OutputFile other;
  OutputFile device;
  const bool refused = !same.open(input, error) &&
                       error.find("it is the input " + input) != std::string::npos &&
                       !through_link.open(dir + "/link.sqlite", error) &&
                       error.find("(the same file)") != std::string::npos &&
                       !hard_link.open(dir + "/hard.sqlite", error);
  // Another file, and a device, are written as ever.
  const bool others = other.open(dir + "/net.dict", error) && other.finish(error) &&
                      device.open("/dev/null", error) && device.finish(error);
  std::_Exit(refused && others ? 0 : 1);
}

TEST_F(SpecialFiles, OutputThatIsAnInputIsRefused) {
  const std::string input = path("net.sqlite");
  std::ofstream(input) << "the capture\n";
  ASSERT_EQ(::symlink("net.sqlite", path("link.sqlite").c_str()), 0);
  ASSERT_EQ(::link(input.c_str(), path("hard.sqlite").c_str()), 0);
  EXPECT_EXIT(write_over_protected_input(dir_.string(), input), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(read(input), "the capture\n");
  EXPECT_TRUE(fs::is_symlink(path("link.sqlite")));
}

// In a child: standard output closed before the tool starts.
void open_with_standard_output_closed(const std::string& out) {
  ::close(1);
  guard_outputs();
  std::string error;
  OutputFile standard;
  OutputFile file;
  const bool refused = !standard.open("-", error) &&
                       error == "cannot write standard output: it is closed (give -o FILE)";
  // A file opened afterwards does not take descriptor 1 (what printf would write to).
  const bool opened = file.open(out, error) && fileno(file.stream()) > 2;
  std::_Exit(refused && opened && standard_stream_was_closed(1) ? 0 : 1);
}

TEST_F(SpecialFiles, ClosedStandardOutputIsAnErrorNotAStolenDescriptor) {
  EXPECT_EXIT(open_with_standard_output_closed(path("out.txt")), ::testing::ExitedWithCode(0), "");
}

TEST_F(SpecialFiles, FifoWithoutWriterReadsAsEmptyInsteadOfWaiting) {
  const std::string fifo = path("net.dict");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string error;
  std::FILE* in = open_input_stream(fifo, error);
  ASSERT_NE(in, nullptr) << error;
  EXPECT_EQ(std::fgetc(in), EOF);
  EXPECT_FALSE(std::ferror(in));
  std::fclose(in);
  EXPECT_FALSE(is_regular_input(fifo, "it is read twice", error));
  EXPECT_EQ(error, fifo + " is a FIFO (named pipe), not a regular file: it is read twice");
}

TEST_F(SpecialFiles, FifoWithWriterIsReadAsAStream) {
  const std::string fifo = path("net.dict");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // O_RDWR opens without a reader; the writer is present when the reader opens.
  const int writer = ::open(fifo.c_str(), O_RDWR);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(::write(writer, "line\n", 5), 5);
  std::string error;
  std::FILE* in = open_input_stream(fifo, error);
  ASSERT_NE(in, nullptr) << error;
  ::close(writer);
  char text[16] = {};
  EXPECT_EQ(std::fread(text, 1, sizeof text, in), 5u);
  EXPECT_EQ(std::string(text), "line\n");
  std::fclose(in);
}

TEST_F(SpecialFiles, InputsThatCannotBeOpenedSayWhy) {
  ASSERT_EQ(::symlink("loop2", path("loop1").c_str()), 0);
  ASSERT_EQ(::symlink("loop1", path("loop2").c_str()), 0);
  std::string error;
  EXPECT_EQ(open_input_stream(path("loop1"), error), nullptr);
  EXPECT_EQ(error, "cannot open " + path("loop1") + ": Too many levels of symbolic links");
  EXPECT_FALSE(is_input_folder(path("loop1")));  // no exception
  EXPECT_EQ(open_input_stream(dir_.string(), error), nullptr);
  EXPECT_EQ(error, dir_.string() + " is a folder, not a file to read");
  EXPECT_FALSE(is_regular_input(path("loop1"), "", error));
  EXPECT_EQ(error, "cannot open " + path("loop1") + ": Too many levels of symbolic links");
}

// A folder's broken link is a failed input, not one left out; an empty folder fails alone.
TEST_F(SpecialFiles, FolderExpansionKeepsBrokenLinksAndGoesOnPastEmptyFolders) {
  fs::create_directories(dir_ / "ranks");
  fs::create_directories(dir_ / "empty");
  fs::create_directories(dir_ / "ranks" / "sub.dict");  // a folder: not an input
  std::ofstream(path("ranks/net.rank0.dict")) << "{}\n";
  ASSERT_EQ(::symlink("/nonexistent/net.rank1.dict", path("ranks/net.rank1.dict").c_str()), 0);
  std::ofstream(path("ranks/notes.txt")) << "not wanted\n";
  std::vector<std::string> files, failed;
  expand_input_folders(
      {path("empty"), path("ranks"), path("single.dict")},
      [](const std::string& name) { return name.ends_with(".dict"); }, "*.dict files", files,
      failed);
  EXPECT_EQ(files, (std::vector<std::string>{path("ranks/net.rank0.dict"),
                                             path("ranks/net.rank1.dict"), path("single.dict")}));
  EXPECT_EQ(failed, std::vector<std::string>{path("empty") + " holds no *.dict files"});
}

}  // namespace
}  // namespace pyprof
