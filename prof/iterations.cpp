#include "prof/iterations.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace pyprof::prof {

namespace {

bool parse_index(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && end == last;
}

// A slice bound resolved as Python does for a sequence of `count` items.
int64_t clamp_bound(int64_t bound, int64_t count) {
  if (bound < 0) return std::max<int64_t>(bound + count, 0);
  return std::min(bound, count);
}

bool is_gpu_activity(const ProfRecord& r) {
  return r.kind == Kind::kKernel || r.kind == Kind::kMemcpy || r.kind == Kind::kMemset;
}

// Raw rate text as the other reports write it (raw_rate_text); "na" without time.
std::string rate_text(double tflops) {
  return std::isnan(tflops) ? "na" : raw_rate_text(tflops, 3);
}

// FLOPs over ns in TFLOP/s; NaN without time.
double tflops_of(double flops, int64_t ns) {
  return ns > 0 ? flops / static_cast<double>(ns) / 1e3 : std::nan("");
}

double busy_percent(const StepStats& s) {
  return s.wall > 0 ? 100.0 * static_cast<double>(s.gpu_busy) / static_cast<double>(s.wall)
                    : std::nan("");
}

const char* state_text(StepState s) {
  switch (s) {
    case StepState::kSelected:
      return "yes";
    case StepState::kWarmUp:
      return "warm-up";
    case StepState::kCut:
      return "cut";
    case StepState::kEmpty:
      return "empty";
    case StepState::kLeftOut:
      break;
  }
  return "no";
}

std::vector<double> selected_samples(const ReadResult& data,
                                     const std::function<double(const StepStats&)>& value) {
  const Iterations& it = data.iterations;
  std::vector<double> out;
  for (size_t i = 0; i < it.stats.size(); ++i) {
    if (i < it.state.size() && it.state[i] != StepState::kSelected) continue;
    double v = value(it.stats[i]);
    if (!std::isnan(v)) out.push_back(v);
  }
  return out;
}

}  // namespace

int64_t union_length(std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t total = 0, cur_start = 0, cur_end = std::numeric_limits<int64_t>::min();
  for (const auto& [s, e] : intervals) {
    if (s > cur_end) {
      if (cur_end > cur_start) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (!intervals.empty() && cur_end > cur_start) total += cur_end - cur_start;
  return total;
}

bool parse_iteration_request(std::string_view text, IterationRequest& out, std::string& error) {
  out = IterationRequest{};
  out.text = text;
  if (text == "all") {
    out.mode = IterationRequest::Mode::kAll;
    return true;
  }
  auto bad = [&] {
    error = fmt::format(
        "--iterations '{}': expected A:B, A:, :B, N (step indices, negative from the end, as a "
        "Python slice) or all",
        text);
    return false;
  };
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    int64_t n = 0;
    if (!parse_index(text, n)) return bad();
    out.mode = IterationRequest::Mode::kSingle;
    out.begin = n;
    return true;
  }
  std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  if (b.find(':') != std::string_view::npos) return bad();
  int64_t n = 0;
  if (!a.empty()) {
    if (!parse_index(a, n)) return bad();
    out.begin = n;
  }
  if (!b.empty()) {
    if (!parse_index(b, n)) return bad();
    out.end = n;
  }
  out.mode = IterationRequest::Mode::kSlice;
  return true;
}

bool resolve_iteration_request(const IterationRequest& request, int64_t count, int64_t& begin,
                               int64_t& end, std::string& error) {
  begin = 0;
  end = count;
  if (request.mode == IterationRequest::Mode::kSingle) {
    int64_t i = *request.begin < 0 ? *request.begin + count : *request.begin;
    if (i < 0 || i >= count) {
      error = fmt::format("--iterations {}: the profile has {} iterations (0..{})", request.text,
                          count, count - 1);
      return false;
    }
    begin = i;
    end = i + 1;
  } else if (request.mode == IterationRequest::Mode::kSlice) {
    begin = request.begin ? clamp_bound(*request.begin, count) : 0;
    end = request.end ? clamp_bound(*request.end, count) : count;
    if (begin >= end) {
      error = fmt::format("--iterations {}: selects none of the profile's {} iterations (0..{})",
                          request.text, count, count - 1);
      return false;
    }
  }
  return true;
}

WarmUp detect_warm_up(const std::vector<int64_t>& walls) {
  WarmUp w;
  if (walls.size() < kMinStepsForWarmUp) return w;
  std::vector<int64_t> others(walls.begin() + 1, walls.end());
  std::sort(others.begin(), others.end());
  size_t n = others.size();
  // The median; of an even count the mean of the middle two (rounded down: ns).
  w.median = n % 2 ? others[n / 2] : others[n / 2 - 1] + (others[n / 2] - others[n / 2 - 1]) / 2;
  w.wall = walls[0];
  w.detected =
      w.median > 0 && static_cast<double>(w.wall) > kWarmUpFactor * static_cast<double>(w.median);
  return w;
}

std::vector<StepStats> step_stats(const ReadResult& data) {
  const std::vector<Step>& steps = data.iterations.steps;
  std::vector<StepStats> stats(steps.size());
  // Per step, per device (in the order the devices are first seen): their GPU intervals.
  std::vector<int32_t> devices;
  std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>> busy(
      data.cpu_only ? 0 : steps.size());
  PhaseOf phase_of(data.strings);
  for (const ProfRecord& r : data.records) {
    if (r.step < 0 || static_cast<size_t>(r.step) >= steps.size()) continue;
    StepStats& s = stats[r.step];
    ++s.records;
    int64_t time = report_time(r, data.cpu_only);
    switch (phase_of(r)) {
      case Phase::kForward:
        s.forward += time;
        break;
      case Phase::kBackward:
        s.backward += time;
        break;
      case Phase::kOptimizer:
        s.optimizer += time;
        break;
      case Phase::kOther:
        break;
    }
    if (data.cpu_only ? r.kind == Kind::kOp : r.kind == Kind::kKernel) ++s.kernels;
    if (r.counted) s.flops += r.flops;
    // GPU work launched in the step, wherever it ran: a record without a credible time has no
    // place on the time line.
    if (!data.cpu_only && is_gpu_activity(r) && !r.bad_time) {
      const auto at = std::find(devices.begin(), devices.end(), r.device);
      const size_t d = static_cast<size_t>(at - devices.begin());
      if (at == devices.end()) devices.push_back(r.device);
      if (busy[r.step].size() <= d) busy[r.step].resize(d + 1);
      busy[r.step][d].emplace_back(r.start, r.start + r.duration);
    }
  }
  // Devices with GPU work outside every step count too: a GPU idle in a step is idle there.
  if (!data.cpu_only) {
    for (const ProfRecord& r : data.records) {
      if (is_gpu_activity(r) && !r.bad_time &&
          std::find(devices.begin(), devices.end(), r.device) == devices.end()) {
        devices.push_back(r.device);
      }
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    stats[i].wall = steps[i].end - steps[i].start;
    if (data.cpu_only) continue;
    stats[i].gpu_devices = static_cast<int32_t>(devices.size());
    int64_t sum = 0;
    for (auto& spans : busy[i]) sum += union_length(spans);
    stats[i].gpu_busy = devices.size() > 1 ? sum / static_cast<int64_t>(devices.size()) : sum;
  }
  return stats;
}

namespace {

// Keeps the records `keep` says yes to, in order, renumbering the CPU parent links (a parent
// left out makes its child a root), and recounts data.above_peak and data.bad_time. Returns
// how many were left out.
template <class Keep>
int64_t keep_records(ReadResult& data, const Keep& keep) {
  std::vector<int32_t> new_index(data.records.size(), -1);
  size_t kept = 0;
  for (size_t i = 0; i < data.records.size(); ++i) {
    const ProfRecord& r = data.records[i];
    if (!keep(r)) continue;
    new_index[i] = static_cast<int32_t>(kept);
    if (kept != i) data.records[kept] = r;
    ++kept;
  }
  const auto left_out = static_cast<int64_t>(data.records.size() - kept);
  if (left_out == 0) return 0;
  data.records.resize(kept);
  data.above_peak = data.bad_time = 0;
  for (ProfRecord& r : data.records) {
    if (r.parent >= 0) r.parent = new_index[r.parent];
    data.above_peak += r.above_peak ? 1 : 0;
    data.bad_time += r.bad_time ? 1 : 0;
  }
  return left_out;
}

}  // namespace

void leave_out_autotuning(ReadResult& data) {
  data.autotune_records += keep_records(data, [&](const ProfRecord& r) {
    if (!r.autotune) return true;
    if (is_gpu_activity(r) && !r.bad_time) data.autotune_gpu_time += r.duration;
    return false;
  });
}

std::string autotuning_note(const ReadResult& data) {
  if (data.autotune_records == 0) return "";
  std::string note = fmt::format("{} record{} of Triton's autotuning (pyprof.autotune ranges",
                                 data.autotune_records, data.autotune_records == 1 ? "" : "s");
  if (data.autotune_gpu_time > 0) {
    note += fmt::format("; {} of GPU time",
                        format_quantity(static_cast<double>(data.autotune_gpu_time), Unit::kTime));
  }
  return note + ") left out: they time launch configurations, not the program's work";
}

namespace {

// The CPU-side time that places a record among the steps, as parse placed it (docs/formats.md
// §3 `step`): a GPU record's launch, an op's start.
int64_t placing_time(const ProfRecord& r) { return r.launch_start >= 0 ? r.launch_start : r.start; }

// The first step whose span starts after `t` (steps are in time order and do not overlap).
size_t next_step_after(const std::vector<Step>& steps, int64_t t) {
  return static_cast<size_t>(
      std::upper_bound(steps.begin(), steps.end(), t,
                       [](int64_t time, const Step& s) { return time < s.start; }) -
      steps.begin());
}

bool is_whole(StepState s) { return s != StepState::kCut && s != StepState::kEmpty; }

// "1:4,5:8": the selected steps as slices (one when they are consecutive).
std::string selected_text(const std::vector<StepState>& state) {
  std::string text;
  for (size_t i = 0; i < state.size();) {
    if (state[i] != StepState::kSelected) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < state.size() && state[j] == StepState::kSelected) ++j;
    if (!text.empty()) text += ',';
    text += j - i == 1 ? std::to_string(i) : fmt::format("{}:{}", i, j);
    i = j;
  }
  return text;
}

// Accounts for the gaps before the selected steps (Iterations::between) and, while a selection
// is active, for where the records it leaves out are (Iterations::left_*).
void account_outside(ReadResult& data) {
  Iterations& it = data.iterations;
  it.between = {};
  it.left_in_steps = it.left_between = it.left_before = it.left_after = it.left_before_trace = {};
  it.total_time = 0;
  const std::vector<Step>& steps = it.steps;
  for (size_t k = 0; k < steps.size(); ++k) {
    if (it.state[k] != StepState::kSelected) continue;
    it.between.steps_wall += steps[k].end - steps[k].start;
    if (k > 0 && steps[k].start > steps[k - 1].end) {
      ++it.between.gaps;
      it.between.wall += steps[k].start - steps[k - 1].end;
    }
  }
  for (const ProfRecord& r : data.records) {
    const int64_t time = report_time(r, data.cpu_only);
    it.total_time += time;
    Iterations::Part* left = nullptr;
    if (r.step >= 0) {
      if (it.state[r.step] != StepState::kSelected) left = &it.left_in_steps;
    } else if (r.before_trace) {
      // It ran during the trace, perhaps inside a step's span, but was launched before the
      // trace began: neither the loop's time between steps nor any step's work.
      left = &it.left_before_trace;
    } else {
      const size_t next = next_step_after(steps, placing_time(r));
      if (next == 0) {
        left = &it.left_before;
      } else if (next == steps.size()) {
        left = &it.left_after;
      } else {
        left = &it.left_between;
        if (it.state[next] == StepState::kSelected) {
          ++it.between.records.records;
          it.between.records.time += time;
          if (names_dataloader_range(data.strings.get(r.layer))) {
            ++it.between.dataloader.records;
            it.between.dataloader.time += time;
          }
          it.between.time_by_op[r.op != 0 ? r.op : r.name] += time;
        }
      }
    }
    if (left && it.selection_active) {
      ++left->records;
      left->time += time;
    }
  }
}

}  // namespace

bool select_iterations(ReadResult& data, const IterationRequest& request, std::string& error) {
  leave_out_autotuning(data);
  Iterations& it = data.iterations;
  // Work launched before the trace began ran in it, but in no step: counted apart, before a
  // selection leaves it out with everything else outside the selected steps.
  it.before_trace_records = it.before_trace_time = 0;
  for (const ProfRecord& r : data.records) {
    if (!r.before_trace) continue;
    ++it.before_trace_records;
    it.before_trace_time += r.bad_time ? 0 : r.duration;
  }
  const int64_t count = static_cast<int64_t>(it.steps.size());
  it.state.assign(it.steps.size(), StepState::kSelected);
  it.selection_active = false;
  it.records_left_out = 0;
  it.warm_up_wall = it.warm_up_median = 0;
  if (count == 0) {
    it.selection = "all";
    if (request.mode == IterationRequest::Mode::kSlice ||
        request.mode == IterationRequest::Mode::kSingle) {
      data.warnings.push_back("--iterations " + request.text +
                              ": the profile has no iterations (parse detected no steps): the "
                              "reports cover every record");
    }
    return true;
  }
  it.stats = step_stats(data);
  // A step the capture cut, or one without a record, is not a whole iteration: never selected,
  // and out of the steady state, whatever the request.
  bool cut_with_records = false;
  for (int64_t i = 0; i < count; ++i) {
    if (it.steps[i].cut) {
      it.state[i] = StepState::kCut;
      cut_with_records = cut_with_records || it.stats[i].records > 0;
    } else if (it.stats[i].records == 0) {
      it.state[i] = StepState::kEmpty;
    }
  }
  int64_t begin = 0, end = count;
  if (!resolve_iteration_request(request, count, begin, end, error)) return false;
  if (request.mode == IterationRequest::Mode::kDefault) {
    // The warm-up rule judges step 0 against the other whole steps.
    std::vector<int64_t> walls;
    for (int64_t i = 0; i < count; ++i) {
      if (is_whole(it.state[i])) walls.push_back(it.stats[i].wall);
    }
    WarmUp w = is_whole(it.state[0]) ? detect_warm_up(walls) : WarmUp{};
    if (w.detected) {
      it.state[0] = StepState::kWarmUp;
      it.warm_up_wall = w.wall;
      it.warm_up_median = w.median;
      it.selection_active = true;
    }
    it.selection_active = it.selection_active || cut_with_records;
  } else if (request.mode != IterationRequest::Mode::kAll) {
    bool any = false;
    for (int64_t i = 0; i < count; ++i) {
      if (!is_whole(it.state[i])) continue;
      if (i < begin || i >= end) {
        it.state[i] = StepState::kLeftOut;
      } else {
        any = true;
      }
    }
    if (!any) {
      error = fmt::format(
          "--iterations {}: selects no whole iteration (the capture cut or left empty the steps "
          "it names; --iterations all keeps every record)",
          request.text);
      return false;
    }
    it.selection_active = true;
  }
  it.selection = request.mode == IterationRequest::Mode::kAll ? "all" : selected_text(it.state);
  account_outside(data);
  if (!it.selection_active) return true;

  auto in_selection = [&](const ProfRecord& r) {
    return r.step >= 0 && it.state[r.step] == StepState::kSelected;
  };
  if (request.keep_unselected) {
    for (ProfRecord& r : data.records) {
      r.selected = in_selection(r);
      it.records_left_out += r.selected ? 0 : 1;
    }
    return true;
  }
  it.records_left_out = keep_records(data, in_selection);
  return true;
}

namespace {

std::string time_text(int64_t ns) { return format_quantity(static_cast<double>(ns), Unit::kTime); }

// "step 7 cut by the capture (...); steps 8, 9 empty (...)" ("" when every step is whole).
std::string partial_steps_text(const Iterations& it) {
  std::vector<size_t> cut, empty;
  for (size_t i = 0; i < it.state.size(); ++i) {
    if (it.state[i] == StepState::kCut) cut.push_back(i);
    if (it.state[i] == StepState::kEmpty) empty.push_back(i);
  }
  auto list = [](const std::vector<size_t>& steps) {
    std::string text = steps.size() == 1 ? "step " : "steps ";
    for (size_t k = 0; k < steps.size() && k < 5; ++k) {
      text += (k ? ", " : "") + std::to_string(steps[k]);
    }
    if (steps.size() > 5) text += fmt::format(" and {} more", steps.size() - 5);
    return text;
  };
  std::string text;
  if (!cut.empty()) {
    text = list(cut) +
           " cut by the capture (across an edge of the --delay/--duration window, or a range "
           "never closed: the program ended inside)";
  }
  if (!empty.empty()) {
    text += (text.empty() ? "" : "; ") + list(empty) +
            " empty (no record: pyprof.stop() before them, or outside the capture)";
  }
  return text.empty() ? text : text + ": left out of the steady state";
}

}  // namespace

std::string iteration_note(const ReadResult& data) {
  const Iterations& it = data.iterations;
  const std::string partial = partial_steps_text(it);
  if (!it.selection_active && partial.empty()) return "";
  std::string note = fmt::format("iterations: {} by {} ({}); reports cover {}", it.steps.size(),
                                 it.rule, it.range, it.selection);
  if (!it.state.empty() && it.state[0] == StepState::kWarmUp) {
    note += fmt::format(
        " (step 0 left out as warm-up: {} against a median of {}; "
        "--iterations all keeps it)",
        format_quantity(static_cast<double>(it.warm_up_wall), Unit::kTime),
        format_quantity(static_cast<double>(it.warm_up_median), Unit::kTime));
  }
  if (!partial.empty()) note += "; " + partial;
  if (!it.selection_active) return note;
  note += fmt::format("; {} record{} outside them left out", it.records_left_out,
                      it.records_left_out == 1 ? "" : "s");
  const int64_t left = it.left_in_steps.time + it.left_between.time + it.left_before.time +
                       it.left_after.time + it.left_before_trace.time;
  if (it.records_left_out > 0) {
    note += fmt::format(", {} of {} {} ({:.1f}%):", time_text(left), time_text(it.total_time),
                        data.cpu_only ? "op self time" : "GPU time",
                        it.total_time > 0
                            ? 100.0 * static_cast<double>(left) / static_cast<double>(it.total_time)
                            : 0.0);
    const char* sep = " ";
    auto part = [&](const Iterations::Part& p, const char* where) {
      if (p.records == 0) return;
      note += fmt::format("{}{} {} ({})", sep, p.records, where, time_text(p.time));
      sep = ", ";
    };
    part(it.left_in_steps, "in steps not selected");
    part(it.left_between, "between steps");
    part(it.left_before, "before the first step");
    part(it.left_after, "after the last step");
    part(it.left_before_trace, "launched before the trace began");
  }
  if (it.between.wall > 0) {
    note += fmt::format(
        "; the loop spent {} ({:.1f}% of its wall time) between the selected steps, outside "
        "every step range (--report advice looks at it)",
        time_text(it.between.wall),
        100.0 * static_cast<double>(it.between.wall) /
            static_cast<double>(it.between.wall + it.between.steps_wall));
  }
  return note;
}

Spread spread_of(std::vector<double> samples) {
  Spread s;
  s.n = samples.size();
  if (samples.empty()) {
    s.median = s.min = s.max = s.q1 = s.q3 = std::nan("");
    return s;
  }
  std::sort(samples.begin(), samples.end());
  auto quantile = [&](double q) {
    double pos = q * static_cast<double>(samples.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (pos - static_cast<double>(lo)) * (samples[hi] - samples[lo]);
  };
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(0.5);
  s.q1 = quantile(0.25);
  s.q3 = quantile(0.75);
  return s;
}

std::vector<ReportTable> iteration_report(const ReadResult& data) {
  const Iterations& it = data.iterations;
  const bool cpu = data.cpu_only;
  // Figures from before the selection (select_iterations); computed here when it did not run.
  std::vector<StepStats> computed;
  const std::vector<StepStats>& stats =
      it.stats.size() == it.steps.size() ? it.stats : (computed = step_stats(data));
  ReportTable steps;
  steps.title = it.steps.empty()
                    ? "iterations (none: parse detected no steps)"
                    : fmt::format("iterations ({} by {}: {}; reports cover {})", it.steps.size(),
                                  it.rule, it.range, it.selection.empty() ? "all" : it.selection);
  steps.id = "steps";
  column(steps, "Step", Unit::kId, Keep::kAlways);
  column(steps, "Name", Unit::kText, Keep::kMain);
  column(steps, "Selected", Unit::kText, Keep::kAlways);
  column(steps, "Start(ns)", Unit::kTime, Keep::kDetail);
  column(steps, "Wall(ns)", Unit::kTime, Keep::kAlways);
  // Several GPUs: each step's busy and idle time per GPU, their mean (StepStats::gpu_busy), as
  // the summary's "GPU busy %, mean over N GPUs".
  const int32_t gpus = stats.empty() ? 0 : stats.front().gpu_devices;
  const std::string over = gpus > 1 ? fmt::format(", mean over {} GPUs", gpus) : "";
  if (!cpu) {
    column(steps, "GPU busy" + over + "(ns)", Unit::kTime, Keep::kMain);
    column(steps, "GPU idle" + over + "(ns)", Unit::kTime, Keep::kMore);
  }
  column(steps, "Forward(ns)", Unit::kTime, Keep::kMore);
  column(steps, "Backward(ns)", Unit::kTime, Keep::kMore);
  column(steps, "Optimizer(ns)", Unit::kTime, Keep::kMore);
  column(steps, cpu ? "Ops" : "Kernels", Unit::kCount, Keep::kDetail);
  column(steps, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMore);
  column(steps, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  for (size_t i = 0; i < it.steps.size(); ++i) {
    const Step& step = it.steps[i];
    const StepStats& s = stats[i];
    std::vector<std::string> row = {
        std::to_string(step.index), step.name,
        state_text(i < it.state.size() ? it.state[i] : StepState::kSelected),
        std::to_string(step.start), std::to_string(s.wall)};
    if (!cpu) {
      row.push_back(std::to_string(s.gpu_busy));
      // GPU work launched in the step may run past its end (the GPU behind the CPU): then its
      // busy time exceeds the span and the step has no idle time.
      row.push_back(std::to_string(std::max<int64_t>(s.wall - s.gpu_busy, 0)));
    }
    row.push_back(std::to_string(s.forward));
    row.push_back(std::to_string(s.backward));
    row.push_back(std::to_string(s.optimizer));
    row.push_back(std::to_string(s.kernels));
    row.push_back(fmt::format("{:.0f}", s.flops));
    double rate = tflops_of(s.flops, s.wall);
    if (!std::isnan(rate)) steps.exact[{steps.rows.size(), row.size()}] = rate;
    row.push_back(rate_text(rate));
    steps.rows.push_back(std::move(row));
  }

  ReportTable steady;
  size_t selected = 0;
  for (size_t i = 0; i < it.steps.size(); ++i) {
    selected += i >= it.state.size() || it.state[i] == StepState::kSelected ? 1 : 0;
  }
  steady.title = fmt::format("steady state over the selected iterations ({} of {})", selected,
                             it.steps.size());
  steady.id = "steady_state";
  column(steady, "Metric", Unit::kText, Keep::kAlways);
  for (const char* h : {"Median", "Min", "Max", "Q1", "Q3", "IQR"})
    column(steady, h, Unit::kPerRow);
  keep_columns(steady, {Keep::kAlways, Keep::kAlways, Keep::kMain, Keep::kMain, Keep::kMore,
                        Keep::kMore, Keep::kMain});
  // Quantities, so that JSON writes them as numbers ("na" as null).
  std::fill(steady.numeric.begin() + 1, steady.numeric.end(), true);
  auto add = [&](std::string metric, Unit unit, const std::vector<double>& samples) {
    Spread s = spread_of(samples);
    std::vector<std::string> row = {std::move(metric)};
    for (double v : {s.median, s.min, s.max, s.q1, s.q3, s.iqr()}) {
      if (unit == Unit::kFlopRate) {
        if (!std::isnan(v)) steady.exact[{steady.rows.size(), row.size()}] = v;
        row.push_back(rate_text(v));
      } else if (std::isnan(v)) {
        row.push_back("na");
      } else {
        row.push_back(unit == Unit::kPercent ? fmt::format("{:.1f}", v) : fmt::format("{:.0f}", v));
      }
    }
    steady.rows.push_back(std::move(row));
    steady.row_units.push_back(unit);
  };
  if (!it.steps.empty()) {
    add("wall time (ns)", Unit::kTime,
        selected_samples(data, [](const StepStats& s) { return static_cast<double>(s.wall); }));
    if (!cpu) add("GPU busy %" + over, Unit::kPercent, selected_samples(data, busy_percent));
    add("TFLOP/s (over wall time)", Unit::kFlopRate,
        selected_samples(data, [](const StepStats& s) { return tflops_of(s.flops, s.wall); }));
  }
  return {steps, steady};
}

std::vector<SummaryRow> iteration_summary_rows(const ReadResult& data) {
  const Iterations& it = data.iterations;
  std::vector<SummaryRow> rows;
  if (it.before_trace_records > 0) {
    rows.push_back({"records launched before the trace began (in no step)",
                    std::to_string(it.before_trace_records), Unit::kCount, ""});
    rows.push_back({"GPU time launched before the trace began (ns)",
                    std::to_string(it.before_trace_time), Unit::kTime, ""});
  }
  if (it.steps.empty()) return rows;
  rows.push_back({"iterations", fmt::format("{} by {} ({})", it.steps.size(), it.rule, it.range),
                  Unit::kText, ""});
  SummaryRow cover{"iterations in the reports", it.selection.empty() ? "all" : it.selection,
                   Unit::kText, ""};
  if (!it.state.empty() && it.state[0] == StepState::kWarmUp) {
    std::string why =
        " (step 0 left out as warm-up: {} against a median of {}; --iterations all "
        "keeps it)";
    cover.human = cover.value +
                  fmt::format(fmt::runtime(why),
                              format_quantity(static_cast<double>(it.warm_up_wall), Unit::kTime),
                              format_quantity(static_cast<double>(it.warm_up_median), Unit::kTime));
    cover.value += fmt::format(fmt::runtime(why), fmt::format("{} ns", it.warm_up_wall),
                               fmt::format("{} ns", it.warm_up_median));
  }
  rows.push_back(cover);
  int64_t cut = 0, empty = 0;
  for (StepState state : it.state) {
    cut += state == StepState::kCut ? 1 : 0;
    empty += state == StepState::kEmpty ? 1 : 0;
  }
  if (cut > 0) {
    rows.push_back({"steps cut by the capture (left out)", std::to_string(cut), Unit::kCount, ""});
  }
  if (empty > 0) {
    rows.push_back({"empty steps (left out)", std::to_string(empty), Unit::kCount, ""});
  }
  auto percent = [](int64_t part, int64_t whole) {
    return fmt::format(
        "{:.1f}", whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  };
  if (it.selection_active) {
    rows.push_back({"records outside the selected iterations (left out)",
                    std::to_string(it.records_left_out), Unit::kCount, ""});
    const int64_t left = it.left_in_steps.time + it.left_between.time + it.left_before.time +
                         it.left_after.time + it.left_before_trace.time;
    rows.push_back({"time left out (ns)", std::to_string(left), Unit::kTime, ""});
    rows.push_back({"time left out %", percent(left, it.total_time), Unit::kPercent, ""});
    rows.push_back({"left out: in steps not selected (ns)", std::to_string(it.left_in_steps.time),
                    Unit::kTime, ""});
    rows.push_back(
        {"left out: between steps (ns)", std::to_string(it.left_between.time), Unit::kTime, ""});
    rows.push_back({"left out: before the first step (ns)", std::to_string(it.left_before.time),
                    Unit::kTime, ""});
    rows.push_back({"left out: after the last step (ns)", std::to_string(it.left_after.time),
                    Unit::kTime, ""});
    if (it.left_before_trace.records > 0) {
      rows.push_back({"left out: launched before the trace began (ns)",
                      std::to_string(it.left_before_trace.time), Unit::kTime, ""});
    }
  }
  if (it.between.wall > 0) {
    rows.push_back({"wall time between the selected steps (ns)", std::to_string(it.between.wall),
                    Unit::kTime, ""});
    rows.push_back({"wall time between the selected steps %",
                    percent(it.between.wall, it.between.wall + it.between.steps_wall),
                    Unit::kPercent, ""});
  }
  std::vector<double> walls =
      selected_samples(data, [](const StepStats& s) { return static_cast<double>(s.wall); });
  if (it.stats.size() != it.steps.size()) {  // select_iterations did not run: every step
    walls.clear();
    for (const Step& s : it.steps) walls.push_back(static_cast<double>(s.end - s.start));
  }
  Spread s = spread_of(walls);
  rows.push_back({"step time median (ns)", fmt::format("{:.0f}", s.median), Unit::kTime, ""});
  rows.push_back({"step time min (ns)", fmt::format("{:.0f}", s.min), Unit::kTime, ""});
  rows.push_back({"step time max (ns)", fmt::format("{:.0f}", s.max), Unit::kTime, ""});
  rows.push_back({"step time IQR (ns)", fmt::format("{:.0f}", s.iqr()), Unit::kTime, ""});
  return rows;
}

std::vector<double> per_step_samples(const ReadResult& data,
                                     const std::function<bool(const ProfRecord&)>& keep,
                                     const std::function<double(const ProfRecord&)>& value) {
  const Iterations& it = data.iterations;
  std::vector<double> sums(it.steps.size(), 0.0);
  for (const ProfRecord& r : data.records) {
    if (r.step < 0 || static_cast<size_t>(r.step) >= sums.size() || !keep(r)) continue;
    sums[r.step] += value(r);
  }
  std::vector<double> out;
  for (size_t i = 0; i < sums.size(); ++i) {
    if (i < it.state.size() && it.state[i] != StepState::kSelected) continue;
    out.push_back(sums[i]);
  }
  return out;
}

std::vector<double> per_step_time(const ReadResult& data,
                                  const std::function<bool(const ProfRecord&)>& keep) {
  const bool cpu = data.cpu_only;
  return per_step_samples(
      data, keep, [cpu](const ProfRecord& r) { return static_cast<double>(report_time(r, cpu)); });
}

}  // namespace pyprof::prof
