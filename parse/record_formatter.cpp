// RecordFormatter (parse/record_writer.h): each line of net.dict that describes one thing of
// the trace, formatted on the thread that formats its chunk: GPU activities, CPU op instances,
// sync, comm and mark lines, and the range lines of `--ranges` (docs/formats.md §3). The header,
// the args and compiled_kernel lines, their order and the output are record_writer.cpp's.
#include <algorithm>
#include <string>
#include <string_view>

#include "common/dict_schema.h"
#include "common/json_writer.h"
#include "parse/record_writer.h"

namespace pyprof::parse {

namespace {

// "duration": end - start; null when the end precedes the start (the trace's clocks went
// wrong), with the raw difference in "negative_duration" so that nothing is lost.
void duration(JsonWriter& w, int64_t start, int64_t end) {
  w.raw_key(dict::key::duration);
  if (end >= start) {
    w.integer(end - start);
    return;
  }
  w.null();
  w.raw_key(dict::key::negative_duration);
  w.integer(end - start);
}

void xyz(JsonWriter& w, std::string_view key, const int32_t v[3]) {
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

void RecordFormatter::write_args(JsonWriter& w, int32_t index, std::string_view key,
                                 std::string_view ref_key) {
  const ArgsRef args = args_->resolve(index);
  if (args.id >= 0) {
    w.raw_key(ref_key);
    w.integer(args.id);
  } else if (!args.text.empty()) {
    w.raw_key(key);
    w.raw_value(args.text);
  }
}

// A synchronizing API call (docs/formats.md §3, kind `sync`): no GPU activity of its own, but
// the host waited in it for the GPU, so advice can tell why the GPU then sat idle.
void RecordFormatter::write_rank(JsonWriter& w) {
  if (rank_ < 0) return;
  w.raw_key(dict::key::rank);
  w.integer(rank_);
}

void RecordFormatter::write_sync(const Attribution& a) {
  const ApiCall& call = trace_.api_calls[a.launch];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kSync));
    w.raw_key(dict::key::name);
    pooled(w, call.name);
    w.raw_key(dict::key::start);
    w.integer(call.start);
    duration(w, call.start, call.end);
    w.raw_key(dict::key::pid);
    w.integer(call.pid);
    write_rank(w);
    w.raw_key(dict::key::tid);
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
    w.raw_key(dict::key::before_trace);
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
  w.raw_key(dict::key::step);
  w.integer(step);
}

void RecordFormatter::write_attribution(JsonWriter& w, const Attribution& a,
                                        int64_t replay_instance) {
  const auto& ranges = trace_.ranges;
  const auto& pool = trace_.pool;
  w.raw_key(dict::key::op);
  if (a.op >= 0) {
    pooled(w, ranges[a.op].name);
  } else {
    w.null();
  }
  w.raw_key(dict::key::dir);
  if (a.dir == Direction::kForward) {
    w.trusted_string(dict::direction::kFprop);
  } else if (a.dir == Direction::kBackward) {
    w.trusted_string(dict::direction::kBprop);
  } else {
    w.null();
  }
  if (a.dir == Direction::kNone) return;
  if (a.op >= 0) {
    const RangeRecord& op = ranges[a.op];
    if (op.op_id != 0) {
      w.raw_key(dict::key::op_id);
      w.integer(op.op_id);
    }
    w.raw_key(dict::key::dialect);
    w.trusted_string(dialect_name(op.dialect));
    if (op.dialect == Dialect::kLegacyPyprof && op.detail != 0) {
      w.raw_key(dict::key::legacy_mod);
      pooled(w, op.detail);
    }
  }
  w.raw_key(dict::key::seq);
  w.integer(seq_of(trace_, a));
  w.raw_key(dict::key::sub);
  w.integer(a.sub);
  // Which op instance this record belongs to (the op range, or the backward node for bprop; a
  // graph replay's own): a number unique within the file, present even when markers carry no
  // op ids.
  int32_t instance = a.dir == Direction::kBackward ? a.node : a.op;
  if (instance >= 0) {
    w.raw_key(dict::key::instance);
    w.integer(replay_instance != 0 ? replay_instance : corr_.rank[instance]);
  }
  const std::array<int32_t, 2> args = args_ranges(ranges, a);
  if (args[0] >= 0) write_args(w, args[0], dict::key::args, dict::key::args_ref);
  if (a.op >= 0 && ranges[a.op].stack != 0) {
    w.raw_key(dict::key::stack);
    pooled(w, ranges[a.op].stack);
  }
  if (a.module >= 0) {
    w.raw_key(dict::key::module);
    pooled(w, ranges[a.module].name);
    if (ranges[a.module].detail != 0) {
      w.raw_key(dict::key::module_type);
      pooled(w, ranges[a.module].detail);
    }
  }
  if (a.trace >= 0 && ranges[a.trace].detail != 0) {
    // Legacy trace markers hold the frames joined by newlines.
    w.raw_key(dict::key::trace);
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
    w.raw_key(dict::key::bwd_node);
    pooled(w, node.name);
    if (node.op_id != 0) {
      w.raw_key(dict::key::bwd_node_id);
      w.integer(node.op_id);
    }
    w.raw_key(dict::key::paired);
    w.boolean(a.paired);
    if (a.paired && a.op >= 0 && ranges[a.op].op_id != 0) {
      w.raw_key(dict::key::fwd_op_id);
      w.integer(ranges[a.op].op_id);
    }
    if (a.paired && a.op >= 0) {
      w.raw_key(
          dict::key::fwd_instance);  // the forward op's `instance`, present without op ids too
      w.integer(corr_.rank[a.op]);
    }
    if (a.bwd_op >= 0) {
      const RangeRecord& bop = ranges[a.bwd_op];
      w.raw_key(dict::key::bwd_op);
      pooled(w, bop.name);
      if (bop.op_id != 0) {
        w.raw_key(dict::key::bwd_op_id);
        w.integer(bop.op_id);
      }
      if (args[1] >= 0) write_args(w, args[1], dict::key::bwd_args, dict::key::bwd_args_ref);
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
    w.raw_key(dict::key::kind);
    switch (act.kind) {
      case ActivityKind::kKernel:
        w.trusted_string(dict::name_of(dict::LineKind::kKernel));
        w.raw_key(dict::key::name);
        pooled(w, act.short_name);
        w.raw_key(dict::key::long_name);
        pooled(w, act.long_name);
        break;
      case ActivityKind::kMemcpy:
        w.trusted_string(dict::name_of(dict::LineKind::kMemcpy));
        w.raw_key(dict::key::name);
        record_name_.assign(dict::kMemcpyNamePrefix);
        record_name_ += copy_kind_name(act.copy_kind);
        record_name_ += ']';
        w.string(record_name_);
        w.raw_key(dict::key::bytes);
        w.integer(act.bytes);
        w.raw_key(dict::key::copy_kind);
        w.trusted_string(copy_kind_name(act.copy_kind));
        w.raw_key(dict::key::src_kind);
        w.trusted_string(mem_kind_name(act.src_kind));
        w.raw_key(dict::key::dst_kind);
        w.trusted_string(mem_kind_name(act.dst_kind));
        break;
      case ActivityKind::kMemset:
        w.trusted_string(dict::name_of(dict::LineKind::kMemset));
        w.raw_key(dict::key::name);
        w.trusted_string(dict::kMemsetName);
        w.raw_key(dict::key::bytes);
        w.integer(act.bytes);
        w.raw_key(dict::key::value);
        w.integer(act.memset_value);
        w.raw_key(dict::key::mem_kind);
        w.trusted_string(mem_kind_name(act.dst_kind));
        break;
    }
    w.raw_key(dict::key::device);
    w.integer(act.device);
    w.raw_key(dict::key::context);
    w.integer(act.context);
    w.raw_key(dict::key::stream);
    w.integer(act.stream);
    if (act.kind == ActivityKind::kKernel) {
      xyz(w, dict::key::grid, act.grid);
      xyz(w, dict::key::block, act.block);
      w.raw_key(dict::key::registers);
      w.integer(act.registers);
      w.raw_key(dict::key::shared_static);
      w.integer(act.static_shared);
      w.raw_key(dict::key::shared_dynamic);
      w.integer(act.dynamic_shared);
      if (act.shared_total >= 0) {
        w.raw_key(dict::key::shared_memory);
        w.integer(act.shared_total);
      }
    }
    w.raw_key(dict::key::start);
    w.integer(act.start);
    duration(w, act.start, act.end);
    w.raw_key(dict::key::correlation);
    w.integer(act.correlation_id);
    w.raw_key(dict::key::pid);
    w.integer(act.pid);
    write_rank(w);
    if (act.graph_node_id >= 0) {
      w.raw_key(dict::key::graph_node);
      w.integer(act.graph_node_id);
    }
    if (a.launch >= 0) {
      const ApiCall& call = trace_.api_calls[a.launch];
      w.raw_key(dict::key::tid);
      w.integer(call.tid);
      w.raw_key(dict::key::launch);
      w.begin_object();
      w.raw_key(dict::launch_key::api);
      pooled(w, call.name);
      w.raw_key(dict::launch_key::start);
      w.integer(call.start);
      duration(w, call.start, call.end);
      w.end_object();
    } else {
      w.raw_key(dict::key::tid);
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
    w.raw_key(dict::key::compiled_graph);
    w.string(key);
    return;
  }
  w.raw_key(dict::key::compiled_graph);
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
  w.raw_key(dict::key::compiled_symbols);
  w.raw_value(it->symbols);  // validated by the marker decoder
}

void RecordFormatter::write_op_instance(size_t k, int32_t index, const Attribution& a) {
  const RangeRecord& r = trace_.ranges[index];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kOp));
    w.raw_key(dict::key::name);
    pooled(w, r.name);
    w.raw_key(dict::key::start);
    w.integer(r.start);
    w.raw_key(dict::key::duration);
    if (r.end == kOpenEnd) {
      w.null();
      w.raw_key(dict::key::self_duration);
      w.null();
    } else {
      w.integer(r.end - r.start);
      w.raw_key(dict::key::self_duration);
      w.integer(corr_.self_time[index]);
    }
    w.raw_key(dict::key::pid);
    w.integer(r.pid);
    write_rank(w);
    w.raw_key(dict::key::tid);
    w.integer(r.tid);
    if (r.op_id != 0) {
      w.raw_key(dict::key::id);
      w.integer(r.op_id);
    }
    if (write_ranges_) {
      w.raw_key(dict::key::range);
      w.integer(corr_.rank[index]);
    }
    // The op or backward node this one runs inside, so that a consumer can count a call tree
    // once (aten::linear -> aten::addmm).
    int32_t outer = r.parent >= 0 ? op_or_node_of(trace_, r.parent) : -1;
    if (outer >= 0 && trace_.ranges[outer].op_id != 0) {
      w.raw_key(dict::key::parent_id);
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
    w.raw_key(dict::key::user_ranges);
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
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kRange));
    w.raw_key(dict::key::range);
    w.trusted_string(range_kind_name(r.kind));
    w.raw_key(dict::key::id);
    w.integer(corr_.rank[index]);
    if (r.parent >= 0) {
      w.raw_key(dict::key::parent);
      w.integer(corr_.rank[r.parent]);
    }
    w.raw_key(dict::key::name);
    pooled(w, r.name);
    w.raw_key(dict::key::start);
    w.integer(r.start);
    w.raw_key(dict::key::duration);
    if (r.end == kOpenEnd) {
      w.null();
    } else {
      w.integer(r.end - r.start);
    }
    w.raw_key(dict::key::pid);
    w.integer(r.pid);
    w.raw_key(dict::key::tid);
    w.integer(r.tid);
    w.raw_key(dict::key::dialect);
    w.trusted_string(dialect_name(r.dialect));
    if (r.domain != 0) {
      w.raw_key(dict::key::domain);
      pooled(w, r.domain);
    }
    if (r.op_id != 0) {
      w.raw_key(dict::key::op_id);
      w.integer(r.op_id);
    }
    if (r.seq >= 0) {
      w.raw_key(dict::key::seq);
      w.integer(r.seq);
    }
    if (r.rf_tid >= 0) {
      w.raw_key(dict::key::rf_tid);
      w.integer(r.rf_tid);
    }
    if (r.fwd_tid >= 0) {
      w.raw_key(dict::key::fwd_tid);
      w.integer(r.fwd_tid);
    }
    if (r.detail != 0) {
      // Module class, legacy PyProf 'mod', or a legacy trace marker's frames (by `range`).
      w.raw_key(dict::key::detail);
      pooled(w, r.detail);
    }
    if (r.stack != 0) {
      w.raw_key(dict::key::stack);
      pooled(w, r.stack);
    }
    if (r.has_args) write_args(w, index, dict::key::args, dict::key::args_ref);
    if (forward_op >= 0) {
      w.raw_key(dict::key::fwd);  // the forward op this backward node was paired with
      w.integer(corr_.rank[forward_op]);
    }
    w.end_object();
  }
  end_record();
}

void RecordFormatter::write_comm(const RangeRecord& r) {
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kComm));
    w.raw_key(dict::key::name);
    pooled(w, r.name);
    w.raw_key(dict::key::start);
    w.integer(r.start);
    w.raw_key(dict::key::duration);
    w.integer(r.end - r.start);
    w.raw_key(dict::key::pid);
    w.integer(r.pid);
    write_rank(w);
    w.raw_key(dict::key::tid);
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
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kMark));
    w.raw_key(dict::key::name);
    pooled(w, r.name);
    if (r.domain != 0) {
      w.raw_key(dict::key::domain);
      pooled(w, r.domain);
    }
    w.raw_key(dict::key::start);
    w.integer(r.start);
    w.raw_key(dict::key::pid);
    w.integer(r.pid);
    write_rank(w);
    w.raw_key(dict::key::tid);
    w.integer(r.tid);
    write_step_at(w, r.start);
    w.end_object();
  }
  end_record();
}

void RecordFormatter::write_memory(int32_t event, const Attribution& a) {
  const MemoryEvent& e = trace_.memory_events[static_cast<size_t>(event)];
  {
    JsonWriter w(record_, kNoTruncation, 0);
    w.begin_object();
    w.raw_key(dict::key::kind);
    w.trusted_string(dict::name_of(dict::LineKind::kMemory));
    w.raw_key(dict::key::start);
    w.integer(e.start);
    w.raw_key(dict::key::bytes);
    w.integer(e.bytes);
    w.raw_key(dict::key::addr);
    w.integer(e.address);
    w.raw_key(dict::key::device);
    w.integer(e.device);
    if (e.total_allocated != MemoryEvent::kNoTotal) {
      w.raw_key(dict::key::total_allocated);
      w.integer(e.total_allocated);
    }
    if (e.total_reserved != MemoryEvent::kNoTotal) {
      w.raw_key(dict::key::total_reserved);
      w.integer(e.total_reserved);
    }
    w.raw_key(dict::key::pid);
    w.integer(e.pid);
    write_rank(w);
    w.raw_key(dict::key::tid);
    w.integer(e.tid);
    // As a record's: the op (for bprop the forward op it belongs to), its instance (for bprop
    // the backward node), its module.
    w.raw_key(dict::key::op);
    if (a.op >= 0) {
      pooled(w, trace_.ranges[a.op].name);
    } else {
      w.null();
    }
    w.raw_key(dict::key::dir);
    if (a.dir == Direction::kForward) {
      w.trusted_string(dict::direction::kFprop);
    } else if (a.dir == Direction::kBackward) {
      w.trusted_string(dict::direction::kBprop);
    } else {
      w.null();
    }
    const int32_t instance = a.dir == Direction::kBackward ? a.node : a.op;
    if (a.dir != Direction::kNone && instance >= 0) {
      w.raw_key(dict::key::instance);
      w.integer(corr_.rank[instance]);
    }
    if (a.dir != Direction::kNone && a.module >= 0) {
      w.raw_key(dict::key::module);
      pooled(w, trace_.ranges[a.module].name);
    }
    write_step_at(w, e.start);
    write_user_ranges(w, a);
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

}  // namespace pyprof::parse
