#include "parse/kineto_reader.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "common/dtypes.h"
#include "common/json_writer.h"
#include "common/kernel_names.h"
#include "parse/ascii.h"
#include "parse/kineto_event_reader.h"
#include "parse/memory_events.h"
#include "parse/record_writer.h"

namespace pyprof::parse {

namespace {

// A field's key as written, without unescaping it into the parser's buffer: the keys wanted
// have no escapes, and a key with one never equals them (it is cut at its first quote).
std::string_view raw_key(od::field& field) {
  const char* begin = field.key().raw();
  const char* end = begin;
  while (*end != '"') ++end;
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

error_code read_int_list(od::array array, std::vector<int64_t>& out, bool& ok) {
  out.clear();
  for (auto item_result : array) {
    od::value item;
    if (error_code e = std::move(item_result).get(item)) return e;
    int64_t v;
    if (item.get_int64().get(v) != simdjson::SUCCESS) {
      ok = false;
      continue;
    }
    out.push_back(v);
  }
  return simdjson::SUCCESS;
}

error_code read_dims(od::value value, std::vector<DimsEntry>& out, size_t& n, bool& ok) {
  n = 0;
  od::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    ok = false;
    return simdjson::SUCCESS;
  }
  for (auto entry_result : array) {
    od::value entry;
    if (error_code e = std::move(entry_result).get(entry)) return e;
    if (n == out.size()) out.emplace_back();
    DimsEntry& d = out[n++];
    d.ints.clear();
    d.n_lists = 0;
    d.kind = DimsEntry::Kind::kOther;
    od::array items;
    if (entry.get_array().get(items) != simdjson::SUCCESS) continue;
    d.kind = DimsEntry::Kind::kInts;
    for (auto item_result : items) {
      od::value item;
      if (error_code e = std::move(item_result).get(item)) return e;
      od::json_type type;
      if (error_code e = item.type().get(type)) return e;
      if (type == od::json_type::array) {
        d.kind = DimsEntry::Kind::kLists;
        if (d.n_lists == d.lists.size()) d.lists.emplace_back();
        od::array inner;
        if (error_code e = item.get_array().get(inner)) return e;
        if (error_code e = read_int_list(inner, d.lists[d.n_lists++], ok)) return e;
      } else {
        int64_t v;
        if (item.get_int64().get(v) == simdjson::SUCCESS) {
          d.ints.push_back(v);
        } else {
          ok = false;
        }
      }
    }
  }
  return simdjson::SUCCESS;
}

error_code read_strings(od::value value, std::vector<std::string_view>& out, bool& ok) {
  out.clear();
  od::array array;
  if (value.get_array().get(array) != simdjson::SUCCESS) {
    ok = false;
    return simdjson::SUCCESS;
  }
  for (auto item_result : array) {
    od::value item;
    if (error_code e = std::move(item_result).get(item)) return e;
    std::string_view s;
    if (item.get_string().get(s) != simdjson::SUCCESS) {
      ok = false;
      s = {};
    }
    out.push_back(s);
  }
  return simdjson::SUCCESS;
}

// A "Concrete Inputs" value: "True"/"False", an int, a float ("0.", "1e-05", "inf"), else the
// text as a string.
void write_scalar(JsonWriter& w, std::string_view text) {
  text = trim(text);
  if (text == "True" || text == "False") {
    w.boolean(text == "True");
    return;
  }
  const char* first = text.data();
  const char* last = first + text.size();
  int64_t i;
  auto [p, ec] = std::from_chars(first, last, i);
  if (ec == std::errc() && p == last) {
    w.integer(i);
    return;
  }
  double d;
  auto [q, ec2] = std::from_chars(first, last, d);
  if (!text.empty() && ec2 == std::errc() && q == last) {
    if (std::isfinite(d) && std::fabs(d) >= 9.2e18) {
      // Past 64-bit integers the shortest form can be a bare integer ("18446744073709551616")
      // that JSON readers such as simdjson refuse: write the exponent.
      char buffer[32];
      auto [end, ec3] =
          std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
      if (ec3 == std::errc()) {
        w.raw_value(std::string_view(buffer, static_cast<size_t>(end - buffer)));
        return;
      }
    }
    w.number(d);
    return;
  }
  w.string(text);
}

// "[1, 1]" -> [1,1]; anything that is not a bracketed list of numbers stays a string.
void write_scalar_list(JsonWriter& w, std::string_view text) {
  std::string_view t = trim(text);
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') {
    w.string(text);
    return;
  }
  t = trim(t.substr(1, t.size() - 2));
  w.begin_array();
  while (!t.empty()) {
    size_t comma = t.find(',');
    write_scalar(w, t.substr(0, comma));
    if (comma == std::string_view::npos) break;
    t = trim(t.substr(comma + 1));
  }
  w.end_array();
}

void write_ints(JsonWriter& w, const std::vector<int64_t>& v) {
  w.begin_array();
  for (int64_t x : v) w.integer(x);
  w.end_array();
}

void write_tensor(JsonWriter& w, const std::vector<int64_t>& shape, std::string_view dtype,
                  const std::vector<int64_t>* stride) {
  w.begin_object();
  w.raw_key("shape");
  write_ints(w, shape);
  if (!dtype.empty()) {
    w.raw_key("dtype");
    w.string(dtype);
  }
  if (stride != nullptr && stride->size() == shape.size()) {
    w.raw_key("stride");
    write_ints(w, *stride);
  }
  w.end_object();
}

bool is_non_tensor_type(std::string_view type) {
  return type.empty() || type == "Scalar" || type == "ScalarList" || type == "TensorList" ||
         type == "GenericList";
}

// The named args of a collective (docs/formats.md §4): beside the positional inputs, so that
// models/collectives can cost record_param_comms without record_shapes.
void write_comm_meta(const CommMeta& c, JsonWriter& w) {
  if (!c.collective.empty()) {
    w.key("collective");
    w.string(c.collective);
  }
  const std::pair<const char*, int64_t> counts[] = {
      {"in_nelems", c.in_nelems}, {"out_nelems", c.out_nelems}, {"group_size", c.group_size}};
  for (const auto& [key, value] : counts) {
    if (value < 0) continue;
    w.key(key);
    w.integer(value);
  }
  if (!c.dtype.empty()) {
    std::string_view dtype = KinetoReader::dtype_of_scalar_type_name(c.dtype);
    w.key("dtype");
    w.string(dtype.empty() ? c.dtype : dtype);
  }
  if (!c.pg_name.empty()) {
    w.key("pg_name");
    w.string(c.pg_name);
  }
  if (!c.pg_desc.empty()) {
    w.key("pg_desc");
    w.string(c.pg_desc);
  }
}

// Writes the args object; counts inputs whose type names no known dtype in `unknown_types`.
void write_args(const InputLists& in, JsonWriter& w, int64_t& unknown_types,
                const CommMeta* comm = nullptr) {
  const size_t n = std::max(in.types.size(), in.n_dims);
  w.begin_object();
  char key[24];
  for (size_t i = 0; i < n; ++i) {
    auto [end, ec] = std::to_chars(key, key + sizeof key, i);
    w.key(std::string_view(key, static_cast<size_t>(end - key)));
    const std::string_view type = i < in.types.size() ? in.types[i] : std::string_view{};
    const DimsEntry* dims = i < in.n_dims ? &in.dims[i] : nullptr;
    const DimsEntry* strides = i < in.n_strides ? &in.strides[i] : nullptr;
    const bool has_concrete = i < in.concrete.size() && !in.concrete[i].empty();
    const std::string_view concrete = has_concrete ? in.concrete[i] : std::string_view{};
    if (!is_non_tensor_type(type) ||
        (!in.has_types && dims && dims->kind == DimsEntry::Kind::kInts && !dims->ints.empty())) {
      std::string_view dtype = KinetoReader::dtype_of_input_type(type);
      if (dtype.empty() && !type.empty()) ++unknown_types;
      static const std::vector<int64_t> kNoShape;
      const std::vector<int64_t>& shape =
          dims && dims->kind == DimsEntry::Kind::kInts ? dims->ints : kNoShape;
      write_tensor(w, shape, dtype,
                   strides && strides->kind == DimsEntry::Kind::kInts ? &strides->ints : nullptr);
    } else if (type == "TensorList" && dims && dims->kind != DimsEntry::Kind::kOther) {
      w.begin_array();
      const size_t count = dims->kind == DimsEntry::Kind::kLists ? dims->n_lists : 0;
      for (size_t k = 0; k < count; ++k) {
        const std::vector<int64_t>* stride =
            strides && strides->kind == DimsEntry::Kind::kLists && k < strides->n_lists
                ? &strides->lists[k]
                : nullptr;
        write_tensor(w, dims->lists[k], "", stride);
      }
      w.end_array();
    } else if (type == "ScalarList") {
      if (has_concrete) {
        write_scalar_list(w, concrete);
      } else {
        w.trusted_string("<ScalarList>");
      }
    } else if (has_concrete) {
      write_scalar(w, concrete);
    } else if (type == "Scalar") {
      w.trusted_string("<Scalar>");  // a scalar whose value the trace does not give
    } else if (type.empty()) {
      w.null();  // None, or a value Kineto does not record (strings, devices)
    } else {     // a GenericList, or a TensorList without its shapes
      w.trusted_string(type == "GenericList" ? "<GenericList>" : "<TensorList>");
    }
  }
  if (comm) write_comm_meta(*comm, w);
  w.end_object();
}

error_code read_input_list(std::string_view key, od::value value, InputLists& in, bool& ok) {
  if (is(key, "Input Dims")) {
    in.has_dims = true;
    return read_dims(value, in.dims, in.n_dims, ok);
  }
  if (is(key, "Input type")) {
    in.has_types = true;
    return read_strings(value, in.types, ok);
  }
  if (is(key, "Input Strides")) return read_dims(value, in.strides, in.n_strides, ok);
  if (is(key, "Concrete Inputs")) {
    in.has_concrete = true;
    return read_strings(value, in.concrete, ok);
  }
  return simdjson::SUCCESS;
}

error_code read_id(od::value value, IdValue& out) {
  out = IdValue{};
  od::json_type type;
  if (error_code e = value.type().get(type)) return e;
  if (type == od::json_type::number) {
    int64_t v;
    if (value.get_int64().get(v) == simdjson::SUCCESS) {
      out.present = out.is_number = true;
      out.number = v;
      return simdjson::SUCCESS;
    }
    double d;
    if (error_code e = value.get_double().get(d)) return e;
    out.present = true;
    out.text = "non-integer";
    return simdjson::SUCCESS;
  }
  if (type == od::json_type::string) {
    if (error_code e = value.get_string().get(out.text)) return e;
    out.present = true;
  }
  return simdjson::SUCCESS;
}

}  // namespace

// ---- static helpers -----------------------------------------------------------------------------

std::string_view KinetoReader::dtype_of_scalar_type_name(std::string_view name) {
  // c10::toString(ScalarType): record_param_comms' "dtype" ("Float", "BFloat16").
  return dtype_of_aten_name(name);
}

std::string_view KinetoReader::dtype_of_input_type(std::string_view type) {
  // caffe2::TypeMeta names (Kineto's "Input type"), looked up once per tensor input: hashed
  // from the one table (common/dtypes.h).
  static const std::unordered_map<std::string_view, std::string_view> kDtypes = [] {
    std::unordered_map<std::string_view, std::string_view> map;
    for (const DtypeSpelling& s : kCppTypeNames) map.emplace(s.spelling, s.name);
    return map;
  }();
  auto it = kDtypes.find(type);
  return it == kDtypes.end() ? std::string_view{} : it->second;
}

bool KinetoReader::microseconds_to_ns(std::string_view text, int64_t& ns) {
  text = trim(text);
  if (text.empty()) return false;
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  const size_t int_start = i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const size_t int_end = i;
  size_t frac_start = i, frac_end = i;
  if (i < text.size() && text[i] == '.') {
    frac_start = ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    frac_end = i;
  }
  if (int_end == int_start && frac_end == frac_start) return false;
  if (i != text.size()) {  // an exponent or anything else: through a double
    double us;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), us);
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(us)) return false;
    const double v = std::round(us * 1000.0);
    if (!(std::fabs(v) < 9.2e18)) return false;
    ns = static_cast<int64_t>(v);
    return true;
  }
  int64_t whole = 0;
  for (size_t k = int_start; k < int_end; ++k) {
    if (__builtin_mul_overflow(whole, 10, &whole) ||
        __builtin_add_overflow(whole, text[k] - '0', &whole)) {
      return false;
    }
  }
  int64_t frac = 0;
  size_t digits = 0;
  for (size_t k = frac_start; k < frac_end && digits < 3; ++k, ++digits) {
    frac = frac * 10 + (text[k] - '0');
  }
  for (; digits < 3; ++digits) frac *= 10;
  // Beyond nanoseconds: round half up on the fourth decimal.
  if (frac_end - frac_start > 3 && text[frac_start + 3] >= '5') ++frac;
  int64_t out;
  if (__builtin_mul_overflow(whole, 1000, &out) || __builtin_add_overflow(out, frac, &out)) {
    return false;
  }
  ns = negative ? -out : out;
  return true;
}

std::string KinetoReader::positional_args(std::string_view args_json) {
  simdjson::padded_string padded(args_json);
  od::parser parser;
  od::document doc;
  od::object object;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(object)) return {};
  InputLists in;
  bool ok = true;
  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return {};
    if (read_input_list(key, field.value(), in, ok)) return {};
  }
  if (!in.has_types && !in.has_dims) return {};
  std::string out;
  {
    JsonWriter w(out, size_t{1} << 20);
    int64_t unknown = 0;
    write_args(in, w, unknown);
  }
  return out;
}

void KinetoReader::EventReader::add_memory_event(const Event& e, std::string_view json,
                                                 int64_t offset) {
  int64_t start = 0;
  if (e.ts.empty() || !microseconds_to_ns(e.ts, start)) {
    skip(e.ts.empty() ? "no \"ts\"" : "\"ts\" is not a finite number of microseconds", json,
         offset);
    return;
  }
  std::string why;
  if (!memory_events_.add(json, start, dense_id(e.pid), dense_id(e.tid), trace_, why)) {
    skip(why, json, offset);
    return;
  }
  count("[memory] instant");
}

void KinetoReader::EventReader::count(std::string_view category) {
  auto it = category_counts_.find(category);
  if (it == category_counts_.end()) {
    category_counts_.emplace(std::string(category.substr(0, 64)), 1);
  } else {
    ++it->second;
  }
}

void KinetoReader::EventReader::skip(std::string_view why, std::string_view json, int64_t offset) {
  std::string_view head = json.substr(0, 100);
  trace_.warn("trace events skipped", std::string(why) + " (byte " + std::to_string(offset) +
                                          "): " + std::string(head) +
                                          (json.size() > head.size() ? "..." : ""));
  ++trace_.stats.rows_skipped;
}

uint32_t KinetoReader::EventReader::dense_id(const IdValue& v) {
  if (!v.present) return 0;
  uint64_t key;
  if (v.is_number) {
    if (v.number >= 0 && v.number < 0x80000000LL) return static_cast<uint32_t>(v.number);
    key = static_cast<uint64_t>(v.number);
  } else {
    key = std::hash<std::string_view>{}(v.text) | (uint64_t{1} << 63);
  }
  auto [it, added] = folded_ids_.emplace(key, next_folded_id_);
  if (added) ++next_folded_id_;
  return it->second;
}

uint32_t KinetoReader::EventReader::intern_exported_name(std::string_view name) {
  // A name pyprof already cut to kMaxNameBytes ends "...(+N bytes)": kept as it is, not cut
  // again, so that an exported trace reads back the same.
  return name.size() <= kMaxNameBytes + 32 ? trace_.pool.intern(name) : intern_name(name);
}

uint32_t KinetoReader::EventReader::intern_name(std::string_view name) {
  if (name.size() > kMaxNameBytes) {
    trace_.warn("names cut to 4096 bytes", std::string(name.substr(0, 60)) + "... (" +
                                               std::to_string(name.size()) + " bytes)");
  }
  return intern_bounded(trace_, name);
}

TextRef KinetoReader::EventReader::store_args(std::string_view json) {
  auto& blocks = reader_.args_blocks_;
  if (blocks.empty() || blocks.back().size() + json.size() > blocks.back().capacity()) {
    blocks.emplace_back();
    blocks.back().reserve(std::max(kArgsBlockBytes, json.size()));
  }
  std::string& block = blocks.back();
  TextRef ref;
  ref.where = TextRef::Where::kRow;
  ref.id = static_cast<int64_t>((uint64_t{blocks.size() - 1} << 32) | block.size());
  block.append(json);
  return ref;
}

error_code KinetoReader::EventReader::read_args(od::object args, Event& e) {
  for (auto field_result : args) {
    od::field field;
    if (error_code err = std::move(field_result).get(field)) return err;
    const std::string_view key = raw_key(field);
    od::value value = field.value();
    // Keys are tested by length first: an event has a dozen, and most are not wanted.
    int64_t* target = nullptr;
    std::string_view* text_target = nullptr;
    bool xyz = false, input_list = false;
    switch (key.size()) {
      case 4:
        xyz = is(key, "grid");
        if (is(key, "size")) {
          std::string_view text;
          int64_t v;
          if (value.get_int64().get(v) == simdjson::SUCCESS) {
            e.size = v;
          } else if (value.get_string().get(text) == simdjson::SUCCESS) {
            std::from_chars(text.data(), text.data() + text.size(), e.size);
          }
          continue;
        }
        break;
      case 5:
        if (is(key, "bytes")) target = &e.bytes;
        xyz = is(key, "block");
        if (is(key, "dtype")) text_target = &e.comm.dtype;
        break;
      case 6:
        if (is(key, "device")) target = &e.device;
        if (is(key, "kernel")) text_target = &e.kernel;
        if (is(key, "stream")) target = &e.stream;
        if (is(key, "pyprof")) {
          od::object object;
          if (value.get_object().get(object) != simdjson::SUCCESS) {
            e.pyprof = "null";  // not an object: warned about where it is read
            continue;
          }
          if (error_code err = object.raw_json().get(e.pyprof)) return err;
          continue;
        }
        break;
      case 7:
        if (is(key, "context")) target = &e.context;
        break;
      case 9:
        if (is(key, "Python id")) target = &e.python_id;
        break;
      case 10:
        input_list = is(key, "Input Dims") || is(key, "Input type");
        if (is(key, "Group size")) target = &e.comm.group_size;
        break;
      case 11:
        if (is(key, "External id")) target = &e.external_id;
        if (is(key, "correlation")) target = &e.correlation;
        break;
      case 13:
        if (is(key, "Fwd thread id")) target = &e.fwd_tid;
        if (is(key, "shared memory")) target = &e.shared;
        if (is(key, "In msg nelems")) target = &e.comm.in_nelems;
        input_list = is(key, "Input Strides");
        break;
      case 14:
        if (is(key, "Out msg nelems")) target = &e.comm.out_nelems;
        break;
      case 15:
        if (is(key, "Sequence number")) target = &e.seq;
        if (is(key, "Collective name")) text_target = &e.comm.collective;
        input_list = is(key, "Concrete Inputs");
        break;
      case 16:
        if (is(key, "Python parent id")) target = &e.python_parent;
        break;
      case 18:
        if (is(key, "Process Group Name")) text_target = &e.comm.pg_name;
        break;
      case 25:
        if (is(key, "Process Group Description")) text_target = &e.comm.pg_desc;
        break;
      case 20:
        if (is(key, "registers per thread")) target = &e.registers;
        break;
      default:
        break;
    }
    if (xyz) {
      e.has_grid = true;
      int32_t* out = is(key, "grid") ? e.grid : e.block;
      od::array array;
      if (value.get_array().get(array) != simdjson::SUCCESS) continue;
      int i = 0;
      for (auto item_result : array) {
        od::value item;
        if (error_code err = std::move(item_result).get(item)) return err;
        int64_t v;
        if (item.get_int64().get(v) == simdjson::SUCCESS && i < 3 && v >= 0 && v <= INT32_MAX) {
          out[i] = static_cast<int32_t>(v);
        }
        ++i;
      }
      continue;
    }
    if (input_list) {
      e.has_args_lists = true;
      if (error_code err = read_input_list(key, value, inputs_, e.args_ok)) return err;
      continue;
    }
    if (text_target) {
      std::string_view text;
      if (value.get_string().get(text) == simdjson::SUCCESS) *text_target = text;
      continue;
    }
    if (target == nullptr) continue;
    int64_t v;
    if (value.get_int64().get(v) == simdjson::SUCCESS) *target = v;
  }
  return simdjson::SUCCESS;
}

namespace {

// "ts" / "dur": the number's text (converted exactly later), or "?" for a value that is not a
// number; quoted numbers, which some writers emit, are read as their text.
error_code read_time(od::value value, std::string_view& out) {
  const std::string_view token = value.raw_json_token();
  od::json_type type;
  if (error_code err = value.type().get(type)) return err;
  if (type == od::json_type::number) {
    double ignored;
    if (error_code err = value.get_double().get(ignored)) return err;
    out = token;
  } else if (type == od::json_type::string) {
    std::string_view s;
    if (error_code err = value.get_string().get(s)) return err;
    out = s.empty() ? std::string_view("?") : s;
  } else {
    out = "?";
  }
  return simdjson::SUCCESS;
}

std::string why_invalid(std::string_view json, error_code err) {
  // Python's json module writes NaN and Infinity, which JSON does not have: say so.
  if (json.find("NaN") != std::string_view::npos ||
      json.find("Infinity") != std::string_view::npos) {
    return "a NaN or Infinity number (not JSON; Python's json module writes them)";
  }
  return std::string("invalid JSON: ") + simdjson::error_message(err);
}

}  // namespace

error_code KinetoReader::EventReader::read_event(od::object object, Event& e) {
  for (auto field_result : object) {
    od::field field;
    if (error_code err = std::move(field_result).get(field)) return err;
    const std::string_view key = raw_key(field);
    od::value value = field.value();
    switch (key.size()) {
      case 2:
        if (is(key, "ph")) {
          if (value.get_string().get(e.ph) != simdjson::SUCCESS) e.ph = {};
        } else if (is(key, "ts")) {
          if (error_code err = read_time(value, e.ts)) return err;
        } else if (is(key, "id")) {
          if (error_code err = read_id(value, e.id)) return err;
        }
        break;
      case 3:
        if (is(key, "cat")) {
          if (value.get_string().get(e.cat) != simdjson::SUCCESS) e.cat = {};
        } else if (is(key, "pid")) {
          if (error_code err = read_id(value, e.pid)) return err;
        } else if (is(key, "tid")) {
          if (error_code err = read_id(value, e.tid)) return err;
        } else if (is(key, "dur")) {
          if (error_code err = read_time(value, e.dur)) return err;
        }
        break;
      case 4:
        if (is(key, "name")) {
          if (value.get_string().get(e.name) != simdjson::SUCCESS) e.name = {};
        } else if (is(key, "args")) {
          od::object args;
          if (value.get_object().get(args) == simdjson::SUCCESS) {
            if (error_code err = read_args(args, e)) return err;
          }
        }
        break;
      default:
        break;
    }
  }
  return simdjson::SUCCESS;
}

namespace {

// The value of an event's "cat" key when it is a plain string, read without parsing the event;
// empty when not found. A "cat" key with its colon cannot occur inside a string (its quotes
// would be escaped), so this finds the key (nested objects of Kineto events have none).
std::string_view quick_category(std::string_view json) {
  size_t at = 0;
  while ((at = json.find("\"cat\"", at)) != std::string_view::npos) {
    size_t p = at + 5;
    while (p < json.size() && (json[p] == ' ' || json[p] == '\n' || json[p] == '\t')) ++p;
    if (p < json.size() && json[p] == ':') {
      ++p;
      while (p < json.size() && (json[p] == ' ' || json[p] == '\n' || json[p] == '\t')) ++p;
      if (p >= json.size() || json[p] != '"') return {};
      const size_t end = json.find_first_of("\"\\", p + 1);
      if (end == std::string_view::npos || json[end] != '"') return {};
      return json.substr(p + 1, end - p - 1);
    }
    at = p;
  }
  return {};
}

}  // namespace

int KinetoReader::EventReader::drop_unparsed(std::string_view json) const {
  const std::string_view cat = quick_category(json);
  return is(cat, "ac2g") ? 0 : is(cat, "async_cpu_to_gpu") ? 1 : -1;
}

void KinetoReader::EventReader::on_event(std::string_view json, int64_t offset) {
  od::document doc;
  od::object object;
  error_code err = parser_.iterate(json.data(), json.size(), json.size() + kJsonPadding).get(doc);
  if (!err) err = doc.get_object().get(object);
  if (err) {
    skip(err == simdjson::INCORRECT_TYPE ? std::string("not an event object")
                                         : why_invalid(json, err),
         json, offset);
    return;
  }
  Event e;
  inputs_.clear();
  // The scanner cut the event at its closing brace: nothing can follow it.
  if ((err = read_event(object, e))) {
    skip(why_invalid(json, err), json, offset);
    return;
  }

  if ((is(e.ph, "i") || is(e.ph, "I")) && KinetoMemoryEvents::is_memory_event(e.name)) {
    add_memory_event(e, json, offset);
    return;
  }
  if (is(e.ph, "M") || is(e.ph, "i") || is(e.ph, "I")) {  // names, sort order, instants
    count(is(e.ph, "M") ? "metadata (M)" : "instant (i)");
    return;
  }
  if (is(e.ph, "s") || is(e.ph, "f") || is(e.ph, "t")) {
    if (is(e.cat, "fwdbwd")) {
      add_flow_point(e, is(e.ph, "s"));
      count("fwdbwd flow");
    } else {
      count(std::string(e.cat.empty() ? "flow" : e.cat) + " flow");
    }
    return;
  }
  if (e.ph != "X") {
    count(e.ph.empty() ? std::string("no ph") : "ph " + std::string(e.ph.substr(0, 8)));
    return;
  }
  int64_t start = 0, duration = 0;
  if (e.ts.empty() || !microseconds_to_ns(e.ts, start)) {
    skip(e.ts.empty() ? "no \"ts\"" : "\"ts\" is not a finite number of microseconds", json,
         offset);
    return;
  }
  if (!e.dur.empty() && !microseconds_to_ns(e.dur, duration)) {
    skip("\"dur\" is not a finite number of microseconds", json, offset);
    return;
  }
  if (e.dur.empty()) {  // kept (its start, launch and op are known), but said
    duration = 0;
    trace_.warn("events without \"dur\"",
                fmt::format("\"{}\" ({}) at ts {}: kept with duration 0", e.name.substr(0, 60),
                            e.cat.substr(0, 32), e.ts));
  }
  if (start < 0) ++negative_timestamps_;
  int64_t end;
  if (__builtin_add_overflow(start, duration, &end)) {
    skip("\"ts\" + \"dur\" overflows", json, offset);
    return;
  }

  const std::string_view cat = e.cat;
  if (!e.pyprof.empty() &&
      (is(cat, "cpu_op") || is(cat, "user_annotation") || is(cat, "python_function"))) {
    add_pyprof_range(e, start, end);
    count(cat);
    return;
  }
  if (is(cat, "cpu_op") || is(cat, "Operator") || is(cat, "operator")) {
    MarkerKind kind = MarkerKind::kOp;
    if (e.name.starts_with(kEvaluateFunctionPrefix) || e.name.starts_with("ProfilerStep#")) {
      kind = MarkerKind::kUser;
    } else if (is_backward_node_name(e.name)) {
      kind = MarkerKind::kBackwardNode;
    }
    add_cpu_range(e, start, end, kind);
    count("cpu_op");
  } else if (is(cat, "user_annotation")) {
    add_cpu_range(e, start, end, MarkerKind::kUser);
    count("user_annotation");
  } else if (is(cat, "python_function")) {
    add_module_range(e, start, end);
    count("python_function");
  } else if (is(cat, "cuda_runtime") || is(cat, "cuda_driver") || is(cat, "Runtime") ||
             is(cat, "runtime") || is(cat, "hip_runtime") || is(cat, "privateuse1_runtime")) {
    add_api_call(e, start, end);
    count(cat);
  } else if (is(cat, "kernel") || is(cat, "Kernel")) {
    add_gpu_activity(e, ActivityKind::kKernel, start, end);
    count("kernel");
  } else if (is(cat, "gpu_memcpy") || is(cat, "Memcpy")) {
    add_gpu_activity(e, ActivityKind::kMemcpy, start, end);
    count("gpu_memcpy");
  } else if (is(cat, "gpu_memset") || is(cat, "Memset")) {
    add_gpu_activity(e, ActivityKind::kMemset, start, end);
    count("gpu_memset");
  } else {
    count(cat.empty() ? std::string_view("no cat") : cat);
  }
}

void KinetoReader::EventReader::add_cpu_range(const Event& e, int64_t start, int64_t end,
                                              MarkerKind kind) {
  RangeRecord r;
  r.start = start;
  r.end = end;
  r.pid = dense_id(e.pid);
  r.tid = dense_id(e.tid);
  r.kind = kind;
  r.dialect = kind == MarkerKind::kUser ? Dialect::kUser : Dialect::kKineto;
  r.name = intern_name(e.name);
  r.op_id = e.external_id > 0 ? e.external_id : 0;
  r.seq = kind == MarkerKind::kUser ? -1 : e.seq;
  if (kind == MarkerKind::kBackwardNode && e.fwd_tid >= 0 && e.fwd_tid <= INT32_MAX) {
    r.fwd_tid = static_cast<int32_t>(e.fwd_tid);
  }
  if (kind != MarkerKind::kUser && (e.has_args_lists || e.comm.present())) {
    if (e.has_args_lists && !e.args_ok) {
      trace_.warn("op arguments not understood",
                  std::string(e.name.substr(0, 60)) +
                      ": Input Dims / Input type / Input Strides / Concrete Inputs hold values "
                      "of an unexpected kind; they were written as far as they could be read");
    }
    args_text_.clear();
    {
      JsonWriter w(args_text_, size_t{1} << 20);
      write_args(inputs_, w, unknown_input_types_, e.comm.present() ? &e.comm : nullptr);
    }
    r.text = store_args(args_text_);
    r.has_args = true;
    r.args_offset = 0;
    r.args_length = static_cast<uint32_t>(std::min<size_t>(args_text_.size(), kArgsInPool - 1));
  }
  ++trace_.stats.ranges;
  if (r.end < r.start) {
    ++trace_.stats.ranges_end_before_start;
    trace_.warn("range ends before it starts",
                fmt::format("\"{}\" ts {} dur {}: kept as an empty range at its start",
                            e.name.substr(0, 60), e.ts, e.dur));
    r.end = r.start;
  }
  trace_.ranges.push_back(r);
}

bool KinetoReader::read(Trace& trace, std::string& error) {
  trace.format = "kineto";
  std::unique_ptr<ByteSource> source = std::move(source_);
  if (!source) {
    source = open_file_source(path_, error);
    if (!source) return false;
  }
  EventReader events(*this, trace);
  ChromeTraceScan scan = scan_chrome_trace(*source, events);
  if (!scan.ok) {
    error = scan.error;
    return false;
  }
  if (!scan.has_trace_events) {
    error = events.net_dict_header()
                ? "this is a net.dict, `pyprof parse` output already: give it to pyprof prof, "
                  "diff, export or report"
            : events.net_dict_record()
                ? "this is JSON Lines like a net.dict (`pyprof parse` output) whose first line is "
                  "not its header (\"pyprof_dict\"): a net.dict cut at its start or damaged, "
                  "not a trace to parse"
                : "no \"traceEvents\" array: this JSON is not a Chrome trace (torch.profiler "
                  "export_chrome_trace / tensorboard_trace_handler)";
    return false;
  }
  if (scan.trace_events_arrays > 1) {
    trace.warn("several traceEvents arrays",
               "the document has " + std::to_string(scan.trace_events_arrays) +
                   " \"traceEvents\" keys: the events of all of them are read (a JSON reader "
                   "keeps one; a trace written twice into one file?)");
  }
  trace.trace_events = scan.events + scan.oversized_events;
  if (scan.truncated) {
    trace.truncated_input = true;
    trace.warn("trace cut short", scan.error + ": the " + std::to_string(scan.events) +
                                      " events before it are kept, the rest is missing");
  }
  if (scan.oversized_events > 0) {
    trace.stats.rows_skipped += scan.oversized_events;
    trace.warn("trace events skipped",
               std::to_string(scan.oversized_events) + " events larger than " +
                   std::to_string(ChromeTraceLimits{}.max_event_bytes >> 20) +
                   " MiB (the largest " + std::to_string(scan.largest_skipped) + " bytes)");
  }
  if (scan.oversized_values > 0) {
    trace.warn("top-level values skipped",
               std::to_string(scan.oversized_values) + " values larger than " +
                   std::to_string(ChromeTraceLimits{}.max_top_level_bytes >> 20) + " MiB");
  }
  if (scan.trailing_garbage) {
    trace.warn("bytes after the JSON document", "ignored");
  }
  events.count_dropped(scan.dropped);
  events.finish();
  return true;
}

std::string_view KinetoReader::fetch_text(const Trace& trace, TextRef ref) {
  if (ref.where == TextRef::Where::kPool) return trace.pool.get(static_cast<uint32_t>(ref.id));
  if (ref.where != TextRef::Where::kRow) return {};
  const uint64_t id = static_cast<uint64_t>(ref.id);
  const size_t block = id >> 32, offset = id & 0xFFFFFFFFu;
  if (block >= args_blocks_.size() || offset > args_blocks_[block].size()) return {};
  return std::string_view(args_blocks_[block]).substr(offset);
}

}  // namespace pyprof::parse
