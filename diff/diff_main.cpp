// pyprof-diff: `pyprof diff BASE NEW` on two net.dicts (pyprof/cli.py parses databases and
// traces into net.dicts first). docs/diff.md.
// Exit codes: 0 compared (and the gate passed), 1 bad input or unwritable output, 2 usage,
// 3 the --fail-above gate failed, 4 a gate was refused (no row it applies to could be tested;
// --gate-without-test), 141 standard output closed by its reader.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/cli_help.h"
#include "common/cli_options.h"
#include "common/input_files.h"
#include "common/output_file.h"
#include "common/terminal_text.h"
#include "diff/diff.h"
#include "prof/iterations.h"
#include "prof/load_profile.h"
#include "prof/op_model_options.h"
#include "prof/records.h"
#include "prof/reports.h"

namespace {

using namespace pyprof::prof;

constexpr int kGateFailed = 3;
constexpr int kGateRefused = 4;

int fail(const std::string& message, int code) {
  fmt::print(stderr, "pyprof diff: error: {}\n", message);
  return code;
}

// Loads one side (prof/load_profile.h); its messages name the side ("base", "new").
bool load(const std::string& path, const std::string& label, const char* side,
          const LoadRequest& request, ReadResult& data, int& code) {
  LoadError error;
  if (!load_profile(path, request, data, error)) {
    code = fail(error.input.empty() ? fmt::format("{}: {}", side, error.problem)
                                    : fmt::format("{} {}", side, error.message()),
                error.exit_code);
    return false;
  }
  // The summary names each side as the user named it, and the file parse read when that was
  // another (a net.dict of net.sqlite).
  std::string shown = label.empty() ? path : label;
  data.source = data.source.empty() || shown.ends_with(data.source)
                    ? shown
                    : fmt::format("{} (parsed from {})", shown, data.source);
  fmt::print(stderr, "{}", load_messages("diff", side, data));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  pyprof::guard_outputs();
  CLI::App app{
      "Compares two profiles of one workload (net.dicts, our databases, nsys exports, nvprof, "
      "torch.profiler traces: `pyprof diff` parses them first): per iteration, op (matched by "
      "op, direction, module and input shapes), op type, module and kernel, the time before and "
      "after, the change, Welch's t-test and a verdict (slower, faster, same, new, gone, "
      "untested). Per iteration when both profiles have 2 or more iterations (parse's, or "
      "detected in a profile's repeating op sequence); else, as for fixed-length captures, per "
      "call. --fail-above PCT makes it a CI gate. docs/diff.md.",
      "pyprof diff"};
  app.formatter(std::make_shared<pyprof::WrappingFormatter>());
  std::string base_path, new_path, reports = "step,op,op_type,module,kernel", formats = "text",
                                   output;
  app.add_option("base", base_path,
                 "the baseline profile: a net.dict, or (through `pyprof diff`) anything pyprof "
                 "parse reads: a database, a torch.profiler trace")
      ->required();
  app.add_option("new", new_path, "the profile to compare with it (the same kinds of input)")
      ->required();
  app.add_option("--report", reports,
                 "levels to compare, comma-separated: step, op, op_type, module, kernel "
                 "(default all)");
  app.add_option("--formats", formats,
                 "text, csv, json (comma-separated; several need -o PREFIX: PREFIX.diff.FORMAT)");
  bool raw = false;
  app.add_flag("--raw", raw, "text: raw numbers (ns, FLOPs) as CSV and JSON hold them");
  int64_t width = 0;
  app.add_option("-w,--width", width,
                 "text: fit N characters, wrapping long text and leaving out the least needed "
                 "columns, said under each table (default: the terminal's width, else $COLUMNS, "
                 "else 120; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  int64_t top = 25;
  app.add_option("--top", top,
                 "rows per level, largest time change first (default 25; 0: all); CSV and JSON "
                 "always hold every row")
      ->check(CLI::NonNegativeNumber);
  std::string iterations, base_iterations, new_iterations;
  app.add_option("--iterations", iterations,
                 "the iterations of both profiles to compare: A:B, N or all, as pyprof prof "
                 "--iterations (default: all but a detected warm-up step 0)");
  app.add_option("--base-iterations", base_iterations, "the same for BASE only");
  app.add_option("--new-iterations", new_iterations, "the same for NEW only");
  DiffOptions options;
  std::string basis = "auto";
  app.add_option("--basis", basis,
                 "what a row's samples are: auto (default: per iteration when both profiles have "
                 "2 or more iterations, parse's or detected in the repeating op sequence, else "
                 "per call), iteration, call (each op call, kernel launch), profile (the whole "
                 "profile, one sample: untested)");
  app.add_option("--alpha", options.alpha,
                 "significance level of the test (default 0.05): a row changed when its q-value "
                 "(p adjusted over the table, Benjamini-Hochberg) < alpha")
      ->check(CLI::Range(1e-9, 0.5));
  app.add_option("--min-change", options.min_change_pct,
                 "smallest change a verdict calls slower or faster, in percent (default 5)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-share", options.min_share_pct,
                 "a row fails the gate only if the time it added is at least this percent of "
                 "BASE's busy time (per iteration; per call: over BASE's calls and busy time) "
                 "(default 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--depth", options.depth, "module level: roll up to this depth (0: full paths)")
      ->check(CLI::NonNegativeNumber);
  double fail_above = 0;
  app.add_option("--fail-above", fail_above,
                 "CI gate: exit 3 when an op, op type, module or kernel is significantly slower "
                 "than the typical change by more than PCT percent and added at least "
                 "--min-share of BASE's busy time (or is new and over PCT percent of it). "
                 "Untested rows (fewer than 2 samples a side) are not gated; when no row could "
                 "be tested the gate refuses (exit 4)")
      ->check(CLI::NonNegativeNumber);
  double fail_step_above = 0;
  app.add_option("--fail-step-above", fail_step_above,
                 "CI gate on the step rows: exit 3 when the step or busy time is significantly "
                 "slower by more than PCT percent, absolute (a slower machine fails it too); "
                 "refused (exit 4) when they are untested")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--gate-without-test", options.gate_without_test,
               "gate untested rows on the size of their change alone (a size-only gate, said so "
               "in the gate line) instead of skipping them or refusing");
  bool no_tf32 = false;
  app.add_flag("--no-tf32", no_tf32, "fp32 GEMMs and convolutions are not Tensor Core eligible");
  app.add_option("-o,--output", output,
                 "write to this file (several --formats: to PREFIX.diff.FORMAT)");
  pyprof::prof::OpModelFiles op_model_files;
  pyprof::prof::add_op_model_options(app, op_model_files);
  // Hidden: pyprof/cli.py passes the names the user gave when it parsed them into temporary
  // net.dicts first.
  std::string base_label, new_label;
  app.add_option("--base-label", base_label)->group("");
  app.add_option("--new-label", new_label)->group("");
  app.footer(
      "Exit status: 0 compared (gate passed), 1 bad input or unwritable output, 2 usage, 3 the "
      "--fail-above or --fail-step-above gate failed, 4 a gate was refused: no row it applies "
      "to could be tested (--gate-without-test).");
  if (int status = pyprof::list_options_if_asked(app, argc, argv); status >= 0) return status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + "\nRun with --help for usage.", 2);
  }
  if (app.count("--fail-above")) options.fail_above_pct = fail_above;
  if (app.count("--fail-step-above")) options.fail_step_above_pct = fail_step_above;
  if (!diff_basis_of(basis, options.basis)) {
    return fail("unknown --basis '" + basis + "' (auto, iteration, call, profile)", 2);
  }

  std::vector<DiffLevel> levels;
  for (const std::string& name : split_list(reports)) {
    DiffLevel level;
    if (!diff_level_of(name, level)) {
      return fail("unknown level '" + name + "' (levels: step, op, op_type, module, kernel)", 2);
    }
    levels.push_back(level);
  }
  if (levels.empty()) return fail("--report names no level", 2);
  std::vector<std::string> format_names = split_list(formats);
  std::vector<ReportFormat> report_formats;
  for (const std::string& f : format_names) {
    ReportFormat format;
    if (!report_format_of(f, raw, format)) {
      return fail("unknown format '" + f + "' (formats: text, csv, json)", 2);
    }
    report_formats.push_back(format);
  }
  if (report_formats.empty()) return fail("--formats names no format", 2);
  if (report_formats.size() > 1 && output.empty()) {
    return fail("several --formats need -o PREFIX (files PREFIX.diff.FORMAT)", 2);
  }
  std::string error;
  // Both sides are costed with the same models.
  if (!load_op_models("diff", op_model_files.op_models, op_model_files.flop_tables, error)) {
    return fail(pyprof::terminal_safe(error), 2);
  }
  IterationRequest base_request, new_request;
  auto request_of = [&](const std::string& own, IterationRequest& out) {
    const std::string& text = !own.empty() ? own : iterations;
    return text.empty() || parse_iteration_request(text, out, error);
  };
  if (!request_of(base_iterations, base_request) || !request_of(new_iterations, new_request)) {
    return fail(error, 2);
  }

  LoadRequest base_load, new_load;
  base_load.read.allow_tf32 = new_load.read.allow_tf32 = !no_tf32;
  base_load.iterations = base_request;
  new_load.iterations = new_request;
  ReadResult base, next;
  int code = 0;
  pyprof::protect_inputs({base_path, new_path});
  if (!load(base_path, base_label, "base", base_load, base, code)) return code;
  if (!load(new_path, new_label, "new", new_load, next, code)) return code;

  DiffResult result = diff_profiles(base, next, levels, options);
  if (!result.error.empty()) return fail(pyprof::terminal_safe(result.error), 2);
  std::vector<pyprof::OutputFile> outputs(report_formats.size());
  for (size_t i = 0; i < report_formats.size(); ++i) {
    std::string path =
        report_formats.size() == 1 ? output : fmt::format("{}.diff.{}", output, format_names[i]);
    if (!outputs[i].open(path.empty() ? "-" : path, error)) return fail(error, 1);
  }
  for (size_t i = 0; i < report_formats.size(); ++i) {
    bool text =
        report_formats[i] == ReportFormat::kText || report_formats[i] == ReportFormat::kRawText;
    const size_t text_width =
        app.count("--width")
            ? static_cast<size_t>(width)
            : default_report_width(report_formats.size() == 1 && (output.empty() || output == "-"));
    write_report(outputs[i], diff_tables(result, options, text ? static_cast<size_t>(top) : 0),
                 report_formats[i], text_width);
  }
  if (int status = pyprof::commit_all(outputs, error); status != 0) {
    return status == 1 ? fail(error, 1) : status;
  }
  if (!result.gate_refused.empty()) {
    fmt::print(stderr, "pyprof diff: gate refused: {}\n", result.gate_refused);
    std::exit(kGateRefused);
  }
  if (result.failing_rows > 0) {
    std::string kinds;
    auto add = [&](size_t n, const char* what) {
      if (n > 0) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, what);
    };
    add(result.failing_slower, "significantly slower");
    add(result.failing_untested, "slower on size alone (untested: --gate-without-test)");
    add(result.failing_new, "new");
    fmt::print(stderr, "pyprof diff: FAIL: {} rows over the gate's limits: {} (column Gate)\n",
               result.failing_rows, kinds);
    std::exit(kGateFailed);
  }
  std::exit(0);
}
