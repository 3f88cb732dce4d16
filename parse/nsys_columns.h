// Helpers nsys_reader.cpp and nsys_ranges.cpp share to read an export of any schema version:
// a SELECT that reads a missing column as NULL, a column's value or a fallback, and the words
// added to a message when the file is likely not an Nsight Systems export at all.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include "parse/sqlite_db.h"

namespace pyprof::parse {

// Builds a SELECT of `names` from `table`; a column the table lacks reads as NULL, so one
// query serves every schema version.
inline std::string select_columns(const std::set<std::string>& have, const std::string& table,
                                  std::initializer_list<const char*> names,
                                  const char* extra = "") {
  std::string sql = "SELECT ";
  bool first = true;
  for (const char* name : names) {
    if (!first) sql += ", ";
    first = false;
    if (std::string_view(name) == "rowid") {
      sql += name;  // quoted, "rowid" would read as a string literal when no column has the name
    } else if (have.count(name)) {
      sql += '"';
      sql += name;
      sql += '"';
    } else {
      sql += "NULL";
    }
  }
  sql += " FROM \"" + table + "\"";
  sql += extra;
  return sql;
}

// Messages name the file kind only when it is likely wrong.
constexpr std::string_view kNotNsys = " (not an Nsight Systems export?)";

inline int64_t or_default(const Statement& s, int col, int64_t fallback) {
  return s.int64_or(col, fallback);
}

}  // namespace pyprof::parse
