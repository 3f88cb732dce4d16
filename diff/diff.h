// pyprof diff (docs/diff.md): two profiles of one workload compared per step, op, op type,
// module and kernel, with a significance test, a verdict per row and a gate for CI
// (--fail-above). It reads prof's records (records.h) after prof's cost and iteration
// selection, nothing of parse's.
//
// Rows are matched by what they are, not by position: an op by (op, direction, module, input
// shapes), an op type by (op, direction), a module by (path rolled up to --depth, direction), a
// kernel by (kernel name, module, input shapes). Each row's figure is its time on the
// comparison's basis (DiffBasis): per iteration (the mean over the selected iterations, parse's
// or found in the repeating op sequence, repeating_steps.h), or, when a profile has fewer than
// two iterations (a fixed-length capture), per call (the mean over the row's calls). Each row
// is judged against the profiles' typical change (the median over the op rows of NEW / BASE),
// so that a second run on a machine uniformly slower or faster is not a regression of every
// op; the step rows keep the absolute change. The test is Welch's t-test on the samples of the
// basis (iterations, calls), which needs two or more on each side; a row without them is
// `untested`: no verdict, and no gate unless asked (--gate-without-test). A table tests many
// rows at once, so each row's p-value is adjusted for the others (Benjamini-Hochberg q-values)
// before the verdict.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

enum class DiffLevel : uint8_t { kStep, kOp, kOpType, kModule, kKernel };

// What a row's samples are (docs/diff.md §1): kIteration, each selected iteration (the row's
// time summed over it); kCall, each call (an op call's kernels and copies summed, a CPU op
// call's self time; the kernel level: each launch); kProfile, the whole profile, one sample.
// kAuto (a request only): per iteration when both profiles have two or more (parse's, or
// detected in their repeating op sequence), else per call.
enum class DiffBasis : uint8_t { kAuto, kIteration, kCall, kProfile };
const char* diff_basis_name(DiffBasis b);
// The basis of a --basis name ("auto", "iteration", "call", "profile"); false for another.
bool diff_basis_of(const std::string& name, DiffBasis& out);

// A row's own change counts only beyond this many robust sigmas of the rows' scatter about the
// typical change (diff.cpp: changed).
inline constexpr double kScatterSigmas = 3;

// The level names of --report, in their default order.
const std::vector<std::string>& diff_level_names();
// The level of a name; false for an unknown one.
bool diff_level_of(const std::string& name, DiffLevel& out);

struct DiffOptions {
  double alpha = 0.05;        // a change is significant when q < alpha (diff.cpp: decide)
  double min_change_pct = 5;  // and at least this large (percent of the base time)
  double min_share_pct = 1;   // a row gates CI only if it added this share of BASE's busy time
  int depth = 0;              // module level: roll up to this depth (0: full paths)
  std::optional<double> fail_above_pct;  // --fail-above: the CI gate on rows (none: no gate)
  // --fail-step-above: the gate on the step rows (absolute change; none: no gate).
  std::optional<double> fail_step_above_pct;
  DiffBasis basis = DiffBasis::kAuto;  // --basis
  // --gate-without-test: untested rows (too few samples) gate on the size of their change
  // alone; without it they never fail, and a gate with no row tested is refused.
  bool gate_without_test = false;
};

// kUntested: in both profiles, but with fewer than 2 samples on a side no test ran, so no
// verdict is given (its change is shown; docs/diff.md §2).
enum class Verdict : uint8_t { kSame, kSlower, kFaster, kNew, kGone, kUntested };
const char* verdict_name(Verdict v);

struct DiffRow {
  std::vector<std::string> key;  // the level's key columns
  // The samples of the basis (DiffResult::basis): the row's time in ns per selected
  // iteration, per call, or the one whole-profile sample.
  std::vector<double> base_time, new_time;
  double base_ns = 0, new_ns = 0;        // means of the samples
  double base_flops = 0, new_flops = 0;  // counted FLOPs per sample
  // kIteration, kProfile: records per sample (kernels, copies; CPU: op calls); kCall: the
  // calls (samples) the profile holds.
  double base_calls = 0, new_calls = 0;
  bool in_base = false, in_new = false;
  double delta_pct = 0;  // (new - base) / base, percent; NaN for new and gone rows
  // The same with NEW over the typical change (DiffResult::typical_change_pct): the row's own
  // change, which the verdict judges. Step rows: equal to delta_pct.
  double adjusted_delta_pct = 0;
  double p_value = 0;  // Welch's two-sided p; NaN when untested (fewer than 2 samples a side)
  // p adjusted (Benjamini-Hochberg) over the table's rows whose change counts (large enough
  // and beyond the rows' scatter: the only rows a test can make changed); NaN for the others.
  // The verdict uses it. The step rows are not adjusted (q = p).
  double q_value = 0;
  double base_share_pct = 0;  // the row's share of BASE's busy time (in what was compared)
  Verdict verdict = Verdict::kSame;
  bool fails_gate = false;  // over --fail-above (see diff_profiles)
  // A gate was asked for this row's table, but it is untested and --gate-without-test was not
  // given: the gate did not judge it.
  bool gate_skipped = false;
};

struct DiffTable {
  DiffLevel level = DiffLevel::kOp;
  std::string title;
  std::string basis;  // what its samples are: "per iteration", "per call", "per launch", ...
  std::vector<std::string> key_headers;
  std::vector<DiffRow> rows;  // largest absolute time change first
};

// One side's description, for the summary lines.
struct DiffSide {
  std::string source;
  bool cpu_only = false;
  size_t samples = 0;  // iterations compared (kIteration), else 1 (the whole profile)
  // "3 by user_range (step N), compared 1:3", or "none in the profile; detected: ..."
  std::string iterations;
  // The iterations compared are the repeating-op-sequence detector's (repeating_steps.h; what
  // it found, or why nothing, is in `iterations`).
  bool steps_detected = false;
  // Busy time (GPU: the union of kernel, copy and memset intervals; CPU: op self time) and
  // wall time (the steps' spans; else the records' span), per iteration on the kIteration
  // basis, else of the whole profile compared.
  double busy_ns = 0, wall_ns = 0;
  size_t calls = 0;  // op calls compared (op instances; CPU: op records)
};

struct DiffResult {
  DiffSide base, next;
  DiffBasis basis = DiffBasis::kIteration;  // the basis used (never kAuto)
  // Non-empty when the requested basis cannot be used (--basis iteration on a profile without
  // iterations, parse's or detected): nothing was compared.
  std::string error;
  std::vector<DiffTable> tables;
  std::vector<std::string> notes;  // what a reader must know (mixed profile kinds, no test)
  size_t failing_rows = 0;         // rows that fail a gate: the three kinds below
  size_t failing_slower = 0, failing_new = 0;
  size_t failing_untested = 0;  // failed on size alone (--gate-without-test)
  size_t gate_skipped = 0;      // untested rows a gate did not judge
  // A gate was asked for, but no row it applies to could be tested and --gate-without-test
  // was not given: the gate refuses (exit 4), saying why.
  std::string gate_refused;
  // The profiles' typical change, percent: the median over matched op rows of NEW / BASE
  // (diff.cpp: typical_scale), and how many rows it is the median of (0: none, no scaling).
  double typical_change_pct = 0;
  size_t typical_rows = 0;
  // How far the op rows scatter about it: exp(1.4826 x MAD of ln(NEW / BASE)) - 1, percent. A
  // row's own change counts beyond 3 of these (diff.cpp: decide).
  double row_scatter_pct = 0;
};

// Compares `base` and `next` (both after assign_costs and select_iterations) at `levels`.
// Rows other than the step rows are judged against the profiles' typical change (a machine
// that ran NEW uniformly slower changes no verdict; the step rows show it). The gate
// (options.fail_above_pct): diff.cpp, gate().
DiffResult diff_profiles(const ReadResult& base, const ReadResult& next,
                         const std::vector<DiffLevel>& levels, const DiffOptions& options);

// The result as report tables: a summary table, then one table per level with at most `top`
// rows (0: all). Text prints times in human units; CSV and JSON hold raw numbers.
std::vector<ReportTable> diff_tables(const DiffResult& result, const DiffOptions& options,
                                     size_t top);

// Welch's unequal-variance t-test: the two-sided p-value that samples a and b have the same
// mean. NaN when either has fewer than 2 samples. Both constant: 1 if the means are equal, else 0.
double welch_p_value(const std::vector<double>& a, const std::vector<double>& b);
// P(|T| >= |t|) for Student's t distribution with `df` degrees of freedom (df > 0).
double student_t_two_sided_p(double t, double df);

}  // namespace pyprof::prof
