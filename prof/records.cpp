#include "prof/records.h"

#include <simdjson.h>

#include <cstdio>
#include <cstdlib>

#include "models/op_model.h"
#include "prof/tensor_cores.h"

namespace pyprof::prof {

uint32_t Strings::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(std::make_unique<std::string>(s));
  index_.emplace(*strings_.back(), id);
  return id;
}

namespace {

namespace dom = simdjson::dom;

int64_t int_or(dom::object o, std::string_view key, int64_t fallback) {
  int64_t v;
  return o[key].get_int64().get(v) == simdjson::SUCCESS ? v : fallback;
}

std::string_view str_or(dom::object o, std::string_view key) {
  std::string_view v;
  return o[key].get_string().get(v) == simdjson::SUCCESS ? v : std::string_view();
}

// The JSON of o[key], minified ("" when absent or null).
std::string raw_or(dom::object o, std::string_view key) {
  dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS || e.is_null()) return {};
  return simdjson::minify(e);
}

void xyz(dom::object o, std::string_view key, int32_t out[3]) {
  dom::array a;
  if (o[key].get_array().get(a) != simdjson::SUCCESS) return;
  int i = 0;
  for (dom::element e : a) {
    int64_t v;
    if (i < 3 && e.get_int64().get(v) == simdjson::SUCCESS) out[i] = static_cast<int32_t>(v);
    ++i;
  }
}

std::string shapes_of(const models::OpArgs& args) {
  std::string out;
  for (const models::Tensor* t : args.tensors()) {
    if (!out.empty()) out += ',';
    out += '[';
    for (size_t i = 0; i < t->shape.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(t->shape[i]);
    }
    out += ']';
  }
  return out;
}

struct CachedCost {
  models::OpCost cost;
  std::string shapes;
};

}  // namespace

bool read_dict(std::FILE* in, const ReadOptions& options, ReadResult& out, std::string& error) {
  dom::parser parser;
  char* line = nullptr;
  size_t capacity = 0;
  ssize_t n;
  bool header_seen = false;
  std::unordered_map<std::string, CachedCost> costs;  // op + args -> cost
  std::vector<int8_t> tc_cache;                       // long-name id -> 1/0, -1 unknown
  const TensorCoreRules& rules = TensorCoreRules::builtin();
  std::string key;
  while ((n = getline(&line, &capacity, in)) > 0) {
    ++out.lines;
    std::string_view text(line, static_cast<size_t>(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (text.empty()) continue;
    dom::element root;
    dom::object o;
    if (parser.parse(text.data(), text.size(), true).get(root) != simdjson::SUCCESS ||
        root.get_object().get(o) != simdjson::SUCCESS) {
      ++out.skipped_lines;
      if (out.warnings.size() < 5) {
        out.warnings.push_back("line " + std::to_string(out.lines) + ": not a JSON object");
      }
      continue;
    }
    int64_t version;
    if (o["pyprof_dict"].get_int64().get(version) == simdjson::SUCCESS) {
      if (version > 1) {
        out.warnings.push_back("net.dict version " + std::to_string(version) +
                               " is newer than this prof (1): unknown keys are ignored");
      }
      header_seen = true;
      out.cpu_only = str_or(o, "records") == "op";
      out.source = std::string(str_or(o, "source"));
      continue;
    }
    if (!header_seen) {
      free(line);
      error = "line " + std::to_string(out.lines) +
              ": no pyprof_dict header (is this the output of `pyprof parse`?)";
      return false;
    }
    ProfRecord r;
    std::string_view kind = str_or(o, "kind");
    r.kind = kind == "kernel"   ? Kind::kKernel
             : kind == "memcpy" ? Kind::kMemcpy
             : kind == "memset" ? Kind::kMemset
                                : Kind::kOp;
    std::string_view dir = str_or(o, "dir");
    r.dir = dir == "fprop" ? Dir::kFprop : dir == "bprop" ? Dir::kBprop : Dir::kNone;
    Strings& s = out.strings;
    r.name = s.intern(str_or(o, "name"));
    r.long_name = s.intern(str_or(o, "long_name"));
    r.device = static_cast<int32_t>(int_or(o, "device", -1));
    r.stream = int_or(o, "stream", -1);
    xyz(o, "grid", r.grid);
    xyz(o, "block", r.block);
    r.start = int_or(o, "start", 0);
    r.duration = int_or(o, "duration", 0);
    r.self_duration = int_or(o, "self_duration", r.duration);
    r.tid = int_or(o, "tid", -1);
    r.seq = int_or(o, "seq", -1);
    r.sub = static_cast<int32_t>(int_or(o, "sub", 0));
    r.parent_id = int_or(o, "parent_id", 0);
    int64_t pid = int_or(o, "pid", 0);
    std::string_view op = str_or(o, "op");
    r.op = s.intern(op);
    std::string_view legacy_mod = str_or(o, "legacy_mod");
    size_t colon = op.rfind("::");
    r.mod = s.intern(!legacy_mod.empty()               ? legacy_mod
                     : colon != std::string_view::npos ? op.substr(0, colon)
                                                       : std::string_view());
    r.module = s.intern(str_or(o, "module"));
    {
      std::string layer;
      dom::array ranges;
      if (o["user_ranges"].get_array().get(ranges) == simdjson::SUCCESS) {
        for (dom::element e : ranges) {
          std::string_view u;
          if (e.get_string().get(u) != simdjson::SUCCESS) continue;
          if (u.starts_with("layer:")) u.remove_prefix(6);
          if (!layer.empty()) layer += ':';
          layer += u;
        }
      }
      r.layer = s.intern(layer);
      std::string trace(str_or(o, "stack"));
      dom::array frames;
      if (o["trace"].get_array().get(frames) == simdjson::SUCCESS) {
        for (dom::element e : frames) {
          std::string_view f;
          if (e.get_string().get(f) != simdjson::SUCCESS) continue;
          if (!trace.empty()) trace += ',';
          trace += f;
        }
      }
      r.trace = s.intern(trace);
    }

    // Which op's cost this record carries: its own op (CPU records: the record's name), or
    // for bprop the op that ran inside the backward node.
    std::string_view cost_op = r.kind == Kind::kOp ? str_or(o, "name") : op;
    std::string args = raw_or(o, "args");
    bool backward_estimate = false;
    if (r.dir == Dir::kBprop) {
      std::string_view bwd_op = str_or(o, "bwd_op");
      if (!bwd_op.empty()) {
        cost_op = bwd_op;
        args = raw_or(o, "bwd_args");
      } else if (r.kind == Kind::kOp) {
        cost_op = {};  // a backward node's own record: its ops carry the cost
      } else {
        backward_estimate = true;
      }
      r.op_id = int_or(o, "fwd_op_id", 0);
      int64_t inner = int_or(o, "bwd_op_id", int_or(o, "bwd_node_id", 0));
      r.instance = inner ? (pid << 40) ^ inner : 0;
    } else {
      r.op_id = int_or(o, "op_id", 0);
      r.instance = r.op_id ? (pid << 40) ^ r.op_id : 0;
    }
    if (int64_t instance = int_or(o, "instance", 0); instance != 0 && r.kind != Kind::kOp) {
      r.instance = instance;  // parse's own numbering: present for every dialect
    }
    if (r.kind == Kind::kOp) r.instance = (pid << 40) ^ int_or(o, "id", 0);
    r.cost_op = s.intern(cost_op);

    if (r.kind == Kind::kMemcpy || r.kind == Kind::kMemset) {
      r.bytes_moved = int_or(o, "bytes", -1);
      r.modeled = r.bytes_moved >= 0;
      r.bytes = r.op_bytes = r.bytes_moved >= 0 ? static_cast<double>(r.bytes_moved) : 0;
      r.family = s.intern(r.kind == Kind::kMemcpy ? "memcpy" : "memset");
      r.instance = 0;  // a copy is its own instance
    } else if (!cost_op.empty()) {
      auto lookup = [&](std::string_view name, const std::string& json) -> const CachedCost& {
        key.assign(name);
        key += '\n';
        key += json;
        auto it = costs.find(key);
        if (it == costs.end()) {
          models::OpArgs op_args = models::OpArgs::from_json(json);
          CachedCost c{models::op_cost(name, op_args), shapes_of(op_args)};
          it = costs.emplace(key, std::move(c)).first;
        }
        return it->second;
      };
      const CachedCost* cached = &lookup(cost_op, args);
      if (!cached->cost.modeled && r.dir == Dir::kBprop && r.kind != Kind::kOp && cost_op != op) {
        // The backward op's arguments are unknown (emit_nvtx without record_shapes): estimate
        // from the forward op.
        const CachedCost& forward = lookup(op, raw_or(o, "args"));
        if (forward.cost.modeled) {
          cached = &forward;
          backward_estimate = true;
        }
      }
      const models::OpCost& c = cached->cost;
      r.modeled = c.modeled;
      // The backward of an op seen only by name (emit_nvtx / legacy records without the
      // backward node's inner ops): GEMM-like ops cost twice their forward (dgrad + wgrad).
      double scale = 1;
      if (backward_estimate && c.modeled) {
        scale = (c.family == "matmul" || c.family == "conv") ? 2 : 1;
      }
      r.flops = r.op_flops = c.flops * scale;
      r.bytes = r.op_bytes = c.bytes * scale;
      r.tc_eligible = c.tc_eligible && (options.allow_tf32 || c.dtype != "float32");
      r.params = s.intern(backward_estimate && c.modeled ? c.params + ",bwd=est" : c.params);
      r.dtype = s.intern(c.dtype);
      r.family = s.intern(c.family);
      r.shapes = s.intern(cached->shapes);
    }
    if (r.kind == Kind::kKernel) {
      if (r.long_name >= tc_cache.size()) tc_cache.resize(r.long_name + 1, -1);
      int8_t& tc = tc_cache[r.long_name];
      if (tc < 0) {
        tc = static_cast<int8_t>(
            rules.uses_tensor_cores(s.get(r.long_name), s.get(r.name)) == 1 ? 1 : 0);
      }
      r.tc = tc;
    }
    out.records.push_back(r);
  }
  free(line);
  if (!header_seen) {
    error = out.lines == 0 ? "empty input (expected the output of `pyprof parse`)"
                           : "no pyprof_dict header (is this the output of `pyprof parse`?)";
    return false;
  }
  return true;
}

void assign_costs(ReadResult& result) {
  auto& records = result.records;
  if (!result.cpu_only) {
    // An op instance's cost is spread over its kernels by duration, so that the instance is
    // counted once and each kernel shows the rate of the op it belongs to.
    std::unordered_map<int64_t, std::pair<int64_t, int64_t>> totals;  // duration, count
    for (const ProfRecord& r : records) {
      if (r.modeled && r.instance != 0) {
        auto& t = totals[r.instance];
        t.first += r.duration;
        t.second += 1;
      }
    }
    for (ProfRecord& r : records) {
      if (!r.modeled) continue;
      r.counted = true;
      if (r.instance == 0) continue;
      const auto& [duration, count] = totals[r.instance];
      double share = duration > 0 ? static_cast<double>(r.duration) / static_cast<double>(duration)
                                  : 1.0 / static_cast<double>(count);
      r.flops *= share;
      r.bytes *= share;
    }
    return;
  }
  // CPU records: each op instance is a record; a call tree is counted at its outermost
  // modelled op (aten::linear's aten::addmm is not counted again).
  std::unordered_map<int64_t, size_t> by_id;
  for (size_t i = 0; i < records.size(); ++i) by_id[records[i].instance] = i;
  for (ProfRecord& r : records) {
    if (!r.modeled) continue;
    int64_t pid_bits = r.instance & ~((int64_t{1} << 40) - 1);
    bool inside_modelled = false;
    for (int64_t p = r.parent_id, guard = 0; p != 0 && guard < 1000; ++guard) {
      auto it = by_id.find(pid_bits ^ p);
      if (it == by_id.end()) break;
      const ProfRecord& parent = records[it->second];
      if (parent.modeled) {
        inside_modelled = true;
        break;
      }
      p = parent.parent_id;
    }
    r.counted = !inside_modelled;
    if (!r.counted) {
      r.flops = 0;
      r.bytes = 0;
    }
  }
}

}  // namespace pyprof::prof
