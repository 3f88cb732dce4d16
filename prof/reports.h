// DLProf-style reports over prof's records: kernel, op (per op type), instance (per op
// instance), module (rolled up the module tree), summary, tc (Tensor Core use of eligible ops).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "common/output_file.h"
#include "prof/records.h"

namespace pyprof::prof {

enum class ReportFormat { kText, kCsv, kJson };

// A report's rows before rendering.
struct ReportTable {
  std::string title;
  std::vector<std::string> headers;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
};

struct PeaksFile;  // prof/device_peaks.h

// What reports read beside the records.
struct ReportOptions {
  int depth = 0;                     // module report depth (0 = full paths)
  const PeaksFile* peaks = nullptr;  // peaks, roofline: --peaks FILE entries (null: none)
};

// The report names prof knows.
const std::vector<std::string>& report_names();
// Builds report `name`; false with `error` for an unknown name.
bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error);
// The same with only a module report depth (0 = full paths).
inline bool build_report(const std::string& name, const ReadResult& data, int depth,
                         std::vector<ReportTable>& out, std::string& error) {
  return build_report(name, data, ReportOptions{depth, nullptr}, out, error);
}
// Writes `tables`; text cells wider than kMaxTextCellWidth are elided (prof/table.h). A failed
// write stops it early; out.close() says why.
void write_report(OutputFile& out, const std::vector<ReportTable>& tables, ReportFormat format);

}  // namespace pyprof::prof
