// DLProf-style reports over prof's records: kernel, op (per op type), instance (per op
// instance), module (rolled up the module tree), summary, tc (Tensor Core use of eligible ops),
// family (time by op family), phase (forward, backward, optimizer, other), iteration (per step,
// prof/iterations.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/output_file.h"
#include "prof/records.h"

namespace pyprof::prof {

// kText: human units (format_quantity); kRawText: the raw numbers of CSV and JSON, aligned.
enum class ReportFormat { kText, kRawText, kCsv, kJson };

// What a report cell holds. Cells are raw text (integers of ns, FLOPs, bytes; TFLOP/s and GB/s
// with fixed decimals), as CSV and JSON print them; text reports print a quantity in human units.
enum class Unit : uint8_t {
  kText,            // not a quantity: printed as it is
  kCount,           // a count: thousands separators
  kTime,            // ns
  kFlops,           // FLOPs
  kBytes,           // bytes
  kFlopRate,        // the raw cell is in TFLOP/s
  kByteRate,        // the raw cell is in GB/s
  kFlopsPerSecond,  // the raw cell is in FLOP/s (peaks, roofline)
  kBytesPerSecond,  // the raw cell is in B/s (peaks, roofline)
  kRatio,           // a plain ratio (FLOP/Byte): 3 significant digits
  kPercent,         // printed as it is
  kPerRow,          // the row's unit, ReportTable::row_units (the summary's Value column)
};

// `value` in `unit` for a person: 3 significant digits with a decimal SI prefix ("845 ns",
// "12.3 µs", "17.3 MFLOP", "1.20 MB", "850 GB/s"), values below 1000 of the base unit as
// integers, counts with thousands separators. kFlopRate takes TFLOP/s and kByteRate GB/s (the
// raw cells' units). NaN: "na".
std::string format_quantity(double value, Unit unit);
// A rate's raw text (CSV, JSON, --raw): `decimals` decimals, or 3 significant digits below 0.1,
// so that a CPU's rate (0.000638 TFLOP/s) is not rounded away to 0.000 or 0.001.
std::string raw_rate_text(double value, int decimals);

// A report's rows before rendering.
struct ReportTable {
  std::string title;
  std::vector<std::string> headers;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
  // The members below have initializers, so that a table written {title, headers, numeric,
  // rows} still compiles without -Wmissing-field-initializers.
  // Per column, what its cells hold; empty: every cell printed as it is, in every format.
  std::vector<Unit> units = {};
  // Per row, the unit of its Unit::kPerRow cell (the summary: one metric per row).
  std::vector<Unit> row_units = {};
  // The exact value of a cell whose raw text is rounded (rates), keyed (row, column), so that
  // human units keep 3 significant digits; other cells' values are read from their text.
  std::map<std::pair<size_t, size_t>, double> exact = {};
  // A cell's text in human units where it is no single quantity (the summary's top ops).
  std::map<std::pair<size_t, size_t>, std::string> human = {};
};

// Appends a column to `t`: its header, what its cells hold, and whether JSON writes them as
// numbers (every unit but kText and kPerRow).
void column(ReportTable& t, std::string header, Unit unit);

struct PeaksFile;  // prof/device_peaks.h

// What reports read beside the records.
struct ReportOptions {
  int depth = 0;                     // module report depth (0 = full paths)
  const PeaksFile* peaks = nullptr;  // peaks, roofline: --peaks FILE entries (null: none)
  // instance, kernel, roofline's op instances: only the `top` rows with the most time (0: all).
  // A profile of a million kernels has as many op instances: a page or a reader wants the top.
  size_t top = 0;
};

// A kernel torch.compile's Inductor generated (docs/compile.md): its C++ kernels' RecordFunction
// ("graph_3_cpp_fused_add_mul_0") or a Triton kernel ("triton_poi_fused_add_0", "triton_red_...").
bool is_inductor_kernel(std::string_view name);

// The time a record adds to a report's time columns: a GPU record's duration (kernel or copy);
// a CPU op's self time, so that the ops' times add up to the profile.
inline int64_t report_time(const ProfRecord& r, bool cpu_only) {
  return cpu_only ? r.self_duration : r.duration;
}

// The training phase of a record, the phase report's rule: optimizer (inside torch.optim's step
// or zero_grad ranges, or an op of the optim family), else backward (bprop), forward (fprop),
// other (records outside ops). Shared by the phase and iteration reports.
enum class Phase : uint8_t { kForward, kBackward, kOptimizer, kOther };
class PhaseOf {
 public:
  explicit PhaseOf(const Strings& strings) : strings_(strings) {}
  Phase operator()(const ProfRecord& r);

 private:
  const Strings& strings_;
  std::unordered_map<uint32_t, bool> optimizer_layer_;  // per layer string: names torch.optim's
};

// A --formats name ("text", "csv", "json"): its ReportFormat, text in raw numbers with `raw`.
// False for any other name.
bool report_format_of(const std::string& name, bool raw, ReportFormat& out);

// "a,b,,c" -> {"a", "b", "c"}: the comma-separated lists of --report, --formats, --columns.
std::vector<std::string> split_list(const std::string& s);

// The report names prof knows.
const std::vector<std::string>& report_names();
// The report names, comma-separated, for messages.
std::string report_list_text();
// Builds report `name`; false with `error` for an unknown name.
bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error);
// The same with only a module report depth (0 = full paths).
inline bool build_report(const std::string& name, const ReadResult& data, int depth,
                         std::vector<ReportTable>& out, std::string& error) {
  return build_report(name, data, ReportOptions{depth, nullptr}, out, error);
}
// Writes `tables`; kText prints quantities in human units (the raw numbers' unit suffixes,
// "(ns)", dropped from the headers), kRawText as CSV holds them. Text cells wider than
// kMaxTextCellWidth are elided (prof/table.h). A failed write stops it early; out.close() says why.
void write_report(OutputFile& out, const std::vector<ReportTable>& tables, ReportFormat format);

}  // namespace pyprof::prof
