// `pyprof profile`'s command line: what each form gives, where the command starts, and the
// usage errors (exit status 2, one `pyprof: error:` line).
#include "launch_options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace pyprof::launch {
namespace {

using Args = std::vector<std::string>;

ParseOutcome parse(const Args& args, std::string* stderr_text = nullptr) {
  ::testing::internal::CaptureStderr();
  ParseOutcome out = parse_launch_options(args, "pyprof profile");
  const std::string err = ::testing::internal::GetCapturedStderr();
  if (stderr_text != nullptr) *stderr_text = err;
  return out;
}

TEST(LaunchOptions, FormsThatRun) {
  // Each case: the arguments, and what differs from the defaults in the options they give.
  struct Case {
    Args args;
    std::function<void(LaunchOptions&)> expect;
  };
  const Case cases[] = {
      {{"python", "-c", "print(1)"},
       [](LaunchOptions& o) {
         o.command = {"python", "-c", "print(1)"};
       }},
      {{"-o", "runs/net.sqlite", "--force", "--", "python", "t.py"},
       [](LaunchOptions& o) {
         o.command = {"python", "t.py"};
         o.output = "runs/net";
         o.force = true;
       }},
      {{"--delay", "1.5", "--duration", "2", "python"},
       [](LaunchOptions& o) {
         o.command = {"python"};
         o.delay_ns = 1'500'000'000;
         o.duration_ns = 2'000'000'000;
       }},
      {{"--capture-range", "cudaProfilerApi", "--no-cuda-trace", "./train"},
       [](LaunchOptions& o) {
         o.command = {"./train"};
         o.capture_range_cuda_profiler = true;
         o.cuda_trace = false;
       }},
      {{"--capture-range", "none", "x"}, [](LaunchOptions& o) { o.command = {"x"}; }},
      // The first word that is not an option of ours starts CMD: the rest is CMD's, a "--"
      // and options named like ours included.
      {{"-o", "out", "python", "-o", "x", "--force"},
       [](LaunchOptions& o) {
         o.command = {"python", "-o", "x", "--force"};
         o.output = "out";
       }},
      {{"python", "--", "-x"},
       [](LaunchOptions& o) {
         o.command = {"python", "--", "-x"};
       }},
      {{"--", "--force"}, [](LaunchOptions& o) { o.command = {"--force"}; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    LaunchOptions want;
    c.expect(want);
    std::string err;
    const ParseOutcome out = parse(c.args, &err);
    ASSERT_TRUE(out.options.has_value()) << err;
    EXPECT_EQ(out.exit_code, 0);
    EXPECT_EQ(err, "");
    const LaunchOptions& o = *out.options;
    EXPECT_EQ(o.command, want.command);
    EXPECT_EQ(o.output, want.output);
    EXPECT_EQ(o.force, want.force);
    EXPECT_EQ(o.delay_ns, want.delay_ns);
    EXPECT_EQ(o.duration_ns, want.duration_ns);
    EXPECT_EQ(o.capture_range_cuda_profiler, want.capture_range_cuda_profiler);
    EXPECT_EQ(o.cuda_trace, want.cuda_trace);
  }
}

TEST(LaunchOptions, UsageErrorsSayWhatIsWrong) {
  const std::pair<Args, const char*> cases[] = {
      {{}, "pyprof: error: no command given (usage: pyprof profile [-o NAME]"},
      {{"--"}, "pyprof: error: no command given"},
      {{"-o", "x"}, "pyprof: error: no command given"},
      {{"--bogus", "python"}, "pyprof: error: unknown option '--bogus'"},
      {{"--delay", "abc", "python"},
       "pyprof: error: --delay takes a number of seconds >= 0, not 'abc'"},
      {{"--duration", "1e400", "python"},
       "pyprof: error: --duration takes a number of seconds >= 0, not '1e400'"},
      {{"-o", "runs/", "python"}, "pyprof: error: --output needs a file name, not 'runs/'"},
      {{"-o", ".sqlite", "python"}, "pyprof: error: --output needs a file name, not ''"},
      {{"--capture-range", "nvtx", "python"}, "pyprof: error: --capture-range"},
  };
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(::testing::PrintToString(args));
    std::string err;
    const ParseOutcome out = parse(args, &err);
    EXPECT_FALSE(out.options.has_value());
    EXPECT_EQ(out.exit_code, kUsageError);
    EXPECT_TRUE(err.starts_with(message)) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one line
  }
}

TEST(LaunchOptions, HelpExitsZeroWithTheExitStatusesListed) {
  ::testing::internal::CaptureStdout();
  const ParseOutcome out = parse({"--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(out.options.has_value());
  EXPECT_EQ(out.exit_code, 0);
  // The help is wrapped to the terminal's width (common/cli_help.h): compare its words.
  std::string words;
  for (char c : help) {
    if (c == '\n') c = ' ';
    if (c == ' ' && !words.empty() && words.back() == ' ') continue;
    words += c;
  }
  EXPECT_NE(words.find("75 if another pyprof profile is running with the same NAME"),
            std::string::npos)
      << help;
}

TEST(LaunchOptions, SecondsToNanoseconds) {
  const std::pair<const char*, std::optional<int64_t>> cases[] = {
      {"1.5", 1'500'000'000},       {"0", 0},
      {"2", 2'000'000'000},         {"1e-9", 1},
      {"0.0000000004", 0},  // rounded to the nearest nanosecond
      {"0.0000000006", 1},          {"9223372036", 9'223'372'036'000'000'000},
      {"9223372037", std::nullopt},  // past int64's nanoseconds
      {"", std::nullopt},           {"-1", std::nullopt},
      {" 1", std::nullopt},         {"1 ", std::nullopt},
      {"1s", std::nullopt},         {"nan", std::nullopt},
      {"inf", std::nullopt},        {"0x10", std::nullopt},  // strtod would read 16
      {"1E1", 10'000'000'000},
  };
  for (const auto& [text, ns] : cases) EXPECT_EQ(seconds_to_ns(text), ns) << '"' << text << '"';
}

TEST(LaunchOptions, StripSqliteSuffix) {
  const std::pair<const char*, const char*> cases[] = {
      {"run.sqlite", "run"},
      {"run", "run"},
      {"run.sqlite.sqlite", "run.sqlite"},
      {".sqlite", ""},
      {"dir/x.sqlite", "dir/x"},
      {"run.SQLITE", "run.SQLITE"},
      {"sqlite", "sqlite"},
  };
  for (const auto& [name, stripped] : cases) EXPECT_EQ(strip_sqlite_suffix(name), stripped);
}

}  // namespace
}  // namespace pyprof::launch
