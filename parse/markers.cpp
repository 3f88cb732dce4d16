// TEMPORARY stub (replaced by the real decoders): everything is a user range.
#include "parse/markers.h"

namespace pyprof::parse {

void decode_marker(std::string_view text, bool, Marker& out) {
  out.kind = MarkerKind::kUser;
  out.dialect = Dialect::kUser;
  out.name.assign(text);
  out.overload.clear();
  out.module_type.clear();
  out.legacy_mod.clear();
  out.stack.clear();
  out.args.clear();
  out.trace.clear();
  out.op_id = 0;
  out.seq = -1;
  out.tid = -1;
  out.fwd_tid = -1;
  out.args_dropped = 0;
  out.error.clear();
}

bool is_backward_node_name(std::string_view) { return false; }

bool python_literal_to_json(std::string_view, std::string&, std::string& error) {
  error = "not implemented";
  return false;
}

}  // namespace pyprof::parse
