// The reports of ops and kernels: kernel, compiled (torch.compile's kernels), op (per op type
// and direction), instance (per op instance) and module (rolled up the module tree).
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "prof/report_builders.h"

namespace pyprof::prof::report_parts {

namespace {

// Where a record's cost is counted (the op report's Modeled column), one bit each.
enum CostPlace : unsigned {
  kCountedHere = 1,  // "yes"
  kInCaller = 2,     // CPU: an enclosing modelled op counts its whole call tree
  kInCallee = 4,     // CPU: a dispatch wrapper; the call of the same op it holds counts
  kAbovePeak = 8,    // GPU: faster than its device can run: out of the totals
  kBadTime = 16,     // no credible time: out of the totals
  kNoModel = 32,     // "na"
};

unsigned cost_place(const ProfRecord& r) {
  if (!r.modeled) return kNoModel;
  if (r.counted) return kCountedHere;
  if (r.bad_time) return kBadTime;
  if (r.above_peak) return kAbovePeak;
  if (r.wrapper) return kInCallee;
  return kInCaller;  // assign_costs: a modelled CPU op inside a modelled op (not a wrapper)
}

// The places of a row's records, in a fixed order: "yes", "in caller", "yes/in callee".
std::string cost_places_text(unsigned places) {
  static const std::pair<CostPlace, const char*> kNames[] = {
      {kCountedHere, "yes"},      {kInCaller, "in caller"}, {kInCallee, "in callee"},
      {kAbovePeak, "above peak"}, {kBadTime, "bad time"},   {kNoModel, "na"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(places & bit)) continue;
    if (!out.empty()) out += '/';
    out += name;
  }
  return out;
}

// The number after `key=` in a Params text ("nodes=13,fp32,unfused_bytes=181760"); -1: none.
double params_number(std::string_view params, std::string_view key) {
  for (size_t at = 0; at < params.size();) {
    size_t comma = params.find(',', at);
    if (comma == std::string_view::npos) comma = params.size();
    const std::string_view item = params.substr(at, comma - at);
    if (item.size() > key.size() && item.starts_with(key) && item[key.size()] == '=') {
      const std::string text(item.substr(key.size() + 1));
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      return end != text.c_str() && *end == '\0' ? v : -1;
    }
    at = comma + 1;
  }
  return -1;
}

}  // namespace

ReportTable kernel_report(const ReadResult& data, size_t top) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "kernels by self time (CPU: op records per name)" : "kernels by total time";
  column(t, "Kernel", Unit::kText, Keep::kAlways);
  column(t, "Count", Unit::kCount, Keep::kMain);
  column(t, cpu ? "Self(ns)" : "Total(ns)", Unit::kTime, Keep::kAlways);
  column(t, "Avg(ns)", Unit::kTime, Keep::kMain);
  column(t, "Min(ns)", Unit::kTime, Keep::kDetail);
  column(t, "Max(ns)", Unit::kTime, Keep::kDetail);
  if (cpu) column(t, "Counted time(ns)", Unit::kTime, Keep::kDetail);
  column(t, "TC", Unit::kText, Keep::kMain);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  std::map<uint32_t, Agg> groups;
  std::map<uint32_t, int> tc;
  for (const ProfRecord& r : data.records) {
    groups[r.name].add(r, time_of(r, cpu));
    tc[r.name] = r.tc;
  }
  auto kernels = sorted_by_time(groups);
  if (top > 0 && kernels.size() > top) kernels.resize(top);
  for (const auto& [name, a] : kernels) {
    Row row(t);
    row.text(std::string(data.strings.get(name)))
        .integer(a.count)
        .integer(a.total)
        .integer(a.total / a.count)
        .integer(a.min)
        .integer(a.max);
    if (cpu) row.integer(a.counted_ns);
    row.text(tc[name] < 0 ? "-" : std::to_string(tc[name]))
        .amount(a.flops)
        .amount(a.bytes)
        .flop_rate(a.flops, a.counted_ns)
        .end();
  }
  return t;
}

// The number after `key=` in a Params text ("nodes=13,fp32,unfused_bytes=181760"); -1: none.
ReportTable compiled_report(const ReadResult& data, size_t top) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "compiled kernels by self time" : "compiled kernels by total time";
  column(t, "Kernel", Unit::kText, Keep::kAlways);
  column(t, "Dir", Unit::kText, Keep::kMore);
  column(t, "Attributed", Unit::kText, Keep::kMain);
  column(t, "Count", Unit::kCount, Keep::kMore);
  column(t, cpu ? "Self(ns)" : "Total(ns)", Unit::kTime, Keep::kAlways);
  column(t, "Time %", Unit::kPercent, Keep::kMain);
  column(t, "Nodes", Unit::kCount, Keep::kDetail);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes, Keep::kMore);
  column(t, "Unfused bytes", Unit::kBytes, Keep::kDetail);
  column(t, "Fusion saved %", Unit::kPercent, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  column(t, "GB/s", Unit::kByteRate, Keep::kMore);
  struct Entry {
    Agg agg;
    unsigned dirs = 0;     // 1: fprop, 2: bprop, 4: neither
    int64_t by_nodes = 0;  // records costed from their own marks
    int64_t by_call = 0;   // from the marks of the extern call they ran in
    double unfused = 0;    // the counted records' share of their nodes' unfused bytes
    double nodes = -1;     // of the first costed record
  };
  std::map<uint32_t, Entry> by_name;
  int64_t all_time = 0;
  for (const ProfRecord& r : data.records) {
    const int64_t time = time_of(r, cpu);
    all_time += time;
    if (!r.compiled && !r.compiled_call && !is_inductor_kernel(data.strings.get(r.name))) {
      continue;
    }
    Entry& e = by_name[r.name];
    e.agg.add(r, time);
    e.dirs |= r.dir == Dir::kFprop ? 1u : r.dir == Dir::kBprop ? 2u : 4u;
    if (!r.compiled && !r.compiled_call) continue;
    ++(r.compiled ? e.by_nodes : e.by_call);
    const std::string_view params = data.strings.get(r.params);
    if (e.nodes < 0) e.nodes = params_number(params, "nodes");
    const double unfused = params_number(params, "unfused_bytes");
    if (r.counted && unfused >= 0 && r.op_bytes > 0) e.unfused += unfused * r.bytes / r.op_bytes;
  }
  std::vector<std::pair<uint32_t, Entry>> rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.agg.total > b.second.agg.total;
  });
  if (top > 0 && rows.size() > top) rows.resize(top);
  for (const auto& [name, e] : rows) {
    const Agg& a = e.agg;
    const int64_t attributed = e.by_nodes + e.by_call;
    std::string how = attributed == 0        ? "opaque"
                      : attributed < a.count ? fmt::format("{} of {}", attributed, a.count)
                      : e.by_call == 0       ? "nodes"
                      : e.by_nodes == 0      ? "extern call"
                                             : "nodes/extern call";
    static const char* const kDirs[] = {"-", "fprop",   "bprop",   "fprop/bprop",
                                        "-", "fprop/-", "bprop/-", "fprop/bprop/-"};
    Row row(t);
    row.text(std::string(data.strings.get(name)))
        .text(kDirs[e.dirs & 7u])
        .text(std::move(how))
        .integer(a.count)
        .integer(a.total)
        .percent(static_cast<double>(a.total), static_cast<double>(all_time))
        .text(e.nodes >= 0 ? num(e.nodes) : "na")
        .text(attributed ? num(a.flops) : "na")
        .text(attributed ? num(a.bytes) : "na")
        .text(e.unfused > 0 ? num(e.unfused) : "na")
        .text(e.unfused > 0 ? pct(e.unfused - a.bytes, e.unfused) : "na")
        .flop_rate(a.flops, attributed ? a.counted_ns : 0)
        .byte_rate(a.bytes, attributed ? a.counted_ns : 0)
        .end();
  }
  return t;
}

ReportTable op_report(const ReadResult& data) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "ops by self time (per op type and direction)"
                : "ops by total time (per op type and direction)";
  column(t, "Op", Unit::kText, Keep::kAlways);
  column(t, "Direction", Unit::kText, Keep::kAlways);
  column(t, "Instances", Unit::kCount, Keep::kMain);
  column(t, "Records", Unit::kCount, Keep::kDetail);
  // The time columns add up to the profile: a CPU op's self time, a GPU op's kernel and copy
  // time. Its counted time is what its FLOPs ran in (on CPU the counted ops' inclusive time).
  if (cpu) {
    column(t, "Self(ns)", Unit::kTime, Keep::kAlways);
    column(t, "Inclusive(ns)", Unit::kTime, Keep::kMore);
  } else {
    column(t, "Total(ns)", Unit::kTime, Keep::kAlways);
  }
  column(t, "Counted time(ns)", Unit::kTime, Keep::kDetail);
  column(t, "Avg/instance(ns)", Unit::kTime, Keep::kMore);
  column(t, "Min/instance(ns)", Unit::kTime, Keep::kDetail);
  column(t, "Max/instance(ns)", Unit::kTime, Keep::kDetail);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  column(t, "GB/s", Unit::kByteRate, Keep::kMore);
  column(t, "Modeled", Unit::kText, Keep::kMore);
  // Instance times first, so that min/max/avg are per op instance, not per kernel: a GPU op
  // instance's kernels and copies; a CPU op record's inclusive time (each is an instance).
  std::unordered_map<int64_t, int64_t> instance_time;
  for (const ProfRecord& r : data.records) {
    if (r.instance) instance_time[r.instance] += r.duration;
  }
  // Grouped by a dense key (op string id, direction) in a hash map: one lookup per record.
  struct Group {
    Agg all;
    int64_t instances = 0, instance_total = 0;
    int64_t instance_min = std::numeric_limits<int64_t>::max(), instance_max = 0;
    int64_t modeled = 0;  // records with a cost model
    unsigned places = 0;  // cost_place() of its records
  };
  std::unordered_map<uint64_t, Group> by_key;
  std::unordered_set<int64_t> seen;  // instances already counted (an instance has one op/dir)
  for (const ProfRecord& r : data.records) {
    uint64_t k = (uint64_t{r.op} << 2) | static_cast<uint64_t>(r.dir);
    Group& g = by_key[k];
    g.all.add(r, time_of(r, cpu));
    g.modeled += r.modeled ? 1 : 0;
    g.places |= cost_place(r);
    if (r.instance && seen.insert(r.instance).second) {
      int64_t it = instance_time[r.instance];
      ++g.instances;
      g.instance_total += it;
      g.instance_min = std::min(g.instance_min, it);
      g.instance_max = std::max(g.instance_max, it);
    }
  }
  std::map<std::pair<uint32_t, int>, Agg> groups;
  for (const auto& [k, g] : by_key) {
    groups[{static_cast<uint32_t>(k >> 2), static_cast<int>(k & 3)}] = g.all;
  }
  for (const auto& [key, a] : sorted_by_time(groups)) {
    const Group& g = by_key[(uint64_t{key.first} << 2) | static_cast<uint64_t>(key.second)];
    std::string op(data.strings.get(key.first));
    // Records outside any op belong to no op instance: each is an instance of its own (as a CPU
    // op record is), so the per-instance columns are per record. Their Modeled column says
    // whether all, some (copies have bytes, loose kernels nothing) or none have a cost.
    const bool unattributed = op.empty();
    // A row without instances (copies inside an op carry their own bytes, instance 0): per
    // record, as the (unattributed) row.
    const bool per_record = unattributed || g.instances == 0;
    int64_t instances = per_record ? a.count : g.instances;
    int64_t instance_total = per_record ? a.inclusive : g.instance_total;
    int64_t instance_min = per_record ? a.min_duration : g.instance_min;
    int64_t instance_max = per_record ? a.max_duration : g.instance_max;
    std::string modeled_text = cost_places_text(g.places);
    if (unattributed) {
      modeled_text = g.modeled == a.count ? "yes" : g.modeled > 0 ? "partly" : "no";
    }
    Row row(t);
    row.text(unattributed ? "(unattributed)" : op)
        .text(dir_name(static_cast<Dir>(key.second)))
        .integer(unattributed ? a.count : g.instances)
        .integer(a.count)
        .integer(a.total);
    if (cpu) row.integer(a.inclusive);
    row.integer(a.counted_ns)
        .integer(instance_total / std::max<int64_t>(instances, 1))
        .text(instances ? std::to_string(instance_min) : "-")
        .text(instances ? std::to_string(instance_max) : "-")
        .amount(a.flops)
        .amount(a.bytes)
        .flop_rate(a.flops, a.counted_ns)
        .byte_rate(a.bytes, a.counted_ns)
        .text(modeled_text)
        .end();
  }
  return t;
}

ReportTable instance_report(const ReadResult& data, size_t top) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "op instances by self time" : "op instances by total time";
  column(t, "Op", Unit::kText, Keep::kAlways);
  column(t, "Direction", Unit::kText, Keep::kAlways);
  column(t, "Seq", Unit::kId, Keep::kMore);
  column(t, "Module", Unit::kText, Keep::kMain);
  column(t, "Records", Unit::kCount, Keep::kDetail);
  if (cpu) {
    column(t, "Self(ns)", Unit::kTime, Keep::kAlways);
    column(t, "Inclusive(ns)", Unit::kTime, Keep::kMore);
  } else {
    column(t, "Total(ns)", Unit::kTime, Keep::kAlways);
  }
  column(t, "Counted time(ns)", Unit::kTime, Keep::kDetail);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  column(t, "Params", Unit::kText, Keep::kMore);
  struct Inst {
    const ProfRecord* first = nullptr;
    Agg agg;
  };
  std::unordered_map<int64_t, Inst> groups;
  std::vector<const Inst*> order;  // map entries stay where they are: sorted without lookups
  for (const ProfRecord& r : data.records) {
    if (!r.instance) continue;
    Inst& i = groups[r.instance];
    if (!i.first) {
      i.first = &r;
      order.push_back(&i);
    }
    i.agg.add(r, time_of(r, cpu));
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Inst* a, const Inst* b) { return a->agg.total > b->agg.total; });
  if (top > 0 && order.size() > top) order.resize(top);
  for (const Inst* instance : order) {
    const Inst& i = *instance;
    const ProfRecord& r = *i.first;
    Row row(t);
    row.text(std::string(data.strings.get(r.op)))
        .text(dir_name(r.dir))
        .text(r.seq >= 0 ? std::to_string(r.seq) : "-")
        .text(std::string(data.strings.get(r.module)))
        .integer(i.agg.count)
        .integer(i.agg.total);
    if (cpu) row.integer(i.agg.inclusive);
    row.integer(i.agg.counted_ns)
        .amount(i.agg.flops)
        .amount(i.agg.bytes)
        .flop_rate(i.agg.flops, i.agg.counted_ns)
        .text(r.modeled ? std::string(data.strings.get(r.params)) : "na")
        .end();
  }
  return t;
}

ReportTable module_report(const ReadResult& data, int depth) {
  ReportTable t;
  t.title = depth > 0 ? fmt::format("modules (rolled up, depth {})", depth) : "modules (rolled up)";
  column(t, "Module", Unit::kText, Keep::kAlways);
  column(t, "Fprop(ns)", Unit::kTime, Keep::kMain);
  column(t, "Bprop(ns)", Unit::kTime, Keep::kMain);
  column(t, "Total(ns)", Unit::kTime, Keep::kAlways);
  column(t, "Fprop FLOPs", Unit::kFlops, Keep::kMore);
  column(t, "Bprop FLOPs", Unit::kFlops, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  struct M {
    int64_t f = 0, b = 0;
    double ff = 0, bf = 0;
  };
  // Totals per module string first (one hash lookup per record), then rolled up the tree:
  // every ancestor path gets its descendants' time ("LeNet" includes "LeNet.conv1"). A module's
  // time is all the time spent in it (GPU: its kernels and copies; CPU: its ops' self time, so a
  // counted op's callees are in it too) and its FLOPs those of the counted ops in it: its
  // TFLOP/s is the rate it achieved over its whole time.
  std::unordered_map<uint32_t, M> direct;
  for (const ProfRecord& r : data.records) {
    if (r.module == 0) continue;
    M& m = direct[r.module];
    int64_t time = time_of(r, data.cpu_only);
    double flops = r.counted ? r.flops : 0;
    if (r.dir == Dir::kBprop) {
      m.b += time;
      m.bf += flops;
    } else {
      m.f += time;
      m.ff += flops;
    }
  }
  std::map<std::string, M> mods;
  for (const auto& [id, d] : direct) {
    std::string_view path = data.strings.get(id);
    int level = 0;
    for (size_t pos = 0;; ++level) {
      size_t dot = path.find('.', pos);
      if (depth > 0 && level >= depth) break;
      M& m = mods[std::string(path.substr(0, dot))];
      m.f += d.f;
      m.b += d.b;
      m.ff += d.ff;
      m.bf += d.bf;
      if (dot == std::string_view::npos) break;
      pos = dot + 1;
    }
  }
  for (const auto& [path, m] : mods) {
    Row(t)
        .text(path)
        .integer(m.f)
        .integer(m.b)
        .integer(m.f + m.b)
        .amount(m.ff)
        .amount(m.bf)
        .flop_rate(m.ff + m.bf, m.f + m.b)
        .end();
  }
  return t;
}
}  // namespace pyprof::prof::report_parts
