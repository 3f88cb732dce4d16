// "Read, cost, select, warn" (prof/load_profile.h): what every tool does with a net.dict and says
// about it, on small dicts written to a temporary file: an unreadable line skipped, counted and
// named the same way for each tool (or fatal where export asks), the messages labelled by input,
// a missing input and an empty selection each with its own exit code.
#include "prof/load_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace pyprof::prof {
namespace {

// A file holding `text`, removed when done.
struct TempDict {
  explicit TempDict(const std::string& text) {
    char name[] = "/tmp/load_profile_testXXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    path = name;
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  }
  ~TempDict() { std::remove(path.c_str()); }
  std::string path;
};

// Two steps, two kernels in each, a damaged line between them.
const std::string kDict =
    R"({"pyprof_dict":2,"source":"net.sqlite","records":"gpu","iterations":{"rule":"user_range",)"
    R"("range":"step N","count":2,"steps":[{"index":0,"name":"step 0","start":0,"end":1000},)"
    R"({"index":1,"name":"step 1","start":1000,"end":2000}]}})"
    "\n"
    R"({"kind":"kernel","name":"k","start":10,"duration":5,"op":null,"dir":null,"step":0})"
    "\n"
    R"({"kind":"kernel","name":"k","start":20,"duration":5,"op":null,"dir":null,"step":0})"
    "\n"
    R"({"kind":"kernel","name":"k","sta)"
    "\n"
    R"({"kind":"kernel","name":"k","start":1010,"duration":7,"op":null,"dir":null,"step":1})"
    "\n"
    R"({"kind":"kernel","name":"k","start":1020,"duration":7,"op":null,"dir":null,"step":1})"
    "\n";

TEST(LoadProfile, AnUnreadableLineIsSkippedCountedAndNamed) {
  TempDict dict(kDict);
  ReadResult data;
  LoadError error;
  ASSERT_TRUE(load_profile(dict.path, LoadRequest{}, data, error)) << error.message();
  EXPECT_EQ(data.skipped_lines, 1);
  EXPECT_EQ(data.first_skipped_line, "line 4: not a JSON object");
  EXPECT_EQ(data.records.size(), 4u);
  EXPECT_EQ(load_messages("prof", "", data),
            "pyprof prof: warning: line 4: not a JSON object\n"
            "pyprof prof: warning: 1 unreadable lines skipped\n");
  // Where a tool reads several inputs, each message names its own.
  EXPECT_EQ(load_messages("diff", "base", data),
            "pyprof diff: warning: base: line 4: not a JSON object\n"
            "pyprof diff: warning: base: 1 unreadable lines skipped\n");
}

TEST(LoadProfile, ExportRefusesAnUnreadableLineNamingIt) {
  TempDict dict(kDict);
  LoadRequest request;
  request.read.strict_json = true;
  request.select = false;
  request.unreadable_lines_fatal = true;
  ReadResult data;
  LoadError error;
  EXPECT_FALSE(load_profile(dict.path, request, data, error));
  EXPECT_EQ(error.exit_code, 1);
  EXPECT_EQ(error.input, dict.path);
  EXPECT_TRUE(error.message().starts_with(dict.path + ": line 4: not valid JSON"))
      << error.message();
}

TEST(LoadProfile, TheSelectionIsSaidAndAnEmptyOneIsAUsageError) {
  TempDict dict(kDict);
  LoadRequest request;
  std::string problem;
  ASSERT_TRUE(parse_iteration_request("1", request.iterations, problem)) << problem;
  ReadResult data;
  LoadError error;
  ASSERT_TRUE(load_profile(dict.path, request, data, error)) << error.message();
  EXPECT_EQ(data.iterations.records_left_out, 2);
  const std::string messages = load_messages("prof", "rank1.dict", data);
  EXPECT_NE(messages.find("pyprof prof: note: rank1.dict: "), std::string::npos) << messages;

  ASSERT_TRUE(parse_iteration_request("5", request.iterations, problem)) << problem;
  EXPECT_FALSE(load_profile(dict.path, request, data, error));
  EXPECT_EQ(error.exit_code, 2);
  EXPECT_EQ(error.input, dict.path);
}

TEST(LoadProfile, AMissingInputOrOneThatIsNoDictFailsNamingIt) {
  ReadResult data;
  LoadError error;
  EXPECT_FALSE(load_profile("/nonexistent/net.dict", LoadRequest{}, data, error));
  EXPECT_EQ(error.exit_code, 1);
  EXPECT_NE(error.message().find("/nonexistent/net.dict"), std::string::npos) << error.message();

  TempDict not_a_dict("{\"traceEvents\":[]}\n");
  EXPECT_FALSE(load_profile(not_a_dict.path, LoadRequest{}, data, error));
  EXPECT_EQ(error.exit_code, 1);
  EXPECT_TRUE(error.message().starts_with(not_a_dict.path + ": line 1: ")) << error.message();
}

}  // namespace
}  // namespace pyprof::prof
