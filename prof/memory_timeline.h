// Each device's memory over time (net.dict memory lines, docs/formats.md §3.2): the series the
// HTML page plots (report `memory_timeline`, docs/prof.md §3) and `pyprof export` writes as
// counter tracks (docs/export.md). A net.dict can hold millions of memory lines, so a long series
// is downsampled here, in C++, to a bounded number of points that keeps every extreme: the
// series' largest running total is always a point, so the plot's peak is the memory report's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// A device's memory right after one event.
struct MemorySample {
  int64_t time = 0;
  // The running total of the events' bytes since the first event covered, counted as the memory
  // report counts it (prof/memory_events.h): its largest value is the report's peak.
  int64_t allocated = 0;
  // The allocator's own totals after the event; -1 where not given (reserved: CUDA only, torch's
  // CPU allocator reports 0, which is no total of its own).
  int64_t allocator_allocated = -1;
  int64_t allocator_reserved = -1;
};

// Which samples of one series (in time order) to keep, as indices in order: all of them when
// there are at most `max_points`; else the series' time span is cut into max_points / 5 equal
// buckets and each keeps at most five samples: those with the lowest and the highest running
// total (the first of equal ones), with the highest allocator allocated and reserved (the first
// of equal ones), and its last. Every bucket's extremes survive, so the whole series' largest
// and smallest values do; at most `max_points` are kept (max_points >= 5).
std::vector<size_t> downsample_memory(const std::vector<MemorySample>& series, size_t max_points);

// One device's series: every event the reports cover (memory_event_selected), in time order.
struct MemorySeries {
  int32_t device = -1;
  int64_t pid = -1;                   // the process of its first event (-1: not given)
  std::vector<MemorySample> samples;  // one per event
  std::vector<size_t> events;         // each sample's event (ReadResult::memory index)
};
// By device, the CPU (-1) first.
std::vector<MemorySeries> memory_series(const ReadResult& data);

// A run of one device's consecutive events made in the same top-level module (the module path's
// first two names: `LeNet.conv1` of `LeNet.conv1.act`) and direction: what the page draws in a
// lane under the plot.
struct ModuleSpan {
  int32_t device = -1;
  std::string module;
  Dir dir = Dir::kNone;
  int64_t start = 0, end = 0;  // its first and last event's time
  int64_t events = 0;
};
// A device's spans in time order; with more than `max_spans`, the longest `max_spans` (the rest
// counted in `left_out`).
std::vector<ModuleSpan> memory_module_spans(const ReadResult& data, const MemorySeries& series,
                                            size_t max_spans, int64_t& left_out);

// The points the report keeps per device, and the module spans.
inline constexpr size_t kTimelinePoints = 5000;
inline constexpr size_t kTimelineSpans = 2000;

// Report `memory_timeline`: tables `points` (per device, the downsampled series: time, running
// total allocated, the allocator's totals, the op of the event) and `modules` (the top-level
// module spans). No table without memory lines.
std::vector<ReportTable> memory_timeline_report(const ReadResult& data);

}  // namespace pyprof::prof
