// pyprof diff (docs/diff.md): two profiles of one workload compared per step, op, op type,
// module and kernel, with a significance test over their per-iteration samples, a verdict per
// row and a gate for CI (--fail-above). It reads prof's records (records.h) after prof's cost
// and iteration selection, nothing of parse's.
//
// Rows are matched by what they are, not by position: an op by (op, direction, module, input
// shapes), an op type by (op, direction), a module by (path rolled up to --depth, direction), a
// kernel by (kernel name, module, input shapes). Each row's figure is its time per iteration:
// the mean over the selected iterations (a profile without iterations is one sample, its whole
// span). Each row is judged against the profiles' typical change (the median over the op rows of
// NEW / BASE), so that a second run on a machine uniformly slower or faster is not a regression
// of every op; the step rows keep the absolute change. The test is Welch's t-test on the
// per-iteration samples, which needs two or more iterations on each side; without them the size of
// the change alone decides, and the row says it was not tested. A table tests many rows at once, so
// each row's p-value is adjusted for the others (Benjamini-Hochberg q-values) before the verdict.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

enum class DiffLevel : uint8_t { kStep, kOp, kOpType, kModule, kKernel };

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
};

enum class Verdict : uint8_t { kSame, kSlower, kFaster, kNew, kGone };
const char* verdict_name(Verdict v);

struct DiffRow {
  std::vector<std::string> key;  // the level's key columns
  // Per selected iteration (or the one whole-profile sample): time in ns, counted FLOPs, and
  // the number of records (kernels, copies; CPU: op calls).
  std::vector<double> base_time, new_time;
  double base_ns = 0, new_ns = 0;  // means of the samples
  double base_flops = 0, new_flops = 0;
  double base_calls = 0, new_calls = 0;
  bool in_base = false, in_new = false;
  double delta_pct = 0;  // (new - base) / base, percent; NaN for new and gone rows
  // The same with NEW over the typical change (DiffResult::typical_change_pct): the row's own
  // change, which the verdict judges. Step rows: equal to delta_pct.
  double adjusted_delta_pct = 0;
  double p_value = 0;  // Welch's two-sided p; NaN when not tested (fewer than 2 samples a side)
  // p adjusted (Benjamini-Hochberg) over the table's rows whose change counts (large enough
  // and beyond the rows' scatter: the only rows a test can make changed); NaN for the others.
  // The verdict uses it. The step rows are not adjusted (q = p).
  double q_value = 0;
  double base_share_pct = 0;  // base_ns over the base profile's busy time per iteration
  Verdict verdict = Verdict::kSame;
  bool fails_gate = false;  // over --fail-above (see diff_profiles)
};

struct DiffTable {
  DiffLevel level = DiffLevel::kOp;
  std::string title;
  std::vector<std::string> key_headers;
  std::vector<DiffRow> rows;  // largest absolute time change first
};

// One side's description, for the summary lines.
struct DiffSide {
  std::string source;
  bool cpu_only = false;
  size_t samples = 0;      // selected iterations, or 1 for a profile without iterations
  std::string iterations;  // "3 by user_range (step N), reports cover 1:3", or "none"
  double busy_ns = 0;      // busy time per sample: GPU kernel+copy time, CPU op self time
};

struct DiffResult {
  DiffSide base, next;
  std::vector<DiffTable> tables;
  std::vector<std::string> notes;  // what a reader must know (mixed profile kinds, no test)
  size_t failing_rows = 0;
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
