// The builders of prof/reports.cpp's registry that live in op_reports.cpp (kernel, compiled, op,
// instance, module) and profile_reports.cpp (summary, unmodelled, tc, family, phase), and the
// helpers they share: a row's cells, the aggregate of a group of records. Internal to prof's
// reports.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof::report_parts {

// The time a record adds to a report's time columns: a GPU record's duration (kernel or copy);
// a CPU op's self time, so that the ops' times add up to the profile.
inline int64_t time_of(const ProfRecord& r, bool cpu_only) { return report_time(r, cpu_only); }

inline const char* dir_name(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

inline std::string num(double v) { return fmt::format("{:.0f}", v); }
// FLOPs per ns / 1e3: TFLOP/s; bytes per ns: GB/s.
inline double tflops(double flops, int64_t ns) { return flops / static_cast<double>(ns) / 1e3; }
inline double gbps(double bytes, int64_t ns) { return bytes / static_cast<double>(ns); }
inline std::string rate(double flops, int64_t ns) {
  return ns > 0 ? raw_rate_text(tflops(flops, ns), 3) : "na";
}
inline std::string pct(double part, double whole) {
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

ReportTable kernel_report(const ReadResult& data, size_t top);
ReportTable compiled_report(const ReadResult& data, size_t top);
ReportTable op_report(const ReadResult& data);
ReportTable instance_report(const ReadResult& data, size_t top);
ReportTable module_report(const ReadResult& data, int depth);
ReportTable summary_report(const ReadResult& data);
std::vector<ReportTable> unmodelled_report(const ReadResult& data);
ReportTable tc_report(const ReadResult& data);
ReportTable family_report(const ReadResult& data);
ReportTable phase_report(const ReadResult& data);

}  // namespace pyprof::prof::report_parts
