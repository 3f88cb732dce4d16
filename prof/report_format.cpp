// Reports as a person or a program reads them: quantities in human units (format_quantity) and
// the text, CSV and JSON renderings of a report's tables (write_report).
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "common/cli_help.h"
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
    case Unit::kId:
      return fmt::format("{:.0f}", value);
    case Unit::kText:
    case Unit::kPerRow:
      break;
  }
  return fmt::format("{}", value);
}

std::string_view unit_name(Unit unit) {
  switch (unit) {
    case Unit::kText:
      return "text";
    case Unit::kCount:
      return "count";
    case Unit::kId:
      return "id";
    case Unit::kTime:
      return "ns";
    case Unit::kFlops:
      return "FLOPs";
    case Unit::kBytes:
      return "bytes";
    case Unit::kFlopRate:
      return "TFLOP/s";
    case Unit::kByteRate:
      return "GB/s";
    case Unit::kFlopsPerSecond:
      return "FLOP/s";
    case Unit::kBytesPerSecond:
      return "B/s";
    case Unit::kRatio:
      return "ratio";
    case Unit::kPercent:
      return "%";
    case Unit::kPerRow:
      return "per-row";
  }
  return "text";
}

size_t default_report_width(bool to_terminal) { return pyprof::terminal_columns(to_terminal, 120); }

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
  if (unit == Unit::kText || unit == Unit::kPercent || unit == Unit::kPerRow || unit == Unit::kId) {
    return raw;
  }
  auto exact = t.exact.find({row, column});
  if (exact != t.exact.end()) return format_quantity(exact->second, unit);
  char* end = nullptr;
  double value = std::strtod(raw.c_str(), &end);
  if (raw.empty() || end != raw.c_str() + raw.size()) return raw;  // "na", "-"
  return format_quantity(value, unit);
}

// ---- JSON --------------------------------------------------------------------------------------

// A cell that means "no value": JSON's null, the one spelling for it (the per-record table's
// --json writes the same).
bool is_null_cell(const std::string& cell) { return cell.empty() || cell == "na" || cell == "-"; }

// `s` as it is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  const size_t integer_at = i;
  const size_t integer = digits();
  if (integer == 0 || (integer > 1 && s[integer_at] == '0')) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// A unit whose cells JSON writes as numbers.
bool is_number_unit(Unit unit) { return unit != Unit::kText && unit != Unit::kPerRow; }

void append_json_ids(std::string& line, const ReportTable& t) {
  line += "{\"report\":";
  line += json_string(t.report);
  line += ",\"table\":";
  line += json_string(t.id.empty() ? t.report : t.id);
}

// The table's line: its ids, title and columns with their units.
std::string json_table_line(const ReportTable& t) {
  std::string line;
  append_json_ids(line, t);
  line += ",\"title\":";
  line += json_string(t.title);
  line += ",\"columns\":[";
  for (size_t i = 0; i < t.headers.size(); ++i) {
    if (i) line += ',';
    line += "{\"name\":";
    line += json_string(t.headers[i]);
    line += ",\"unit\":\"";
    line += unit_name(i < t.units.size() ? t.units[i] : Unit::kText);
    line += "\"}";
  }
  line += "]}\n";
  return line;
}

bool write_json_table(OutputFile& out, const ReportTable& t) {
  if (!out.write(json_table_line(t))) return false;
  const bool per_row = std::find(t.units.begin(), t.units.end(), Unit::kPerRow) != t.units.end();
  std::string line;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::vector<std::string>& row = t.rows[r];
    line.clear();
    append_json_ids(line, t);
    if (per_row) {
      line += ",\"unit\":\"";
      line += unit_name(r < t.row_units.size() ? t.row_units[r] : Unit::kText);
      line += '"';
    }
    for (size_t i = 0; i < row.size(); ++i) {
      line += ',';
      line += json_string(t.headers[i]);
      line += ':';
      const bool number = is_number_unit(unit_of(t, r, i));
      if (is_null_cell(row[i]) || (number && (row[i] == "nan" || row[i] == "-nan"))) {
        line += "null";  // a quantity without a value (a statistic of no samples) as well
      } else if (number && is_json_number(row[i])) {
        line += row[i];
      } else {
        line += json_string(row[i]);  // text, or a quantity JSON has no number for ("inf")
      }
    }
    line += "}\n";
    if (!out.write(line)) return false;
  }
  return true;
}

// ---- CSV ---------------------------------------------------------------------------------------

bool write_csv_table(OutputFile& out, const ReportTable& t) {
  std::string line;
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
    if (!out.write(line)) return false;
  }
  return true;
}

// ---- text --------------------------------------------------------------------------------------

// A text column is wrapped no narrower than this while columns can still be left out, so that a
// name stays readable before a number goes; and no narrower than kNarrowestColumn at all.
constexpr size_t kWrapFloor = 30;
constexpr size_t kNarrowestColumn = 10;

// Where `s` may break: at a space (dropped), or after one of ",;/|)>" (kept), the last such
// place at most `width` characters in; 0 when none. `starts`: each character's byte offset,
// then the end.
size_t break_at(const std::vector<size_t>& starts, std::string_view s, size_t width) {
  const size_t length = starts.size() - 1;
  for (size_t k = std::min(width, length); k > 0; --k) {
    if (k < length && s[starts[k]] == ' ') return k;  // the next line starts at a space
    const char c = s[starts[k - 1]];                  // the character before position k
    if (c == ' ' || c == ',' || c == ';' || c == '/' || c == '|' || c == ')' || c == '>') {
      return k;
    }
  }
  return 0;
}

// `s` in lines of at most `width` characters (UTF-8 code points), broken where break_at() finds
// a place, else cut.
std::vector<std::string> wrap_text(const std::string& s, size_t width) {
  if (width == 0 || text_width(s) <= width) return {s};
  std::vector<std::string> lines;
  std::string_view rest = s;
  while (!rest.empty()) {
    std::vector<size_t> starts;  // byte offset of each character, then the end
    for (size_t b = 0; b < rest.size(); ++b) {
      if ((static_cast<unsigned char>(rest[b]) & 0xC0) != 0x80) starts.push_back(b);
    }
    starts.push_back(rest.size());
    if (starts.size() - 1 <= width) {
      lines.emplace_back(rest);
      break;
    }
    size_t k = break_at(starts, rest, width);
    if (k == 0) k = width;
    std::string_view piece = rest.substr(0, starts[k]);
    rest.remove_prefix(starts[k]);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    lines.emplace_back(piece);
  }
  return lines;
}

// The columns a text table shows and how wide each is, fitted to `limit` characters.
struct TextLayout {
  std::vector<size_t> width;  // per column
  std::vector<bool> shown;
  std::vector<size_t> left_out;  // the columns left out, in the table's order
};

Keep keep_of(const ReportTable& t, size_t column) {
  if (column < t.keep.size()) return t.keep[column];
  return column == 0 ? Keep::kAlways : Keep::kMore;
}

// Fits the columns of natural widths `natural` into `limit` characters (two between columns):
// (1) text columns wrap, the widest first, down to kWrapFloor (or their header); (2) columns
// are left out in Keep order, the rightmost of a level first, until the table fits, and the
// wrapped columns take back the room left; (3) text columns wrap further, down to
// kNarrowestColumn. Numbers never wrap; a table whose kept columns are wider still overflows.
TextLayout fit_columns(const ReportTable& t, const std::vector<size_t>& natural,
                       const std::vector<size_t>& header_width, size_t limit) {
  TextLayout layout{natural, std::vector<bool>(natural.size(), true), {}};
  auto total = [&] {
    size_t sum = 0, shown = 0;
    for (size_t i = 0; i < natural.size(); ++i) {
      if (!layout.shown[i]) continue;
      sum += layout.width[i];
      ++shown;
    }
    return sum + (shown > 1 ? 2 * (shown - 1) : 0);
  };
  if (limit == 0 || total() <= limit) return layout;
  auto wraps = [&](size_t i) { return layout.shown[i] && !t.numeric[i]; };
  auto shrink = [&](bool keep_headers, size_t floor) {
    while (total() > limit) {
      size_t widest = natural.size();
      for (size_t i = 0; i < natural.size(); ++i) {
        const size_t least = std::max(floor, keep_headers ? header_width[i] : 0);
        if (wraps(i) && layout.width[i] > least &&
            (widest == natural.size() || layout.width[i] > layout.width[widest])) {
          widest = i;
        }
      }
      if (widest == natural.size()) return;
      --layout.width[widest];
    }
  };
  shrink(true, kWrapFloor);
  for (Keep level : {Keep::kDetail, Keep::kMore, Keep::kMain}) {
    for (size_t i = natural.size(); i-- > 0 && total() > limit;) {
      if (keep_of(t, i) != level || !layout.shown[i]) continue;
      layout.shown[i] = false;
      layout.left_out.push_back(i);
    }
  }
  std::sort(layout.left_out.begin(), layout.left_out.end());
  // The room the left-out columns freed goes back to the wrapped ones, the most cut first.
  while (total() < limit) {
    size_t most_cut = natural.size();
    for (size_t i = 0; i < natural.size(); ++i) {
      if (wraps(i) && layout.width[i] < natural[i] &&
          (most_cut == natural.size() ||
           natural[i] - layout.width[i] > natural[most_cut] - layout.width[most_cut])) {
        most_cut = i;
      }
    }
    if (most_cut == natural.size()) break;
    ++layout.width[most_cut];
  }
  shrink(false, kNarrowestColumn);
  return layout;
}

// Text: columns as wide as their widest cell, cells over kMaxTextCellWidth elided, fitted to
// `limit` (fit_columns). In human units a row's metric (the summary's first column) loses its
// unit as a header does. Two passes over the rows, the first for the widths: a table of a
// million op instances is not held a second time in its printed form.
bool write_text_table(OutputFile& out, const ReportTable& t, ReportFormat format, size_t limit) {
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
  std::vector<size_t> w(t.headers.size()), header_width(t.headers.size());
  for (size_t i = 0; i < header_cells.size(); ++i) {
    header_width[i] = w[i] = text_width(header_cells[i]);
  }
  for (size_t r = 0; r < t.rows.size(); ++r) {
    for (size_t i = 0; i < t.rows[r].size(); ++i) {
      w[i] = std::max(w[i], text_width(printed(r, i)));
    }
  }
  const TextLayout layout = fit_columns(t, w, header_width, limit);
  std::string line;
  auto write_lines = [&](const std::string& text) {
    for (const std::string& piece : wrap_text(text, limit)) {
      line = piece;
      line += '\n';
      if (!out.write(line)) return false;
    }
    return true;
  };
  if (!write_lines(t.title)) return false;
  // One row, on as many lines as its wrapped cells need; a number sits on the first.
  auto write_row = [&](size_t cells, auto&& cell) {
    std::vector<std::vector<std::string>> pieces(cells);
    size_t lines = 1;
    size_t last = 0;  // the last column shown
    for (size_t i = 0; i < cells; ++i) {
      if (!layout.shown[i]) continue;
      last = i;
      pieces[i] =
          t.numeric[i] ? std::vector<std::string>{cell(i)} : wrap_text(cell(i), layout.width[i]);
      lines = std::max(lines, pieces[i].size());
    }
    for (size_t k = 0; k < lines; ++k) {
      line.clear();
      for (size_t i = 0; i < cells; ++i) {
        if (!layout.shown[i]) continue;
        const std::string empty;
        const std::string& value = k < pieces[i].size() ? pieces[i][k] : empty;
        const size_t padding = layout.width[i] - std::min(layout.width[i], text_width(value));
        if (t.numeric[i]) line.append(padding, ' ');
        line += value;
        if (!t.numeric[i]) line.append(padding, ' ');
        if (i < last) line += "  ";
      }
      line += '\n';
      if (!out.write(line)) return false;
    }
    return true;
  };
  if (!write_row(header_cells.size(), [&](size_t i) { return header_cells[i]; })) return false;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (!write_row(t.rows[r].size(), [&](size_t i) { return printed(r, i); })) return false;
  }
  if (!layout.left_out.empty()) {
    std::string names;
    for (size_t i : layout.left_out) names += (names.empty() ? "" : ", ") + header_cells[i];
    if (!write_lines(fmt::format("(left out to fit {} characters: {}; -w 0 shows every column, "
                                 "CSV and JSON hold them all)",
                                 limit, names))) {
      return false;
    }
  }
  return out.write("\n");
}

}  // namespace

void write_report(OutputFile& out, const std::vector<ReportTable>& tables, ReportFormat format,
                  size_t width) {
  for (const ReportTable& t : tables) {
    if (out.failed()) return;
    const bool ok = format == ReportFormat::kJson  ? write_json_table(out, t)
                    : format == ReportFormat::kCsv ? write_csv_table(out, t)
                                                   : write_text_table(out, t, format, width);
    if (!ok) return;
  }
}

}  // namespace pyprof::prof
