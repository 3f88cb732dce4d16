// Steps found in a profile without iterations (docs/diff.md §1.1): a fixed-length capture
// (`nsys --duration`, `pyprof profile --duration`, a window cut from a longer run) of a
// training or inference loop calls the same ops in the same order again and again, so its
// sequence of op calls repeats with a period. pyprof diff cuts such a profile into its whole
// repetitions to compare it per iteration; the calls before the first and after the last
// whole repetition (where the capture cut an iteration) are left out.
//
// The sequence is that of the thread with the most op calls: an op call is an op instance
// (the kernels and copies one op range launched; CPU-only profiles: a top-level op record), in
// the order of its CPU-side start, named by (op, direction, module, input shapes), or by the
// kernel's name for a kernel launched outside every op. A repetition starts at each call of
// one op, the anchor: an op whose calls are evenly spaced in the sequence and cut it into the
// shortest stretches that (nearly) all repeat one sequence, of those the one whose calls split
// the fewest forward calls from their backward (docs/diff.md §1.1). Nothing is invented:
// without such an op, or with fewer than two whole repetitions, no steps are found and the
// text says why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prof/records.h"

namespace pyprof::prof {

// The detector's tolerances (repeating_steps.cpp, why these numbers there).
inline constexpr size_t kMinRepetitions = 2;       // whole ones: Welch's test needs 2 a side
inline constexpr double kSegmentTolerance = 0.02;  // calls a repetition may differ by, relative

struct RepeatingSteps {
  bool found = false;
  // What the detector found, for the summary: the period, the anchor, the repetitions; or why
  // it found none.
  std::string text;
  // found: per record of data.records, the repetition holding its CPU-side start (0-based), -1
  // outside every whole repetition.
  std::vector<int32_t> step_of_record;
  // found: each repetition's [start, end) in the records' timebase (ns): from one anchor call's
  // CPU-side start to the next one's.
  std::vector<std::pair<int64_t, int64_t>> spans;
  size_t period = 0;       // calls in the most common repetition
  size_t repetitions = 0;  // whole repetitions (spans.size())
  size_t identical = 0;    // of them, the most common call sequence exactly
  std::string anchor;      // the anchor op call's name: "aten::conv2d fprop LeNet.conv1 [8,1,..]"
  int64_t tid = -1;        // the thread whose sequence it is
  size_t calls = 0;        // op calls on that thread
  size_t calls_before = 0, calls_after = 0;  // of them, before the first and after the last
  size_t records_outside = 0;                // records (all threads) outside every whole repetition
};

// Looks for the repeating op sequence of `data` (meant for a profile without iterations; the
// records' `step` is not read). `preferred_anchor`, an anchor text another profile's detection
// gave, is used when its calls cut this profile into repetitions too, so that two profiles of
// one workload start their repetitions at the same op.
RepeatingSteps detect_repeating_steps(const ReadResult& data,
                                      std::string_view preferred_anchor = {});

}  // namespace pyprof::prof
