// pyprof-prof: `pyprof prof [options] [net.dict]` / `python -m pyprof.prof ...`.
// Reads parse's JSON Lines (a file or standard input), computes FLOPs, bytes and Tensor Core
// use, and prints the per-kernel table (PyProf's columns and ours) or DLProf-style reports.
// Exit codes: 0 ok, 1 bad input or unwritable output, 2 usage, 141 standard output closed by
// its reader (`... | head`; nothing printed).
#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "common/cli_help.h"
#include "common/cli_options.h"
#include "common/dtypes.h"
#include "common/input_files.h"
#include "common/ordered_chunks.h"
#include "common/output_file.h"
#include "common/phase_timer.h"
#include "common/suggest.h"
#include "common/terminal_text.h"
#include "models/op_model.h"
#include "models/user_models.h"
#include "prof/device_peaks.h"
#include "prof/iterations.h"
#include "prof/load_profile.h"
#include "prof/ranks.h"
#include "prof/records.h"
#include "prof/reports.h"
#include "prof/table.h"
#include "prof/tensor_cores.h"
#include "prof/unmodelled_ops.h"

namespace pyprof::prof {
namespace {

int fail(const std::string& message, int code) {
  fmt::print(stderr, "pyprof prof: error: {}\n", message);
  return code;
}

// Every output committed, or none (common/output_file.h); a reader that closed the pipe ends
// prof without a word, like other tools.
int finish_outputs(std::vector<pyprof::OutputFile>& outputs) {
  std::string error;
  int status = pyprof::commit_all(outputs, error);
  return status == 1 ? fail(error, 1) : status;
}

ReadOptions options_of(bool no_tf32) {
  ReadOptions options;
  options.allow_tf32 = !no_tf32;
  return options;
}

// One rank's net.dict loaded (read, costed, its iterations selected) and reduced to its
// summary; the records are freed before the next rank is read. What there is to say about it
// goes to `messages`, printed in the ranks' order once all are read.
bool summarize_file(const std::string& path, const LoadRequest& request, RankSummary& summary,
                    std::string& messages, LoadError& error) {
  ReadResult data;
  if (!load_profile(path, request, data, error)) return false;
  messages = load_messages("prof", path, data);
  summary = summarize_rank(data);
  if (summary.source.empty()) summary.source = path;
  return true;
}

}  // namespace
}  // namespace pyprof::prof

int main(int argc, char** argv) {
  using namespace pyprof::prof;
  pyprof::guard_outputs();
  CLI::App app{
      "FLOPs, bytes, arithmetic intensity and Tensor Core use per kernel (or per op on a "
      "CPU-only profile) from `pyprof parse` output, as PyProf's columns or DLProf-style "
      "reports. Conventions: a multiply-add is 2 FLOPs; bytes are the ideal DRAM traffic "
      "(docs/ops.md).",
      "pyprof prof"};
  app.formatter(std::make_shared<pyprof::WrappingFormatter>());
  std::string columns, reports, formats = "text", output, error_text;
  int width = 0, depth = 0;
  bool csv = false, json = false, no_tf32 = false, raw = false;
  std::vector<std::string> inputs;
  app.add_option("dict", inputs,
                 "parse output (JSON Lines; `pyprof prof` also takes a database or a trace "
                 "and runs `pyprof parse` first); - or nothing: standard input. --report ranks "
                 "takes one net.dict per rank, or folders of them (*.dict; `pyprof parse -o "
                 "DIR` of a job's per-rank databases)");
  app.add_option("-c,--columns", columns,
                 "columns to print, comma-separated, or 'all' (default "
                 "idx,dir,sub,mod,op,kernel,params,sil)");
  app.add_option("-w,--width", width,
                 "text reports: fit N characters, wrapping long text and leaving out the least "
                 "needed columns, said under each table (default: the terminal's width, else "
                 "$COLUMNS, else 120; 0: no limit); the per-record table: PyProf's fixed-width "
                 "columns fitted to N characters")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--csv", csv, "CSV (every field quoted)");
  app.add_flag("--json", json, "JSON Lines, one object per record");
  app.add_option("--report", reports,
                 "reports instead of the per-record table: " + report_list_text() +
                     " (comma-separated), or all (every report of one profile: ranks aside)");
  app.add_option("--formats", formats,
                 "report formats: text, csv, json (comma-separated; several need -o PREFIX)");
  app.add_flag("--raw", raw,
               "text reports: raw numbers (integer ns, FLOPs and bytes, TFLOP/s, GB/s) as CSV "
               "and JSON hold them, instead of human units (12.3 µs, 17.3 MFLOP)");
  int64_t top = 0;
  app.add_option("--top", top,
                 "reports instance, kernel, roofline: only the N op instances or kernels with the "
                 "most time (0, the default: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--depth", depth, "module report: roll up to this depth (0: full paths)")
      ->check(CLI::NonNegativeNumber);
  std::string peaks_path;
  app.add_option("--peaks", peaks_path,
                 "reports peaks, roofline: a JSON peaks file that adds or overrides device "
                 "peaks (datasheet) or adds measured roofs (docs/peaks.md)");
  std::string iterations;
  app.add_option("--iterations", iterations,
                 "which of the profile's iterations (steps parse detected) every report and the "
                 "table cover: A:B, A:, :B or N (step indices, negative from the end, as a Python "
                 "slice), or all (every record); default: all but a warm-up step 0 (over 1.25x "
                 "the median of the others, with 3 steps or more); records outside the selected "
                 "steps are left out (docs/prof.md, Iterations); records of Triton's autotuning "
                 "(pyprof.autotune ranges) are always left out, with a note");
  bool all_records = false;
  app.add_flag("--all-records", all_records,
               "the per-record table: every record, also those the iteration selection leaves "
               "out of the reports, with column `selected` 0 (pyprof.read_dict's default)");
  app.add_flag("--no-tf32", no_tf32, "fp32 GEMMs and convolutions are not Tensor Core eligible");
  std::vector<std::string> op_model_files;
  app.add_option("--op-models", op_model_files,
                 "a file of your own op models (a FLOP and a byte formula per op, docs/ops.md "
                 "\"Adding your own models\"), after those $PYPROF_OP_MODELS names (files "
                 "separated by ':'); repeatable; they replace pyprof's models of the same ops")
      ->allow_extra_args(false);
  std::vector<std::string> flop_tables;
  app.add_option("--flop-table", flop_tables,
                 "a FLOP table: the FLOPs of distinct calls of ops pyprof has no model of, from "
                 "formulas registered with PyTorch (`pyprof prof --flop-registry MODULE` makes "
                 "and passes one; `pyprof flop-table` writes one; docs/ops.md \"Formulas "
                 "registered with PyTorch\", docs/formats.md §5); repeatable")
      ->allow_extra_args(false);
  // The Python front's: the formulas are Python functions, evaluated there (docs/ops.md).
  std::vector<std::string> flop_registry;
  app.add_option("--flop-registry", flop_registry,
                 "(pyprof prof only) import MODULE (repeatable) and cost the ops pyprof has no "
                 "model of by the FLOP formulas registered with torch.utils.flop_counter "
                 "(torch's own included): the front evaluates them per distinct call and passes "
                 "the table as --flop-table (docs/ops.md \"Formulas registered with PyTorch\")")
      ->allow_extra_args(false);
  bool unmodelled_calls = false;
  app.add_flag("--unmodelled-calls", unmodelled_calls,
               "print each distinct call of an op without a model (no pyprof model, no "
               "--op-models model) as JSON Lines {op, args, records}, then exit: the calls a "
               "FLOP table can cost (docs/formats.md §5)");
  std::string explain_tc;
  app.add_option("--explain-tc", explain_tc,
                 "print which Tensor Core rule decides for this kernel name, then exit");
  app.add_option("-o,--output", output,
                 "write to this file (reports in several formats: to PREFIX.REPORT.FORMAT)");
  // Hidden (group ""): it serves tests/test_docs_match_code.py, which checks docs/ops.md
  // against the registry the binary was built with rather than against a copy of its names.
  bool list_ops = false;
  app.add_flag("--list-ops", list_ops, "print every modelled op and its family, then exit")
      ->group("");
  if (int status = pyprof::list_options_if_asked(app, argc, argv); status >= 0) return status;
  // Hidden too: the report registry (prof/reports.h) for the Python front and the docs tests,
  // and the dtype table (common/dtypes.h) that pyprof/_dtypes.py is generated from.
  bool list_reports = false, list_dtypes = false;
  app.add_flag("--list-reports", list_reports, "print every report as JSON Lines, then exit")
      ->group("");
  app.add_flag("--list-dtypes", list_dtypes, "print the dtype table as JSON Lines, then exit")
      ->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + "\nRun with --help for usage.", 2);
  }
  if (list_ops || list_reports || list_dtypes || !explain_tc.empty()) {
    std::vector<pyprof::OutputFile> outputs(1);
    std::string unused;
    if (!outputs[0].open(output.empty() ? "-" : output, unused)) return fail(unused, 1);
    if (list_reports) {
      outputs[0].write(list_reports_text());
    } else if (list_dtypes) {
      outputs[0].write(pyprof::dtype_table_json_lines());
    } else if (list_ops) {
      const pyprof::models::Registry& registry = pyprof::models::registry();
      for (const std::string& op : registry.ops()) {
        std::string family;
        registry.find(op, &family);
        outputs[0].write(fmt::format("{} {}\n", op, family));
      }
    } else {
      outputs[0].write(TensorCoreRules::builtin().explain(explain_tc, explain_tc) + "\n");
    }
    return finish_outputs(outputs);
  }
  if (reports.empty() && (csv ? 1 : 0) + (json ? 1 : 0) + (width > 0 ? 1 : 0) > 1) {
    return fail("--csv, --json and -w are mutually exclusive", 2);
  }
  IterationRequest iteration_request;
  if (app.count("--iterations") &&
      !parse_iteration_request(iterations, iteration_request, error_text)) {
    return fail(error_text, 2);
  }
  iteration_request.keep_unselected = all_records;
  std::vector<std::string> report_list = split_list(reports);
  // Asked for alone: a profile without memory lines would write nothing, so prof says why
  // (below). Beside other reports (the HTML page asks for every one) it writes no table quietly.
  const bool memory_alone =
      !report_list.empty() &&
      std::all_of(report_list.begin(), report_list.end(),
                  [](const std::string& r) { return r == "memory" || r == "memory_timeline"; });
  if (std::find(report_list.begin(), report_list.end(), "all") != report_list.end()) {
    // Every report of one profile; ranks reads many and stays apart.
    report_list.clear();
    for (const std::string& name : report_names()) {
      if (name != "ranks") report_list.push_back(name);
    }
  }
  std::vector<std::string> format_list = split_list(formats);
  std::vector<ReportFormat> report_formats;
  for (const std::string& f : format_list) {
    ReportFormat format;
    if (!report_format_of(f, raw, format)) {
      return fail("unknown format '" + f + "' (formats: text, csv, json)", 2);
    }
    report_formats.push_back(format);
  }
  if (report_list.empty() && app.count("--formats")) {
    return fail("--formats applies to --report", 2);
  }
  if (report_list.empty() && raw) return fail("--raw applies to --report", 2);
  if (!report_list.empty() && all_records) {
    return fail("--all-records applies to the per-record table, not to --report", 2);
  }
  if (!report_list.empty() && report_formats.size() > 1 && output.empty()) {
    return fail("several --formats need -o PREFIX (files PREFIX.REPORT.FORMAT)", 2);
  }
  for (const std::string& r : report_list) {
    bool known = false;
    for (const std::string& name : report_names()) known = known || name == r;
    if (!known) {
      return fail("unknown report '" + r + "'" + pyprof::did_you_mean(r, report_names()) +
                      " (reports: " + report_list_text() + ", all)",
                  2);
    }
  }
  std::vector<const Column*> cols;
  std::string error;
  if (!select_columns(columns.empty() ? "idx,dir,sub,mod,op,kernel,params,sil" : columns, cols,
                      error)) {
    return fail(error, 2);
  }

  if (!flop_registry.empty()) {
    return fail(
        "--flop-registry is the Python front's: run `pyprof prof --flop-registry MODULE ...` "
        "(it imports the modules), or give pyprof-prof the table: --flop-table FILE",
        2);
  }
  if (!load_op_models("prof", op_model_files, flop_tables, error)) {
    return fail(pyprof::terminal_safe(error), 2);
  }
  if (unmodelled_calls && (!report_list.empty() || inputs.size() > 1)) {
    return fail("--unmodelled-calls reads one net.dict and writes no report", 2);
  }
  PeaksFile peaks_file;
  if (!peaks_path.empty() && !read_peaks_file(peaks_path, peaks_file, error)) {
    return fail(error, 1);
  }

  // Text reports fit -w, else the terminal standard output is (when they go there), else
  // $COLUMNS, else 120 characters.
  const size_t report_width = app.count("--width")
                                  ? static_cast<size_t>(width)
                                  : default_report_width(output.empty() || output == "-");
  const bool ranks_only = report_list.size() == 1 && report_list[0] == "ranks";
  // --report ranks reads each input as one rank, even a single one: one without a rank is left
  // out with a warning (docs/prof.md §6), never shown as rank -1.
  if (inputs.size() > 1 || (inputs.size() == 1 && ((ranks_only && inputs[0] != "-") ||
                                                   pyprof::is_input_folder(inputs[0])))) {
    if (!ranks_only) {
      // `pyprof prof summary net.dict`: a report name where a file was meant.
      for (const std::string& in : inputs) {
        if (std::filesystem::exists(in)) continue;
        const std::string report = pyprof::closest_name(in, report_names());
        if (!report.empty()) {
          return fail("'" + in + "' is no file; to print a report give --report " + report +
                          " (reports: " + report_list_text() + ", all)",
                      2);
        }
        return fail("cannot open " + in + ": no such file", 1);
      }
      return fail(
          "several inputs (or a folder): prof reads one net.dict; several net.dicts, one per "
          "rank, go with --report ranks",
          2);
    }
    // The ranks report compares the whole job: a rank that cannot be read fails it.
    std::vector<std::string> files, failed;
    pyprof::expand_input_folders(
        inputs, [](const std::string& name) { return name.ends_with(".dict"); },
        "*.dict files (pyprof parse -o DIR writes them)", files, failed);
    if (!failed.empty()) return fail(failed.front(), 1);
    pyprof::protect_inputs(files);
    pyprof::protect_inputs({peaks_path});
    // Read `cores` at a time, each on its own thread; each is reduced to its summary and its
    // records freed before that thread reads another.
    std::vector<RankSummary> read(files.size());
    std::vector<std::string> messages(files.size());
    std::vector<LoadError> errors(files.size());
    std::vector<char> loaded(files.size(), 0);
    LoadRequest request;
    request.read = options_of(no_tf32);
    request.iterations = iteration_request;
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t k = next++; k < files.size(); k = next++) {
        loaded[k] = summarize_file(files[k], request, read[k], messages[k], errors[k]);
      }
    };
    const size_t threads =
        std::min<size_t>(files.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    std::vector<RankSummary> summaries;
    for (size_t k = 0; k < files.size(); ++k) {
      if (!loaded[k]) return fail(errors[k].message(), errors[k].exit_code);
    }
    for (size_t k = 0; k < files.size(); ++k) {
      fmt::print(stderr, "{}", messages[k]);
      if (read[k].rank < 0) {
        fmt::print(stderr,
                   "pyprof prof: warning: {}: no rank in its header (not a per-rank profile?): "
                   "left out\n",
                   pyprof::terminal_safe(files[k]));
        continue;
      }
      summaries.push_back(std::move(read[k]));
    }
    if (summaries.empty()) {
      return fail(
          "no input states its rank: --report ranks compares the ranks of a distributed job "
          "(one net.dict per rank: pyprof parse -j 2 DIR -o dicts, docs/prof.md §6)",
          1);
    }
    std::vector<ReportTable> tables = ranks_report(std::move(summaries));
    std::vector<pyprof::OutputFile> outputs;
    outputs.reserve(report_formats.size());
    for (size_t i = 0; i < report_formats.size(); ++i) {
      outputs.emplace_back();
      const std::string path =
          report_formats.size() == 1 ? output : fmt::format("{}.ranks.{}", output, format_list[i]);
      if (!outputs.back().open(path, error)) return fail(error, 1);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      write_report(outputs[i], tables, report_formats[i], report_width);
      if (outputs[i].failed()) break;
    }
    std::exit(finish_outputs(outputs));
  }
  if (inputs.empty() && isatty(STDIN_FILENO)) {
    // Nothing to read but a terminal: say so rather than wait for a net.dict to be typed.
    return fail(
        "no input: give a net.dict (pyprof parse NAME.sqlite -o net.dict), or - to read "
        "standard input\nRun with --help for usage.",
        2);
  }
  const std::string input = inputs.empty() ? std::string("-") : inputs[0];
  pyprof::protect_inputs({input, peaks_path});
  LoadRequest request;
  request.read = options_of(no_tf32);
  request.peaks = peaks_path.empty() ? nullptr : &peaks_file;
  request.iterations = iteration_request;
  request.read.list_unmodelled_calls = unmodelled_calls;
  request.select = !unmodelled_calls;  // every call, whichever iterations hold it
  ReadResult data;
  LoadError load_error;
  pyprof::PhaseTimer timer("pyprof prof", "PYPROF_PROF_TIMING");
  request.timer = &timer;
  if (!load_profile(input, request, data, load_error)) {
    return fail(load_error.message(), load_error.exit_code);
  }
  fmt::print(stderr, "{}", load_messages("prof", "", data));
  if (memory_alone && data.memory.empty()) {
    fmt::print(stderr,
               "pyprof prof: note: --report {}: the profile has no memory lines, so no "
               "table (pyprof profile records allocations unless PYPROF_MEMORY=0; torch.profiler "
               "with profile_memory=True; docs/memory.md)\n",
               pyprof::terminal_safe(reports));
  }

  // The outputs, each written under a temporary name (common/output_file.h). exit() below
  // skips destroying `data` (a million records); finish_outputs() has closed every output.
  std::vector<pyprof::OutputFile> outputs;
  auto open_out = [&](const std::string& path) -> pyprof::OutputFile* {
    outputs.emplace_back();
    if (outputs.back().open(path, error)) return &outputs.back();
    outputs.pop_back();
    return nullptr;
  };

  if (unmodelled_calls) {
    pyprof::OutputFile* out = open_out(output);
    if (!out) return fail(error, 1);
    out->write(unmodelled_calls_json_lines(data));
    std::exit(finish_outputs(outputs));
  }
  if (!report_list.empty()) {
    std::vector<ReportTable> tables;
    ReportOptions report_options;
    report_options.depth = depth;
    report_options.peaks = peaks_path.empty() ? nullptr : &peaks_file;
    report_options.top = static_cast<size_t>(top);
    // The tables of each report (roofline makes two): one file per report and format.
    std::vector<std::vector<ReportTable>> report_tables(report_list.size());
    std::vector<std::string> report_errors(report_list.size());
    std::vector<char> built(report_list.size(), 0);
    {
      // Reports only read the records: built side by side, one per thread at a time.
      std::atomic<size_t> next{0};
      auto build = [&] {
        for (size_t k; (k = next++) < report_list.size();) {
          built[k] = build_report(report_list[k], data, report_options, report_tables[k],
                                  report_errors[k]);
        }
      };
      std::vector<std::future<void>> helpers;
      const size_t threads = std::min<size_t>(pyprof::format_threads(), report_list.size());
      for (size_t i = 1; i < threads; ++i) helpers.push_back(std::async(std::launch::async, build));
      build();
      for (std::future<void>& h : helpers) h.get();  // a helper's exception goes on from here
    }
    for (size_t k = 0; k < report_list.size(); ++k) {
      if (!built[k]) return fail(report_errors[k], 2);
      for (const ReportTable& t : report_tables[k]) tables.push_back(t);
    }
    // Every file is opened first: a later file that cannot be created leaves none written.
    outputs.reserve(report_formats.size() * report_list.size());
    if (report_formats.size() == 1) {
      if (!open_out(output)) return fail(error, 1);
      write_report(outputs[0], tables, report_formats[0], report_width);
      const int status = finish_outputs(outputs);
      timer.lap("write");
      std::exit(status);
    }
    for (size_t i = 0; i < report_formats.size(); ++i) {
      for (size_t k = 0; k < report_list.size(); ++k) {
        if (!open_out(fmt::format("{}.{}.{}", output, report_list[k], format_list[i]))) {
          return fail(error, 1);
        }
      }
    }
    for (size_t file = 0; file < outputs.size(); ++file) {
      write_report(outputs[file], report_tables[file % report_list.size()],
                   report_formats[file / report_list.size()], report_width);
      if (outputs[file].failed()) break;  // finish_outputs() removes them all
    }
    const int status = finish_outputs(outputs);
    timer.lap("write");
    std::exit(status);
  }
  TableFormat format = csv         ? TableFormat::kCsv
                       : json      ? TableFormat::kJson
                       : width > 0 ? TableFormat::kWidth
                                   : TableFormat::kColumns;
  pyprof::OutputFile* out = open_out(output);
  if (!out) return fail(error, 1);
  if (!write_table(*out, data, cols, format, width, error)) {
    out->discard();
    return fail(error, 2);
  }
  const int status = finish_outputs(outputs);
  timer.lap("write");
  std::exit(status);
}
