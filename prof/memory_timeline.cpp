#include "prof/memory_timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "prof/memory_events.h"
#include "prof/report_builders.h"

namespace pyprof::prof {

std::vector<size_t> downsample_memory(const std::vector<MemorySample>& series, size_t max_points) {
  std::vector<size_t> keep;
  if (series.size() <= max_points || max_points < 5) {
    keep.resize(series.size());
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = i;
    return keep;
  }
  const size_t buckets = max_points / 5;
  // Times are in order: a time's distance from the first fits in 64 unsigned bits whatever the
  // times are. Its bucket, in double, never decreases as the time grows.
  const uint64_t first = static_cast<uint64_t>(series.front().time);
  const double span = static_cast<double>(static_cast<uint64_t>(series.back().time) - first) + 1;
  auto bucket_of = [&](int64_t time) {
    const double at = static_cast<double>(static_cast<uint64_t>(time) - first) / span;
    return std::min(buckets - 1, static_cast<size_t>(at * static_cast<double>(buckets)));
  };
  size_t low = 0, high = 0, alloc = 0, reserved = 0, current = bucket_of(series[0].time);
  auto flush = [&](size_t last) {
    size_t picked[] = {low, high, alloc, reserved, last};
    std::sort(std::begin(picked), std::end(picked));
    size_t* end = std::unique(std::begin(picked), std::end(picked));
    keep.insert(keep.end(), std::begin(picked), end);
  };
  for (size_t i = 0; i < series.size(); ++i) {
    const MemorySample& s = series[i];
    const size_t b = bucket_of(s.time);
    if (b != current) {
      flush(i - 1);
      current = b;
      low = high = alloc = reserved = i;
      continue;
    }
    // Strict comparisons: the first of equal values is kept, as the memory report names the
    // first event reaching a peak.
    if (s.allocated < series[low].allocated) low = i;
    if (s.allocated > series[high].allocated) high = i;
    if (s.allocator_allocated > series[alloc].allocator_allocated) alloc = i;
    if (s.allocator_reserved > series[reserved].allocator_reserved) reserved = i;
  }
  flush(series.size() - 1);
  return keep;
}

std::vector<MemorySeries> memory_series(const ReadResult& data) {
  std::map<int32_t, MemorySeries> by_device;
  std::map<int32_t, MemorySeries>::iterator last = by_device.end();
  for (size_t i = 0; i < data.memory.size(); ++i) {
    const MemoryEvent& e = data.memory[i];
    if (!memory_event_selected(data, e)) continue;
    if (last == by_device.end() || last->first != e.device) {
      auto [it, added] = by_device.try_emplace(e.device);
      if (added) {
        it->second.device = e.device;
        it->second.pid = e.pid;
      }
      last = it;
    }
    MemorySeries& s = last->second;
    MemorySample m;
    m.time = e.start;
    m.allocated = (s.samples.empty() ? 0 : s.samples.back().allocated) + e.bytes;
    m.allocator_allocated = e.total_allocated;
    m.allocator_reserved = e.device >= 0 ? e.total_reserved : -1;
    s.samples.push_back(m);
    s.events.push_back(i);
  }
  std::vector<MemorySeries> out;
  out.reserve(by_device.size());
  for (auto& [device, s] : by_device) out.push_back(std::move(s));
  return out;
}

namespace {

// `LeNet.conv1` of `LeNet.conv1.act`; the path itself when it has fewer than two names.
std::string_view top_level_module(std::string_view path) {
  const size_t dot = path.find('.');
  if (dot == std::string_view::npos) return path;
  return path.substr(0, path.find('.', dot + 1));
}

}  // namespace

std::vector<ModuleSpan> memory_module_spans(const ReadResult& data, const MemorySeries& series,
                                            size_t max_spans, int64_t& left_out) {
  std::vector<ModuleSpan> spans;
  std::unordered_map<uint32_t, std::string> top;  // module string id -> its top-level module
  bool open = false;
  for (size_t i = 0; i < series.events.size(); ++i) {
    const MemoryEvent& e = data.memory[series.events[i]];
    if (e.module == 0) {  // outside every module: the run ends
      open = false;
      continue;
    }
    auto [it, added] = top.try_emplace(e.module);
    if (added) it->second = std::string(top_level_module(data.strings.get(e.module)));
    if (open && spans.back().module == it->second && spans.back().dir == e.dir) {
      spans.back().end = e.start;
      ++spans.back().events;
      continue;
    }
    spans.push_back({series.device, it->second, e.dir, e.start, e.start, 1});
    open = true;
  }
  left_out = 0;
  if (spans.size() > max_spans) {
    left_out = static_cast<int64_t>(spans.size() - max_spans);
    std::stable_sort(spans.begin(), spans.end(), [](const ModuleSpan& a, const ModuleSpan& b) {
      return a.end - a.start > b.end - b.start;
    });
    spans.resize(max_spans);
    std::stable_sort(spans.begin(), spans.end(),
                     [](const ModuleSpan& a, const ModuleSpan& b) { return a.start < b.start; });
  }
  return spans;
}

std::vector<ReportTable> memory_timeline_report(const ReadResult& data) {
  if (data.memory.empty()) return {};
  const std::vector<MemorySeries> all = memory_series(data);
  ReportTable points;
  points.id = "points";
  ReportTable modules;
  modules.id = "modules";
  column(points, "Device", Unit::kText, Keep::kAlways);
  column(points, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(points, "Allocated", Unit::kBytes, Keep::kAlways);
  column(points, "Allocator allocated", Unit::kBytes, Keep::kMore);
  column(points, "Allocator reserved", Unit::kBytes, Keep::kMore);
  column(points, "Op", Unit::kText, Keep::kMain);
  column(modules, "Device", Unit::kText, Keep::kAlways);
  column(modules, "Module", Unit::kText, Keep::kAlways);
  column(modules, "Direction", Unit::kText, Keep::kMain);
  column(modules, "Start(ns)", Unit::kTime, Keep::kAlways);
  column(modules, "End(ns)", Unit::kTime, Keep::kAlways);
  column(modules, "Events", Unit::kCount, Keep::kMore);
  auto bytes = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string("na"); };
  int64_t events = 0, downsampled = 0, spans_left_out = 0;
  for (const MemorySeries& s : all) {
    const std::string device = memory_device_name(s.device);
    const std::vector<size_t> keep = downsample_memory(s.samples, kTimelinePoints);
    events += static_cast<int64_t>(s.samples.size());
    if (keep.size() < s.samples.size()) ++downsampled;
    for (size_t k : keep) {
      const MemorySample& m = s.samples[k];
      std::string op(data.strings.get(data.memory[s.events[k]].op));
      points.rows.push_back({device, std::to_string(m.time), std::to_string(m.allocated),
                             bytes(m.allocator_allocated), bytes(m.allocator_reserved),
                             op.empty() ? "-" : op});
    }
    int64_t left_out = 0;
    for (const ModuleSpan& span : memory_module_spans(data, s, kTimelineSpans, left_out)) {
      modules.rows.push_back({device, span.module, report_parts::dir_name(span.dir),
                              std::to_string(span.start), std::to_string(span.end),
                              std::to_string(span.events)});
    }
    spans_left_out += left_out;
  }
  points.title = fmt::format(
      "memory over time per device ({} allocations and frees, {} points; Allocated: the running "
      "total since {}{})",
      events, points.rows.size(),
      data.iterations.selection_active ? "the selected iterations began" : "the capture began",
      downsampled > 0 ? fmt::format("; downsampled to at most {} points a device, keeping each "
                                    "time bucket's lowest and highest",
                                    kTimelinePoints)
                      : "");
  modules.title = fmt::format(
      "top-level module spans per device (runs of allocations and frees in one module and "
      "direction){}",
      spans_left_out > 0 ? fmt::format("; {} shorter spans left out", spans_left_out) : "");
  return {std::move(points), std::move(modules)};
}

}  // namespace pyprof::prof
