// Reports as a person or a program reads them: quantities in human units (format_quantity) and
// the text, CSV and JSON renderings of a report's tables (write_report).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>

#include "prof/reports.h"
#include "prof/table.h"

namespace pyprof::prof {

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
