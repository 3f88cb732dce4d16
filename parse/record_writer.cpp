#include "parse/record_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "common/env_vars.h"
#include "common/json_writer.h"
#include "common/ordered_chunks.h"

namespace pyprof::parse {

const char* dialect_name(Dialect d) {
  switch (d) {
    case Dialect::kPyprof:
      return "pyprof";
    case Dialect::kEmitNvtx:
      return "emit_nvtx";
    case Dialect::kLegacyPyprof:
      return "legacy_pyprof";
    case Dialect::kKineto:
      return "kineto";
    case Dialect::kUser:
      break;
  }
  return "user";
}

namespace {
constexpr const char* kCopyKindNames[] = {"unknown", "HtoD",     "DtoH",     "HtoA",    "AtoH",
                                          "AtoA",    "AtoD",     "DtoA",     "DtoD",    "HtoH",
                                          "PtoP",    "UVM HtoD", "UVM DtoH", "UVM DtoD"};
constexpr const char* kMemKindNames[] = {"pageable", "pinned",        "device",         "array",
                                         "managed",  "device_static", "managed_static", "unknown"};
}  // namespace

const char* copy_kind_name(uint8_t kind) {
  return kind < std::size(kCopyKindNames) ? kCopyKindNames[kind] : "unknown";
}

const char* mem_kind_name(uint8_t kind) {
  return kind < std::size(kMemKindNames) ? kMemKindNames[kind] : "unknown";
}

int copy_kind_of_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kCopyKindNames); ++i) {
    if (name == kCopyKindNames[i]) return static_cast<int>(i);
  }
  return -1;
}

int mem_kind_of_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kMemKindNames); ++i) {
    if (name == kMemKindNames[i]) return static_cast<int>(i);
  }
  return -1;
}

const char* range_kind_name(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::kOp:
      return "op";
    case MarkerKind::kBackwardNode:
      return "node";
    case MarkerKind::kModule:
      return "module";
    case MarkerKind::kTrace:
      return "trace";
    case MarkerKind::kUser:
    case MarkerKind::kSettings:
    case MarkerKind::kCompiledKernel:
    case MarkerKind::kCompiledCall:
      break;
  }
  return "user";
}

Dialect dialect_of_name(std::string_view name) {
  for (Dialect d :
       {Dialect::kPyprof, Dialect::kEmitNvtx, Dialect::kLegacyPyprof, Dialect::kKineto}) {
    if (name == dialect_name(d)) return d;
  }
  return Dialect::kUser;
}

namespace {

// Kernel names and user ranges are bounded upstream; nothing in a record is cut here.
constexpr size_t kNoTruncation = size_t{1} << 30;
constexpr size_t kFlushBytes = size_t{1} << 20;
// The compact form keeps the text of each distinct args value. A training loop has a few
// hundred; a trace whose every call has new arguments would keep them all, so past this the
// new ones are written inline (readers accept either form on any record).
constexpr size_t kMaxInternedArgsBytes = size_t{64} << 20;

// "duration": end - start; null when the end precedes the start (the trace's clocks went
// wrong), with the raw difference in "negative_duration" so that nothing is lost.
void duration(JsonWriter& w, int64_t start, int64_t end) {
  w.raw_key("duration");
  if (end >= start) {
    w.integer(end - start);
    return;
  }
  w.null();
  w.raw_key("negative_duration");
  w.integer(end - start);
}

void xyz(JsonWriter& w, const char* key, const int32_t v[3]) {
  w.raw_key(key);
  w.begin_array();
  for (int i = 0; i < 3; ++i) w.integer(v[i]);
  w.end_array();
}

}  // namespace

void RecordFormatter::pooled(JsonWriter& w, uint32_t id) {
  // Pool strings (kernel names, op names, modules, user ranges) repeat in most records: each
  // is escaped once.
  if (id >= escaped_.size()) escaped_.resize(trace_.pool.size());
  std::string& cached = escaped_[id];
  if (cached.empty()) {
    cached = '"';
    JsonWriter::append_escaped(cached, trace_.pool.get(id), kNoTruncation);
    cached += '"';
  }
  w.raw_value(cached);
}

const std::string& RecordWriter::args_of(int32_t index) {
  for (int s = 0; s < 2; ++s) {
    if (cached_index_[s] == index) return cached_args_[s];
  }
  int slot = next_slot_;
  next_slot_ ^= 1;
  cached_index_[slot] = index;
  cached_args_[slot].clear();
  const RangeRecord& r = trace_.ranges[index];
  if (r.args_length == kArgsInPool) {
    cached_args_[slot].assign(trace_.pool.get(r.args_offset));
    return cached_args_[slot];
  }
  std::string_view text = reader_.fetch_text(trace_, r.text);
  if (text.empty()) {
    ++args_unavailable_;
    return cached_args_[slot];
  }
  if (r.args_length != 0 && text.size() >= size_t{r.args_offset} + r.args_length) {
    cached_args_[slot].assign(text.substr(r.args_offset, r.args_length));
    return cached_args_[slot];
  }
  decode_marker(text, marker_domain(trace_, r), marker_);
  cached_args_[slot].swap(marker_.args);
  return cached_args_[slot];
}

int32_t RecordWriter::args_id_of(int32_t index, std::string& definitions) {
  if (args_id_of_range_.empty()) args_id_of_range_.assign(trace_.ranges.size(), -1);
  int32_t& known = args_id_of_range_[index];
  if (known >= 0) return known;
  const std::string& args = args_of(index);
  if (args.empty()) return -1;  // not kept: args_of counts each unavailable fetch
  auto it = args_ids_.find(args);
  if (it != args_ids_.end()) return known = it->second;
  if (interned_args_bytes_ + args.size() > kMaxInternedArgsBytes) return -1;
  const auto id = static_cast<int32_t>(interned_args_.size());
  interned_args_.push_back(std::make_unique<std::string>(args));
  interned_args_bytes_ += args.size();
  args_ids_.emplace(*interned_args_.back(), id);
  // The definition precedes its first use: it goes to the output before the record that
  // resolves it.
  definitions += R"({"kind":"args","id":)";
  definitions += std::to_string(id);
  definitions += R"(,"args":)";
  definitions += args;
  definitions += "}\n";
  return known = id;
}

ArgsRef RecordWriter::resolve_args(int32_t range, std::string& definitions) {
  if (!full_records_) {
    const int32_t id = args_id_of(range, definitions);
    if (id >= 0) return {id, {}};
  }
  return {-1, args_of(range)};
}

std::array<int32_t, 2> args_ranges(const std::vector<RangeRecord>& ranges, const Attribution& a) {
  std::array<int32_t, 2> out{-1, -1};
  if (a.dir == Direction::kNone) return out;
  if (a.op >= 0 && ranges[a.op].has_args) out[0] = a.op;
  if (a.dir == Direction::kBackward && a.bwd_op >= 0 && ranges[a.bwd_op].has_args) {
    out[1] = a.bwd_op;
  }
  return out;
}

void RecordFormatter::write_args(JsonWriter& w, int32_t index, const char* key,
                                 const char* ref_key) {
  const ArgsRef args = args_->resolve(index);
  if (args.id >= 0) {
    w.raw_key(ref_key);
    w.integer(args.id);
  } else if (!args.text.empty()) {
    w.raw_key(key);
    w.raw_value(args.text);
  }
}

BackgroundOutput::BackgroundOutput(std::FILE* out) : out_(out), thread_([this] { run(); }) {}

BackgroundOutput::~BackgroundOutput() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundOutput::run() {
  std::string writing;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return has_pending_ || stop_; });
    if (!has_pending_) return;
    writing.swap(pending_);
    has_pending_ = false;
    bool skip = failed_;
    lock.unlock();
    cv_.notify_all();
    bool ok = skip || std::fwrite(writing.data(), 1, writing.size(), out_) == writing.size();
    int error = errno;
    writing.clear();
    lock.lock();
    if (!ok && !failed_) {
      failed_ = true;
      error_ = error;
    }
    ++written_;
    cv_.notify_all();
  }
}

bool BackgroundOutput::submit(std::string& buffer) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !has_pending_; });
  if (failed_) {
    errno = error_;
    return false;
  }
  pending_.swap(buffer);
  buffer.clear();
  has_pending_ = true;
  ++submitted_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

bool BackgroundOutput::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return written_ == submitted_; });
  if (failed_) errno = error_;
  return !failed_;
}

bool RecordWriter::flush() {
  if (buffer_.empty()) return true;
  return output_.submit(buffer_);
}

void RecordWriter::write_header(const std::string& source) {
  std::string line;
  {
    JsonWriter w(line, kNoTruncation, 0);
    write_header_object(w, source);
  }
  buffer_ += line;
  buffer_ += '\n';
}

void RecordWriter::write_header_object(JsonWriter& w, const std::string& source) {
  w.begin_object();
  w.raw_key("pyprof_dict");
  w.integer(full_records_ ? kFullDictVersion : kDictVersion);
  w.raw_key("source");
  w.string(source);
  w.raw_key("format");
  w.string(trace_.format);
  if (!trace_.version.empty()) {
    w.raw_key("version");
    w.string(trace_.version);
  }
  w.raw_key("records");
  w.trusted_string(corr_.cpu_only ? "op" : "gpu");
  if (trace_.distributed) {
    if (trace_.distributed->rank >= 0) {
      w.raw_key("rank");
      w.integer(trace_.distributed->rank);
    }
    if (trace_.distributed->world_size >= 0) {
      w.raw_key("world_size");
      w.integer(trace_.distributed->world_size);
    }
    if (!trace_.distributed->backend.empty()) {
      w.raw_key("backend");
      w.string(trace_.distributed->backend);
    }
  }
  if (trace_.base_time_ns != 0) {
    w.raw_key("base_time_ns");
    w.integer(trace_.base_time_ns);
  }
  if (trace_.truncated_input) {
    w.raw_key("truncated");
    w.boolean(true);
  }
  if (trace_.unfinished_capture) {
    w.raw_key("unfinished_capture");
    w.begin_object();
    w.raw_key("threads");
    w.integer(trace_.capture_threads);
    w.raw_key("events_per_thread_at_risk");
    w.integer(static_cast<int64_t>(kEventsPerThreadChunk));
    w.end_object();
  }
  if (trace_.write_failure) {
    w.raw_key("write_failure");
    w.begin_object();
    w.raw_key("message");
    w.string(trace_.write_failure->message);
    w.raw_key("events_lost");
    w.integer(trace_.write_failure->events_lost);
    w.raw_key("cuda_records_lost");
    w.integer(trace_.write_failure->cuda_records_lost);
    w.end_object();
  }
  if (!trace_.torch_settings.empty()) {
    w.raw_key("torch_settings");
    w.raw_value(trace_.torch_settings);  // validated by the marker decoder
  }
  if (!trace_.devices.empty()) {
    w.raw_key("devices");
    w.begin_array();
    for (const Trace::Device& d : trace_.devices) {
      w.begin_object();
      w.raw_key("id");
      w.integer(d.id);
      w.raw_key("name");
      w.string(d.name);
      w.raw_key("sm_count");
      w.integer(d.sm_count);
      w.raw_key("clock_hz");
      w.integer(d.clock_hz);
      w.raw_key("memory_bandwidth");
      w.integer(d.memory_bandwidth);
      w.raw_key("total_memory");
      w.integer(d.total_memory);
      w.raw_key("compute_capability");
      w.begin_array();
      w.integer(d.compute_major);
      w.integer(d.compute_minor);
      w.end_array();
      w.end_object();
    }
    w.end_array();
  }
  if (iterations_ && !iterations_->steps.empty()) {
    w.raw_key("iterations");
    w.begin_object();
    w.raw_key("rule");
    w.trusted_string(iteration_rule_name(iterations_->rule));
    w.raw_key("range");
    w.string(iterations_->range);
    w.raw_key("count");
    w.integer(static_cast<int64_t>(iterations_->steps.size()));
    w.raw_key("steps");
    w.begin_array();
    for (size_t i = 0; i < iterations_->steps.size(); ++i) {
      const IterationStep& step = iterations_->steps[i];
      w.begin_object();
      w.raw_key("index");
      w.integer(static_cast<int64_t>(i));
      w.raw_key("name");
      w.string(step.name);
      w.raw_key("start");
      w.integer(step.start);
      w.raw_key("end");
      w.integer(step.end);
      if (step.cut) {
        w.raw_key("cut");
        w.boolean(true);
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
}

// A synchronizing API call (docs/formats.md §3, kind `sync`): no GPU activity of its own, but
// the host waited in it for the GPU, so advice can tell why the GPU then sat idle.
void RecordFormatter::write_rank(JsonWriter& w) {
  if (rank_ < 0) return;
  w.raw_key("rank");
  w.integer(rank_);
}

void RecordFormatter::write_sync(const Attribution& a) {
  const ApiCall& call = trace_.api_calls[a.launch];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    w.trusted_string("sync");
    w.raw_key("name");
    pooled(w, call.name);
    w.raw_key("start");
    w.integer(call.start);
    duration(w, call.start, call.end);
    w.raw_key("pid");
    w.integer(call.pid);
    write_rank(w);
    w.raw_key("tid");
    w.integer(call.tid);
    write_step_at(w, call.start);
    write_attribution(w, a);
    write_user_ranges(w, a);
    w.end_object();
  }
  end_record();
}

void RecordFormatter::write_step(JsonWriter& w, size_t k) {
  // Launched before the trace began: its launch, and so its step, lies outside the trace.
  if (!corr_.cpu_only && corr_.attributions[k].before_trace) {
    w.raw_key("before_trace");
    w.boolean(true);
    return;
  }
  if (!iterations_ || iterations_->steps.empty()) return;
  write_step_at(w, record_time(trace_, corr_, k));
}

void RecordFormatter::write_step_at(JsonWriter& w, int64_t t) {
  if (!iterations_ || iterations_->steps.empty()) return;
  const int32_t step = iterations_->step_at(t);
  if (step < 0) return;
  w.raw_key("step");
  w.integer(step);
}

void RecordFormatter::write_attribution(JsonWriter& w, const Attribution& a,
                                        int64_t replay_instance) {
  const auto& ranges = trace_.ranges;
  const auto& pool = trace_.pool;
  w.raw_key("op");
  if (a.op >= 0) {
    pooled(w, ranges[a.op].name);
  } else {
    w.null();
  }
  w.raw_key("dir");
  if (a.dir == Direction::kForward) {
    w.trusted_string("fprop");
  } else if (a.dir == Direction::kBackward) {
    w.trusted_string("bprop");
  } else {
    w.null();
  }
  if (a.dir == Direction::kNone) return;
  if (a.op >= 0) {
    const RangeRecord& op = ranges[a.op];
    if (op.op_id != 0) {
      w.raw_key("op_id");
      w.integer(op.op_id);
    }
    w.raw_key("dialect");
    w.trusted_string(dialect_name(op.dialect));
    if (op.dialect == Dialect::kLegacyPyprof && op.detail != 0) {
      w.raw_key("legacy_mod");
      pooled(w, op.detail);
    }
  }
  w.raw_key("seq");
  w.integer(seq_of(trace_, a));
  w.raw_key("sub");
  w.integer(a.sub);
  // Which op instance this record belongs to (the op range, or the backward node for bprop; a
  // graph replay's own): a number unique within the file, present even when markers carry no
  // op ids.
  int32_t instance = a.dir == Direction::kBackward ? a.node : a.op;
  if (instance >= 0) {
    w.raw_key("instance");
    w.integer(replay_instance != 0 ? replay_instance : corr_.rank[instance]);
  }
  const std::array<int32_t, 2> args = args_ranges(ranges, a);
  if (args[0] >= 0) write_args(w, args[0], "args", "args_ref");
  if (a.op >= 0 && ranges[a.op].stack != 0) {
    w.raw_key("stack");
    pooled(w, ranges[a.op].stack);
  }
  if (a.module >= 0) {
    w.raw_key("module");
    pooled(w, ranges[a.module].name);
    if (ranges[a.module].detail != 0) {
      w.raw_key("module_type");
      pooled(w, ranges[a.module].detail);
    }
  }
  if (a.trace >= 0 && ranges[a.trace].detail != 0) {
    // Legacy trace markers hold the frames joined by newlines.
    w.raw_key("trace");
    w.begin_array();
    std::string_view frames = pool.get(ranges[a.trace].detail);
    while (!frames.empty()) {
      size_t nl = frames.find('\n');
      w.string(frames.substr(0, nl));
      if (nl == std::string_view::npos) break;
      frames.remove_prefix(nl + 1);
    }
    w.end_array();
  }
  if (a.dir == Direction::kBackward) {
    const RangeRecord& node = ranges[a.node];
    w.raw_key("bwd_node");
    pooled(w, node.name);
    if (node.op_id != 0) {
      w.raw_key("bwd_node_id");
      w.integer(node.op_id);
    }
    w.raw_key("paired");
    w.boolean(a.paired);
    if (a.paired && a.op >= 0 && ranges[a.op].op_id != 0) {
      w.raw_key("fwd_op_id");
      w.integer(ranges[a.op].op_id);
    }
    if (a.paired && a.op >= 0) {
      w.raw_key("fwd_instance");  // the forward op's `instance`, present without op ids too
      w.integer(corr_.rank[a.op]);
    }
    if (a.bwd_op >= 0) {
      const RangeRecord& bop = ranges[a.bwd_op];
      w.raw_key("bwd_op");
      pooled(w, bop.name);
      if (bop.op_id != 0) {
        w.raw_key("bwd_op_id");
        w.integer(bop.op_id);
      }
      if (args[1] >= 0) write_args(w, args[1], "bwd_args", "bwd_args_ref");
    }
  }
}

void RecordFormatter::write_activity(size_t k, int32_t index, const Attribution& a) {
  const GpuActivity& act = trace_.activities[index];
  {
    // Each record is built in its own small buffer: a JsonWriter grows (and zero-fills) the
    // string it writes to, which must not be the megabyte output buffer.
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    switch (act.kind) {
      case ActivityKind::kKernel:
        w.trusted_string("kernel");
        w.raw_key("name");
        pooled(w, act.short_name);
        w.raw_key("long_name");
        pooled(w, act.long_name);
        break;
      case ActivityKind::kMemcpy:
        w.trusted_string("memcpy");
        w.raw_key("name");
        w.string(std::string("[CUDA memcpy ") + copy_kind_name(act.copy_kind) + "]");
        w.raw_key("bytes");
        w.integer(act.bytes);
        w.raw_key("copy_kind");
        w.trusted_string(copy_kind_name(act.copy_kind));
        w.raw_key("src_kind");
        w.trusted_string(mem_kind_name(act.src_kind));
        w.raw_key("dst_kind");
        w.trusted_string(mem_kind_name(act.dst_kind));
        break;
      case ActivityKind::kMemset:
        w.trusted_string("memset");
        w.raw_key("name");
        w.trusted_string("[CUDA memset]");
        w.raw_key("bytes");
        w.integer(act.bytes);
        w.raw_key("value");
        w.integer(act.memset_value);
        w.raw_key("mem_kind");
        w.trusted_string(mem_kind_name(act.dst_kind));
        break;
    }
    w.raw_key("device");
    w.integer(act.device);
    w.raw_key("context");
    w.integer(act.context);
    w.raw_key("stream");
    w.integer(act.stream);
    if (act.kind == ActivityKind::kKernel) {
      xyz(w, "grid", act.grid);
      xyz(w, "block", act.block);
      w.raw_key("registers");
      w.integer(act.registers);
      w.raw_key("shared_static");
      w.integer(act.static_shared);
      w.raw_key("shared_dynamic");
      w.integer(act.dynamic_shared);
      if (act.shared_total >= 0) {
        w.raw_key("shared_memory");
        w.integer(act.shared_total);
      }
    }
    w.raw_key("start");
    w.integer(act.start);
    duration(w, act.start, act.end);
    w.raw_key("correlation");
    w.integer(act.correlation_id);
    w.raw_key("pid");
    w.integer(act.pid);
    write_rank(w);
    if (act.graph_node_id >= 0) {
      w.raw_key("graph_node");
      w.integer(act.graph_node_id);
    }
    if (a.launch >= 0) {
      const ApiCall& call = trace_.api_calls[a.launch];
      w.raw_key("tid");
      w.integer(call.tid);
      w.raw_key("launch");
      w.begin_object();
      w.raw_key("api");
      pooled(w, call.name);
      w.raw_key("start");
      w.integer(call.start);
      duration(w, call.start, call.end);
      w.end_object();
    } else {
      w.raw_key("tid");
      w.null();
    }
    write_step(w, k);
    const auto replay = corr_.replay_instance.find(static_cast<int32_t>(k));
    write_attribution(w, a, replay == corr_.replay_instance.end() ? 0 : replay->second);
    // A kernel no mark names (cuBLAS's, under the C++ wrapper's extern call) takes the graph
    // key of the call it ran in, and prof costs it from that call's marks.
    const int32_t call_range = compiled_call_range(act.short_name, a);
    const uint32_t compiled_name =
        call_range >= 0 ? trace_.ranges[call_range].name : act.short_name;
    write_compiled_graph(w, compiled_name, a, call_range);
    if (a.launch >= 0) {
      const ApiCall& call = trace_.api_calls[a.launch];
      write_compiled_symbols(w, compiled_name, a, call.pid, call.tid, call.start);
    }
    write_user_ranges(w, a);
    w.end_object();
  }
  end_record();
}

std::string_view RecordFormatter::region_graph(const Attribution& a) const {
  // The graph's code runs inside Dynamo's "Torch-Compiled Region: <compile id>" range: around
  // the op that launched a forward kernel, and around the forward op a backward kernel's node
  // belongs to (CompiledFunction, paired by sequence number).
  for (int32_t r = a.op; r >= 0; r = trace_.ranges[r].parent) {
    std::string_view id = compiled_region_id(trace_.pool.get(trace_.ranges[r].name));
    if (!id.empty()) return id;
  }
  return {};
}

int32_t RecordFormatter::compiled_call_range(uint32_t name, const Attribution& a) const {
  const auto& marked = trace_.compiled_marked;
  if (marked.empty() || marked.count(name)) return -1;
  const int32_t call = a.dir == Direction::kBackward ? a.bwd_op : a.op;
  if (call < 0 || !marked.count(trace_.ranges[call].name)) return -1;
  return call;
}

void RecordFormatter::write_compiled_graph(JsonWriter& w, uint32_t name, const Attribution& a,
                                           int32_t site_range) {
  if (trace_.compiled_by_graph.empty() || !trace_.compiled_by_graph.count(name)) return;
  std::string_view id = region_graph(a);
  if (id.empty()) return;
  if (!trace_.compiled_by_site.empty() && trace_.compiled_by_site.count(name)) {
    auto site = site_range >= 0 ? corr_.call_site.find(site_range) : corr_.call_site.end();
    if (site == corr_.call_site.end()) return;
    std::string key(id);
    key += compiled_site_suffix(a.dir == Direction::kBackward, site->second);
    w.raw_key("compiled_graph");
    w.string(key);
    return;
  }
  w.raw_key("compiled_graph");
  w.string(id);
}

void RecordFormatter::write_compiled_symbols(JsonWriter& w, uint32_t name, const Attribution& a,
                                             uint32_t pid, uint32_t tid, int64_t time) {
  if (trace_.compiled_symbolic.empty() || !trace_.compiled_symbolic.count(name)) return;
  const std::string_view graph = region_graph(a);
  if (graph.empty()) return;
  // The graph's wrapper sends the mark just before it runs the kernels, on the thread that runs
  // them (the autograd engine's for a backward graph): the last mark there before `time`.
  const auto& calls = trace_.compiled_calls;
  auto it = std::upper_bound(calls.begin(), calls.end(), std::tie(pid, tid, time),
                             [](const auto& key, const Trace::CompiledCall& c) {
                               return key < std::tie(c.pid, c.tid, c.time);
                             });
  if (it == calls.begin()) return;
  --it;
  if (it->pid != pid || it->tid != tid || it->graph != graph) return;
  w.raw_key("compiled_symbols");
  w.raw_value(it->symbols);  // validated by the marker decoder
}

void RecordFormatter::write_op_instance(size_t k, int32_t index, const Attribution& a) {
  const RangeRecord& r = trace_.ranges[index];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    w.trusted_string("op");
    w.raw_key("name");
    pooled(w, r.name);
    w.raw_key("start");
    w.integer(r.start);
    w.raw_key("duration");
    if (r.end == kOpenEnd) {
      w.null();
      w.raw_key("self_duration");
      w.null();
    } else {
      w.integer(r.end - r.start);
      w.raw_key("self_duration");
      w.integer(corr_.self_time[index]);
    }
    w.raw_key("pid");
    w.integer(r.pid);
    write_rank(w);
    w.raw_key("tid");
    w.integer(r.tid);
    if (r.op_id != 0) {
      w.raw_key("id");
      w.integer(r.op_id);
    }
    if (write_ranges_) {
      w.raw_key("range");
      w.integer(corr_.rank[index]);
    }
    // The op or backward node this one runs inside, so that a consumer can count a call tree
    // once (aten::linear -> aten::addmm).
    int32_t outer = r.parent >= 0 ? op_or_node_of(trace_, r.parent) : -1;
    if (outer >= 0 && trace_.ranges[outer].op_id != 0) {
      w.raw_key("parent_id");
      w.integer(trace_.ranges[outer].op_id);
    }
    write_step(w, k);
    write_attribution(w, a);
    write_compiled_graph(w, r.name, a, index);
    write_compiled_symbols(w, r.name, a, r.pid, r.tid, r.start);
    write_user_ranges(w, a);
    w.end_object();
  }
  end_record();
}

void RecordFormatter::end_record() {
  // The writer is gone: its destructor trimmed record_ to the JSON it wrote.
  *out_ += record_;
  *out_ += '\n';
}

void RecordFormatter::write_user_ranges(JsonWriter& w, const Attribution& a) {
  chain_.clear();
  for (int32_t r = a.innermost; r >= 0; r = trace_.ranges[r].parent) {
    if (trace_.ranges[r].kind == MarkerKind::kUser) chain_.push_back(r);
  }
  if (!chain_.empty()) {
    w.raw_key("user_ranges");
    w.begin_array();
    std::string label;
    for (size_t k = chain_.size(); k-- > 0;) {
      const RangeRecord& r = trace_.ranges[chain_[k]];
      if (r.domain == 0) {
        pooled(w, r.name);
      } else {
        // Like Nsight Systems' reports: ranges of a named domain read "domain:message".
        label.assign(trace_.pool.get(r.domain));
        label += ':';
        label += trace_.pool.get(r.name);
        w.string(label);
      }
    }
    w.end_array();
  }
}

void RecordFormatter::write_range(int32_t index, int32_t forward_op) {
  const RangeRecord& r = trace_.ranges[index];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    w.trusted_string("range");
    w.raw_key("range");
    w.trusted_string(range_kind_name(r.kind));
    w.raw_key("id");
    w.integer(corr_.rank[index]);
    if (r.parent >= 0) {
      w.raw_key("parent");
      w.integer(corr_.rank[r.parent]);
    }
    w.raw_key("name");
    pooled(w, r.name);
    w.raw_key("start");
    w.integer(r.start);
    w.raw_key("duration");
    if (r.end == kOpenEnd) {
      w.null();
    } else {
      w.integer(r.end - r.start);
    }
    w.raw_key("pid");
    w.integer(r.pid);
    w.raw_key("tid");
    w.integer(r.tid);
    w.raw_key("dialect");
    w.trusted_string(dialect_name(r.dialect));
    if (r.domain != 0) {
      w.raw_key("domain");
      pooled(w, r.domain);
    }
    if (r.op_id != 0) {
      w.raw_key("op_id");
      w.integer(r.op_id);
    }
    if (r.seq >= 0) {
      w.raw_key("seq");
      w.integer(r.seq);
    }
    if (r.rf_tid >= 0) {
      w.raw_key("rf_tid");
      w.integer(r.rf_tid);
    }
    if (r.fwd_tid >= 0) {
      w.raw_key("fwd_tid");
      w.integer(r.fwd_tid);
    }
    if (r.detail != 0) {
      // Module class, legacy PyProf 'mod', or a legacy trace marker's frames (by `range`).
      w.raw_key("detail");
      pooled(w, r.detail);
    }
    if (r.stack != 0) {
      w.raw_key("stack");
      pooled(w, r.stack);
    }
    if (r.has_args) write_args(w, index, "args", "args_ref");
    if (forward_op >= 0) {
      w.raw_key("fwd");  // the forward op this backward node was paired with
      w.integer(corr_.rank[forward_op]);
    }
    w.end_object();
  }
  end_record();
}

namespace {
bool is_backend_collective_scope(std::string_view name) {
  for (std::string_view prefix : {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:"}) {
    if (name.size() > prefix.size() && name.starts_with(prefix)) return true;
  }
  return false;
}
}  // namespace

void RecordFormatter::write_comm(const RangeRecord& r) {
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    w.trusted_string("comm");
    w.raw_key("name");
    pooled(w, r.name);
    w.raw_key("start");
    w.integer(r.start);
    w.raw_key("duration");
    w.integer(r.end - r.start);
    w.raw_key("pid");
    w.integer(r.pid);
    write_rank(w);
    w.raw_key("tid");
    w.integer(r.tid);
    write_step_at(w, r.start);
    w.end_object();
  }
  end_record();
}

void RecordFormatter::write_mark(const RangeRecord& r) {
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key("kind");
    w.trusted_string("mark");
    w.raw_key("name");
    pooled(w, r.name);
    if (r.domain != 0) {
      w.raw_key("domain");
      pooled(w, r.domain);
    }
    w.raw_key("start");
    w.integer(r.start);
    w.raw_key("pid");
    w.integer(r.pid);
    write_rank(w);
    w.raw_key("tid");
    w.integer(r.tid);
    write_step_at(w, r.start);
    w.end_object();
  }
  end_record();
}

void RecordFormatter::write_record(size_t k) {
  if (corr_.cpu_only) {
    write_op_instance(k, corr_.order[k], corr_.attributions[k]);
  } else {
    write_activity(k, corr_.order[k], corr_.attributions[k]);
  }
}

bool RecordWriter::write_comm_lines(RecordFormatter& f) {
  std::vector<int32_t> scopes;
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    if (r.shape == RangeShape::kMark || r.end == kOpenEnd) continue;
    if (r.kind != MarkerKind::kUser && r.kind != MarkerKind::kOp) continue;
    if (!is_backend_collective_scope(trace_.pool.get(r.name))) continue;
    scopes.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(scopes.begin(), scopes.end(), [&](int32_t a, int32_t b) {
    return trace_.ranges[a].start < trace_.ranges[b].start;
  });
  for (int32_t i : scopes) {
    f.write_comm(trace_.ranges[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

bool RecordWriter::write_mark_lines(RecordFormatter& f) {
  // The program's own marks; pyprof's settings and compiled-kernel marks went to the header
  // and the compiled_kernel lines, and are not in trace_.ranges.
  std::vector<int32_t> marks;
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    if (r.shape == RangeShape::kMark && r.kind == MarkerKind::kUser) {
      marks.push_back(static_cast<int32_t>(i));
    }
  }
  std::stable_sort(marks.begin(), marks.end(), [&](int32_t a, int32_t b) {
    return trace_.ranges[a].start < trace_.ranges[b].start;
  });
  for (int32_t i : marks) {
    f.write_mark(trace_.ranges[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

bool RecordWriter::write_range_lines(RecordFormatter& f) {
  // Which forward op each backward node was paired with, as the records say it.
  std::vector<int32_t> forward_of_node(trace_.ranges.size(), -1);
  for (const Attribution& a : corr_.attributions) {
    if (a.dir == Direction::kBackward && a.paired && a.node >= 0 && a.op >= 0) {
      forward_of_node[a.node] = a.op;
    }
  }
  // In the trace's own order, which a reader of the exported trace keeps (its ranks, and so
  // the records' `instance` numbers, then come out the same).
  // Ranges a --graph-capture join copied from the capture trace are left out: they are the
  // capture's, at its times (parse/graph_capture.h).
  for (size_t i = 0; i < trace_.ranges.size() && !trace_.imported_range(i); ++i) {
    if (trace_.ranges[i].shape == RangeShape::kMark) continue;
    f.write_range(static_cast<int32_t>(i), forward_of_node[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

void RecordWriter::write_compiled_kernel_lines() {
  std::string line;
  for (size_t i = 0; i < trace_.compiled_kernels.size(); ++i) {
    const Trace::CompiledKernel& k = trace_.compiled_kernels[i];
    auto verdict = trace_.compiled_names.find(k.name);
    if (verdict == trace_.compiled_names.end() ||
        verdict->second == Trace::CompiledName::kAmbiguous) {
      continue;
    }
    const bool by_graph = verdict->second == Trace::CompiledName::kByGraph;
    // kOne: the name's first entry stands for all of them.
    if (!by_graph && trace_.compiled_kernel_index.at(k.name).front() != i) {
      continue;
    }
    line.clear();
    {
      JsonWriter w(line, kNoTruncation, 0);
      w.begin_object();
      w.raw_key("kind");
      w.trusted_string("compiled_kernel");
      w.raw_key("name");
      w.string(k.name);
      if (by_graph) {
        w.raw_key("graph");
        w.string(k.graph);
      }
      w.raw_key("kernel");
      w.raw_value(k.kernel);  // validated by the marker decoder
      w.end_object();
    }
    buffer_ += line;
    buffer_ += '\n';
  }
}

namespace {

// A chunk of records: its args resolved, in record order, on the writer's thread; then its
// lines formatted on a worker.
struct RecordChunk {
  struct Resolved {
    int32_t range;
    int32_t id;         // >= 0: a reference
    size_t text_begin;  // else the inline text, in `inline_args`
    size_t text_size;
  };
  // Hands a formatter the chunk's resolved args in the order it asks for them (args_ranges).
  class Args final : public ArgsSource {
   public:
    explicit Args(const RecordChunk& chunk) : chunk_(chunk) {}
    ArgsRef resolve(int32_t range) override {
      if (next_ >= chunk_.args.size() || chunk_.args[next_].range != range) {
        throw std::logic_error("parse: a record asked for args its chunk did not resolve");
      }
      const Resolved& r = chunk_.args[next_++];
      if (r.id >= 0) return {r.id, {}};
      return {-1, std::string_view(chunk_.inline_args).substr(r.text_begin, r.text_size)};
    }

   private:
    const RecordChunk& chunk_;
    size_t next_ = 0;
  };

  std::vector<Resolved> args;
  std::string inline_args;
  // `"kind":"args"` lines defined by the chunk's records: those before record i of the chunk
  // end at definitions_end[i].
  std::string definitions;
  std::vector<size_t> definitions_end;
  std::string text;  // the formatted lines
  std::unique_ptr<RecordFormatter> formatter;
};

}  // namespace

bool RecordWriter::write_records() {
  size_t chunk_records = 2048;
  unsigned threads = format_threads();
  if (const char* set = std::getenv(env::kParseWriteChunkRecords);
      set != nullptr && std::atoll(set) > 0) {
    chunk_records = static_cast<size_t>(std::atoll(set));
    threads = std::max(threads, 2u);
  }
  const size_t n = corr_.order.size();
  const size_t chunks = (n + chunk_records - 1) / chunk_records;
  if (!flush()) return false;  // the header goes first
  auto prepare = [&](size_t c, RecordChunk& chunk) {
    chunk.args.clear();
    chunk.inline_args.clear();
    chunk.definitions.clear();
    chunk.definitions_end.clear();
    for (size_t k = c * chunk_records, end = std::min(n, k + chunk_records); k < end; ++k) {
      for (int32_t range : args_ranges(trace_.ranges, corr_.attributions[k])) {
        if (range < 0) continue;
        const ArgsRef args = resolve_args(range, chunk.definitions);
        chunk.args.push_back({range, args.id, chunk.inline_args.size(), args.text.size()});
        chunk.inline_args += args.text;
      }
      chunk.definitions_end.push_back(chunk.definitions.size());
    }
  };
  auto format = [&](size_t c, RecordChunk& chunk) {
    if (!chunk.formatter) {
      chunk.formatter =
          std::make_unique<RecordFormatter>(trace_, corr_, iterations_, write_ranges_);
    }
    RecordChunk::Args args(chunk);
    RecordFormatter& f = *chunk.formatter;
    f.set_output(&chunk.text);
    f.set_args(&args);
    chunk.text.clear();
    size_t defined = 0;
    for (size_t k = c * chunk_records, end = std::min(n, k + chunk_records); k < end; ++k) {
      const size_t definitions_end = chunk.definitions_end[k - c * chunk_records];
      chunk.text.append(chunk.definitions, defined, definitions_end - defined);
      defined = definitions_end;
      f.write_record(k);
    }
  };
  bool written = true;
  auto consume = [&](size_t, RecordChunk& chunk) { return written = output_.submit(chunk.text); };
  try {
    process_chunks_in_order<RecordChunk>(chunks, threads, prepare, format, consume);
  } catch (...) {
    output_.finish();  // nothing in flight once this returns
    throw;
  }
  return written;
}

bool RecordWriter::write(const std::string& source) {
  buffer_.reserve(kFlushBytes + (kFlushBytes >> 2));
  write_header(source);
  write_compiled_kernel_lines();
  bool ok = write_records();
  RecordFormatter f(trace_, corr_, iterations_, write_ranges_);
  f.set_output(&buffer_);
  f.set_args(this);
  // After the GPU records, in start order: they are no GPU activity (docs/formats.md §3).
  for (size_t k = 0; ok && k < corr_.sync_attributions.size(); ++k) {
    f.write_sync(corr_.sync_attributions[k]);
    if (buffer_.size() >= kFlushBytes) ok = flush();
  }
  ok = ok && write_comm_lines(f);
  ok = ok && write_mark_lines(f);
  if (ok && write_ranges_) ok = write_range_lines(f);
  ok = ok && flush();
  // Waited for after a failure too: the caller closes the stream once this returns, so no
  // write may still be in flight (errno: the failed write's).
  ok = output_.finish() && ok;
  return ok && std::fflush(out_) == 0;
}

}  // namespace pyprof::parse
