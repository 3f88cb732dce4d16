#include "prof/ranks.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "prof/iterations.h"

namespace pyprof::prof {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The kind in an op or scope name once its namespace is gone ("allreduce_", "_allgather_base_",
// "all_reduce", "reduce_scatter_tensor_coalesced_").
std::string kind_of_base(std::string_view base) {
  std::string s;
  for (char c : base) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (contains(s, "allreduce") || contains(s, "all_reduce")) return "all_reduce";
  if (contains(s, "allgather") || contains(s, "all_gather")) return "all_gather";
  if (contains(s, "reduce_scatter") || contains(s, "reducescatter")) return "reduce_scatter";
  if (contains(s, "alltoall") || contains(s, "all_to_all")) return "all_to_all";
  if (contains(s, "broadcast")) return "broadcast";
  if (contains(s, "barrier")) return "barrier";
  if (contains(s, "sendrecv")) return "send_recv";
  std::string_view t = s;
  while (t.starts_with('_')) t.remove_prefix(1);
  if (t.starts_with("reduce")) return "reduce";
  if (t.starts_with("send") || t.starts_with("isend")) return "send";
  if (t.starts_with("recv") || t.starts_with("irecv")) return "recv";
  if (t.starts_with("gather")) return "gather";
  if (t.starts_with("scatter")) return "scatter";
  return "other";
}

struct Interval {
  int64_t start, end;
  bool comm;
};

std::string ratio_percent(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}", 100.0 * part / whole) : "na";
}

// "3.2", "-0.4", "0.0" (never "-0.0").
std::string signed_percent(double part, double whole) {
  const double p = std::round(1000.0 * part / whole) / 10.0;
  return fmt::format("{:.1f}", p == 0 ? 0.0 : p);
}

std::string gbps(double bytes, int64_t ns) {
  return ns > 0 ? raw_rate_text(bytes / static_cast<double>(ns), 3) : "na";  // B/ns = GB/s
}

}  // namespace

std::string collective_kind(std::string_view name) {
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"}) {
    if (name.starts_with(prefix)) return kind_of_base(name.substr(prefix.size()));
  }
  for (std::string_view ns : {"c10d::", "_c10d_functional::", "_c10d_functional_autograd::",
                              "c10d_functional::", "gloo:", "nccl:", "mpi:", "ucc:", "xccl:"}) {
    if (name.starts_with(ns) && name.size() > ns.size())
      return kind_of_base(name.substr(ns.size()));
  }
  if (name.starts_with("nccl")) return "other";  // another NCCL kernel
  return "";
}

double bus_factor(const std::string& kind, int64_t group) {
  if (group <= 1) return 1;
  const double n = static_cast<double>(group);
  if (kind == "all_reduce") return 2 * (n - 1) / n;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all") return (n - 1) / n;
  return 1;
}

RankSummary summarize_rank(const ReadResult& data) {
  RankSummary out;
  out.rank = data.rank;
  out.world_size = data.world_size;
  out.source = data.source;
  out.cpu_only = data.cpu_only;
  out.records = static_cast<int64_t>(data.records.size());
  const Strings& strings = data.strings;
  const Iterations& its = data.iterations;
  auto step_kept = [&](int32_t step) {
    if (its.steps.empty()) return true;
    if (step < 0 || step >= static_cast<int32_t>(its.steps.size())) return false;
    return its.state.empty() || its.state[step] == StepState::kSelected;
  };

  // A CPU profile's backend threads (gloo's workers: where its spans are) do communication
  // only, whatever ops they run for it.
  std::unordered_set<int64_t> comm_threads;
  if (data.cpu_only) {
    for (const CommSpan& c : data.comm) comm_threads.insert(c.tid);
  }
  std::vector<Interval> intervals;
  // One per collective call: a GPU op instance (its kernels' time summed; a kernel outside every
  // op is a call of its own) or a CPU op record.
  struct Call {
    std::string kind, op;
    double payload = 0;
    int64_t time = 0, start = 0;
    int32_t group = 0;  // the record's process group size; 0: not said
    int32_t step = -1;
  };
  std::vector<Call> calls;
  std::unordered_map<int64_t, size_t> call_of_instance;
  for (const ProfRecord& r : data.records) {
    if (r.bad_time || !step_kept(r.step)) continue;
    const int32_t step = its.steps.empty() ? -1 : r.step;  // RankCollective::by_step's key
    const std::string_view op = r.op ? strings.get(r.op) : std::string_view();
    if (!data.cpu_only) {
      if (r.kind == Kind::kOp) continue;
      std::string kind = collective_kind(strings.get(r.name));
      if (kind.empty()) kind = collective_kind(op);
      intervals.push_back({r.start, r.start + r.duration, !kind.empty()});
      if (!kind.empty()) {
        auto [it, fresh] = call_of_instance.try_emplace(r.instance, calls.size());
        if (fresh || r.instance == 0) {
          it->second = calls.size();
          calls.emplace_back();
        }
        Call& c = calls[it->second];
        if (c.kind.empty()) {
          c.kind = kind;
          c.op = op.empty() ? std::string(strings.get(r.name)) : std::string(op);
          c.payload = r.op_bytes;
          c.start = r.start;
          c.group = r.comm_group;
          c.step = step;
        }
        c.time += r.duration;
      }
      continue;
    }
    if (r.kind != Kind::kOp || r.parent >= 0) continue;  // outermost ops only: no double count
    const std::string kind = collective_kind(op.empty() ? strings.get(r.name) : op);
    if (comm_threads.count(r.tid) && kind.empty()) continue;  // inside the backend's spans
    intervals.push_back({r.start, r.start + r.duration, !kind.empty()});
    if (!kind.empty() && kind != "barrier") {
      calls.push_back({kind, std::string(op.empty() ? strings.get(r.name) : op), r.op_bytes,
                       r.duration, r.start, r.comm_group, step});
    }
  }
  if (data.cpu_only) {
    // Each call's time is its backend span (the same kind, the first not yet taken that starts
    // after the call): an asynchronous call returns at once, the span lasts until it is done.
    std::map<std::string, std::vector<const CommSpan*>> spans_of_kind;
    for (const CommSpan& c : data.comm) {
      if (!step_kept(c.step)) continue;
      intervals.push_back({c.start, c.start + c.duration, true});
      spans_of_kind[collective_kind(strings.get(c.name))].push_back(&c);
    }
    std::map<std::string, size_t> next_span;
    std::sort(calls.begin(), calls.end(),
              [](const Call& a, const Call& b) { return a.start < b.start; });
    for (Call& call : calls) {
      auto it = spans_of_kind.find(call.kind);
      if (it == spans_of_kind.end()) continue;
      size_t& k = next_span[call.kind];
      while (k < it->second.size() && it->second[k]->start < call.start) ++k;
      if (k < it->second.size()) call.time = it->second[k++]->duration;
    }
  }
  std::map<std::tuple<std::string, std::string, double, int32_t>, RankCollective> by_kind;
  auto add_call = [&](const Call& c) {
    RankCollective& rc = by_kind[{c.kind, c.op, c.payload, c.group}];
    rc.kind = c.kind;
    rc.op = c.op;
    rc.payload_bytes = c.payload;
    rc.group = c.group;
    ++rc.calls;
    rc.time += c.time;
    auto& [step_calls, step_time] = rc.by_step[c.step];
    ++step_calls;
    step_time += c.time;
  };
  for (const Call& c : calls) add_call(c);
  for (auto& [key, rc] : by_kind) out.collectives.push_back(std::move(rc));

  // Steps: prof's iterations, or the whole profile as one.
  std::vector<Step> steps = its.steps;
  if (steps.empty() && !intervals.empty()) {
    Step whole;
    whole.start = INT64_MAX;
    whole.end = INT64_MIN;
    for (const Interval& i : intervals) {
      whole.start = std::min(whole.start, i.start);
      whole.end = std::max(whole.end, i.end);
    }
    steps.push_back(whole);
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int64_t longest = 0;
  for (const Interval& i : intervals) longest = std::max(longest, i.end - i.start);
  std::vector<std::pair<int64_t, int64_t>> compute, comm, all;
  for (size_t s = 0; s < steps.size(); ++s) {
    RankStep rs;
    rs.index = static_cast<int32_t>(s);
    rs.start = steps[s].start;
    rs.wall = std::max<int64_t>(steps[s].end - steps[s].start, 0);
    rs.selected = its.steps.empty() || step_kept(static_cast<int32_t>(s));
    compute.clear();
    comm.clear();
    all.clear();
    auto first = std::lower_bound(intervals.begin(), intervals.end(), steps[s].start - longest,
                                  [](const Interval& i, int64_t t) { return i.start < t; });
    for (auto it = first; it != intervals.end() && it->start < steps[s].end; ++it) {
      const int64_t a = std::max(it->start, steps[s].start);
      const int64_t b = std::min(it->end, steps[s].end);
      if (b <= a) continue;
      (it->comm ? comm : compute).emplace_back(a, b);
      all.emplace_back(a, b);
    }
    rs.compute = union_length(compute);
    rs.comm = union_length(comm);
    const int64_t busy = union_length(all);
    rs.overlapped = std::max<int64_t>(rs.compute + rs.comm - busy, 0);
    rs.idle = std::max<int64_t>(rs.wall - busy, 0);
    out.steps.push_back(rs);
  }
  return out;
}

std::vector<ReportTable> ranks_report(std::vector<RankSummary> ranks, int64_t world) {
  std::sort(ranks.begin(), ranks.end(),
            [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  if (world <= 0) {
    for (const RankSummary& r : ranks) world = std::max(world, r.world_size);
    if (world <= 0) world = static_cast<int64_t>(ranks.size());
  }
  // Steps compared across ranks by index; a rank with fewer steps takes part in its own.
  size_t n_steps = 0;
  for (const RankSummary& r : ranks) n_steps = std::max(n_steps, r.steps.size());
  // One selection for all ranks: the warm-up rule judges each rank's step 0 on its own, and a
  // rank whose first step came out just under the threshold would otherwise be compared, and
  // totalled, over a step the others left out. A step any rank left out is left out of all.
  for (size_t s = 0; s < n_steps; ++s) {
    bool left_out = false;
    for (const RankSummary& r : ranks) left_out |= s < r.steps.size() && !r.steps[s].selected;
    if (!left_out) continue;
    for (RankSummary& r : ranks) {
      if (s < r.steps.size()) r.steps[s].selected = false;
    }
  }
  // ... and so are its collective calls: each rank's totals cover the steps its Steps counts.
  for (RankSummary& r : ranks) {
    std::vector<RankCollective> kept;
    for (RankCollective& c : r.collectives) {
      if (!c.by_step.empty()) {
        c.calls = 0;
        c.time = 0;
        for (const auto& [step, totals] : c.by_step) {
          const bool selected = step < 0 || (static_cast<size_t>(step) < r.steps.size() &&
                                             r.steps[static_cast<size_t>(step)].selected);
          if (!selected) continue;
          c.calls += totals.first;
          c.time += totals.second;
        }
      }
      if (c.calls > 0) kept.push_back(std::move(c));
    }
    r.collectives = std::move(kept);
  }
  struct StepVerdict {
    int64_t straggler = -1;  // rank
    double lag = 0, median_wall = 0, max_wall = 0, waiting = 0;
    size_t ranks = 0;
  };
  std::vector<StepVerdict> verdicts(n_steps);
  std::map<int64_t, int64_t> straggler_steps;  // rank -> steps it was the straggler of
  for (size_t s = 0; s < n_steps; ++s) {
    std::vector<const RankSummary*> have;
    for (const RankSummary& r : ranks) {
      if (s < r.steps.size() && r.steps[s].selected) have.push_back(&r);
    }
    StepVerdict& v = verdicts[s];
    v.ranks = have.size();
    if (have.empty()) continue;
    std::vector<double> walls;
    for (const RankSummary* r : have) walls.push_back(static_cast<double>(r->steps[s].wall));
    v.median_wall = spread_of(walls).median;
    v.max_wall = *std::max_element(walls.begin(), walls.end());
    if (have.size() < 2) continue;
    size_t worst = 0;
    for (size_t k = 1; k < have.size(); ++k) {
      if (have[k]->steps[s].working() > have[worst]->steps[s].working()) worst = k;
    }
    std::vector<double> others, waits;
    for (size_t k = 0; k < have.size(); ++k) {
      if (k == worst) continue;
      others.push_back(static_cast<double>(have[k]->steps[s].working()));
      waits.push_back(static_cast<double>(have[k]->steps[s].exposed()));
    }
    const double lag =
        static_cast<double>(have[worst]->steps[s].working()) - spread_of(others).median;
    // A straggler is worth naming when the others lost a tenth of the step (and 1 ms) to it.
    if (lag > std::max(0.10 * v.median_wall, 1e6)) {
      v.straggler = have[worst]->rank;
      v.lag = lag;
      v.waiting = spread_of(waits).median;
      ++straggler_steps[v.straggler];
    }
  }

  std::vector<ReportTable> out;
  ReportTable per_rank;
  per_rank.title = "ranks";
  per_rank.report = "ranks";
  per_rank.id = "per_rank";
  column(per_rank, "Rank", Unit::kId, Keep::kAlways);
  column(per_rank, "Steps", Unit::kCount, Keep::kMore);
  column(per_rank, "Wall(ns)", Unit::kTime, Keep::kAlways);
  column(per_rank, "Compute(ns)", Unit::kTime, Keep::kMain);
  column(per_rank, "Communication(ns)", Unit::kTime, Keep::kMore);
  column(per_rank, "Overlapped(ns)", Unit::kTime, Keep::kDetail);
  column(per_rank, "Exposed comm(ns)", Unit::kTime, Keep::kMain);
  column(per_rank, "Idle(ns)", Unit::kTime, Keep::kMain);
  column(per_rank, "Compute %", Unit::kPercent, Keep::kMore);
  column(per_rank, "Exposed comm %", Unit::kPercent, Keep::kMain);
  column(per_rank, "Compute vs mean %", Unit::kPercent, Keep::kMore);
  column(per_rank, "Straggler steps", Unit::kCount, Keep::kMain);
  column(per_rank, "Source", Unit::kText, Keep::kDetail);
  std::vector<int64_t> compute_totals;
  for (const RankSummary& r : ranks) {
    int64_t c = 0;
    for (const RankStep& s : r.steps) c += s.selected ? s.compute : 0;
    compute_totals.push_back(c);
  }
  double mean_compute = 0;
  for (int64_t c : compute_totals) mean_compute += static_cast<double>(c);
  mean_compute = ranks.empty() ? 0 : mean_compute / static_cast<double>(ranks.size());
  for (size_t k = 0; k < ranks.size(); ++k) {
    const RankSummary& r = ranks[k];
    int64_t steps = 0, wall = 0, compute = 0, comm = 0, overlapped = 0, idle = 0;
    for (const RankStep& s : r.steps) {
      if (!s.selected) continue;
      ++steps;
      wall += s.wall;
      compute += s.compute;
      comm += s.comm;
      overlapped += s.overlapped;
      idle += s.idle;
    }
    per_rank.rows.push_back(
        {std::to_string(r.rank), std::to_string(steps), std::to_string(wall),
         std::to_string(compute), std::to_string(comm), std::to_string(overlapped),
         std::to_string(comm - overlapped), std::to_string(idle),
         ratio_percent(static_cast<double>(compute), static_cast<double>(wall)),
         ratio_percent(static_cast<double>(comm - overlapped), static_cast<double>(wall)),
         mean_compute > 0
             ? signed_percent(static_cast<double>(compute_totals[k]) - mean_compute, mean_compute)
             : "na",
         std::to_string(straggler_steps[r.rank]), r.source});
  }
  out.push_back(std::move(per_rank));

  ReportTable steps;
  steps.title = "rank steps";
  steps.report = "ranks";
  steps.id = "steps";
  column(steps, "Step", Unit::kId, Keep::kAlways);
  column(steps, "Ranks", Unit::kCount, Keep::kMore);
  column(steps, "Median wall(ns)", Unit::kTime, Keep::kMain);
  column(steps, "Max wall(ns)", Unit::kTime, Keep::kMore);
  column(steps, "Straggler", Unit::kId, Keep::kAlways);
  column(steps, "Lag(ns)", Unit::kTime, Keep::kAlways);
  column(steps, "Lag %", Unit::kPercent, Keep::kMain);
  column(steps, "Others waited(ns)", Unit::kTime, Keep::kMore);
  for (size_t s = 0; s < n_steps; ++s) {
    const StepVerdict& v = verdicts[s];
    if (v.ranks == 0) continue;
    const bool named = v.straggler >= 0;
    steps.rows.push_back({std::to_string(s), std::to_string(v.ranks),
                          fmt::format("{:.0f}", v.median_wall), fmt::format("{:.0f}", v.max_wall),
                          named ? std::to_string(v.straggler) : "-",
                          named ? fmt::format("{:.0f}", v.lag) : "0",
                          named ? ratio_percent(v.lag, v.median_wall) : "0.0",
                          named ? fmt::format("{:.0f}", v.waiting) : "0"});
  }
  out.push_back(std::move(steps));

  ReportTable detail;
  detail.title = "rank step detail";
  detail.report = "ranks";
  detail.id = "step_detail";
  column(detail, "Rank", Unit::kId, Keep::kAlways);
  column(detail, "Step", Unit::kId, Keep::kAlways);
  column(detail, "Wall(ns)", Unit::kTime, Keep::kAlways);
  column(detail, "Compute(ns)", Unit::kTime, Keep::kMain);
  column(detail, "Communication(ns)", Unit::kTime, Keep::kMore);
  column(detail, "Overlapped(ns)", Unit::kTime, Keep::kDetail);
  column(detail, "Exposed comm(ns)", Unit::kTime, Keep::kMain);
  column(detail, "Idle(ns)", Unit::kTime, Keep::kMain);
  for (const RankSummary& r : ranks) {
    for (const RankStep& s : r.steps) {
      if (!s.selected) continue;
      detail.rows.push_back({std::to_string(r.rank), std::to_string(s.index),
                             std::to_string(s.wall), std::to_string(s.compute),
                             std::to_string(s.comm), std::to_string(s.overlapped),
                             std::to_string(s.exposed()), std::to_string(s.idle)});
    }
  }
  out.push_back(std::move(detail));

  ReportTable coll;
  coll.title = "collectives";
  coll.report = "ranks";
  coll.id = "collectives";
  column(coll, "Rank", Unit::kId, Keep::kAlways);
  column(coll, "Collective", Unit::kText, Keep::kAlways);
  column(coll, "Op", Unit::kText, Keep::kMore);
  column(coll, "Payload(B)", Unit::kBytes, Keep::kMain);
  column(coll, "Size(B)", Unit::kBytes, Keep::kDetail);
  column(coll, "Calls", Unit::kCount, Keep::kMore);
  column(coll, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(coll, "Avg(ns)", Unit::kTime, Keep::kDetail);
  column(coll, "Algbw GB/s", Unit::kByteRate, Keep::kMore);
  column(coll, "Busbw GB/s", Unit::kByteRate, Keep::kMain);
  column(coll, "Group", Unit::kCount, Keep::kDetail);
  for (const RankSummary& r : ranks) {
    const int64_t world_group = r.world_size > 0 ? r.world_size : world;
    for (const RankCollective& c : r.collectives) {
      // The call's own process group where its record names it (a sub-group), else the world.
      const int64_t group = c.group > 0 ? c.group : world_group;
      // nccl-tests' size: all-gather moves the gathered output; the others their input.
      const double size =
          c.payload_bytes * (c.kind == "all_gather" ? static_cast<double>(group) : 1);
      const double moved = size * static_cast<double>(c.calls);
      const size_t row = coll.rows.size();
      coll.rows.push_back({std::to_string(r.rank), c.kind, c.op,
                           fmt::format("{:.0f}", c.payload_bytes), fmt::format("{:.0f}", size),
                           std::to_string(c.calls), std::to_string(c.time),
                           std::to_string(c.calls > 0 ? c.time / c.calls : 0), gbps(moved, c.time),
                           gbps(moved * bus_factor(c.kind, group), c.time), std::to_string(group)});
      if (c.time > 0) {
        coll.exact[{row, 8}] = moved / static_cast<double>(c.time);
        coll.exact[{row, 9}] = moved * bus_factor(c.kind, group) / static_cast<double>(c.time);
      }
    }
  }
  out.push_back(std::move(coll));
  return out;
}

}  // namespace pyprof::prof
