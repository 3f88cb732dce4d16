// pyprof diff's result as report tables (diff.h: diff_tables): the summary, then one table per
// level. Text prints times in human units; CSV and JSON hold raw numbers (docs/diff.md §4).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "diff/diff.h"

namespace pyprof::prof {

namespace {

// The summary's words on the basis (docs/diff.md §1): what each level's samples are.
std::string basis_text(const DiffResult& result) {
  switch (result.basis) {
    case DiffBasis::kIteration:
      return fmt::format(
          "per iteration: every level's figures are per iteration (the mean over the "
          "iterations compared), each iteration a sample{}",
          result.base.steps_detected || result.next.steps_detected
              ? "; iterations detected in the repeating op sequence run from one anchor call to "
                "the next (see the iterations lines)"
              : "");
    case DiffBasis::kCall:
      return fmt::format(
          "per call: ops and op types are compared by their time per call (an op call's kernels "
          "and copies summed; CPU: its self time), each call a sample; modules by the time per "
          "op call under them; kernels by the time per launch; the typical change is of the op "
          "rows' time per call; the step rows are the whole profiles' totals, untested. Calls "
          "(columns Base calls, New calls) are those each profile holds: {} and {} op calls",
          result.base.calls, result.next.calls);
    case DiffBasis::kProfile:
    case DiffBasis::kAuto:
      break;
  }
  return "whole profile: each profile's totals, one sample a side, untested";
}

std::string test_text(const DiffResult& result, const DiffOptions& options) {
  const char* samples = result.basis == DiffBasis::kIteration ? "per-iteration samples"
                        : result.basis == DiffBasis::kCall
                            ? "per-call samples (the calls of one run are not independent draws: "
                              "the test weighs a change against the calls' spread, the typical "
                              "change and the rows' scatter against the runs')"
                            : "";
  if (result.basis == DiffBasis::kProfile) {
    return fmt::format(
        "none: one sample a side; rows in both profiles are `untested`, their change shown "
        "(|vs typical| >= {:g}% and beyond the rows' scatter would count as a change)",
        options.min_change_pct);
  }
  return fmt::format(
      "a row changed when |vs typical| >= {1:g}%, beyond the rows' scatter, and q < {0:g}: "
      "Welch's t-test on the {2} (NEW's over the typical change), p adjusted over those rows of "
      "the table (Benjamini-Hochberg); a row with fewer than 2 samples a side is `untested`",
      options.alpha, options.min_change_pct, samples);
}

std::string gate_text(const DiffResult& result, const DiffOptions& options) {
  std::string limits;
  if (options.fail_above_pct) limits = fmt::format("rows over {:g}%", *options.fail_above_pct);
  if (options.fail_step_above_pct) {
    limits += fmt::format("{}step rows over {:g}%", limits.empty() ? "" : ", ",
                          *options.fail_step_above_pct);
  }
  if (options.gate_without_test) limits += "; untested rows gated on their size alone";
  if (!result.gate_refused.empty()) return "refused: " + result.gate_refused;
  std::string skipped;
  if (result.gate_skipped > 0) {
    skipped = fmt::format(
        "; {} untested rows not gated (fewer than 2 samples a side; --gate-without-test gates "
        "them on size alone)",
        result.gate_skipped);
  }
  if (result.failing_rows == 0) {
    return fmt::format("pass: {} ({}){}",
                       options.gate_without_test ? "nothing slower, tested or on size alone"
                                                 : "nothing significantly slower",
                       limits, skipped);
  }
  std::vector<std::string> kinds;
  if (result.failing_slower > 0) {
    kinds.push_back(fmt::format("{} significantly slower", result.failing_slower));
  }
  if (result.failing_untested > 0) {
    kinds.push_back(fmt::format("{} slower on size alone (untested: a size-only gate)",
                                result.failing_untested));
  }
  if (result.failing_new > 0) kinds.push_back(fmt::format("{} new", result.failing_new));
  std::string joined;
  for (const std::string& k : kinds) joined += (joined.empty() ? "" : ", ") + k;
  return fmt::format("FAIL: {} rows: {} ({}; column Gate, docs/diff.md){}", result.failing_rows,
                     joined, limits, skipped);
}

// A level's table id in diff's JSON (docs/diff.md §4).
const char* level_id(DiffLevel level) {
  switch (level) {
    case DiffLevel::kStep:
      return "steps";
    case DiffLevel::kOp:
      return "ops";
    case DiffLevel::kOpType:
      return "op_types";
    case DiffLevel::kModule:
      return "modules";
    case DiffLevel::kKernel:
      return "kernels";
  }
  return "ops";
}

}  // namespace

std::vector<ReportTable> diff_tables(const DiffResult& result, const DiffOptions& options,
                                     size_t top) {
  std::vector<ReportTable> out;
  ReportTable summary;
  summary.title = "diff summary";
  summary.report = "diff";
  summary.id = "summary";
  column(summary, "Metric", Unit::kText, Keep::kAlways);
  column(summary, "Value", Unit::kText, Keep::kAlways);
  auto line = [&](std::string metric, std::string value) {
    summary.rows.push_back({std::move(metric), std::move(value)});
  };
  line("base", result.base.source);
  line("new", result.next.source);
  line("base iterations", result.base.iterations);
  line("new iterations", result.next.iterations);
  line("basis", basis_text(result));
  line("samples compared",
       result.basis == DiffBasis::kCall
           ? fmt::format("the calls of each row: {} op calls in base, {} in new", result.base.calls,
                         result.next.calls)
           : fmt::format("{} base, {} new", result.base.samples, result.next.samples));
  line("typical change",
       fmt::format("{:+.1f}% (median of NEW / BASE over {} op rows, {}), the rows scattering "
                   "{:.1f}% about it (a robust sigma): rows other than the step rows are judged "
                   "against it (column vs typical %), a change counting beyond {:g} sigmas",
                   result.typical_change_pct, result.typical_rows,
                   result.basis == DiffBasis::kIteration ? "time per iteration"
                   : result.basis == DiffBasis::kCall    ? "time per call"
                                                         : "whole profiles",
                   result.row_scatter_pct, kScatterSigmas));
  line("test", test_text(result, options));
  for (const DiffTable& t : result.tables) {
    if (t.level == DiffLevel::kStep) {
      for (const DiffRow& r : t.rows) {
        std::string p = std::isnan(r.p_value) ? "" : fmt::format(", p = {:.3g}", r.p_value);
        line(r.key[0],
             fmt::format("{} -> {} ({:+.1f}%{}): {}", format_quantity(r.base_ns, Unit::kTime),
                         format_quantity(r.new_ns, Unit::kTime), r.delta_pct, p,
                         r.verdict == Verdict::kUntested ? "untested (one sample a side)"
                                                         : verdict_name(r.verdict)));
      }
      continue;
    }
    size_t counts[6] = {0, 0, 0, 0, 0, 0};
    for (const DiffRow& r : t.rows) ++counts[static_cast<size_t>(r.verdict)];
    auto count = [&](Verdict v) { return counts[static_cast<size_t>(v)]; };
    std::string untested;
    if (count(Verdict::kUntested) > 0) {
      untested = fmt::format(", {} untested", count(Verdict::kUntested));
    }
    line(t.title.substr(std::string("diff: ").size()),
         fmt::format("{}: {} rows: {} slower, {} faster, {} new, {} gone, {} same{}", t.basis,
                     t.rows.size(), count(Verdict::kSlower), count(Verdict::kFaster),
                     count(Verdict::kNew), count(Verdict::kGone), count(Verdict::kSame), untested));
  }
  for (const std::string& note : result.notes) line("note", note);
  if (options.fail_above_pct || options.fail_step_above_pct)
    line("gate", gate_text(result, options));
  out.push_back(std::move(summary));

  const bool per_call = result.basis == DiffBasis::kCall;
  for (const DiffTable& t : result.tables) {
    ReportTable r;
    r.title = t.title;
    r.report = "diff";
    r.id = level_id(t.level);
    for (const std::string& h : t.key_headers) {
      // Op and Direction (op types), a kernel or a module: the row's name; shapes and the
      // module of an op row: its detail.
      column(r, h, Unit::kText,
             h == "Shapes" || (h == "Module" && t.key_headers.size() > 1) ? Keep::kMore
                                                                          : Keep::kAlways);
    }
    column(r, "Base(ns)", Unit::kTime, Keep::kAlways);
    column(r, "New(ns)", Unit::kTime, Keep::kAlways);
    column(r, "Delta(ns)", Unit::kTime, Keep::kMore);
    column(r, "Delta %", Unit::kPercent, Keep::kAlways);
    column(r, "vs typical %", Unit::kPercent, Keep::kMain);
    column(r, "p", Unit::kRatio, Keep::kDetail);
    column(r, "q", Unit::kRatio, Keep::kMore);
    column(r, "Verdict", Unit::kText, Keep::kAlways);
    column(r, "Base share %", Unit::kPercent, Keep::kMore);
    column(r, "Base FLOPs", Unit::kFlops, Keep::kDetail);
    column(r, "New FLOPs", Unit::kFlops, Keep::kDetail);
    column(r, "Base calls", Unit::kRatio, Keep::kDetail);
    column(r, "New calls", Unit::kRatio, Keep::kDetail);
    column(r, "Gate", Unit::kText, Keep::kMain);
    column(r, "Basis", Unit::kText, Keep::kDetail);
    size_t n = top > 0 ? std::min(top, t.rows.size()) : t.rows.size();
    auto decimal = [](double v, int places) {
      if (std::isnan(v)) return std::string("na");
      if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
      return fmt::format("{:.{}f}", v, places);
    };
    auto number = [&](double v) { return decimal(v, 0); };
    // Calls per iteration are means (2 places); on the per-call basis, counts.
    const int call_places = per_call && t.level != DiffLevel::kStep ? 0 : 2;
    for (size_t i = 0; i < n; ++i) {
      const DiffRow& d = t.rows[i];
      std::vector<std::string> cells = d.key;
      cells.push_back(d.in_base ? number(d.base_ns) : "na");
      cells.push_back(d.in_new ? number(d.new_ns) : "na");
      cells.push_back(number(d.new_ns - d.base_ns));
      cells.push_back(decimal(d.delta_pct, 1));
      cells.push_back(decimal(d.adjusted_delta_pct, 1));
      cells.push_back(std::isnan(d.p_value) ? "na" : fmt::format("{:.3g}", d.p_value));
      cells.push_back(std::isnan(d.q_value) ? "na" : fmt::format("{:.3g}", d.q_value));
      cells.push_back(verdict_name(d.verdict));
      cells.push_back(decimal(d.base_share_pct, 1));
      cells.push_back(d.in_base ? number(d.base_flops) : "na");
      cells.push_back(d.in_new ? number(d.new_flops) : "na");
      cells.push_back(d.in_base ? decimal(d.base_calls, call_places) : "na");
      cells.push_back(d.in_new ? decimal(d.new_calls, call_places) : "na");
      const bool gated = result.gate_refused.empty() &&
                         (t.level == DiffLevel::kStep ? options.fail_step_above_pct.has_value()
                                                      : options.fail_above_pct.has_value());
      cells.push_back(!gated ? "-" : d.fails_gate ? "FAIL" : d.gate_skipped ? "untested" : "ok");
      cells.push_back(t.basis);
      r.rows.push_back(std::move(cells));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pyprof::prof
