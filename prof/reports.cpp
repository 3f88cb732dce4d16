// The report registry: every report prof makes, in one place (report_registry()), and what
// reads it: build_report(), --report's names, --list-reports.
#include "prof/reports.h"

#include <fmt/core.h>

#include "prof/advice.h"
#include "prof/iterations.h"
#include "prof/marks.h"
#include "prof/memory_report.h"
#include "prof/memory_timeline.h"
#include "prof/ranks.h"
#include "prof/report_builders.h"
#include "prof/roofline.h"
#include "prof/table.h"
#include "prof/time_model.h"

namespace pyprof::prof {

namespace {

using Tables = std::vector<ReportTable>;

}  // namespace

const std::vector<ReportSpec>& report_registry() {
  using namespace report_parts;
  static const std::vector<ReportSpec> kReports = {
      {"kernel",
       "per kernel name (CPU: per op record name): count, time, FLOPs, bytes, rate",
       {"kernel"},
       {"--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) { return Tables{kernel_report(d, o.top)}; }},
      {"op",
       "per op type and direction: instances, time, counted FLOPs and bytes, rates, Modeled",
       {"op"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{op_report(d)}; }},
      {"instance",
       "per op instance: op, direction, seq, module, time, FLOPs, bytes, rate, params",
       {"instance"},
       {"--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) {
         return Tables{instance_report(d, o.top)};
       }},
      {"module",
       "per module path, rolled up the tree: forward and backward time and FLOPs",
       {"module"},
       {"--depth"},
       true,
       [](const ReadResult& d, const ReportOptions& o) {
         return Tables{module_report(d, o.depth)};
       }},
      {"summary",
       "the profile in one table of metrics: time, busy, FLOPs, bytes, rates, top ops",
       {"summary"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{summary_report(d)}; }},
      {"unmodelled",
       "the ops without a FLOP model by their share of the time, and the modelled ops whose "
       "calls their model could not cost (each table written only when it has a row)",
       {"unmodelled", "uncosted"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return unmodelled_report(d); },
       {"unmodelled", "uncosted"}},
      {"tc",
       "Tensor Core use of eligible ops, per op type and direction",
       {"tc"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{tc_report(d)}; }},
      {"family",
       "time, FLOPs and bytes by op family (docs/ops.md)",
       {"family"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{family_report(d)}; }},
      {"phase",
       "time and FLOPs by training phase: forward, backward, optimizer, other",
       {"phase"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{phase_report(d)}; }},
      {"peaks",
       "the devices' peak FLOP/s and memory bandwidth per math mode, and their sources",
       {"peaks"},
       {"--peaks"},
       true,
       [](const ReadResult& d, const ReportOptions& o) {
         return Tables{peaks_report(d, o.peaks)};
       }},
      {"roofline",
       "op types and op instances under their device's roofs",
       {"op_types", "op_instances"},
       {"--peaks", "--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) {
         return roofline_report(d, o.peaks, o.top);
       }},
      {"iteration",
       "per step parse detected, and the steady state over the selected steps",
       {"steps", "steady_state"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return iteration_report(d); }},
      {"advice",
       "the rules that fired: finding, time at stake, evidence, fix (docs/advice.md)",
       {"advice"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{advice_report(d)}; }},
      {"timemodel",
       "per op family, time fitted to FLOPs and bytes, and the points far from the fit",
       {"fits", "far_points"},
       {"--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) { return timemodel_report(d, o.top); }},
      // One rank here; several come through prof_main's ranks path, one net.dict each.
      {"ranks",
       "a distributed job's ranks side by side: compute, communication, stragglers, "
       "collectives (one net.dict per rank)",
       {"per_rank", "steps", "step_detail", "collectives"},
       {},
       false,
       [](const ReadResult& d, const ReportOptions&) { return ranks_report({summarize_rank(d)}); }},
      {"compiled",
       "torch.compile's kernels: attribution, FLOPs, bytes, what fusion saved",
       {"compiled"},
       {"--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) {
         return Tables{compiled_report(d, o.top)};
       }},
      {"marks",
       "the program's pyprof.mark() calls",
       {"marks"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return Tables{marks_report(d)}; }},
      // No table for a profile without memory lines: `--report all` stays as it was.
      {"memory",
       "per device and step the peak allocated and the op at it; per op and module the bytes "
       "allocated, freed, live at the step's end (memory lines)",
       {"steps", "ops", "modules"},
       {"--top"},
       true,
       [](const ReadResult& d, const ReportOptions& o) { return memory_report(d, o.top); },
       {"steps", "ops", "modules"}},
      // The page's memory plot: bounded points per device (prof/memory_timeline.h); no table
      // without memory lines.
      {"memory_timeline",
       "per device the bytes allocated over time, downsampled keeping every peak, and the "
       "top-level module spans beside it (memory lines)",
       {"points", "modules"},
       {},
       true,
       [](const ReadResult& d, const ReportOptions&) { return memory_timeline_report(d); },
       {"points", "modules"}},
  };
  return kReports;
}

const ReportSpec* find_report(std::string_view id) {
  for (const ReportSpec& spec : report_registry()) {
    if (spec.id == id) return &spec;
  }
  return nullptr;
}

const std::vector<std::string>& report_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const ReportSpec& spec : report_registry()) names.emplace_back(spec.id);
    return names;
  }();
  return kNames;
}

std::string list_reports_text() {
  auto strings = [](const std::vector<std::string_view>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ',';
      out += json_string(std::string(items[i]));
    }
    return out + "]";
  };
  std::string out;
  for (const ReportSpec& spec : report_registry()) {
    out += fmt::format(
        "{{\"report\":{},\"tables\":{},\"optional_tables\":{},\"options\":{},"
        "\"one_profile\":{},\"about\":{}}}\n",
        json_string(std::string(spec.id)), strings(spec.tables), strings(spec.optional_tables),
        strings(spec.options), spec.one_profile ? "true" : "false",
        json_string(std::string(spec.about)));
  }
  return out;
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

void column(ReportTable& t, std::string header, Unit unit, Keep keep) {
  t.headers.push_back(std::move(header));
  t.units.push_back(unit);
  t.numeric.push_back(unit != Unit::kText && unit != Unit::kPerRow);
  t.keep.resize(t.headers.size() - 1, Keep::kMore);
  t.keep.push_back(keep);
}

void keep_columns(ReportTable& t, std::initializer_list<Keep> keep) { t.keep.assign(keep); }

bool is_inductor_kernel(std::string_view name) {
  if (name.starts_with("triton_")) return true;
  if (!name.starts_with("graph_")) return false;
  const size_t digits = name.find_first_not_of("0123456789", 6);
  return digits != 6 && digits != std::string_view::npos &&
         name.substr(digits).starts_with("_cpp_");
}

bool build_report(const std::string& name, const ReadResult& data, const ReportOptions& options,
                  std::vector<ReportTable>& out, std::string& error) {
  const ReportSpec* spec = find_report(name);
  if (spec == nullptr) {
    error = "unknown report '" + name + "' (reports: " + report_list_text() + ")";
    return false;
  }
  for (ReportTable& t : spec->build(data, options)) {
    t.report = std::string(spec->id);
    if (t.id.empty() && spec->tables.size() == 1) t.id = std::string(spec->tables[0]);
    if (t.rows.empty() && std::find(spec->optional_tables.begin(), spec->optional_tables.end(),
                                    t.id) != spec->optional_tables.end()) {
      continue;
    }
    out.push_back(std::move(t));
  }
  return true;
}

std::string report_list_text() {
  std::string out;
  for (const std::string& name : report_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace pyprof::prof
