// The per-record table: PyProf's 20 columns plus ours, selected with -c, printed as
// space-separated columns (PyProf's default), fixed width (-w N), CSV or JSON Lines.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_file.h"
#include "prof/records.h"

namespace pyprof::prof {

struct Column {
  const char* key;     // -c name
  const char* header;  // printed header (states the unit / convention)
  int min_width;       // for -w
  bool numeric;        // right-aligned in -w mode, a JSON number
};

// Every column, in the order `-c all` lists them.
const std::vector<Column>& all_columns();
// PyProf's default: idx,dir,sub,mod,op,kernel,params,sil.
std::vector<std::string> default_columns();
// Resolves a comma list ("idx,op,flops" or "all"); false with `error` naming a bad key.
bool select_columns(const std::string& list, std::vector<const Column*>& out, std::string& error);

enum class TableFormat { kColumns, kWidth, kCsv, kJson };

// One cell as text (CSV/columns) — "-" or "na" where PyProf printed them.
std::string cell(const Column& c, const ProfRecord& r, size_t index, const ReadResult& data);
// Appends `v` with `decimals` (0 to 3) decimals, exactly as fmt's "{:.Nf}" writes it (faster for
// the values whose rounding is certain).
void append_fixed(std::string& out, double v, int decimals);
// The cell, appended to `out` (no string of its own: the table's writer calls it 30M times).
void append_cell(std::string& out, const Column& c, const ProfRecord& r, size_t index,
                 const ReadResult& data);

// Writes the table. For kWidth, `width` is the line width; returns false with `error` when it
// is smaller than the selected columns need. A failed write stops it early; out.close() says
// why.
bool write_table(OutputFile& out, const ReadResult& data, const std::vector<const Column*>& cols,
                 TableFormat format, int width, std::string& error);

// CSV field: quoted, embedded quotes doubled (RFC 4180).
std::string csv_field(const std::string& s);
// JSON string literal.
std::string json_string(const std::string& s);

// The widest cell of a text report, in characters (room for a 3-d convolution's params):
// one 16 MiB name padded every row of its column to 16 MiB. CSV and JSON keep whole values.
inline constexpr size_t kMaxTextCellWidth = 120;
// Characters (UTF-8 code points) in `s`.
size_t text_width(std::string_view s);
// `s` cut to kMaxTextCellWidth characters, the last one "…", when it is wider.
std::string elide_cell(const std::string& s);

}  // namespace pyprof::prof
