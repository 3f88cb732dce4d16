// pyprof-parse: `pyprof parse DB [-o FILE]` / `python -m pyprof.parse DB > net.dict`; DB is an
// Nsight Systems / nvprof / pyprof database or a torch.profiler trace (JSON or gzip, told apart
// by content). Several traces (or a folder of them, one per rank) need `-o DIR`: one net.dict
// each.
// Exit codes: 0 ok (also for a capture that was not finished or a trace cut short: what it holds
// is written, and the summary and the header say what may be missing), 1 bad input or
// unwritable output (with several inputs: any of them), 2 usage, 141 standard output closed by
// its reader (`... | head`; nothing printed).
#include <fmt/core.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/cli_help.h"
#include "common/cli_options.h"
#include "common/input_files.h"
#include "common/output_file.h"
#include "common/phase_timer.h"
#include "common/terminal_text.h"
#include "parse/correlate.h"
#include "parse/graph_capture.h"
#include "parse/iterations.h"
#include "parse/json_stream.h"
#include "parse/kineto_reader.h"
#include "parse/memory_events.h"
#include "parse/nsys_reader.h"
#include "parse/nvprof_reader.h"
#include "parse/record_writer.h"
#include "parse/sqlite_db.h"

namespace pyprof::parse {
namespace {

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

// The summary goes into `out` (printed whole, so that parallel parses do not interleave).
void print_summary(fmt::memory_buffer& out, const std::string& path, const Trace& trace,
                   const Correlation& corr, const RecordWriter& writer,
                   const Iterations& iterations, const std::string& step_range,
                   const MemorySummary& memory) {
  const ReadStats& s = trace.stats;
  const CorrelationStats& c = corr.stats;
  // Everything from the file (version, metadata, warning examples) is terminal_safe.
  std::string tool = trace.format + (trace.version.empty() ? "" : " " + trace.version);
  fmt::format_to(std::back_inserter(out), "pyprof parse: {} ({})\n", path, terminal_safe(tool));
  int64_t records = static_cast<int64_t>(corr.order.size());
  if (corr.cpu_only) {
    fmt::format_to(std::back_inserter(out),
                   "  no GPU activity (CPU-only profile): {} op instances\n", records);
  } else {
    fmt::format_to(std::back_inserter(out),
                   "  GPU: {} kernels, {} memcpy, {} memset; {} API calls\n", s.kernels, s.memcpys,
                   s.memsets, s.api_calls);
    fmt::format_to(
        std::back_inserter(out),
        "  attributed to an op: {} of {} ({:.1f}%); unattributed: {} ({} without a launch "
        "call, {} launched outside every range, {} in ranges that hold no op)\n",
        c.attributed, records, percent(c.attributed, records), records - c.attributed,
        c.without_launch, c.outside_ranges, c.no_op);
  }
  if (const int64_t before = c.before_trace[0] + c.before_trace[1] + c.before_trace[2];
      before > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  launched before the trace began: {} ({} kernels, {} memcpy, {} memset; no "
                   "launch call, correlation ids below the trace's first): in no step, marked "
                   "before_trace\n",
                   before, c.before_trace[0], c.before_trace[1], c.before_trace[2]);
  }
  if (c.graph_launched > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  CUDA graphs: graph-launched: {}, {} attributed to their capture{}\n",
                   c.graph_launched, c.graph_captured,
                   c.graph_captured < c.graph_launched
                       ? " (the others to the replay: their nodes were not recorded at capture)"
                       : "");
  }
  if (c.backward > 0) {
    // A leaf tensor's gradient accumulation (torch::autograd::AccumulateGrad) runs in no forward
    // op's node: unpaired by nature, and said so.
    int64_t accumulate_grad = 0;
    for (const Attribution& a : corr.attributions) {
      if (a.dir != Direction::kBackward || a.paired || a.node < 0) continue;
      accumulate_grad +=
          trace.pool.get(trace.ranges[a.node].name).find("AccumulateGrad") != std::string_view::npos
              ? 1
              : 0;
    }
    const int64_t unpaired = c.backward - c.backward_paired;
    std::string why;
    if (accumulate_grad > 0) {
      why = fmt::format(
          " ({}AccumulateGrad: a parameter's gradient accumulation, which has no "
          "forward op{})",
          accumulate_grad == unpaired ? "all " : fmt::format("{} ", accumulate_grad),
          accumulate_grad == unpaired ? "; normal" : "");
    }
    fmt::format_to(std::back_inserter(out),
                   "  backward: {} records, {} paired with their forward op, {} unpaired{}\n",
                   c.backward, c.backward_paired, unpaired, why);
  }
  if (c.declared_pairs > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  fwdbwd flows: {} checked against the pairing, {} disagree\n",
                   c.declared_pairs, c.declared_pairs_disagree);
  }
  // The file's own ranges: a --graph-capture join appends the capture's (graph_capture.h).
  const size_t own_ranges = std::min(trace.ranges.size(), trace.imported_ranges_begin);
  int64_t by_dialect[5] = {0, 0, 0, 0, 0};
  for (size_t i = 0; i < own_ranges; ++i) ++by_dialect[static_cast<int>(trace.ranges[i].dialect)];
  if (trace.format == "kineto") {
    std::string line;
    for (const auto& [category, n] : trace.event_counts) {
      if (!line.empty()) line += ", ";
      line += fmt::format("{} {}", terminal_safe(category), with_thousands(n));
    }
    fmt::format_to(std::back_inserter(out), "  trace events: {} ({})\n",
                   with_thousands(trace.trace_events), line);
    if (trace.distributed && trace.distributed->rank >= 0) {
      const Trace::Distributed& d = *trace.distributed;
      fmt::format_to(std::back_inserter(out), "  rank {}{}{}\n", d.rank,
                     d.world_size >= 0 ? fmt::format(" of {}", d.world_size) : "",
                     d.backend.empty() ? "" : " (" + terminal_safe(d.backend) + ")");
    }
    // Kineto ranges are ops, backward nodes and modules; the rest are user ranges.
    int64_t ops_and_nodes = 0;
    for (size_t i = 0; i < own_ranges; ++i) {
      const RangeRecord& r = trace.ranges[i];
      ops_and_nodes += r.kind == MarkerKind::kOp || r.kind == MarkerKind::kBackwardNode;
    }
    fmt::format_to(std::back_inserter(out),
                   "  ranges: {} ops and backward nodes, {} others (modules, record_function); "
                   "skipped events {}\n",
                   ops_and_nodes, s.ranges - ops_and_nodes, s.rows_skipped);
  } else {
    fmt::format_to(
        std::back_inserter(out),
        "  markers: {} ranges, {} marks; pyprof {}, emit_nvtx {}, legacy PyProf {}, other "
        "(user) {}; malformed {}, unclosed {}\n",
        s.ranges, s.marks, by_dialect[static_cast<int>(Dialect::kPyprof)],
        by_dialect[static_cast<int>(Dialect::kEmitNvtx)],
        by_dialect[static_cast<int>(Dialect::kLegacyPyprof)],
        by_dialect[static_cast<int>(Dialect::kUser)], s.malformed_markers, s.ranges_unclosed);
  }
  if (s.ranges_unclosed > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  note: {} ranges were never closed{}: they enclose nothing, so what ran after "
                   "their start is attributed to the ranges around it\n",
                   with_thousands(s.ranges_unclosed),
                   s.ranges_closed_by_session > 0
                       ? fmt::format(" ({} of them ended only by the session's end)",
                                     with_thousands(s.ranges_closed_by_session))
                       : "");
  }
  fmt::format_to(std::back_inserter(out), "  iterations: {}\n",
                 terminal_safe(iteration_summary(iterations, step_range)));
  if (const std::string line = memory_summary_line(trace, memory); !line.empty()) {
    fmt::format_to(std::back_inserter(out), "  {}\n", terminal_safe(line));
  }
  if (!s.capture_stats.empty()) {
    std::string line;  // zero counters say nothing; the full set is in PYPROF_COLLECTOR_STATS
    for (const auto& [name, value] : s.capture_stats) {
      if (value == 0) continue;
      if (!line.empty()) line += ", ";
      line += fmt::format("{} {}", terminal_safe(name), value);
    }
    fmt::format_to(std::back_inserter(out), "  capture: {}\n",
                   line.empty() ? "all counters zero" : line);
  }
  if (!trace.cuda_trace.empty() && !trace.cuda_trace.starts_with("on")) {
    fmt::format_to(std::back_inserter(out), "  note: CUDA activity was not recorded: {}\n",
                   terminal_safe(trace.cuda_trace.substr(
                       trace.cuda_trace.find(':') == std::string::npos
                           ? 0
                           : std::min(trace.cuda_trace.size(), trace.cuda_trace.find(':') + 2))));
  }
  if (trace.unfinished_capture) {
    fmt::format_to(
        std::back_inserter(out),
        "  warning: capture was not finished (the profiled program was killed, or its disk "
        "filled up?): up to {} events per thread ({} threads seen) may be missing, with "
        "what the collector had not yet written (it writes every half second) and CUDA "
        "records still in CUPTI's buffers\n",
        with_thousands(static_cast<int64_t>(kEventsPerThreadChunk)), trace.capture_threads);
  }
  if (trace.write_failure) {
    const Trace::WriteFailure& f = *trace.write_failure;
    fmt::format_to(std::back_inserter(out),
                   "  warning: capture is incomplete: the collector's writes failed ({}), so {} "
                   "events and {} CUDA records were lost; what was written before is kept\n",
                   f.message.empty()
                       ? std::to_string(f.failed_transactions) + " failed transactions"
                       : terminal_safe(f.message),
                   with_thousands(f.events_lost), with_thousands(f.cuda_records_lost));
  }
  if (c.ranges_improperly_nested > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  note: {} ranges overlap a sibling without nesting in it\n",
                   c.ranges_improperly_nested);
  }
  if (writer.args_unavailable() > 0) {
    fmt::format_to(std::back_inserter(out),
                   "  warning: the arguments of {} op ranges could not be read again\n",
                   writer.args_unavailable());
  }
  for (const auto& group : trace.warnings) {
    fmt::format_to(std::back_inserter(out), "  warning: {} ({}x)", group.category, group.count);
    for (const auto& example : group.examples)
      fmt::format_to(std::back_inserter(out), "\n    {}", example);
    fmt::format_to(std::back_inserter(out), "\n");
  }
}

// The first bytes of a file, to tell a database from a JSON trace by content.
std::string file_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);
  return std::string(head, static_cast<size_t>(in.gcount()));
}

struct ParseOptions {
  bool quiet = false;
  bool ranges = false;
  bool full_records = false;
  std::string step_range;
  std::string graph_capture;  // --graph-capture: the trace of the graphs' capture
};

// The reader for the file at `path` (a database opened in `db`, or a torch.profiler trace);
// null with `error` when it is neither. `json`: it is a trace, not a database.
std::unique_ptr<TraceReader> open_reader(const std::string& path, SqliteDb& db, bool& json,
                                         std::string& error) {
  // SQLite reads at random, and a trace's first bytes are read before the whole of it: a FIFO
  // or a device is refused rather than waited on.
  if (!is_regular_input(path, "parse reads a database or trace file (save it to a file first)",
                        error)) {
    error = terminal_safe(error);
    return nullptr;
  }
  const std::string head = file_head(path);
  json =
      !head.starts_with(std::string_view("SQLite format 3\0", 16)) && looks_like_json_or_gzip(head);
  if (json) return std::make_unique<KinetoReader>(path);
  if (!db.open(path, error)) {
    if (error.find("not an SQLite") != std::string::npos) {
      error += " nor a torch.profiler JSON trace (plain or gzip)";
    }
    return nullptr;
  }
  if (db.has_table("StringTable")) return std::make_unique<NvprofReader>(db);
  if (db.has_table("NVTX_EVENTS") || db.has_table("CUPTI_ACTIVITY_KIND_KERNEL") ||
      db.has_table("CUPTI_ACTIVITY_KIND_RUNTIME") || db.has_table("StringIds") ||
      db.has_table("META_DATA_EXPORT") || db.has_table("EXPORT_META_DATA")) {
    return std::make_unique<NsysReader>(db);
  }
  error = path +
          ": no profile tables (expected an Nsight Systems or pyprof export with "
          "NVTX_EVENTS / CUPTI_ACTIVITY_KIND_*, or an nvprof database with StringTable)";
  return nullptr;
}

// --graph-capture: reads the capture trace and joins `trace`'s graph replays to it.
bool join_capture_trace(const std::string& path, Trace& trace, GraphJoinStats& stats,
                        std::string& error) {
  SqliteDb db;
  bool json = false;
  std::unique_ptr<TraceReader> reader = open_reader(path, db, json, error);
  if (!reader) return false;
  Trace capture;
  if (!reader->read(capture, error)) return false;
  return join_graph_capture(trace, capture, *reader, stats, error);
}

// "net.rank3.sqlite", "net.rank3.pid77.sqlite" -> 3; -1 when the name says no rank.
int64_t rank_of_file_name(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  for (size_t at = name.find(".rank"); at != std::string::npos; at = name.find(".rank", at + 1)) {
    size_t end = at + 5;
    int64_t v = 0;
    while (end < name.size() && end - at - 5 < 9 && name[end] >= '0' && name[end] <= '9') {
      v = v * 10 + (name[end++] - '0');
    }
    if (end > at + 5 && (end == name.size() || name[end] == '.')) return v;
  }
  return -1;
}

// Parses one input into `output`. The summary (and any error) goes into `messages`. With
// `keep_in_memory` the trace is deliberately never freed: a single parse exits with _Exit once
// its output is flushed, because tearing down millions of small allocations costs a second or
// more at 1M kernels; several parses in one process free each trace when done.
int run(const std::string& path, const std::string& output, const ParseOptions& options,
        bool keep_in_memory, fmt::memory_buffer& messages) {
  auto error_line = [&](const std::string& text) {
    fmt::format_to(std::back_inserter(messages), "pyprof parse: error: {}\n", text);
    return 1;
  };
  PhaseTimer timer("pyprof parse", "PYPROF_PARSE_TIMING");
  SqliteDb db;
  std::string error;
  bool json = false;
  std::unique_ptr<TraceReader> reader = open_reader(path, db, json, error);
  if (!reader) return error_line(error);
  std::unique_ptr<Trace> trace_owner = std::make_unique<Trace>();
  Trace& trace = *trace_owner;
  if (keep_in_memory) trace_owner.release();
  if (!reader->read(trace, error)) return error_line(path + ": " + terminal_safe(error));
  if (!db.open_note().empty()) trace.warn("interrupted write", db.open_note());
  count_reversed_times(trace);
  resolve_compiled_kernels(trace);
  if (trace.activities.empty() && trace.ranges.empty()) {
    trace.warn("empty profile", json ? "the trace holds no op, range or GPU activity"
                                     : "the database holds no GPU activity and no NVTX range");
  }
  // A rank the file does not state comes from its name (pyprof profile's NAME.rank<R>.sqlite,
  // or a copy named that way).
  if (!trace.distributed || trace.distributed->rank < 0) {
    if (int64_t rank = rank_of_file_name(path); rank >= 0) {
      if (!trace.distributed) trace.distributed.emplace();
      trace.distributed->rank = rank;
    }
  }
  timer.lap("read");
  std::optional<GraphJoinStats> graph_join;
  if (!options.graph_capture.empty()) {
    graph_join.emplace();
    if (!join_capture_trace(options.graph_capture, trace, *graph_join, error)) {
      return error_line("--graph-capture " + options.graph_capture + ": " + terminal_safe(error));
    }
    timer.lap("graph capture");
  }
  std::unique_ptr<Correlation> corr_owner = std::make_unique<Correlation>(correlate(trace));
  Correlation& corr = *corr_owner;
  if (keep_in_memory) corr_owner.release();
  timer.lap("correlate");
  const Iterations iterations = detect_iterations(trace, corr, options.step_range);
  timer.lap("iterations");
  const MemorySummary memory = check_memory_events(trace, corr, &iterations);

  // Written under a temporary name and renamed when complete (common/output_file.h): a
  // failed run leaves no cut-short net.dict that looks whole, and an older one intact.
  std::vector<char> out_buffer(size_t{1} << 16);
  pyprof::OutputFile out;
  if (!out.open(output, error)) return error_line(error);
  std::setvbuf(out.stream(), out_buffer.data(), _IOFBF, out_buffer.size());
  RecordWriter writer(out.stream(), trace, corr, *reader);
  writer.set_write_ranges(options.ranges);
  writer.set_full_records(options.full_records);
  writer.set_iterations(&iterations);
  writer.set_memory(&memory);
  if (!writer.write(path)) out.fail(errno);
  if (!out.finish(error)) {
    // The reader closed the pipe (`pyprof parse DB | head`): end quietly, like other tools.
    if (out.broken_pipe()) return pyprof::kBrokenPipeExitStatus;
    return error_line(error);
  }
  timer.lap("write");
  if (!options.quiet) {
    print_summary(messages, path, trace, corr, writer, iterations, options.step_range, memory);
    if (graph_join) {
      fmt::format_to(std::back_inserter(messages), "  graph capture {}: {}\n",
                     terminal_safe(options.graph_capture), graph_join_summary(*graph_join));
    }
  }
  return 0;
}

}  // namespace
}  // namespace pyprof::parse

namespace pyprof::parse {
namespace {

bool is_input_file_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".sqlite");
}

// "rank0.pt.trace.json.gz" -> "rank0.pt.trace", "net.rank3.sqlite" -> "net.rank3"
std::string stem_of_input(const std::string& name) {
  std::string stem = name;
  for (const char* suffix : {".gz", ".json", ".sqlite"}) {
    if (stem.ends_with(suffix)) stem.resize(stem.size() - std::strlen(suffix));
  }
  return stem;
}

// Expands folders (their *.json / *.json.gz / *.sqlite files, by name) and checks the outputs:
// one input writes to -o FILE or standard output; several need -o DIR and are parsed `jobs` at a
// time, each on its own thread.
int run_all(const std::vector<std::string>& inputs, const std::string& output,
            const ParseOptions& options, int jobs) {
  namespace fs = std::filesystem;
  std::vector<std::string> files, failed_inputs;
  // An input that fails (a folder that holds no trace, a file that cannot be read) does not
  // stop the others: each is said and counted.
  pyprof::expand_input_folders(inputs, is_input_file_name,
                               "trace files (*.sqlite, *.json, *.json.gz; "
                               "tensorboard_trace_handler writes *.pt.trace.json)",
                               files, failed_inputs);
  for (const std::string& failure : failed_inputs) {
    fmt::print(stderr, "pyprof parse: error: {}\n", terminal_safe(failure));
  }
  if (files.empty()) return 1;
  pyprof::protect_inputs(files);
  if (inputs.size() == 1 && !pyprof::is_input_folder(inputs[0])) {
    fmt::memory_buffer messages;
    int code = run(files[0], output, options, /*keep_in_memory=*/true, messages);
    std::fwrite(messages.data(), 1, messages.size(), stderr);
    return code;
  }
  if ((output.empty() || output == "-") && inputs.size() == 2 &&
      (inputs[1].ends_with(".dict") || !fs::exists(inputs[1]))) {
    // `pyprof parse net.sqlite net.dict`: an output named where an input goes.
    fmt::print(stderr,
               "pyprof parse: error: {} is {}: to write the net.dict there, give -o (pyprof parse "
               "{} -o {})\nRun with --help for usage.\n",
               inputs[1], fs::exists(inputs[1]) ? "parse's output, not a trace" : "no file",
               inputs[0], inputs[1]);
    return 2;
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
  if (ec || !pyprof::is_input_folder(output)) {
    fmt::print(stderr, "pyprof parse: error: cannot create the output folder {}: {}\n", output,
               ec ? ec.message() : "a file of that name exists");
    return 1;
  }
  int status = 0;
  std::vector<std::pair<std::string, std::string>> work;  // input, output
  std::vector<std::string> written;
  for (const std::string& file : files) {
    std::string name = stem_of_input(fs::path(file).filename().string()) + ".dict";
    if (std::find(written.begin(), written.end(), name) != written.end()) {
      fmt::print(stderr, "pyprof parse: error: two inputs would both write {}; skipping {}\n", name,
                 file);
      status = 1;
      continue;
    }
    written.push_back(name);
    work.emplace_back(file, (fs::path(output) / name).string());
  }
  // Each parse holds its whole trace in memory, so `jobs` bounds the memory as well as the
  // cores; one failed input does not stop the others.
  std::atomic<size_t> next{0};
  std::atomic<bool> broken_pipe{false};
  std::atomic<int> failed{0};
  std::mutex print_mutex;
  auto worker = [&] {
    for (size_t k = next++; k < work.size() && !broken_pipe; k = next++) {
      fmt::memory_buffer messages;
      int code = 1;
      try {
        code = run(work[k].first, work[k].second, options, /*keep_in_memory=*/false, messages);
      } catch (const std::bad_alloc&) {
        fmt::format_to(std::back_inserter(messages),
                       "pyprof parse: error: {}: out of memory (fewer parses at once: -j)\n",
                       work[k].first);
      } catch (const std::exception& e) {  // one input's failure does not stop the others
        fmt::format_to(std::back_inserter(messages), "pyprof parse: error: {}: {}\n", work[k].first,
                       e.what());
      }
      if (code == pyprof::kBrokenPipeExitStatus) broken_pipe = true;
      if (code != 0) ++failed;
      if (!options.quiet && code == 0) {
        fmt::format_to(std::back_inserter(messages), "  -> {}\n", work[k].second);
      }
      std::lock_guard<std::mutex> lock(print_mutex);
      std::fwrite(messages.data(), 1, messages.size(), stderr);
    }
  };
  const size_t threads = std::min(work.size(), static_cast<size_t>(std::max(jobs, 1)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (broken_pipe) return pyprof::kBrokenPipeExitStatus;
  if (!options.quiet && work.size() + failed_inputs.size() > 1) {
    fmt::print(stderr, "pyprof parse: {} of {} inputs parsed into {}\n",
               work.size() - static_cast<size_t>(failed.load()),
               files.size() + failed_inputs.size(), output);
  }
  return failed > 0 || !failed_inputs.empty() ? 1 : status;
}

}  // namespace
}  // namespace pyprof::parse

int main(int argc, char** argv) {
  pyprof::guard_outputs();
#ifdef __GLIBC__
  // glibc raises its mmap threshold to the size of each large block freed, up to 32 MiB; from
  // then on the arrays below that size (a chunk's ranges, the sweep's buffers) come from the
  // heap, and once freed stay resident under the next phase's. A fixed threshold keeps every
  // array of 4 MiB or more in a mapping of its own, given back when it is freed: the 1M-kernel
  // peak 728 -> 704 MB, and 933 MB where a record size put one freed array just under 32 MiB.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
  CLI::App app{
      "Attribute every GPU kernel (or, for a CPU-only profile, every op) of an Nsight Systems, "
      "nvprof or pyprof database, or of a torch.profiler (Kineto) trace, to its op, module, user "
      "ranges and direction; so too each allocation and free the input recorded (pyprof's "
      "memory capture, torch.profiler's profile_memory), as a memory line.\n"
      "Writes JSON Lines (docs/formats.md §3); a summary goes to standard error.",
      "pyprof parse"};
  app.formatter(std::make_shared<pyprof::WrappingFormatter>());
  std::vector<std::string> inputs;
  std::string output;
  bool quiet = false;
  app.add_option("input", inputs,
                 "the .sqlite database (nsys export, nvprof, pyprof profile), or a torch.profiler "
                 "trace (.json or .json.gz, told apart by content); several inputs or a folder "
                 "of them (*.sqlite, *.json, *.json.gz: one per rank, as `pyprof profile` under "
                 "torchrun or tensorboard_trace_handler write them) need -o DIR")
      ->required();
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_option("-j,--jobs", jobs,
                 "with several inputs: parse N at once, each on its own thread (default: the "
                 "number of cores; each parse holds its trace in memory, so fewer bound the "
                 "memory)")
      ->check(CLI::PositiveNumber);
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
  std::string graph_capture;
  app.add_option("--graph-capture", graph_capture,
                 "the trace of the CUDA/HIP graphs' capture, when INPUT traced their replay "
                 "apart (serving engines: capture once, replay; the replay shows only "
                 "cudaGraphLaunch/hipGraphLaunch): each replay's kernels are joined, by order "
                 "and checked by name, to the kernels launched inside their ops at capture, and "
                 "get their op, module and shapes; every mismatch is counted in the summary "
                 "(docs/formats.md §4.2)")
      ->option_text("CAPTURE");
  if (int status = pyprof::list_options_if_asked(app, argc, argv); status >= 0) return status;
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
    pyprof::parse::ParseOptions options;
    options.quiet = quiet;
    options.ranges = ranges;
    options.full_records = full_records;
    options.step_range = step_range;
    options.graph_capture = graph_capture;
    code = pyprof::parse::run_all(inputs, output, options, jobs);
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
