#include "parse/correlate.h"

#include <algorithm>
#include <future>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "common/parallel_sort.h"

namespace pyprof::parse {

namespace {

// How strongly an op range of this dialect names its context's op (RangeContext::op); 0: never.
int op_strength(Dialect d) {
  switch (d) {
    case Dialect::kPyprof:
    case Dialect::kKineto:
      return 3;
    case Dialect::kLegacyPyprof:
      return 2;
    case Dialect::kEmitNvtx:
      return 1;
    case Dialect::kUser:
      break;
  }
  return 0;
}

RangeContext extend(const std::vector<RangeRecord>& ranges, const RangeContext* parent,
                    const RangeRecord& r, int32_t index, bool engine_step) {
  RangeContext c = parent ? *parent : RangeContext{};
  c.depth = parent ? parent->depth + 1 : 1;
  if (engine_step) c.engine_step = index;
  switch (r.kind) {
    case MarkerKind::kOp:
      if (const int strength = op_strength(r.dialect); strength > 0) {
        const int held = c.op >= 0 ? op_strength(ranges[c.op].dialect) : 0;
        // Of one dialect, the innermost wins, but the outermost of legacy PyProf's.
        if (strength > held || (strength == held && r.dialect != Dialect::kLegacyPyprof)) {
          c.op = index;
        }
      }
      if (r.seq >= 0) c.seq_op = index;
      c.op_or_node = index;
      break;
    case MarkerKind::kBackwardNode:
      c.node = index;
      c.op_or_node = index;
      break;
    case MarkerKind::kModule:
      c.module = index;
      break;
    case MarkerKind::kTrace:
      c.trace = index;
      break;
    case MarkerKind::kUser:
    case MarkerKind::kSettings:  // never a range of the trace (trace.cpp: add_range)
    case MarkerKind::kCompiledKernel:
    case MarkerKind::kCompiledCall:
      break;
  }
  return c;
}

// Key of the forward op that a backward node points at. pyprof markers carry the forward
// thread's RecordFunction id (Kineto ops get it from the reader); emit_nvtx and legacy strings
// carry none, so they match on -1.
struct PairKey {
  uint32_t pid;
  int32_t tid;
  int64_t seq;
  bool operator==(const PairKey&) const = default;
};

// The forward ops that may have created a backward node, by pairing key and start.
//
// An op records its thread's next sequence number when it starts; creating a backward node takes
// that number and moves the counter on. So every op that started since the thread's previous
// node shares the node's number (composite ops around the creator, and ops on tensors that need
// no gradient, which go through autograd but create no node), and the creator is the one that
// started last before the node (the innermost, among ops that started at the same time).
// Looking only before the node also pairs correctly when a key repeats (traces whose numbers
// restart, such as synthetic ones repeated step after step).
class ForwardOps {
 public:
  void reserve(size_t ops) { entries_.reserve(ops); }
  // `rank`: Correlation::rank, which among nested ranges with one start puts the inner later.
  void add(const PairKey& key, int64_t start, int32_t rank, int32_t index) {
    entries_.push_back({key, start, rank, index});
  }
  void finish() { std::sort(entries_.begin(), entries_.end(), before); }
  void release() { std::vector<Entry>().swap(entries_); }
  // The creator of a node with this key that started at node_start, or -1.
  int32_t creator(const PairKey& key, int64_t node_start) const {
    const Entry probe{key, node_start, std::numeric_limits<int32_t>::max(),
                      std::numeric_limits<int32_t>::max()};
    auto it = std::upper_bound(entries_.begin(), entries_.end(), probe, before);
    if (it == entries_.begin()) return -1;
    --it;
    return it->key == key ? it->index : -1;
  }

 private:
  struct Entry {
    PairKey key;
    int64_t start;
    int32_t rank;
    int32_t index;
  };
  static bool before(const Entry& a, const Entry& b) {
    return std::tie(a.key.pid, a.key.tid, a.key.seq, a.start, a.rank, a.index) <
           std::tie(b.key.pid, b.key.tid, b.key.seq, b.start, b.rank, b.index);
  }
  std::vector<Entry> entries_;
};

bool has_thread_ids(const RangeRecord& r) {
  return r.dialect == Dialect::kPyprof || r.dialect == Dialect::kKineto;
}
PairKey pair_key_of_op(const RangeRecord& r) {
  return {r.pid, has_thread_ids(r) ? r.rf_tid : -1, r.seq};
}
PairKey pair_key_of_node(const RangeRecord& r) {
  return {r.pid, has_thread_ids(r) ? r.fwd_tid : -1, r.seq};
}

// The trace's own forward -> backward links (Kineto's fwdbwd flows) against the pairing by
// sequence number: they should agree; disagreements are counted and shown.
void check_declared_pairs(Trace& trace, const ForwardOps& forward_ops, CorrelationStats& stats) {
  for (const auto& [op, node] : trace.declared_pairs) {
    const RangeRecord& n = trace.ranges[node];
    ++stats.declared_pairs;
    const int32_t creator = n.seq >= 0 ? forward_ops.creator(pair_key_of_node(n), n.start) : -1;
    if (creator == op) continue;
    ++stats.declared_pairs_disagree;
    trace.warn(
        "backward pairing differs from the trace's fwdbwd flows",
        std::string(trace.pool.get(n.name).substr(0, 60)) + " (seq " + std::to_string(n.seq) +
            "): the flow names " +
            std::string(trace.pool.get(trace.ranges[op].name).substr(0, 60)) +
            ", sequence numbers " +
            (creator >= 0 ? std::string(trace.pool.get(trace.ranges[creator].name).substr(0, 60))
                          : std::string("no op")));
  }
}

// Of two ranges with the same start and end (a clock coarser than two nested pushes), the one
// pushed first is the outer: pyprof's op ids rise in push order on a thread, so the smaller id;
// without ids, the database's order. (Databases hold ranges in pop order, inner first, so the
// order alone would nest them the wrong way round.)
bool nested_before(const std::vector<RangeRecord>& ranges, int32_t a, int32_t b) {
  const int64_t a_id = ranges[a].op_id > 0 ? ranges[a].op_id : INT64_MAX;
  const int64_t b_id = ranges[b].op_id > 0 ? ranges[b].op_id : INT64_MAX;
  if (a_id != b_id) return a_id < b_id;
  return a < b;
}

// One sweep per thread over ranges and launch calls sorted by start: a stack holds the ranges
// open at the current time, so each range's parent and each call's innermost range come out
// in one pass. Ranges ending before the current start are popped; a range that overlaps the
// top without nesting in it (start/end ranges may) is placed under the nearest range that
// really contains it. A range never closed (end kOpenEnd: no pop was recorded, or only the
// session's end closed it) has a parent but is no one's: its true extent is unknown, and a
// leaked push would otherwise claim everything the thread did afterwards.
// `forward_op` gets 1 for each op range outside backward: the ops a backward node may pair with.
// Memory events are points swept like calls: event k's innermost range goes to
// innermost_of_call[api_calls.size() + k].
void sweep(Trace& trace, Correlation& out, const std::vector<int32_t>& needed_calls,
           std::vector<int32_t>& innermost_of_call, std::vector<char>& forward_op) {
  // 16 bytes an item (4.2M at 1M kernels, so the sort's array is parse's largest temporary):
  // the thread as its position among the threads' keys, kind and index in one word, and the
  // end looked up only for the rare ties in start.
  struct Item {
    int64_t start;
    uint32_t thread;      // position of thread_key(pid, tid) in sorted order
    uint32_t kind_index;  // kind << 31 | index; kind 0 range, 1 call: at equal start a range
                          // contains the call
    int32_t index() const { return static_cast<int32_t>(kind_index & 0x7fffffffu); }
    uint32_t kind() const { return kind_index >> 31; }
  };
  std::vector<char>& engine_step_name = out.engine_step_name;
  engine_step_name.assign(trace.pool.size(), 0);
  bool any_engine_step = false;
  for (const auto& r : trace.ranges) {
    if (r.kind == MarkerKind::kUser && !engine_step_name[r.name] &&
        trace.pool.get(r.name).starts_with("autograd::engine::evaluate_function: ")) {
      engine_step_name[r.name] = 1;
      any_engine_step = true;
    }
  }
  // Read only through a context's engine_step, so only traces that have engine steps need it
  // (4 bytes a range, at the sweep's peak).
  if (any_engine_step) out.node_of_step.assign(trace.ranges.size(), -1);
  // Rows of one thread mostly follow each other: a one-entry cache in front of the map.
  std::unordered_map<uint64_t, uint32_t> thread_of_key;
  uint64_t last_key = ~uint64_t{0};
  auto see_thread = [&](uint32_t pid, uint32_t tid) {
    const uint64_t key = thread_key(pid, tid);
    if (key == last_key) return;
    thread_of_key.emplace(key, 0);
    last_key = key;
  };
  for (const auto& r : trace.ranges) see_thread(r.pid, r.tid);
  for (int32_t c : needed_calls) see_thread(trace.api_calls[c].pid, trace.api_calls[c].tid);
  for (const MemoryEvent& e : trace.memory_events) see_thread(e.pid, e.tid);
  {
    std::vector<uint64_t> keys;
    keys.reserve(thread_of_key.size());
    for (const auto& [key, unused] : thread_of_key) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (size_t i = 0; i < keys.size(); ++i) thread_of_key[keys[i]] = static_cast<uint32_t>(i);
  }
  last_key = ~uint64_t{0};
  uint32_t last_thread = 0;
  auto thread_of = [&](uint32_t pid, uint32_t tid) {
    const uint64_t key = thread_key(pid, tid);
    if (key != last_key) {
      last_thread = thread_of_key.at(key);
      last_key = key;
    }
    return last_thread;
  };
  std::vector<Item> items;
  items.reserve(trace.ranges.size() + needed_calls.size() + trace.memory_events.size());
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const auto& r = trace.ranges[i];
    if (r.shape == RangeShape::kMark) continue;
    items.push_back({r.start, thread_of(r.pid, r.tid), static_cast<uint32_t>(i)});
  }
  for (int32_t c : needed_calls) {
    const auto& call = trace.api_calls[c];
    items.push_back(
        {call.start, thread_of(call.pid, call.tid), uint32_t{1} << 31 | static_cast<uint32_t>(c)});
  }
  const size_t calls = trace.api_calls.size();
  for (size_t k = 0; k < trace.memory_events.size(); ++k) {
    const MemoryEvent& e = trace.memory_events[k];
    items.push_back(
        {e.start, thread_of(e.pid, e.tid), uint32_t{1} << 31 | static_cast<uint32_t>(calls + k)});
  }
  auto end_of = [&](const Item& item) {
    if (item.kind() == 0) return trace.ranges[item.index()].end;
    const auto i = static_cast<size_t>(item.index());
    return i < calls ? trace.api_calls[i].end : trace.memory_events[i - calls].start;
  };
  parallel_sort(items, [&](const Item& a, const Item& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start != b.start) return a.start < b.start;
    if (a.kind() != b.kind()) return a.kind() < b.kind();
    // Longer ranges first at equal start: the outer one is the parent.
    const int64_t a_end = end_of(a), b_end = end_of(b);
    if (a_end != b_end) return a_end > b_end;
    if (a.kind() == 0) return nested_before(trace.ranges, a.index(), b.index());
    return a.index() < b.index();
  });

  out.rank.assign(trace.ranges.size(), 0);
  forward_op.assign(trace.ranges.size(), 0);
  int32_t next_rank = 0;
  // The open ranges, outermost first, each with its context.
  std::vector<int32_t> stack;
  std::vector<RangeContext> stack_contexts;
  uint32_t current_thread = ~uint32_t{0};
  // Position in the stack of the innermost open range that contains `end`, or -1.
  auto innermost_containing = [&](int64_t end) -> ptrdiff_t {
    for (size_t k = stack.size(); k-- > 0;) {
      if (trace.ranges[stack[k]].end >= end) return static_cast<ptrdiff_t>(k);
    }
    return -1;
  };
  for (const Item& item : items) {
    if (item.thread != current_thread) {
      stack.clear();
      stack_contexts.clear();
      current_thread = item.thread;
    }
    while (!stack.empty() && trace.ranges[stack.back()].end < item.start) {
      stack.pop_back();
      stack_contexts.pop_back();
    }
    const int32_t index = item.index();
    // A range never closed encloses nothing (it is not pushed below), and sits in the range
    // open where it started.
    const bool unclosed = item.kind() == 0 && trace.ranges[index].end == kOpenEnd;
    const ptrdiff_t at =
        unclosed ? static_cast<ptrdiff_t>(stack.size()) - 1 : innermost_containing(end_of(item));
    const int32_t parent = at >= 0 ? stack[static_cast<size_t>(at)] : -1;
    if (item.kind() == 1) {
      innermost_of_call[index] = parent;
      continue;
    }
    // A range that starts where the open one ends only touches it (whole-microsecond times
    // make that common): not an overlap.
    if (!stack.empty() && parent != stack.back() && trace.ranges[stack.back()].end > item.start) {
      ++out.stats.ranges_improperly_nested;
    }
    auto& r = trace.ranges[index];
    out.rank[index] = ++next_rank;
    r.parent = parent;
    const RangeContext made =
        extend(trace.ranges, at >= 0 ? &stack_contexts[static_cast<size_t>(at)] : nullptr, r, index,
               r.kind == MarkerKind::kUser && engine_step_name[r.name]);
    if (r.kind == MarkerKind::kBackwardNode && made.engine_step >= 0 &&
        out.node_of_step[made.engine_step] < 0) {
      out.node_of_step[made.engine_step] = index;
    }
    // Ops run by backward (in a node, or in the engine's step around it) are not forward ops.
    if (r.kind == MarkerKind::kOp && r.seq >= 0 && made.node < 0 && made.engine_step < 0) {
      forward_op[index] = 1;
    }
    if (unclosed) continue;
    stack.push_back(index);
    stack_contexts.push_back(made);
  }
}

// Fills op, module, trace, direction and pairing from the context of the innermost range.
// `self` is the op range itself for CPU-only records, -1 for GPU activities.
void attribute(const Trace& trace, const Correlation& corr, const ForwardOps& forward_ops,
               int32_t innermost, int32_t self, Attribution& a) {
  a.innermost = innermost;
  if (innermost < 0) return;
  const RangeContext c = context_of(trace, corr, innermost);
  int32_t op = self >= 0 ? self : c.op;
  // Inside a node, or in the engine's step around it (then beside the node, not in it).
  const int32_t node_index = c.node >= 0          ? c.node
                             : c.engine_step >= 0 ? corr.node_of_step[c.engine_step]
                                                  : -1;
  if (node_index >= 0) {
    const RangeRecord& node = trace.ranges[node_index];
    a.dir = Direction::kBackward;
    a.node = node_index;
    a.seq_range = node_index;
    // Both in the chain of `innermost` when c.node >= 0, where the later in the sweep's order
    // (rank) is the deeper.
    if (op >= 0 && op != node_index && (c.node < 0 || corr.rank[op] > corr.rank[node_index])) {
      a.bwd_op = op;
    }
    const int32_t fwd =
        node.seq >= 0 ? forward_ops.creator(pair_key_of_node(node), node.start) : -1;
    if (fwd >= 0) {
      const RangeContext fc = context_of(trace, corr, fwd);
      a.op = fc.op;
      a.module = fc.module;
      a.trace = fc.trace;
      a.paired = true;
    } else {
      a.op = a.bwd_op;
      a.module = c.module;
      a.trace = c.trace;
    }
    return;
  }
  if (op < 0) return;
  a.dir = Direction::kForward;
  a.op = op;
  a.seq_range = op;
  if (trace.ranges[op].seq < 0 && c.seq_op >= 0 && self < 0) a.seq_range = c.seq_op;
  a.module = c.module;
  a.trace = c.trace;
}

// Correlation::memory_order and memory_attributions: each event placed as a launch call at its
// time on its thread would be.
void attribute_memory_events(const Trace& trace, Correlation& out, const ForwardOps& forward_ops,
                             const std::vector<int32_t>& innermost_of_call) {
  const size_t n = trace.memory_events.size();
  if (n == 0) return;
  out.memory_order.resize(n);
  for (size_t k = 0; k < n; ++k) out.memory_order[k] = static_cast<int32_t>(k);
  std::stable_sort(out.memory_order.begin(), out.memory_order.end(), [&](int32_t a, int32_t b) {
    return trace.memory_events[a].start < trace.memory_events[b].start;
  });
  out.memory_attributions.resize(n);
  const size_t calls = trace.api_calls.size();
  for (size_t k = 0; k < n; ++k) {
    const auto event = static_cast<size_t>(out.memory_order[k]);
    attribute(trace, out, forward_ops, innermost_of_call[calls + event], -1,
              out.memory_attributions[k]);
  }
}

}  // namespace

bool is_synchronizing_api(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
      "cuCtxSynchronize",      "cuStreamSynchronize",   "cuEventSynchronize",
      "hipDeviceSynchronize",  "hipStreamSynchronize",  "hipEventSynchronize"};
  for (std::string_view n : kNames) {
    if (name == n) return true;
  }
  return false;
}

namespace {

// Correlation ids and graph node ids are unique only within a process (NVIDIA/PyProf#79): the
// key of one of them in a map over all processes.
uint64_t process_key(uint32_t pid, int64_t id) {
  return (uint64_t{pid} << 40) ^ static_cast<uint64_t>(id);
}

// API call index by process_key(pid, correlation id), the first call given a key kept. Open
// addressing in one array: a node-based map of a million calls left ~30 MB of freed nodes
// resident through the rest of correlate, where parse's memory peaks; one array goes back to
// the system when it is freed.
class CallIndex {
 public:
  explicit CallIndex(size_t calls) {
    size_t size = 16;
    while (size < 2 * calls) size *= 2;
    slots_.assign(size, Slot{});
    mask_ = size - 1;
  }
  void insert(uint64_t key, int32_t call) {
    Slot& slot = slots_[slot_of(key)];
    if (slot.call < 0) slot = {key, call};
  }
  int32_t find(uint64_t key) const { return slots_[slot_of(key)].call; }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t call = -1;  // -1: empty
  };
  // The slot holding `key`, or the empty one where it would go.
  size_t slot_of(uint64_t key) const {
    // splitmix64's finaliser: correlation ids are dense, and their low bits alone would cluster.
    uint64_t h = key;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].call < 0 || slots_[i].key == key) return i;
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// For each GPU activity a CUDA graph node ran: the point where that node was made (its clones
// followed back to the node stream capture or cudaGraphAdd*Node created), as an API call of its
// own appended to trace.api_calls (zero length, no correlation id) and to `needed_calls`, so that
// the sweep finds the ranges around it as around a launch; -1 for the others.
std::vector<int32_t> capture_points(Trace& trace, std::vector<int32_t>& needed_calls) {
  std::vector<int32_t> capture_of(trace.activities.size(), -1);
  if (trace.graph_nodes.empty()) return capture_of;
  // (pid, node id) -> graph_nodes. A real libcupti announces each node of an instantiated graph
  // twice: created (in the executable graph, during cudaGraphInstantiate) and cloned from the
  // captured node. The clone is the row that leads back to the op, so it wins over the creation.
  std::unordered_map<uint64_t, int32_t> node_index;
  for (size_t k = 0; k < trace.graph_nodes.size(); ++k) {
    const GraphNode& n = trace.graph_nodes[k];
    auto [it, added] = node_index.emplace(process_key(n.pid, n.node_id), static_cast<int32_t>(k));
    if (!added && n.original_node_id >= 0 && trace.graph_nodes[it->second].original_node_id < 0) {
      it->second = static_cast<int32_t>(k);
    }
  }
  std::unordered_map<int32_t, int32_t> call_of_node;  // created node -> its capture call
  const uint32_t name = trace.pool.intern("CUDA graph node capture");
  for (size_t i = 0; i < trace.activities.size(); ++i) {
    const auto& act = trace.activities[i];
    if (act.graph_node_id < 0) continue;
    auto it = node_index.find(process_key(act.pid, act.graph_node_id));
    // Clones point back to the node they copy; a graph of graphs is a few levels deep, and the
    // bound stops a cycle only a damaged table could hold.
    for (int depth = 0; it != node_index.end() && depth < 64; ++depth) {
      const GraphNode& n = trace.graph_nodes[it->second];
      if (n.original_node_id < 0) break;
      it = node_index.find(process_key(n.pid, n.original_node_id));
    }
    if (it == node_index.end() || trace.graph_nodes[it->second].original_node_id >= 0) continue;
    auto [call, added] = call_of_node.try_emplace(it->second, -1);
    if (added) {
      const GraphNode& n = trace.graph_nodes[it->second];
      ApiCall c;
      c.start = c.end = n.start;
      c.pid = n.pid;
      c.tid = n.tid;
      c.name = name;
      call->second = static_cast<int32_t>(trace.api_calls.size());
      trace.api_calls.push_back(c);
      needed_calls.push_back(call->second);
    }
    capture_of[i] = call->second;
  }
  return capture_of;
}

// Per activity: 1 when it was launched before the trace began (Attribution::before_trace).
std::vector<char> launched_before_trace(const Trace& trace, const std::vector<int32_t>& launch_of) {
  std::vector<char> before(trace.activities.size(), 0);
  if (trace.activities.empty() || trace.api_calls.empty()) return before;
  // Per process: the lowest correlation id and the earliest start of its traced API calls.
  struct First {
    int64_t correlation = INT64_MAX;
    int64_t start = INT64_MAX;
  };
  std::unordered_map<uint32_t, First> first;
  for (const ApiCall& c : trace.api_calls) {
    First& f = first[c.pid];
    if (c.correlation_id >= 0) f.correlation = std::min(f.correlation, c.correlation_id);
    f.start = std::min(f.start, c.start);
  }
  for (size_t i = 0; i < trace.activities.size(); ++i) {
    if (launch_of[i] >= 0) continue;
    const GpuActivity& act = trace.activities[i];
    auto it = first.find(act.pid);
    if (it == first.end()) continue;
    // CUPTI numbers calls from 1; 0 is a row that names no call.
    const bool earlier_id = act.correlation_id > 0 && act.correlation_id < it->second.correlation;
    before[i] = earlier_id || act.start < it->second.start;
  }
  return before;
}

}  // namespace

namespace {

// Correlation::call_site: the ranges of each (enclosing range, name) in thread and start order.
void number_call_sites(const Trace& trace, Correlation& out) {
  if (trace.compiled_by_site.empty()) return;
  struct Site {
    int32_t parent;
    uint32_t name;
    int32_t rank;
    int32_t range;
  };
  std::vector<Site> sites;
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (r.kind == MarkerKind::kOp && trace.compiled_by_site.count(r.name)) {
      sites.push_back({r.parent, r.name, out.rank[i], static_cast<int32_t>(i)});
    }
  }
  std::sort(sites.begin(), sites.end(), [](const Site& a, const Site& b) {
    return std::tie(a.parent, a.name, a.rank) < std::tie(b.parent, b.name, b.rank);
  });
  int32_t place = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    const bool same_run =
        i > 0 && sites[i].parent == sites[i - 1].parent && sites[i].name == sites[i - 1].name;
    place = same_run ? place + 1 : 0;
    // A range at the top of its thread has no run to count in.
    if (sites[i].parent >= 0) out.call_site.emplace(sites[i].range, place);
  }
}

}  // namespace

Correlation correlate(Trace& trace) {
  Correlation out;
  const size_t n_act = trace.activities.size();
  out.cpu_only = n_act == 0;

  // Launch lookup: correlation ids are unique only within a process (NVIDIA/PyProf#79).
  std::vector<int32_t> launch_of(n_act, -1);
  std::vector<int32_t> capture_of(n_act, -1);  // graph-launched: the node's capture point
  std::vector<char> before_trace(n_act, 0);    // Attribution::before_trace
  std::vector<int32_t> needed_calls;
  if (!out.cpu_only) {
    CallIndex call_index(trace.api_calls.size());
    for (size_t i = 0; i < trace.api_calls.size(); ++i) {
      const auto& c = trace.api_calls[i];
      if (c.correlation_id < 0) continue;
      call_index.insert(process_key(c.pid, c.correlation_id), static_cast<int32_t>(i));
    }
    std::vector<char> needed(trace.api_calls.size(), 0);
    // The synchronizing calls: their enclosing ranges say which op (or none) waited.
    std::vector<char> sync_name(trace.pool.size(), 2);  // 2: not judged yet
    for (size_t i = 0; i < trace.api_calls.size(); ++i) {
      const auto& c = trace.api_calls[i];
      if (c.name >= sync_name.size()) continue;
      char& is_sync = sync_name[c.name];
      if (is_sync == 2) is_sync = is_synchronizing_api(trace.pool.get(c.name)) ? 1 : 0;
      if (!is_sync) continue;
      out.sync_calls.push_back(static_cast<int32_t>(i));
      needed[i] = 1;
      needed_calls.push_back(static_cast<int32_t>(i));
    }
    std::stable_sort(out.sync_calls.begin(), out.sync_calls.end(), [&](int32_t a, int32_t b) {
      return trace.api_calls[a].start < trace.api_calls[b].start;
    });
    for (size_t i = 0; i < n_act; ++i) {
      const auto& act = trace.activities[i];
      if (act.correlation_id < 0) continue;
      const int32_t call = call_index.find(process_key(act.pid, act.correlation_id));
      if (call < 0) continue;
      launch_of[i] = call;
      if (!needed[call]) {
        needed[call] = 1;
        needed_calls.push_back(call);
      }
    }
    // Before capture_points adds its calls: only the trace's own calls say when it began.
    before_trace = launched_before_trace(trace, launch_of);
    capture_of = capture_points(trace, needed_calls);
    // Kernels of graph replays joined to a capture trace (graph_capture.h): their launch there.
    for (const auto& [activity, call] : trace.graph_capture_calls) {
      capture_of[activity] = call;
      needed_calls.push_back(call);
    }
  }
  // GPU profiles: the activities in output order (start), and those launched in launch order
  // (for `sub`), sorted on a second thread while this one sweeps the ranges; neither reads
  // what the sweep writes.
  std::vector<int32_t> by_launch;
  std::future<void> ordered;
  if (!out.cpu_only) {
    ordered = std::async(std::launch::async, [&] {
      out.order.resize(n_act);
      for (size_t i = 0; i < n_act; ++i) out.order[i] = static_cast<int32_t>(i);
      std::stable_sort(out.order.begin(), out.order.end(), [&](int32_t a, int32_t b) {
        return trace.activities[a].start < trace.activities[b].start;
      });
      by_launch.reserve(n_act);
      for (size_t i = 0; i < n_act; ++i) {
        if (launch_of[i] >= 0) by_launch.push_back(static_cast<int32_t>(i));
      }
      std::stable_sort(by_launch.begin(), by_launch.end(), [&](int32_t a, int32_t b) {
        const auto& ca = trace.api_calls[launch_of[a]];
        const auto& cb = trace.api_calls[launch_of[b]];
        if (ca.start != cb.start) return ca.start < cb.start;
        return trace.activities[a].start < trace.activities[b].start;
      });
    });
  }
  std::vector<int32_t> innermost_of_call(trace.api_calls.size() + trace.memory_events.size(), -1);
  ForwardOps forward_ops;
  {
    // Listed after the sweep, whose sort array (4 ranges and launches a kernel, 16 bytes each)
    // is then gone: both at once were parse's memory peak.
    std::vector<char> forward_op;
    sweep(trace, out, needed_calls, innermost_of_call, forward_op);
    forward_ops.reserve(static_cast<size_t>(std::count(forward_op.begin(), forward_op.end(), 1)));
    for (size_t i = 0; i < forward_op.size(); ++i) {
      if (!forward_op[i]) continue;
      const RangeRecord& r = trace.ranges[i];
      forward_ops.add(pair_key_of_op(r), r.start, out.rank[i], static_cast<int32_t>(i));
    }
  }
  forward_ops.finish();
  check_declared_pairs(trace, forward_ops, out.stats);
  attribute_memory_events(trace, out, forward_ops, innermost_of_call);

  if (out.cpu_only) {
    for (size_t i = 0; i < trace.ranges.size(); ++i) {
      const auto& r = trace.ranges[i];
      if (r.shape == RangeShape::kMark) continue;
      if (r.kind == MarkerKind::kOp || r.kind == MarkerKind::kBackwardNode) {
        out.order.push_back(static_cast<int32_t>(i));
      }
    }
    std::stable_sort(out.order.begin(), out.order.end(), [&](int32_t a, int32_t b) {
      const RangeRecord &ra = trace.ranges[a], &rb = trace.ranges[b];
      if (ra.start != rb.start) return ra.start < rb.start;
      if (ra.end != rb.end) return ra.end > rb.end;  // the outer first, as the sweep nests them
      return nested_before(trace.ranges, a, b);
    });
    out.self_time.assign(trace.ranges.size(), 0);
    for (int32_t i : out.order) {
      const auto& r = trace.ranges[i];
      if (r.end == kOpenEnd) continue;
      out.self_time[i] += r.end - r.start;
      int32_t parent = r.parent >= 0 ? op_or_node_of(trace, r.parent) : -1;
      if (parent >= 0 && trace.ranges[parent].end != kOpenEnd) {
        out.self_time[parent] -= r.end - r.start;
      }
    }
    out.attributions.resize(out.order.size());
    for (size_t k = 0; k < out.order.size(); ++k) {
      int32_t i = out.order[k];
      attribute(trace, out, forward_ops, i, i, out.attributions[k]);
      if (trace.ranges[i].kind == MarkerKind::kBackwardNode && !out.attributions[k].paired) {
        out.attributions[k].op = -1;
      }
    }
  } else {
    ordered.get();  // out.order and by_launch
    // Attributed in place, in output order: a second array of a million attributions, copied
    // over at the end, was the peak of parse's memory.
    std::vector<int32_t> position(n_act);
    for (size_t k = 0; k < n_act; ++k) position[out.order[k]] = static_cast<int32_t>(k);
    out.attributions.resize(n_act);
    auto of_activity = [&](int32_t i) -> Attribution& { return out.attributions[position[i]]; };
    for (size_t i = 0; i < n_act; ++i) {
      Attribution& a = of_activity(static_cast<int32_t>(i));
      a.launch = launch_of[i];
      if (before_trace[i]) {
        a.before_trace = true;
        ++out.stats.before_trace[static_cast<int>(trace.activities[i].kind)];
      }
      if (trace.activities[i].graph_node_id >= 0) ++out.stats.graph_launched;
      if (a.launch < 0) continue;
      // A kernel a CUDA graph replays belongs to the op that launched it at capture; the
      // replay's own launch call stays its launch (time, API).
      const int32_t at = capture_of[i] >= 0 ? capture_of[i] : a.launch;
      if (capture_of[i] >= 0) ++out.stats.graph_captured;
      attribute(trace, out, forward_ops, innermost_of_call[at], -1, a);
    }
    out.sync_attributions.resize(out.sync_calls.size());
    for (size_t k = 0; k < out.sync_calls.size(); ++k) {
      Attribution& a = out.sync_attributions[k];
      a.launch = out.sync_calls[k];
      attribute(trace, out, forward_ops, innermost_of_call[a.launch], -1, a);
    }
    // Before the counts below: the two together were parse's memory peak.
    forward_ops.release();
    // A replayed kernel's op instance is its capture op's within one replay: (the op range or
    // backward node, the replay's launch call) numbered after every range's rank.
    std::map<std::pair<int32_t, int32_t>, int64_t> replays;
    int64_t next_instance = static_cast<int64_t>(trace.ranges.size());
    for (int32_t i : by_launch) {
      if (capture_of[static_cast<size_t>(i)] < 0) continue;
      const Attribution& a = of_activity(i);
      const int32_t instance = a.dir == Direction::kBackward ? a.node : a.op;
      if (instance < 0) continue;
      auto [it, added] = replays.try_emplace({instance, a.launch}, 0);
      if (added) it->second = ++next_instance;
      out.replay_instance[position[static_cast<size_t>(i)]] = it->second;
    }
    // sub: position among the activities of one op instance (the backward node for bprop, as
    // PyProf numbered dgrad 0 / wgrad 1), in launch order.
    std::vector<int32_t> count(trace.ranges.size(), 0);
    std::unordered_map<int64_t, int32_t> replay_count;
    for (int32_t i : by_launch) {
      Attribution& a = of_activity(i);
      int32_t instance = a.dir == Direction::kBackward ? a.node : a.op >= 0 ? a.op : -1;
      if (instance < 0) continue;
      auto replay = out.replay_instance.find(position[static_cast<size_t>(i)]);
      a.sub =
          replay == out.replay_instance.end() ? count[instance]++ : replay_count[replay->second]++;
    }
  }

  for (const auto& a : out.attributions) {
    if (!out.cpu_only) {
      if (a.launch < 0) {
        ++out.stats.without_launch;
        continue;
      }
      if (a.innermost < 0) {
        ++out.stats.outside_ranges;
        continue;
      }
    }
    if (a.dir == Direction::kNone) {
      ++out.stats.no_op;
      continue;
    }
    ++out.stats.attributed;
    if (a.dir == Direction::kBackward) {
      ++out.stats.backward;
      if (a.paired) ++out.stats.backward_paired;
    }
  }
  number_call_sites(trace, out);
  return out;
}

RangeContext context_of(const Trace& trace, const Correlation& corr, int32_t range) {
  // The chain, innermost first; then extended from the outermost in, as the sweep did.
  constexpr size_t kInline = 64;
  int32_t inline_chain[kInline];
  std::vector<int32_t> deep_chain;
  size_t length = 0;
  for (int32_t i = range; i >= 0; i = trace.ranges[i].parent) {
    if (length < kInline) {
      inline_chain[length] = i;
    } else {
      if (deep_chain.empty()) deep_chain.assign(inline_chain, inline_chain + kInline);
      deep_chain.push_back(i);
    }
    ++length;
  }
  const int32_t* chain = deep_chain.empty() ? inline_chain : deep_chain.data();
  RangeContext c;
  for (size_t k = length; k-- > 0;) {
    const int32_t i = chain[k];
    const RangeRecord& r = trace.ranges[i];
    const bool engine_step = r.kind == MarkerKind::kUser && r.name < corr.engine_step_name.size() &&
                             corr.engine_step_name[r.name];
    c = extend(trace.ranges, k + 1 < length ? &c : nullptr, r, i, engine_step);
  }
  return c;
}

int32_t op_or_node_of(const Trace& trace, int32_t range) {
  for (int32_t i = range; i >= 0; i = trace.ranges[i].parent) {
    const MarkerKind kind = trace.ranges[i].kind;
    if (kind == MarkerKind::kOp || kind == MarkerKind::kBackwardNode) return i;
  }
  return -1;
}

int32_t module_of(const Trace& trace, int32_t range) {
  for (int32_t i = range; i >= 0; i = trace.ranges[i].parent) {
    if (trace.ranges[i].kind == MarkerKind::kModule) return i;
  }
  return -1;
}

}  // namespace pyprof::parse
