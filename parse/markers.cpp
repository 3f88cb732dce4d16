#include "parse/markers.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>

#include "common/marker_schema.h"
#include "parse/ascii.h"
#include "parse/marker_dialects.h"
#include "parse/py_literal.h"

namespace pyprof::parse {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr std::string_view kAutogradNamespace = "torch::autograd::";
// Our own markers nest a few levels (args → tensor → shape); anything deeper is hostile input,
// and the validating walk below recurses once per level.
constexpr int kMaxJsonDepth = 256;

void reset(Marker& m) {
  m.kind = MarkerKind::kUser;
  m.dialect = Dialect::kUser;
  m.name.clear();
  m.overload.clear();
  m.module_type.clear();
  m.legacy_mod.clear();
  m.stack.clear();
  m.args.clear();
  m.trace.clear();
  m.op_id = 0;
  m.seq = -1;
  m.tid = -1;
  m.fwd_tid = -1;
  m.args_dropped = 0;
  m.interned = false;
  m.error.clear();
}

void demote_to_user(std::string_view text, Marker& out) {
  reset(out);
  out.name.assign(text);
}

// ---------------------------------------------------------------------------------------------
// Reused per-thread scratch: decode_marker runs millions of times, so neither the padded copy
// simdjson needs nor its parser may be allocated per message.

class PaddedBuffer {
 public:
  simdjson::padded_string_view load(std::string_view text) {
    const size_t needed = text.size() + simdjson::SIMDJSON_PADDING;
    if (needed > capacity_) {
      const size_t capacity = std::max({needed, capacity_ * 2, size_t{4096}});
      data_ = std::make_unique<char[]>(capacity);
      capacity_ = capacity;
    }
    if (!text.empty()) std::memcpy(data_.get(), text.data(), text.size());
    // simdjson reads (but ignores) the padding; zeroing keeps those reads defined.
    std::memset(data_.get() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    return simdjson::padded_string_view(data_.get(), text.size(), capacity_);
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

error_code validate_value(od::value& value, int depth);

// The args objects already validated on this thread. raw_json() skips an object checking only
// its brackets; an atom such as `tru` inside must still be caught, but a training loop sends
// the same few hundred args objects millions of times, so each distinct text is walked once
// (on its own parser) and then found here: ~8% of parse's time at 1M kernels before.
class ValidatedObjects {
 public:
  error_code check(std::string_view raw) {
    if (seen_.contains(raw)) return simdjson::SUCCESS;
    od::document doc;
    od::value value;
    error_code err = parser_.iterate(padded_.load(raw)).get(doc);
    if (!err) err = doc.get_value().get(value);
    if (!err) err = validate_value(value, 1);
    if (err || bytes_ + raw.size() > kMaxBytes) return err;
    bytes_ += raw.size();
    seen_.insert(std::string(raw));
    return simdjson::SUCCESS;
  }

 private:
  // Past this (a trace whose every call has new arguments) the new ones are walked each time.
  static constexpr size_t kMaxBytes = size_t{16} << 20;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_set<std::string, Hash, std::equal_to<>> seen_;
  size_t bytes_ = 0;
  PaddedBuffer padded_;
  od::parser parser_;
};

struct DecoderState {
  PaddedBuffer padded;
  od::parser parser;
  ValidatedObjects validated;
  std::string converted;  // a legacy marker as JSON
  std::string convert_error;
};

DecoderState& decoder_state() {
  thread_local DecoderState state;
  return state;
}

// ---------------------------------------------------------------------------------------------
// pyprof JSON markers (docs/formats.md §1).

bool is_recoverable_type_error(error_code err) {
  return err == simdjson::INCORRECT_TYPE || err == simdjson::NUMBER_OUT_OF_RANGE;
}

// Walks a value to its end so that simdjson checks every token in it: On-Demand only checks what
// is read, and a skipped value could hide `tru` or `[1,]`, which must not reach `args`.
error_code validate_value(od::value& value, int depth) {
  if (depth > kMaxJsonDepth) return simdjson::DEPTH_ERROR;
  od::json_type type;
  error_code err = value.type().get(type);
  if (err) return err;
  switch (type) {
    case od::json_type::object: {
      od::object object;
      if ((err = value.get_object().get(object))) return err;
      for (auto field_result : object) {
        od::field field;
        std::string_view key;
        if ((err = std::move(field_result).get(field))) return err;
        if ((err = field.unescaped_key().get(key))) return err;
        if ((err = validate_value(field.value(), depth + 1))) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array array;
      if ((err = value.get_array().get(array))) return err;
      for (auto element_result : array) {
        od::value element;
        if ((err = std::move(element_result).get(element))) return err;
        if ((err = validate_value(element, depth + 1))) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      // Stage 1 already checked UTF-8, quotes and control characters; only escapes are left,
      // and unescaping strings that have none would cost a copy each. The string must still be
      // consumed: the iterator checks what follows a value only when it moves past it itself.
      const std::string_view token = value.raw_json_token();
      if (std::memchr(token.data(), '\\', token.size()) == nullptr) {
        od::raw_json_string raw;
        return value.get_raw_json_string().get(raw);
      }
      std::string_view s;
      return value.get_string().get(s);
    }
    case od::json_type::number: {
      od::number n;
      return value.get_number().get(n);
    }
    case od::json_type::boolean: {
      bool b;
      return value.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null;
      if ((err = value.is_null().get(is_null))) return err;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

void demote_invalid_pyprof(std::string_view text, std::string_view why, Marker& out) {
  demote_to_user(text, out);
  add_error(out, "invalid JSON in pyprof marker: ", why);
}

// The pyprof-domain marker, read with simdjson On-Demand: only the keys we know are looked at,
// and `args` is kept as the marker's own bytes (no re-serialization).
void decode_pyprof(std::string_view text, Marker& out) {
  DecoderState& state = decoder_state();
  od::document doc;
  od::object object;
  error_code err = state.parser.iterate(state.padded.load(text)).get(doc);
  if (!err) err = doc.get_object().get(object);
  if (err) {
    if (err == simdjson::INCORRECT_TYPE) {
      demote_to_user(text, out);
      add_error(out, "pyprof marker is not a JSON object");
    } else {
      demote_invalid_pyprof(text, simdjson::error_message(err), out);
    }
    return;
  }

  // String views point into the parser's buffer, valid until the next document.
  std::string_view op, module, type, scope, overload, stack, compiled_kernel, graph, call;
  bool have_op = false, have_module = false, have_settings = false, have_compiled = false,
       have_kernel = false, have_call = false, have_symbols = false;
  int64_t version = 0;     // newer versions only add keys we may ignore, except as documented
  int64_t call_site = -1;  // compiled_kernel: its place among the graph's calls of its name
  bool backward = false, have_backward = false;
  const auto read_string = [&](od::value& value, std::string_view key, std::string_view& dst,
                               bool* present) {
    const error_code e = value.get_string().get(dst);
    if (e == simdjson::SUCCESS) {
      if (present != nullptr) *present = true;
    } else if (e == simdjson::INCORRECT_TYPE) {
      add_error(out, key, " is not a string");
    } else {
      err = e;
    }
  };
  const auto read_int = [&](od::value& value, std::string_view key, int64_t& dst) {
    int64_t v;
    const error_code e = value.get_int64().get(v);
    if (e == simdjson::SUCCESS) {
      dst = v;
    } else if (is_recoverable_type_error(e)) {
      add_error(out, key, " is not a 64-bit integer");
    } else {
      err = e;
    }
  };

  // An object value's text, byte for byte (validated): "args", "settings" and "kernel".
  const auto read_object = [&](od::value& value, std::string_view key, std::string& dst,
                               bool* present) {
    od::json_type type;
    if ((err = value.type().get(type))) return;
    if (type != od::json_type::object) {
      add_error(out, key, " is not an object");
      return;
    }
    od::object object_value;
    std::string_view raw;
    if ((err = value.get_object().get(object_value)) || (err = object_value.raw_json().get(raw))) {
      return;
    }
    while (!raw.empty() && is_json_space(raw.back())) raw.remove_suffix(1);
    if ((err = state.validated.check(raw))) return;
    dst.assign(raw);
    if (present != nullptr) *present = true;
  };

  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if ((err = std::move(field_result).get(field)) || (err = field.unescaped_key().get(key))) {
      break;
    }
    od::value& value = field.value();
    if (key == "op") {
      read_string(value, "\"op\"", op, &have_op);
    } else if (key == "id") {
      read_int(value, "\"id\"", out.op_id);
    } else if (key == "seq") {
      read_int(value, "\"seq\"", out.seq);
    } else if (key == "tid") {
      read_int(value, "\"tid\"", out.tid);
    } else if (key == "scope") {
      read_string(value, "\"scope\"", scope, nullptr);
    } else if (key == "args") {
      read_object(value, "\"args\"", out.args, nullptr);
    } else if (key == "settings") {
      read_object(value, "\"settings\"", out.args, &have_settings);
    } else if (key == "compiled_kernel") {
      read_string(value, "\"compiled_kernel\"", compiled_kernel, &have_compiled);
    } else if (key == "kernel") {
      read_object(value, "\"kernel\"", out.args, &have_kernel);
    } else if (key == "call_site") {
      read_int(value, "\"call_site\"", call_site);
    } else if (key == "backward") {
      const error_code e = value.get_bool().get(backward);
      if (e == simdjson::SUCCESS) {
        have_backward = true;
      } else if (is_recoverable_type_error(e)) {
        add_error(out, "\"backward\"", " is not a boolean");
      } else {
        err = e;
      }
    } else if (key == "compiled_call") {
      read_string(value, "\"compiled_call\"", call, &have_call);
    } else if (key == "symbols") {
      read_object(value, "\"symbols\"", out.args, &have_symbols);
    } else if (key == "fwd_tid") {
      read_int(value, "\"fwd_tid\"", out.fwd_tid);
    } else if (key == "overload") {
      read_string(value, "\"overload\"", overload, nullptr);
    } else if (key == "graph") {
      read_string(value, "\"graph\"", graph, nullptr);
    } else if (key == "stack") {
      read_string(value, "\"stack\"", stack, nullptr);
    } else if (key == "args_dropped") {
      read_int(value, "\"args_dropped\"", out.args_dropped);
    } else if (key == "module") {
      read_string(value, "\"module\"", module, &have_module);
    } else if (key == "type") {
      read_string(value, "\"type\"", type, nullptr);
    } else if (key == "v") {
      read_int(value, "\"v\"", version);
    }
    if (err) break;
  }
  if (!err) {
    // A complete object followed by more text is not one JSON value.
    const char* trailing;
    if (doc.current_location().get(trailing) == simdjson::SUCCESS) err = simdjson::TAPE_ERROR;
  }
  if (err) {
    demote_invalid_pyprof(text, simdjson::error_message(err), out);
    return;
  }
  if (have_settings && !have_op && !have_module) {
    out.dialect = Dialect::kPyprof;
    out.kind = MarkerKind::kSettings;
    out.name.assign("pyprof settings");
    return;
  }
  if (have_compiled && !have_op && !have_module) {
    if (!have_kernel || compiled_kernel.empty()) {
      demote_to_user(text, out);
      add_error(out, have_kernel ? "compiled_kernel mark with an empty kernel name"
                                 : "compiled_kernel mark without a \"kernel\" object");
      return;
    }
    out.dialect = Dialect::kPyprof;
    out.kind = MarkerKind::kCompiledKernel;
    out.name.assign(compiled_kernel);
    out.overload.assign(graph);
    if (call_site >= 0 && have_backward && !graph.empty()) {
      // One of several places its graph calls this name: the place is part of the key records
      // join it by (a record gets its own place in the writer, from Correlation::call_site).
      out.overload += compiled_site_suffix(backward, call_site);
    } else if (call_site >= 0 || have_backward) {
      add_error(out,
                "compiled_kernel mark with a call_site but no backward flag or graph "
                "(or the other way round)");
    }
    return;
  }
  if (have_call && !have_op && !have_module && !have_compiled) {
    if (!have_symbols || call.empty()) {
      demote_to_user(text, out);
      add_error(out, have_symbols ? "compiled_call mark with an empty graph id"
                                  : "compiled_call mark without a \"symbols\" object");
      return;
    }
    out.dialect = Dialect::kPyprof;
    out.kind = MarkerKind::kCompiledCall;
    out.name.assign(call);
    return;
  }
  if (!have_op && !have_module) {
    const std::string errors = std::move(out.error);
    demote_to_user(text, out);
    add_error(out, "pyprof marker without \"op\" or \"module\"");
    if (!errors.empty()) add_error(out, errors);
    return;
  }

  out.dialect = Dialect::kPyprof;
  out.overload.assign(overload);
  out.stack.assign(stack);
  if (have_op) {
    out.name.assign(op);
    out.interned = version >= kInternedMarkerSchemaVersion;
    if (op.starts_with(kEvaluateFunctionPrefix) || scope == "user") {
      // The engine's per-node wrapper is a FUNCTION-scope RecordFunction, yet no op of its own.
      out.kind = MarkerKind::kUser;
    } else if (scope == "backward") {
      out.kind = MarkerKind::kBackwardNode;
    } else if (scope == "function") {
      out.kind = MarkerKind::kOp;
    } else if (is_backward_node_name(op)) {  // "torchscript", "other", or no scope at all
      out.kind = MarkerKind::kBackwardNode;
    } else {
      out.kind = is_namespaced_op(op) ? MarkerKind::kOp : MarkerKind::kUser;
    }
  } else {
    out.kind = MarkerKind::kModule;
    out.name.assign(module);
    out.module_type.assign(type);
  }
}

// ---------------------------------------------------------------------------------------------
// Legacy PyProf Python dicts.

bool looks_like_legacy_pyprof(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\n\r");
  if (start == std::string_view::npos) return false;
  const std::string_view s = text.substr(start);
  return s.starts_with("{'mod'") || s.starts_with("{'traceMarker'") || s.starts_with("{\"mod\"") ||
         s.starts_with("{\"traceMarker\"");
}

// Returns false when the text is no legacy marker (the caller tries the other dialects).
bool decode_legacy(std::string_view text, Marker& out) {
  DecoderState& state = decoder_state();
  const bool pyprof_like = looks_like_legacy_pyprof(text);
  if (!python_literal_to_json(text, state.converted, state.convert_error)) {
    if (!pyprof_like) return false;
    demote_to_user(text, out);
    add_error(out, "invalid legacy PyProf marker: ", state.convert_error);
    return true;
  }

  od::document doc;
  od::object object;
  error_code err = state.parser.iterate(state.padded.load(state.converted)).get(doc);
  if (!err) err = doc.get_object().get(object);
  if (err) return false;  // a list, a number: some other program's text

  std::string_view mod, op, str_repr, args;
  bool have_mod = false, have_op = false, have_str_repr = false, have_trace = false;
  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if ((err = std::move(field_result).get(field)) || (err = field.unescaped_key().get(key))) {
      break;
    }
    od::value& value = field.value();
    if (key == "traceMarker") {
      od::array frames;
      if (value.get_array().get(frames)) {
        add_error(out, "'traceMarker' is not a list");
        continue;
      }
      have_trace = true;
      for (auto frame_result : frames) {
        std::string_view frame;
        if ((err = std::move(frame_result).get_string().get(frame))) break;
        out.trace.emplace_back(frame);
      }
    } else if (key == "mod") {
      have_mod = value.get_string().get(mod) == simdjson::SUCCESS;
    } else if (key == "op") {
      have_op = value.get_string().get(op) == simdjson::SUCCESS;
    } else if (key == "strRepr") {
      have_str_repr = value.get_string().get(str_repr) == simdjson::SUCCESS;
    } else if (key == "args") {
      od::array list;
      if (value.get_array().get(list) || list.raw_json().get(args)) {
        add_error(out, "'args' is not a list");
        args = {};
      }
    }
    if (err) break;
  }
  // The converter wrote valid JSON, so an error here is a value of an unexpected type.
  if (err) {
    add_error(out, "unexpected value in legacy PyProf marker: ", simdjson::error_message(err));
  }

  if (have_trace) {
    out.kind = MarkerKind::kTrace;
  } else if (have_mod && have_op) {
    out.kind = MarkerKind::kOp;
    out.name.assign(op);
    out.legacy_mod.assign(mod);
    out.args.assign(args);
  } else if (have_mod && have_str_repr) {
    out.kind = MarkerKind::kModule;
    out.name.assign(mod);
    out.module_type.assign(str_repr);
  } else if (pyprof_like) {
    const std::string errors = std::move(out.error);
    demote_to_user(text, out);
    add_error(out, "legacy PyProf marker without 'op', 'strRepr' or 'traceMarker'");
    if (!errors.empty()) add_error(out, errors);
    return true;
  } else {
    return false;
  }
  out.dialect = Dialect::kLegacyPyprof;
  return true;
}

void decode(std::string_view text, MarkerDomain domain, Marker& out) {
  reset(out);
  if (domain == MarkerDomain::kPyprof) {
    decode_pyprof(text, out);
    return;
  }
  if (domain == MarkerDomain::kOther) {
    demote_to_user(text, out);
    return;
  }
  const size_t start = text.find_first_not_of(" \t\n\r");
  if (start != std::string_view::npos && text[start] == '{') {
    if (decode_legacy(text, out)) return;
    reset(out);
  }
  if (decode_emit_nvtx(text, out)) return;
  demote_to_user(text, out);
}

}  // namespace

void decode_marker(std::string_view text, MarkerDomain domain, Marker& out) {
  try {
    decode(text, domain, out);
  } catch (...) {
    // Out of memory on a huge message, most likely: keep what can be kept, never throw.
    reset(out);
    try {
      out.name.assign(text);
      out.error.assign("could not decode marker (out of memory)");
    } catch (...) {
      out.name.clear();
    }
  }
}

namespace {

// A JSON integer at text[at...]: an optional '-', then 0 or digits without a leading zero; at
// most 18 digits, so that it fits int64_t. Moves `at` past it.
bool read_json_int(std::string_view text, size_t& at, int64_t& out) {
  const bool negative = at < text.size() && text[at] == '-';
  size_t i = at + (negative ? 1 : 0);
  const size_t first = i;
  int64_t value = 0;
  while (i < text.size() && is_digit(text[i]) && i - first < 19) {
    value = value * 10 + (text[i] - '0');
    ++i;
  }
  const size_t digits = i - first;
  if (digits == 0 || digits > 18 || (digits > 1 && text[first] == '0')) return false;
  if (i < text.size() && is_digit(text[i])) return false;
  out = negative ? -value : value;
  at = i;
  return true;
}

}  // namespace

std::optional<PyprofIdDigits> find_pyprof_id_digits(std::string_view text) {
  constexpr std::string_view kHead = R"({"v":1,"op":")";
  constexpr std::string_view kId = R"(","id":)";
  constexpr std::string_view kSeq = R"(,"seq":)";
  if (!text.starts_with(kHead)) return std::nullopt;
  // The name ends at the first quote; an escape could hide one, so names with any are left out.
  const size_t name_end = text.find_first_of("\\\"", kHead.size());
  if (name_end == std::string_view::npos || text[name_end] != '"' ||
      text.compare(name_end, kId.size(), kId) != 0) {
    return std::nullopt;
  }
  PyprofIdDigits out;
  size_t at = name_end + kId.size();
  out.id_begin = at;
  if (!read_json_int(text, at, out.id) || text.compare(at, kSeq.size(), kSeq) != 0) {
    return std::nullopt;
  }
  at += kSeq.size();
  if (!read_json_int(text, at, out.seq) || at >= text.size() ||
      (text[at] != ',' && text[at] != '}')) {
    return std::nullopt;
  }
  out.seq_end = at;
  return out;
}

bool is_backward_node_name(std::string_view name) {
  if (name.starts_with(kAutogradNamespace)) return name.size() > kAutogradNamespace.size();
  size_t end = name.size();
  while (end > 0 && is_digit(name[end - 1])) --end;
  constexpr std::string_view kBackward = "Backward";
  if (end <= kBackward.size() ||
      name.substr(end - kBackward.size(), kBackward.size()) != kBackward) {
    return false;
  }
  const std::string_view prefix = name.substr(0, end - kBackward.size());
  return std::all_of(prefix.begin(), prefix.end(), is_ident_char);
}

void add_error(Marker& out, std::string_view what, std::string_view detail) {
  if (!out.error.empty()) out.error += "; ";
  out.error += what;
  out.error += detail;
}

bool is_namespaced_op(std::string_view s, size_t max_namespaces) {
  size_t namespaces = 0;
  size_t i = 0;
  while (true) {
    const size_t start = i;
    if (i >= s.size()) return false;
    const char first = s[i];
    if (!is_alpha(first) && first != '_') return false;
    ++i;
    while (i < s.size() && (is_ident_char(s[i]) || s[i] == '.')) ++i;
    if (i == s.size()) return namespaces >= 1 && namespaces <= max_namespaces;
    if (s.compare(i, 2, "::") != 0) return false;
    // Only the last segment (the op name) may hold dots or start in upper case.
    if (!is_lower(first) && first != '_') return false;
    if (s.substr(start, i - start).find('.') != std::string_view::npos) return false;
    ++namespaces;
    i += 2;
  }
}

}  // namespace pyprof::parse
