// Correlation: which op, module, user ranges and direction each GPU activity (or, on a CPU-only
// profile, each op range) belongs to.
//
//   GPU activity --correlationId + pid--> API call that launched it
//   API call --same thread, time containment--> innermost enclosing NVTX range
//   range --parent chain--> op, backward node, module, user ranges (outermost first)
//   backward node --(pid, forward thread id, seq)--> the forward op that created it
//
// Every range gets its parent (the tightest enclosing range on the same thread) in one sweep
// per thread over ranges and calls sorted by start, which carries the RangeContext of each open
// range (its whole chain summarised, computed from its parent's in O(1)). So the cost is
// O((K + R) log(K + R)) for K activities and R ranges, with no per-kernel search. Contexts are
// not kept per range afterwards (3.2M of them were a seventh of parse's peak memory at 1M
// kernels): context_of rebuilds one from the parent chain, a few ranges deep.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "parse/trace.h"

namespace pyprof::parse {

enum class Direction : uint8_t { kNone = 0, kForward, kBackward };

// What a range's chain of enclosing ranges (itself included) holds. -1: none.
struct RangeContext {
  // The op the chain names, by dialect strength: the innermost pyprof or Kineto op (full
  // argument records), else the outermost legacy PyProf args marker (PyProf reported op[0]),
  // else the innermost emit_nvtx op.
  int32_t op = -1;
  int32_t seq_op = -1;      // innermost op of any dialect with seq >= 0
  int32_t node = -1;        // innermost backward node
  int32_t module = -1;      // innermost module marker
  int32_t trace = -1;       // innermost legacy traceMarker
  int32_t op_or_node = -1;  // innermost op or backward node (CPU self time)
  // Innermost "autograd::engine::evaluate_function: X" range: the engine's step that runs node
  // X, and around it the work the node's own range does not cover (gradient accumulation,
  // reductions of broadcast gradients): backward work all the same.
  int32_t engine_step = -1;
  int32_t depth = 0;  // number of enclosing ranges, itself included
};

// The result for one GPU activity or one op instance.
struct Attribution {
  int32_t launch = -1;     // index into Trace::api_calls
  int32_t innermost = -1;  // innermost enclosing range of the launch (or the op range itself)
  int32_t op = -1;         // the op: the forward op for bprop records when paired
  int32_t node = -1;       // backward node (bprop)
  int32_t bwd_op = -1;     // op run inside the backward node (bprop)
  int32_t module = -1;     // module range: of the forward op for bprop records
  int32_t trace = -1;      // legacy trace marker
  // The range whose autograd sequence number the record carries (seq_of): an index, not the
  // number, keeps a million of these at 40 bytes.
  int32_t seq_range = -1;
  int32_t sub = 0;  // index of this activity among those of the same op instance
  Direction dir = Direction::kNone;
  bool paired = false;  // bprop and its forward op was found
  // A GPU activity launched before the trace began: no launch call in the trace, and its
  // correlation id below every API call's of its process (CUPTI's and roctracer's ids rise with
  // each call) or its start before the process's first traced API call. It ran while the trace
  // was recorded, but its launch (and its step) came earlier: it belongs to no step.
  bool before_trace = false;
};

struct CorrelationStats {
  int64_t without_launch = 0;  // correlationId with no API call of the same process
  int64_t outside_ranges = 0;  // launched outside every range
  int64_t no_op = 0;           // inside ranges, but none is an op
  int64_t attributed = 0;      // has an op (or a backward node)
  int64_t backward = 0;        // bprop
  int64_t backward_paired = 0;
  int64_t ranges_improperly_nested = 0;
  int64_t declared_pairs = 0;           // Trace::declared_pairs checked
  int64_t declared_pairs_disagree = 0;  // of those, paired otherwise by sequence number
  int64_t graph_launched = 0;  // GPU activities run by a CUDA graph node (graph_node_id set)
  int64_t graph_captured = 0;  // of those, attributed at the node's capture (Trace::graph_nodes)
  // Attribution::before_trace activities, by ActivityKind (kernels, memcpys, memsets).
  int64_t before_trace[3] = {0, 0, 0};
};

struct Correlation {
  std::vector<int32_t> order;             // activities (or op ranges) in output order
  std::vector<Attribution> attributions;  // per entry of `order`
  std::vector<int64_t> self_time;         // CPU-only: per range, own time minus child ops
  // Per range: its position in (process, thread, start) order, 1-based: an instance number
  // that does not depend on the order of the rows in the database.
  std::vector<int32_t> rank;
  // Per range: for an engine step, the backward node it runs (-1 otherwise, or none seen).
  // Empty when the trace has no engine step.
  std::vector<int32_t> node_of_step;
  // By pool id: whether a user range of that name is the autograd engine's per-node step
  // ("autograd::engine::evaluate_function: X").
  std::vector<char> engine_step_name;
  bool cpu_only = false;  // no GPU activity: records are op instances
  CorrelationStats stats;
  // GPU profiles: the API calls that block the host until the GPU is done
  // (is_synchronizing_api), in start order, and what each ran inside (`launch` is the call).
  std::vector<int32_t> sync_calls;
  std::vector<Attribution> sync_attributions;
  // Trace::memory_events in time order (at equal times, in the source's order, which is each
  // thread's own), and what each was attributed to: the ranges around it on its thread, as for
  // a launch call at its time (`launch` stays -1). Empty without memory events.
  std::vector<int32_t> memory_order;
  std::vector<Attribution> memory_attributions;
  // Op ranges named like a compiled kernel its graph calls at several places
  // (Trace::compiled_by_site): range -> its place among the ranges of its name directly inside
  // the same range (one run of the graph's wrapper calls them in code order). Empty otherwise.
  std::unordered_map<int32_t, int32_t> call_site;
  // GPU activities a CUDA graph replayed, attributed at their node's capture (position in
  // `order` -> instance number): each replay is an op instance of its own, numbered after every
  // range's `rank`, so that prof costs every replay (the capture's op ran once, its graph many
  // times). Empty without graph replays.
  std::unordered_map<int32_t, int64_t> replay_instance;
};

static_assert(sizeof(Attribution) == 40);

// The record's autograd sequence number: of its backward node, else of its op, else of the
// innermost op around the launch that has one; -1 for none.
inline int64_t seq_of(const Trace& trace, const Attribution& a) {
  return a.seq_range >= 0 ? trace.ranges[a.seq_range].seq : -1;
}

// cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, their driver (cu*) and HIP
// spellings: the calls after which an idle GPU waits for the host (docs/formats.md §3, `sync`).
bool is_synchronizing_api(std::string_view name);

// Fills parents (RangeRecord::parent) and computes everything above.
Correlation correlate(Trace& trace);

// The context of `range` (>= 0), from its chain of parents: what the sweep computed for it.
RangeContext context_of(const Trace& trace, const Correlation& corr, int32_t range);

// RangeContext::op_or_node of `range` (>= 0) without the rest: the innermost op or backward
// node among it and its enclosing ranges, or -1.
int32_t op_or_node_of(const Trace& trace, int32_t range);

// RangeContext::module of `range` (>= 0) without the rest: the innermost module range among it
// and its enclosing ranges, or -1.
int32_t module_of(const Trace& trace, int32_t range);

}  // namespace pyprof::parse
