#include "prof/records.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <tuple>

#include "common/dict_schema.h"
#include "common/marker_schema.h"
#include "models/has_model.h"
#include "models/op_model.h"
#include "prof/above_peak.h"
#include "prof/dict_reader.h"
#include "prof/memory_events.h"
#include "prof/record_links.h"
#include "prof/tensor_cores.h"

// read_dict takes each line of net.dict from the one reader (prof/dict_reader.h: blocks of
// whole lines, their keys read on two threads of their own a few blocks ahead, the header
// parsed, the compact form's args resolved) and runs two steps per record, in input order:
//   3. record: make_record turns the line's keys into a ProfRecord: identity, place, timing,
//              names, and TimeChecker makes a time that cannot be right unknown (bad_time);
//   4. cost:   RecordCoster adds what the record cost (models/, each distinct op call costed
//              once) and, for kernels, Tensor Core use (each distinct kernel name judged once).
// Then link_cpu_parents (prof/record_links.h) joins the records of a CPU-only profile into call
// trees.

namespace pyprof::prof {

namespace {

using dict::Key;

// How parse writes a pyprof.autotune range in a record's `user_ranges` (domain:message).
constexpr std::string_view kAutotuneRangePrefix = "pyprof.autotune:";
static_assert(kAutotuneRangePrefix.substr(0, kAutotuneRangePrefix.size() - 1) == kAutotuneDomain);

// "1 record", "3 records": the count with its noun for messages.
std::string count_of(int64_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// Records with one kind of problem: how many, and the first of them, for its one warning.
struct ProblemTally {
  int64_t records = 0;
  int64_t first_line = 0;
  std::string first_name, first_detail;

  void note(int64_t line, std::string_view name, std::string_view detail) {
    if (records++ > 0) return;
    first_line = line;
    first_name = name;
    first_detail = detail;
  }
};

// FLOPs per clock per SM of an architecture's densest dense Tensor Core mode (FP4/FP8/INT8
// where it has them; ../shared/reference/gpu-peaks.md §3): an upper bound on any op's rate.
// 0 for an architecture not known here (no FLOP check).
double max_flops_per_clock_per_sm(int64_t major, int64_t minor) {
  if (major < 7) return 1024;  // Maxwell/Pascal: no Tensor Cores; INT8 DP4A is below this
  if (major == 7) return minor >= 5 ? 2048 : 1024;  // Turing INT8; Volta FP16
  if (major == 8) return minor == 0 ? 4096 : 2048;  // A100 INT8; sm_86/87/89
  if (major == 9) return 8192;                      // Hopper FP8/INT8
  if (major == 10) return 32768;                    // Blackwell FP4
  if (major == 12) return 4096;                     // GeForce Blackwell FP4
  return 0;
}

// A GPU of the header's `devices` and the peak rates prof checks records against.
DevicePeak device_peak(const DictDevice& d) {
  DevicePeak p;
  p.id = d.id.value_or(-1);
  p.name = d.name.value_or("");
  p.memory_bandwidth = static_cast<double>(std::max<int64_t>(d.memory_bandwidth.value_or(0), 0));
  p.total_memory = std::max<int64_t>(d.total_memory.value_or(0), 0);
  p.sm_count = d.sm_count.value_or(0);
  p.clock_hz = d.clock_hz.value_or(0);
  const int64_t major = d.compute_major.value_or(-1), minor = d.compute_minor.value_or(0);
  p.cc_major = static_cast<int>(std::clamp<int64_t>(major, -1, 1000));
  p.cc_minor = static_cast<int>(std::clamp<int64_t>(minor, 0, 1000));
  if (p.sm_count > 0 && p.clock_hz > 0 && major >= 0) {
    p.flops = static_cast<double>(p.sm_count) * static_cast<double>(p.clock_hz) *
              max_flops_per_clock_per_sm(major, minor);
  }
  return p;
}

// The header line: what kind of records follow and where they came from.
void read_header(const DictHeader& h, ReadResult& out) {
  if (h.version > dict::kNewestVersion) {
    out.warnings.push_back(
        fmt::format("net.dict version {} is newer than this prof ({}): unknown keys are ignored",
                    h.version, dict::kNewestVersion));
  }
  out.cpu_only = h.records == dict::records_kind::kOp;
  out.source = h.source;
  out.rank = h.rank.value_or(-1);
  out.world_size = h.world_size.value_or(-1);
  out.devices.clear();
  for (const DictDevice& d : h.devices) out.devices.push_back(device_peak(d));
  out.torch_settings.clear();
  for (const auto& [k, v] : h.torch_settings) out.torch_settings[k] = v;
  out.iterations = {};
  if (!h.has_iterations) return;
  if (!h.iterations_problem.empty()) {
    out.warnings.push_back("header: `iterations` is malformed (" + h.iterations_problem +
                           "): ignored, the reports cover every record");
    return;
  }
  out.iterations.rule = h.iteration_rule;
  out.iterations.range = h.iteration_range;
  for (const DictStep& s : h.steps) {
    Step step;
    step.index = static_cast<int32_t>(out.iterations.steps.size());
    step.name = s.name;
    step.start = s.start;
    step.end = s.end;
    step.cut = s.cut;
    out.iterations.steps.push_back(std::move(step));
  }
}

// Counts line `l` as unreadable; warns about the first few.
void skip_line(const DictLine& l, ReadResult& out) {
  ++out.skipped_lines;
  if (out.skipped_lines == 1)
    out.first_skipped_line = fmt::format("line {}: {}", l.line, l.unreadable);
  if (out.warnings.size() < 5) {
    out.warnings.push_back(fmt::format("line {}: {}", l.line, l.unreadable));
  }
}

// ---- 3. record --------------------------------------------------------------------------------

Kind kind_of(dict::LineKind kind) {
  return kind == dict::LineKind::kKernel   ? Kind::kKernel
         : kind == dict::LineKind::kMemcpy ? Kind::kMemcpy
         : kind == dict::LineKind::kMemset ? Kind::kMemset
                                           : Kind::kOp;
}

// A memcpy's `src_kind` / `dst_kind` (dict::kMemoryKinds) as prof tells memory apart.
MemoryKind memory_kind_of(std::string_view kind) {
  return kind.empty()                    ? MemoryKind::kUnknown
         : kind == dict::kMemoryKinds[0] ? MemoryKind::kPageable
         : kind == dict::kMemoryKinds[1] ? MemoryKind::kPinned
         : kind == dict::kMemoryKinds[2] ? MemoryKind::kDevice
         : kind == dict::kMemoryKinds[4] ? MemoryKind::kManaged
                                         : MemoryKind::kOther;
}

Dir dir_of(std::string_view dir) {
  return dir == dict::direction::kFprop   ? Dir::kFprop
         : dir == dict::direction::kBprop ? Dir::kBprop
                                          : Dir::kNone;
}

// A kernel's `grid` or `block`, "[x,y,z]", into `out` (what is not an integer stays 0).
void read_xyz(std::string_view raw, int32_t out[3]) {
  if (raw.empty() || raw.front() != '[') return;
  const char* p = raw.data() + 1;
  const char* end = raw.data() + raw.size();
  for (int i = 0; p < end && *p != ']'; ++i) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) ++p;
    int64_t x = 0;
    auto [next, ec] = std::from_chars(p, end, x);
    if (ec == std::errc() && i < 3) out[i] = static_cast<int32_t>(x);
    p = ec == std::errc() ? next : p;
    while (p < end && *p != ',' && *p != ']') ++p;
    if (p < end && *p == ',') ++p;
  }
}

// The record of a line, everything but its cost and Tensor Core use. `index` is its position
// in ReadResult::records. Interns its strings in a fixed order (reports break ties by string
// id). `scratch`: room for the joined user ranges and frames.
ProfRecord make_record(const DictLine& l, size_t index, Strings& s, std::string& scratch) {
  ProfRecord r;
  r.kind = kind_of(l.kind());
  r.dir = dir_of(l.str(Key::dir));
  r.name = s.intern(l.str(Key::name));
  r.long_name = s.intern(l.str(Key::long_name));
  r.device = static_cast<int32_t>(l.num(Key::device, -1));
  r.stream = l.num(Key::stream, -1);
  read_xyz(l.raw(Key::grid), r.grid);
  read_xyz(l.raw(Key::block), r.block);
  r.start = l.num(Key::start, 0);
  r.duration = l.num(Key::duration, 0);
  const DictLine::Launch* launch = l.launch();
  r.launch_start = launch != nullptr ? launch->start.value_or(-1) : -1;
  r.graph_launched = l.has(Key::graph_node);
  r.before_trace = l.flag(Key::before_trace);
  r.src_memory = memory_kind_of(l.str(Key::src_kind));
  r.dst_memory = memory_kind_of(l.str(Key::dst_kind));
  r.self_duration = l.num(Key::self_duration, r.duration);
  r.tid = l.num(Key::tid, -1);
  r.seq = l.num(Key::seq, -1);
  r.sub = static_cast<int32_t>(l.num(Key::sub, 0));
  r.fwd_instance = l.num(Key::fwd_instance, 0);
  r.op_id = r.dir == Dir::kBprop ? l.num(Key::fwd_op_id, 0) : l.num(Key::op_id, 0);
  if (r.kind == Kind::kOp) {
    // parse's `instance` of a CPU record inside a backward node is the node, shared with the
    // node's other ops; prof counts every CPU op record as an instance of its own
    // (docs/prof.md §1), so its position is its instance.
    r.instance = static_cast<int64_t>(index) + 1;
  } else if (r.kind == Kind::kKernel) {
    // parse writes `instance` on every record that has an op, and has since prof first read it
    // (both came in one change), so there is no older numbering to fall back to; a record
    // without one has no op and shares its cost with nothing.
    r.instance = l.num(Key::instance, 0);
  }  // a copy's bytes are its own, not shared with its op's kernels: instance 0
  std::string_view op = l.str(Key::op);
  r.op = s.intern(op);
  size_t colon = op.rfind("::");
  const std::string_view legacy_mod = l.str(Key::legacy_mod);
  r.mod = s.intern(!legacy_mod.empty()               ? legacy_mod
                   : colon != std::string_view::npos ? op.substr(0, colon)
                                                     : std::string_view());
  r.module = s.intern(l.str(Key::module));
  // PyProf's "layer": the user ranges joined by ':', a legacy `layer:` range without its prefix.
  scratch.clear();
  for (std::string_view u : l.strings(Key::user_ranges)) {
    if (u.starts_with(kAutotuneRangePrefix)) r.autotune = true;
    if (u.starts_with("layer:")) u.remove_prefix(6);
    if (!scratch.empty()) scratch += ':';
    scratch += u;
  }
  r.layer = s.intern(scratch);
  const std::string_view stack = l.str(Key::stack);
  if (stack.empty()) {
    scratch.clear();
    for (std::string_view frame : l.strings(Key::trace)) {
      if (!scratch.empty()) scratch += ',';
      scratch += frame;
    }
  }
  r.trace = s.intern(stack.empty() ? std::string_view(scratch) : stack);
  return r;
}

// Checks each record's times against the credible bounds and the running sums (records.h,
// kMaxRecordDuration); a record outside them gets an unknown time (bad_time). Counts them and
// keeps the first for the one warning.
class TimeChecker {
 public:
  void check(const DictLine& l, ProfRecord& r) {
    std::string problem = problem_of(l, r);
    if (problem.empty()) {
      total_duration_ += r.duration;
      total_self_duration_ += r.self_duration;
      return;
    }
    r.bad_time = true;
    r.start = r.duration = r.self_duration = 0;
    bad_.note(l.line, l.str(Key::name), problem);
  }

  void warn(ReadResult& out) const {
    out.bad_time = bad_.records;
    if (bad_.records == 0) return;
    out.warnings.push_back(fmt::format(
        "{} with a time that cannot be right (first: line {}, {}: {}): time unknown (0 ns), "
        "flagged `bad-time` (column flag) and left out of the time sums and the totals",
        count_of(bad_.records, "record"), bad_.first_line, bad_.first_name, bad_.first_detail));
  }

 private:
  // Why the record's times are not credible; "" when they are.
  std::string problem_of(const DictLine& l, const ProfRecord& r) const {
    if (!l.unreadable_time.empty()) {
      return fmt::format("{} is not an integer of at most 63 bits", l.unreadable_time);
    }
    if (r.start < 0) return fmt::format("start {} ns is negative", r.start);
    if (r.start > kMaxRecordStart) {
      return fmt::format("start {} ns is past 2^62 ns (the year 2116)", r.start);
    }
    for (auto [name, value] : {std::pair<const char*, int64_t>{"duration", r.duration},
                               std::pair<const char*, int64_t>{"self_duration", r.self_duration}}) {
      if (value < 0) return fmt::format("{} {} ns is negative", name, value);
      if (value > kMaxRecordDuration) {
        return fmt::format("{} {} ns is past 2^50 ns (13 days)", name, value);
      }
    }
    if (r.duration > kMaxTotalTime - total_duration_ ||
        r.self_duration > kMaxTotalTime - total_self_duration_) {
      return "the durations of the records up to it add up past 2^62 ns (146 years)";
    }
    return {};
  }

  int64_t total_duration_ = 0;  // of the records with credible times, each <= kMaxTotalTime
  int64_t total_self_duration_ = 0;
  ProblemTally bad_;
};

// ---- 4. cost ----------------------------------------------------------------------------------

// Which op's model costs a record, and with which arguments.
struct CostSource {
  std::string_view op;    // "" when the record carries no op cost
  std::string_view args;  // that op's args JSON
  int64_t args_ref = -1;  // the compact form's id of `args`; -1: written inline
  // A bprop kernel whose backward node ran no op the trace names (emit_nvtx, legacy PyProf):
  // its forward op's cost stands in (docs/prof.md §1, "Backward").
  bool backward_estimate = false;
};

CostSource cost_source(const DictLine& l, const ProfRecord& r) {
  // Its own op (CPU records: the record's name), or for bprop the op that ran inside the
  // backward node.
  CostSource source{l.str(r.kind == Kind::kOp ? Key::name : Key::op), l.raw(Key::args),
                    l.num(Key::args_ref, -1)};
  if (r.dir != Dir::kBprop) return source;
  if (const std::string_view bwd_op = l.str(Key::bwd_op); !bwd_op.empty()) {
    source.op = bwd_op;
    source.args = l.raw(Key::bwd_args);
    source.args_ref = l.num(Key::bwd_args_ref, -1);
  } else if (r.kind == Kind::kOp) {
    source.op = {};  // a backward node's own record: its ops carry the cost
  } else {
    source.backward_estimate = true;
  }
  return source;
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

// Fills in what each record cost and whether its kernel used Tensor Cores. Records repeat the
// same op calls and kernels, so each distinct (op, args) is costed once and each distinct
// kernel name judged once.
class RecordCoster {
 public:
  RecordCoster(const ReadOptions& options, Strings& strings)
      : allow_tf32_(options.allow_tf32), strings_(strings) {}

  // ReadResult::unmodelled_calls: the distinct calls costed without a model, of ops with none.
  void list_unmodelled_calls(ReadResult& out) const {
    for (const auto& [key, cached] : costs_) {
      if (cached.cost.modeled || cached.records == 0) continue;
      const size_t newline = key.find('\n');
      const std::string_view op = std::string_view(key).substr(0, newline);
      if (models::has_op_model(op)) continue;
      out.unmodelled_calls.push_back({std::string(op), key.substr(newline + 1), cached.records});
    }
    std::sort(out.unmodelled_calls.begin(), out.unmodelled_calls.end(),
              [](const auto& a, const auto& b) {
                return std::tie(a.op, a.args) < std::tie(b.op, b.args);
              });
  }

  // One warning per kind of cost problem, with how many records had it and the first of them.
  void warn_about_problems(ReadResult& out) const {
    if (overflow_.records > 0) {
      out.warnings.push_back(fmt::format(
          "{} of modelled ops with FLOP or byte counts that do not fit 64 bits (first: line {}, "
          "{}, {}): not modelled (na), left out of the totals",
          count_of(overflow_.records, "record"), overflow_.first_line, overflow_.first_name,
          overflow_.first_detail));
    }
    if (negative_.records > 0) {
      out.warnings.push_back(fmt::format(
          "{} of modelled ops with a tensor with a negative dimension (first: line {}, {}: {}): "
          "not modelled (na), left out of the totals",
          count_of(negative_.records, "record"), negative_.first_line, negative_.first_name,
          negative_.first_detail));
    }
    for (const auto& [op, tally] : user_model_problems_) {
      out.warnings.push_back(fmt::format(
          "{} of {} that its user model cannot cost (first: line {}: {}): not modelled (na)",
          count_of(tally.records, "record"), op, tally.first_line, tally.first_detail));
    }
  }

  // A `"kind":"compiled_kernel"` line: records named `name` (its Inductor kernel) cost what its
  // node list says (models::compiled_kernel_cost); with a `graph`, only the records of that
  // graph (their `compiled_graph`). A name defined twice keeps its first line.
  void define_compiled_kernel(std::string_view name, std::string_view graph,
                              std::string_view kernel) {
    const uint32_t id = compiled_key(name, graph);
    if (compiled_.count(id)) return;
    models::OpCost c = models::compiled_kernel_cost(kernel);
    compiled_.emplace(id, CachedCost{std::move(c), ""});
    // Dynamic shapes: costed per call, with the sizes the record's graph call ran with.
    if (models::has_symbolic_sizes(kernel)) {
      symbolic_kernels_.emplace(id, std::string(kernel));
    }
  }

  // Sets r.cost_op, the cost fields (modeled, flops, bytes, op_flops, op_bytes, estimated,
  // tc_eligible, params, dtype, family, shapes) and, for kernels, r.tc.
  void cost(const DictLine& l, ProfRecord& r) {
    if (!compiled_.empty() && (r.kind == Kind::kKernel || r.kind == Kind::kOp)) {
      const std::string_view graph = l.str(Key::compiled_graph);
      auto it = compiled_.find(graph.empty() ? r.name : compiled_key(l.str(Key::name), graph));
      // A kernel of the C++ wrapper's extern call (cuBLAS's, under `aoti_torch_cuda_mm_out`):
      // its name has no mark, the call it ran in has (parse's compiled_call_range).
      const std::string_view call = l.str(r.dir == Dir::kBprop ? Key::bwd_op : Key::op);
      const bool by_call = it == compiled_.end() && r.kind == Kind::kKernel && !call.empty();
      if (by_call) it = compiled_.find(compiled_key(call, graph));
      if (it != compiled_.end()) {
        const std::string_view symbols = l.raw(Key::compiled_symbols);
        auto symbolic =
            symbols.empty() ? symbolic_kernels_.end() : symbolic_kernels_.find(it->first);
        cost_compiled(symbolic == symbolic_kernels_.end()
                          ? it->second
                          : bound_cost(it->first, symbolic->second, symbols),
                      r);
        if (by_call) {
          // The call's cost is shared by the kernels it launched, as an eager op's is.
          r.compiled = false;
          r.compiled_call = true;
          r.cost_op = strings_.intern(call);
          if (r.dir == Dir::kBprop) r.cost_part = backward_cost_part(l, r.cost_op);
        }
        if (r.kind == Kind::kKernel) r.tc = uses_tensor_cores(r);
        return;
      }
    }
    CostSource source = cost_source(l, r);
    r.cost_op = strings_.intern(source.op);
    if (r.kind == Kind::kKernel && r.dir == Dir::kBprop && !l.str(Key::bwd_op).empty()) {
      r.cost_part = backward_cost_part(l, r.cost_op);
    }
    if (r.kind == Kind::kMemcpy || r.kind == Kind::kMemset) {
      cost_copy(l, r);
    } else if (!source.op.empty()) {
      cost_op(l, source, r);
    }
    if (r.kind == Kind::kKernel) r.tc = uses_tensor_cores(r);
  }

 private:
  // A backward node's kernels come from several ops (convolution_backward's dgrad and wgrad,
  // and beside them the gradient accumulation's add): each op's cost is shared by its own
  // kernels only, the kernels of one (instance, cost_part). The part is the op's id (net.dict
  // `bwd_op_id`); without one, the op's name `cost_op` stands in (negative, apart from ids).
  static int64_t backward_cost_part(const DictLine& l, uint32_t cost_op) {
    const int64_t id = l.num(Key::bwd_op_id, 0);
    return id != 0 ? id : -static_cast<int64_t>(cost_op) - 1;
  }

  struct CachedCost {
    models::OpCost cost;
    std::string shapes;
    // The string ids of params (and of params + ",bwd=est"), dtype, family and shapes, each
    // interned when a record first needs it, as before they were cached (string ids break ties
    // in the reports, so their order must not change); 0: not yet.
    uint32_t params_id = 0, estimated_params_id = 0, dtype_id = 0, family_id = 0, shapes_id = 0;
    int64_t records = 0;  // the records it costs (as its own op: list_unmodelled_calls)
  };

  // The cost of a dynamic-shape kernel (compiled_ key `id`) under one call's sizes; a training
  // loop repeats few sizes, so each (kernel, sizes) is costed once.
  CachedCost& bound_cost(uint32_t id, const std::string& kernel, std::string_view symbols) {
    key_.assign(reinterpret_cast<const char*>(&id), sizeof id);
    key_.append(symbols);
    auto it = bound_.find(key_);
    if (it != bound_.end()) return it->second;
    const std::string bound = models::bind_symbols(kernel, symbols);
    models::OpCost c = bound.empty() ? models::OpCost{} : models::compiled_kernel_cost(bound);
    return bound_.emplace(key_, CachedCost{std::move(c), ""}).first->second;
  }

  uint32_t interned(uint32_t& id, std::string_view text) {
    if (id == 0) id = strings_.intern(text);
    return id;
  }

  // The key of compiled_: the kernel's name, or its name and graph when the name is shared.
  uint32_t compiled_key(std::string_view name, std::string_view graph) {
    if (graph.empty()) return strings_.intern(name);
    compiled_kernel_key(name, graph, key_);
    return strings_.intern(key_);
  }

  void cost_compiled(CachedCost& cached, ProfRecord& r) {
    const models::OpCost& c = cached.cost;
    r.compiled = true;
    r.cost_op = r.name;
    r.modeled = c.modeled;
    r.flops = r.op_flops = c.flops;
    r.op_masked_flops = c.masked_flops;
    r.bytes = r.op_bytes = c.bytes;
    r.tc_eligible = c.tc_eligible && (allow_tf32_ || c.dtype != "float32");
    r.params = interned(cached.params_id, c.params);
    r.dtype = interned(cached.dtype_id, c.dtype);
    r.family = interned(cached.family_id, c.family);
    r.shapes = interned(cached.shapes_id, cached.shapes);
  }

  void cost_copy(const DictLine& l, ProfRecord& r) {
    r.bytes_moved = l.num(Key::bytes, -1);
    r.modeled = r.bytes_moved >= 0;
    r.bytes = r.op_bytes = r.bytes_moved >= 0 ? static_cast<double>(r.bytes_moved) : 0;
    r.family = strings_.intern(r.kind == Kind::kMemcpy ? "memcpy" : "memset");
  }

  void cost_op(const DictLine& l, CostSource source, ProfRecord& r) {
    const std::string_view op = l.str(Key::op);
    CachedCost* cached = &lookup(r.cost_op, source.op, source.args, source.args_ref);
    ++cached->records;
    if (!cached->cost.modeled && r.dir == Dir::kBprop && r.kind != Kind::kOp && source.op != op) {
      // The backward op's arguments are unknown (emit_nvtx without record_shapes): estimate
      // from the forward op.
      CachedCost& forward = lookup(r.op, op, l.raw(Key::args), l.num(Key::args_ref, -1));
      if (forward.cost.modeled) {
        // The registry knows the backward op's family by its name alone.
        if (!cached->cost.family.empty()) r.bwd_op_family = strings_.intern(cached->cost.family);
        cached = &forward;
        source.backward_estimate = true;
      }
    }
    const models::OpCost& c = cached->cost;
    if (c.problem == models::CostProblem::kUserModel) {
      user_model_problems_[std::string(source.op)].note(l.line, source.op, c.params);
    } else if (!c.modeled && c.problem != models::CostProblem::kNone) {
      (c.problem == models::CostProblem::kOverflow ? overflow_ : negative_)
          .note(l.line, source.op, c.params);
    }
    r.modeled = c.modeled;
    r.bytes_estimated = !c.modeled && c.bytes_estimate;
    r.estimated = source.backward_estimate && c.modeled;
    // The estimate stands for the forward op's whole backward, not for one of the node's ops:
    // the node's kernels share it as one part (assign_costs), whichever op each ran in.
    if (r.estimated) r.cost_part = 0;
    // The backward of an op seen only by name (emit_nvtx / legacy records without the
    // backward node's inner ops): GEMM-like ops cost twice their forward (dgrad + wgrad).
    double scale = r.estimated && (c.family == "matmul" || c.family == "conv") ? 2 : 1;
    r.flops = r.op_flops = c.flops * scale;
    r.op_masked_flops = c.masked_flops * scale;
    r.bytes = r.op_bytes = c.bytes * scale;
    r.tc_eligible = c.tc_eligible && (allow_tf32_ || c.dtype != "float32");
    r.params = r.estimated ? interned(cached->estimated_params_id, c.params + ",bwd=est")
                           : interned(cached->params_id, c.params);
    r.dtype = interned(cached->dtype_id, c.dtype);
    r.family = interned(cached->family_id, c.family);
    r.shapes = interned(cached->shapes_id, cached->shapes);
    r.comm_group = c.group;
  }

  // `op_id` is `op`'s string id; `args_ref` the compact form's id of `args` (-1: inline), by
  // which a repeated call is found without hashing its arguments' text.
  CachedCost& lookup(uint32_t op_id, std::string_view op, std::string_view args, int64_t args_ref) {
    if (args_ref >= 0) {
      CachedCost*& known = cost_by_ref_[{op_id, args_ref}];
      if (known == nullptr) known = &lookup(op_id, op, args, -1);
      return *known;
    }
    key_.assign(op);
    key_ += '\n';
    key_ += args;
    auto it = costs_.find(key_);
    if (it == costs_.end()) {
      models::OpArgs op_args = models::OpArgs::from_json(args);
      CachedCost c{models::op_cost(op, op_args, args), shapes_of(op_args)};
      it = costs_.emplace(key_, std::move(c)).first;
    }
    return it->second;
  }

  int8_t uses_tensor_cores(const ProfRecord& r) {
    if (r.long_name >= tc_by_long_name_.size()) tc_by_long_name_.resize(r.long_name + 1, -1);
    int8_t& tc = tc_by_long_name_[r.long_name];
    if (tc < 0) {
      tc = static_cast<int8_t>(
          rules_.uses_tensor_cores(strings_.get(r.long_name), strings_.get(r.name)) == 1 ? 1 : 0);
    }
    return tc;
  }

  bool allow_tf32_;
  Strings& strings_;
  std::unordered_map<std::string, CachedCost> costs_;  // op + '\n' + args -> cost
  std::unordered_map<uint32_t, CachedCost> compiled_;  // compiled_key -> its cost
  std::unordered_map<std::string, CachedCost> bound_;  // bound_cost's: (id, sizes) -> cost
  // compiled_ keys of kernels with symbolic sizes -> their objects, bound per call (bound_cost)
  std::unordered_map<uint32_t, std::string> symbolic_kernels_;
  struct OpArgsRef {
    uint32_t op;
    int64_t args_ref;
    bool operator==(const OpArgsRef&) const = default;
  };
  struct OpArgsRefHash {
    size_t operator()(const OpArgsRef& k) const {
      return std::hash<int64_t>()(k.args_ref * 1000003 ^ k.op);
    }
  };
  // (op string id, args id) -> its entry in costs_ (whose nodes do not move).
  std::unordered_map<OpArgsRef, CachedCost*, OpArgsRefHash> cost_by_ref_;
  std::string key_;
  const TensorCoreRules& rules_ = TensorCoreRules::builtin();
  std::vector<int8_t> tc_by_long_name_;  // long-name string id -> 1/0, -1 not judged yet
  ProblemTally overflow_, negative_;     // records of each models::CostProblem
  // Records a user model could not cost, per op: one warning each (models/user_models.h).
  std::map<std::string, ProblemTally> user_model_problems_;
};

}  // namespace

namespace {

// The records of a net.dict of `input_bytes` (-1: not a regular file), from its first records
// (`records` of them in `record_bytes`), for sizing the array up front: grown by doubling, a
// million records are copied twice over and every move touches fresh pages, a third of the
// read's main thread. Lines that are no records (args definitions, ranges) make this larger
// than the truth, which costs address space only; 0 when there is nothing to go by.
size_t expected_records(int64_t input_bytes, size_t records, size_t record_bytes) {
  if (input_bytes <= 0 || records == 0 || record_bytes == 0) return 0;
  const double per_byte = static_cast<double>(records) / static_cast<double>(record_bytes);
  // No record line is shorter than this, so that first records far longer than the rest do
  // not ask for more than the input could hold.
  constexpr int64_t kShortestRecordLine = 32;
  return static_cast<size_t>(
      std::min<double>(static_cast<double>(input_bytes) * per_byte * 1.02,
                       static_cast<double>(input_bytes / kShortestRecordLine)));
}

int64_t regular_file_size(std::FILE* in) {
  struct stat st;
  if (fstat(fileno(in), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

bool read_dict(std::FILE* in, const ReadOptions& options, ReadResult& out, std::string& error) {
  const int64_t input_bytes = regular_file_size(in);
  size_t record_bytes = 0;  // of the record lines so far, for expected_records
  DictReadOptions read_options;
  read_options.strict_json = options.strict_json;
  DictReader reader(in, read_options);
  RecordCoster coster(options, out.strings);
  TimeChecker times;
  std::vector<CpuOp> cpu_ops;
  MemoryLineReader memory;
  // Records whose `step` names no step of the header's iterations: outside every step.
  ProblemTally bad_steps;
  bool iterations_ignored = false;  // the header's were malformed (warned): no record has a step
  std::string scratch;
  while (const DictLine* line = reader.next_line()) {
    const DictLine& l = *line;
    out.lines = l.line;
    if (!l.unreadable.empty()) {
      skip_line(l, out);
      continue;
    }
    if (l.header()) {
      read_header(reader.header(), out);
      iterations_ignored = !reader.header().iterations_problem.empty();
      continue;
    }
    // A sync, comm or mark line's step, -1 when it names none of the header's.
    auto step_index = [&](int64_t step) {
      return step >= 0 && step < static_cast<int64_t>(out.iterations.steps.size())
                 ? static_cast<int32_t>(step)
                 : -1;
    };
    switch (l.kind()) {
      // `pyprof parse --ranges` appends the spans of the trace's ranges (docs/formats.md §3.1):
      // not records, and not unreadable either.
      case dict::LineKind::kRange:
        continue;
      // Allocations and frees (§3.2): the memory report's, never records.
      case dict::LineKind::kMemory:
        memory.read(l, iterations_ignored ? -1 : step_index(l.num(Key::step, -1)), out);
        continue;
      case dict::LineKind::kCompiledKernel:
        coster.define_compiled_kernel(l.str(Key::name), l.str(Key::graph), l.raw(Key::kernel));
        continue;
      case dict::LineKind::kComm: {
        CommSpan c;
        c.start = l.num(Key::start, 0);
        c.duration = std::max<int64_t>(l.num(Key::duration, 0), 0);
        c.tid = l.num(Key::tid, -1);
        c.name = out.strings.intern(l.str(Key::name));
        c.step = step_index(l.num(Key::step, -1));
        out.comm.push_back(c);
        continue;
      }
      case dict::LineKind::kMark: {
        Mark m;
        m.start = l.num(Key::start, 0);
        m.tid = l.num(Key::tid, -1);
        m.name = out.strings.intern(l.str(Key::name));
        m.domain = out.strings.intern(l.str(Key::domain));
        m.step = step_index(l.num(Key::step, -1));
        out.marks.push_back(m);
        continue;
      }
      case dict::LineKind::kSync: {
        SyncCall c;
        c.start = l.num(Key::start, 0);
        c.duration = std::max<int64_t>(l.num(Key::duration, 0), 0);
        c.tid = l.num(Key::tid, -1);
        c.name = out.strings.intern(l.str(Key::name));
        c.op = out.strings.intern(l.str(Key::op));
        c.step = step_index(l.num(Key::step, -1));
        out.syncs.push_back(c);
        continue;
      }
      default:
        break;
    }
    ProfRecord r = make_record(l, out.records.size(), out.strings, scratch);
    times.check(l, r);
    if (l.has(Key::step) && !iterations_ignored) {
      const int64_t step = l.num(Key::step, -1);
      if (step >= 0 && step < static_cast<int64_t>(out.iterations.steps.size())) {
        r.step = static_cast<int32_t>(step);
      } else {
        bad_steps.note(l.line, l.str(Key::name),
                       step < 0 ? "not a step index" : fmt::format("step {}", step));
      }
    }
    if (r.kind == Kind::kOp) {
      cpu_ops.push_back({static_cast<int32_t>(out.records.size()), l.num(Key::pid, 0),
                         l.num(Key::id, 0), l.num(Key::parent_id, 0)});
    }
    coster.cost(l, r);
    out.records.push_back(r);
    record_bytes += l.line_bytes;
    if (constexpr size_t kSizeAfter = 4096; out.records.size() == kSizeAfter) {
      try {
        out.records.reserve(expected_records(input_bytes, kSizeAfter, record_bytes));
      } catch (const std::bad_alloc&) {
        // The estimate was too much to ask for at once: the array grows as it goes instead.
      }
    }
  }
  out.lines = reader.lines();
  if (!reader.failure().empty()) {
    error = reader.failure();
    return false;
  }
  link_cpu_parents(cpu_ops, out.records);
  memory.finish(out);
  coster.warn_about_problems(out);
  if (options.list_unmodelled_calls) coster.list_unmodelled_calls(out);
  times.warn(out);
  if (bad_steps.records > 0) {
    out.warnings.push_back(fmt::format(
        "{} with a `step` that names no step of the header's {} iterations (first: line {}, {}: "
        "{}): read as outside every step",
        count_of(bad_steps.records, "record"), out.iterations.steps.size(), bad_steps.first_line,
        bad_steps.first_name, bad_steps.first_detail));
  }
  return true;
}

void assign_costs(ReadResult& result, const PeaksFile* peaks) {
  auto& records = result.records;
  if (!result.cpu_only) {
    charge_backward_estimates(result);
    // An op instance's cost is spread over its kernels by duration, so that the instance is
    // counted once and each kernel shows the rate of the op it belongs to. In a backward node
    // (the instance), each backward op's cost is spread over that op's kernels (cost_part).
    // Grouped by sorting the records' (instance, part) keys: a hash map of a million
    // instances cost more than the rest of the costing.
    struct Keyed {
      int64_t instance, part;
      int32_t record;
    };
    std::vector<Keyed> keyed;
    for (size_t i = 0; i < records.size(); ++i) {
      ProfRecord& r = records[i];
      if (!r.modeled) continue;
      // A record without a credible time keeps its cost but is out of the totals: the achieved
      // rate divides the counted FLOPs by the time they took.
      r.counted = !r.bad_time;
      if (r.instance != 0 && !r.compiled)
        keyed.push_back({r.instance, r.cost_part, static_cast<int32_t>(i)});
    }
    std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
      return a.instance != b.instance ? a.instance < b.instance
             : a.part != b.part       ? a.part < b.part
                                      : a.record < b.record;
    });
    for (size_t first = 0, last; first < keyed.size(); first = last) {
      int64_t duration = 0;
      for (last = first; last < keyed.size() && keyed[last].instance == keyed[first].instance &&
                         keyed[last].part == keyed[first].part;
           ++last) {
        duration += records[keyed[last].record].duration;
      }
      const auto count = static_cast<double>(last - first);
      for (size_t k = first; k < last; ++k) {
        ProfRecord& r = records[keyed[k].record];
        double share = duration > 0
                           ? static_cast<double>(r.duration) / static_cast<double>(duration)
                           : 1.0 / count;
        r.flops *= share;
        r.bytes *= share;
      }
    }
    flag_above_peak(result, peaks);
    return;
  }
  // CPU records: each op instance is a record; a call tree is counted at its outermost
  // modelled op (aten::linear's aten::addmm is not counted again).
  //
  // Except a dispatch wrapper: an op whose record holds a call of the same op on tensors of the
  // same shapes that costs differently, because their dtypes differ. That is what
  // torch.autocast records: aten::linear on the caller's fp32 weight holds the casts of its
  // inputs and aten::linear again on the bf16 copies. The inner call is the one that ran, so the
  // wrapper is not counted, and its casts and inner call are counted as what they are, each at
  // its own outermost modelled op. (A same-op child on other shapes, a part of the work, leaves
  // the outer op counted.)
  std::vector<char> is_wrapper(records.size(), 0);
  for (const ProfRecord& r : records) {
    if (!r.modeled || r.parent < 0) continue;
    const ProfRecord& parent = records[r.parent];
    if (parent.modeled && parent.cost_op == r.cost_op && parent.shapes == r.shapes &&
        (parent.dtype != r.dtype || parent.op_bytes != r.op_bytes)) {
      is_wrapper[r.parent] = 1;
    }
  }
  for (size_t i = 0; i < records.size(); ++i) {
    ProfRecord& r = records[i];
    if (!r.modeled) continue;
    bool inside_modelled = false;
    // The guard stops a cycle of parent links, which only a malformed input can hold.
    for (int32_t p = r.parent, guard = 0; p >= 0 && guard < 1000; ++guard) {
      const ProfRecord& parent = records[p];
      if (parent.modeled && !is_wrapper[p]) {
        inside_modelled = true;
        break;
      }
      p = parent.parent;
    }
    r.wrapper = is_wrapper[i] != 0;
    r.counted = !inside_modelled && !r.wrapper && !r.bad_time;
    if (!r.counted) {
      r.flops = 0;
      r.bytes = 0;
    }
  }
}

}  // namespace pyprof::prof
