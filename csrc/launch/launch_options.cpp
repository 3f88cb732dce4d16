#include "launch_options.h"

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/cli_help.h"
#include "common/cli_options.h"
#include "common/env_vars.h"

namespace pyprof::launch {
namespace {

constexpr std::string_view kUsage =
    "pyprof profile [-o NAME] [--force] [--delay S] [--duration S] "
    "[--capture-range none|cudaProfilerApi] [--no-cuda-trace] [--] CMD [ARGS...]";

int usage_error(std::string_view message) {
  fmt::print(stderr, "pyprof: error: {} (usage: {})\n", message, kUsage);
  return kUsageError;
}

// CLI11 messages are single lines already; make sure of it anyway.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

std::optional<int64_t> seconds_to_ns(std::string_view text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return std::nullopt;
  // strtod also reads hexadecimal ("0x10" would be 16 s) and "infinity": a decimal number only.
  if (text.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return std::nullopt;
  const std::string str(text);
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size() || !std::isfinite(seconds) || seconds < 0) {
    return std::nullopt;
  }
  const double ns = std::round(seconds * 1e9);
  // 2^63 is exactly representable; anything at or above it does not fit in int64_t.
  if (ns >= 9223372036854775808.0) return std::nullopt;
  return static_cast<int64_t>(ns);
}

std::string strip_sqlite_suffix(std::string_view name) {
  constexpr std::string_view kSuffix = ".sqlite";
  if (name.size() >= kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix) {
    name.remove_suffix(kSuffix.size());
  }
  return std::string(name);
}

ParseOutcome parse_launch_options(const std::vector<std::string>& args,
                                  std::string_view prog_name) {
  // Split at the first "--" ourselves: CLI11 would otherwise treat what follows as positionals.
  const auto mark = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> ours(args.begin(), mark);
  const bool has_mark = mark != args.end();
  std::vector<std::string> after_mark;
  if (has_mark) after_mark.assign(mark + 1, args.end());

  LaunchOptions opts;
  std::string delay_text;
  std::string duration_text;
  CLI::App app(
      "Run CMD with the pyprof collector injected and record its NVTX ranges and, on a GPU, its "
      "CUDA kernels, API calls and copies (CUPTI) into NAME.sqlite (other processes it starts "
      "write NAME.rank<R>.sqlite / NAME[.rank<R>].pid<P>.sqlite).",
      std::string(prog_name));
  app.formatter(std::make_shared<pyprof::WrappingFormatter>());
  app.prefix_command();  // the first non-option word starts CMD; the rest is CMD's
  app.add_option("-o,--output", opts.output,
                 "Output name: writes NAME.sqlite (a trailing .sqlite is ignored)")
      ->type_name("NAME")
      ->default_str(opts.output);
  app.add_flag("--force", opts.force,
               "Delete the databases of an earlier run with the same NAME instead of refusing (one "
               "empty database, from a program that made no NVTX call, is replaced without it)");
  app.add_option("--delay", delay_text, "Start collecting S seconds after launch")->type_name("S");
  app.add_option("--duration", duration_text, "Stop collecting S seconds after it started")
      ->type_name("S");
  std::string capture_range = "none";
  app.add_option("--capture-range", capture_range,
                 "cudaProfilerApi: record only between the first cudaProfilerStart() "
                 "(torch.cuda.profiler.start()) and the next cudaProfilerStop()")
      ->type_name("RANGE")
      ->check(CLI::IsMember({"none", "cudaProfilerApi"}))
      ->default_str("none");
  bool no_cuda_trace = false;
  app.add_flag("--no-cuda-trace", no_cuda_trace,
               "Record NVTX ranges only: do not trace CUDA kernels, API calls and copies "
               "(CUPTI), which leaves CUPTI to a torch.profiler in the program");
  app.footer(fmt::format(
      "Command line: {}\n\nThe collector library is <launcher dir>/../lib/libpyprof_collect.so, or "
      "${} if set.\nExit status: CMD's own; 128+N if CMD was killed by signal N; "
      "75 if another pyprof profile is running with the same NAME (--force does not override "
      "it); 1, 2, 126 or 127 if pyprof could not run it.",
      kUsage, env::kCollector));

  if (int status = pyprof::list_options_if_asked(app, ours); status >= 0)
    return {std::nullopt, status};
  try {
    std::reverse(ours.begin(), ours.end());  // CLI11 consumes the vector from its back
    app.parse(ours);
  } catch (const CLI::CallForHelp& e) {
    return {std::nullopt, app.exit(e)};
  } catch (const CLI::CallForAllHelp& e) {
    return {std::nullopt, app.exit(e)};
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, usage_error(one_line(e.what()))};
  }

  // With prefix_command, unknown options also land in remaining(): they must not become CMD.
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front().size() > 1 && command.front().front() == '-') {
    return {std::nullopt, usage_error(fmt::format("unknown option '{}'", command.front()))};
  }
  if (has_mark) {
    // "-- CMD ..." or, when CMD started before a "--", that "--" is one of CMD's arguments.
    if (!command.empty()) command.push_back("--");
    command.insert(command.end(), after_mark.begin(), after_mark.end());
  }
  if (command.empty() || command.front().empty()) {
    return {std::nullopt, usage_error("no command given")};
  }
  if (!has_mark) {
    // Ours only when given like ours: "-o NAME", "--output=NAME", "--force", ...
    for (size_t i = 1; i < command.size(); ++i) {
      const std::string& a = command[i];
      for (std::string_view ours : {"-o", "--output", "--force", "--delay", "--duration",
                                    "--capture-range", "--no-cuda-trace"}) {
        if (a == ours || (ours.starts_with("--") && a.starts_with(std::string(ours) + "="))) {
          opts.options_after_command.push_back(a);
        }
      }
    }
  }
  opts.command = std::move(command);
  opts.capture_range_cuda_profiler = capture_range == "cudaProfilerApi";
  opts.cuda_trace = !no_cuda_trace;

  opts.output = strip_sqlite_suffix(opts.output);
  if (opts.output.empty() || opts.output.back() == '/') {
    return {std::nullopt,
            usage_error(fmt::format("--output needs a file name, not '{}'", opts.output))};
  }
  const auto parse_seconds = [](std::string_view option, const std::string& text,
                                std::optional<int64_t>& out) {
    out = seconds_to_ns(text);
    if (!out) {
      usage_error(fmt::format("{} takes a number of seconds >= 0, not '{}'", option, text));
      return false;
    }
    return true;
  };
  if (app.count("--delay") > 0 && !parse_seconds("--delay", delay_text, opts.delay_ns)) {
    return {std::nullopt, kUsageError};
  }
  if (app.count("--duration") > 0 &&
      !parse_seconds("--duration", duration_text, opts.duration_ns)) {
    return {std::nullopt, kUsageError};
  }
  return {std::move(opts), 0};
}

}  // namespace pyprof::launch
