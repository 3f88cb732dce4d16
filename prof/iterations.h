// Iterations in prof (docs/prof.md §Iterations): which of the steps parse detected
// (ReadResult::iterations, docs/formats.md §3) the reports cover, the `iteration` report, the
// summary's steady-state rows, and per-step samples for other stages (diff, advice).
//
// The selection runs once, after assign_costs and before every report: `--iterations A:B`
// (Python-slice style over step indices), `--iterations all` (every record, no selection), or by
// default the warm-up rule (detect_warm_up). While a selection is active, the records outside the
// selected steps, those outside every step included, leave ReadResult::records.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// What --iterations asked for.
struct IterationRequest {
  enum class Mode : uint8_t { kDefault, kAll, kSlice, kSingle };
  Mode mode = Mode::kDefault;
  // kSlice: Python slice bounds (negative counts from the end; absent: the start or the end).
  // kSingle: the index in begin.
  std::optional<int64_t> begin, end;
  std::string text;  // as given, for messages
  // `--all-records`: keep the records outside the selection, marked ProfRecord::selected =
  // false, for the per-record table alone (no report reads them then).
  bool keep_unselected = false;
};

// Parses --iterations: "A:B", "A:", ":B", ":", "N" (negative indices count from the end, as in
// Python), or "all". False with `error` for anything else ("1:5:2" included: no stride).
bool parse_iteration_request(std::string_view text, IterationRequest& out, std::string& error);

// Steps [begin, end) a request selects among `count` steps, as Python resolves a slice; false
// with `error` when it selects none (or a single index is out of range). kAll/kDefault: all.
bool resolve_iteration_request(const IterationRequest& request, int64_t count, int64_t& begin,
                               int64_t& end, std::string& error);

// The warm-up rule: with at least kMinStepsForWarmUp steps, step 0 is warm-up when its wall time
// exceeds kWarmUpFactor times the median wall time of the other steps. Why these numbers:
// steady-state steps of one workload differ by a few percent (timer, allocator, OS noise; a
// slow later step is one sample and the median ignores it), while a first step pays one-time
// costs (lazy module and CUDA context initialisation, cuDNN/oneDNN algorithm search, the caching
// allocator growing, autograd graph and dispatch caches) that make it 2x or more the others.
// 1.25 sits well above the noise and well below such costs. With 1 or 2 steps there is no
// median of the others to judge noise by, and leaving out half the profile would be drastic.
// Only step 0: a later slow step is the workload's own behaviour and shows in the spread.
inline constexpr size_t kMinStepsForWarmUp = 3;
inline constexpr double kWarmUpFactor = 1.25;
struct WarmUp {
  bool detected = false;
  int64_t wall = 0;    // step 0's wall time (ns)
  int64_t median = 0;  // the median of the others' (ns)
};
WarmUp detect_warm_up(const std::vector<int64_t>& walls);

// The length of the union of [start, end) intervals (GPU streams overlap); sorts `intervals`.
int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& intervals);

// Each step's figures (StepStats) from data.records, records by their `step`.
std::vector<StepStats> step_stats(const ReadResult& data);

// Removes the records launched inside pyprof.autotune ranges (ProfRecord::autotune: Triton's
// autotuner timing launch configurations; docs/compile.md) as select_iterations removes steps,
// adding their count and GPU time to data.autotune_records and autotune_gpu_time.
void leave_out_autotuning(ReadResult& data);

// One line for standard error when autotuning records were left out ("" when none).
std::string autotuning_note(const ReadResult& data);

// Leaves out autotuning (leave_out_autotuning), then
// applies the request to `data` (a no-op without iterations: a request other than `all` then
// only adds a warning): fills data.iterations' stats, state and selection fields and, when a
// selection is active, removes the records outside the selected steps (CPU parent links
// renumbered; a parent left out makes its child a root) and recounts data.above_peak and
// data.bad_time over the kept records. False with `error` when the request selects no step.
bool select_iterations(ReadResult& data, const IterationRequest& request, std::string& error);

// One line for standard error while a selection is active ("" when none): the rule, what the
// reports cover, why, and how many records left. Quotes the trace's names: terminal_safe() it.
std::string iteration_note(const ReadResult& data);

// Median, extremes and quartiles of samples (quartiles by linear interpolation between order
// statistics, numpy's default); all NaN when there are none.
struct Spread {
  size_t n = 0;
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
  double iqr() const { return q3 - q1; }
};
Spread spread_of(std::vector<double> samples);

// The `iteration` report: one row per step (all of them, Selected yes/no/warm-up), then the
// steady state (median and spread of wall time, GPU busy %, TFLOP/s) over the selected steps.
// Empty tables with a title saying so when the profile has no iterations.
std::vector<ReportTable> iteration_report(const ReadResult& data);

// The summary report's rows about iterations (none without iterations): how they were
// detected, what the reports cover, records left out, the step time's median and spread.
struct SummaryRow {
  std::string metric, value;
  Unit unit = Unit::kText;
  std::string human;  // the value in human units where it is no single quantity ("": value)
};
std::vector<SummaryRow> iteration_summary_rows(const ReadResult& data);

// Per-iteration samples of any aggregate, for statistics across iterations (pyprof diff's
// significance test, advice): for each selected step of data.iterations, in step order, the sum
// of value(r) over the records r of that step with keep(r). Records outside every step count in
// no sample. Empty when the profile has no iterations. Call after select_iterations (before it
// every step counts as selected).
std::vector<double> per_step_samples(const ReadResult& data,
                                     const std::function<bool(const ProfRecord&)>& keep,
                                     const std::function<double(const ProfRecord&)>& value);
// The same for report time (report_time(): GPU kernel and copy time; CPU op self time), e.g.
// per_step_time(data, [&](const ProfRecord& r) { return r.op == conv; }).
std::vector<double> per_step_time(const ReadResult& data,
                                  const std::function<bool(const ProfRecord&)>& keep);

}  // namespace pyprof::prof
