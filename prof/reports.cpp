#include "prof/reports.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "prof/advice.h"
#include "prof/iterations.h"
#include "prof/marks.h"
#include "prof/ranks.h"
#include "prof/roofline.h"
#include "prof/table.h"
#include "prof/time_model.h"

namespace pyprof::prof {

const std::vector<std::string>& report_names() {
  static const std::vector<std::string> kNames = {
      "kernel", "op",       "instance",  "module", "summary",   "tc",    "family",   "phase",
      "peaks",  "roofline", "iteration", "advice", "timemodel", "ranks", "compiled", "marks"};
  return kNames;
}

namespace {

// `rounded` (a whole number) with a comma between thousands: 1234567 -> "1,234,567".
std::string with_separators(double rounded) {
  std::string digits = fmt::format("{:.0f}", std::fabs(rounded));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return rounded < 0 ? "-" + out : out;
}

// `v` (> 0) rounded to 3 significant digits.
double round_to_3_digits(double v) {
  double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

// `value` with the largest of `names` (1000 apart, names[0] the base unit) that leaves at least
// 1 before the point, after rounding: 999.5 ns is "1.00 µs", not "1000 ns". The base unit
// prints whole numbers (ns, FLOPs and bytes are); past the last unit the number grows.
std::string scaled(double value, std::initializer_list<const char*> names) {
  const char* const* unit = names.begin();
  double magnitude = std::fabs(value);
  size_t prefix = 0;
  double rounded = std::round(magnitude);
  while (prefix + 1 < names.size() && rounded >= 1000) {
    magnitude /= 1000;
    ++prefix;
    rounded = magnitude > 0 ? round_to_3_digits(magnitude) : 0;
  }
  std::string number;
  if (prefix == 0 || rounded >= 1000) {
    number = with_separators(std::round(magnitude));
  } else {
    number = fmt::format("{:.{}f}", rounded, rounded >= 100 ? 0 : rounded >= 10 ? 1 : 2);
  }
  bool negative = value < 0 && number.find_first_not_of("0.,") != std::string::npos;
  return fmt::format("{}{} {}", negative ? "-" : "", number, unit[prefix]);
}

}  // namespace

std::string raw_rate_text(double v, int decimals) {
  if (v != 0 && std::abs(v) < 0.1) return fmt::format("{:.3g}", v);
  return fmt::format("{:.{}f}", v, decimals);
}

std::string format_quantity(double value, Unit unit) {
  if (std::isnan(value)) return "na";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  switch (unit) {
    case Unit::kCount:
      return with_separators(std::round(value));
    case Unit::kTime:
      return scaled(value, {"ns", "\xC2\xB5s", "ms", "s"});  // U+00B5 MICRO SIGN in UTF-8
    case Unit::kFlops:
      return scaled(value, {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"});
    case Unit::kBytes:
      return scaled(value, {"B", "kB", "MB", "GB", "TB", "PB", "EB"});
    case Unit::kFlopRate:
      return scaled(value * 1e12,
                    {"FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"});
    case Unit::kByteRate:
      return scaled(value * 1e9, {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s", "EB/s"});
    case Unit::kFlopsPerSecond:
      return format_quantity(value / 1e12, Unit::kFlopRate);
    case Unit::kBytesPerSecond:
      return format_quantity(value / 1e9, Unit::kByteRate);
    case Unit::kRatio:
      return std::abs(value) >= 1000 ? fmt::format("{:.0f}", value) : fmt::format("{:.3g}", value);
    case Unit::kPercent:
      return fmt::format("{:.1f}", value);
    case Unit::kText:
    case Unit::kPerRow:
      break;
  }
  return fmt::format("{}", value);
}

bool report_format_of(const std::string& name, bool raw, ReportFormat& out) {
  if (name == "text") {
    out = raw ? ReportFormat::kRawText : ReportFormat::kText;
  } else if (name == "csv") {
    out = ReportFormat::kCsv;
  } else if (name == "json") {
    out = ReportFormat::kJson;
  } else {
    return false;
  }
  return true;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

void column(ReportTable& t, std::string header, Unit unit) {
  t.headers.push_back(std::move(header));
  t.units.push_back(unit);
  t.numeric.push_back(unit != Unit::kText && unit != Unit::kPerRow);
}

bool is_inductor_kernel(std::string_view name) {
  if (name.starts_with("triton_")) return true;
  if (!name.starts_with("graph_")) return false;
  const size_t digits = name.find_first_not_of("0123456789", 6);
  return digits != 6 && digits != std::string_view::npos &&
         name.substr(digits).starts_with("_cpp_");
}

namespace {

// The time a record adds to a report's time columns: a GPU record's duration (kernel or copy);
// a CPU op's self time, so that the ops' times add up to the profile.
int64_t time_of(const ProfRecord& r, bool cpu_only) { return report_time(r, cpu_only); }

const char* dir_name(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

std::string num(double v) { return fmt::format("{:.0f}", v); }
// FLOPs per ns / 1e3: TFLOP/s; bytes per ns: GB/s.
double tflops(double flops, int64_t ns) { return flops / static_cast<double>(ns) / 1e3; }
double gbps(double bytes, int64_t ns) { return bytes / static_cast<double>(ns); }
std::string rate(double flops, int64_t ns) {
  return ns > 0 ? raw_rate_text(tflops(flops, ns), 3) : "na";
}
std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}", 100.0 * part / whole) : "na";
}

// Builds one row of `t`: every cell's raw text, and for a rate also its exact value (the raw
// text keeps 3 or 1 decimals of TFLOP/s or GB/s, too few for a CPU's rate in human units).
class Row {
 public:
  explicit Row(ReportTable& t) : t_(t) {}
  Row& text(std::string s) {
    cells_.push_back(std::move(s));
    return *this;
  }
  Row& integer(int64_t v) { return text(std::to_string(v)); }
  Row& amount(double v) { return text(num(v)); }
  Row& flop_rate(double flops, int64_t ns) {
    if (ns > 0) t_.exact[{t_.rows.size(), cells_.size()}] = tflops(flops, ns);
    return text(rate(flops, ns));
  }
  Row& byte_rate(double bytes, int64_t ns) {
    if (ns > 0) t_.exact[{t_.rows.size(), cells_.size()}] = gbps(bytes, ns);
    return text(ns > 0 ? raw_rate_text(gbps(bytes, ns), 1) : "na");
  }
  Row& percent(double part, double whole) { return text(pct(part, whole)); }
  void end() { t_.rows.push_back(std::move(cells_)); }

 private:
  ReportTable& t_;
  std::vector<std::string> cells_;
};

struct Agg {
  int64_t count = 0;
  int64_t total = 0;       // time_of(): GPU time, CPU self time
  int64_t inclusive = 0;   // durations: on CPU the ops' inclusive time (their callees in it)
  int64_t counted_ns = 0;  // counted_time(): the time the counted FLOPs and bytes ran in
  int64_t min = std::numeric_limits<int64_t>::max();  // of the records' `t`
  int64_t max = 0;
  int64_t min_duration = std::numeric_limits<int64_t>::max();  // of their durations
  int64_t max_duration = 0;
  double flops = 0;
  double bytes = 0;
  int64_t tc_time = 0;
  void add(const ProfRecord& r, int64_t t) {
    ++count;
    total += t;
    inclusive += r.duration;
    counted_ns += counted_time(r);
    min = std::min(min, t);
    max = std::max(max, t);
    min_duration = std::min(min_duration, r.duration);
    max_duration = std::max(max_duration, r.duration);
    if (r.counted) {
      flops += r.flops;
      bytes += r.bytes;
    }
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

ReportTable kernel_report(const ReadResult& data, size_t top) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "kernels by self time (CPU: op records per name)" : "kernels by total time";
  column(t, "Kernel", Unit::kText);
  column(t, "Count", Unit::kCount);
  column(t, cpu ? "Self(ns)" : "Total(ns)", Unit::kTime);
  column(t, "Avg(ns)", Unit::kTime);
  column(t, "Min(ns)", Unit::kTime);
  column(t, "Max(ns)", Unit::kTime);
  if (cpu) column(t, "Counted time(ns)", Unit::kTime);
  column(t, "TC", Unit::kText);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes);
  column(t, "TFLOP/s", Unit::kFlopRate);
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

ReportTable compiled_report(const ReadResult& data, size_t top) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "compiled kernels by self time" : "compiled kernels by total time";
  column(t, "Kernel", Unit::kText);
  column(t, "Dir", Unit::kText);
  column(t, "Attributed", Unit::kText);
  column(t, "Count", Unit::kCount);
  column(t, cpu ? "Self(ns)" : "Total(ns)", Unit::kTime);
  column(t, "Time %", Unit::kPercent);
  column(t, "Nodes", Unit::kCount);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes);
  column(t, "Unfused bytes", Unit::kBytes);
  column(t, "Fusion saved %", Unit::kPercent);
  column(t, "TFLOP/s", Unit::kFlopRate);
  column(t, "GB/s", Unit::kByteRate);
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
  column(t, "Op", Unit::kText);
  column(t, "Direction", Unit::kText);
  column(t, "Instances", Unit::kCount);
  column(t, "Records", Unit::kCount);
  // The time columns add up to the profile: a CPU op's self time, a GPU op's kernel and copy
  // time. Its counted time is what its FLOPs ran in (on CPU the counted ops' inclusive time).
  if (cpu) {
    column(t, "Self(ns)", Unit::kTime);
    column(t, "Inclusive(ns)", Unit::kTime);
  } else {
    column(t, "Total(ns)", Unit::kTime);
  }
  column(t, "Counted time(ns)", Unit::kTime);
  column(t, "Avg/instance(ns)", Unit::kTime);
  column(t, "Min/instance(ns)", Unit::kTime);
  column(t, "Max/instance(ns)", Unit::kTime);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes);
  column(t, "TFLOP/s", Unit::kFlopRate);
  column(t, "GB/s", Unit::kByteRate);
  column(t, "Modeled", Unit::kText);
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
  column(t, "Op", Unit::kText);
  column(t, "Direction", Unit::kText);
  column(t, "Seq", Unit::kText);
  column(t, "Module", Unit::kText);
  column(t, "Records", Unit::kCount);
  if (cpu) {
    column(t, "Self(ns)", Unit::kTime);
    column(t, "Inclusive(ns)", Unit::kTime);
  } else {
    column(t, "Total(ns)", Unit::kTime);
  }
  column(t, "Counted time(ns)", Unit::kTime);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes);
  column(t, "TFLOP/s", Unit::kFlopRate);
  column(t, "Params", Unit::kText);
  t.numeric[2] = true;  // Seq: a JSON number, printed as it is
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
  column(t, "Module", Unit::kText);
  column(t, "Fprop(ns)", Unit::kTime);
  column(t, "Bprop(ns)", Unit::kTime);
  column(t, "Total(ns)", Unit::kTime);
  column(t, "Fprop FLOPs", Unit::kFlops);
  column(t, "Bprop FLOPs", Unit::kFlops);
  column(t, "TFLOP/s", Unit::kFlopRate);
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

// CPU: the self time of the counted ops and of everything they call, that is the counted ops'
// inclusive time, measured in self time so that it is a part of the profile's op self time
// (counted ops never nest: assign_costs counts a call tree at its outermost modelled op).
int64_t cpu_time_under_counted_ops(const std::vector<ProfRecord>& records) {
  // under[i]: 1 when record i is or runs inside a counted op, 0 when not, -1 not known yet.
  std::vector<int8_t> under(records.size(), -1);
  std::vector<int32_t> path;
  int64_t time = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    // Up the parents to a counted op, a known record or the top; the guard stops a cycle of
    // parent links, which only a malformed input can hold.
    path.clear();
    int8_t found = 0;
    for (int32_t p = static_cast<int32_t>(i); p >= 0 && path.size() < 1000;) {
      if (under[p] >= 0) {
        found = under[p];
        break;
      }
      if (records[p].counted) {
        found = 1;
        break;
      }
      path.push_back(p);
      p = records[p].parent;
    }
    for (int32_t p : path) under[p] = found;
    if (records[i].counted) under[i] = 1;
    if (under[i] == 1) time += records[i].self_duration;
  }
  return time;
}

ReportTable summary_report(const ReadResult& data) {
  ReportTable t;
  t.title = "summary";
  column(t, "Metric", Unit::kText);
  column(t, "Value", Unit::kPerRow);
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0, total = 0, kernel_time = 0;
  int64_t tc_time = 0, counted_ns = 0, records = 0, timed_records = 0;
  int64_t inductor = 0, inductor_time = 0, inductor_unmodeled_time = 0, inductor_attributed = 0;
  int64_t graph_kernels = 0, graph_time = 0, graph_attributed = 0, compiled_call_kernels = 0;
  double flops = 0, bytes = 0, dense = 0;
  // GPU records' intervals by device: busy time is a device's own (streams overlap).
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const ProfRecord& r : data.records) {
    ++records;
    int64_t time = time_of(r, data.cpu_only);
    total += time;
    if (is_inductor_kernel(data.strings.get(r.name))) {
      ++inductor;
      inductor_time += time;
      if (!r.modeled) inductor_unmodeled_time += time;
      if (r.compiled) ++inductor_attributed;
    }
    if (r.compiled_call) ++compiled_call_kernels;
    if (r.graph_launched) {
      ++graph_kernels;
      graph_time += time;
      if (r.op != 0) ++graph_attributed;
    }
    if (r.kind == Kind::kKernel) {
      kernel_time += time;
      if (r.tc == 1) tc_time += time;
    }
    // Records above their device's peak or without a credible time are not counted: their cost
    // has no time to divide by.
    counted_ns += counted_time(r);
    if (r.counted) {
      flops += r.flops;
      bytes += r.bytes;
      dense += dense_flops(r);
    }
    // A record whose time is unknown has no place on the time line.
    if (r.bad_time) continue;
    ++timed_records;
    first = std::min(first, r.start);
    last = std::max(last, r.start + r.duration);
    if (!data.cpu_only) intervals[r.device].emplace_back(r.start, r.start + r.duration);
  }
  int64_t wall = timed_records ? last - first : 0;
  // Each device's busy time: the union of its activity intervals.
  std::vector<std::pair<int32_t, int64_t>> busy_by_device;
  std::vector<std::pair<int64_t, int64_t>> all_intervals;
  for (auto& [device, spans] : intervals) {
    busy_by_device.emplace_back(device, union_length(spans));
    if (intervals.size() > 1) all_intervals.insert(all_intervals.end(), spans.begin(), spans.end());
  }
  // GPU: the counted kernels and copies; CPU: the counted ops' call trees, in self time.
  int64_t covered = data.cpu_only ? cpu_time_under_counted_ops(data.records) : counted_ns;
  auto row = [&](std::string metric, std::string value, Unit unit) {
    t.rows.push_back({std::move(metric), std::move(value)});
    t.row_units.push_back(unit);
  };
  row("records", std::to_string(records), Unit::kCount);
  row("profile", data.cpu_only ? "CPU only (op records)" : "GPU", Unit::kText);
  row("wall time (ns)", std::to_string(wall), Unit::kTime);
  if (!data.cpu_only && busy_by_device.size() <= 1) {
    const int64_t busy = busy_by_device.empty() ? 0 : busy_by_device[0].second;
    row("GPU busy (ns)", std::to_string(busy), Unit::kTime);
    row("GPU busy %", pct(static_cast<double>(busy), static_cast<double>(wall)), Unit::kPercent);
  } else if (!data.cpu_only) {
    // Several GPUs: each one's busy and idle time over the profile's wall time, and totals that
    // say what they add up (the union of all devices' intervals would count two GPUs busy at
    // once as one).
    const size_t n = busy_by_device.size();
    int64_t sum = 0;
    for (const auto& [device, busy] : busy_by_device) sum += busy;
    row(fmt::format("GPU busy, sum over {} GPUs (ns)", n), std::to_string(sum), Unit::kTime);
    row(fmt::format("GPU busy %, mean over {} GPUs", n),
        pct(static_cast<double>(sum), static_cast<double>(wall) * static_cast<double>(n)),
        Unit::kPercent);
    row("time with any GPU busy (ns)", std::to_string(union_length(all_intervals)), Unit::kTime);
    for (const auto& [device, busy] : busy_by_device) {
      const std::string gpu = device >= 0 ? fmt::format("GPU {}", device) : "GPU ?";
      const int64_t idle = std::max<int64_t>(0, wall - busy);
      row(gpu + " busy (ns)", std::to_string(busy), Unit::kTime);
      row(gpu + " busy %", pct(static_cast<double>(busy), static_cast<double>(wall)),
          Unit::kPercent);
      row(gpu + " idle (ns)", std::to_string(idle), Unit::kTime);
      row(gpu + " idle %", pct(static_cast<double>(idle), static_cast<double>(wall)),
          Unit::kPercent);
    }
  }
  if (!data.cpu_only) {
    row("kernel time (ns)", std::to_string(kernel_time), Unit::kTime);
    row("Tensor Core kernel time %",
        pct(static_cast<double>(tc_time), static_cast<double>(kernel_time)), Unit::kPercent);
  } else {
    row("op self time (ns)", std::to_string(total), Unit::kTime);
  }
  row("time covered by a FLOP model %",
      pct(static_cast<double>(covered), static_cast<double>(total)), Unit::kPercent);
  row("counted time (ns)", std::to_string(counted_ns), Unit::kTime);
  row("FLOPs (FMA=2)", num(flops), Unit::kFlops);
  // The FLOPs are what the kernels ran; FlopCounterMode's count differs where a causal attention
  // kernel skipped its masked blocks (docs/ops.md "attention").
  if (dense != flops)
    row("FLOPs as FlopCounterMode counts them (causal attention dense)", num(dense), Unit::kFlops);
  row("bytes (ideal DRAM)", num(bytes), Unit::kBytes);
  if (counted_ns > 0) t.exact[{t.rows.size(), 1}] = tflops(flops, counted_ns);
  row("achieved TFLOP/s (over counted time)", rate(flops, counted_ns), Unit::kFlopRate);
  if (!data.devices.empty()) {
    row("records above device peak (out of totals)", std::to_string(data.above_peak), Unit::kCount);
  }
  if (data.bad_time > 0) {
    row("records with an impossible time (out of totals)", std::to_string(data.bad_time),
        Unit::kCount);
  }
  if (data.autotune_records > 0) {
    row("Triton autotuning records (left out)", std::to_string(data.autotune_records),
        Unit::kCount);
    if (data.autotune_gpu_time > 0) {
      row("Triton autotuning GPU time (left out, ns)", std::to_string(data.autotune_gpu_time),
          Unit::kTime);
    }
  }
  if (inductor > 0) {
    // torch.compile's kernels: how much of the time they hold, how many carry the ATen nodes
    // they compute (docs/compile.md) and how much of their time no model costs.
    row("Inductor kernels (torch.compile)", std::to_string(inductor), Unit::kCount);
    row("Inductor kernels attributed to their ATen nodes", std::to_string(inductor_attributed),
        Unit::kCount);
    row("Inductor kernels opaque (no compile metadata)",
        std::to_string(inductor - inductor_attributed), Unit::kCount);
    row("Inductor kernel time (ns)", std::to_string(inductor_time), Unit::kTime);
    row("Inductor kernel time %",
        pct(static_cast<double>(inductor_time), static_cast<double>(total)), Unit::kPercent);
    row("Inductor kernel time without a FLOP model %",
        pct(static_cast<double>(inductor_unmodeled_time), static_cast<double>(inductor_time)),
        Unit::kPercent);
  }
  if (compiled_call_kernels > 0) {
    // Kernels named for no mark, costed from the marks of the extern call they ran in.
    row("C++ wrapper extern-call kernels costed from the call's marks",
        std::to_string(compiled_call_kernels), Unit::kCount);
  }
  if (graph_kernels > 0) {
    // CUDA graph replays: how many replayed activities parse traced back to the op that
    // launched them at capture; the others have no op (docs/compile.md "CUDA graphs").
    row("CUDA graph activities (replayed)", std::to_string(graph_kernels), Unit::kCount);
    row("CUDA graph activities attributed to an op", std::to_string(graph_attributed),
        Unit::kCount);
    row("CUDA graph activities without an op", std::to_string(graph_kernels - graph_attributed),
        Unit::kCount);
    row("CUDA graph activity time (ns)", std::to_string(graph_time), Unit::kTime);
    row("CUDA graph activity time %",
        pct(static_cast<double>(graph_time), static_cast<double>(total)), Unit::kPercent);
  }
  for (const SummaryRow& it : iteration_summary_rows(data)) {
    if (!it.human.empty()) t.human[{t.rows.size(), 1}] = it.human;
    row(it.metric, it.value, it.unit);
  }
  if (!data.marks.empty()) {  // pyprof.mark("..."): listed by --report marks
    row("marks (--report marks)", std::to_string(data.marks.size()), Unit::kCount);
  }
  if (!data.torch_settings.empty()) {
    // What the program ran with (pyprof captures): the flags that decide the kernels.
    auto flag = [&](const char* key) {
      auto it = data.torch_settings.find(key);
      if (it == data.torch_settings.end()) return std::string("?");
      std::string v = it->second;
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    };
    row("torch settings",
        fmt::format("cudnn.benchmark {}; TF32: cuDNN {}, matmul {} (precision {}); "
                    "deterministic {}; torch {}",
                    flag("cudnn.benchmark"), flag("cudnn.allow_tf32"),
                    flag("cuda.matmul.allow_tf32"), flag("float32_matmul_precision"),
                    flag("deterministic_algorithms"), flag("torch")),
        Unit::kText);
    // pyprof.init() after torch.compile had compiled graphs (docs/compile.md): their kernels
    // are not costed, and the summary says why and what to do.
    if (const std::string before = flag("compiled_before_init"); before != "?" && before != "0") {
      row("torch.compile graphs compiled before pyprof.init()",
          before +
              " (their Inductor kernels are not costed: on the CPU not recorded, their time "
              "is CompiledFunction's; call pyprof.init() before the first compiled call, or "
              "pyprof.init(recompile=True))",
          Unit::kText);
    }
  }
  // The top ops by their time column (CPU: self time; GPU: kernel and copy time).
  ReportTable ops = op_report(data);
  for (size_t i = 0; i < ops.rows.size() && i < 10; ++i) {
    const std::vector<std::string>& op = ops.rows[i];
    double time = std::stod(op[4]);
    std::string share = pct(time, static_cast<double>(total));
    t.human[{t.rows.size(), 1}] =
        fmt::format("{} {} {} ({}%)", op[0], op[1], format_quantity(time, Unit::kTime), share);
    row(fmt::format("top op {}", i + 1),
        fmt::format("{} {} {} ns ({}%)", op[0], op[1], op[4], share), Unit::kText);
  }
  return t;
}

ReportTable tc_report(const ReadResult& data) {
  ReportTable t;
  t.title = "Tensor Core use of eligible ops";
  column(t, "Op", Unit::kText);
  column(t, "Direction", Unit::kText);
  column(t, "Eligible kernels", Unit::kCount);
  column(t, "Eligible time(ns)", Unit::kTime);
  column(t, "TC time(ns)", Unit::kTime);
  column(t, "Non-TC time(ns)", Unit::kTime);
  column(t, "Using TC %", Unit::kPercent);
  column(t, "Verdict", Unit::kText);
  std::map<std::pair<uint32_t, int>, Agg> groups;
  for (const ProfRecord& r : data.records) {
    if (r.kind != Kind::kKernel || !r.tc_eligible) continue;
    groups[{r.op, static_cast<int>(r.dir)}].add(r, r.duration);
  }
  for (const auto& [key, a] : sorted_by_time(groups)) {
    int64_t non_tc = a.total - a.tc_time;
    Row(t)
        .text(std::string(data.strings.get(key.first)))
        .text(dir_name(static_cast<Dir>(key.second)))
        .integer(a.count)
        .integer(a.total)
        .integer(a.tc_time)
        .integer(non_tc)
        .percent(static_cast<double>(a.tc_time), static_cast<double>(a.total))
        .text(a.tc_time == a.total ? "using TC"
              : a.tc_time == 0     ? "eligible, not using TC"
                                   : "partly")
        .end();
  }
  return t;
}

// Time by op family (docs/ops.md): a modelled op's family; "(no model)" for the records of ops
// without a model; "(unattributed)" for records outside every op.
ReportTable family_report(const ReadResult& data) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "op families by self time" : "op families by total time";
  column(t, "Family", Unit::kText);
  column(t, "Records", Unit::kCount);
  column(t, "Time(ns)", Unit::kTime);
  column(t, "% of time", Unit::kPercent);
  column(t, "Counted time(ns)", Unit::kTime);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes);
  column(t, "TFLOP/s", Unit::kFlopRate);
  std::map<std::string, Agg> groups;
  int64_t total = 0;
  for (const ProfRecord& r : data.records) {
    int64_t time = time_of(r, cpu);
    total += time;
    // String id 0 is the empty string: no op, no family.
    std::string family = r.op == 0       ? "(unattributed)"
                         : !r.modeled    ? "(no model)"
                         : r.family == 0 ? "(no family)"
                                         : std::string(data.strings.get(r.family));
    groups[family].add(r, time);
  }
  for (const auto& [family, a] : sorted_by_time(groups)) {
    Row(t)
        .text(family)
        .integer(a.count)
        .integer(a.total)
        .percent(static_cast<double>(a.total), static_cast<double>(total))
        .integer(a.counted_ns)
        .amount(a.flops)
        .amount(a.bytes)
        .flop_rate(a.flops, a.counted_ns)
        .end();
  }
  return t;
}

// torch.optim's RecordFunction ranges, as user ranges name them ("Optimizer.step#SGD.step";
// pyprof's capture prefixes "pyprof:").
bool names_optimizer_range(std::string_view layer) {
  return layer.find("Optimizer.step#") != std::string_view::npos ||
         layer.find("Optimizer.zero_grad#") != std::string_view::npos;
}

}  // namespace

Phase PhaseOf::operator()(const ProfRecord& r) {
  auto [it, added] = optimizer_layer_.try_emplace(r.layer, false);
  if (added) it->second = names_optimizer_range(strings_.get(r.layer));
  bool optimizer = it->second || (r.modeled && strings_.get(r.family) == "optim");
  return optimizer              ? Phase::kOptimizer
         : r.dir == Dir::kBprop ? Phase::kBackward
         : r.dir == Dir::kFprop ? Phase::kForward
                                : Phase::kOther;
}

namespace {

// Time by training phase (PhaseOf), always the four rows in this order: forward, backward,
// optimizer, other.
ReportTable phase_report(const ReadResult& data) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = "time by phase";
  column(t, "Phase", Unit::kText);
  column(t, "Records", Unit::kCount);
  column(t, "Time(ns)", Unit::kTime);
  column(t, "% of time", Unit::kPercent);
  column(t, "FLOPs(FMA=2)", Unit::kFlops);
  column(t, "TFLOP/s", Unit::kFlopRate);
  enum { kForward, kBackward, kOptimizer, kOther };
  Agg phases[4];
  PhaseOf phase_of(data.strings);
  int64_t total = 0;
  for (const ProfRecord& r : data.records) {
    int phase = static_cast<int>(phase_of(r));
    int64_t time = time_of(r, cpu);
    total += time;
    phases[phase].add(r, time);
  }
  static const char* const kNames[] = {"forward", "backward", "optimizer", "other"};
  for (int phase : {kForward, kBackward, kOptimizer, kOther}) {
    const Agg& a = phases[phase];
    Row(t)
        .text(kNames[phase])
        .integer(a.count)
        .integer(a.total)
        .percent(static_cast<double>(a.total), static_cast<double>(total))
        .amount(a.flops)
        .flop_rate(a.flops, a.counted_ns)
        .end();
  }
  return t;
}

}  // namespace

bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error) {
  const int depth = options.depth;
  if (name == "kernel") {
    out.push_back(kernel_report(data, options.top));
  } else if (name == "op") {
    out.push_back(op_report(data));
  } else if (name == "instance") {
    out.push_back(instance_report(data, options.top));
  } else if (name == "module") {
    out.push_back(module_report(data, depth));
  } else if (name == "summary") {
    out.push_back(summary_report(data));
  } else if (name == "tc") {
    out.push_back(tc_report(data));
  } else if (name == "family") {
    out.push_back(family_report(data));
  } else if (name == "phase") {
    out.push_back(phase_report(data));
  } else if (name == "peaks") {
    out.push_back(peaks_report(data, options.peaks));
  } else if (name == "iteration") {
    for (ReportTable& t : iteration_report(data)) out.push_back(std::move(t));
  } else if (name == "roofline") {
    for (ReportTable& t : roofline_report(data, options.peaks, options.top))
      out.push_back(std::move(t));
  } else if (name == "advice") {
    out.push_back(advice_report(data));
  } else if (name == "timemodel") {
    for (ReportTable& t : timemodel_report(data, options.top)) out.push_back(std::move(t));
  } else if (name == "compiled") {
    out.push_back(compiled_report(data, options.top));
  } else if (name == "marks") {
    out.push_back(marks_report(data));
  } else if (name == "ranks") {  // one rank; several come through prof_main's ranks path
    for (ReportTable& t : ranks_report({summarize_rank(data)})) out.push_back(std::move(t));
  } else {
    error = "unknown report '" + name + "' (reports: " + report_list_text() + ")";
    return false;
  }
  return true;
}

std::string report_list_text() {
  std::string out;
  for (const std::string& name : report_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

namespace {

// A header (or the summary's metric) for a column of `unit` in human units: the raw number's
// unit goes, each cell names its own ("Total(ns)" -> "Total", "TFLOP/s" -> "FLOP/s").
std::string human_header(std::string header, Unit unit) {
  auto replace = [&](std::string_view from, std::string_view to) {
    size_t at = header.find(from);
    if (at != std::string::npos) header.replace(at, from.size(), to);
  };
  if (unit == Unit::kTime) {
    replace("(ns)", "");
    while (!header.empty() && header.back() == ' ') header.pop_back();
  } else if (unit == Unit::kFlopRate) {
    replace("TFLOP/s", "FLOP/s");
  } else if (unit == Unit::kByteRate) {
    replace("GB/s", "Bytes/s");
  } else if (unit == Unit::kBytesPerSecond) {
    replace("B/s", "bandwidth");
  }
  return header;
}

// The unit of cell (row, column); kText where the table says none.
Unit unit_of(const ReportTable& t, size_t row, size_t column) {
  Unit unit = column < t.units.size() ? t.units[column] : Unit::kText;
  if (unit == Unit::kPerRow) unit = row < t.row_units.size() ? t.row_units[row] : Unit::kText;
  return unit;
}

// Cell (row, column) in human units: its quantity through format_quantity(), text as it is.
std::string human_cell(const ReportTable& t, size_t row, size_t column) {
  auto text = t.human.find({row, column});
  if (text != t.human.end()) return text->second;
  const std::string& raw = t.rows[row][column];
  Unit unit = unit_of(t, row, column);
  if (unit == Unit::kText || unit == Unit::kPercent || unit == Unit::kPerRow) return raw;
  auto exact = t.exact.find({row, column});
  if (exact != t.exact.end()) return format_quantity(exact->second, unit);
  char* end = nullptr;
  double value = std::strtod(raw.c_str(), &end);
  if (raw.empty() || end != raw.c_str() + raw.size()) return raw;  // "na", "-"
  return format_quantity(value, unit);
}

}  // namespace

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
    // Text: columns as wide as their widest cell, cells over kMaxTextCellWidth elided. In human
    // units a row's metric (the summary's first column) loses its unit as a header does. Two
    // passes over the rows, the first for the widths: a table of a million op instances is not
    // held a second time in its printed form.
    const bool human = format == ReportFormat::kText && !t.units.empty();
    std::vector<std::string> header_cells = t.headers;
    if (human) {
      for (size_t i = 0; i < t.headers.size(); ++i) {
        header_cells[i] = human_header(t.headers[i], i < t.units.size() ? t.units[i] : Unit::kText);
      }
    }
    const size_t per_row_column = static_cast<size_t>(
        std::find(t.units.begin(), t.units.end(), Unit::kPerRow) - t.units.begin());
    auto printed = [&](size_t r, size_t i) {
      if (human && i == 0 && per_row_column < t.units.size()) {
        return elide_cell(human_header(t.rows[r][i], unit_of(t, r, per_row_column)));
      }
      return elide_cell(human ? human_cell(t, r, i) : t.rows[r][i]);
    };
    std::vector<size_t> w(t.headers.size());
    for (size_t i = 0; i < header_cells.size(); ++i) w[i] = text_width(header_cells[i]);
    for (size_t r = 0; r < t.rows.size(); ++r) {
      for (size_t i = 0; i < t.rows[r].size(); ++i) {
        w[i] = std::max(w[i], text_width(printed(r, i)));
      }
    }
    out.write(t.title + "\n");
    auto write_row = [&](size_t cells, auto&& cell) {
      line.clear();
      for (size_t i = 0; i < cells; ++i) {
        const std::string value = cell(i);
        const size_t padding = w[i] - text_width(value);
        if (t.numeric[i]) line.append(padding, ' ');
        line += value;
        if (!t.numeric[i]) line.append(padding, ' ');
        if (i + 1 < cells) line += "  ";
      }
      line += '\n';
      return out.write(line);
    };
    if (!write_row(header_cells.size(), [&](size_t i) { return header_cells[i]; })) return;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      if (!write_row(t.rows[r].size(), [&](size_t i) { return printed(r, i); })) return;
    }
    out.write("\n");
  }
}

}  // namespace pyprof::prof
