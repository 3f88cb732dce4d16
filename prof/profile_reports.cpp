// The reports of the whole profile: summary, unmodelled (ops without a FLOP model), tc (Tensor Core
// use of eligible ops), family (time by op family) and phase (forward, backward, optimizer, other),
// with PhaseOf, the phase rule.
#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <map>

#include "prof/iterations.h"
#include "prof/memory_report.h"
#include "prof/report_builders.h"
#include "prof/unmodelled_ops.h"

namespace pyprof::prof {

namespace {

// torch.optim's RecordFunction ranges, as user ranges name them ("Optimizer.step#SGD.step";
// pyprof's capture prefixes "pyprof:").
bool names_optimizer_range(std::string_view layer) {
  return layer.find("Optimizer.step#") != std::string_view::npos ||
         layer.find("Optimizer.zero_grad#") != std::string_view::npos;
}

}  // namespace

Phase PhaseOf::operator()(const ProfRecord& r) {
  auto [it, added] = optimizer_layer_.try_emplace(r.layer, false);
  if (added) it->second = names_optimizer_range(strings_.get(r.layer));
  bool optimizer = it->second || (r.modeled && strings_.get(r.family) == "optim");
  return optimizer              ? Phase::kOptimizer
         : r.dir == Dir::kBprop ? Phase::kBackward
         : r.dir == Dir::kFprop ? Phase::kForward
                                : Phase::kOther;
}

namespace report_parts {

namespace {

// The summary's rows naming the ops without a FLOP model, most time first; the `unmodelled`
// report lists them all.
constexpr size_t kUnmodelledOpRows = 5;
// And the ops with calls their model could not cost: fewer, as it is usually a shape or an
// argument the record lacks, found in the `uncosted` table's rows.
constexpr size_t kUncostedOpRows = 3;

// CPU: the self time of the counted ops and of everything they call, that is the counted ops'
// inclusive time, measured in self time so that it is a part of the profile's op self time.
int64_t cpu_time_under_counted_ops(const std::vector<ProfRecord>& records,
                                   const std::vector<bool>& under) {
  int64_t time = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (under[i]) time += records[i].self_duration;
  }
  return time;
}

// Report `unmodelled`'s tables: every op without a FLOP model (`unmodelled`), and every op
// whose model could not cost some of its calls (`uncosted`), by the time no model covers
// (prof/unmodelled_ops.h).
ReportTable unmodelled_table(const std::vector<UnmodelledOp>& ops, int64_t total, bool cpu,
                             bool uncosted) {
  ReportTable t;
  t.id = uncosted ? "uncosted" : "unmodelled";
  const char* time = cpu ? "self time outside counted ops" : "GPU time";
  t.title = uncosted ? fmt::format(
                           "calls a FLOP model could not cost (na), by {} (their "
                           "arguments: --all-records, the Params column)",
                           time)
                     : fmt::format(
                           "ops without a FLOP model by {} (add one: --op-models FILE, "
                           "docs/ops.md)",
                           time);
  column(t, "Rank", Unit::kId, Keep::kMore);
  column(t, "Op", Unit::kText, Keep::kAlways);
  column(t, "Records", Unit::kCount, Keep::kMore);
  column(t, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(t, "% of time", Unit::kPercent, Keep::kAlways);
  for (size_t i = 0; i < ops.size(); ++i) {
    const UnmodelledOp& op = ops[i];
    Row(t)
        .integer(static_cast<int64_t>(i + 1))
        .text(op.op)
        .integer(op.records)
        .integer(op.time)
        .percent(static_cast<double>(op.time), static_cast<double>(total))
        .end();
  }
  return t;
}

}  // namespace

ReportTable summary_report(const ReadResult& data) {
  ReportTable t;
  t.title = "summary";
  column(t, "Metric", Unit::kText, Keep::kAlways);
  column(t, "Value", Unit::kPerRow, Keep::kAlways);
  int64_t first = std::numeric_limits<int64_t>::max(), last = 0, total = 0, kernel_time = 0;
  int64_t tc_time = 0, counted_ns = 0, records = 0, timed_records = 0;
  int64_t inductor = 0, inductor_time = 0, inductor_unmodeled_time = 0, inductor_attributed = 0;
  int64_t graph_kernels = 0, graph_time = 0, graph_attributed = 0, compiled_call_kernels = 0;
  int64_t bytes_estimated = 0, bytes_estimated_time = 0;
  double flops = 0, bytes = 0, dense = 0, estimated_bytes = 0;
  // GPU records' intervals by device: busy time is a device's own (streams overlap).
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> intervals;
  for (const ProfRecord& r : data.records) {
    ++records;
    int64_t time = time_of(r, data.cpu_only);
    total += time;
    if (is_inductor_kernel(data.strings.get(r.name))) {
      ++inductor;
      inductor_time += time;
      if (!r.modeled) inductor_unmodeled_time += time;
      if (r.compiled) ++inductor_attributed;
    }
    if (r.compiled_call) ++compiled_call_kernels;
    if (r.bytes_estimated && !r.bad_time) {
      ++bytes_estimated;
      bytes_estimated_time += time;
      estimated_bytes += r.bytes;
    }
    if (r.graph_launched) {
      ++graph_kernels;
      graph_time += time;
      if (r.op != 0) ++graph_attributed;
    }
    if (r.kind == Kind::kKernel) {
      kernel_time += time;
      if (r.tc == 1) tc_time += time;
    }
    // Records above their device's peak or without a credible time are not counted: their cost
    // has no time to divide by.
    counted_ns += counted_time(r);
    if (r.counted) {
      flops += r.flops;
      bytes += r.bytes;
      dense += dense_flops(r);
    }
    // A record whose time is unknown has no place on the time line.
    if (r.bad_time) continue;
    ++timed_records;
    first = std::min(first, r.start);
    last = std::max(last, r.start + r.duration);
    if (!data.cpu_only) intervals[r.device].emplace_back(r.start, r.start + r.duration);
  }
  int64_t wall = timed_records ? last - first : 0;
  // Each device's busy time: the union of its activity intervals.
  std::vector<std::pair<int32_t, int64_t>> busy_by_device;
  std::vector<std::pair<int64_t, int64_t>> all_intervals;
  for (auto& [device, spans] : intervals) {
    busy_by_device.emplace_back(device, union_length(spans));
    if (intervals.size() > 1) all_intervals.insert(all_intervals.end(), spans.begin(), spans.end());
  }
  // GPU: the counted kernels and copies; CPU: the counted ops' call trees, in self time.
  const std::vector<bool> under =
      data.cpu_only ? cpu_under_counted_ops(data.records) : std::vector<bool>{};
  int64_t covered = data.cpu_only ? cpu_time_under_counted_ops(data.records, under) : counted_ns;
  auto row = [&](std::string metric, std::string value, Unit unit) {
    t.rows.push_back({std::move(metric), std::move(value)});
    t.row_units.push_back(unit);
  };
  row("records", std::to_string(records), Unit::kCount);
  row("profile", data.cpu_only ? "CPU only (op records)" : "GPU", Unit::kText);
  row("wall time (ns)", std::to_string(wall), Unit::kTime);
  if (!data.cpu_only && busy_by_device.size() <= 1) {
    const int64_t busy = busy_by_device.empty() ? 0 : busy_by_device[0].second;
    row("GPU busy (ns)", std::to_string(busy), Unit::kTime);
    row("GPU busy %", pct(static_cast<double>(busy), static_cast<double>(wall)), Unit::kPercent);
  } else if (!data.cpu_only) {
    // Several GPUs: each one's busy and idle time over the profile's wall time, and totals that
    // say what they add up (the union of all devices' intervals would count two GPUs busy at
    // once as one).
    const size_t n = busy_by_device.size();
    int64_t sum = 0;
    for (const auto& [device, busy] : busy_by_device) sum += busy;
    row(fmt::format("GPU busy, sum over {} GPUs (ns)", n), std::to_string(sum), Unit::kTime);
    row(fmt::format("GPU busy %, mean over {} GPUs", n),
        pct(static_cast<double>(sum), static_cast<double>(wall) * static_cast<double>(n)),
        Unit::kPercent);
    row("time with any GPU busy (ns)", std::to_string(union_length(all_intervals)), Unit::kTime);
    for (const auto& [device, busy] : busy_by_device) {
      const std::string gpu = device >= 0 ? fmt::format("GPU {}", device) : "GPU ?";
      const int64_t idle = std::max<int64_t>(0, wall - busy);
      row(gpu + " busy (ns)", std::to_string(busy), Unit::kTime);
      row(gpu + " busy %", pct(static_cast<double>(busy), static_cast<double>(wall)),
          Unit::kPercent);
      row(gpu + " idle (ns)", std::to_string(idle), Unit::kTime);
      row(gpu + " idle %", pct(static_cast<double>(idle), static_cast<double>(wall)),
          Unit::kPercent);
    }
  }
  if (!data.cpu_only) {
    row("kernel time (ns)", std::to_string(kernel_time), Unit::kTime);
    row("Tensor Core kernel time %",
        pct(static_cast<double>(tc_time), static_cast<double>(kernel_time)), Unit::kPercent);
  } else {
    row("op self time (ns)", std::to_string(total), Unit::kTime);
  }
  row("time covered by a FLOP model %",
      pct(static_cast<double>(covered), static_cast<double>(total)), Unit::kPercent);
  // What a model is missing for (docs/prof.md §3): the ops without one, ranked by their share.
  const UnmodelledTime unmodelled = unmodelled_time(data, &under);
  // Each op as `OP SHARE% (TIME, N records)`, the raw value in ns, the text in human units.
  auto op_rows = [&](const std::vector<UnmodelledOp>& ops, size_t most, const char* label) {
    for (size_t i = 0; i < ops.size() && i < most; ++i) {
      const UnmodelledOp& op = ops[i];
      const std::string share = pct(static_cast<double>(op.time), static_cast<double>(total));
      const std::string records =
          fmt::format("{} record{}", op.records, op.records == 1 ? "" : "s");
      t.human[{t.rows.size(), 1}] =
          fmt::format("{} {}% ({}, {})", op.op, share,
                      format_quantity(static_cast<double>(op.time), Unit::kTime), records);
      row(fmt::format("{} {}", label, i + 1),
          fmt::format("{} {}% ({} ns, {})", op.op, share, op.time, records), Unit::kText);
    }
  };
  if (!unmodelled.ops.empty()) {
    row("time in ops without a FLOP model %",
        pct(static_cast<double>(unmodelled.unmodelled), static_cast<double>(total)),
        Unit::kPercent);
    row("ops without a FLOP model", std::to_string(unmodelled.ops.size()), Unit::kCount);
    op_rows(unmodelled.ops, kUnmodelledOpRows, "unmodelled op");
  }
  // The rest of what "covered" misses: calls of modelled ops that their model could not cost.
  if (unmodelled.uncosted_time > 0) {
    row("time in calls a FLOP model could not cost %",
        pct(static_cast<double>(unmodelled.uncosted_time), static_cast<double>(total)),
        Unit::kPercent);
    op_rows(unmodelled.uncosted, kUncostedOpRows, "uncosted op");
  }
  if (unmodelled.no_op_time > 0) {
    row("time with no op to model %",
        pct(static_cast<double>(unmodelled.no_op_time), static_cast<double>(total)),
        Unit::kPercent);
  }
  row("counted time (ns)", std::to_string(counted_ns), Unit::kTime);
  row("FLOPs (FMA=2)", num(flops), Unit::kFlops);
  // The FLOPs are what the kernels ran; FlopCounterMode's count differs where a causal attention
  // kernel skipped its masked blocks (docs/ops.md "attention").
  if (dense != flops)
    row("FLOPs as FlopCounterMode counts them (causal attention dense)", num(dense), Unit::kFlops);
  row("bytes (ideal DRAM)", num(bytes), Unit::kBytes);
  if (counted_ns > 0) t.exact[{t.rows.size(), 1}] = tflops(flops, counted_ns);
  row("achieved TFLOP/s (over counted time)", rate(flops, counted_ns), Unit::kFlopRate);
  if (!data.devices.empty()) {
    row("records above device peak (out of totals)", std::to_string(data.above_peak), Unit::kCount);
  }
  if (data.bad_time > 0) {
    row("records with an impossible time (out of totals)", std::to_string(data.bad_time),
        Unit::kCount);
  }
  if (data.autotune_records > 0) {
    row("Triton autotuning records (left out)", std::to_string(data.autotune_records),
        Unit::kCount);
    if (data.autotune_gpu_time > 0) {
      row("Triton autotuning GPU time (left out, ns)", std::to_string(data.autotune_gpu_time),
          Unit::kTime);
    }
  }
  if (inductor > 0) {
    // torch.compile's kernels: how much of the time they hold, how many carry the ATen nodes
    // they compute (docs/compile.md) and how much of their time no model costs.
    row("Inductor kernels (torch.compile)", std::to_string(inductor), Unit::kCount);
    row("Inductor kernels attributed to their ATen nodes", std::to_string(inductor_attributed),
        Unit::kCount);
    row("Inductor kernels opaque (no compile metadata)",
        std::to_string(inductor - inductor_attributed), Unit::kCount);
    row("Inductor kernel time (ns)", std::to_string(inductor_time), Unit::kTime);
    row("Inductor kernel time %",
        pct(static_cast<double>(inductor_time), static_cast<double>(total)), Unit::kPercent);
    row("Inductor kernel time without a FLOP model %",
        pct(static_cast<double>(inductor_unmodeled_time), static_cast<double>(inductor_time)),
        Unit::kPercent);
  }
  if (bytes_estimated > 0) {
    // Triton launches recorded without compile metadata (docs/ops.md "Triton launches without
    // compile metadata"): bytes estimated from their launcher's tensors, FLOPs unknown. They stay
    // out of the FLOP-covered time, the counted time and the totals above; these rows say how
    // much they hold.
    row("Triton launches with estimated bytes (no FLOP model)", std::to_string(bytes_estimated),
        Unit::kCount);
    row("Triton launch time with estimated bytes %",
        pct(static_cast<double>(bytes_estimated_time), static_cast<double>(total)), Unit::kPercent);
    row("Triton launches' estimated bytes (out of the totals)", num(estimated_bytes), Unit::kBytes);
    if (bytes_estimated_time > 0) {
      t.exact[{t.rows.size(), 1}] = gbps(estimated_bytes, bytes_estimated_time);
    }
    row("Triton launches' estimated GB/s (over their time)",
        bytes_estimated_time > 0 ? raw_rate_text(gbps(estimated_bytes, bytes_estimated_time), 1)
                                 : "na",
        Unit::kByteRate);
  }
  if (compiled_call_kernels > 0) {
    // Kernels named for no mark, costed from the marks of the extern call they ran in.
    row("C++ wrapper extern-call kernels costed from the call's marks",
        std::to_string(compiled_call_kernels), Unit::kCount);
  }
  if (graph_kernels > 0) {
    // CUDA graph replays: how many replayed activities parse traced back to the op that
    // launched them at capture; the others have no op (docs/compile.md "CUDA graphs").
    row("CUDA graph activities (replayed)", std::to_string(graph_kernels), Unit::kCount);
    row("CUDA graph activities attributed to an op", std::to_string(graph_attributed),
        Unit::kCount);
    row("CUDA graph activities without an op", std::to_string(graph_kernels - graph_attributed),
        Unit::kCount);
    row("CUDA graph activity time (ns)", std::to_string(graph_time), Unit::kTime);
    row("CUDA graph activity time %",
        pct(static_cast<double>(graph_time), static_cast<double>(total)), Unit::kPercent);
  }
  for (const SummaryRow& it : iteration_summary_rows(data)) {
    if (!it.human.empty()) t.human[{t.rows.size(), 1}] = it.human;
    row(it.metric, it.value, it.unit);
  }
  for (const SummaryRow& m : memory_summary_rows(data)) row(m.metric, m.value, m.unit);
  if (!data.marks.empty()) {  // pyprof.mark("..."): listed by --report marks
    row("marks (--report marks)", std::to_string(data.marks.size()), Unit::kCount);
  }
  if (!data.torch_settings.empty()) {
    // What the program ran with (pyprof captures): the flags that decide the kernels.
    auto flag = [&](const char* key) {
      auto it = data.torch_settings.find(key);
      if (it == data.torch_settings.end()) return std::string("?");
      std::string v = it->second;
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    };
    row("torch settings",
        fmt::format("cudnn.benchmark {}; TF32: cuDNN {}, matmul {} (precision {}); "
                    "deterministic {}; torch {}",
                    flag("cudnn.benchmark"), flag("cudnn.allow_tf32"),
                    flag("cuda.matmul.allow_tf32"), flag("float32_matmul_precision"),
                    flag("deterministic_algorithms"), flag("torch")),
        Unit::kText);
    // pyprof.init() after torch.compile had compiled graphs (docs/compile.md): their kernels
    // are not costed, and the summary says why and what to do.
    if (const std::string before = flag("compiled_before_init"); before != "?" && before != "0") {
      row("torch.compile graphs compiled before pyprof.init()",
          before +
              " (their Inductor kernels are not costed: on the CPU not recorded, their time "
              "is CompiledFunction's; call pyprof.init() before the first compiled call, or "
              "pyprof.init(recompile=True))",
          Unit::kText);
    }
  }
  // The top ops by their time column (CPU: self time; GPU: kernel and copy time).
  ReportTable ops = op_report(data);
  for (size_t i = 0; i < ops.rows.size() && i < 10; ++i) {
    const std::vector<std::string>& op = ops.rows[i];
    double time = std::stod(op[4]);
    std::string share = pct(time, static_cast<double>(total));
    t.human[{t.rows.size(), 1}] =
        fmt::format("{} {} {} ({}%)", op[0], op[1], format_quantity(time, Unit::kTime), share);
    row(fmt::format("top op {}", i + 1),
        fmt::format("{} {} {} ns ({}%)", op[0], op[1], op[4], share), Unit::kText);
  }
  return t;
}

// The registry leaves each table out when it has no rows (ReportSpec::optional_tables): a fully
// modelled profile's `--report all` is what it was.
std::vector<ReportTable> unmodelled_report(const ReadResult& data) {
  const UnmodelledTime u = unmodelled_time(data);
  return {unmodelled_table(u.ops, u.total, data.cpu_only, false),
          unmodelled_table(u.uncosted, u.total, data.cpu_only, true)};
}

ReportTable tc_report(const ReadResult& data) {
  ReportTable t;
  t.title = "Tensor Core use of eligible ops";
  column(t, "Op", Unit::kText, Keep::kAlways);
  column(t, "Direction", Unit::kText, Keep::kAlways);
  column(t, "Eligible kernels", Unit::kCount, Keep::kMore);
  column(t, "Eligible time(ns)", Unit::kTime, Keep::kMain);
  column(t, "TC time(ns)", Unit::kTime, Keep::kMore);
  column(t, "Non-TC time(ns)", Unit::kTime, Keep::kDetail);
  column(t, "Using TC %", Unit::kPercent, Keep::kMain);
  column(t, "Verdict", Unit::kText, Keep::kAlways);
  std::map<std::pair<uint32_t, int>, Agg> groups;
  for (const ProfRecord& r : data.records) {
    if (r.kind != Kind::kKernel || !r.tc_eligible) continue;
    groups[{r.op, static_cast<int>(r.dir)}].add(r, r.duration);
  }
  for (const auto& [key, a] : sorted_by_time(groups)) {
    int64_t non_tc = a.total - a.tc_time;
    Row(t)
        .text(std::string(data.strings.get(key.first)))
        .text(dir_name(static_cast<Dir>(key.second)))
        .integer(a.count)
        .integer(a.total)
        .integer(a.tc_time)
        .integer(non_tc)
        .percent(static_cast<double>(a.tc_time), static_cast<double>(a.total))
        .text(a.tc_time == a.total ? "using TC"
              : a.tc_time == 0     ? "eligible, not using TC"
                                   : "partly")
        .end();
  }
  return t;
}

// Time by op family (docs/ops.md): a modelled op's family; "(no model)" for the records of ops
// without a model; "(unattributed)" for records outside every op.
ReportTable family_report(const ReadResult& data) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = cpu ? "op families by self time" : "op families by total time";
  column(t, "Family", Unit::kText, Keep::kAlways);
  column(t, "Records", Unit::kCount, Keep::kMore);
  column(t, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(t, "% of time", Unit::kPercent, Keep::kMain);
  column(t, "Counted time(ns)", Unit::kTime, Keep::kDetail);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Bytes(ideal DRAM)", Unit::kBytes, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  std::map<std::string, Agg> groups;
  int64_t total = 0;
  for (const ProfRecord& r : data.records) {
    int64_t time = time_of(r, cpu);
    total += time;
    // String id 0 is the empty string: no op, no family.
    std::string family = r.op == 0       ? "(unattributed)"
                         : !r.modeled    ? "(no model)"
                         : r.family == 0 ? "(no family)"
                                         : std::string(data.strings.get(r.family));
    groups[family].add(r, time);
  }
  for (const auto& [family, a] : sorted_by_time(groups)) {
    Row(t)
        .text(family)
        .integer(a.count)
        .integer(a.total)
        .percent(static_cast<double>(a.total), static_cast<double>(total))
        .integer(a.counted_ns)
        .amount(a.flops)
        .amount(a.bytes)
        .flop_rate(a.flops, a.counted_ns)
        .end();
  }
  return t;
}

// Time by training phase (PhaseOf), always the four rows in this order: forward, backward,
// optimizer, other.
ReportTable phase_report(const ReadResult& data) {
  const bool cpu = data.cpu_only;
  ReportTable t;
  t.title = "time by phase";
  column(t, "Phase", Unit::kText, Keep::kAlways);
  column(t, "Records", Unit::kCount, Keep::kMore);
  column(t, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(t, "% of time", Unit::kPercent, Keep::kMain);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMore);
  column(t, "TFLOP/s", Unit::kFlopRate, Keep::kMain);
  enum { kForward, kBackward, kOptimizer, kOther };
  Agg phases[4];
  PhaseOf phase_of(data.strings);
  int64_t total = 0;
  for (const ProfRecord& r : data.records) {
    int phase = static_cast<int>(phase_of(r));
    int64_t time = time_of(r, cpu);
    total += time;
    phases[phase].add(r, time);
  }
  static const char* const kNames[] = {"forward", "backward", "optimizer", "other"};
  for (int phase : {kForward, kBackward, kOptimizer, kOther}) {
    const Agg& a = phases[phase];
    Row(t)
        .text(kNames[phase])
        .integer(a.count)
        .integer(a.total)
        .percent(static_cast<double>(a.total), static_cast<double>(total))
        .amount(a.flops)
        .flop_rate(a.flops, a.counted_ns)
        .end();
  }
  return t;
}

}  // namespace report_parts
}  // namespace pyprof::prof
