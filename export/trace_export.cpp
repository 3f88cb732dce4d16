#include "export/trace_export.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/dict_schema.h"
#include "common/json_writer.h"
#include "prof/dict_reader.h"
#include "prof/memory_events.h"
#include "prof/memory_timeline.h"
#include "prof/records.h"

namespace pyprof::prof {

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

using dict::Key;
using dict::LineKind;

// What the GPU records of one op instance (or a CPU op record) say about its op, for the
// op range's args.
struct InstanceCost {
  double op_flops = 0, op_bytes = 0;  // the whole op's
  double flops = 0, bytes = 0;        // counted
  int64_t counted_time = 0;
  uint32_t shapes = 0, dtype = 0, family = 0;
  std::string module;
  std::string dir;
  bool modeled = false;
};

// A range line kept for after the records: its text and line number.
struct PendingRange {
  std::string text;
  int64_t line = 0;
};

class Exporter {
 public:
  Exporter(const ExportOptions& options, const TraceSink& sink, const ReadResult& costs,
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
  // Writes `key` with the string `value`.
  void text(JsonWriter& w, const char* key, std::string_view value) {
    w.raw_key(key);
    w.string(value);
  }
  // The head of a complete ("X") slice of category `cat` on CPU thread (pid, tid); the caller
  // adds the rest and calls end_event().
  JsonWriter& begin_cpu_slice(const char* cat, std::string_view name, int64_t pid, int64_t tid,
                              int64_t ts, int64_t dur) {
    JsonWriter& w = begin_event();
    w.raw_key("ph");
    w.trusted_string("X");
    w.raw_key("cat");
    w.trusted_string(cat);
    text(w, "name", name);
    id_value(w, "pid", pid);
    id_value(w, "tid", tid);
    time(w, "ts", ts);
    time(w, "dur", dur == kNone ? 0 : dur);
    return w;
  }
  void cost_args(JsonWriter& w, double flops, double bytes, int64_t counted_time, uint32_t shapes,
                 uint32_t dtype, uint32_t family);
  void gpu_record(const DictLine& l, size_t index);
  void cpu_record(const DictLine& l, size_t index);
  void sync_call(const DictLine& l);
  void mark(const DictLine& l);
  bool memory_counters();
  void range(const DictLine& l);
  void flow(const char* cat, int64_t id, bool start, int64_t pid, std::string_view tid_json,
            int64_t ts);
  void note_cpu_thread(int64_t pid, int64_t tid) {
    if (pid != kNone && tid != kNone) cpu_threads_.insert({pid, tid});
  }
  void metadata();
  void finish_document(const DictHeader& header);

  const ExportOptions& options_;
  const TraceSink& sink_;
  const ReadResult& costs_;
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
  std::set<int64_t> counter_pids_;                     // processes holding memory counter tracks
  std::set<std::pair<int64_t, int64_t>> gpu_streams_;  // (device, stream)

  // Each compiled kernel's compiled_kernel_key of its name and graph -> its ATen nodes' op
  // names as a JSON array.
  std::unordered_map<std::string, std::string> compiled_nodes_;

  void define_compiled_kernel(const DictLine& l) {
    simdjson::dom::parser parser;
    simdjson::dom::element kernel;
    simdjson::dom::array nodes;
    const std::string_view kernel_json = l.raw(Key::kernel);
    if (!l.has(Key::name) || parser.parse(kernel_json.data(), kernel_json.size()).get(kernel) ||
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
    compiled_kernel_key(l.str(Key::name), l.str(Key::graph), key);
    compiled_nodes_[key] = std::move(ops);
  }
  // A compiled kernel's slice: `"ATen nodes": [...]`, the ops it computes (docs/compile.md).
  void compiled_nodes_arg(JsonWriter& w, std::string_view name, std::string_view graph = {}) const {
    if (compiled_nodes_.empty()) return;
    std::string key;
    compiled_kernel_key(name, graph, key);
    auto it = compiled_nodes_.find(key);
    if (it == compiled_nodes_.end()) return;
    w.raw_key("ATen nodes");
    w.raw_value(it->second);
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

// A synchronizing API call: a cuda_runtime slice on its CPU thread, as Kineto draws one (parse
// reads it back as a `sync` record).
void Exporter::sync_call(const DictLine& l) {
  if (!l.has(Key::name)) {
    ++result_.unnamed;
    return;
  }
  const int64_t pid = l.num(Key::pid, kNone), tid = l.num(Key::tid, kNone);
  const int64_t start = l.num(Key::start, kNone);
  if (pid == kNone || tid == kNone || start == kNone) return;
  note_cpu_thread(pid, tid);
  begin_cpu_slice("cuda_runtime", l.str(Key::name), pid, tid, start, l.num(Key::duration, kNone));
  end_event();
}

// pyprof.mark("..."): an instant event on its thread's track ("s": "t", thread scope).
void Exporter::mark(const DictLine& l) {
  const int64_t pid = l.num(Key::pid, kNone), tid = l.num(Key::tid, kNone);
  const int64_t start = l.num(Key::start, kNone);
  if (pid == kNone || tid == kNone || start == kNone || !l.has(Key::name)) return;
  note_cpu_thread(pid, tid);
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("i");
  w.raw_key("s");
  w.trusted_string("t");
  w.raw_key("cat");
  w.trusted_string("pyprof_mark");
  text(w, "name", l.str(Key::name));
  id_value(w, "pid", pid);
  id_value(w, "tid", tid);
  time(w, "ts", start);
  if (l.has(Key::domain)) {
    w.raw_key("args");
    w.begin_object();
    text(w, "domain", l.str(Key::domain));
    w.end_object();
  }
  end_event();
  ++result_.marks;
}

void Exporter::gpu_record(const DictLine& l, size_t index) {
  if (!l.has(Key::name)) {
    ++result_.unnamed;
    return;
  }
  const ProfRecord& r = costs_.records[index];
  const bool perfetto = options_.format == TraceFormat::kPerfetto;
  const int64_t start = l.num(Key::start, 0);
  const int64_t duration = l.num(Key::duration, 0);
  const int64_t pid = l.num(Key::pid, kNone), tid = l.num(Key::tid, kNone);
  const int64_t correlation = l.num(Key::correlation, kNone);
  // The launch: one event per call (a graph launch starts several GPU records).
  int64_t flow_id = 0;
  const DictLine::Launch* launch = pid != kNone && tid != kNone ? l.launch() : nullptr;
  if (launch != nullptr && launch->start && !launch->api.empty()) {
    flow_id = next_flow_id_++;
    const bool first = launches_seen_.insert({pid, correlation}).second;
    note_cpu_thread(pid, tid);
    if (first) {
      JsonWriter& w = begin_cpu_slice("cuda_runtime", launch->api, pid, tid, *launch->start,
                                      launch->duration.value_or(kNone));
      if (perfetto) {
        id_value(w, "bind_id", flow_id);
        w.raw_key("flow_out");
        w.boolean(true);
      }
      w.raw_key("args");
      w.begin_object();
      id_value(w, "correlation", correlation);
      if (launch->negative_duration) {
        w.raw_key("pyprof");
        w.begin_object();
        id_value(w, "negative_duration", *launch->negative_duration);
        w.end_object();
      }
      w.end_object();
      end_event();
    } else if (perfetto) {
      flow_id = 0;  // flow v2 binds one flow to a slice: a graph launch shows its first
    }
    if (!perfetto) {
      flow("ac2g", flow_id, true, pid, std::to_string(tid), *launch->start);
    }
  }

  const int64_t device = l.num(Key::device, -1);
  const int64_t stream = l.num(Key::stream, -1);
  gpu_streams_.insert({device, stream});
  const std::string gpu_pid = device >= 0 ? std::to_string(device) : "\"GPU ?\"";
  const std::string gpu_tid = stream >= 0 ? std::to_string(stream) : "\"stream ?\"";
  const LineKind kind = l.kind();
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("X");
  w.raw_key("cat");
  const bool kernel = kind == LineKind::kKernel;
  w.trusted_string(kernel ? "kernel" : kind == LineKind::kMemcpy ? "gpu_memcpy" : "gpu_memset");
  text(w, "name", kernel && l.has(Key::long_name) ? l.str(Key::long_name) : l.str(Key::name));
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
  if (l.number(Key::context)) id_value(w, "context", l.num(Key::context, 0));
  id_value(w, "stream", stream);
  if (correlation != kNone) id_value(w, "correlation", correlation);
  if (kernel) {
    if (l.has(Key::grid)) {
      w.raw_key("grid");
      w.raw_value(l.raw(Key::grid));
    }
    if (l.has(Key::block)) {
      w.raw_key("block");
      w.raw_value(l.raw(Key::block));
    }
    if (auto v = l.number(Key::registers)) id_value(w, "registers per thread", *v);
    if (auto v = l.number(Key::shared_memory)) id_value(w, "shared memory", *v);
  } else if (auto v = l.number(Key::bytes)) {
    id_value(w, "bytes", *v);
  }
  if (l.has(Key::op)) text(w, "op", l.str(Key::op));
  if (l.has(Key::dir)) text(w, "direction", l.str(Key::dir));
  if (l.has(Key::module)) text(w, "module", l.str(Key::module));
  if (l.has(Key::bwd_node)) text(w, "backward node", l.str(Key::bwd_node));
  compiled_nodes_arg(w, l.str(Key::name), l.str(Key::compiled_graph));
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
    text(w, "name", l.str(Key::name));
    if (auto v = l.number(Key::shared_static)) id_value(w, "shared_static", *v);
    if (auto v = l.number(Key::shared_dynamic)) id_value(w, "shared_dynamic", *v);
  } else if (kind == LineKind::kMemcpy) {
    if (l.has(Key::copy_kind)) text(w, "copy_kind", l.str(Key::copy_kind));
    if (l.has(Key::src_kind)) text(w, "src_kind", l.str(Key::src_kind));
    if (l.has(Key::dst_kind)) text(w, "dst_kind", l.str(Key::dst_kind));
  } else {
    if (auto v = l.number(Key::value)) id_value(w, "value", *v);
    if (l.has(Key::mem_kind)) text(w, "mem_kind", l.str(Key::mem_kind));
  }
  if (pid != kNone) id_value(w, "pid", pid);
  if (auto v = l.number(Key::graph_node)) id_value(w, "graph_node", *v);
  if (auto v = l.number(Key::negative_duration)) id_value(w, "negative_duration", *v);
  w.end_object();
  w.end_object();
  end_event();
  if (!perfetto && flow_id != 0) flow("ac2g", flow_id, false, device, gpu_tid, start);

  // The op range's args: the instance's whole cost and its kernels' counted share.
  if (auto instance = l.number(Key::instance)) {
    InstanceCost& c = cost_of_instance_[*instance];
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
    if (c.module.empty() && l.has(Key::module)) c.module.assign(l.str(Key::module));
    if (c.dir.empty() && l.has(Key::dir)) c.dir.assign(l.str(Key::dir));
  }
}

void Exporter::cpu_record(const DictLine& l, size_t index) {
  if (auto range = l.number(Key::range)) {  // drawn with the range lines
    record_of_range_[*range] = index;
    return;
  }
  // A dict without range lines: the op record itself is the op's range.
  const ProfRecord& r = costs_.records[index];
  if (!l.has(Key::name)) {
    ++result_.unnamed;
    return;
  }
  const int64_t pid = l.num(Key::pid, kNone), tid = l.num(Key::tid, kNone);
  const int64_t start = l.num(Key::start, kNone);
  if (pid == kNone || tid == kNone || start == kNone) return;
  note_cpu_thread(pid, tid);
  JsonWriter& w =
      begin_cpu_slice("cpu_op", l.str(Key::name), pid, tid, start, l.num(Key::duration, kNone));
  w.raw_key("args");
  w.begin_object();
  if (auto v = l.number(Key::id)) id_value(w, "External id", *v);
  if (auto v = l.number(Key::seq); v && *v >= 0) id_value(w, "Sequence number", *v);
  if (l.has(Key::dir)) text(w, "direction", l.str(Key::dir));
  if (l.has(Key::module)) text(w, "module", l.str(Key::module));
  compiled_nodes_arg(w, l.str(Key::name), l.str(Key::compiled_graph));
  if (r.modeled) cost_args(w, r.op_flops, r.op_bytes, counted_time(r), r.shapes, r.dtype, r.family);
  w.raw_key("pyprof");
  w.begin_object();
  w.raw_key("kind");
  w.trusted_string(!l.has(Key::bwd_node) || l.str(Key::dir) == dict::direction::kFprop ? "op"
                                                                                       : "node");
  if (l.has(Key::args)) {
    w.raw_key("args");
    w.raw_value(l.raw(Key::args));
  }
  w.end_object();
  w.end_object();
  end_event();
}

void Exporter::range(const DictLine& l) {
  const std::string_view kind = l.str(Key::range);
  if (!l.has(Key::name) || kind.empty()) {
    ++result_.unnamed;
    return;
  }
  ++result_.ranges;
  const int64_t pid = l.num(Key::pid, kNone), tid = l.num(Key::tid, kNone);
  const int64_t start = l.num(Key::start, kNone);
  if (pid == kNone || tid == kNone || start == kNone) return;
  note_cpu_thread(pid, tid);
  const bool perfetto = options_.format == TraceFormat::kPerfetto;
  const bool op = kind == dict::range_kind::kOp, node = kind == dict::range_kind::kNode,
             module = kind == dict::range_kind::kModule;
  const std::string_view name = l.str(Key::name);
  const int64_t id = l.num(Key::id, kNone), fwd = l.num(Key::fwd, kNone);
  const std::optional<int64_t> duration = l.number(Key::duration);
  JsonWriter& w = begin_event();
  w.raw_key("ph");
  w.trusted_string("X");
  w.raw_key("cat");
  w.trusted_string(op || node ? "cpu_op" : module ? "python_function" : "user_annotation");
  if (module) {
    scratch_.assign("nn.Module: ");
    scratch_ += name;
    text(w, "name", scratch_);
  } else {
    text(w, "name", name);
  }
  id_value(w, "pid", pid);
  id_value(w, "tid", tid);
  time(w, "ts", start);
  time(w, "dur", duration.value_or(0));
  // Flow v2: a forward op starts the flow to its backward node, the node ends it.
  int64_t flow_out = 0, flow_in = 0;
  if (op) {
    auto it = fwd_flow_of_range_.find(id);
    if (it != fwd_flow_of_range_.end()) flow_out = it->second;
  }
  if (node && fwd != kNone) {
    auto it = fwd_flow_of_range_.find(fwd);
    if (it != fwd_flow_of_range_.end()) flow_in = it->second;
  }
  if (perfetto && (flow_out != 0 || flow_in != 0)) {
    id_value(w, "bind_id", flow_out != 0 ? flow_out : flow_in);
    w.raw_key(flow_out != 0 ? "flow_out" : "flow_in");
    w.boolean(true);
  }
  w.raw_key("args");
  w.begin_object();
  if (auto v = l.number(Key::op_id)) id_value(w, "External id", *v);
  if (auto v = l.number(Key::seq)) id_value(w, "Sequence number", *v);
  if (auto v = l.number(Key::fwd_tid); node && v) id_value(w, "Fwd thread id", *v);
  if (op || node) {
    auto gpu = cost_of_instance_.find(id);
    auto cpu = record_of_range_.find(id);
    if (gpu != cost_of_instance_.end()) {
      const InstanceCost& c = gpu->second;
      if (!c.dir.empty()) text(w, "direction", c.dir);
      if (!c.module.empty()) text(w, "module", c.module);
      if (c.modeled) {
        cost_args(w, c.op_flops, c.op_bytes, c.counted_time, c.shapes, c.dtype, c.family);
      }
    } else if (cpu != record_of_range_.end()) {
      const ProfRecord& r = costs_.records[cpu->second];
      compiled_nodes_arg(w, name);
      w.raw_key("direction");
      w.trusted_string(r.dir == Dir::kFprop ? "fprop" : r.dir == Dir::kBprop ? "bprop" : "none");
      if (r.module != 0) text(w, "module", costs_.strings.get(r.module));
      if (r.modeled) {
        cost_args(w, r.op_flops, r.op_bytes, counted_time(r), r.shapes, r.dtype, r.family);
        w.raw_key("counted");
        w.boolean(r.counted);
      }
    }
  } else if (module && l.has(Key::detail)) {
    text(w, "module type", l.str(Key::detail));
  }
  w.raw_key("pyprof");
  w.begin_object();
  text(w, "kind", kind);
  text(w, "name", name);
  if (id != kNone) id_value(w, "id", id);
  if (l.has(Key::dialect)) text(w, "dialect", l.str(Key::dialect));
  if (l.has(Key::domain)) text(w, "domain", l.str(Key::domain));
  if (!duration) {
    w.raw_key("open");
    w.boolean(true);
  }
  if (auto v = l.number(Key::rf_tid)) id_value(w, "rf_tid", *v);
  if (auto v = l.number(Key::fwd_tid)) id_value(w, "fwd_tid", *v);
  if (l.has(Key::detail)) text(w, "detail", l.str(Key::detail));
  if (l.has(Key::stack)) text(w, "stack", l.str(Key::stack));
  if (l.has(Key::args)) {
    w.raw_key("args");
    w.raw_value(l.raw(Key::args));
  }
  w.end_object();
  w.end_object();
  end_event();
  if (!perfetto && op) {
    auto it = fwd_flow_of_range_.find(id);
    if (it != fwd_flow_of_range_.end()) {
      flow("fwdbwd", it->second, true, pid, std::to_string(tid), start);
    }
  }
  if (!perfetto && node && flow_in != 0) {
    flow("fwdbwd", flow_in, false, pid, std::to_string(tid), start);
  }
}

// Each device's memory as counter tracks ("ph":"C") on the process that allocated it, one per
// series so that no viewer stacks them: `memory allocated (cuda:0)` (the running total since the
// capture began, the memory report's count over every step: its largest value is the report's
// peak), `memory allocator allocated (cuda:0)` and `memory allocator reserved (cuda:0)` (the
// allocator's totals where the lines give them). A device with more than kExportMemoryPoints
// events is downsampled as the page's plot is (prof/memory_timeline.h), every peak kept.
bool Exporter::memory_counters() {
  const std::vector<MemorySeries> all = memory_series(costs_);
  int64_t fallback_pid = cpu_threads_.empty() ? 0 : cpu_threads_.begin()->first;
  for (const MemorySeries& s : all) {
    const std::vector<size_t> keep = downsample_memory(s.samples, kExportMemoryPoints);
    result_.memory_events += static_cast<int64_t>(s.samples.size());
    if (keep.size() < s.samples.size()) ++result_.memory_downsampled;
    const int64_t pid = s.pid >= 0 ? s.pid : fallback_pid;
    counter_pids_.insert(pid);
    const std::string device = memory_device_name(s.device);
    const std::string names[] = {fmt::format("memory allocated ({})", device),
                                 fmt::format("memory allocator allocated ({})", device),
                                 fmt::format("memory allocator reserved ({})", device)};
    for (int series = 0; series < 3; ++series) {
      for (size_t k : keep) {
        const MemorySample& m = s.samples[k];
        const int64_t bytes = series == 0   ? m.allocated
                              : series == 1 ? m.allocator_allocated
                                            : m.allocator_reserved;
        if (series > 0 && bytes < 0) continue;  // not given
        JsonWriter& w = begin_event();
        w.raw_key("ph");
        w.trusted_string("C");
        w.raw_key("cat");
        w.trusted_string("pyprof_memory");
        text(w, "name", names[series]);
        id_value(w, "pid", pid);
        time(w, "ts", m.time);
        w.raw_key("args");
        w.begin_object();
        id_value(w, "bytes", bytes);
        w.end_object();
        end_event();
        ++result_.memory_points;
        if (!flush()) return false;
      }
    }
  }
  return true;
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
  std::set<int64_t> pids = counter_pids_;
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
void Exporter::finish_document(const DictHeader& header) {
  out_ += "\n],\n\"displayTimeUnit\":\"ns\"";
  if (header.base_time_ns) {
    out_ += ",\n\"baseTimeNanoseconds\":";
    out_ += std::to_string(*header.base_time_ns);
  }
  std::string devices = "[";
  for (const DictDevice& d : header.devices) {
    std::string entry;
    {
      JsonWriter w(entry, size_t{1} << 20);
      w.begin_object();
      if (d.id) {
        w.raw_key("id");
        w.integer(*d.id);
      }
      if (d.name) {
        w.raw_key("name");
        w.string(*d.name);
      }
      if (d.sm_count) {
        w.raw_key("numSms");
        w.integer(*d.sm_count);
      }
      if (d.clock_hz) {
        w.raw_key("clockRate");  // kHz, as cudaDeviceProp
        w.integer(*d.clock_hz / 1000);
      }
      if (d.memory_bandwidth) {
        w.raw_key("memoryBandwidth");  // bytes/s; pyprof's own key
        w.integer(*d.memory_bandwidth);
      }
      if (d.total_memory) {
        w.raw_key("totalGlobalMem");
        w.integer(*d.total_memory);
      }
      if (d.compute_major) {
        w.raw_key("computeMajor");
        w.integer(*d.compute_major);
        w.raw_key("computeMinor");
        w.integer(d.compute_minor.value_or(0));
      }
      w.end_object();
    }
    if (devices.size() > 1) devices += ',';
    devices += entry;
  }
  devices += "]";
  if (devices.size() > 2) out_ += ",\n\"deviceProperties\":" + devices;
  std::string distributed;
  {
    JsonWriter w(distributed, size_t{1} << 20);
    if (header.rank) {
      w.raw_key("rank");
      w.integer(*header.rank);
    }
    if (header.world_size) {
      w.raw_key("world_size");
      w.integer(*header.world_size);
    }
    if (!header.backend.empty()) {
      w.raw_key("backend");
      w.string(header.backend);
    }
  }
  if (!distributed.empty()) out_ += ",\n\"distributedInfo\":{" + distributed + "}";
  out_ += ",\n\"pyprof_export\":{\"version\":1,\"format\":\"";
  out_ += options_.format == TraceFormat::kPerfetto ? "perfetto" : "chrome";
  out_ += "\",\"dict_header\":";
  out_ += header.text;
  out_ += "}\n}\n";
}

bool Exporter::run(std::FILE* in, std::string& error) {
  out_ = "{\"schemaVersion\":1,\n\"traceEvents\":[";
  // The reader checks every line to be strict JSON, as load_profile's read did (ReadOptions::
  // strict_json): values are copied into the trace as the dict holds them, and both reads skip
  // the same lines.
  DictReadOptions read_options;
  read_options.strict_json = true;
  DictReader reader(in, read_options);
  size_t record_index = 0;
  // Forward op -> backward node pairs need the op's flow id before the op's range is written:
  // range lines name their forward op (`fwd`) after it, so they are collected in a first look.
  std::vector<PendingRange> pending_ranges;
  bool ok = true;
  while (ok) {
    const DictLine* line = reader.next_line();
    if (line == nullptr) break;
    const DictLine& l = *line;
    if (!l.unreadable.empty() || l.header()) continue;  // skipped (and said) by the first read
    switch (l.kind()) {
      case LineKind::kRange: {
        result_.had_ranges = true;
        const int64_t fwd = l.num(Key::fwd, kNone);
        if (fwd != kNone && !fwd_flow_of_range_.count(fwd)) {
          fwd_flow_of_range_[fwd] = next_flow_id_++;
        }
        pending_ranges.push_back({std::string(l.text), l.line});
        continue;
      }
      // Cross-rank spans of the communication backend: for prof's ranks report, not exported.
      case LineKind::kComm:
        continue;
      // Allocations and frees (docs/formats.md §3.2): counter tracks from what the first read
      // kept of them, after the lines (memory_counters()).
      case LineKind::kMemory:
        continue;
      case LineKind::kMark:
        mark(l);
        ok = flush();
        continue;
      // What an Inductor kernel computes: its costs are prof's; its node list goes on its
      // slices.
      case LineKind::kCompiledKernel:
        define_compiled_kernel(l);
        continue;
      case LineKind::kSync:
        sync_call(l);
        ok = flush();
        continue;
      default:
        break;
    }
    if (record_index >= costs_.records.size()) {
      error = fmt::format("line {}: more records than prof read (the file changed?)", l.line);
      return false;
    }
    if (l.kind() == LineKind::kOp) {
      cpu_record(l, record_index);
    } else {
      gpu_record(l, record_index);
    }
    ++record_index;
    ok = flush();
  }
  if (!ok) return false;
  if (!reader.failure().empty()) {
    error = reader.failure();
    return false;
  }
  result_.records = static_cast<int64_t>(record_index);
  DictLine l;
  for (const PendingRange& pending : pending_ranges) {
    if (!reader.read_again(pending.text, pending.line, l)) continue;
    range(l);
    if (!flush()) return false;
  }
  if (!memory_counters()) return false;
  metadata();
  finish_document(reader.header());
  return flush(true);
}

}  // namespace

bool export_trace(const std::string& dict_path, const ReadResult& costs,
                  const ExportOptions& options, const TraceSink& sink, ExportResult& result,
                  std::string& error) {
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
  if (result.memory_downsampled > 0) {
    result.notes.push_back(fmt::format(
        "memory: {} allocations and frees drawn as {} counter points: {} device{} with more than "
        "{} events downsampled (per time bucket its lowest and highest kept, so every peak is)",
        result.memory_events, result.memory_points, result.memory_downsampled,
        result.memory_downsampled == 1 ? "" : "s", kExportMemoryPoints));
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
