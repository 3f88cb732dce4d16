// Command-line options of `pyprof profile` and their parsing (CLI11).
//
//   pyprof profile [-o NAME] [--force] [--delay S] [--duration S]
//                  [--capture-range none|cudaProfilerApi] [--no-cuda-trace] [--] CMD [ARGS...]
//
// Parsing stops at `--` or at the first word that is not an option of ours: everything from
// there on is the command to run, passed through untouched (so `pyprof profile python -c ...`
// works without `--`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof::launch {

// Exit status for command-line usage errors (bad options, no command).
inline constexpr int kUsageError = 2;

struct LaunchOptions {
  // Output name with any trailing ".sqlite" removed; may contain a directory part.
  std::string output = "pyprof_report";
  bool force = false;
  std::optional<int64_t> delay_ns;
  std::optional<int64_t> duration_ns;
  // --capture-range cudaProfilerApi: record only between cudaProfilerStart() and Stop().
  bool capture_range_cuda_profiler = false;
  // --no-cuda-trace: NVTX only, CUPTI is never started.
  bool cuda_trace = true;
  std::vector<std::string> command;  // never empty after a successful parse
  // Our own options found among the command's arguments when no `--` separates them
  // (`pyprof profile python train.py -o run`): they go to the program, which the launcher says,
  // since the user most likely meant them for pyprof.
  std::vector<std::string> options_after_command;
};

struct ParseOutcome {
  std::optional<LaunchOptions> options;  // set when the launcher should go on
  int exit_code = 0;                     // otherwise: 0 after --help, kUsageError on errors
};

// Parses the arguments after argv[0]. `prog_name` is shown in the help text. On errors it has
// already printed one `pyprof: error: ...` line on stderr; on --help, the help on stdout.
ParseOutcome parse_launch_options(const std::vector<std::string>& args, std::string_view prog_name);

// "1.5" -> 1500000000. nullopt unless `text` is a whole, finite decimal number >= 0 whose value in
// nanoseconds fits in int64_t.
std::optional<int64_t> seconds_to_ns(std::string_view text);

// Removes one trailing ".sqlite" ("run.sqlite" -> "run").
std::string strip_sqlite_suffix(std::string_view name);

}  // namespace pyprof::launch
