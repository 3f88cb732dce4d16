#include "prof/memory_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "prof/memory_events.h"
#include "prof/report_builders.h"

namespace pyprof::prof {

namespace {

using report_parts::dir_name;

std::string text_or_dash(const Strings& strings, uint32_t id) {
  std::string s(strings.get(id));
  return s.empty() ? "-" : s;
}

std::string bytes_or_na(int64_t v) { return v >= 0 ? std::to_string(v) : "na"; }

ReportTable steps_table(const ReadResult& data, const MemoryAnalysis& m) {
  ReportTable t;
  t.id = "steps";
  t.title = fmt::format(
      "memory per device and step ({} allocations and frees; running total since {}; Step - : "
      "outside every step)",
      m.events,
      data.iterations.selection_active ? "the selected iterations began" : "the capture began");
  column(t, "Device", Unit::kText, Keep::kAlways);
  column(t, "Step", Unit::kId, Keep::kAlways);
  column(t, "Peak allocated", Unit::kBytes, Keep::kAlways);
  column(t, "Op at peak", Unit::kText, Keep::kMain);
  column(t, "Module at peak", Unit::kText, Keep::kMore);
  column(t, "Allocated", Unit::kBytes, Keep::kMain);
  column(t, "Freed", Unit::kBytes, Keep::kMain);
  column(t, "Live at start", Unit::kBytes, Keep::kMore);
  column(t, "Live at end", Unit::kBytes, Keep::kMore);
  column(t, "Allocator peak allocated", Unit::kBytes, Keep::kDetail);
  column(t, "Allocator peak reserved", Unit::kBytes, Keep::kDetail);
  column(t, "Frees of earlier blocks", Unit::kCount, Keep::kDetail);
  for (const MemoryStepFacts& f : m.steps) {
    const MemoryEvent* at = f.peak_event >= 0 ? &data.memory[f.peak_event] : nullptr;
    t.rows.push_back({memory_device_name(f.device), f.step >= 0 ? std::to_string(f.step) : "-",
                      std::to_string(f.peak), at ? text_or_dash(data.strings, at->op) : "-",
                      at ? text_or_dash(data.strings, at->module) : "-",
                      std::to_string(f.allocated), std::to_string(f.freed),
                      std::to_string(f.live_at_start), std::to_string(f.live_at_end),
                      bytes_or_na(f.allocator_peak), bytes_or_na(f.reserved_peak),
                      std::to_string(f.unknown_frees)});
  }
  return t;
}

ReportTable groups_table(const ReadResult& data, const std::vector<MemoryGroup>& groups,
                         std::string id, std::string_view what, size_t top) {
  ReportTable t;
  t.id = std::move(id);
  const size_t shown = top > 0 ? std::min(top, groups.size()) : groups.size();
  t.title = fmt::format(
      "memory per {} and direction{} (live at step end: its allocations not freed by the end "
      "of their step; freed in backward: its allocations a backward op freed)",
      what,
      shown < groups.size() ? fmt::format(", top {} of {} by bytes allocated", shown, groups.size())
                            : "");
  column(t, "Device", Unit::kText, Keep::kAlways);
  column(t, what == "op" ? "Op" : "Module", Unit::kText, Keep::kAlways);
  column(t, "Direction", Unit::kText, Keep::kMain);
  column(t, "Allocations", Unit::kCount, Keep::kMore);
  column(t, "Allocated", Unit::kBytes, Keep::kAlways);
  column(t, "Frees", Unit::kCount, Keep::kDetail);
  column(t, "Freed", Unit::kBytes, Keep::kMain);
  column(t, "Live at step end", Unit::kBytes, Keep::kMain);
  column(t, "Freed in backward", Unit::kBytes, Keep::kMore);
  std::vector<const MemoryGroup*> order;
  for (const MemoryGroup& g : groups) order.push_back(&g);
  if (shown < groups.size()) {
    // The top across devices, then back in device order.
    std::stable_sort(order.begin(), order.end(), [](const MemoryGroup* a, const MemoryGroup* b) {
      return a->allocated > b->allocated;
    });
    order.resize(shown);
    std::stable_sort(order.begin(), order.end(), [](const MemoryGroup* a, const MemoryGroup* b) {
      return a->device < b->device;
    });
  }
  for (const MemoryGroup* g : order) {
    t.rows.push_back({memory_device_name(g->device), text_or_dash(data.strings, g->name),
                      dir_name(g->dir), std::to_string(g->allocations),
                      std::to_string(g->allocated), std::to_string(g->frees),
                      std::to_string(g->freed), std::to_string(g->live_at_step_end),
                      std::to_string(g->freed_in_backward)});
  }
  return t;
}

// Per device: the largest running peak, and the allocator's own peaks (-1: not given).
struct DevicePeaks {
  int64_t peak = 0, allocator_peak = -1, reserved_peak = -1;
};
std::map<int32_t, DevicePeaks> peaks_by_device(const MemoryAnalysis& m) {
  std::map<int32_t, DevicePeaks> out;
  for (const MemoryStepFacts& f : m.steps) {
    auto [it, first] = out.try_emplace(f.device);
    DevicePeaks& p = it->second;
    p.peak = first ? f.peak : std::max(p.peak, f.peak);
    p.allocator_peak = std::max(p.allocator_peak, f.allocator_peak);
    p.reserved_peak = std::max(p.reserved_peak, f.reserved_peak);
  }
  return out;
}

}  // namespace

std::vector<ReportTable> memory_report(const ReadResult& data, size_t top) {
  if (data.memory.empty()) return {};
  const MemoryAnalysis m = analyse_memory(data);
  return {steps_table(data, m), groups_table(data, m.ops, "ops", "op", top),
          groups_table(data, m.modules, "modules", "module", top)};
}

std::vector<SummaryRow> memory_summary_rows(const ReadResult& data) {
  std::vector<SummaryRow> rows;
  if (data.memory.empty()) return rows;
  const std::map<int32_t, DevicePeaks> peaks = peaks_by_device(analyse_memory(data));
  for (const auto& [device, p] : peaks) {
    // One device: the metric's plain name; several: each device named.
    const std::string on = peaks.size() == 1 ? "" : ", " + memory_device_name(device);
    rows.push_back({fmt::format("memory allocated peak{} (bytes)", on), std::to_string(p.peak),
                    Unit::kBytes, ""});
    if (p.allocator_peak >= 0) {
      rows.push_back({fmt::format("memory allocator's total allocated peak{} (bytes)", on),
                      std::to_string(p.allocator_peak), Unit::kBytes, ""});
    }
    if (p.reserved_peak >= 0) {
      rows.push_back({fmt::format("memory allocator's total reserved peak{} (bytes)", on),
                      std::to_string(p.reserved_peak), Unit::kBytes, ""});
    }
  }
  if (data.memory_lines_skipped > 0) {
    rows.push_back({"memory lines skipped (unreadable)", std::to_string(data.memory_lines_skipped),
                    Unit::kCount, ""});
  }
  return rows;
}

std::optional<BatchHeadroom> batch_headroom(const ReadResult& data) {
  if (data.memory.empty()) return std::nullopt;
  std::map<int32_t, int64_t> total_memory;
  for (const DevicePeak& d : data.devices) {
    if (d.id >= 0 && d.total_memory > 0) total_memory[static_cast<int32_t>(d.id)] = d.total_memory;
  }
  if (total_memory.empty()) return std::nullopt;
  // Per device, the step with the largest peak.
  std::map<int32_t, BatchHeadroom> by_device;
  for (const MemoryStepFacts& f : analyse_memory(data).steps) {
    auto mem = total_memory.find(f.device);
    if (mem == total_memory.end()) continue;
    BatchHeadroom h;
    h.device = f.device;
    h.step = f.step;
    h.total_memory = mem->second;
    h.reserved_peak = f.reserved_peak;
    h.allocator_totals = f.allocator_peak >= 0 && f.allocator_at_start >= 0;
    h.peak = h.allocator_totals ? f.allocator_peak : f.peak;
    h.at_start = h.allocator_totals ? f.allocator_at_start : f.live_at_start;
    auto [it, first] = by_device.try_emplace(f.device, h);
    if (!first && h.peak > it->second.peak) it->second = h;
  }
  std::optional<BatchHeadroom> out;
  for (auto& [device, h] : by_device) {
    const int64_t per_batch = h.peak - h.at_start;
    if (per_batch <= 0 || h.at_start < 0 || h.peak > h.total_memory) continue;
    h.factor = static_cast<double>(h.total_memory - h.at_start) / static_cast<double>(per_batch);
    if (!out || h.factor < out->factor) out = h;
  }
  return out;
}

}  // namespace pyprof::prof
