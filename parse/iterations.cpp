#include "parse/iterations.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "common/dict_schema.h"

namespace pyprof::parse {

std::string_view iteration_rule_name(IterationRule rule) {
  switch (rule) {
    case IterationRule::kStepRange:
      return dict::iteration_rule::kStepRange;
    case IterationRule::kProfilerStep:
      return dict::iteration_rule::kProfilerStep;
    case IterationRule::kUserRange:
      return dict::iteration_rule::kUserRange;
    case IterationRule::kOptimizerStep:
      return dict::iteration_rule::kOptimizerStep;
    case IterationRule::kModuleForward:
      return dict::iteration_rule::kModuleForward;
    case IterationRule::kNone:
      break;
  }
  return "";
}

int32_t Iterations::step_at(int64_t t) const {
  auto after =
      std::upper_bound(steps.begin(), steps.end(), t,
                       [](int64_t time, const IterationStep& s) { return time < s.start; });
  if (after == steps.begin()) return -1;
  const auto& step = *(after - 1);
  return t < step.end ? static_cast<int32_t>(after - 1 - steps.begin()) : -1;
}

int64_t record_time(const Trace& trace, const Correlation& corr, size_t k) {
  const int32_t index = corr.order[k];
  if (corr.cpu_only) return trace.ranges[index].start;
  const int32_t launch = corr.attributions[k].launch;
  return launch >= 0 ? trace.api_calls[launch].start : trace.activities[index].start;
}

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_text(std::string_view a, std::string_view b, bool ignore_case) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ignore_case ? lower(a[i]) != lower(b[i]) : a[i] != b[i]) return false;
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "step 12" -> "step N"; "ProfilerStep#3" -> "ProfilerStep#N"; "step" -> "step".
std::string pattern_of(std::string_view name) {
  size_t digits = name.size();
  while (digits > 0 && is_digit(name[digits - 1])) --digits;
  if (digits == name.size()) return std::string(name);
  return std::string(name.substr(0, digits)) + "N";
}

// The default step names of rule 3, compared without case.
constexpr std::string_view kDefaultStepNames[] = {"train_step", "iteration", "step", "iter"};

// The default name `name` is a numbered or plain form of, or "" (lower case).
std::string_view default_step_base(std::string_view name) {
  for (std::string_view base : kDefaultStepNames) {
    if (is_numbered_name(name, base, true)) return base;
  }
  return {};
}

// The trace's own ranges: those a `--graph-capture` join brought in (Trace::imported_ranges_begin
// on) are the capture's, not the replay's iterations.
size_t own_ranges(const Trace& trace) {
  return std::min(trace.ranges.size(), trace.imported_ranges_begin);
}

struct Bounds {
  int64_t first_record = std::numeric_limits<int64_t>::max();  // earliest record time
  int64_t end = std::numeric_limits<int64_t>::min();           // end of the trace (CPU side)
};

Bounds trace_bounds(const Trace& trace, const Correlation& corr) {
  Bounds b;
  for (size_t k = 0; k < corr.order.size(); ++k) {
    const int64_t t = record_time(trace, corr, k);
    b.first_record = std::min(b.first_record, t);
    if (t < std::numeric_limits<int64_t>::max()) b.end = std::max(b.end, t + 1);
  }
  const bool no_records = corr.order.empty();
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (no_records) b.first_record = std::min(b.first_record, r.start);
    if (r.end != kOpenEnd) b.end = std::max(b.end, r.end);
    b.end = std::max(b.end, r.start + 1);
  }
  for (size_t i = 0; i < trace.api_calls.size() && !trace.imported_call(i); ++i) {
    const ApiCall& c = trace.api_calls[i];
    b.end = std::max(b.end, std::max(c.end, c.start + 1));
  }
  return b;
}

// Keeps the candidates of the thread holding most of them (ties: the earliest first one).
std::vector<int32_t> on_busiest_thread(const Trace& trace, const std::vector<int32_t>& candidates) {
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> per_thread;  // count, first start
  for (int32_t i : candidates) {
    const RangeRecord& r = trace.ranges[i];
    auto [it, inserted] = per_thread.try_emplace(thread_key(r.pid, r.tid), 0, r.start);
    ++it->second.first;
    it->second.second = std::min(it->second.second, r.start);
  }
  uint64_t best = 0;
  std::pair<int64_t, int64_t> best_value{-1, 0};
  for (const auto& [key, value] : per_thread) {
    if (value.first > best_value.first ||
        (value.first == best_value.first && value.second < best_value.second)) {
      best = key;
      best_value = value;
    }
  }
  std::vector<int32_t> out;
  for (int32_t i : candidates) {
    const RangeRecord& r = trace.ranges[i];
    if (thread_key(r.pid, r.tid) == best) out.push_back(i);
  }
  return out;
}

// Outermost candidates in time order, as steps: one nested in another is dropped; one that
// starts before the previous ends (Kineto's microsecond floats round neighbours into each other)
// cuts the previous one short. Unclosed ranges end with the trace.
std::vector<IterationStep> outermost_spans(const Trace& trace, std::vector<int32_t> candidates,
                                           int64_t trace_end) {
  auto end_of = [&](int32_t i) {
    const int64_t e = trace.ranges[i].end;
    return e == kOpenEnd ? std::max(trace_end, trace.ranges[i].start) : e;
  };
  std::sort(candidates.begin(), candidates.end(), [&](int32_t a, int32_t b) {
    const RangeRecord& x = trace.ranges[a];
    const RangeRecord& y = trace.ranges[b];
    if (x.start != y.start) return x.start < y.start;
    if (end_of(a) != end_of(b)) return end_of(a) > end_of(b);
    return a < b;
  });
  std::vector<IterationStep> steps;
  for (int32_t i : candidates) {
    const RangeRecord& r = trace.ranges[i];
    const int64_t end = end_of(i);
    if (!steps.empty()) {
      IterationStep& last = steps.back();
      if (end <= last.end) continue;  // nested (or a copy)
      if (r.start < last.end) last.end = r.start;
    }
    steps.push_back({r.start, end, std::string(trace.pool.get(r.name)), r.end == kOpenEnd});
  }
  return steps;
}

bool is_range(const RangeRecord& r) { return r.shape != RangeShape::kMark; }

Iterations from_ranges(const Trace& trace, IterationRule rule, std::string range,
                       const std::vector<int32_t>& candidates, int64_t trace_end) {
  Iterations it;
  it.rule = rule;
  it.range = std::move(range);
  it.steps = outermost_spans(trace, on_busiest_thread(trace, candidates), trace_end);
  return it;
}

Iterations step_range_rule(const Trace& trace, std::string_view name, int64_t trace_end) {
  std::vector<int32_t> candidates;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (is_range(r) && is_numbered_name(trace.pool.get(r.name), name, false)) {
      candidates.push_back(static_cast<int32_t>(i));
    }
  }
  if (candidates.empty()) return {};
  return from_ranges(trace, IterationRule::kStepRange, std::string(name), candidates, trace_end);
}

Iterations profiler_step_rule(const Trace& trace, int64_t trace_end) {
  std::vector<int32_t> candidates;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (!is_range(r) || r.kind == MarkerKind::kModule) continue;
    std::string_view name = trace.pool.get(r.name);
    constexpr std::string_view kPrefix = "ProfilerStep#";
    if (name.size() > kPrefix.size() && name.starts_with(kPrefix) &&
        std::all_of(name.begin() + kPrefix.size(), name.end(), is_digit)) {
      candidates.push_back(static_cast<int32_t>(i));
    }
  }
  if (candidates.empty()) return {};
  return from_ranges(trace, IterationRule::kProfilerStep, "ProfilerStep#N", candidates, trace_end);
}

Iterations user_range_rule(const Trace& trace, int64_t trace_end) {
  // Groups by (thread, default name): "step 0".."step 9" on the main thread is one group. Of the
  // groups with two or more, the one covering most time wins (the outer of nested loops).
  struct Group {
    std::vector<int32_t> members;
    int64_t covered = 0;
  };
  std::unordered_map<uint64_t, std::unordered_map<std::string_view, Group>> groups;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (!is_range(r) || r.kind != MarkerKind::kUser) continue;
    std::string_view base = default_step_base(trace.pool.get(r.name));
    if (base.empty()) continue;
    Group& g = groups[thread_key(r.pid, r.tid)][base];
    g.members.push_back(static_cast<int32_t>(i));
    g.covered += (r.end == kOpenEnd ? std::max(trace_end, r.start) : r.end) - r.start;
  }
  const Group* best = nullptr;
  for (const auto& [thread, by_base] : groups) {
    for (const auto& [base, g] : by_base) {
      if (g.members.size() < 2) continue;
      if (!best || g.covered > best->covered ||
          (g.covered == best->covered && g.members.size() > best->members.size())) {
        best = &g;
      }
    }
  }
  if (!best) return {};
  Iterations it;
  it.rule = IterationRule::kUserRange;
  it.steps = outermost_spans(trace, best->members, trace_end);
  if (it.steps.size() < 2) return {};  // all nested in one: not a loop
  it.range = pattern_of(it.steps.front().name);
  return it;
}

Iterations optimizer_rule(const Trace& trace, const Bounds& bounds) {
  std::vector<int32_t> candidates;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (is_range(r) && r.kind == MarkerKind::kUser &&
        trace.pool.get(r.name).starts_with("Optimizer.step#")) {
      candidates.push_back(static_cast<int32_t>(i));
    }
  }
  std::vector<IterationStep> scopes =
      outermost_spans(trace, on_busiest_thread(trace, candidates), bounds.end);
  if (scopes.size() < 2) return {};
  Iterations it;
  it.rule = IterationRule::kOptimizerStep;
  it.range = scopes.front().name;
  int64_t start = std::min(bounds.first_record, scopes.front().start);
  for (IterationStep& s : scopes) {
    it.steps.push_back({start, s.end, std::move(s.name)});
    start = s.end;
  }
  return it;
}

Iterations module_rule(const Trace& trace, const Bounds& bounds) {
  std::unordered_map<uint64_t, int64_t> ops_per_thread;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (r.kind == MarkerKind::kOp) ++ops_per_thread[thread_key(r.pid, r.tid)];
  }
  if (ops_per_thread.empty()) return {};
  auto busiest = std::max_element(
      ops_per_thread.begin(), ops_per_thread.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second < b.second : a.first > b.first;
      });
  const uint64_t thread = busiest->first;
  // Outermost module ranges of that thread, by name: how many, and the time they cover.
  struct Group {
    std::vector<int32_t> members;
    int64_t covered = 0;
  };
  std::unordered_map<uint32_t, Group> by_name;
  for (size_t i = 0; i < own_ranges(trace); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (r.kind != MarkerKind::kModule || !is_range(r) || thread_key(r.pid, r.tid) != thread) {
      continue;
    }
    if (r.parent >= 0 && module_of(trace, r.parent) >= 0) continue;  // inside a module
    Group& g = by_name[r.name];
    g.members.push_back(static_cast<int32_t>(i));
    g.covered += (r.end == kOpenEnd ? bounds.end : r.end) - r.start;
  }
  const Group* best = nullptr;
  for (const auto& [name, g] : by_name) {
    if (g.members.size() < 2) continue;
    if (!best || g.members.size() > best->members.size() ||
        (g.members.size() == best->members.size() && g.covered > best->covered)) {
      best = &g;
    }
  }
  if (!best) return {};
  std::vector<IterationStep> forwards = outermost_spans(trace, best->members, bounds.end);
  if (forwards.size() < 2) return {};
  Iterations it;
  it.rule = IterationRule::kModuleForward;
  it.range = forwards.front().name;
  for (size_t i = 0; i < forwards.size(); ++i) {
    const int64_t end =
        i + 1 < forwards.size() ? forwards[i + 1].start : std::max(bounds.end, forwards[i].end);
    it.steps.push_back({forwards[i].start, end, std::move(forwards[i].name)});
  }
  return it;
}

}  // namespace

bool is_numbered_name(std::string_view name, std::string_view base, bool ignore_case) {
  if (base.empty() || name.size() < base.size()) return false;
  if (!same_text(name.substr(0, base.size()), base, ignore_case)) return false;
  std::string_view rest = name.substr(base.size());
  if (rest.empty()) return true;
  if (rest[0] == ' ' || rest[0] == '#' || rest[0] == '_' || rest[0] == ':' || rest[0] == '-') {
    rest.remove_prefix(1);
  }
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), is_digit);
}

Iterations detect_iterations(const Trace& trace, const Correlation& corr,
                             std::string_view step_range) {
  const Bounds bounds = trace_bounds(trace, corr);
  Iterations it;
  if (!step_range.empty()) {
    it = step_range_rule(trace, step_range, bounds.end);
  } else {
    it = profiler_step_rule(trace, bounds.end);
    if (it.rule == IterationRule::kNone) it = user_range_rule(trace, bounds.end);
    if (it.rule == IterationRule::kNone) it = optimizer_rule(trace, bounds);
    if (it.rule == IterationRule::kNone) it = module_rule(trace, bounds);
  }
  // The collector keeps a range that overlaps its window (--delay, --duration) whole, but only
  // the events inside the window: a step across the window's start or end holds part of its
  // work, as one whose range never closed does.
  for (IterationStep& step : it.steps) {
    if (step.start < trace.capture_window_begin || step.end > trace.capture_window_end) {
      step.cut = true;
    }
  }
  return it;
}

namespace {

std::string rule_summary(const Iterations& it, std::string_view step_range) {
  const size_t n = it.steps.size();
  switch (it.rule) {
    case IterationRule::kStepRange:
      return fmt::format("{} (--step-range ranges \"{}\")", n, it.range);
    case IterationRule::kProfilerStep:
      return fmt::format("{} (ProfilerStep#N ranges)", n);
    case IterationRule::kUserRange:
      return fmt::format("{} (user ranges \"{}\")", n, it.range);
    case IterationRule::kOptimizerStep:
      return fmt::format("{} (optimizer steps \"{}\": each iteration ends with one)", n, it.range);
    case IterationRule::kModuleForward:
      return fmt::format(
          "{} (repeating outermost module forward \"{}\": each iteration starts "
          "with one)",
          n, it.range);
    case IterationRule::kNone:
      break;
  }
  if (!step_range.empty()) {
    return fmt::format("none detected (no range named \"{0}\" or \"{0} N\", from --step-range)",
                       step_range);
  }
  return "none detected (no step, ProfilerStep, optimizer or repeating module ranges)";
}

}  // namespace

std::string iteration_summary(const Iterations& it, std::string_view step_range) {
  std::string text = rule_summary(it, step_range);
  size_t cut = 0;
  for (const IterationStep& step : it.steps) cut += step.cut ? 1 : 0;
  if (cut > 0) {
    text += fmt::format(
        "; {} cut by the capture (across an edge of the --delay/--duration window, or its range "
        "never closed): prof leaves {} out of the steady state",
        cut == 1 ? "1 step" : std::to_string(cut) + " steps", cut == 1 ? "it" : "them");
  }
  return text;
}

}  // namespace pyprof::parse
