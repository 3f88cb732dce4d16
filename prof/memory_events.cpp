#include "prof/memory_events.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace pyprof::prof {

using dict::Key;

namespace {
constexpr int64_t kMaxEventBytes = int64_t{1} << 48;  // 256 TiB
}  // namespace

void MemoryLineReader::read(const DictLine& l, int32_t step, ReadResult& out) {
  const char* problem = nullptr;
  if (!l.number(Key::bytes)) {
    problem = "no integer `bytes`";
  } else if (l.num(Key::bytes, 0) == 0) {
    problem = "`bytes` is 0";
  } else if (l.num(Key::bytes, 0) > kMaxEventBytes || l.num(Key::bytes, 0) < -kMaxEventBytes) {
    // No allocation is this large; bounded, the running totals cannot overflow.
    problem = "`bytes` past 2^48";
  } else if (!l.number(Key::addr)) {
    problem = "no integer `addr`";
  } else if (!l.number(Key::start) || !l.unreadable_time.empty()) {
    problem = "no integer `start`";
  }
  if (problem != nullptr) {
    if (out.memory_lines_skipped++ == 0) {
      first_skipped_line_ = l.line;
      first_problem_ = problem;
    }
    return;
  }
  MemoryEvent e;
  e.start = l.num(Key::start, 0);
  e.bytes = l.num(Key::bytes, 0);
  e.addr = l.num(Key::addr, 0);
  e.device = static_cast<int32_t>(std::clamp<int64_t>(l.num(Key::device, -1), -1, 1 << 20));
  e.total_allocated = l.num(Key::total_allocated, -1);
  e.total_reserved = l.num(Key::total_reserved, -1);
  // A negative total is no allocator's: read as not given, counted.
  if ((l.has(Key::total_allocated) && e.total_allocated < 0) ||
      (l.has(Key::total_reserved) && e.total_reserved < 0)) {
    if (out.memory_totals_ignored++ == 0) first_bad_totals_line_ = l.line;
    if (e.total_allocated < 0) e.total_allocated = -1;
    if (e.total_reserved < 0) e.total_reserved = -1;
  }
  e.pid = l.num(Key::pid, -1);
  e.tid = l.num(Key::tid, -1);
  e.op = out.strings.intern(l.str(Key::op));
  e.module = out.strings.intern(l.str(Key::module));
  const std::string_view dir = l.str(Key::dir);
  e.dir = dir == dict::direction::kFprop   ? Dir::kFprop
          : dir == dict::direction::kBprop ? Dir::kBprop
                                           : Dir::kNone;
  e.step = step;
  if (!out.memory.empty() && e.start < out.memory.back().start) ordered_ = false;
  out.memory.push_back(e);
}

void MemoryLineReader::finish(ReadResult& out) {
  // parse writes them in time order; another writer's are put in it (ties keep the file's order).
  if (!ordered_) {
    std::stable_sort(out.memory.begin(), out.memory.end(),
                     [](const MemoryEvent& a, const MemoryEvent& b) { return a.start < b.start; });
  }
  if (out.memory_lines_skipped > 0) {
    out.warnings.push_back(fmt::format(
        "{} memory line{} skipped (first: line {}: {}): not counted by the memory report",
        out.memory_lines_skipped, out.memory_lines_skipped == 1 ? "" : "s", first_skipped_line_,
        first_problem_));
  }
  if (out.memory_totals_ignored > 0) {
    out.warnings.push_back(fmt::format(
        "{} memory line{} with a negative allocator total (first: line {}): the totals read as "
        "not given",
        out.memory_totals_ignored, out.memory_totals_ignored == 1 ? "" : "s",
        first_bad_totals_line_));
  }
}

bool memory_event_selected(const ReadResult& data, const MemoryEvent& e) {
  const Iterations& it = data.iterations;
  if (!it.selection_active) return true;
  return e.step >= 0 && static_cast<size_t>(e.step) < it.state.size() &&
         it.state[e.step] == StepState::kSelected;
}

std::string memory_device_name(int32_t device) {
  return device < 0 ? "cpu" : fmt::format("cuda:{}", device);
}

namespace {

// A live allocation: which groups made it, and in which stretch of events (a step, or a run
// of events outside the steps) it was made.
struct Live {
  size_t op_group, module_group;
  int64_t bytes;
  int64_t stretch;
};

class GroupTable {
 public:
  explicit GroupTable(std::vector<MemoryGroup>& groups) : groups_(groups) {}
  size_t at(int32_t device, uint32_t name, Dir dir) {
    auto [it, added] = index_.try_emplace(std::make_tuple(device, name, dir), groups_.size());
    if (added) {
      MemoryGroup g;
      g.device = device;
      g.name = name;
      g.dir = dir;
      groups_.push_back(g);
    }
    return it->second;
  }

 private:
  std::vector<MemoryGroup>& groups_;
  std::map<std::tuple<int32_t, uint32_t, Dir>, size_t> index_;
};

void sort_groups(std::vector<MemoryGroup>& groups) {
  std::stable_sort(groups.begin(), groups.end(), [](const MemoryGroup& a, const MemoryGroup& b) {
    return a.device != b.device ? a.device < b.device : a.allocated > b.allocated;
  });
}

}  // namespace

MemoryAnalysis analyse_memory(const ReadResult& data) {
  MemoryAnalysis out;
  GroupTable ops(out.ops), modules(out.modules);
  std::map<std::pair<int32_t, int32_t>, size_t> step_rows;    // (device, step) -> out.steps index
  std::map<int32_t, int64_t> running;                         // by device
  std::map<int32_t, std::pair<int32_t, int64_t>> stretch_of;  // device -> (last step, stretch)
  std::map<std::pair<int32_t, int64_t>, Live> live;           // (device, addr)
  int64_t stretches = 0;
  for (size_t i = 0; i < data.memory.size(); ++i) {
    const MemoryEvent& e = data.memory[i];
    if (!memory_event_selected(data, e)) continue;
    ++out.events;
    // A stretch: a run of one device's events in one step (or outside the steps).
    auto [st, first] = stretch_of.try_emplace(e.device, e.step, stretches);
    if (first || st->second.first != e.step) st->second = {e.step, ++stretches};
    const int64_t stretch = st->second.second;

    int64_t& total = running[e.device];
    auto [row_it, new_row] = step_rows.try_emplace({e.device, e.step}, out.steps.size());
    if (new_row) {
      MemoryStepFacts f;
      f.device = e.device;
      f.step = e.step;
      f.live_at_start = total;
      f.peak = total + e.bytes;
      if (e.total_allocated >= 0) f.allocator_at_start = e.total_allocated - e.bytes;
      out.steps.push_back(f);
    }
    MemoryStepFacts& f = out.steps[row_it->second];
    total += e.bytes;
    ++f.events;
    f.live_at_end = total;
    // The first event reaching the peak is the one that made it.
    if (f.peak_event < 0 || total > f.peak) {
      f.peak = total;
      f.peak_event = static_cast<int64_t>(i);
    }
    f.allocator_peak = std::max(f.allocator_peak, e.total_allocated);
    // torch's CPU allocator reserves nothing of its own: it reports 0, which is no peak.
    if (e.device >= 0) f.reserved_peak = std::max(f.reserved_peak, e.total_reserved);

    const size_t op = ops.at(e.device, e.op, e.dir);
    const size_t module = modules.at(e.device, e.module, e.dir);
    if (e.bytes > 0) {
      f.allocated += e.bytes;
      for (MemoryGroup* g : {&out.ops[op], &out.modules[module]}) {
        ++g->allocations;
        g->allocated += e.bytes;
      }
      // An address allocated again without a free between: the earlier block's free was not
      // seen; the later allocation is the one a free will end.
      live.insert_or_assign({e.device, e.addr}, Live{op, module, e.bytes, stretch});
      continue;
    }
    const int64_t bytes = -e.bytes;
    f.freed += bytes;
    for (MemoryGroup* g : {&out.ops[op], &out.modules[module]}) {
      ++g->frees;
      g->freed += bytes;
    }
    auto it = live.find({e.device, e.addr});
    if (it == live.end()) {
      ++f.unknown_frees;
      f.unknown_free_bytes += bytes;
      continue;
    }
    const Live& a = it->second;
    for (MemoryGroup* g : {&out.ops[a.op_group], &out.modules[a.module_group]}) {
      if (a.stretch != stretch) g->live_at_step_end += a.bytes;
      if (e.dir == Dir::kBprop) g->freed_in_backward += a.bytes;
    }
    live.erase(it);
  }
  // Never freed: live at the end of the stretch they were made in, and at the profile's end.
  for (const auto& [key, a] : live) {
    out.ops[a.op_group].live_at_step_end += a.bytes;
    out.modules[a.module_group].live_at_step_end += a.bytes;
  }
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const MemoryStepFacts& a, const MemoryStepFacts& b) {
                     auto key = [](const MemoryStepFacts& f) {
                       return std::make_pair(f.device, f.step < 0 ? INT32_MAX : f.step);
                     };
                     return key(a) < key(b);
                   });
  sort_groups(out.ops);
  sort_groups(out.modules);
  return out;
}

}  // namespace pyprof::prof
