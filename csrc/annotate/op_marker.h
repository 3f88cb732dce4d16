// Building the JSON message of one op marker (see docs/formats.md, "Op markers").
//
// Everything that is constant for an operator (its escaped name, overload, and the JSON keys
// and kinds of its schema arguments) is computed once into an OpInfo; per call only the ids and
// the argument values are encoded, into a reused buffer.
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ivalue_json.h"

namespace pyprof {

// Upper bound of one op message. Arguments that would go past it are left out and counted.
inline constexpr size_t kMaxMessageBytes = 32 * 1024;

struct OpInfo {
  std::string name;      // as RecordFunction reports it
  std::string overload;  // "" when none
  std::string prefix;    // `"op":"aten::add","overload":"Tensor"` (no braces, no version)
  // Per schema argument: its JSON-escaped name, and how to read its boxed value.
  std::vector<std::string> arg_keys;
  std::vector<ArgKind> arg_kinds;
};

// `schema` may be null (backward nodes, user scopes): arguments are then keyed "0", "1", ...
OpInfo make_op_info(std::string_view name, std::string_view overload,
                    const c10::FunctionSchema* schema);

struct OpInstance {
  uint64_t id = 0;       // process-unique op id
  int64_t seq = -1;      // autograd sequence number
  uint64_t tid = 0;      // RecordFunction logical thread id
  uint64_t fwd_tid = 0;  // forward thread id (backward nodes only)
  at::RecordScope scope = at::RecordScope::FUNCTION;
  std::string_view call_site;  // "file.py:12" or empty
};

// kText: a version-1 marker with the call's "id" and "seq" in it (unique per call).
// kInterned: a version-2 marker without them, identical for every call of the same op with the
// same arguments on the same thread, so it can be registered once (marker_schema.h).
enum class MarkerForm : uint8_t { kText, kInterned };

// Builds the marker for one op call in `buffer` (scratch space, reused across calls; its size
// is not the message's) and returns it; the view is NUL-terminated and valid until the next
// use of `buffer`.
std::string_view build_op_message(std::string& buffer, const OpInfo& info, const OpInstance& op,
                                  c10::ArrayRef<const c10::IValue> inputs,
                                  const EncodeLimits& limits = {},
                                  MarkerForm form = MarkerForm::kText);

std::string_view scope_name(at::RecordScope scope);

class MarkerKeyWriter;
// Writes the binary key of this call's interned marker (marker_key.h): the OpInfo's address
// (one per op name and overload per thread, never freed), scope, thread ids, call site and
// arguments. False when the key cannot capture the arguments exactly.
bool write_marker_key(MarkerKeyWriter& key, const OpInfo& info, const OpInstance& op,
                      c10::ArrayRef<const c10::IValue> inputs);

}  // namespace pyprof
