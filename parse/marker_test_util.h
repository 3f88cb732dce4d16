// What the marker and Python-literal unit tests share.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "parse/markers.h"

namespace pyprof::parse {

// One message of `domain` decoded into a fresh Marker.
inline Marker decode(std::string_view text, MarkerDomain domain) {
  Marker m;
  decode_marker(text, domain, m);
  return m;
}
// One message of the default domain, or of the "pyprof" domain.
inline Marker decode(std::string_view text, bool in_pyprof_domain = false) {
  return decode(text, in_pyprof_domain ? MarkerDomain::kPyprof : MarkerDomain::kDefault);
}

// Whether `json` is one valid JSON value. The DOM parser checks all of it; On-Demand, which
// parse itself uses, checks only what is read.
inline bool is_valid_json(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  return parser.parse(json).get(root) == simdjson::SUCCESS;
}

}  // namespace pyprof::parse
