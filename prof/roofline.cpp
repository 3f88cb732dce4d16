#include "prof/roofline.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "models/op_model.h"

namespace pyprof::prof {

std::optional<Mode> math_mode(std::string_view dtype_name, int tc, bool cpu) {
  std::string dtype = models::canonical_dtype(dtype_name);
  bool tensor = !cpu && tc == 1;
  if (dtype == "float64") return tensor ? Mode::kFp64Tc : Mode::kFp64;
  if (dtype == "float32") return tensor ? Mode::kTf32Tc : Mode::kFp32;
  if (dtype == "float16") return tensor ? Mode::kFp16Tc : Mode::kFp16;
  if (dtype == "bfloat16") return tensor ? Mode::kBf16Tc : Mode::kBf16;
  if (dtype.starts_with("float8")) return Mode::kFp8Tc;
  if (dtype.starts_with("float4")) return Mode::kFp4Tc;
  if (dtype == "int8") return Mode::kInt8Tc;
  return std::nullopt;
}

double mode_peak(const PeakEntry& entry, Mode mode) {
  double peak = entry.peak(mode);
  if (peak > 0) return peak;
  if (mode == Mode::kFp16 || mode == Mode::kBf16) return entry.peak(Mode::kFp32);
  if (mode == Mode::kFp64Tc) return entry.peak(Mode::kFp64);
  return 0;
}

RoofPoint place_under_roof(double flops, double bytes, double seconds, double peak,
                           double bandwidth) {
  RoofPoint p;
  if (!(seconds > 0) || (flops <= 0 && bytes <= 0)) return p;
  if ((flops > 0 && !(peak > 0)) || (bytes > 0 && !(bandwidth > 0))) return p;
  p.has_roof = true;
  // achieved / min(peak, AI x BW) = max(achieved FLOP/s / peak, achieved B/s / BW): the same
  // number, defined also where there are no FLOPs (a copy: AI 0) or no bytes (AI infinite).
  double compute_share = flops > 0 ? flops / seconds / peak : 0;
  double memory_share = bytes > 0 ? bytes / seconds / bandwidth : 0;
  p.percent = 100 * std::max(compute_share, memory_share);
  if (bytes <= 0) {
    p.roof = peak;
    p.memory_bound = false;
  } else {
    p.roof = flops > 0 ? std::min(peak, flops / bytes * bandwidth) : 0;
    p.memory_bound = flops <= 0 || flops / bytes < peak / bandwidth;
  }
  return p;
}

namespace {

const char* dir_name(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

// Rates and peaks keep 10 significant digits: the table's values come out as written.
std::string number(double v) { return fmt::format("{:.10g}", v); }
std::string count(double v) { return fmt::format("{:.0f}", v); }
std::string text_or_dash(std::string_view s) { return s.empty() ? "-" : std::string(s); }

ReportTable make_peaks_table() {
  return {
      "device peaks",
      {"Device", "Name", "Kind", "Source", "Mode", "Peak FLOP/s", "Memory B/s", "Ridge FLOP/Byte"},
      {false, false, false, false, false, true, true, true},
      {},
      {Unit::kText, Unit::kText, Unit::kText, Unit::kText, Unit::kText, Unit::kFlopsPerSecond,
       Unit::kBytesPerSecond, Unit::kRatio}};
}

void add_entry_rows(ReportTable& t, const DeviceRoofs& d, const PeakEntry& e) {
  std::string bandwidth = e.memory_bandwidth > 0 ? number(e.memory_bandwidth) : "na";
  bool any = false;
  for (size_t m = 0; m < kModeCount; ++m) {
    double peak = e.flops[m];
    if (!(peak > 0)) continue;
    any = true;
    t.rows.push_back({d.device, d.name, e.kind, e.describe_source(static_cast<Mode>(m)),
                      mode_name(static_cast<Mode>(m)), number(peak), bandwidth,
                      e.memory_bandwidth > 0 ? number(peak / e.memory_bandwidth) : "na"});
  }
  if (!any) {
    t.rows.push_back(
        {d.device, d.name, e.kind, e.describe_source(std::nullopt), "-", "na", bandwidth, "na"});
  }
}

// One point of the roofline being summed up: an op instance or an op type.
struct Point {
  const ProfRecord* first = nullptr;  // names the row
  std::string device;
  int64_t time = 0;
  double flops = 0, bytes = 0;
  std::unordered_set<int64_t> instances;
  // Counted time per math mode (index kModeCount: no mode) and per dtype string id.
  std::array<int64_t, kModeCount + 1> mode_time{};
  std::map<uint32_t, int64_t> dtype_time;

  void add(const ProfRecord& r, int64_t instance, std::optional<Mode> mode, std::string dev) {
    if (!first) {
      first = &r;
      device = std::move(dev);
    }
    int64_t t = counted_time(r);
    time += t;
    flops += r.flops;
    bytes += r.bytes;
    instances.insert(instance);
    mode_time[mode ? static_cast<size_t>(*mode) : kModeCount] += t;
    dtype_time[r.dtype] += t;
  }
  // The mode holding most of the counted time (the first in mode order on a tie).
  std::optional<Mode> mode() const {
    size_t best = 0;
    for (size_t i = 1; i <= kModeCount; ++i)
      if (mode_time[i] > mode_time[best]) best = i;
    if (best == kModeCount) return std::nullopt;
    return static_cast<Mode>(best);
  }
  uint32_t dtype() const {
    uint32_t best = 0;
    int64_t most = -1;
    for (const auto& [id, t] : dtype_time) {
      if (t > most) {
        most = t;
        best = id;
      }
    }
    return best;
  }
};

std::vector<std::string> point_row(const Point& p, const ReadResult& data, bool instance_row,
                                   const std::map<std::string, const DeviceRoofs*>& roofs) {
  const ProfRecord& r = *p.first;
  std::optional<Mode> mode = p.mode();
  double seconds = static_cast<double>(p.time) * 1e-9;
  double peak = 0, bandwidth = 0;
  auto it = roofs.find(p.device);
  if (it != roofs.end() && it->second->roof) {
    const PeakEntry& e = *it->second->roof;
    if (mode) peak = mode_peak(e, *mode);
    bandwidth = e.memory_bandwidth;
  }
  RoofPoint point = place_under_roof(p.flops, p.bytes, seconds, peak, bandwidth);
  return {std::string(data.strings.get(r.op)),
          dir_name(r.dir),
          instance_row ? text_or_dash(data.strings.get(r.module)) : "-",
          instance_row ? text_or_dash(data.strings.get(r.shapes)) : "-",
          text_or_dash(data.strings.get(p.dtype())),
          mode ? mode_name(*mode) : "-",
          p.device,
          std::to_string(p.instances.size()),
          std::to_string(p.time),
          count(p.flops),
          count(p.bytes),
          p.bytes > 0 ? number(p.flops / p.bytes) : "na",
          number(p.flops / seconds),
          point.has_roof ? number(point.roof) : "na",
          point.has_roof ? fmt::format("{:.2f}", point.percent) : "na",
          point.has_roof ? (point.memory_bound ? "memory" : "compute") : "na"};
}

ReportTable make_roofline_table(const char* title, const char* id) {
  ReportTable t = {
      title,
      {"Op", "Direction", "Module", "Shapes", "DType", "Mode", "Device", "Instances", "Time(ns)",
       "FLOPs(FMA=2)", "Bytes(ideal DRAM)", "FLOP/Byte", "FLOP/s", "Roof FLOP/s", "% of roof",
       "Bound"},
      {false, false, false, false, false, false, false, true, true, true, true, true, true, true,
       true, false},
      {},
      {Unit::kText, Unit::kText, Unit::kText, Unit::kText, Unit::kText, Unit::kText, Unit::kText,
       Unit::kCount, Unit::kTime, Unit::kFlops, Unit::kBytes, Unit::kRatio, Unit::kFlopsPerSecond,
       Unit::kFlopsPerSecond, Unit::kPercent, Unit::kText}};
  t.id = id;
  keep_columns(
      t, {Keep::kAlways, Keep::kAlways, Keep::kMore, Keep::kDetail, Keep::kMain, Keep::kMain,
          Keep::kDetail, Keep::kDetail, Keep::kMain, Keep::kDetail, Keep::kDetail, Keep::kMain,
          Keep::kAlways, Keep::kMore, Keep::kAlways, Keep::kMain});
  return t;
}

// Points in order of first appearance, then by time, longest first.
template <typename Key, typename Map>
std::vector<const Point*> by_time(const std::vector<Key>& order, const Map& points) {
  std::vector<const Point*> out;
  for (const Key& k : order) out.push_back(&points.at(k));
  std::stable_sort(out.begin(), out.end(),
                   [](const Point* a, const Point* b) { return a->time > b->time; });
  return out;
}

}  // namespace

ReportTable peaks_report(const ReadResult& data, const PeaksFile* file) {
  ReportTable t = make_peaks_table();
  keep_columns(t, {Keep::kAlways, Keep::kMain, Keep::kAlways, Keep::kMore, Keep::kAlways,
                   Keep::kAlways, Keep::kMain, Keep::kMore});
  std::vector<DeviceRoofs> devices = resolve_device_roofs(data, file);
  for (const DeviceRoofs& d : devices) {
    if (d.roof) add_entry_rows(t, d, *d.roof);
    if (d.measured) add_entry_rows(t, d, *d.measured);
    if (!d.roof && !d.measured) {
      t.rows.push_back({d.device, d.name.empty() ? "-" : d.name, "-", d.reason, "-", "na",
                        d.header_bandwidth > 0 ? number(d.header_bandwidth) : "na", "na"});
    }
  }
  if (devices.empty()) {
    t.rows.push_back({"-", "-", "-",
                      data.records.empty()
                          ? "the profile is empty: no records and no GPU in its header"
                          : "the profile names no GPU (no `devices` in the net.dict header) and "
                            "no kernel ran on one",
                      "-", "na", "na", "na"});
  }
  return t;
}

std::vector<ReportTable> roofline_report(const ReadResult& data, const PeaksFile* file,
                                         size_t top) {
  std::vector<DeviceRoofs> devices = resolve_device_roofs(data, file);
  std::map<std::string, const DeviceRoofs*> roofs;
  for (const DeviceRoofs& d : devices) roofs[d.device] = &d;

  // Op types are keyed by (op, direction, device): devices have different roofs.
  struct TypeKey {
    uint32_t op;
    Dir dir;
    std::string device;
    bool operator==(const TypeKey&) const = default;
  };
  struct TypeKeyHash {
    size_t operator()(const TypeKey& k) const {
      return std::hash<uint64_t>()((uint64_t{k.op} << 2) | static_cast<uint64_t>(k.dir)) ^
             (std::hash<std::string>()(k.device) << 1);
    }
  };
  std::unordered_map<int64_t, Point> instances;
  std::vector<int64_t> instance_order;
  std::unordered_map<TypeKey, Point, TypeKeyHash> types;
  std::vector<TypeKey> type_order;
  for (size_t i = 0; i < data.records.size(); ++i) {
    const ProfRecord& r = data.records[i];
    // Copies are not ops' arithmetic (host copies are bounded by the bus, not DRAM): the
    // roofline is the ops' kernels (GPU) or the counted ops (CPU).
    if (!r.counted || r.kind == Kind::kMemcpy || r.kind == Kind::kMemset) continue;
    std::string device = data.cpu_only ? "cpu" : std::to_string(r.device);
    std::optional<Mode> mode =
        math_mode(data.strings.get(r.dtype), r.tc, data.cpu_only || r.kind == Kind::kOp);
    // A record outside any op instance is an instance of its own.
    int64_t instance = r.instance != 0 ? r.instance : -static_cast<int64_t>(i) - 1;
    auto [ii, new_instance] = instances.try_emplace(instance);
    if (new_instance) instance_order.push_back(instance);
    ii->second.add(r, instance, mode, device);
    TypeKey key{r.op, r.dir, device};
    auto [ti, new_type] = types.try_emplace(key);
    if (new_type) type_order.push_back(key);
    ti->second.add(r, instance, mode, device);
  }
  auto wanted = [](const Point& p) { return p.time > 0 && (p.flops > 0 || p.bytes > 0); };
  std::vector<ReportTable> out;
  out.push_back(make_roofline_table("roofline: op types", "op_types"));
  for (const Point* p : by_time(type_order, types)) {
    if (wanted(*p)) out.back().rows.push_back(point_row(*p, data, false, roofs));
  }
  out.push_back(make_roofline_table("roofline: op instances", "op_instances"));
  for (const Point* p : by_time(instance_order, instances)) {
    if (top > 0 && out.back().rows.size() >= top) break;
    if (wanted(*p)) out.back().rows.push_back(point_row(*p, data, true, roofs));
  }
  return out;
}

}  // namespace pyprof::prof
