// The Kineto reader's second half (the first: kineto_reader.cpp): module frames, call sites,
// API calls, GPU activities and exported pyprof ranges into trace rows; the top-level keys
// (devices, distributed info); and what needs the whole trace, resolved in finish().

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "common/dtypes.h"
#include "common/json_writer.h"
#include "common/kernel_names.h"
#include "parse/kineto_event_reader.h"
#include "parse/record_writer.h"

namespace pyprof::parse {

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

}  // namespace pyprof::parse
