// The Kineto reader's inside, shared by its source files (not part of parse's interface:
// parse/kineto_reader.h is): the event reader class (kineto_reader.cpp reads each event,
// kineto_ranges.cpp turns module frames, API calls and exported ranges into trace rows and
// resolves what needs the whole trace) and the small value types and helpers both use.
#pragma once

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parse/ascii.h"
#include "parse/json_stream.h"
#include "parse/kineto_reader.h"
#include "parse/memory_events.h"
#include "parse/trace.h"

namespace pyprof::parse {
namespace kineto_detail {

inline constexpr std::string_view kEvaluateFunctionPrefix = "autograd::engine::evaluate_function: ";
inline constexpr std::string_view kModulePrefix = "nn.Module: ";
inline constexpr size_t kArgsBlockBytes = size_t{16} << 20;

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_json_space(s.back())) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// `text == literal`, with the length known at compile time so that the comparison is inlined
// (std::string_view's operator== calls memcmp: a tenth of the reading time).
template <size_t N>
inline bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
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

// pid / tid: numbers, or strings in some traces ("stream 7", "Spans").
struct IdValue {
  bool present = false;
  bool is_number = false;
  int64_t number = 0;
  std::string_view text;
};

// The digits at the end of "stream 7" / "7".
inline int64_t trailing_number(std::string_view s, int64_t fallback) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  if (i == s.size() || s.size() - i > 18) return fallback;
  int64_t v = 0;
  std::from_chars(s.data() + i, s.data() + s.size(), v);
  return v;
}

inline uint8_t copy_kind_of(std::string_view name) {
  // "Memcpy HtoD (Pageable -> Device)": nsys ENUM_CUDA_MEMCPY_OPER numbering.
  static constexpr std::pair<std::string_view, uint8_t> kKinds[] = {
      {"HtoD", 1}, {"DtoH", 2}, {"HtoA", 3}, {"AtoH", 4}, {"AtoA", 5},
      {"AtoD", 6}, {"DtoA", 7}, {"DtoD", 8}, {"HtoH", 9}, {"PtoP", 10}};
  for (const auto& [text, kind] : kKinds) {
    if (name.find(text) != std::string_view::npos) return kind;
  }
  return 0;
}

inline uint8_t mem_kind_of(std::string_view word) {
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
inline void mem_kinds_of(std::string_view name, uint8_t& src, uint8_t& dst) {
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
inline std::string_view module_type_of(std::string_view instance) {
  size_t underscore = instance.rfind('_');
  if (underscore == std::string_view::npos || underscore + 1 == instance.size()) return instance;
  for (size_t i = underscore + 1; i < instance.size(); ++i) {
    if (instance[i] < '0' || instance[i] > '9') return instance;
  }
  return instance.substr(0, underscore);
}

}  // namespace kineto_detail

using namespace kineto_detail;  // NOLINT: the reader's own helpers, in its own files only

namespace od = simdjson::ondemand;
using simdjson::error_code;

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

}  // namespace pyprof::parse
