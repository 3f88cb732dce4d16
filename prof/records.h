// prof's view of parse's output: one ProfRecord per line of net.dict (docs/formats.md §3),
// with the op's cost from models/ and the kernel's Tensor Core use, ready for the per-kernel
// table and the reports. Strings are interned: a million records must fit in well under 1 GB.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/string_pool.h"

namespace pyprof::prof {

using Strings = pyprof::StringPool;  // common/string_pool.h

enum class Kind : uint8_t { kKernel, kMemcpy, kMemset, kOp };
enum class Dir : uint8_t { kNone, kFprop, kBprop };
// A memcpy's source or destination memory (net.dict `src_kind`, `dst_kind`); kUnknown: not given.
enum class MemoryKind : uint8_t { kUnknown, kPageable, kPinned, kDevice, kManaged, kOther };

struct ProfRecord {
  Kind kind = Kind::kKernel;
  Dir dir = Dir::kNone;
  int8_t tc = -1;        // kernel used Tensor Cores: 1, 0; -1 not a kernel
  bool modeled = false;  // the op has a FLOP/byte model
  bool counted = false;  // this record carries its op's cost (see assign_costs)
  bool tc_eligible = false;
  bool estimated = false;  // bprop cost estimated from the forward op (no backward args)
  // Not modelled, yet `bytes` (and op_bytes) hold an estimate from a Triton
  // launcher's tensors (models::triton_launch_cost): shown in the per-record table with the
  // flag `bytes-est`, out of every FLOP and byte total (counted stays false).
  bool bytes_estimated = false;
  // bprop, estimated: the family of the op this kernel ran in (its backward node's op, net.dict
  // `bwd_op`: aten::mm's "matmul" in a linear's MmBackward, clone's "movement" in its
  // UnsafeViewBackward), known from the op's name; 0 when it has none. assign_costs charges a
  // GEMM-like estimate to the nodes that ran an op of its family.
  uint32_t bwd_op_family = 0;
  // Its bytes or FLOPs per second exceed what its device can run (prof/above_peak.h): a timing
  // artefact (CUPTI) or a cost the kernel did not do (an estimate), kept out of the totals
  // (counted = false) and shown in the `flag` column.
  bool above_peak = false;
  // Its start or duration in net.dict is not a credible time (see kMaxRecordDuration): its
  // times are 0, it is out of every time sum and of the totals (counted = false), and the `flag`
  // column shows `bad-time`.
  bool bad_time = false;
  // CPU records: a dispatch wrapper (torch.autocast's outer call of an op) whose cost is counted
  // by the call of the same op it holds, not by itself (see assign_costs).
  bool wrapper = false;
  // An Inductor kernel costed from its own node list (net.dict `"kind":"compiled_kernel"`,
  // docs/compile.md): its cost is its own, not a share of the op instance it launched in.
  bool compiled = false;
  // A kernel costed from the marks of the compiled call it ran in (the C++ wrapper's extern
  // call, `aoti_torch_cuda_mm_out`): it shares that call's cost with the call's other kernels.
  bool compiled_call = false;
  // Launched by a CUDA graph replay (net.dict `graph_node`); parse attributed it to the op
  // that launched it at capture when the database recorded the capture (docs/compile.md).
  bool graph_launched = false;
  // Launched (or run) inside a `pyprof.autotune` range: one of the launches Triton's autotuner
  // makes to time a launch configuration, not the program's work (leave_out_autotuning).
  bool autotune = false;
  // Launched before the trace began (net.dict `before_trace`, docs/formats.md §3): it ran
  // during the trace, but no step holds it (prof/iterations.h counts such records apart).
  bool before_trace = false;
  // In the reports' selection of iterations (prof/iterations.h). False only for a record that
  // select_iterations kept for the per-record table alone (`--all-records`).
  bool selected = true;
  int32_t device = -1;
  int64_t stream = -1;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int64_t start = 0;
  int64_t duration = 0;  // ns; CPU records: self time is in self_duration
  int64_t self_duration = 0;
  int64_t tid = -1;
  // GPU records: the start of the API call that launched it (net.dict `launch.start`); -1: none.
  int64_t launch_start = -1;
  MemoryKind src_memory = MemoryKind::kUnknown;  // memcpy: the source's memory kind
  MemoryKind dst_memory = MemoryKind::kUnknown;  // and the destination's
  int64_t seq = -1;
  int32_t sub = 0;
  // A collective's process group size when its record says (models' OpCost::group); 0: not said.
  int32_t comm_group = 0;
  int64_t op_id = 0;  // fprop: op_id; bprop: the forward op's id
  // The op instance whose cost this record shares (0: none). GPU records: parse's `instance`;
  // CPU records: each op record is an instance of its own (see read_dict).
  int64_t instance = 0;
  int64_t fwd_instance = 0;  // bprop: parse's instance number of the forward op
  // bprop kernels: which of the backward node's ops (net.dict `bwd_op_id`) costs it; the
  // kernels of one (instance, cost_part) share that op's cost. 0: the whole instance's.
  int64_t cost_part = 0;
  int32_t parent = -1;  // CPU records: index of the op record this one runs inside
  // The iteration (ReadResult::iterations.steps index) whose span holds the record's CPU-side
  // start (net.dict `step`, docs/formats.md §3); -1: outside every step, or no iterations.
  int32_t step = -1;
  int64_t bytes_moved = -1;  // memcpy / memset size
  double flops = 0;          // this record's share of its op instance's FLOPs
  double bytes = 0;          // and of its bytes
  double op_flops = 0;       // the whole op's FLOPs, counted or not (checks against oracles)
  double op_bytes = 0;
  // The FLOPs FlopCounterMode counts for the whole op that its kernel skips (causal attention's
  // masked blocks, models::OpCost::masked_flops): op_flops + op_masked_flops is the dense count.
  double op_masked_flops = 0;
  uint32_t name = 0;  // kernel short name / op record name
  uint32_t long_name = 0;
  uint32_t op = 0;       // the op (forward op for bprop)
  uint32_t cost_op = 0;  // the op whose cost was computed (bprop: bwd_op)
  uint32_t mod = 0;      // PyProf's "mod": legacy namespace, else the op's namespace
  uint32_t module = 0;   // module path
  uint32_t layer = 0;    // user ranges joined by ":" (PyProf "layer")
  uint32_t trace = 0;    // call site / legacy trace, comma-joined
  uint32_t params = 0;
  uint32_t dtype = 0;
  uint32_t shapes = 0;  // input shapes "[32,128],[128,256]"
  uint32_t family = 0;
};

// A record's FLOPs as FlopCounterMode counts them (causal attention dense): its share of its
// op's dense count, in the proportion its `flops` has of `op_flops` (0 when not counted).
inline double dense_flops(const ProfRecord& r) {
  return r.op_flops > 0 ? r.flops * (r.op_flops + r.op_masked_flops) / r.op_flops : r.flops;
}

// The time in which a record's counted FLOPs and bytes ran, for rates (TFLOP/s, GB/s, the
// roofline): its duration when it carries its op's cost, else 0. On a GPU profile that is the
// kernel's (or copy's) time. On a CPU-only profile it is the counted op's inclusive time, its
// callees included: the outermost modelled op carries the cost of its whole call tree
// (aten::conv2d counts the FLOPs that aten::mkldnn_convolution's self time spent), so dividing
// by its self time alone would make the rate meaningless.
inline int64_t counted_time(const ProfRecord& r) { return r.counted ? r.duration : 0; }

// A GPU of the header's `devices` (docs/formats.md §3) and the peak rates prof checks records
// against; 0 where the header does not tell.
struct DevicePeak {
  int64_t id = -1;  // CUDA ordinal, as records' `device`
  std::string name;
  double memory_bandwidth = 0;  // bytes/s
  double flops = 0;  // FLOP/s: the densest Tensor Core mode of its architecture (upper bound)
  // The header's facts as given (0, -1: not given), for prof/device_peaks.h.
  int64_t sm_count = 0;
  int64_t clock_hz = 0;
  int64_t total_memory = 0;  // bytes
  int cc_major = -1, cc_minor = 0;
};

// The credible times of a record, in ns; a record outside them has an unknown time (bad_time).
// A duration past 2^50 ns (13 days) is no kernel, copy or op a profile can hold. Starts are ns
// in the trace's timebase (docs/formats.md §3: nsys and pyprof since the capture began, nvprof
// absolute, since the Unix epoch: about 2^60.6 today), and 2^62 ns after the epoch is the year
// 2116. With both bounds `start + duration` fits int64. The reports add durations over up to
// all records, and at 2^50 ns each a sum would overflow int64 past 8192 records, so the reader
// also keeps the sum of every record's duration (and of every self_duration) within
// kMaxTotalTime: a record that would take it past is bad_time too, which only thousands of
// records lasting days each can reach. Every time sum of the reports is a part of one of those
// sums, so none overflows.
inline constexpr int64_t kMaxRecordDuration = int64_t{1} << 50;
inline constexpr int64_t kMaxRecordStart = int64_t{1} << 62;
inline constexpr int64_t kMaxTotalTime = int64_t{1} << 62;

// One iteration of the header's `iterations` (docs/formats.md §3): its span [start, end) in the
// records' timebase (ns).
struct Step {
  int32_t index = 0;  // 0..N-1, in time order
  std::string name;   // "ProfilerStep#12", "step 3"
  int64_t start = 0;
  int64_t end = 0;
  // Its range was never closed (header `"cut": true`): the capture ended inside the step
  // (`--duration`, pyprof.stop() while it ran, a killed program), so it holds part of its work.
  bool cut = false;
};

// What a step held, from its records before any selection (prof/iterations.h): the `iteration`
// report's columns and the steady-state figures.
struct StepStats {
  int64_t records = 0;
  int64_t wall = 0;  // end - start of the step's span
  // The union of its kernel, copy and memset intervals (GPU profiles), per device: with several
  // devices in the profile, the mean over them (a device idle in the step counts 0), so that
  // busy and idle stay within the step's wall time (the union over all devices would call two
  // half-busy GPUs one busy one).
  int64_t gpu_busy = 0;
  int32_t gpu_devices = 0;  // devices with GPU work anywhere in the profile (the mean's N)
  int64_t forward = 0, backward = 0, optimizer = 0;  // report time by phase (reports.h)
  int64_t kernels = 0;  // kernel records (GPU) or op records (CPU-only profiles)
  double flops = 0;     // counted FLOPs
};

// How a step stands in the reports after prof's selection (prof/iterations.h). kCut: the capture
// ended inside it (Step::cut); kEmpty: it holds no record (pyprof.stop() before it, or nothing
// of it was recorded). Neither is a whole iteration: both are left out of the steady state.
enum class StepState : uint8_t { kSelected, kLeftOut, kWarmUp, kCut, kEmpty };

// The header's `iterations` and prof's selection of them. Empty steps: no iterations.
struct Iterations {
  std::string rule;   // profiler_step, step_range, user_range, optimizer_step, module_forward
  std::string range;  // the range name or pattern the rule used
  std::vector<Step> steps;
  // Set by select_iterations (prof/iterations.h); until then every step is selected and no
  // record left out.
  std::vector<StepStats> stats;   // per step, from all records (before the selection)
  std::vector<StepState> state;   // per step
  bool selection_active = false;  // records outside the selected steps left the reports
  std::string selection;          // what the reports cover: "1:6", "all", "2"
  int64_t records_left_out = 0;   // records outside the selected steps (or outside every step)
  int64_t warm_up_wall = 0, warm_up_median = 0;  // the warm-up rule's figures, when it fired
  // Records launched before the trace began (ProfRecord::before_trace), counted before any
  // selection: in no step, so a selection leaves them out with the records between steps.
  int64_t before_trace_records = 0;
  int64_t before_trace_time = 0;  // their GPU time (ns)
  // Where the records a selection left out were, for the note and the summary: their count and
  // report time (GPU kernel and copy time, CPU op self time; reports.h report_time()).
  struct Part {
    int64_t records = 0;
    int64_t time = 0;
  };
  Part left_in_steps;      // in steps not selected (warm-up, cut, empty, outside --iterations)
  Part left_between;       // between two steps (outside both)
  Part left_before;        // before the first step (setup)
  Part left_after;         // after the last step (teardown)
  Part left_before_trace;  // launched before the trace began (ProfRecord::before_trace)
  int64_t total_time = 0;  // every record's report time, before the selection
  // The loop's time between the selected steps: the gaps [end of step k-1, start of step k)
  // before each selected step k >= 1. A `for batch in loader: with pyprof.range("step"):` loop
  // fetches the next batch there, outside every step range, so the reports leave those records
  // out while a selection is active; advice judges the gaps (prof/advice.h).
  struct Between {
    int64_t gaps = 0;  // gaps of positive length
    int64_t wall = 0;  // their wall time, summed
    Part records;      // the records in them
    Part dataloader;   // of those, the ones inside a DataLoader range (names_dataloader_range)
    std::map<uint32_t, int64_t> time_by_op;  // op (or record name) id -> report time
    int64_t steps_wall = 0;                  // the selected steps' wall time
  } between;
};

// A user range torch's DataLoader opens around fetching a batch
// ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", as a record's `layer` has
// it, ranges joined by ':').
inline bool names_dataloader_range(std::string_view layer) {
  return layer.find("DataLoader") != std::string_view::npos;
}

// A synchronizing API call (net.dict kind `sync`, docs/formats.md §3): the host waited in it
// for the GPU. Not a record: it has no GPU time, and no report counts it.
struct SyncCall {
  int64_t start = 0;
  int64_t duration = 0;
  int64_t tid = -1;
  uint32_t name = 0;  // the API ("cudaStreamSynchronize")
  uint32_t op = 0;    // the op it ran in (0: none: torch.cuda.synchronize(), user code)
  int32_t step = -1;
};

// A communication backend's own span of one collective (net.dict `"kind":"comm"`: gloo's
// "gloo:all_reduce" on its worker thread, ...), waiting for the other ranks included.
struct CommSpan {
  int64_t start = 0;
  int64_t duration = 0;
  int64_t tid = -1;
  uint32_t name = 0;
  int32_t step = -1;
};

// A program's instantaneous marker (net.dict `"kind":"mark"`: pyprof.mark("..."), nvtxMark).
// Not a record: it has no duration, and no time sum counts it.
struct Mark {
  int64_t start = 0;
  int64_t tid = -1;
  uint32_t name = 0;
  uint32_t domain = 0;  // its NVTX domain ("": the default one)
  int32_t step = -1;
};

// One allocation or free of a PyTorch allocator (net.dict `"kind":"memory"`, docs/formats.md
// §3.2). Not a record: no time sum counts it; the memory report and the summary's memory rows
// read them (prof/memory_events.h).
struct MemoryEvent {
  int64_t start = 0;
  int64_t bytes = 0;    // > 0 allocated, < 0 freed
  int64_t addr = 0;     // an allocation and its free share it
  int32_t device = -1;  // CUDA ordinal; -1 the CPU allocator
  Dir dir = Dir::kNone;
  int32_t step = -1;  // the header's step index; -1: outside every step
  // The allocator's totals after the event (bytes); -1: not given (or not credible).
  int64_t total_allocated = -1;
  int64_t total_reserved = -1;
  int64_t pid = -1;
  int64_t tid = -1;
  uint32_t op = 0;      // the innermost op around it (0: none)
  uint32_t module = 0;  // its module path (0: none)
};

struct ReadResult {
  std::vector<ProfRecord> records;
  // Allocations and frees in time order (empty when the profile has no memory lines).
  std::vector<MemoryEvent> memory;
  // Memory lines that could not be read as an event (no integer `bytes`, `addr` or `start`,
  // `bytes` 0 or past 2^48): skipped, counted and warned about; and lines whose totals were
  // negative (kept, their totals read as not given).
  int64_t memory_lines_skipped = 0;
  int64_t memory_totals_ignored = 0;
  std::vector<SyncCall> syncs;  // in the dict's order (start order)
  std::vector<Mark> marks;      // in start order
  std::vector<CommSpan> comm;   // in start order
  int64_t rank = -1;            // the header's `rank`; -1: not stated
  int64_t world_size = -1;      // the header's `world_size`; -1: not stated
  Strings strings;
  bool cpu_only = false;
  int64_t lines = 0;
  int64_t skipped_lines = 0;        // unreadable lines (the first few warned by line)
  std::string first_skipped_line;   // the first of them: "line 9: not valid JSON (...)"
  std::vector<DevicePeak> devices;  // from the header; empty when it has none
  int64_t above_peak = 0;           // records flagged above_peak (by assign_costs)
  int64_t bad_time = 0;             // records flagged bad_time (each counted, warned once)
  // Left out by leave_out_autotuning (prof/iterations.h): records of Triton's autotuning, and
  // the GPU time of those that are GPU activities.
  int64_t autotune_records = 0;
  int64_t autotune_gpu_time = 0;
  // Messages for standard error. They quote the trace's text (op, kernel and device names) as it
  // is: whoever prints them passes them through terminal_safe() (common/terminal_text.h).
  std::vector<std::string> warnings;
  std::string source;
  Iterations iterations;  // the header's; empty steps when it has none
  // The header's `torch_settings` (pyprof captures: the torch flags the program ran with,
  // docs/formats.md §1.4), key -> the value's JSON text ("true", "\"highest\"", "2"); empty
  // when the profile does not say (other tools' traces).
  std::map<std::string, std::string> torch_settings;
  // With ReadOptions::list_unmodelled_calls: each distinct call (op, args text as net.dict holds
  // it) of an op without any model (models/has_model.h), by op then args, and how many records
  // it costs: what `pyprof prof --flop-registry` evaluates (docs/ops.md).
  struct UnmodelledCall {
    std::string op, args;
    int64_t records = 0;
  };
  std::vector<UnmodelledCall> unmodelled_calls;
};

// The key of a `"kind":"compiled_kernel"` line and of the records it costs (docs/formats.md §3):
// the kernel's name, followed by its graph where two compiled graphs share the name. Written
// into `out`; the name and graph may be raw JSON strings or their text, as long as both sides
// of a lookup use the same form.
inline void compiled_kernel_key(std::string_view name, std::string_view graph, std::string& out) {
  out.assign(name);
  if (graph.empty()) return;
  out += '\x1f';  // a unit separator: in no kernel name or compile id
  out += graph;
}

struct ReadOptions {
  bool allow_tf32 = true;  // fp32 GEMMs count as Tensor Core eligible (TF32)
  // Every line checked to be strict JSON (prof/dict_reader.h, DictReadOptions): `pyprof export`,
  // which copies values into its trace.
  bool strict_json = false;
  // Fill ReadResult::unmodelled_calls (`pyprof-prof --unmodelled-calls`).
  bool list_unmodelled_calls = false;
};

// Reads parse's JSON Lines from `in` (a file or stdin) through the one net.dict reader
// (prof/dict_reader.h) into records, costed by models/. A line that cannot be read is skipped,
// counted (skipped_lines) and warned about. Returns false with `error` set when the input is not
// a net.dict at all (no header line) or cannot be read (docs/prof.md, "Reading a net.dict").
// Tools read through load_profile (prof/load_profile.h), which also costs and selects.
bool read_dict(std::FILE* in, const ReadOptions& options, ReadResult& out, std::string& error);

struct PeaksFile;  // prof/device_peaks.h

// Turns per-record op costs into counted costs: GPU records share their op instance's cost by
// duration; CPU records count a call tree once, at its outermost modelled op. Then flags GPU
// records above their device's peak (ProfRecord::above_peak, prof/above_peak.h; `peaks`: a
// `--peaks` file's entries, or null) and warns once with their count.
void assign_costs(ReadResult& result, const PeaksFile* peaks = nullptr);

}  // namespace pyprof::prof
