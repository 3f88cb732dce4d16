#include "prof/table.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <iterator>

#include "common/json_writer.h"
#include "common/ordered_chunks.h"
#include "common/suggest.h"

namespace pyprof::prof {

const std::vector<Column>& all_columns() {
  static const std::vector<Column> kColumns = {
      // PyProf's 20 columns, with its headers and minimum widths.
      {"idx", "Idx", 7, true},
      {"seq", "SeqId", 7, false},
      {"altseq", "AltSeqId", 7, false},
      {"tid", "TId", 12, true},
      {"layer", "Layer", 10, false},
      {"trace", "Trace", 25, false},
      {"dir", "Direction", 5, false},
      {"sub", "Sub", 3, true},
      {"mod", "Module", 15, false},
      {"op", "Op", 15, false},
      {"kernel", "Kernel", 0, false},
      {"params", "Params", 0, false},
      {"sil", "Sil(ns)", 10, true},
      {"tc", "TC", 2, true},
      {"device", "Device", 3, true},
      {"stream", "Stream", 3, true},
      {"grid", "Grid", 12, false},
      {"block", "Block", 12, false},
      {"flops", "FLOPs(FMA=2)", 12, true},
      {"bytes", "Bytes(ideal DRAM)", 12, true},
      // Ours.
      {"duration", "Duration(ns)", 10, true},
      {"counted_ns", "CountedTime(ns)", 10, true},
      {"tflops", "TFLOP/s", 8, true},
      {"gbps", "GB/s", 8, true},
      {"ai", "FLOP/Byte", 9, true},
      {"tc_eligible", "TCEligible", 2, true},
      {"module", "ModulePath", 20, false},
      {"dtype", "DType", 8, false},
      {"shapes", "Shapes", 16, false},
      {"family", "Family", 10, false},
      {"op_flops", "OpFLOPs(FMA=2)", 12, true},
      {"op_bytes", "OpBytes(ideal DRAM)", 12, true},
      {"flag", "Flag", 10, false},
      {"step", "Step", 4, true},
      {"selected", "Selected", 3, true},
      // FlopCounterMode's count (causal attention dense), beside `flops`, what ran.
      {"flops_dense", "FLOPs(dense)", 12, true},
      {"op_flops_dense", "OpFLOPs(dense)", 12, true},
  };
  return kColumns;
}

std::vector<std::string> default_columns() {
  return {"idx", "dir", "sub", "mod", "op", "kernel", "params", "sil"};
}

bool select_columns(const std::string& list, std::vector<const Column*>& out, std::string& error) {
  out.clear();
  if (list == "all") {
    for (const Column& c : all_columns()) out.push_back(&c);
    return true;
  }
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string key =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (key.empty()) continue;
    const Column* found = nullptr;
    for (const Column& c : all_columns()) {
      if (key == c.key) found = &c;
    }
    if (!found) {
      std::string keys;
      std::vector<std::string> names;
      for (const Column& c : all_columns()) {
        keys += std::string(keys.empty() ? "" : ",") + c.key;
        names.emplace_back(c.key);
      }
      error = "unknown column '" + key + "'" + pyprof::did_you_mean(key, names) +
              " (columns: " + keys + ")";
      return false;
    }
    out.push_back(found);
  }
  if (out.empty()) {
    error = "no columns selected";
    return false;
  }
  return true;
}

namespace {

// The cells are appended to the output line as they are formatted: a million records times
// thirty columns made a string per cell, and another per quoted CSV field, the CSV table's
// main cost.
void append_or_dash(std::string& out, std::string_view s) {
  if (s.empty()) {
    out += '-';
  } else {
    out += s;
  }
}

void append_int(std::string& out, int64_t v) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, end);
}

void append_xyz(std::string& out, const int32_t v[3]) {
  append_int(out, v[0]);
  out += ',';
  append_int(out, v[1]);
  out += ',';
  append_int(out, v[2]);
}

int64_t time_of(const ProfRecord& r, const ReadResult& data) {
  return data.cpu_only ? r.self_duration : r.duration;
}

// The time a record's rate divides by (docs/prof.md §3): the time of exactly the work its FLOPs
// and bytes count, counted_time(): a CPU op's inclusive time when it counts its call tree, 0
// when it counts nothing (an op inside a counted one, an autocast wrapper: no rate). A record
// above its device's peak keeps its own duration: its rate is the evidence for its flag.
int64_t rate_time(const ProfRecord& r) {
  if (r.above_peak) return r.duration;
  return counted_time(r);
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "na";
    return;
  }
  append_fixed(out, v, 0);
}

}  // namespace

void append_fixed(std::string& out, double v, int decimals) {
  // fmt's "{:.Nf}" rounds the double's exact value, a slow path for most numbers (a third of
  // the CSV table's time). Where the rounding is certain it is done here: a non-negative value
  // whose scaled value has no more error than kTieMargin, and is not that close to a tie (a
  // rounding tie goes to fmt, which breaks it on the exact value). Integers below 2^52 are
  // exact, so their scale (1) adds no error.
  static constexpr double kScale[] = {1, 10, 100, 1000};
  static constexpr int64_t kPower[] = {1, 10, 100, 1000};
  constexpr double kTieMargin = 1e-3;
  if (decimals >= 0 && decimals <= 3 && !std::signbit(v) &&
      v < (decimals == 0 ? 4503599627370496.0 : 1e12)) {  // 2^52; 1e12: error < 1e-3 at 1000x
    const double scaled = v * kScale[decimals];
    const double whole = std::floor(scaled);
    const double fraction = scaled - whole;
    if (decimals == 0 ? fraction != 0.5 : std::fabs(fraction - 0.5) > kTieMargin) {
      const auto rounded = static_cast<int64_t>(whole) + (fraction > 0.5 ? 1 : 0);
      append_int(out, rounded / kPower[decimals]);
      if (decimals > 0) {
        out += '.';
        char digits[4];
        int64_t rest = rounded % kPower[decimals];
        for (int i = decimals - 1; i >= 0; --i, rest /= 10)
          digits[i] = static_cast<char>('0' + rest % 10);
        out.append(digits, static_cast<size_t>(decimals));
      }
      return;
    }
  }
  fmt::format_to(std::back_inserter(out), "{:.{}f}", v, decimals);
}

namespace {

// A rate as the reports write it raw (reports.h raw_rate_text): `decimals` decimals, or 3
// significant digits below 0.1, so that a CPU op's 0.000638 TFLOP/s is not printed 0.000.
void append_rate(std::string& out, double v, int decimals) {
  if (v != 0 && std::fabs(v) < 0.1) {
    fmt::format_to(std::back_inserter(out), "{:.3g}", v);
  } else {
    append_fixed(out, v, decimals);
  }
}

}  // namespace

void append_cell(std::string& out, const Column& c, const ProfRecord& r, size_t index,
                 const ReadResult& data) {
  // Columns are told apart by their position in all_columns(): one switch per cell, not a
  // chain of string comparisons (a million records times thirty columns).
  enum : size_t {
    kIdx,
    kSeq,
    kAltseq,
    kTid,
    kLayer,
    kTrace,
    kDir,
    kSub,
    kMod,
    kOp,
    kKernel,
    kParams,
    kSil,
    kTc,
    kDevice,
    kStream,
    kGrid,
    kBlock,
    kFlops,
    kBytes,
    kDuration,
    kCountedNs,
    kTflops,
    kGbps,
    kAi,
    kTcEligible,
    kModule,
    kDtype,
    kShapes,
    kFamily,
    kOpFlops,
    kOpBytes,
    kFlag,
    kStep,
    kSelected,
    kFlopsDense,
    kOpFlopsDense
  };
  const Strings& s = data.strings;
  bool kernel = r.kind == Kind::kKernel;
  int64_t t = time_of(r, data);
  const int64_t rate_ns = rate_time(r);
  auto int_or_dash = [&](bool known, int64_t v) {
    if (known) {
      append_int(out, v);
    } else {
      out += '-';
    }
  };
  switch (static_cast<size_t>(&c - all_columns().data())) {
    case kIdx:
      append_int(out, static_cast<int64_t>(index + 1));
      return;
    case kSeq:
      return int_or_dash(r.seq >= 0, r.seq);
    case kAltseq:
      out += '-';
      return;
    case kTid:
      return int_or_dash(r.tid >= 0, r.tid);
    case kLayer:
      return append_or_dash(out, s.get(r.layer));
    case kTrace:
      return append_or_dash(out, s.get(r.trace));
    case kDir:
      out += r.dir == Dir::kFprop ? "fprop" : r.dir == Dir::kBprop ? "bprop" : "-";
      return;
    case kSub:
      append_int(out, r.sub);
      return;
    case kMod:
      return append_or_dash(out, s.get(r.mod));
    case kOp:
      return append_or_dash(out, s.get(r.op));
    case kKernel:
      return append_or_dash(out, s.get(r.name));
    case kParams:
      if (r.modeled || r.bytes_estimated) return append_or_dash(out, s.get(r.params));
      out += "na";
      return;
    case kSil:
    case kDuration:
      append_int(out, t);
      return;
    case kTc:
      return int_or_dash(kernel, r.tc);
    case kDevice:
      return int_or_dash(r.device >= 0, r.device);
    case kStream:
      return int_or_dash(r.stream >= 0, r.stream);
    case kGrid:
    case kBlock:
      if (kernel) return append_xyz(out, &c - all_columns().data() == kGrid ? r.grid : r.block);
      out += '-';
      return;
    case kFlops:
    case kBytes:
    case kOpFlops:
    case kOpBytes: {
      const size_t column = static_cast<size_t>(&c - all_columns().data());
      // A Triton launch's estimated bytes are shown (flag bytes-est); its FLOPs are unknown.
      const bool estimated_bytes = r.bytes_estimated && (column == kBytes || column == kOpBytes);
      if (!r.modeled && !estimated_bytes) {
        out += "na";
        return;
      }
      return append_number(out, column == kFlops     ? r.flops
                                : column == kBytes   ? r.bytes
                                : column == kOpFlops ? r.op_flops
                                                     : r.op_bytes);
    }
    case kCountedNs:
      if (r.modeled) {
        append_int(out, counted_time(r));
      } else {
        out += "na";
      }
      return;
    case kTflops:
      if (r.modeled && rate_ns > 0) {
        append_rate(out, r.flops / static_cast<double>(rate_ns) / 1e3, 3);
      } else {
        out += "na";
      }
      return;
    case kGbps:
      if (r.bytes_estimated && r.duration > 0) {
        // Not counted (no counted time): the estimate over the record's own duration.
        append_rate(out, r.bytes / static_cast<double>(r.duration), 1);
      } else if (r.modeled && rate_ns > 0) {
        append_rate(out, r.bytes / static_cast<double>(rate_ns), 1);
      } else {
        out += "na";
      }
      return;
    case kAi:
      if (r.modeled && r.bytes > 0) {
        append_fixed(out, r.flops / r.bytes, 2);
      } else {
        out += "na";
      }
      return;
    case kTcEligible:
      // Tensor Cores are a GPU's: a CPU op record has no such question to answer.
      out += r.modeled && r.kind != Kind::kOp ? (r.tc_eligible ? "1" : "0") : "na";
      return;
    case kModule:
      return append_or_dash(out, s.get(r.module));
    case kDtype:
      return append_or_dash(out, s.get(r.dtype));
    case kShapes:
      return append_or_dash(out, s.get(r.shapes));
    case kFamily:
      return append_or_dash(out, s.get(r.family));
    case kFlag:
      out += r.bad_time          ? "bad-time"
             : r.above_peak      ? "above-peak"
             : r.bytes_estimated ? "bytes-est"
                                 : "-";
      return;
    case kStep:
      return int_or_dash(r.step >= 0, r.step);
    case kSelected:
      out += r.selected ? '1' : '0';
      return;
    case kFlopsDense:
    case kOpFlopsDense:
      if (!r.modeled) {
        out += "na";
        return;
      }
      return append_number(out, static_cast<size_t>(&c - all_columns().data()) == kFlopsDense
                                    ? dense_flops(r)
                                    : r.op_flops + r.op_masked_flops);
    default:
      out += '?';
      return;
  }
}

std::string cell(const Column& c, const ProfRecord& r, size_t index, const ReadResult& data) {
  std::string out;
  append_cell(out, c, r, index, data);
  return out;
}

std::string csv_field(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  size_t pos = 0;
  for (size_t q; (q = s.find('"', pos)) != std::string::npos; pos = q + 1) {
    out.append(s, pos, q + 1 - pos);
    out += '"';  // a quote is doubled
  }
  out.append(s, pos, std::string::npos);
  out += '"';
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  JsonWriter::append_escaped(out, s, s.size() + 1);
  out += '"';
  return out;
}

size_t text_width(std::string_view s) {
  size_t width = 0;
  for (char c : s) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not 10xxxxxx
  return width;
}

std::string elide_cell(const std::string& s) {
  if (s.size() <= kMaxTextCellWidth || text_width(s) <= kMaxTextCellWidth) return s;
  // Keep kMaxTextCellWidth - 1 characters, cutting before a lead byte so that no character
  // is split, then the marker.
  size_t kept = 0, end = 0;
  for (; end < s.size(); ++end) {
    bool starts_character = (static_cast<unsigned char>(s[end]) & 0xC0) != 0x80;
    if (starts_character && kept++ == kMaxTextCellWidth - 1) break;
  }
  return s.substr(0, end) + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS in UTF-8
}

namespace {

// Formats rows [0, n) in chunks on a few threads and writes the chunks in order. A million-row
// table is bound by formatting its cells, not by the write. `format(begin, end, text)` appends
// rows [begin, end) to `text`, and may run on any thread at once with itself. Stops at a
// failed write (`out` keeps the error) or when a thread could not format (`error` set).
template <typename Format>
void write_rows(OutputFile& out, size_t n, const Format& format, std::string& error) {
  constexpr size_t kChunk = 4096;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  try {
    process_chunks_in_order<std::string>(
        chunks, format_threads(), [](size_t, std::string& text) { text.clear(); },
        [&](size_t c, std::string& text) {
          format(c * kChunk, std::min(n, (c + 1) * kChunk), text);
        },
        [&](size_t, std::string& text) { return out.write(text); });
  } catch (const std::exception& e) {
    error = std::string("formatting the table: ") + e.what();
  }
}

}  // namespace

bool write_table(OutputFile& out, const ReadResult& data, const std::vector<const Column*>& cols,
                 TableFormat format, int width, std::string& error) {
  std::vector<int> widths;
  if (format == TableFormat::kWidth) {
    // PyProf's layout: fixed minimum widths, and the kernel and params columns share what is
    // left of N after them (each cell is followed by one space, as PyProf printed it).
    int fixed = 0, flexible = 0;
    for (const Column* c : cols) {
      if (c->min_width == 0) {
        ++flexible;
      } else {
        fixed += c->min_width;
      }
    }
    int share = flexible ? (width - fixed) / flexible : 0;
    if (width < fixed || (flexible && share < 4)) {
      error = fmt::format("-w {} is too narrow for these columns (they need at least {})", width,
                          fixed + flexible * 4);
      return false;
    }
    for (const Column* c : cols) widths.push_back(c->min_width ? c->min_width : share);
  }
  std::string line;
  auto emit_row = [&](const std::vector<std::string>& cells, bool header) {
    line.clear();
    for (size_t i = 0; i < cells.size(); ++i) {
      const Column& c = *cols[i];
      switch (format) {
        case TableFormat::kColumns:
          if (i) line += ' ';
          line += cells[i];
          break;
        case TableFormat::kCsv:
          if (i) line += ',';
          line += csv_field(cells[i]);
          break;
        case TableFormat::kWidth: {
          std::string v = cells[i].substr(0, static_cast<size_t>(widths[i]));
          line += (c.numeric && !header) ? fmt::format("{:>{}} ", v, widths[i])
                                         : fmt::format("{:<{}} ", v, widths[i]);
          break;
        }
        case TableFormat::kJson:
          break;
      }
    }
    line += '\n';
    out.write(line);
  };
  if (format == TableFormat::kJson) {
    // Keys quoted once; each cell written into one reused buffer (a million records times
    // thirty columns: no string per cell).
    std::vector<std::string> keys;
    for (const Column* c : cols) {
      std::string key = keys.empty() ? std::string() : std::string(1, ',');
      key += json_string(c->key);
      key += ':';
      keys.push_back(std::move(key));
    }
    auto format_rows = [&](size_t begin, size_t end, std::string& text) {
      std::string v;
      for (size_t k = begin; k < end; ++k) {
        text += '{';
        for (size_t i = 0; i < cols.size(); ++i) {
          const Column& c = *cols[i];
          v.clear();
          append_cell(v, c, data.records[k], k, data);
          text += keys[i];
          if (v == "na" || v == "-") {
            text += "null";
          } else if (c.numeric) {
            text += v;
          } else {
            text += '"';
            JsonWriter::append_escaped(text, v, v.size() + 1);
            text += '"';
          }
        }
        text += "}\n";
      }
    };
    write_rows(out, data.records.size(), format_rows, error);
    return error.empty();
  }
  std::vector<std::string> cells;
  for (const Column* c : cols) cells.push_back(c->header);
  emit_row(cells, true);
  if (format == TableFormat::kColumns || format == TableFormat::kCsv) {
    // Each record's line is built in place (append_cell), as emit_row would lay it out.
    const bool csv = format == TableFormat::kCsv;
    auto format_rows = [&](size_t begin, size_t end, std::string& text) {
      for (size_t k = begin; k < end; ++k) {
        for (size_t i = 0; i < cols.size(); ++i) {
          if (i) text += csv ? ',' : ' ';
          if (!csv) {
            append_cell(text, *cols[i], data.records[k], k, data);
            continue;
          }
          text += '"';
          const size_t field = text.size();
          append_cell(text, *cols[i], data.records[k], k, data);
          if (text.find('"', field) != std::string::npos) {
            text.replace(field, std::string::npos, csv_field(text.substr(field)), 1);
            text.pop_back();  // csv_field's closing quote: added below
          }
          text += '"';
        }
        text += '\n';
      }
    };
    write_rows(out, data.records.size(), format_rows, error);
    return error.empty();
  }
  for (size_t k = 0; k < data.records.size() && !out.failed(); ++k) {
    cells.clear();
    for (const Column* c : cols) cells.push_back(cell(*c, data.records[k], k, data));
    emit_row(cells, false);
  }
  return true;
}

}  // namespace pyprof::prof
