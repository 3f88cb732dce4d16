// pyprof-parse: `pyprof parse DB [-o FILE]` / `python -m pyprof.parse DB > net.dict`; DB is an
// Nsight Systems / nvprof / pyprof database or a torch.profiler trace (JSON or gzip, told apart
// by content). Several traces (or a folder of them, one per rank) need `-o DIR`: one net.dict
// each.
// Exit codes: 0 ok (also for a capture that was not finished or a trace cut short: what it holds
// is written, and the summary and the header say what may be missing), 1 bad input or
// unwritable output (with several inputs: any of them), 2 usage, 141 standard output closed by
// its reader (`... | head`; nothing printed).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "common/output_file.h"
#include "common/terminal_text.h"
#include "parse/correlate.h"
#include "parse/iterations.h"
#include "parse/json_stream.h"
#include "parse/kineto_reader.h"
#include "parse/nsys_reader.h"
#include "parse/nvprof_reader.h"
#include "parse/record_writer.h"
#include "parse/sqlite_db.h"

namespace pyprof::parse {
namespace {

// PYPROF_PARSE_TIMING=1 prints how long each phase took, and the peak resident memory so far
// (for benchmarks/parse_bench.py and docs/benchmarks.md §4).
class PhaseTimer {
 public:
  PhaseTimer() : enabled_(std::getenv("PYPROF_PARSE_TIMING") != nullptr) {}
  void lap(const char* phase) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    fmt::print(stderr, "pyprof parse: {:<10} {:.3f} s, peak RSS {} MB\n", phase,
               std::chrono::duration<double>(now - last_).count(), peak_rss_mb());
    last_ = now;
  }

 private:
  // VmHWM from /proc/self/status; -1 where there is none.
  static int64_t peak_rss_mb() {
    std::FILE* status = std::fopen("/proc/self/status", "r");
    if (!status) return -1;
    char line[256];
    int64_t kb = -1;
    while (std::fgets(line, sizeof line, status)) {
      if (std::sscanf(line, "VmHWM: %" SCNd64 " kB", &kb) == 1) break;
    }
    std::fclose(status);
    return kb < 0 ? -1 : kb / 1024;
  }

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
                   const RecordWriter& writer, const Iterations& iterations,
                   const std::string& step_range) {
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
  if (c.declared_pairs > 0) {
    fmt::print(stderr, "  fwdbwd flows: {} checked against the pairing, {} disagree\n",
               c.declared_pairs, c.declared_pairs_disagree);
  }
  int64_t by_dialect[5] = {0, 0, 0, 0, 0};
  for (const auto& r : trace.ranges) ++by_dialect[static_cast<int>(r.dialect)];
  if (trace.format == "kineto") {
    std::string line;
    for (const auto& [category, n] : trace.event_counts) {
      if (!line.empty()) line += ", ";
      line += fmt::format("{} {}", terminal_safe(category), with_thousands(n));
    }
    fmt::print(stderr, "  trace events: {} ({})\n", with_thousands(trace.trace_events), line);
    if (trace.distributed && trace.distributed->rank >= 0) {
      const Trace::Distributed& d = *trace.distributed;
      fmt::print(stderr, "  rank {}{}{}\n", d.rank,
                 d.world_size >= 0 ? fmt::format(" of {}", d.world_size) : "",
                 d.backend.empty() ? "" : " (" + terminal_safe(d.backend) + ")");
    }
    // Kineto ranges are ops, backward nodes and modules; the rest are user ranges.
    int64_t ops_and_nodes = 0;
    for (const RangeRecord& r : trace.ranges) {
      ops_and_nodes += r.kind == MarkerKind::kOp || r.kind == MarkerKind::kBackwardNode;
    }
    fmt::print(stderr,
               "  ranges: {} ops and backward nodes, {} others (modules, record_function); "
               "skipped events {}\n",
               ops_and_nodes, s.ranges - ops_and_nodes, s.rows_skipped);
  } else {
    fmt::print(stderr,
               "  markers: {} ranges, {} marks; pyprof {}, emit_nvtx {}, legacy PyProf {}, other "
               "(user) {}; malformed {}, unclosed {}\n",
               s.ranges, s.marks, by_dialect[static_cast<int>(Dialect::kPyprof)],
               by_dialect[static_cast<int>(Dialect::kEmitNvtx)],
               by_dialect[static_cast<int>(Dialect::kLegacyPyprof)],
               by_dialect[static_cast<int>(Dialect::kUser)], s.malformed_markers,
               s.ranges_unclosed);
  }
  fmt::print(stderr, "  iterations: {}\n",
             terminal_safe(iteration_summary(iterations, step_range)));
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

// The first bytes of a file, to tell a database from a JSON trace by content.
std::string file_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);
  return std::string(head, static_cast<size_t>(in.gcount()));
}

int run(const std::string& path, const std::string& output, bool quiet, bool ranges,
        bool full_records, const std::string& step_range) {
  PhaseTimer timer;
  SqliteDb db;
  std::string error;
  std::unique_ptr<TraceReader> reader;
  const std::string head = file_head(path);
  const bool json =
      !head.starts_with(std::string_view("SQLite format 3\0", 16)) && looks_like_json_or_gzip(head);
  if (json) {
    reader = std::make_unique<KinetoReader>(path);
  } else if (!db.open(path, error)) {
    if (error.find("not an SQLite") != std::string::npos) {
      error += " nor a torch.profiler JSON trace (plain or gzip)";
    }
    fmt::print(stderr, "pyprof parse: error: {}\n", error);
    return 1;
  } else if (db.has_table("StringTable")) {
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
    trace.warn("empty profile", json ? "the trace holds no op, range or GPU activity"
                                     : "the database holds no GPU activity and no NVTX range");
  }
  timer.lap("read");
  Correlation& corr = *new Correlation(correlate(trace));
  timer.lap("correlate");
  const Iterations iterations = detect_iterations(trace, corr, step_range);
  timer.lap("iterations");

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
  writer.set_write_ranges(ranges);
  writer.set_full_records(full_records);
  writer.set_iterations(&iterations);
  if (!writer.write(path)) out.fail(errno);
  if (!out.finish(error)) {
    // The reader closed the pipe (`pyprof parse DB | head`): end quietly, like other tools.
    if (out.broken_pipe()) return pyprof::kBrokenPipeExitStatus;
    fmt::print(stderr, "pyprof parse: error: {}\n", error);
    return 1;
  }
  timer.lap("write");
  if (!quiet) print_summary(path, trace, corr, writer, iterations, step_range);
  return 0;
}

}  // namespace
}  // namespace pyprof::parse

namespace pyprof::parse {
namespace {

bool is_trace_file_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

// "rank0.pt.trace.json.gz" -> "rank0.pt.trace"
std::string stem_of_trace(const std::string& name) {
  std::string stem = name;
  for (const char* suffix : {".gz", ".json"}) {
    if (stem.ends_with(suffix)) stem.resize(stem.size() - std::strlen(suffix));
  }
  return stem;
}

// Expands folders (their *.json / *.json.gz files, by name) and checks the outputs: one input
// writes to -o FILE or standard output; several need -o DIR.
int run_all(const std::vector<std::string>& inputs, const std::string& output, bool quiet,
            bool ranges, bool full_records, const std::string& step_range) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(input, ec)) {
      std::error_code type_ec;
      if (entry.is_regular_file(type_ec) && is_trace_file_name(entry.path().filename().string())) {
        found.push_back(entry.path().string());
      }
    }
    if (ec) {
      fmt::print(stderr, "pyprof parse: error: cannot list {}: {}\n", input, ec.message());
      return 1;
    }
    if (found.empty()) {
      fmt::print(stderr,
                 "pyprof parse: error: {} holds no trace files (*.json, *.json.gz; "
                 "tensorboard_trace_handler writes *.pt.trace.json)\n",
                 input);
      return 1;
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.size() == 1 && !(inputs.size() == 1 && fs::is_directory(inputs[0]))) {
    return run(files[0], output, quiet, ranges, full_records, step_range);
  }
  if (output.empty() || output == "-") {
    fmt::print(stderr,
               "pyprof parse: error: {} traces: give -o DIR (one net.dict per trace is written "
               "there, named after it)\nRun with --help for usage.\n",
               files.size());
    return 2;
  }
  std::error_code ec;
  fs::create_directories(output, ec);
  if (ec || !fs::is_directory(output)) {
    fmt::print(stderr, "pyprof parse: error: cannot create the output folder {}: {}\n", output,
               ec ? ec.message() : "a file of that name exists");
    return 1;
  }
  int status = 0;
  std::vector<std::string> written;
  for (const std::string& file : files) {
    std::string name = stem_of_trace(fs::path(file).filename().string()) + ".dict";
    if (std::find(written.begin(), written.end(), name) != written.end()) {
      fmt::print(stderr, "pyprof parse: error: two inputs would both write {}; skipping {}\n", name,
                 file);
      status = 1;
      continue;
    }
    written.push_back(name);
    const std::string target = (fs::path(output) / name).string();
    int code = run(file, target, quiet, ranges, full_records, step_range);
    if (code == pyprof::kBrokenPipeExitStatus) return code;
    if (code != 0) status = 1;
    if (!quiet && code == 0) fmt::print(stderr, "  -> {}\n", target);
  }
  return status;
}

}  // namespace
}  // namespace pyprof::parse

int main(int argc, char** argv) {
  pyprof::ignore_sigpipe();
  CLI::App app{
      "Attribute every GPU kernel (or, for a CPU-only profile, every op) of an Nsight Systems, "
      "nvprof or pyprof database, or of a torch.profiler (Kineto) trace, to its op, module, user "
      "ranges and direction.\n"
      "Writes JSON Lines (docs/formats.md §3); a summary goes to standard error.",
      "pyprof parse"};
  std::vector<std::string> inputs;
  std::string output;
  bool quiet = false;
  app.add_option("input", inputs,
                 "the .sqlite database (nsys export, nvprof, pyprof profile), or a torch.profiler "
                 "trace (.json or .json.gz, told apart by content); several traces or a folder "
                 "of them (tensorboard_trace_handler's, one per rank) need -o DIR")
      ->required();
  app.add_option("-o,--output", output,
                 "write the records to FILE instead of standard output; with several traces, "
                 "the folder DIR that gets one NAME.dict per trace");
  app.add_flag("-q,--quiet", quiet, "no summary on standard error");
  bool ranges = false;
  app.add_flag("--ranges", ranges,
               "also write the spans of the trace's ranges (ops, backward nodes, modules, user "
               "ranges) as \"kind\":\"range\" lines after the records, for `pyprof export` "
               "(docs/formats.md §3.1)");
  bool full_records = false;
  app.add_flag("--full-records", full_records,
               "write every record's arguments in full (net.dict version 1) instead of once per "
               "distinct value on an \"kind\":\"args\" line that records refer to "
               "(docs/formats.md §3)");
  std::string step_range;
  app.add_option("--step-range", step_range,
                 "the user ranges that are the program's iterations: ranges named NAME, or NAME "
                 "followed by a number (\"step\", \"step 3\", \"step#3\", \"step_3\"); "
                 "without it, torch.profiler's ProfilerStep#N ranges, else ranges named step / "
                 "iteration / iter / train_step (numbered or not), else Optimizer.step# scopes, "
                 "else the repeating outermost module forward (docs/formats.md §3)")
      ->option_text("NAME");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "pyprof parse: error: {}\nRun with --help for usage.\n", e.what());
    return 2;
  }
  if (app.count("--step-range") > 0 && step_range.empty()) {
    fmt::print(
        stderr,
        "pyprof parse: error: --step-range needs a range name\nRun with --help for usage.\n");
    return 2;
  }
  int code = 1;
  try {
    code = pyprof::parse::run_all(inputs, output, quiet, ranges, full_records, step_range);
  } catch (const std::bad_alloc&) {
    // A trace whose records do not fit the memory the process may use (ulimit -v, a cgroup).
    fmt::print(stderr,
               "pyprof parse: error: out of memory (the trace's records need more memory than "
               "this process may use: see ulimit -v)\n");
  } catch (const std::exception& e) {  // a thread that cannot start, and the like
    fmt::print(stderr, "pyprof parse: error: {}\n", e.what());
  }
  // Everything is written and flushed: skip freeing millions of small allocations at exit
  // (a second or more on a 1M-kernel profile).
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}
