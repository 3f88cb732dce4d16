#include "prof/reports.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "prof/roofline.h"
#include "prof/table.h"

namespace pyprof::prof {

const std::vector<std::string>& report_names() {
  static const std::vector<std::string> kNames = {"kernel",  "op", "instance", "module",
                                                  "summary", "tc", "peaks",    "roofline"};
  return kNames;
}

namespace {

int64_t time_of(const ProfRecord& r, bool cpu_only) {
  return cpu_only ? r.self_duration : r.duration;
}

const char* dir_name(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

std::string num(double v) { return fmt::format("{:.0f}", v); }
std::string rate(double flops, int64_t ns) {
  return ns > 0 ? fmt::format("{:.3f}", flops / static_cast<double>(ns) / 1e3) : "na";
}
std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}", 100.0 * part / whole) : "na";
}

struct Agg {
  int64_t count = 0;
  int64_t total = 0;
  int64_t min = std::numeric_limits<int64_t>::max();
  int64_t max = 0;
  double flops = 0;
  double bytes = 0;
  int64_t modeled_time = 0;
  int64_t tc_time = 0;
  void add(const ProfRecord& r, int64_t t) {
    ++count;
    total += t;
    min = std::min(min, t);
    max = std::max(max, t);
    if (r.counted) {
      flops += r.flops;
      bytes += r.bytes;
    }
    if (r.modeled) modeled_time += t;
    if (r.tc == 1) tc_time += t;
  }
};

template <typename Key>
std::vector<std::pair<Key, Agg>> sorted_by_time(const std::map<Key, Agg>& groups) {
  std::vector<std::pair<Key, Agg>> v(groups.begin(), groups.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
  return v;
}

ReportTable kernel_report(const ReadResult& data) {
  ReportTable t{"kernels by total time",
                {"Kernel", "Count", "Total(ns)", "Avg(ns)", "Min(ns)", "Max(ns)", "TC",
                 "FLOPs(FMA=2)", "Bytes(ideal DRAM)", "TFLOP/s"},
                {false, true, true, true, true, true, false, true, true, true},
                {}};
  std::map<uint32_t, Agg> groups;
  std::map<uint32_t, int> tc;
  for (const ProfRecord& r : data.records) {
    groups[r.name].add(r, time_of(r, data.cpu_only));
    tc[r.name] = r.tc;
  }
  for (const auto& [name, a] : sorted_by_time(groups)) {
    t.rows.push_back({std::string(data.strings.get(name)), std::to_string(a.count),
                      std::to_string(a.total), std::to_string(a.total / a.count),
                      std::to_string(a.min), std::to_string(a.max),
                      tc[name] < 0 ? "-" : std::to_string(tc[name]), num(a.flops), num(a.bytes),
                      rate(a.flops, a.total)});
  }
  return t;
}

ReportTable op_report(const ReadResult& data) {
  ReportTable t{"ops by total time (per op type and direction)",
                {"Op", "Direction", "Instances", "Records", "Total(ns)", "Avg/instance(ns)",
                 "Min/instance(ns)", "Max/instance(ns)", "FLOPs(FMA=2)", "Bytes(ideal DRAM)",
                 "TFLOP/s", "GB/s", "Modeled"},
                {false, false, true, true, true, true, true, true, true, true, true, true, false},
                {}};
  // Instance times first, so that min/max/avg are per op instance, not per kernel.
  std::unordered_map<int64_t, int64_t> instance_time;
  for (const ProfRecord& r : data.records) {
    if (r.instance) instance_time[r.instance] += time_of(r, data.cpu_only);
  }
  // Grouped by a dense key (op string id, direction) in a hash map: one lookup per record.
  struct Group {
    Agg all, per_instance;
    int64_t modeled = 0;  // records with a cost model
  };
  std::unordered_map<uint64_t, Group> by_key;
  std::unordered_set<int64_t> seen;  // instances already counted (an instance has one op/dir)
  for (const ProfRecord& r : data.records) {
    uint64_t k = (uint64_t{r.op} << 2) | static_cast<uint64_t>(r.dir);
    Group& g = by_key[k];
    g.all.add(r, time_of(r, data.cpu_only));
    g.modeled += r.modeled ? 1 : 0;
    if (r.instance && seen.insert(r.instance).second) {
      Agg& a = g.per_instance;
      int64_t it = instance_time[r.instance];
      ++a.count;
      a.min = std::min(a.min, it);
      a.max = std::max(a.max, it);
    }
  }
  std::map<std::pair<uint32_t, int>, Agg> groups;
  std::map<std::pair<uint32_t, int>, Agg> per_instance;
  std::map<std::pair<uint32_t, int>, int64_t> modeled;
  for (const auto& [k, g] : by_key) {
    auto key = std::make_pair(static_cast<uint32_t>(k >> 2), static_cast<int>(k & 3));
    groups[key] = g.all;
    per_instance[key] = g.per_instance;
    modeled[key] = g.modeled;
  }
  for (const auto& [key, a] : sorted_by_time(groups)) {
    std::string op(data.strings.get(key.first));
    // Records outside any op belong to no op instance: each is an instance of its own (as a CPU
    // op record is), so the per-instance columns are per record. Their Modeled column says
    // whether all, some (copies have bytes, loose kernels nothing) or none have a cost.
    const bool unattributed = op.empty();
    const Agg& inst = unattributed ? a : per_instance[key];
    int64_t n = inst.count ? inst.count : a.count;
    int64_t modeled_records = modeled[key];
    std::string modeled_text = modeled_records > 0 ? "yes" : "na";
    if (unattributed) {
      modeled_text = modeled_records == a.count ? "yes" : modeled_records > 0 ? "partly" : "no";
    }
    t.rows.push_back(
        {unattributed ? "(unattributed)" : op, dir_name(static_cast<Dir>(key.second)),
         std::to_string(inst.count), std::to_string(a.count), std::to_string(a.total),
         std::to_string(a.total / std::max<int64_t>(n, 1)),
         inst.count ? std::to_string(inst.min) : "-", inst.count ? std::to_string(inst.max) : "-",
         num(a.flops), num(a.bytes), rate(a.flops, a.total),
         a.total > 0 ? fmt::format("{:.1f}", a.bytes / static_cast<double>(a.total)) : "na",
         modeled_text});
  }
  return t;
}

ReportTable instance_report(const ReadResult& data) {
  ReportTable t{"op instances by total time",
                {"Op", "Direction", "Seq", "Module", "Records", "Total(ns)", "FLOPs(FMA=2)",
                 "Bytes(ideal DRAM)", "TFLOP/s", "Params"},
                {false, false, true, false, true, true, true, true, true, false},
                {}};
  struct Inst {
    const ProfRecord* first = nullptr;
    Agg agg;
  };
  std::unordered_map<int64_t, Inst> groups;
  std::vector<int64_t> order;
  for (const ProfRecord& r : data.records) {
    if (!r.instance) continue;
    Inst& i = groups[r.instance];
    if (!i.first) {
      i.first = &r;
      order.push_back(r.instance);
    }
    i.agg.add(r, time_of(r, data.cpu_only));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return groups[a].agg.total > groups[b].agg.total; });
  for (int64_t id : order) {
    const Inst& i = groups[id];
    const ProfRecord& r = *i.first;
    t.rows.push_back({std::string(data.strings.get(r.op)), dir_name(r.dir),
                      r.seq >= 0 ? std::to_string(r.seq) : "-",
                      std::string(data.strings.get(r.module)), std::to_string(i.agg.count),
                      std::to_string(i.agg.total), num(i.agg.flops), num(i.agg.bytes),
                      rate(i.agg.flops, i.agg.total),
                      r.modeled ? std::string(data.strings.get(r.params)) : "na"});
  }
  return t;
}

ReportTable module_report(const ReadResult& data, int depth) {
  ReportTable t{
      depth > 0 ? fmt::format("modules (rolled up, depth {})", depth) : "modules (rolled up)",
      {"Module", "Fprop(ns)", "Bprop(ns)", "Total(ns)", "Fprop FLOPs", "Bprop FLOPs", "TFLOP/s"},
      {false, true, true, true, true, true, true},
      {}};
  struct M {
    int64_t f = 0, b = 0;
    double ff = 0, bf = 0;
  };
  // Totals per module string first (one hash lookup per record), then rolled up the tree:
  // every ancestor path gets its descendants' time ("LeNet" includes "LeNet.conv1").
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
    t.rows.push_back({path, std::to_string(m.f), std::to_string(m.b), std::to_string(m.f + m.b),
                      num(m.ff), num(m.bf), rate(m.ff + m.bf, m.f + m.b)});
  }
  return t;
}

ReportTable summary_report(const ReadResult& data) {
  ReportTable t{"summary", {"Metric", "Value"}, {false, false}, {}};
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0, total = 0, kernel_time = 0;
  int64_t tc_time = 0, modeled_time = 0, records = 0, timed_records = 0;
  double flops = 0, bytes = 0;
  std::vector<std::pair<int64_t, int64_t>> intervals;
  for (const ProfRecord& r : data.records) {
    ++records;
    int64_t time = time_of(r, data.cpu_only);
    total += time;
    if (r.kind == Kind::kKernel) {
      kernel_time += time;
      if (r.tc == 1) tc_time += time;
    }
    // A record above its device's peak has a cost but no credible time: out of the rate.
    if (r.modeled && !r.above_peak) modeled_time += time;
    if (r.counted) {
      flops += r.flops;
      bytes += r.bytes;
    }
    // A record whose time is unknown has no place on the time line.
    if (r.bad_time) continue;
    ++timed_records;
    first = std::min(first, r.start);
    last = std::max(last, r.start + r.duration);
    if (!data.cpu_only) intervals.emplace_back(r.start, r.start + r.duration);
  }
  int64_t wall = timed_records ? last - first : 0;
  // GPU busy: the union of activity intervals (streams overlap).
  std::sort(intervals.begin(), intervals.end());
  int64_t busy = 0, cur_start = 0, cur_end = -1;
  for (const auto& [s, e] : intervals) {
    if (s > cur_end) {
      if (cur_end >= cur_start) busy += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (cur_end >= cur_start && !intervals.empty()) busy += cur_end - cur_start;
  auto row = [&](std::string k, std::string v) { t.rows.push_back({std::move(k), std::move(v)}); };
  row("records", std::to_string(records));
  row(data.cpu_only ? "profile" : "profile", data.cpu_only ? "CPU only (op records)" : "GPU");
  row("wall time (ns)", std::to_string(wall));
  if (!data.cpu_only) {
    row("GPU busy (ns)", std::to_string(busy));
    row("GPU busy %", pct(static_cast<double>(busy), static_cast<double>(wall)));
    row("kernel time (ns)", std::to_string(kernel_time));
    row("Tensor Core kernel time %",
        pct(static_cast<double>(tc_time), static_cast<double>(kernel_time)));
  } else {
    row("op self time (ns)", std::to_string(total));
  }
  row("time covered by a FLOP model %",
      pct(static_cast<double>(modeled_time), static_cast<double>(total)));
  row("FLOPs (FMA=2)", num(flops));
  row("bytes (ideal DRAM)", num(bytes));
  row("achieved TFLOP/s (over modelled time)", rate(flops, modeled_time));
  if (!data.devices.empty()) {
    row("records above device peak (out of totals)", std::to_string(data.above_peak));
  }
  if (data.bad_time > 0) {
    row("records with an impossible time (out of totals)", std::to_string(data.bad_time));
  }
  ReportTable ops = op_report(data);
  for (size_t i = 0; i < ops.rows.size() && i < 10; ++i) {
    row(fmt::format("top op {}", i + 1),
        fmt::format("{} {} {} ns ({}%)", ops.rows[i][0], ops.rows[i][1], ops.rows[i][4],
                    pct(std::stod(ops.rows[i][4]), static_cast<double>(total))));
  }
  return t;
}

ReportTable tc_report(const ReadResult& data) {
  ReportTable t{"Tensor Core use of eligible ops",
                {"Op", "Direction", "Eligible kernels", "Eligible time(ns)", "TC time(ns)",
                 "Non-TC time(ns)", "Using TC %", "Verdict"},
                {false, false, true, true, true, true, true, false},
                {}};
  std::map<std::pair<uint32_t, int>, Agg> groups;
  for (const ProfRecord& r : data.records) {
    if (r.kind != Kind::kKernel || !r.tc_eligible) continue;
    groups[{r.op, static_cast<int>(r.dir)}].add(r, r.duration);
  }
  for (const auto& [key, a] : sorted_by_time(groups)) {
    int64_t non_tc = a.total - a.tc_time;
    t.rows.push_back({std::string(data.strings.get(key.first)),
                      dir_name(static_cast<Dir>(key.second)), std::to_string(a.count),
                      std::to_string(a.total), std::to_string(a.tc_time), std::to_string(non_tc),
                      pct(static_cast<double>(a.tc_time), static_cast<double>(a.total)),
                      a.tc_time == a.total ? "using TC"
                      : a.tc_time == 0     ? "eligible, not using TC"
                                           : "partly"});
  }
  return t;
}

}  // namespace

bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error) {
  const int depth = options.depth;
  if (name == "kernel") {
    out.push_back(kernel_report(data));
  } else if (name == "op") {
    out.push_back(op_report(data));
  } else if (name == "instance") {
    out.push_back(instance_report(data));
  } else if (name == "module") {
    out.push_back(module_report(data, depth));
  } else if (name == "summary") {
    out.push_back(summary_report(data));
  } else if (name == "tc") {
    out.push_back(tc_report(data));
  } else if (name == "peaks") {
    out.push_back(peaks_report(data, options.peaks));
  } else if (name == "roofline") {
    for (ReportTable& t : roofline_report(data, options.peaks)) out.push_back(std::move(t));
  } else {
    error = "unknown report '" + name +
            "' (reports: kernel, op, instance, module, summary, tc, peaks, roofline)";
    return false;
  }
  return true;
}

void write_report(OutputFile& out, const std::vector<ReportTable>& tables, ReportFormat format) {
  std::string line;
  for (const ReportTable& t : tables) {
    if (out.failed()) return;
    if (format == ReportFormat::kJson) {
      for (const auto& row : t.rows) {
        line = "{\"report\":";
        line += json_string(t.title);
        for (size_t i = 0; i < row.size(); ++i) {
          line += ',';
          line += json_string(t.headers[i]);
          line += ':';
          bool numeric = t.numeric[i] && row[i] != "na" && row[i] != "-" && !row[i].empty();
          line += numeric ? row[i] : (row[i] == "na" ? "null" : json_string(row[i]));
        }
        line += "}\n";
        if (!out.write(line)) return;
      }
      continue;
    }
    if (format == ReportFormat::kCsv) {
      line.clear();
      for (size_t i = 0; i < t.headers.size(); ++i) {
        if (i) line += ',';
        line += csv_field(t.headers[i]);
      }
      line += '\n';
      out.write(line);
      for (const auto& row : t.rows) {
        line.clear();
        for (size_t i = 0; i < row.size(); ++i) {
          if (i) line += ',';
          line += csv_field(row[i]);
        }
        line += '\n';
        if (!out.write(line)) return;
      }
      continue;
    }
    // Text: columns as wide as their widest cell, cells over kMaxTextCellWidth elided.
    std::vector<std::vector<std::string>> cells;
    cells.reserve(t.rows.size() + 1);
    cells.push_back(t.headers);
    for (const auto& row : t.rows) {
      cells.emplace_back();
      for (const std::string& value : row) cells.back().push_back(elide_cell(value));
    }
    std::vector<size_t> w(t.headers.size());
    for (const auto& row : cells) {
      for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], text_width(row[i]));
    }
    out.write(t.title + "\n");
    for (const auto& row : cells) {
      line.clear();
      for (size_t i = 0; i < row.size(); ++i) {
        std::string padding(w[i] - text_width(row[i]), ' ');
        line += t.numeric[i] ? padding + row[i] : row[i] + padding;
        line += i + 1 < row.size() ? "  " : "";
      }
      line += '\n';
      if (!out.write(line)) return;
    }
    out.write("\n");
  }
}

}  // namespace pyprof::prof
