#include "parse/graph_capture.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace pyprof::parse {

bool is_graph_launch_api(std::string_view name) {
  return name == "cudaGraphLaunch" || name == "cuGraphLaunch" || name == "hipGraphLaunch";
}

namespace {

bool is_begin_capture(std::string_view name) {
  return name.starts_with("cudaStreamBeginCapture") || name.starts_with("cuStreamBeginCapture") ||
         name.starts_with("hipStreamBeginCapture");
}

bool is_end_capture(std::string_view name) {
  return name.starts_with("cudaStreamEndCapture") || name.starts_with("cuStreamEndCapture") ||
         name.starts_with("hipStreamEndCapture");
}

// A call that launches one kernel: it names the kernel (Kineto on ROCm), or its API does
// (cudaLaunchKernel, cuLaunchKernelEx, hipModuleLaunchKernel, hipExtModuleLaunchKernel, ...).
bool is_kernel_launch(const Trace& trace, const ApiCall& call) {
  if (call.kernel != 0) return true;
  const std::string_view name = trace.pool.get(call.name);
  return !is_graph_launch_api(name) &&
         (name.find("LaunchKernel") != std::string_view::npos ||
          name.find("LaunchCooperativeKernel") != std::string_view::npos);
}

// One stream capture: the kernel launch calls between BeginCapture and EndCapture on a thread.
struct Window {
  uint32_t pid = 0, tid = 0;
  int64_t start = 0, end = 0;
  std::vector<int32_t> launches;  // capture.api_calls, in call order
  std::vector<int32_t> ranges;    // capture.ranges on the thread that overlap the window
};

std::vector<Window> capture_windows(const Trace& capture) {
  std::vector<int32_t> calls(capture.api_calls.size());
  for (size_t i = 0; i < calls.size(); ++i) calls[i] = static_cast<int32_t>(i);
  std::sort(calls.begin(), calls.end(), [&](int32_t a, int32_t b) {
    const ApiCall &x = capture.api_calls[a], &y = capture.api_calls[b];
    return std::tie(x.pid, x.tid, x.start, a) < std::tie(y.pid, y.tid, y.start, b);
  });
  std::vector<Window> windows;
  bool open = false;
  for (int32_t i : calls) {
    const ApiCall& c = capture.api_calls[i];
    if (open && (c.pid != windows.back().pid || c.tid != windows.back().tid)) {
      windows.pop_back();  // never ended on its thread: not a whole graph
      open = false;
    }
    const std::string_view name = capture.pool.get(c.name);
    if (is_begin_capture(name)) {
      if (open) windows.pop_back();  // begun again before it ended
      windows.push_back({c.pid, c.tid, c.start, c.end, {}, {}});
      open = true;
    } else if (open && is_end_capture(name)) {
      windows.back().end = c.end;
      open = false;
    } else if (open && is_kernel_launch(capture, c)) {
      windows.back().launches.push_back(i);
    }
  }
  if (open) windows.pop_back();
  // The ranges that give the launches their context: those of the capturing thread that overlap
  // the window (its ops, their modules, the user ranges around the whole capture).
  std::map<uint64_t, std::vector<int32_t>> ranges_of_thread;
  for (size_t i = 0; i < capture.ranges.size(); ++i) {
    const RangeRecord& r = capture.ranges[i];
    if (r.shape != RangeShape::kMark) {
      ranges_of_thread[thread_key(r.pid, r.tid)].push_back(static_cast<int32_t>(i));
    }
  }
  for (Window& w : windows) {
    auto it = ranges_of_thread.find(thread_key(w.pid, w.tid));
    if (it == ranges_of_thread.end()) continue;
    for (int32_t i : it->second) {
      const RangeRecord& r = capture.ranges[i];
      if (r.start <= w.end && r.end >= w.start) w.ranges.push_back(i);
    }
  }
  return windows;
}

// Copies what the join needs from the capture trace into the replay's: strings into its pool,
// range texts read once through the capture's reader.
class Importer {
 public:
  Importer(Trace& replay, const Trace& capture, TraceReader& reader)
      : replay_(replay), capture_(capture), reader_(reader) {}

  uint32_t string(uint32_t id) {
    if (id == 0) return 0;
    auto [it, added] = strings_.try_emplace(id, 0);
    if (added) it->second = intern_bounded(replay_, capture_.pool.get(id));
    return it->second;
  }

  // Capture range `i` as a range of the replay's, on process `pid`.
  RangeRecord range(int32_t i, uint32_t pid) {
    RangeRecord r = capture_.ranges[i];
    r.pid = pid;
    r.parent = -1;
    r.name = string(r.name);
    r.domain = string(r.domain);
    r.detail = string(r.detail);
    r.stack = string(r.stack);
    if (r.args_length == kArgsInPool) r.args_offset = string(r.args_offset);
    r.text = text(i);
    return r;
  }

 private:
  TextRef text(int32_t i) {
    const TextRef ref = capture_.ranges[i].text;
    if (ref.where == TextRef::Where::kNone) return ref;
    auto [it, added] = texts_.try_emplace(i, TextRef{});
    if (added) {
      const std::string_view text = reader_.fetch_text(capture_, ref);
      // An empty text reads as none: the record then has no args, as when a text is lost.
      if (!text.empty()) it->second = {TextRef::Where::kPool, replay_.pool.intern(text)};
    }
    return it->second;
  }

  Trace& replay_;
  const Trace& capture_;
  TraceReader& reader_;
  std::unordered_map<uint32_t, uint32_t> strings_;
  std::unordered_map<int32_t, TextRef> texts_;
};

// Whether replayed kernel `act` and captured launch `call` name the same kernel; true when the
// launch names none (nothing to check).
bool same_kernel(const Trace& replay, const GpuActivity& act, const Trace& capture,
                 const ApiCall& call) {
  if (call.kernel == 0) return true;
  const std::string_view launched = capture.pool.get(call.kernel);
  return launched == replay.pool.get(act.long_name) || launched == replay.pool.get(act.short_name);
}

}  // namespace

bool join_graph_capture(Trace& replay, const Trace& capture, TraceReader& capture_reader,
                        GraphJoinStats& stats, std::string& error) {
  std::vector<Window> windows = capture_windows(capture);
  stats.captures = static_cast<int64_t>(windows.size());
  for (const Window& w : windows) {
    stats.captured_kernels += static_cast<int64_t>(w.launches.size());
    for (int32_t i : w.launches) stats.captured_named += capture.api_calls[i].kernel != 0;
  }
  if (windows.empty()) {
    error =
        "the capture trace holds no stream capture (no cudaStreamBeginCapture / "
        "hipStreamBeginCapture ... EndCapture on one thread): it is not a trace of graphs "
        "being captured";
    return false;
  }
  // The replay's graph launches, in time order, each with the activities it ran.
  std::unordered_map<uint64_t, int32_t> launch_of_key;  // (pid, correlation) -> launch ordinal
  std::vector<int32_t> launches;
  for (size_t i = 0; i < replay.api_calls.size(); ++i) {
    const ApiCall& c = replay.api_calls[i];
    if (c.correlation_id < 0 || !is_graph_launch_api(replay.pool.get(c.name))) continue;
    launches.push_back(static_cast<int32_t>(i));
  }
  std::sort(launches.begin(), launches.end(), [&](int32_t a, int32_t b) {
    return std::tie(replay.api_calls[a].start, a) < std::tie(replay.api_calls[b].start, b);
  });
  auto key = [](uint32_t pid, int64_t correlation) {
    return (uint64_t{pid} << 40) ^ static_cast<uint64_t>(correlation);
  };
  for (size_t k = 0; k < launches.size(); ++k) {
    const ApiCall& c = replay.api_calls[launches[k]];
    launch_of_key.emplace(key(c.pid, c.correlation_id), static_cast<int32_t>(k));
  }
  std::vector<std::vector<int32_t>> kernels_of(launches.size());
  for (size_t i = 0; i < replay.activities.size(); ++i) {
    const GpuActivity& act = replay.activities[i];
    if (act.correlation_id < 0) continue;
    auto it = launch_of_key.find(key(act.pid, act.correlation_id));
    if (it == launch_of_key.end()) continue;
    if (act.kind != ActivityKind::kKernel) {
      ++stats.copies_not_joined;
      continue;
    }
    kernels_of[it->second].push_back(static_cast<int32_t>(i));
  }
  // The imported ranges of each joined replay launch get a process number no trace process has.
  uint32_t next_pid = 0;
  for (const RangeRecord& r : replay.ranges) next_pid = std::max(next_pid, r.pid);
  for (const ApiCall& c : replay.api_calls) next_pid = std::max(next_pid, c.pid);
  for (const GpuActivity& a : replay.activities) next_pid = std::max(next_pid, a.pid);
  ++next_pid;

  Importer import(replay, capture, capture_reader);
  replay.imported_ranges_begin = replay.ranges.size();
  replay.imported_calls_begin = replay.api_calls.size();
  size_t cursor = 0;
  for (size_t k = 0; k < launches.size(); ++k) {
    std::vector<int32_t>& kernels = kernels_of[k];
    if (kernels.empty()) continue;
    ++stats.graph_launches;
    stats.kernels += static_cast<int64_t>(kernels.size());
    std::stable_sort(kernels.begin(), kernels.end(), [&](int32_t a, int32_t b) {
      return replay.activities[a].start < replay.activities[b].start;
    });
    auto names_agree = [&](const Window& w) {
      for (size_t j = 0; j < kernels.size(); ++j) {
        if (!same_kernel(replay, replay.activities[kernels[j]], capture,
                         capture.api_calls[w.launches[j]])) {
          return false;
        }
      }
      return true;
    };
    // The first capture from the cursor on (wrapping) with as many kernels and agreeing names.
    size_t chosen = windows.size();
    for (size_t step = 0; step < windows.size(); ++step) {
      const size_t c = (cursor + step) % windows.size();
      if (windows[c].launches.size() == kernels.size() && names_agree(windows[c])) {
        chosen = c;
        break;
      }
    }
    bool by_order_only = false;
    if (chosen == windows.size()) {
      const size_t c = cursor % windows.size();
      if (windows[c].launches.size() != kernels.size()) {
        ++stats.launches_unjoined;
        stats.kernels_in_unjoined += static_cast<int64_t>(kernels.size());
        continue;
      }
      chosen = c;
      by_order_only = true;
      ++stats.launches_mismatched;
    }
    cursor = chosen + 1;
    const Window& w = windows[chosen];
    if (!by_order_only) {
      bool named = false;
      for (int32_t i : w.launches) named = named || capture.api_calls[i].kernel != 0;
      ++(named ? stats.launches_by_name : stats.launches_by_order);
    }
    const uint32_t pid = next_pid++;
    for (int32_t i : w.ranges) replay.ranges.push_back(import.range(i, pid));
    for (size_t j = 0; j < kernels.size(); ++j) {
      const ApiCall& launched = capture.api_calls[w.launches[j]];
      if (!same_kernel(replay, replay.activities[kernels[j]], capture, launched)) {
        ++stats.kernels_name_mismatch;
        continue;
      }
      ApiCall call;
      call.start = launched.start;
      call.end = launched.end;
      call.pid = pid;
      call.tid = launched.tid;
      call.name = import.string(launched.name);
      replay.graph_capture_calls.emplace_back(kernels[j],
                                              static_cast<int32_t>(replay.api_calls.size()));
      replay.api_calls.push_back(call);
      ++stats.kernels_joined;
    }
  }
  return true;
}

std::string graph_join_summary(const GraphJoinStats& s) {
  std::string out = fmt::format(
      "{} captures ({} kernel launches, {} naming their kernel); {} of {} graph launches joined "
      "({} with every kernel name checked, {} by order alone, {} with names that differ), {} "
      "with no capture of as many kernels; kernels: {} replayed, {} joined, {} whose name "
      "differs from the capture's, {} in unjoined launches",
      s.captures, s.captured_kernels, s.captured_named,
      s.launches_by_name + s.launches_by_order + s.launches_mismatched, s.graph_launches,
      s.launches_by_name, s.launches_by_order, s.launches_mismatched, s.launches_unjoined,
      s.kernels, s.kernels_joined, s.kernels_name_mismatch, s.kernels_in_unjoined);
  if (s.copies_not_joined > 0) {
    out += fmt::format("; {} copies and memsets of graph launches not joined", s.copies_not_joined);
  }
  return out;
}

}  // namespace pyprof::parse
