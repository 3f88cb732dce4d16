#include "prof/reports.h"

#include <fmt/core.h>

#include "prof/advice.h"
#include "prof/iterations.h"
#include "prof/marks.h"
#include "prof/ranks.h"
#include "prof/report_builders.h"
#include "prof/roofline.h"
#include "prof/time_model.h"

namespace pyprof::prof {

const std::vector<std::string>& report_names() {
  static const std::vector<std::string> kNames = {
      "kernel", "op",       "instance",  "module", "summary",   "tc",    "family",   "phase",
      "peaks",  "roofline", "iteration", "advice", "timemodel", "ranks", "compiled", "marks"};
  return kNames;
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

bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error) {
  using namespace report_parts;
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

}  // namespace pyprof::prof
