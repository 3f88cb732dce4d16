// DLProf-style reports over prof's records, one registry of them (report_registry(): each
// report's id, its tables' ids, the options it reads, its builder) and their text, CSV and JSON
// renderings. The builders live beside the facts they report: op_reports.cpp (kernel, compiled,
// op, instance, module), profile_reports.cpp (summary, unmodelled, tc, family, phase),
// iterations.cpp, roofline.cpp, advice.cpp, time_model.cpp, marks.cpp, ranks.cpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
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
// JSON names each column's unit (unit_name()).
enum class Unit : uint8_t {
  kText,            // not a quantity: printed as it is
  kCount,           // a count: thousands separators
  kId,              // an integer identifier (step, rank, seq): printed as it is, a JSON number
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

// The unit's name in report JSON, one stable vocabulary (docs/prof.md §3): "text", "count",
// "id", "ns", "FLOPs", "bytes", "TFLOP/s", "GB/s", "FLOP/s", "B/s", "ratio", "%", "per-row".
std::string_view unit_name(Unit unit);

// How readily a text report too wide for its width leaves a column out (write_report): the
// kDetail columns first, right to left, then kMore, then kMain; kAlways never.
enum class Keep : uint8_t { kAlways, kMain, kMore, kDetail };

// `value` in `unit` for a person: 3 significant digits with a decimal SI prefix ("845 ns",
// "12.3 µs", "17.3 MFLOP", "1.20 MB", "850 GB/s"), values below 1000 of the base unit as
// integers, counts with thousands separators. kFlopRate takes TFLOP/s and kByteRate GB/s (the
// raw cells' units). NaN: "na". pyprof/_units.py is the same function in Python.
std::string format_quantity(double value, Unit unit);
// A rate's raw text (CSV, JSON, --raw): `decimals` decimals, or 3 significant digits below 0.1,
// so that a CPU's rate (0.000638 TFLOP/s) is not rounded away to 0.000 or 0.001.
std::string raw_rate_text(double value, int decimals);

// A report's rows before rendering.
struct ReportTable {
  std::string title;
  std::vector<std::string> headers;
  std::vector<bool> numeric;  // per column: right-aligned in text
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
  // Per column, how readily a narrow text report leaves it out (Keep); a column past the end:
  // kMore, the first column kAlways.
  std::vector<Keep> keep = {};
  // The report's id ("iteration", report_registry()) and this table's id within it
  // ("steady_state"): identifiers for programs, where the title is for people. build_report()
  // sets `report`, and `id` where a one-table report's builder left it empty.
  std::string report = {};
  std::string id = {};
};

// Appends a column to `t`: its header, what its cells hold, and how readily a narrow text report
// leaves it out. JSON writes its cells as numbers for every unit but kText and kPerRow (per
// row: by the row's unit).
void column(ReportTable& t, std::string header, Unit unit, Keep keep = Keep::kMore);
// Sets the Keep of each column of `t` in order (tables written as aggregates).
void keep_columns(ReportTable& t, std::initializer_list<Keep> keep);

struct PeaksFile;  // prof/device_peaks.h

// What reports read beside the records.
struct ReportOptions {
  int depth = 0;                     // module report depth (0 = full paths)
  const PeaksFile* peaks = nullptr;  // peaks, roofline: --peaks FILE entries (null: none)
  // instance, kernel, roofline's op instances: only the `top` rows with the most time (0: all).
  // A profile of a million kernels has as many op instances: a page or a reader wants the top.
  size_t top = 0;
};

// One report prof makes. Adding a report: its builder, one entry in report_registry()
// (reports.cpp), a row in docs/prof.md §3's table; tests/test_docs_match_code.py and
// prof/reports_test.cpp check the rest (ids, tables, docs).
struct ReportSpec {
  std::string_view id;     // --report NAME, and `report` in its JSON
  std::string_view about;  // one line: what its rows are
  // Its tables' ids, in the order it writes them (`table` in its JSON).
  std::vector<std::string_view> tables;
  // The options it reads beside the records ("--top", "--depth", "--peaks").
  std::vector<std::string_view> options;
  // True for a report of one profile (`--report all`, the HTML page, a Parquet dataset's per
  // rank reports); false for ranks, which compares several.
  bool one_profile = true;
  std::vector<ReportTable> (*build)(const ReadResult& data, const ReportOptions& options) = nullptr;
  // The ids of the tables build_report() leaves out when they have no rows (`unmodelled`: a
  // fully modelled profile's `--report all` stays as it was; `memory`: a profile without memory
  // lines has none).
  std::vector<std::string_view> optional_tables = {};
};

// Every report, in the order `--report all` makes them.
const std::vector<ReportSpec>& report_registry();
// The report `id`; null when there is none.
const ReportSpec* find_report(std::string_view id);
// The registry as JSON Lines, one report a line (`pyprof-prof --list-reports`, a hidden option
// that the Python front and the docs tests read instead of lists of their own):
// {"report":"op","tables":["op"],"optional_tables":[],"options":["--top"],"one_profile":true,
// "about":"..."}; optional_tables: those written only when they have rows.
std::string list_reports_text();

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

// The report names prof knows (report_registry()'s ids).
const std::vector<std::string>& report_names();
// The report names, comma-separated, for messages.
std::string report_list_text();
// Builds report `name` (its tables with `report` and `id` set, its optional_tables left out when
// it has no rows); false with `error` for an unknown name.
bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error);
// The same with only a module report depth (0 = full paths).
inline bool build_report(const std::string& name, const ReadResult& data, int depth,
                         std::vector<ReportTable>& out, std::string& error) {
  return build_report(name, data, ReportOptions{depth, nullptr}, out, error);
}

// The width text reports fit when -w does not say (docs/prof.md §3): the terminal's when
// `to_terminal` and standard output is one, else $COLUMNS, else 120.
size_t default_report_width(bool to_terminal);

// Writes `tables`; kText prints quantities in human units (the raw numbers' unit suffixes,
// "(ns)", dropped from the headers), kRawText as CSV holds them. Text fits `width` characters
// (0: no limit, one line a row): long text cells wrap, then the least needed columns are left
// out and said under the table (ReportTable::keep); cells wider than kMaxTextCellWidth are elided
// (prof/table.h). JSON writes each table as a line naming its report, id, title and columns
// with their units, then its rows, each with its report and table id (docs/prof.md §3). A failed
// write stops it early; out.close() says why.
void write_report(OutputFile& out, const std::vector<ReportTable>& tables, ReportFormat format,
                  size_t width = 0);

}  // namespace pyprof::prof
