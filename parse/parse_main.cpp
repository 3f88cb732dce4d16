// pyprof-parse: `pyprof parse DB [-o FILE]` / `python -m pyprof.parse DB > net.dict`.
// Exit codes: 0 ok (also for a capture that was not finished: what it holds is written, and the
// summary and the header's "unfinished_capture" say what may be missing), 1 bad input or
// unwritable output, 2 usage, 141 standard output closed by its reader (`... | head`; nothing
// printed).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/output_file.h"
#include "common/terminal_text.h"
#include "parse/correlate.h"
#include "parse/nsys_reader.h"
#include "parse/nvprof_reader.h"
#include "parse/record_writer.h"
#include "parse/sqlite_db.h"

namespace pyprof::parse {
namespace {

// PYPROF_PARSE_TIMING=1 prints how long each phase took (for benchmarks/parse_bench.py).
class PhaseTimer {
 public:
  PhaseTimer() : enabled_(std::getenv("PYPROF_PARSE_TIMING") != nullptr) {}
  void lap(const char* phase) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    fmt::print(stderr, "pyprof parse: {:<10} {:.3f} s\n", phase,
               std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// 4096 -> "4,096" (fmt's {:L} follows the C locale, which has no separator).
std::string with_thousands(int64_t n) {
  const std::string digits = std::to_string(n);
  const size_t sign = digits[0] == '-' ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

double percent(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

void print_summary(const std::string& path, const Trace& trace, const Correlation& corr,
                   const RecordWriter& writer) {
  const ReadStats& s = trace.stats;
  const CorrelationStats& c = corr.stats;
  // Everything from the file (version, metadata, warning examples) is terminal_safe.
  std::string tool = trace.format + (trace.version.empty() ? "" : " " + trace.version);
  fmt::print(stderr, "pyprof parse: {} ({})\n", path, terminal_safe(tool));
  int64_t records = static_cast<int64_t>(corr.order.size());
  if (corr.cpu_only) {
    fmt::print(stderr, "  no GPU activity (CPU-only profile): {} op instances\n", records);
  } else {
    fmt::print(stderr, "  GPU: {} kernels, {} memcpy, {} memset; {} API calls\n", s.kernels,
               s.memcpys, s.memsets, s.api_calls);
    fmt::print(stderr,
               "  attributed to an op: {} of {} ({:.1f}%); unattributed: {} ({} without a launch "
               "call, {} launched outside every range, {} in ranges that hold no op)\n",
               c.attributed, records, percent(c.attributed, records), records - c.attributed,
               c.without_launch, c.outside_ranges, c.no_op);
  }
  if (c.backward > 0) {
    fmt::print(stderr, "  backward: {} records, {} paired with their forward op, {} unpaired\n",
               c.backward, c.backward_paired, c.backward - c.backward_paired);
  }
  int64_t by_dialect[4] = {0, 0, 0, 0};
  for (const auto& r : trace.ranges) ++by_dialect[static_cast<int>(r.dialect)];
  fmt::print(stderr,
             "  markers: {} ranges, {} marks; pyprof {}, emit_nvtx {}, legacy PyProf {}, other "
             "(user) {}; malformed {}, unclosed {}\n",
             s.ranges, s.marks, by_dialect[static_cast<int>(Dialect::kPyprof)],
             by_dialect[static_cast<int>(Dialect::kEmitNvtx)],
             by_dialect[static_cast<int>(Dialect::kLegacyPyprof)],
             by_dialect[static_cast<int>(Dialect::kUser)], s.malformed_markers, s.ranges_unclosed);
  if (!s.capture_stats.empty()) {
    std::string line;  // zero counters say nothing; the full set is in PYPROF_COLLECTOR_STATS
    for (const auto& [name, value] : s.capture_stats) {
      if (value == 0) continue;
      if (!line.empty()) line += ", ";
      line += fmt::format("{} {}", terminal_safe(name), value);
    }
    fmt::print(stderr, "  capture: {}\n", line.empty() ? "all counters zero" : line);
  }
  if (!trace.cuda_trace.empty() && !trace.cuda_trace.starts_with("on")) {
    fmt::print(stderr, "  note: CUDA activity was not recorded: {}\n",
               terminal_safe(trace.cuda_trace.substr(
                   trace.cuda_trace.find(':') == std::string::npos
                       ? 0
                       : std::min(trace.cuda_trace.size(), trace.cuda_trace.find(':') + 2))));
  }
  if (trace.unfinished_capture) {
    fmt::print(stderr,
               "  warning: capture was not finished (the profiled program was killed, or its disk "
               "filled up?): up to {} events per thread ({} threads seen) may be missing, with "
               "what the collector had not yet written (it writes every half second) and CUDA "
               "records still in CUPTI's buffers\n",
               with_thousands(static_cast<int64_t>(kEventsPerThreadChunk)), trace.capture_threads);
  }
  if (trace.write_failure) {
    const Trace::WriteFailure& f = *trace.write_failure;
    fmt::print(stderr,
               "  warning: capture is incomplete: the collector's writes failed ({}), so {} "
               "events and {} CUDA records were lost; what was written before is kept\n",
               f.message.empty() ? std::to_string(f.failed_transactions) + " failed transactions"
                                 : terminal_safe(f.message),
               with_thousands(f.events_lost), with_thousands(f.cuda_records_lost));
  }
  if (c.ranges_improperly_nested > 0) {
    fmt::print(stderr, "  note: {} ranges overlap a sibling without nesting in it\n",
               c.ranges_improperly_nested);
  }
  if (writer.args_unavailable() > 0) {
    fmt::print(stderr, "  warning: the arguments of {} op ranges could not be read again\n",
               writer.args_unavailable());
  }
  for (const auto& group : trace.warnings) {
    fmt::print(stderr, "  warning: {} ({}x)", group.category, group.count);
    for (const auto& example : group.examples) fmt::print(stderr, "\n    {}", example);
    fmt::print(stderr, "\n");
  }
}

int run(const std::string& path, const std::string& output, bool quiet) {
  PhaseTimer timer;
  SqliteDb db;
  std::string error;
  if (!db.open(path, error)) {
    fmt::print(stderr, "pyprof parse: error: {}\n", error);
    return 1;
  }
  std::unique_ptr<TraceReader> reader;
  if (db.has_table("StringTable")) {
    reader = std::make_unique<NvprofReader>(db);
  } else if (db.has_table("NVTX_EVENTS") || db.has_table("CUPTI_ACTIVITY_KIND_KERNEL") ||
             db.has_table("CUPTI_ACTIVITY_KIND_RUNTIME") || db.has_table("StringIds") ||
             db.has_table("META_DATA_EXPORT") || db.has_table("EXPORT_META_DATA")) {
    reader = std::make_unique<NsysReader>(db);
  } else {
    fmt::print(stderr,
               "pyprof parse: error: {}: no profile tables (expected an Nsight Systems or pyprof "
               "export with NVTX_EVENTS / CUPTI_ACTIVITY_KIND_*, or an nvprof database with "
               "StringTable)\n",
               path);
    return 1;
  }
  // Deliberately never freed: main() exits with _Exit once the output is flushed, because
  // tearing down millions of small allocations costs a second or more at 1M kernels.
  Trace& trace = *new Trace;
  if (!reader->read(trace, error)) {
    fmt::print(stderr, "pyprof parse: error: {}: {}\n", path, terminal_safe(error));
    return 1;
  }
  if (!db.open_note().empty()) trace.warn("interrupted write", db.open_note());
  count_reversed_times(trace);
  if (trace.activities.empty() && trace.ranges.empty()) {
    trace.warn("empty profile", "the database holds no GPU activity and no NVTX range");
  }
  timer.lap("read");
  Correlation& corr = *new Correlation(correlate(trace));
  timer.lap("correlate");

  // Written under a temporary name and renamed when complete (common/output_file.h): a
  // failed run leaves no cut-short net.dict that looks whole, and an older one intact.
  pyprof::OutputFile out;
  if (!out.open(output, error)) {
    fmt::print(stderr, "pyprof parse: error: {}\n", error);
    return 1;
  }
  static char out_buffer[1 << 16];
  std::setvbuf(out.stream(), out_buffer, _IOFBF, sizeof out_buffer);
  RecordWriter writer(out.stream(), trace, corr, *reader);
  if (!writer.write(path)) out.fail(errno);
  if (!out.finish(error)) {
    // The reader closed the pipe (`pyprof parse DB | head`): end quietly, like other tools.
    if (out.broken_pipe()) return pyprof::kBrokenPipeExitStatus;
    fmt::print(stderr, "pyprof parse: error: {}\n", error);
    return 1;
  }
  timer.lap("write");
  if (!quiet) print_summary(path, trace, corr, writer);
  return 0;
}

}  // namespace
}  // namespace pyprof::parse

int main(int argc, char** argv) {
  pyprof::ignore_sigpipe();
  CLI::App app{
      "Attribute every GPU kernel (or, for a CPU-only profile, every op) of an Nsight Systems, "
      "nvprof or pyprof database to its op, module, user ranges and direction.\n"
      "Writes JSON Lines (docs/formats.md §3); a summary goes to standard error.",
      "pyprof parse"};
  std::string path, output;
  bool quiet = false;
  app.add_option("database", path, "the .sqlite database (nsys export, nvprof, pyprof profile)")
      ->required();
  app.add_option("-o,--output", output, "write the records to FILE instead of standard output");
  app.add_flag("-q,--quiet", quiet, "no summary on standard error");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "pyprof parse: error: {}\nRun with --help for usage.\n", e.what());
    return 2;
  }
  int code = pyprof::parse::run(path, output, quiet);
  // Everything is written and flushed: skip freeing millions of small allocations at exit
  // (a second or more on a 1M-kernel profile).
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}
