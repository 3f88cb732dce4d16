// Iteration (training step) detection: which spans of the trace are the program's loop
// iterations, found from the ranges it holds, and which step each record falls in.
//
// The rules, first match wins (docs/formats.md §3, "Iterations"):
//   1. step_range      `--step-range NAME`: ranges named NAME, or NAME followed by a number
//                      ("step", "step 3", "step#3", "step_3").
//   2. profiler_step   torch.profiler's "ProfilerStep#N" ranges (Kineto user_annotation events;
//                      the RecordFunction scopes of the same name in a pyprof capture).
//   3. user_range      user ranges named like a step ("step", "iteration", "iter", "train_step",
//                      optionally numbered; any case), at least twice on one thread.
//   4. optimizer_step  torch.optim's "Optimizer.step#..." scopes, at least twice: iteration i
//                      ends where optimizer step i ends; the first starts at the first record.
//   5. module_forward  the outermost module forward that repeats (the same name at least twice
//                      on the thread that ran most ops): iteration i runs from forward i's start
//                      to forward i+1's start, the last one to the end of the trace.
// Nothing is invented: a heuristic rule (3-5) needs two occurrences (one is not a loop), and a
// trace that matches none has no iterations. Candidates are taken on one thread (the one with the
// most of them); nested ones collapse to the outermost, and spans never overlap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parse/correlate.h"
#include "parse/trace.h"

namespace pyprof::parse {

enum class IterationRule : uint8_t {
  kNone = 0,
  kStepRange,
  kProfilerStep,
  kUserRange,
  kOptimizerStep,
  kModuleForward,
};

struct IterationStep {
  int64_t start = 0;  // records' timebase, ns; [start, end)
  int64_t end = 0;
  std::string name;  // the range that made it ("ProfilerStep#12", "step 3", "LeNet")
  // The capture holds part of its work: its range was never closed (a program killed or ended
  // mid-step; the step ends with the trace), or it lies across the edge of the capture window
  // (`pyprof profile --delay/--duration`: the range is kept whole, the ops outside dropped).
  bool cut = false;
};

struct Iterations {
  IterationRule rule = IterationRule::kNone;
  // The range name or pattern the rule used: "ProfilerStep#N", "step N", "Optimizer.step#SGD.step".
  std::string range;
  std::vector<IterationStep> steps;  // time order, not overlapping
  // The step whose span holds time `t`, or -1 (binary search over the sorted spans).
  int32_t step_at(int64_t t) const;
};

// "profiler_step", "step_range", "user_range", "optimizer_step", "module_forward"; "" for kNone.
std::string_view iteration_rule_name(IterationRule rule);

// The CPU-side time that places record `k` (an entry of Correlation::order) in a step: a GPU
// activity's launch call start (its own start when it has no launch), an op instance's start.
int64_t record_time(const Trace& trace, const Correlation& corr, size_t k);

// True when `name` is `base`, or `base` followed by an optional separator (' ', '#', '_', ':',
// '-') and a number. `ignore_case` compares ASCII letters without case.
bool is_numbered_name(std::string_view name, std::string_view base, bool ignore_case);

// Applies the rules above. `step_range`: the `--step-range` name, empty when not given (when
// given and nothing matches, no iterations are detected: the user's choice is not second-guessed).
Iterations detect_iterations(const Trace& trace, const Correlation& corr,
                             std::string_view step_range);

// parse's one summary line, after "iterations: ": "6 (ProfilerStep#N ranges)", or
// "none detected (...why...)".
std::string iteration_summary(const Iterations& it, std::string_view step_range);

}  // namespace pyprof::parse
