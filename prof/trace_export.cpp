#include "prof/trace_export.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/json_writer.h"
#include "prof/records.h"

namespace pyprof::prof {

namespace od = simdjson::ondemand;

void append_microseconds(std::string& out, int64_t ns) {
  uint64_t magnitude = ns < 0 ? uint64_t{0} - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out += '-';
  char digits[32];
  int n = std::snprintf(digits, sizeof digits, "%llu.%03llu",
                        static_cast<unsigned long long>(magnitude / 1000),
                        static_cast<unsigned long long>(magnitude % 1000));
  out.append(digits, static_cast<size_t>(n));
}

namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;
constexpr int64_t kNone = INT64_MIN;

// One line of the dict, as views into the line (valid until the next line is read). Strings
// are kept as their raw JSON (quoted, escaped), ready to be written again.
struct Line {
  std::string_view kind, name, long_name, op, dir, module, module_type, args, stack, bwd_node;
  std::string_view user_ranges, launch, copy_kind, src_kind, dst_kind, mem_kind, dialect;
  std::string_view range_kind, detail, domain, grid, block;
  std::string_view kernel;  // a compiled_kernel line's object
  // A compiled_kernel line's "graph", a record's "compiled_graph" (raw JSON): set where two
  // compiled graphs have a kernel of one name (docs/formats.md §3).
  std::string_view graph;
  int64_t device = kNone, context = kNone, stream = kNone, start = kNone, duration = kNone;
  int64_t negative_duration = kNone, correlation = kNone, pid = kNone, tid = kNone;
  int64_t graph_node = kNone, registers = kNone, shared_static = kNone, shared_dynamic = kNone;
  int64_t shared_memory = kNone, bytes = kNone, value = kNone, instance = kNone, range = kNone;
  int64_t id = kNone, parent = kNone, seq = kNone, op_id = kNone, rf_tid = kNone;
  int64_t fwd_tid = kNone, fwd = kNone, sub = kNone;
  int64_t args_ref = kNone;  // the compact form's reference to an `"kind":"args"` line
  bool header = false;
};

bool is(std::string_view raw, std::string_view quoted_text) {
  return raw.size() == quoted_text.size() + 2 && raw.substr(1, quoted_text.size()) == quoted_text;
}

// A raw JSON string's text, for the few that are compared or combined (escapes left as they
// are: only compared with plain ASCII names).
std::string_view unquoted(std::string_view raw) {
  return raw.size() >= 2 && raw.front() == '"' ? raw.substr(1, raw.size() - 2) : raw;
}

// A value's JSON text, as it is in the input (simdjson 3.0 has raw_json on objects and arrays
// only; a scalar's token may carry the whitespace after it).
simdjson::error_code raw_json_of(od::value value, std::string_view& out) {
  od::json_type type;
  if (auto err = value.type().get(type)) return err;
  if (type == od::json_type::object) {
    od::object o;
    if (auto err = value.get_object().get(o)) return err;
    return o.raw_json().get(out);
  }
  if (type == od::json_type::array) {
    od::array a;
    if (auto err = value.get_array().get(a)) return err;
    return a.raw_json().get(out);
  }
  out = value.raw_json_token();
  return simdjson::SUCCESS;
}

simdjson::error_code read_line(od::parser& parser, std::string& padded, Line& l) {
  l = Line{};
  od::document doc;
  od::object object;
  if (auto err =
          parser.iterate(padded.data(), padded.size() - simdjson::SIMDJSON_PADDING, padded.size())
              .get(doc)) {
    return err;
  }
  if (auto err = doc.get_object().get(object)) return err;
  for (auto field_result : object) {
    od::field field;
    if (auto err = std::move(field_result).get(field)) return err;
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return err;
    od::value value = field.value();
    std::string_view raw;
    if (auto err = raw_json_of(value, raw)) return err;
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n')) raw.remove_suffix(1);
    const bool is_null = raw == "null";
    auto num = [&](int64_t& out) {
      if (is_null) return;
      int64_t v = 0;
      const char* end = raw.data() + raw.size();
      auto [p, ec] = std::from_chars(raw.data(), end, v);
      if (ec == std::errc() && p == end) out = v;
    };
    auto str = [&](std::string_view& out) {
      if (!is_null) out = raw;
    };
    if (key == "pyprof_dict") {
      l.header = true;
    } else if (key == "kind") {
      str(l.kind);
    } else if (key == "name") {
      str(l.name);
    } else if (key == "long_name") {
      str(l.long_name);
    } else if (key == "kernel") {
      str(l.kernel);
    } else if (key == "graph" || key == "compiled_graph") {
      str(l.graph);
    } else if (key == "op") {
      str(l.op);
    } else if (key == "dir") {
      str(l.dir);
    } else if (key == "module") {
      str(l.module);
    } else if (key == "module_type") {
      str(l.module_type);
    } else if (key == "args") {
      str(l.args);
    } else if (key == "args_ref") {
      num(l.args_ref);
    } else if (key == "stack") {
      str(l.stack);
    } else if (key == "bwd_node") {
      str(l.bwd_node);
    } else if (key == "user_ranges") {
      str(l.user_ranges);
    } else if (key == "launch") {
      str(l.launch);
    } else if (key == "copy_kind") {
      str(l.copy_kind);
    } else if (key == "src_kind") {
      str(l.src_kind);
    } else if (key == "dst_kind") {
      str(l.dst_kind);
    } else if (key == "mem_kind") {
      str(l.mem_kind);
    } else if (key == "dialect") {
      str(l.dialect);
    } else if (key == "detail") {
      str(l.detail);
    } else if (key == "domain") {
      str(l.domain);
    } else if (key == "grid") {
      str(l.grid);
    } else if (key == "block") {
      str(l.block);
    } else if (key == "range") {
      // A range line's kind of range ("op"), or a CPU record's own range id.
      if (!raw.empty() && raw.front() == '"') {
        l.range_kind = raw;
      } else {
        num(l.range);
      }
    } else if (key == "device") {
      num(l.device);
    } else if (key == "context") {
      num(l.context);
    } else if (key == "stream") {
      num(l.stream);
    } else if (key == "start") {
      num(l.start);
    } else if (key == "duration") {
      num(l.duration);
    } else if (key == "negative_duration") {
      num(l.negative_duration);
    } else if (key == "correlation") {
      num(l.correlation);
    } else if (key == "pid") {
      num(l.pid);
    } else if (key == "tid") {
      num(l.tid);
    } else if (key == "graph_node") {
      num(l.graph_node);
    } else if (key == "registers") {
      num(l.registers);
    } else if (key == "shared_static") {
      num(l.shared_static);
    } else if (key == "shared_dynamic") {
      num(l.shared_dynamic);
    } else if (key == "shared_memory") {
      num(l.shared_memory);
    } else if (key == "bytes") {
      num(l.bytes);
    } else if (key == "value") {
      num(l.value);
    } else if (key == "instance") {
      num(l.instance);
    } else if (key == "id") {
      num(l.id);
    } else if (key == "parent") {
      num(l.parent);
    } else if (key == "seq") {
      num(l.seq);
    } else if (key == "op_id") {
      num(l.op_id);
    } else if (key == "rf_tid") {
      num(l.rf_tid);
    } else if (key == "fwd_tid") {
      num(l.fwd_tid);
    } else if (key == "fwd") {
      num(l.fwd);
    } else if (key == "sub") {
      num(l.sub);
    }
  }
  return simdjson::SUCCESS;
}

// What the GPU records of one op instance (or a CPU op record) say about its op, for the
// op range's args.
struct InstanceCost {
  double op_flops = 0, op_bytes = 0;  // the whole op's
  double flops = 0, bytes = 0;        // counted
  int64_t counted_time = 0;
  uint32_t shapes = 0, dtype = 0, family = 0;
  std::string module;  // raw JSON
  std::string dir;     // raw JSON
  bool modeled = false;
};

class Exporter {
 public:
  Exporter(const ExportOptions& options, const TraceSink& sink, ReadResult& costs,
           ExportResult& result)
      : options_(options), sink_(sink), costs_(costs), result_(result) {}

  bool run(std::FILE* in, std::string& error);

 private:
  bool flush(bool force = false) {
    if (!force && out_.size() < kFlushBytes) return true;
    if (!ok_) return false;
    ok_ = sink_(out_);
    out_.clear();
    return ok_;
  }
  // Starts an event object (with its leading comma).
  JsonWriter& begin_event() {
    out_ += first_event_ ? "\n" : ",\n";
    first_event_ = false;
    ++result_.events;
    writer_ = std::make_unique<JsonWriter>(out_, size_t{1} << 30);
    writer_->begin_object();
    return *writer_;
  }
  void end_event() {
    writer_->end_object();
    writer_.reset();
  }
  void time(JsonWriter& w, const char* key, int64_t ns) {
    scratch_.clear();
    append_microseconds(scratch_, ns);
    w.raw_key(key);
    w.raw_value(scratch_);
  }
  void id_value(JsonWriter& w, const char* key, int64_t v) {
    w.raw_key(key);
    w.integer(v);
  }
  // The head of a complete ("X") slice of category `cat` on CPU thread (pid, tid), `name_json`
  // a JSON string as the dict holds it; the caller adds the rest and calls end_event().
  JsonWriter& begin_cpu_slice(const char* cat, std::string_view name_json, int64_t pid, int64_t tid,
                              int64_t ts, int64_t dur) {
    JsonWriter& w = begin_event();
    w.raw_key("ph");
    w.trusted_string("X");
    w.raw_key("cat");
    w.trusted_string(cat);
    w.raw_key("name");
    w.raw_value(name_json);
    id_value(w, "pid", pid);
    id_value(w, "tid", tid);
    time(w, "ts", ts);
    time(w, "dur", dur == kNone ? 0 : dur);
    return w;
  }
  void cost_args(JsonWriter& w, double flops, double bytes, int64_t counted_time, uint32_t shapes,
                 uint32_t dtype, uint32_t family);
  void header(const Line& l, std::string_view raw_line);
  void gpu_record(const Line& l, size_t index);
  void cpu_record(const Line& l, size_t index);
  void sync_call(const Line& l);
  void mark(const Line& l);
  void range(const Line& l);
  void flow(const char* cat, int64_t id, bool start, int64_t pid, std::string_view tid_json,
            int64_t ts);
  void note_cpu_thread(int64_t pid, int64_t tid) {
    if (pid != kNone && tid != kNone) cpu_threads_.insert({pid, tid});
  }
  void metadata();
  void finish_document(std::string_view header_line);

  const ExportOptions& options_;
  const TraceSink& sink_;
  ReadResult& costs_;
  ExportResult& result_;
  std::string out_;
  std::string scratch_;
  std::unique_ptr<JsonWriter> writer_;
  bool first_event_ = true;
  bool ok_ = true;
  int64_t next_flow_id_ = 1;
  std::unordered_map<int64_t, InstanceCost> cost_of_instance_;  // GPU: instance -> cost
  std::unordered_map<int64_t, size_t> record_of_range_;         // CPU: range id -> record
  std::set<std::pair<int64_t, int64_t>> launches_seen_;         // (pid, correlation)
  // Flows from a launch or a forward op: the flow id its start point waits for.
  std::unordered_map<int64_t, int64_t> fwd_flow_of_range_;  // forward op range id -> flow id
  std::set<std::pair<int64_t, int64_t>> cpu_threads_;
  std::set<std::pair<int64_t, int64_t>> gpu_streams_;  // (device, stream)
  std::string header_line_;
  // The compact form's `"kind":"args"` lines: id -> the arguments' JSON (docs/formats.md §3).
  std::unordered_map<int64_t, std::string> args_text_;

  // Each compiled kernel's compiled_kernel_key of its raw name and graph -> its ATen nodes' op
  // names as a JSON array.
  std::unordered_map<std::string, std::string> compiled_nodes_;

  void define_compiled_kernel(const Line& l) {
    simdjson::dom::parser parser;
    simdjson::dom::element kernel;
    simdjson::dom::array nodes;
    if (l.name.empty() || parser.parse(l.kernel.data(), l.kernel.size()).get(kernel) ||
        kernel["nodes"].get_array().get(nodes)) {
      return;
    }
    std::string ops = "[";
    for (simdjson::dom::element node : nodes) {
      std::string_view op;
      if (node["op"].get_string().get(op)) continue;
      if (ops.size() > 1) ops += ',';
      ops += simdjson::minify(node["op"]);
    }
    ops += ']';
    std::string key;
    compiled_kernel_key(l.name, l.graph, key);
    compiled_nodes_[key] = std::move(ops);
  }
  // A compiled kernel's slice: `"ATen nodes": [...]`, the ops it computes (docs/compile.md).
  void compiled_nodes_arg(JsonWriter& w, std::string_view name_json,
                          std::string_view graph_json = {}) const {
    if (compiled_nodes_.empty()) return;
    std::string key;
    compiled_kernel_key(name_json, graph_json, key);
    auto it = compiled_nodes_.find(key);
    if (it == compiled_nodes_.end()) return;
    w.raw_key("ATen nodes");
    w.raw_value(it->second);
  }

  // Keeps an args line's definition. read_dict has checked the ids before the export starts.
  void define_args(const Line& l) { args_text_[l.id] = std::string(l.args); }
  // Points l.args at the text its `args_ref` names.
  void resolve_args(Line& l) const {
    if (l.args_ref == kNone) return;
    auto it = args_text_.find(l.args_ref);
    if (it != args_text_.end()) l.args = it->second;
  }
};

void Exporter::cost_args(JsonWriter& w, double flops, double bytes, int64_t counted_time,
                         uint32_t shapes, uint32_t dtype, uint32_t family) {
  const Strings& s = costs_.strings;
  if (shapes != 0 && !s.get(shapes).empty()) {
    w.raw_key("shapes");
    w.string(s.get(shapes));
  }
  if (dtype != 0 && !s.get(dtype).empty()) {
    w.raw_key("dtype");
    w.string(s.get(dtype));
  }
  if (family != 0 && !s.get(family).empty()) {
    w.raw_key("family");
    w.string(s.get(family));
  }
  w.raw_key("FLOPs");
  w.number(flops);
  w.raw_key("model bytes");
  w.number(bytes);
  if (counted_time > 0) {
    const double seconds = static_cast<double>(counted_time) * 1e-9;
    if (flops > 0) {
      w.raw_key("TFLOP/s");
      w.number(flops / seconds / 1e12);
    }
    if (bytes > 0) {
      w.raw_key("GB/s");
      w.number(bytes / seconds / 1e9);
    }
  }
}

void Exporter::flow(const char* cat, int64_t id, bool start, int64_t pid, std::string_view tid_json,
                    int64_t ts) {
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string(start ? "s" : "f");
  if (!start) {
    w.raw_key("bp");
    w.trusted_string("e");
  }
  w.raw_key("id");
  w.integer(id);
  w.raw_key("pid");
  w.integer(pid);
  w.raw_key("tid");
  w.raw_value(tid_json);
  time(w, "ts", ts);
  w.raw_key("cat");
  w.trusted_string(cat);
  w.raw_key("name");
  w.trusted_string(cat);
  end_event();
}

void Exporter::header(const Line& l, std::string_view raw_line) {
  (void)l;
  header_line_.assign(raw_line);
}

// A synchronizing API call: a cuda_runtime slice on its CPU thread, as Kineto draws one (parse
// reads it back as a `sync` record).
void Exporter::sync_call(const Line& l) {
  if (l.name.empty()) {
    ++result_.unnamed;
    return;
  }
  if (l.pid == kNone || l.tid == kNone || l.start == kNone) return;
  note_cpu_thread(l.pid, l.tid);
  begin_cpu_slice("cuda_runtime", l.name, l.pid, l.tid, l.start, l.duration);
  end_event();
}

// pyprof.mark("..."): an instant event on its thread's track ("s": "t", thread scope).
void Exporter::mark(const Line& l) {
  if (l.pid == kNone || l.tid == kNone || l.start == kNone || l.name.empty()) return;
  note_cpu_thread(l.pid, l.tid);
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("i");
  w.raw_key("s");
  w.trusted_string("t");
  w.raw_key("cat");
  w.trusted_string("pyprof_mark");
  w.raw_key("name");
  w.raw_value(l.name);
  id_value(w, "pid", l.pid);
  id_value(w, "tid", l.tid);
  time(w, "ts", l.start);
  if (!l.domain.empty()) {
    w.raw_key("args");
    w.begin_object();
    w.raw_key("domain");
    w.raw_value(l.domain);
    w.end_object();
  }
  end_event();
  ++result_.marks;
}

void Exporter::gpu_record(const Line& l, size_t index) {
  if (l.name.empty()) {
    ++result_.unnamed;
    return;
  }
  const ProfRecord& r = costs_.records[index];
  const bool perfetto = options_.format == TraceFormat::kPerfetto;
  const int64_t start = l.start == kNone ? 0 : l.start;
  const int64_t duration = l.duration == kNone ? 0 : l.duration;
  // The launch: one event per call (a graph launch starts several GPU records).
  int64_t flow_id = 0;
  simdjson::padded_string launch_json;
  int64_t launch_start = kNone, launch_duration = kNone, launch_negative = kNone;
  std::string_view api;
  od::parser launch_parser;
  if (!l.launch.empty() && l.pid != kNone && l.tid != kNone) {
    launch_json = simdjson::padded_string(l.launch);
    od::document doc;
    od::object object;
    if (launch_parser.iterate(launch_json).get(doc) == simdjson::SUCCESS &&
        doc.get_object().get(object) == simdjson::SUCCESS) {
      for (auto field_result : object) {
        od::field field;
        std::string_view key, raw;
        if (std::move(field_result).get(field) || field.unescaped_key().get(key) ||
            raw_json_of(field.value(), raw)) {
          break;
        }
        int64_t v = 0;
        bool number = std::from_chars(raw.data(), raw.data() + raw.size(), v).ec == std::errc();
        if (key == "api") api = raw;
        if (key == "start" && number) launch_start = v;
        if (key == "duration" && number) launch_duration = v;
        if (key == "negative_duration" && number) launch_negative = v;
      }
    }
  }
  if (launch_start != kNone && !api.empty()) {
    flow_id = next_flow_id_++;
    const bool first = launches_seen_.insert({l.pid, l.correlation}).second;
    note_cpu_thread(l.pid, l.tid);
    if (first) {
      JsonWriter& w =
          begin_cpu_slice("cuda_runtime", api, l.pid, l.tid, launch_start, launch_duration);
      if (perfetto) {
        id_value(w, "bind_id", flow_id);
        w.raw_key("flow_out");
        w.boolean(true);
      }
      w.raw_key("args");
      w.begin_object();
      id_value(w, "correlation", l.correlation);
      if (launch_negative != kNone) {
        w.raw_key("pyprof");
        w.begin_object();
        id_value(w, "negative_duration", launch_negative);
        w.end_object();
      }
      w.end_object();
      end_event();
    } else if (perfetto) {
      flow_id = 0;  // flow v2 binds one flow to a slice: a graph launch shows its first
    }
    if (!perfetto) {
      flow("ac2g", flow_id, true, l.pid, std::to_string(l.tid), launch_start);
    }
  }

  const int64_t device = l.device == kNone ? -1 : l.device;
  const int64_t stream = l.stream == kNone ? -1 : l.stream;
  gpu_streams_.insert({device, stream});
  const std::string gpu_pid = device >= 0 ? std::to_string(device) : "\"GPU ?\"";
  const std::string gpu_tid = stream >= 0 ? std::to_string(stream) : "\"stream ?\"";
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("X");
  w.raw_key("cat");
  const bool kernel = is(l.kind, "kernel");
  w.trusted_string(kernel ? "kernel" : is(l.kind, "memcpy") ? "gpu_memcpy" : "gpu_memset");
  w.raw_key("name");
  w.raw_value(kernel && !l.long_name.empty() ? l.long_name : l.name);
  w.raw_key("pid");
  w.raw_value(gpu_pid);
  w.raw_key("tid");
  w.raw_value(gpu_tid);
  time(w, "ts", start);
  time(w, "dur", duration);
  if (perfetto && flow_id != 0) {
    id_value(w, "bind_id", flow_id);
    w.raw_key("flow_in");
    w.boolean(true);
  }
  w.raw_key("args");
  w.begin_object();
  id_value(w, "device", device);
  if (l.context != kNone) id_value(w, "context", l.context);
  id_value(w, "stream", stream);
  if (l.correlation != kNone) id_value(w, "correlation", l.correlation);
  if (kernel) {
    if (!l.grid.empty()) {
      w.raw_key("grid");
      w.raw_value(l.grid);
    }
    if (!l.block.empty()) {
      w.raw_key("block");
      w.raw_value(l.block);
    }
    if (l.registers != kNone) id_value(w, "registers per thread", l.registers);
    if (l.shared_memory != kNone) id_value(w, "shared memory", l.shared_memory);
  } else if (l.bytes != kNone) {
    id_value(w, "bytes", l.bytes);
  }
  if (!l.op.empty()) {
    w.raw_key("op");
    w.raw_value(l.op);
  }
  if (!l.dir.empty()) {
    w.raw_key("direction");
    w.raw_value(l.dir);
  }
  if (!l.module.empty()) {
    w.raw_key("module");
    w.raw_value(l.module);
  }
  if (!l.bwd_node.empty()) {
    w.raw_key("backward node");
    w.raw_value(l.bwd_node);
  }
  compiled_nodes_arg(w, l.name, l.graph);
  if (r.modeled) {
    cost_args(w, r.flops, r.bytes, counted_time(r), 0, 0, 0);
    if (r.tc >= 0) {
      w.raw_key("Tensor Cores");
      w.boolean(r.tc == 1);
    }
  }
  // What the Kineto encoding loses (docs/export.md, "pyprof args").
  w.raw_key("pyprof");
  w.begin_object();
  if (kernel) {
    w.raw_key("name");
    w.raw_value(l.name);
    if (l.shared_static != kNone) id_value(w, "shared_static", l.shared_static);
    if (l.shared_dynamic != kNone) id_value(w, "shared_dynamic", l.shared_dynamic);
  } else if (is(l.kind, "memcpy")) {
    if (!l.copy_kind.empty()) {
      w.raw_key("copy_kind");
      w.raw_value(l.copy_kind);
    }
    if (!l.src_kind.empty()) {
      w.raw_key("src_kind");
      w.raw_value(l.src_kind);
    }
    if (!l.dst_kind.empty()) {
      w.raw_key("dst_kind");
      w.raw_value(l.dst_kind);
    }
  } else {
    if (l.value != kNone) id_value(w, "value", l.value);
    if (!l.mem_kind.empty()) {
      w.raw_key("mem_kind");
      w.raw_value(l.mem_kind);
    }
  }
  if (l.pid != kNone) id_value(w, "pid", l.pid);
  if (l.graph_node != kNone) id_value(w, "graph_node", l.graph_node);
  if (l.negative_duration != kNone) id_value(w, "negative_duration", l.negative_duration);
  w.end_object();
  w.end_object();
  end_event();
  if (!perfetto && flow_id != 0) flow("ac2g", flow_id, false, device, gpu_tid, start);

  // The op range's args: the instance's whole cost and its kernels' counted share.
  if (l.instance != kNone) {
    InstanceCost& c = cost_of_instance_[l.instance];
    if (r.modeled) {
      c.modeled = true;
      c.op_flops = r.op_flops;
      c.op_bytes = r.op_bytes;
      c.flops += r.flops;
      c.bytes += r.bytes;
      c.counted_time += counted_time(r);
      c.shapes = r.shapes;
      c.dtype = r.dtype;
      c.family = r.family;
    }
    if (c.module.empty() && !l.module.empty()) c.module.assign(l.module);
    if (c.dir.empty() && !l.dir.empty()) c.dir.assign(l.dir);
  }
}

void Exporter::cpu_record(const Line& l, size_t index) {
  if (l.range != kNone) {  // drawn with the range lines
    record_of_range_[l.range] = index;
    return;
  }
  // A dict without range lines: the op record itself is the op's range.
  const ProfRecord& r = costs_.records[index];
  if (l.name.empty()) {
    ++result_.unnamed;
    return;
  }
  if (l.pid == kNone || l.tid == kNone || l.start == kNone) return;
  note_cpu_thread(l.pid, l.tid);
  JsonWriter& w = begin_cpu_slice("cpu_op", l.name, l.pid, l.tid, l.start, l.duration);
  w.raw_key("args");
  w.begin_object();
  if (l.id != kNone) id_value(w, "External id", l.id);
  if (l.seq != kNone && l.seq >= 0) id_value(w, "Sequence number", l.seq);
  if (!l.dir.empty()) {
    w.raw_key("direction");
    w.raw_value(l.dir);
  }
  if (!l.module.empty()) {
    w.raw_key("module");
    w.raw_value(l.module);
  }
  compiled_nodes_arg(w, l.name, l.graph);
  if (r.modeled) cost_args(w, r.op_flops, r.op_bytes, counted_time(r), r.shapes, r.dtype, r.family);
  w.raw_key("pyprof");
  w.begin_object();
  w.raw_key("kind");
  w.trusted_string(l.bwd_node.empty() || is(l.dir, "fprop") ? "op" : "node");
  if (!l.args.empty()) {
    w.raw_key("args");
    w.raw_value(l.args);
  }
  w.end_object();
  w.end_object();
  end_event();
}

void Exporter::range(const Line& l) {
  if (l.name.empty() || l.range_kind.empty()) {
    ++result_.unnamed;
    return;
  }
  ++result_.ranges;
  if (l.pid == kNone || l.tid == kNone || l.start == kNone) return;
  note_cpu_thread(l.pid, l.tid);
  const bool perfetto = options_.format == TraceFormat::kPerfetto;
  const std::string_view kind = unquoted(l.range_kind);
  const bool op = kind == "op", node = kind == "node", module = kind == "module";
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("X");
  w.raw_key("cat");
  w.trusted_string(op || node ? "cpu_op" : module ? "python_function" : "user_annotation");
  w.raw_key("name");
  if (module) {
    scratch_.assign("\"nn.Module: ");
    scratch_ += unquoted(l.name);  // the dict's escaped text inside new quotes: valid JSON
    scratch_ += '"';
    w.raw_value(scratch_);
  } else {
    w.raw_value(l.name);
  }
  id_value(w, "pid", l.pid);
  id_value(w, "tid", l.tid);
  time(w, "ts", l.start);
  time(w, "dur", l.duration == kNone ? 0 : l.duration);
  // Flow v2: a forward op starts the flow to its backward node, the node ends it.
  int64_t flow_out = 0, flow_in = 0;
  if (op) {
    auto it = fwd_flow_of_range_.find(l.id);
    if (it != fwd_flow_of_range_.end()) flow_out = it->second;
  }
  if (node && l.fwd != kNone) {
    auto it = fwd_flow_of_range_.find(l.fwd);
    if (it != fwd_flow_of_range_.end()) flow_in = it->second;
  }
  if (perfetto && (flow_out != 0 || flow_in != 0)) {
    id_value(w, "bind_id", flow_out != 0 ? flow_out : flow_in);
    w.raw_key(flow_out != 0 ? "flow_out" : "flow_in");
    w.boolean(true);
  }
  w.raw_key("args");
  w.begin_object();
  if (l.op_id != kNone) id_value(w, "External id", l.op_id);
  if (l.seq != kNone) id_value(w, "Sequence number", l.seq);
  if (node && l.fwd_tid != kNone) id_value(w, "Fwd thread id", l.fwd_tid);
  if (op || node) {
    auto gpu = cost_of_instance_.find(l.id);
    auto cpu = record_of_range_.find(l.id);
    if (gpu != cost_of_instance_.end()) {
      const InstanceCost& c = gpu->second;
      if (!c.dir.empty()) {
        w.raw_key("direction");
        w.raw_value(c.dir);
      }
      if (!c.module.empty()) {
        w.raw_key("module");
        w.raw_value(c.module);
      }
      if (c.modeled) {
        cost_args(w, c.op_flops, c.op_bytes, c.counted_time, c.shapes, c.dtype, c.family);
      }
    } else if (cpu != record_of_range_.end()) {
      const ProfRecord& r = costs_.records[cpu->second];
      compiled_nodes_arg(w, l.name);
      w.raw_key("direction");
      w.trusted_string(r.dir == Dir::kFprop ? "fprop" : r.dir == Dir::kBprop ? "bprop" : "none");
      if (r.module != 0) {
        w.raw_key("module");
        w.string(costs_.strings.get(r.module));
      }
      if (r.modeled) {
        cost_args(w, r.op_flops, r.op_bytes, counted_time(r), r.shapes, r.dtype, r.family);
        w.raw_key("counted");
        w.boolean(r.counted);
      }
    }
  } else if (module && !l.detail.empty()) {
    w.raw_key("module type");
    w.raw_value(l.detail);
  }
  w.raw_key("pyprof");
  w.begin_object();
  w.raw_key("kind");
  w.raw_value(l.range_kind);
  w.raw_key("name");
  w.raw_value(l.name);
  if (l.id != kNone) id_value(w, "id", l.id);
  if (!l.dialect.empty()) {
    w.raw_key("dialect");
    w.raw_value(l.dialect);
  }
  if (!l.domain.empty()) {
    w.raw_key("domain");
    w.raw_value(l.domain);
  }
  if (l.duration == kNone) {
    w.raw_key("open");
    w.boolean(true);
  }
  if (l.rf_tid != kNone) id_value(w, "rf_tid", l.rf_tid);
  if (l.fwd_tid != kNone) id_value(w, "fwd_tid", l.fwd_tid);
  if (!l.detail.empty()) {
    w.raw_key("detail");
    w.raw_value(l.detail);
  }
  if (!l.stack.empty()) {
    w.raw_key("stack");
    w.raw_value(l.stack);
  }
  if (!l.args.empty()) {
    w.raw_key("args");
    w.raw_value(l.args);
  }
  w.end_object();
  w.end_object();
  end_event();
  if (!perfetto && op) {
    auto it = fwd_flow_of_range_.find(l.id);
    if (it != fwd_flow_of_range_.end()) {
      flow("fwdbwd", it->second, true, l.pid, std::to_string(l.tid), l.start);
    }
  }
  if (!perfetto && node && flow_in != 0) {
    flow("fwdbwd", flow_in, false, l.pid, std::to_string(l.tid), l.start);
  }
}

void Exporter::metadata() {
  // Processes and threads named, CPU processes first, then the GPUs by device.
  auto meta = [&](const char* name, const std::string& pid, const std::string& tid, const char* arg,
                  const std::string& value_json) {
    JsonWriter& w = begin_event();
    w.raw_key("ph");
    w.trusted_string("M");
    w.raw_key("name");
    w.trusted_string(name);
    w.raw_key("pid");
    w.raw_value(pid);
    if (!tid.empty()) {
      w.raw_key("tid");
      w.raw_value(tid);
    }
    w.raw_key("args");
    w.begin_object();
    w.raw_key(arg);
    w.raw_value(value_json);
    w.end_object();
    end_event();
  };
  std::set<int64_t> pids;
  for (const auto& [pid, tid] : cpu_threads_) pids.insert(pid);
  int64_t sort = 0;
  for (int64_t pid : pids) {
    const std::string p = std::to_string(pid);
    meta("process_name", p, "", "name", fmt::format("\"python (pid {})\"", pid));
    meta("process_sort_index", p, "", "sort_index", std::to_string(sort++));
  }
  for (const auto& [pid, tid] : cpu_threads_) {
    meta("thread_name", std::to_string(pid), std::to_string(tid), "name",
         fmt::format("\"thread {}\"", tid));
  }
  std::set<int64_t> devices;
  for (const auto& [device, stream] : gpu_streams_) devices.insert(device);
  for (int64_t device : devices) {
    const std::string p = device >= 0 ? std::to_string(device) : "\"GPU ?\"";
    meta("process_name", p, "", "name",
         device >= 0 ? fmt::format("\"GPU {}\"", device) : std::string("\"GPU ?\""));
    meta("process_sort_index", p, "", "sort_index", std::to_string(1000000 + device));
  }
  for (const auto& [device, stream] : gpu_streams_) {
    const std::string p = device >= 0 ? std::to_string(device) : "\"GPU ?\"";
    const std::string t = stream >= 0 ? std::to_string(stream) : "\"stream ?\"";
    meta("thread_name", p, t, "name",
         stream >= 0 ? fmt::format("\"stream {}\"", stream) : std::string("\"stream ?\""));
    meta("thread_sort_index", p, t, "sort_index", std::to_string(stream));
  }
}

// The top-level keys after traceEvents: what the header says that a Kineto reader reads
// (deviceProperties, distributedInfo, baseTimeNanoseconds), and the header itself.
void Exporter::finish_document(std::string_view header_line) {
  out_ += "\n],\n\"displayTimeUnit\":\"ns\"";
  simdjson::padded_string header(header_line);
  od::parser parser;
  od::document doc;
  od::object object;
  std::string devices, distributed;
  if (parser.iterate(header).get(doc) == simdjson::SUCCESS &&
      doc.get_object().get(object) == simdjson::SUCCESS) {
    for (auto field_result : object) {
      od::field field;
      std::string_view key, raw;
      if (std::move(field_result).get(field) || field.unescaped_key().get(key)) break;
      od::value value = field.value();
      if (key == "devices") {
        od::array array;
        if (value.get_array().get(array)) break;
        devices = "[";
        for (auto item : array) {
          od::object d;
          if (item.get_object().get(d)) break;
          std::string entry;
          JsonWriter w(entry, size_t{1} << 20);
          w.begin_object();
          for (auto df : d) {
            od::field f;
            std::string_view k, v;
            if (std::move(df).get(f) || f.unescaped_key().get(k) || raw_json_of(f.value(), v)) {
              break;
            }
            while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
            if (k == "id" || k == "name") {
              w.raw_key(k);
              w.raw_value(v);
            } else if (k == "sm_count") {
              w.raw_key("numSms");
              w.raw_value(v);
            } else if (k == "total_memory") {
              w.raw_key("totalGlobalMem");
              w.raw_value(v);
            } else if (k == "clock_hz") {
              int64_t hz = 0;
              std::from_chars(v.data(), v.data() + v.size(), hz);
              w.raw_key("clockRate");  // kHz, as cudaDeviceProp
              w.integer(hz / 1000);
            } else if (k == "memory_bandwidth") {
              w.raw_key("memoryBandwidth");  // bytes/s; pyprof's own key
              w.raw_value(v);
            } else if (k == "compute_capability" && v.size() > 2) {
              int64_t major = 0, minor = 0;
              std::string_view inner = v.substr(1, v.size() - 2);
              size_t comma = inner.find(',');
              std::from_chars(inner.data(), inner.data() + inner.size(), major);
              if (comma != std::string_view::npos) {
                std::from_chars(inner.data() + comma + 1, inner.data() + inner.size(), minor);
              }
              w.raw_key("computeMajor");
              w.integer(major);
              w.raw_key("computeMinor");
              w.integer(minor);
            }
          }
          w.end_object();
          w.finish();
          if (devices.size() > 1) devices += ',';
          devices += entry;
        }
        devices += "]";
      } else if (raw_json_of(value, raw) == simdjson::SUCCESS) {
        while (!raw.empty() && raw.back() == ' ') raw.remove_suffix(1);
        if (key == "base_time_ns") {
          out_ += ",\n\"baseTimeNanoseconds\":";
          out_ += raw;
        } else if (key == "rank" || key == "world_size" || key == "backend") {
          if (!distributed.empty()) distributed += ',';
          distributed += '"';
          distributed += key;
          distributed += "\":";
          distributed += raw;
        }
      }
    }
  }
  if (devices.size() > 2) out_ += ",\n\"deviceProperties\":" + devices;
  if (!distributed.empty()) out_ += ",\n\"distributedInfo\":{" + distributed + "}";
  out_ += ",\n\"pyprof_export\":{\"version\":1,\"format\":\"";
  out_ += options_.format == TraceFormat::kPerfetto ? "perfetto" : "chrome";
  out_ += "\",\"dict_header\":";
  out_ += header_line;
  out_ += "}\n}\n";
}

bool Exporter::run(std::FILE* in, std::string& error) {
  out_ = "{\"schemaVersion\":1,\n\"traceEvents\":[";
  od::parser parser;
  // On-Demand reads only the fields it is asked for; the DOM parser checks every byte of the
  // line, since values are copied into the trace as the dict holds them.
  simdjson::dom::parser validator;
  std::string padded;
  char* line = nullptr;
  size_t capacity = 0;
  ssize_t length;
  int64_t line_number = 0;
  size_t record_index = 0;
  Line l;
  // Forward op -> backward node pairs need the op's flow id before the op's range is written:
  // range lines name their forward op (`fwd`) after it, so they are collected in a first look.
  std::vector<std::string> pending_ranges;
  bool ok = true;
  while (ok && (length = getline(&line, &capacity, in)) >= 0) {
    ++line_number;
    std::string_view text(line, static_cast<size_t>(length));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (text.empty()) continue;
    padded.assign(text);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    if (auto invalid = validator.parse(padded.data(), text.size(), false).error()) {
      error = fmt::format("line {}: not valid JSON ({}; a damaged net.dict?)", line_number,
                          simdjson::error_message(invalid));
      ok = false;
      break;
    }
    if (read_line(parser, padded, l) != simdjson::SUCCESS) {
      error =
          fmt::format("line {}: not a JSON object (a truncated or damaged net.dict?)", line_number);
      ok = false;
      break;
    }
    if (l.header) {
      header(l, text);
      continue;
    }
    if (is(l.kind, "args")) {
      define_args(l);
      continue;
    }
    resolve_args(l);
    if (is(l.kind, "range")) {
      result_.had_ranges = true;
      if (l.fwd != kNone && !fwd_flow_of_range_.count(l.fwd)) {
        fwd_flow_of_range_[l.fwd] = next_flow_id_++;
      }
      pending_ranges.emplace_back(text);
      continue;
    }
    // Cross-rank spans of the communication backend: for prof's ranks report, not exported.
    if (is(l.kind, "comm")) continue;
    if (is(l.kind, "mark")) {
      mark(l);
      ok = flush();
      continue;
    }
    // What an Inductor kernel computes: its costs are prof's; its node list goes on its slices.
    if (is(l.kind, "compiled_kernel")) {
      define_compiled_kernel(l);
      continue;
    }
    if (is(l.kind, "sync")) {
      sync_call(l);
      ok = flush();
      continue;
    }
    if (record_index >= costs_.records.size()) {
      error = fmt::format("line {}: more records than prof read", line_number);
      ok = false;
      break;
    }
    if (is(l.kind, "op")) {
      cpu_record(l, record_index);
    } else {
      gpu_record(l, record_index);
    }
    ++record_index;
    ok = flush();
  }
  std::free(line);
  if (!ok) return false;
  result_.records = static_cast<int64_t>(record_index);
  for (const std::string& text : pending_ranges) {
    padded.assign(text);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    if (read_line(parser, padded, l) != simdjson::SUCCESS) continue;
    resolve_args(l);
    range(l);
    if (!flush()) return false;
  }
  metadata();
  finish_document(header_line_);
  return flush(true);
}

}  // namespace

bool export_trace(const std::string& dict_path, const ExportOptions& options, const TraceSink& sink,
                  ExportResult& result, std::string& error) {
  ReadResult costs;
  {
    std::FILE* in = std::fopen(dict_path.c_str(), "rb");
    if (!in) {
      error = fmt::format("cannot read {}: {}", dict_path, std::strerror(errno));
      return false;
    }
    ReadOptions read_options;
    read_options.allow_tf32 = options.allow_tf32;
    bool read = read_dict(in, read_options, costs, error);
    std::fclose(in);
    if (!read) {
      error = dict_path + ": " + error;
      return false;
    }
    if (costs.skipped_lines > 0) {
      error =
          fmt::format("{}: {} unreadable lines (a truncated or damaged net.dict?); {}", dict_path,
                      costs.skipped_lines, costs.warnings.empty() ? "" : costs.warnings.front());
      return false;
    }
    assign_costs(costs);
  }
  result.cpu_only = costs.cpu_only;
  std::FILE* in = std::fopen(dict_path.c_str(), "rb");
  if (!in) {
    error = fmt::format("cannot read {}: {}", dict_path, std::strerror(errno));
    return false;
  }
  Exporter exporter(options, sink, costs, result);
  bool ok = exporter.run(in, error);
  std::fclose(in);
  if (!ok) {
    if (!error.empty()) error = dict_path + ": " + error;
    return false;
  }
  if (result.unnamed > 0) {
    result.notes.push_back(fmt::format(
        "{} lines left out: a record or range line without its name, or a range line without "
        "its kind (`range`); a damaged net.dict?",
        result.unnamed));
  }
  if (!result.had_ranges) {
    result.notes.push_back(
        result.cpu_only
            ? "the dict has no range lines: ops are drawn from their records, without module "
              "and user ranges or backward nodes (parse with `pyprof parse --ranges`, or give "
              "`pyprof export` the trace itself)"
            : "the dict has no range lines: only GPU records and their launch calls are drawn, "
              "without op, module and user ranges, backward nodes or their flows (parse with "
              "`pyprof parse --ranges`, or give `pyprof export` the trace itself)");
  }
  return true;
}

}  // namespace pyprof::prof
