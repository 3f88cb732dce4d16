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
#include "parse/memory_events.h"
#include "parse/record_writer.h"

namespace pyprof::parse {

namespace od = simdjson::ondemand;
using simdjson::error_code;

namespace {

constexpr std::string_view kEvaluateFunctionPrefix = "autograd::engine::evaluate_function: ";
constexpr std::string_view kModulePrefix = "nn.Module: ";
constexpr size_t kArgsBlockBytes = size_t{16} << 20;

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_json_space(s.back())) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// `text == literal`, with the length known at compile time so that the comparison is inlined
// (std::string_view's operator== calls memcmp: a tenth of the reading time).
template <size_t N>
bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}

// A field's key as written, without unescaping it into the parser's buffer: the keys wanted
// have no escapes, and a key with one never equals them (it is cut at its first quote).
std::string_view raw_key(od::field& field) {
  const char* begin = field.key().raw();
  const char* end = begin;
  while (*end != '"') ++end;
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

// One entry of "Input Dims" / "Input Strides": a shape, a list of shapes (TensorList), or
// something else.
struct DimsEntry {
  enum class Kind : uint8_t { kInts, kLists, kOther } kind = Kind::kOther;
  std::vector<int64_t> ints;
  std::vector<std::vector<int64_t>> lists;
  size_t n_lists = 0;
};

// The parallel lists of one cpu_op's args, reused from event to event (capacity kept).
struct InputLists {
  std::vector<DimsEntry> dims, strides;
  size_t n_dims = 0, n_strides = 0;
  std::vector<std::string_view> types, concrete;  // views into the parser's string buffer
  bool has_types = false, has_dims = false, has_concrete = false;
  void clear() {
    n_dims = n_strides = 0;
    types.clear();
    concrete.clear();
    has_types = has_dims = has_concrete = false;
  }
};

// What c10d's record_param_comms events (and NCCL kernels) of a distributed run carry in their
// args: the collective, its element counts and dtype, and its process group. Views into the
// parser's buffer, as InputLists'.
struct CommMeta {
  std::string_view collective, dtype, pg_name, pg_desc;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  bool present() const { return !collective.empty() || in_nelems >= 0; }
};

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

// pid / tid: numbers, or strings in some traces ("stream 7", "Spans").
struct IdValue {
  bool present = false;
  bool is_number = false;
  int64_t number = 0;
  std::string_view text;
};

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

// The digits at the end of "stream 7" / "7".
int64_t trailing_number(std::string_view s, int64_t fallback) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  if (i == s.size() || s.size() - i > 18) return fallback;
  int64_t v = 0;
  std::from_chars(s.data() + i, s.data() + s.size(), v);
  return v;
}

uint8_t copy_kind_of(std::string_view name) {
  // "Memcpy HtoD (Pageable -> Device)": nsys ENUM_CUDA_MEMCPY_OPER numbering.
  static constexpr std::pair<std::string_view, uint8_t> kKinds[] = {
      {"HtoD", 1}, {"DtoH", 2}, {"HtoA", 3}, {"AtoH", 4}, {"AtoA", 5},
      {"AtoD", 6}, {"DtoA", 7}, {"DtoD", 8}, {"HtoH", 9}, {"PtoP", 10}};
  for (const auto& [text, kind] : kKinds) {
    if (name.find(text) != std::string_view::npos) return kind;
  }
  return 0;
}

uint8_t mem_kind_of(std::string_view word) {
  // nsys ENUM_CUDA_MEM_KIND numbering; CUPTI's names as Kineto prints them.
  word = trim(word);
  static constexpr std::pair<std::string_view, uint8_t> kKinds[] = {
      {"Pageable", 0}, {"Pinned", 1},        {"Device", 2},        {"Array", 3},
      {"Managed", 4},  {"Device Static", 5}, {"Managed Static", 6}};
  for (const auto& [text, kind] : kKinds) {
    if (word == text) return kind;
  }
  return 7;
}

// "(Pageable -> Device)" -> {0, 2}; "(Device)" -> {7, 2}.
void mem_kinds_of(std::string_view name, uint8_t& src, uint8_t& dst) {
  size_t open = name.find('(');
  size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  std::string_view inside = name.substr(open + 1, close - open - 1);
  size_t arrow = inside.find("->");
  if (arrow == std::string_view::npos) {
    dst = mem_kind_of(inside);
    return;
  }
  src = mem_kind_of(inside.substr(0, arrow));
  dst = mem_kind_of(inside.substr(arrow + 2));
}

// "nn.Module: Linear_0" -> "Linear".
std::string_view module_type_of(std::string_view instance) {
  size_t underscore = instance.rfind('_');
  if (underscore == std::string_view::npos || underscore + 1 == instance.size()) return instance;
  for (size_t i = underscore + 1; i < instance.size(); ++i) {
    if (instance[i] < '0' || instance[i] > '9') return instance;
  }
  return instance.substr(0, underscore);
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

// ---- the reader ---------------------------------------------------------------------------------

// Turns each event into trace rows as the scanner hands it over; resolves what needs the whole
// trace (launch processes, forward threads, flows) in finish().
class KinetoReader::EventReader : public ChromeTraceVisitor {
 public:
  EventReader(KinetoReader& reader, Trace& trace) : reader_(reader), trace_(trace) {}

  void on_top_level(std::string_view key, std::string_view json) override;
  void on_event(std::string_view json, int64_t offset) override;
  // Whether the document's top-level keys are a net.dict's header (`pyprof parse` output, not
  // a trace) or a record line's (a net.dict whose header line is missing), for the message.
  bool net_dict_header() const { return net_dict_header_; }
  bool net_dict_record() const { return net_dict_record_; }
  // Launch flows (ac2g; "async_cpu_to_gpu" in 2022) are a fifth or more of a trace's events and
  // say nothing correlation ids do not: counted on the scanner's thread, never parsed.
  int drop_unparsed(std::string_view json) const override;
  void count_dropped(const std::vector<int64_t>& dropped) {
    static constexpr const char* kNames[] = {"ac2g flow", "async_cpu_to_gpu flow"};
    for (size_t i = 0; i < dropped.size() && i < 2; ++i) {
      if (dropped[i] > 0) category_counts_[kNames[i]] += dropped[i];
    }
  }
  void finish();

 private:
  struct Event {
    std::string_view ph, cat, name;
    IdValue pid, tid;
    std::string_view ts, dur;
    IdValue id;
    // args
    int64_t external_id = -1, seq = -1, fwd_tid = -1, correlation = -1;
    int64_t device = -1, context = -1, stream = -1, registers = -1, shared = -1, bytes = -1;
    int64_t python_id = -1, python_parent = -1;
    int64_t size = -1;        // ROCm copy calls: "size" (a string)
    std::string_view kernel;  // ROCm launch calls: the kernel they launch
    // An exported pyprof trace's args.pyprof object (docs/formats.md §4.1), as its JSON text.
    std::string_view pyprof;
    CommMeta comm;  // record_param_comms: the collective's counts, dtype and group
    int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
    bool has_grid = false;
    bool has_args_lists = false;
    bool args_ok = true;
  };
  struct FlowPoint {
    uint32_t pid = 0, tid = 0;
    int64_t ts = 0;
    bool set = false;
  };
  struct Flow {
    FlowPoint start, finish;
  };

  error_code read_event(od::object object, Event& e);
  error_code read_args(od::object args, Event& e);
  void skip(std::string_view why, std::string_view json, int64_t offset);
  void count(std::string_view category);
  // A pid or tid as 32 bits: numbers below 2^31 as they are, anything else (larger numbers,
  // strings) numbered from 2^31 on in order of appearance.
  uint32_t dense_id(const IdValue& v);
  uint32_t intern_name(std::string_view name);
  uint32_t intern_exported_name(std::string_view name);  // args.pyprof names, events with one
  TextRef store_args(std::string_view json);
  void add_cpu_range(const Event& e, int64_t start, int64_t end, MarkerKind kind);
  void add_module_range(const Event& e, int64_t start, int64_t end);
  void add_api_call(const Event& e, int64_t start, int64_t end);
  void add_call_site(const Event& e, int64_t start, int64_t end);
  void add_gpu_activity(const Event& e, ActivityKind kind, int64_t start, int64_t end);
  void add_flow_point(const Event& e, bool start);
  // profile_memory's `[memory]` instants: one allocation or free each (memory_events.h).
  void add_memory_event(const Event& e, std::string_view json, int64_t offset);
  // pyprof export's args.pyprof: what Kineto's encoding loses, preferred when present.
  void add_pyprof_range(const Event& e, int64_t start, int64_t end);
  void apply_pyprof_gpu(const Event& e, GpuActivity& a);
  bool iterate_pyprof(const Event& e, od::object& object);
  void read_devices(std::string_view json);
  void read_distributed(std::string_view json);
  // finish() steps
  void resolve_launch_processes();
  void resolve_call_sites();
  void resolve_forward_threads();
  void check_external_ids();

  KinetoReader& reader_;
  Trace& trace_;
  od::parser parser_;
  simdjson::padded_string top_level_;  // top-level values are copied: they are few and small
  bool net_dict_header_ = false, net_dict_record_ = false;
  InputLists inputs_;
  std::string args_text_;
  std::map<std::string, int64_t, std::less<>> category_counts_;
  std::unordered_map<uint64_t, uint32_t> folded_ids_;  // ids that do not fit 32 bits
  std::unordered_map<int64_t, uint32_t> module_path_of_python_id_;
  std::unordered_map<uint32_t, uint32_t> short_name_of_;
  std::unordered_map<int64_t, Flow> fwdbwd_;
  std::vector<int64_t> gpu_external_ids_;  // per activity
  struct LaunchFacts {
    int32_t grid[3], block[3];
    int64_t shared, bytes;
  };
  std::unordered_map<size_t, LaunchFacts> launch_facts_;  // by API call index
  // with_stack: Python frames of the program's own files ("train.py(41): step"), as call sites
  // for the ops they enclose.
  struct CallSite {
    uint64_t thread;
    int64_t start;
    int64_t end;
    uint32_t text;  // pool id of "train.py:41"
  };
  std::vector<CallSite> call_sites_;
  int64_t unknown_input_types_ = 0;
  int64_t negative_timestamps_ = 0;
  od::parser pyprof_parser_;  // args.pyprof, parsed after the event that holds it
  simdjson::padded_string pyprof_text_;
  od::document pyprof_doc_;  // outlives the object iterate_pyprof hands out
  std::vector<std::pair<size_t, uint32_t>> pyprof_gpu_pids_;  // activity -> launching pid
  uint32_t next_folded_id_ = 0x80000000u;
  KinetoMemoryEvents memory_events_;
};

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

void KinetoReader::EventReader::add_module_range(const Event& e, int64_t start, int64_t end) {
  // Only "nn.Module: Type_N" frames become ranges; the nearest module of every frame is
  // remembered so that a module nested in another (through forward and _call_impl frames)
  // gets its dotted path.
  uint32_t parent_path = 0;
  if (e.python_parent >= 0) {
    auto it = module_path_of_python_id_.find(e.python_parent);
    if (it != module_path_of_python_id_.end()) parent_path = it->second;
  }
  if (!e.name.starts_with(kModulePrefix)) {
    if (e.python_id >= 0 && parent_path != 0) module_path_of_python_id_[e.python_id] = parent_path;
    add_call_site(e, start, end);
    return;
  }
  std::string_view instance = e.name.substr(kModulePrefix.size());
  std::string path = parent_path != 0
                         ? std::string(trace_.pool.get(parent_path)) + "." + std::string(instance)
                         : std::string(instance);
  RangeRecord r;
  r.start = start;
  r.end = std::max(end, start);
  r.pid = dense_id(e.pid);
  r.tid = dense_id(e.tid);
  r.kind = MarkerKind::kModule;
  r.dialect = Dialect::kKineto;
  r.name = intern_name(path);
  r.detail = intern_name(module_type_of(instance));
  if (e.python_id >= 0) module_path_of_python_id_[e.python_id] = r.name;
  ++trace_.stats.ranges;
  trace_.ranges.push_back(r);
}

void KinetoReader::EventReader::add_call_site(const Event& e, int64_t start, int64_t end) {
  // "dir/train.py(41): step" -> "dir/train.py:41". torch's own frames (Kineto names files
  // relative to their sys.path entry: "torch/nn/modules/linear.py") and built-ins are skipped,
  // as pyprof's annotator skips framework frames.
  const std::string_view name = e.name;
  const size_t close = name.find("): ");
  const size_t open = close == std::string_view::npos ? close : name.rfind('(', close);
  if (open == std::string_view::npos || open == 0 || name.front() == '<') return;
  const std::string_view file = name.substr(0, open);
  const std::string_view line = name.substr(open + 1, close - open - 1);
  if (line.empty() || line.find_first_not_of("0123456789") != std::string_view::npos) return;
  if (file.starts_with("torch/") || file.find("/torch/") != std::string_view::npos ||
      file.starts_with("pyprof/") || file.find("/pyprof/") != std::string_view::npos) {
    return;
  }
  std::string text;
  text.reserve(file.size() + line.size() + 1);
  text.append(file).append(":").append(line);
  call_sites_.push_back({thread_key(dense_id(e.pid), dense_id(e.tid)), start, std::max(start, end),
                         intern_name(text)});
}

void KinetoReader::EventReader::resolve_call_sites() {
  // One sweep per thread over call sites and ops by start: the innermost open call site of
  // the program's own code is each op's.
  if (call_sites_.empty()) return;
  struct Item {
    uint64_t thread;
    int64_t start;
    int64_t neg_end;
    int32_t kind;  // 0 call site (first at equal start: it encloses the op), 1 op
    int32_t index;
  };
  std::vector<Item> items;
  items.reserve(call_sites_.size() + trace_.ranges.size());
  for (size_t i = 0; i < call_sites_.size(); ++i) {
    const CallSite& c = call_sites_[i];
    items.push_back({c.thread, c.start, -c.end, 0, static_cast<int32_t>(i)});
  }
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    if (r.dialect != Dialect::kKineto || r.kind == MarkerKind::kModule) continue;
    items.push_back({thread_key(r.pid, r.tid), r.start, -r.end, 1, static_cast<int32_t>(i)});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.thread, a.start, a.kind, a.neg_end) <
           std::tie(b.thread, b.start, b.kind, b.neg_end);
  });
  std::vector<int32_t> open;
  uint64_t thread = ~uint64_t{0};
  for (const Item& item : items) {
    if (item.thread != thread) {
      open.clear();
      thread = item.thread;
    }
    while (!open.empty() && call_sites_[open.back()].end < item.start) open.pop_back();
    if (item.kind == 0) {
      open.push_back(item.index);
    } else if (!open.empty() && call_sites_[open.back()].end >= -item.neg_end) {
      trace_.ranges[item.index].stack = call_sites_[open.back()].text;
    }
  }
  std::vector<CallSite>().swap(call_sites_);
}

void KinetoReader::EventReader::add_api_call(const Event& e, int64_t start, int64_t end) {
  ApiCall call;
  call.start = start;
  call.end = end;
  call.correlation_id = e.correlation;
  call.pid = dense_id(e.pid);
  call.tid = dense_id(e.tid);
  call.name = intern_name(e.name);
  if (!e.kernel.empty()) call.kernel = intern_bounded(trace_, e.kernel);
  od::object pyprof;
  if (!e.pyprof.empty() && iterate_pyprof(e, pyprof)) {
    for (auto field_result : pyprof) {
      od::field field;
      std::string_view key;
      int64_t v = 0;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
      if (key == "negative_duration" && field.value().get_int64().get(v) == simdjson::SUCCESS) {
        call.end = call.start + v;
      }
    }
  }
  ++trace_.stats.api_calls;
  if (e.has_grid || e.shared >= 0 || e.size >= 0) {
    // ROCm writes the launch dimensions and copy sizes on the call, not on the GPU row.
    LaunchFacts facts;
    std::copy(e.grid, e.grid + 3, facts.grid);
    std::copy(e.block, e.block + 3, facts.block);
    facts.shared = e.shared;
    facts.bytes = e.size;
    launch_facts_.emplace(trace_.api_calls.size(), facts);
  }
  trace_.api_calls.push_back(call);
}

void KinetoReader::EventReader::add_gpu_activity(const Event& e, ActivityKind kind, int64_t start,
                                                 int64_t end) {
  GpuActivity a;
  a.kind = kind;
  a.start = start;
  a.end = end;
  a.correlation_id = e.correlation;
  // GPU rows sit on pid = device, tid = stream; the args say it again where Kineto wrote them.
  const int64_t pid_number = e.pid.is_number ? e.pid.number : trailing_number(e.pid.text, -1);
  const int64_t tid_number = e.tid.is_number ? e.tid.number : trailing_number(e.tid.text, -1);
  const int64_t device = e.device >= 0 ? e.device : pid_number;
  a.device = device >= 0 && device <= INT32_MAX ? static_cast<int32_t>(device) : -1;
  a.context = e.context >= 0 && e.context <= INT32_MAX ? static_cast<int32_t>(e.context) : -1;
  a.stream = e.stream >= 0 ? e.stream : tid_number;
  if (kind == ActivityKind::kKernel) {
    a.long_name = e.pyprof.empty() ? intern_name(e.name) : intern_exported_name(e.name);
    auto it = short_name_of_.find(a.long_name);
    if (it == short_name_of_.end()) {
      it = short_name_of_
               .emplace(a.long_name,
                        trace_.pool.intern(short_kernel_name(trace_.pool.get(a.long_name))))
               .first;
    }
    a.short_name = it->second;
    std::copy(e.grid, e.grid + 3, a.grid);
    std::copy(e.block, e.block + 3, a.block);
    if (e.registers >= 0 && e.registers <= INT32_MAX) {
      a.registers = static_cast<int32_t>(e.registers);
    }
    if (e.shared >= 0 && e.shared <= INT32_MAX) a.shared_total = static_cast<int32_t>(e.shared);
    ++trace_.stats.kernels;
  } else if (kind == ActivityKind::kMemcpy) {
    a.copy_kind = copy_kind_of(e.name);
    mem_kinds_of(e.name, a.src_kind, a.dst_kind);
    a.bytes = e.bytes;
    ++trace_.stats.memcpys;
  } else {
    uint8_t ignored = 7;
    mem_kinds_of(e.name, ignored, a.dst_kind);
    a.bytes = e.bytes;
    ++trace_.stats.memsets;
  }
  if (!e.pyprof.empty()) apply_pyprof_gpu(e, a);
  trace_.activities.push_back(a);
  gpu_external_ids_.push_back(e.external_id);
}

bool KinetoReader::EventReader::iterate_pyprof(const Event& e, od::object& object) {
  pyprof_text_ = simdjson::padded_string(e.pyprof);
  if (pyprof_parser_.iterate(pyprof_text_).get(pyprof_doc_) ||
      pyprof_doc_.get_object().get(object)) {
    trace_.warn("pyprof args not understood",
                std::string(e.name.substr(0, 60)) + ": args.pyprof is not a JSON object");
    return false;
  }
  return true;
}

void KinetoReader::EventReader::add_pyprof_range(const Event& e, int64_t start, int64_t end) {
  // The range as the dict's range line described it (export/trace_export.cpp writes it): kind,
  // exact name, dialect, thread ids of the pairing, args in pyprof's encoding.
  RangeRecord r;
  r.start = start;
  r.end = std::max(end, start);
  r.pid = dense_id(e.pid);
  r.tid = dense_id(e.tid);
  r.op_id = e.external_id > 0 ? e.external_id : 0;
  r.seq = e.seq;
  r.name = intern_exported_name(e.name);
  r.kind = is(e.cat, "python_function")   ? MarkerKind::kModule
           : is(e.cat, "user_annotation") ? MarkerKind::kUser
                                          : MarkerKind::kOp;
  r.dialect = r.kind == MarkerKind::kUser ? Dialect::kUser : Dialect::kKineto;
  od::object object;
  if (iterate_pyprof(e, object)) {
    for (auto field_result : object) {
      od::field field;
      std::string_view key;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
      od::value value = field.value();
      std::string_view text;
      int64_t v = 0;
      if (key == "args") {
        std::string_view json;
        od::object args_object;
        od::array args_array;  // legacy PyProf args are a list
        if (value.get_object().get(args_object) == simdjson::SUCCESS) {
          if (args_object.raw_json().get(json)) break;
        } else if (value.get_array().get(args_array) == simdjson::SUCCESS) {
          if (args_array.raw_json().get(json)) break;
        } else {
          json = value.raw_json_token();
        }
        while (!json.empty() && is_json_space(json.back())) json.remove_suffix(1);
        r.text = store_args(json);
        r.has_args = true;
        r.args_offset = 0;
        r.args_length = static_cast<uint32_t>(std::min<size_t>(json.size(), kArgsInPool - 1));
        continue;
      }
      if (key == "open") {
        bool open = false;
        if (value.get_bool().get(open) == simdjson::SUCCESS && open) r.end = kOpenEnd;
        continue;
      }
      if (value.get_string().get(text) == simdjson::SUCCESS) {
        if (key == "kind") {
          r.kind = text == "op"       ? MarkerKind::kOp
                   : text == "node"   ? MarkerKind::kBackwardNode
                   : text == "module" ? MarkerKind::kModule
                   : text == "trace"  ? MarkerKind::kTrace
                                      : MarkerKind::kUser;
        } else if (key == "name") {
          r.name = intern_exported_name(text);
        } else if (key == "dialect") {
          r.dialect = dialect_of_name(text);
        } else if (key == "domain") {
          r.domain = intern_exported_name(text);
        } else if (key == "detail") {
          r.detail = intern_exported_name(text);
        } else if (key == "stack") {
          r.stack = intern_exported_name(text);
        }
      } else if (value.get_int64().get(v) == simdjson::SUCCESS) {
        if (key == "rf_tid" && v >= 0 && v <= INT32_MAX) r.rf_tid = static_cast<int32_t>(v);
        if (key == "fwd_tid" && v >= 0 && v <= INT32_MAX) r.fwd_tid = static_cast<int32_t>(v);
      }
    }
  }
  if (r.kind == MarkerKind::kUser) r.seq = -1;
  ++trace_.stats.ranges;
  trace_.ranges.push_back(r);
}

void KinetoReader::EventReader::apply_pyprof_gpu(const Event& e, GpuActivity& a) {
  od::object object;
  if (!iterate_pyprof(e, object)) return;
  for (auto field_result : object) {
    od::field field;
    std::string_view key, text;
    int64_t v = 0;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
    od::value value = field.value();
    if (value.get_string().get(text) == simdjson::SUCCESS) {
      if (key == "name") {
        a.short_name = intern_exported_name(text);
      } else if (key == "copy_kind" && copy_kind_of_name(text) >= 0) {
        a.copy_kind = static_cast<uint8_t>(copy_kind_of_name(text));
      } else if (key == "src_kind" && mem_kind_of_name(text) >= 0) {
        a.src_kind = static_cast<uint8_t>(mem_kind_of_name(text));
      } else if ((key == "dst_kind" || key == "mem_kind") && mem_kind_of_name(text) >= 0) {
        a.dst_kind = static_cast<uint8_t>(mem_kind_of_name(text));
      }
    } else if (value.get_int64().get(v) == simdjson::SUCCESS) {
      const bool fits = v >= INT32_MIN && v <= INT32_MAX;
      if (key == "shared_static" && fits) {
        a.static_shared = static_cast<int32_t>(v);
      } else if (key == "shared_dynamic" && fits) {
        a.dynamic_shared = static_cast<int32_t>(v);
      } else if (key == "value") {
        a.memset_value = v;
      } else if (key == "graph_node") {
        a.graph_node_id = v;
      } else if (key == "negative_duration") {
        a.end = a.start + v;
      } else if (key == "pid" && v >= 0 && v <= UINT32_MAX) {
        pyprof_gpu_pids_.emplace_back(trace_.activities.size(), static_cast<uint32_t>(v));
      }
    }
  }
}

void KinetoReader::EventReader::add_flow_point(const Event& e, bool start) {
  int64_t id =
      e.id.is_number ? e.id.number : static_cast<int64_t>(std::hash<std::string_view>{}(e.id.text));
  int64_t ts = 0;
  if (!e.id.present || !microseconds_to_ns(e.ts, ts)) return;
  FlowPoint& p = start ? fwdbwd_[id].start : fwdbwd_[id].finish;
  if (p.set) {
    trace_.warn("fwdbwd flows with a repeated id",
                "flow id " + std::to_string(id) + " has more than one " +
                    (start ? "start" : "end") + "; the first is used");
    return;
  }
  p = {dense_id(e.pid), dense_id(e.tid), ts, true};
}

void KinetoReader::EventReader::on_top_level(std::string_view key, std::string_view json) {
  net_dict_header_ = net_dict_header_ || key == "pyprof_dict";
  net_dict_record_ = net_dict_record_ || key == "kind";
  if (key == "deviceProperties") {
    read_devices(json);
  } else if (key == "distributedInfo") {
    read_distributed(json);
  } else if (key == "baseTimeNanoseconds") {
    int64_t base = 0;
    auto [p, ec] = std::from_chars(json.data(), json.data() + json.size(), base);
    if (ec == std::errc()) trace_.base_time_ns = base;
  } else if (key == "schemaVersion") {
    trace_.version = "schema " + std::string(trim(json).substr(0, 16));
  }
}

void KinetoReader::EventReader::read_devices(std::string_view json) {
  top_level_ = simdjson::padded_string(json);
  od::document doc;
  od::array array;
  if (parser_.iterate(top_level_).get(doc) || doc.get_array().get(array)) {
    trace_.warn("deviceProperties not understood", "it is not a JSON array of objects");
    return;
  }
  for (auto item_result : array) {
    od::object object;
    if (item_result.get_object().get(object)) {
      trace_.warn("deviceProperties not understood", "an entry is not an object");
      return;
    }
    Trace::Device d;
    for (auto field_result : object) {
      od::field field;
      std::string_view key;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return;
      od::value value = field.value();
      int64_t v = 0;
      if (key == "name") {
        std::string_view name;
        if (value.get_string().get(name) == simdjson::SUCCESS)
          d.name = std::string(name.substr(0, 256));
        continue;
      }
      if (value.get_int64().get(v) != simdjson::SUCCESS) continue;
      if (key == "id") {
        d.id = v;
      } else if (key == "numSms" || key == "multiProcessorCount") {
        d.sm_count = v;
      } else if (key == "totalGlobalMem") {
        d.total_memory = v;
      } else if (key == "computeMajor") {
        d.compute_major = v;
      } else if (key == "computeMinor") {
        d.compute_minor = v;
      } else if (key == "clockRate") {  // kHz, as cudaDeviceProp (ROCm traces write it)
        if (auto hz = Trace::Device::in_header_units(v, 1000)) d.clock_hz = *hz;
      } else if (key == "memoryBandwidth" && v >= 0) {  // bytes/s: pyprof export's own key
        d.memory_bandwidth = v;
      }
    }
    trace_.devices.push_back(std::move(d));
  }
}

void KinetoReader::EventReader::read_distributed(std::string_view json) {
  top_level_ = simdjson::padded_string(json);
  od::document doc;
  od::object object;
  if (parser_.iterate(top_level_).get(doc) || doc.get_object().get(object)) {
    trace_.warn("distributedInfo not understood", "it is not a JSON object");
    return;
  }
  Trace::Distributed dist;
  for (auto field_result : object) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
    od::value value = field.value();
    int64_t v;
    std::string_view s;
    if (key == "rank" && value.get_int64().get(v) == simdjson::SUCCESS) {
      dist.rank = v;
    } else if (key == "world_size" && value.get_int64().get(v) == simdjson::SUCCESS) {
      dist.world_size = v;
    } else if (key == "backend" && value.get_string().get(s) == simdjson::SUCCESS) {
      dist.backend = std::string(s.substr(0, 64));
    }
  }
  trace_.distributed = dist;
}

void KinetoReader::EventReader::resolve_launch_processes() {
  // Kineto puts GPU rows on pid = device; correlation joins them to the launching process.
  std::unordered_map<int64_t, int32_t> call_of;
  call_of.reserve(trace_.api_calls.size());
  int64_t duplicates = 0, repeated = 0;
  for (size_t i = 0; i < trace_.api_calls.size(); ++i) {
    const ApiCall& c = trace_.api_calls[i];
    if (c.correlation_id < 0) continue;
    auto [it, added] = call_of.emplace(c.correlation_id, static_cast<int32_t>(i));
    if (!added) ++(trace_.api_calls[it->second].pid != c.pid ? duplicates : repeated);
  }
  if (repeated > 0) {  // Kineto numbers a process's calls uniquely: a merged or edited trace
    trace_.warn("API calls with a repeated correlation id",
                std::to_string(repeated) +
                    " calls repeat the correlation id of an earlier call of their process: "
                    "GPU work with that id is joined to the first");
  }
  if (duplicates > 0) {
    trace_.warn("correlation ids shared by API calls of different processes",
                std::to_string(duplicates) +
                    " calls: their GPU work is joined to the first process's call");
  }
  uint32_t fallback_pid = trace_.api_calls.empty() ? 0 : trace_.api_calls.front().pid;
  if (trace_.api_calls.empty()) {
    for (const RangeRecord& r : trace_.ranges) {
      fallback_pid = r.pid;
      break;
    }
  }
  for (GpuActivity& a : trace_.activities) {
    auto it = a.correlation_id >= 0 ? call_of.find(a.correlation_id) : call_of.end();
    a.pid = it != call_of.end() ? trace_.api_calls[it->second].pid : fallback_pid;
    if (it == call_of.end() || launch_facts_.empty()) continue;
    auto facts = launch_facts_.find(static_cast<size_t>(it->second));
    if (facts == launch_facts_.end()) continue;
    const LaunchFacts& f = facts->second;
    if (a.kind == ActivityKind::kKernel && a.grid[0] == 0 && a.block[0] == 0) {
      std::copy(f.grid, f.grid + 3, a.grid);
      std::copy(f.block, f.block + 3, a.block);
    }
    if (a.kind == ActivityKind::kKernel && a.shared_total < 0 && f.shared >= 0 &&
        f.shared <= INT32_MAX) {
      a.shared_total = static_cast<int32_t>(f.shared);
    }
    if (a.kind != ActivityKind::kKernel && a.bytes < 0 && f.bytes >= 0) a.bytes = f.bytes;
  }
}

void KinetoReader::EventReader::resolve_forward_threads() {
  // Kineto writes the RecordFunction thread id ("Fwd thread id") only on backward nodes. The
  // fwdbwd flows join a forward op (on its OS thread) to its node: they tell which OS thread
  // each RecordFunction thread id stands for. Forward ops then get that id, so pairing uses the
  // same (thread, sequence number) key as for pyprof's markers.
  struct OpAt {
    uint64_t thread;
    int64_t start;
    int64_t neg_end;
    int32_t index;
  };
  std::vector<OpAt> ops, nodes;
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    // Ops of any dialect: an exported pyprof trace keeps its ops' own (args.pyprof).
    if (r.dialect == Dialect::kUser) continue;
    // (A legacy PyProf op, which pairs through the emit_nvtx op inside it, has no seq itself.)
    if (r.kind == MarkerKind::kOp && (r.seq >= 0 || r.dialect != Dialect::kKineto)) {
      ops.push_back({thread_key(r.pid, r.tid), r.start, -r.end, static_cast<int32_t>(i)});
    } else if (r.kind == MarkerKind::kBackwardNode) {
      nodes.push_back({thread_key(r.pid, r.tid), r.start, -r.end, static_cast<int32_t>(i)});
    }
  }
  const auto order = [](const OpAt& a, const OpAt& b) {
    return std::tie(a.thread, a.start, a.neg_end) < std::tie(b.thread, b.start, b.neg_end);
  };
  std::sort(ops.begin(), ops.end(), order);
  std::sort(nodes.begin(), nodes.end(), order);
  // The range a flow point marks: on its thread, starting at its time; the innermost of those.
  const auto at = [&](const std::vector<OpAt>& v, const FlowPoint& p) -> int32_t {
    const uint64_t thread = thread_key(p.pid, p.tid);
    auto lo = std::lower_bound(v.begin(), v.end(), OpAt{thread, p.ts, INT64_MIN, 0}, order);
    int32_t found = -1;
    for (auto it = lo; it != v.end() && it->thread == thread && it->start == p.ts; ++it) {
      found = it->index;  // ends sorted longest first: the last is the innermost
    }
    return found;
  };

  std::unordered_map<uint64_t, int32_t> rf_tid_of_thread;
  int64_t unresolved = 0, conflicting = 0;
  for (const auto& [id, flow] : fwdbwd_) {
    if (!flow.start.set || !flow.finish.set) {
      ++unresolved;
      continue;
    }
    const int32_t op = at(ops, flow.start);
    const int32_t node = at(nodes, flow.finish);
    if (op < 0 || node < 0) {
      ++unresolved;
      continue;
    }
    trace_.declared_pairs.emplace_back(op, node);
    const RangeRecord& n = trace_.ranges[node];
    if (n.fwd_tid < 0) continue;
    const RangeRecord& o = trace_.ranges[op];
    auto [it, added] = rf_tid_of_thread.emplace(thread_key(o.pid, o.tid), n.fwd_tid);
    if (!added && it->second != n.fwd_tid) ++conflicting;
  }
  if (unresolved > 0) {
    trace_.warn("fwdbwd flows that name no op",
                std::to_string(unresolved) +
                    " flows lack an end, or start or end where no op or backward node starts");
  }
  if (conflicting > 0) {
    trace_.warn("fwdbwd flows that disagree on a forward thread",
                std::to_string(conflicting) + " flows; the first flow's thread id is used");
  }
  // Without flows (older traces, or none recorded): when the nodes of a process name one forward
  // thread, it is the thread that ran the most ops with a sequence number (the training loop's;
  // the autograd engine's own thread runs few).
  std::unordered_map<uint64_t, int64_t> seq_ops_of_thread;
  for (const OpAt& o : ops) ++seq_ops_of_thread[o.thread];
  std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> busiest;  // pid -> (thread, ops)
  for (const auto& [thread, n] : seq_ops_of_thread) {
    auto& best = busiest[static_cast<uint32_t>(thread >> 32)];
    if (n > best.second || (n == best.second && thread < best.first)) best = {thread, n};
  }
  std::unordered_map<uint32_t, std::pair<int32_t, int>> node_rf_tids;  // pid -> (rf tid, count)
  for (const OpAt& o : nodes) {
    const RangeRecord& r = trace_.ranges[o.index];
    auto& [rf, n] = node_rf_tids[r.pid];
    if (r.fwd_tid >= 0 && (n == 0 || rf != r.fwd_tid)) {
      rf = r.fwd_tid;
      ++n;
    }
  }
  std::unordered_map<uint32_t, char> mapped_pids;
  for (const auto& [thread, rf] : rf_tid_of_thread) mapped_pids.emplace(thread >> 32, 1);
  for (const auto& [pid, rf_count] : node_rf_tids) {
    if (mapped_pids.count(pid) || rf_count.second != 1) continue;
    auto it = busiest.find(pid);
    if (it != busiest.end()) rf_tid_of_thread.emplace(it->second.first, rf_count.first);
  }
  mapped_pids.clear();
  for (const auto& [thread, rf] : rf_tid_of_thread) mapped_pids.emplace(thread >> 32, 1);
  int64_t unmapped = 0;
  for (RangeRecord& r : trace_.ranges) {
    // rf_tid already set: an exported pyprof trace said it (args.pyprof).
    if (r.dialect != Dialect::kKineto || r.kind != MarkerKind::kOp || r.seq < 0 || r.rf_tid >= 0) {
      continue;
    }
    auto it = rf_tid_of_thread.find(thread_key(r.pid, r.tid));
    if (it != rf_tid_of_thread.end()) {
      r.rf_tid = it->second;
    } else if (node_rf_tids.count(r.pid) && !mapped_pids.count(r.pid)) {
      ++unmapped;
    }
  }
  if (unmapped > 0) {
    trace_.warn("forward threads not identified",
                std::to_string(unmapped) +
                    " forward ops ran on threads that no fwdbwd flow names (with several forward "
                    "threads the trace does not say which is which): backward nodes cannot be "
                    "paired with them");
  }
}

void KinetoReader::EventReader::check_external_ids() {
  // A sampled or partial trace has GPU work whose op is missing: count it.
  // Kineto gives each GPU row the External id of the op (or record_function range) that
  // launched it; attribution goes through the launch call, and this counts the rows whose op
  // the trace does not hold.
  std::unordered_map<int64_t, char> op_ids;
  op_ids.reserve(trace_.ranges.size());
  int64_t repeated_ids = 0, first_repeated = 0;
  for (const RangeRecord& r : trace_.ranges) {
    if (r.op_id > 0 && !op_ids.emplace(r.op_id, 1).second && repeated_ids++ == 0) {
      first_repeated = r.op_id;
    }
  }
  if (repeated_ids > 0) {  // Kineto numbers ops uniquely: a merged or edited trace
    trace_.warn("ops with a repeated External id",
                std::to_string(repeated_ids) + " ops (first: External id " +
                    std::to_string(first_repeated) + "): records' op_id does not tell them apart");
  }
  int64_t missing = 0, first_missing = 0;
  for (size_t i = 0; i < gpu_external_ids_.size(); ++i) {
    const int64_t id = gpu_external_ids_[i];
    // Kineto of 2022 wrote the correlation id there instead: nothing to check.
    if (id <= 0 || id == trace_.activities[i].correlation_id || op_ids.count(id)) continue;
    if (missing++ == 0) first_missing = id;
  }
  if (missing > 0) {
    trace_.warn("GPU rows whose External id names no op in the trace",
                std::to_string(missing) + " rows (first: External id " +
                    std::to_string(first_missing) +
                    "): a sampled or partial trace; they are attributed through their launch "
                    "call where it is present");
  }
}

void KinetoReader::EventReader::finish() {
  resolve_launch_processes();
  for (const auto& [activity, pid] : pyprof_gpu_pids_) trace_.activities[activity].pid = pid;
  resolve_forward_threads();
  resolve_call_sites();
  check_external_ids();
  for (const auto& [category, n] : category_counts_) trace_.event_counts.emplace_back(category, n);
  if (unknown_input_types_ > 0) {
    trace_.warn("op inputs of an unknown type",
                std::to_string(unknown_input_types_) +
                    " tensor inputs name a type pyprof does not know: written without a dtype "
                    "(costed as 4-byte elements)");
  }
  if (negative_timestamps_ > 0) {
    trace_.warn("negative timestamps", std::to_string(negative_timestamps_) +
                                           " events start before the trace's time base; kept");
  }
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
