#include "op_marker.h"

#include <charconv>

#include "common/marker_schema.h"
#include "marker_key.h"

namespace pyprof {

std::string_view scope_name(at::RecordScope scope) {
  switch (scope) {
    case at::RecordScope::FUNCTION:
      return "function";
    case at::RecordScope::BACKWARD_FUNCTION:
      return "backward";
    case at::RecordScope::USER_SCOPE:
      return "user";
    case at::RecordScope::TORCHSCRIPT_FUNCTION:
      return "torchscript";
    default:
      return "other";
  }
}

namespace {

std::string escaped(std::string_view text) {
  std::string out;
  JsonWriter::append_escaped(out, text, JsonWriter::kDefaultMaxString);
  return out;
}

}  // namespace

OpInfo make_op_info(std::string_view name, std::string_view overload,
                    const c10::FunctionSchema* schema) {
  OpInfo info;
  info.name = name;
  info.overload = overload;
  info.prefix = "\"op\":\"";
  JsonWriter::append_escaped(info.prefix, name, JsonWriter::kDefaultMaxString);
  info.prefix += '"';
  if (!overload.empty()) {
    info.prefix += ",\"overload\":\"";
    JsonWriter::append_escaped(info.prefix, overload, JsonWriter::kDefaultMaxString);
    info.prefix += '"';
  }
  if (schema != nullptr) {
    for (const auto& arg : schema->arguments()) {
      info.arg_keys.push_back(escaped(arg.name()));
      // real_type(): dtype arguments are typed "int" in the boxed schema but ScalarType here.
      info.arg_kinds.push_back(arg_kind_of(arg.real_type()));
    }
  }
  return info;
}

std::string_view build_op_message(std::string& buffer, const OpInfo& info, const OpInstance& op,
                                  c10::ArrayRef<const c10::IValue> inputs,
                                  const EncodeLimits& limits, MarkerForm form) {
  static_assert(kMarkerSchemaVersion < 10 && kInternedMarkerSchemaVersion < 10);
  constexpr char kTextHead[] = {'{', '"', 'v', '"', ':', '0' + kMarkerSchemaVersion, ',', '\0'};
  constexpr char kInternedHead[] = {'{', '"', 'v', '"', ':', '0' + kInternedMarkerSchemaVersion,
                                    ',', '\0'};
  JsonWriter w(buffer, JsonWriter::kDefaultMaxString, /*start=*/0);
  w.raw(form == MarkerForm::kText ? kTextHead : kInternedHead);
  w.raw(info.prefix);
  w.resume_object();
  if (form == MarkerForm::kText) {
    w.raw_key("id");
    w.unsigned_integer(op.id);
    w.raw_key("seq");
    w.integer(op.seq);
  }
  w.raw_key("tid");
  w.unsigned_integer(op.tid);
  if (op.scope == at::RecordScope::BACKWARD_FUNCTION) {
    w.raw_key("fwd_tid");
    w.unsigned_integer(op.fwd_tid);
  }
  w.raw_key("scope");
  w.trusted_string(scope_name(op.scope));
  if (!op.call_site.empty()) {
    w.raw_key("stack");
    w.string(op.call_site);
  }

  w.raw_key("args");
  w.begin_object();
  size_t args_dropped = 0;
  char positional[24];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const JsonWriter::Mark before = w.mark();
    const bool named = i < info.arg_keys.size();
    std::string_view key;
    if (named) {
      key = info.arg_keys[i];
    } else {
      auto res = std::to_chars(positional, positional + sizeof positional, uint64_t{i});
      key = std::string_view(positional, res.ptr - positional);
    }
    w.raw_key(key);
    try {
      encode_ivalue(w, inputs[i], named ? info.arg_kinds[i] : ArgKind::kGeneric, limits);
    } catch (...) {
      // An argument whose metadata cannot be read (exotic tensor subclasses) must not lose the
      // whole op: say so in its place.
      w.rewind(before);
      w.raw_key(key);
      w.string("<unreadable>");
    }
    if (w.size() > kMaxMessageBytes) {
      w.rewind(before);
      args_dropped = inputs.size() - i;
      break;
    }
  }
  w.end_object();
  if (args_dropped > 0) {
    w.raw_key("args_dropped");
    w.unsigned_integer(args_dropped);
  }
  w.end_object();
  return w.terminated_view();
}

bool write_marker_key(MarkerKeyWriter& key, const OpInfo& info, const OpInstance& op,
                      c10::ArrayRef<const c10::IValue> inputs) {
  key.u64(reinterpret_cast<uintptr_t>(&info));
  key.u8(static_cast<uint8_t>(op.scope));
  key.u64(op.tid);
  key.u64(op.scope == at::RecordScope::BACKWARD_FUNCTION ? op.fwd_tid : 0);
  key.text(op.call_site);
  return key.inputs(inputs);
}

}  // namespace pyprof
