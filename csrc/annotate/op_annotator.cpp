#include "op_annotator.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "call_site.h"
#include "common/marker_schema.h"
#include "marker_key.h"
#include "memory_capture.h"
#include "nvtx_ranges.h"
#include "op_marker.h"

namespace pyprof {
namespace {

std::mutex g_install_mutex;
at::CallbackHandle g_handle = 0;
std::atomic<bool> g_with_stack{false};
std::atomic<bool> g_intern{true};

std::atomic<uint64_t> g_next_id_block{0};
constexpr uint64_t kIdBlock = 4096;

// Counted per thread: each counter has one writer, so a relaxed load and store does (no locked
// instruction, no cache line shared between threads on the hot path); annotator_stats() sums.
struct ThreadCounters {
  std::atomic<uint64_t> ops_annotated{0};
  std::atomic<uint64_t> message_bytes{0};
  std::atomic<uint64_t> interned{0};
  std::atomic<uint64_t> paused{0};
  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};
// Every thread's counters, leaked on purpose: a thread may still start annotating while the
// process runs its static destructors.
struct AllThreadCounters {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadCounters>> threads;
};
AllThreadCounters& all_thread_counters() {
  static auto* all = new AllThreadCounters;
  return *all;
}

std::shared_ptr<ThreadCounters> new_thread_counters() {
  auto counters = std::make_shared<ThreadCounters>();
  AllThreadCounters& all = all_thread_counters();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.threads.push_back(counters);
  return counters;
}

// Rare events: shared counters.
std::atomic<uint64_t> g_markers_registered{0};
std::atomic<uint64_t> g_not_interned{0};

// The marker an op gets when building its own failed (out of memory, most likely). Spelled out
// at compile time, since that path must not allocate; NUL-terminated like every message.
constexpr auto kErrorMarker = [] {
  static_assert(kMarkerSchemaVersion >= 0 && kMarkerSchemaVersion <= 9,
                "the error marker spells the schema version as one digit");
  constexpr std::string_view kHead = R"({"v":)";
  constexpr std::string_view kTail = R"(,"op":"<error>","error":"marker could not be built"})";
  std::array<char, kHead.size() + 1 + kTail.size() + 1> text{};
  char* out = std::copy(kHead.begin(), kHead.end(), text.begin());
  *out++ = static_cast<char>('0' + kMarkerSchemaVersion);
  std::copy(kTail.begin(), kTail.end(), out);
  return text;
}();

// OpInfo cache, one per thread so the hot path takes no lock.
//
// The fast key is the name pointer: for dispatcher ops it points into the operator's schema,
// which lives as long as the operator. Backward nodes and user scopes own their name, so the
// same address can later hold another name: every pointer hit is confirmed with strcmp, and a
// miss falls back to the (name, overload) map.
//
// In front of the pointer map, a direct-mapped array indexed by the pointer's hash: a training
// loop calls a few dozen distinct ops, so nearly every lookup is one multiply, a load and the
// two confirming strcmps, without the map's modulo (two divisions under perf, ~80 ns an op).
class OpInfoCache {
 public:
  const OpInfo& lookup(const at::RecordFunction& fn) {
    const char* name = fn.name();
    const char* overload = fn.overload_name();
    if (overload == nullptr) overload = "";
    FrontEntry& front = front_[front_slot(name)];
    if (front.name == name && matches(*front.info, name, overload)) return *front.info;
    auto it = by_pointer_.find(name);
    const OpInfo* info =
        it != by_pointer_.end() && matches(*it->second, name, overload) ? it->second : nullptr;
    if (info == nullptr) {
      info = &lookup_by_name(fn, name);
      by_pointer_[name] = info;
    }
    front = {name, info};
    return *info;
  }

 private:
  struct FrontEntry {
    const char* name = nullptr;
    const OpInfo* info = nullptr;
  };
  static constexpr int kFrontBits = 8;
  static size_t front_slot(const char* name) {
    return (reinterpret_cast<uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >> (64 - kFrontBits);
  }
  static bool matches(const OpInfo& info, const char* name, const char* overload) {
    return std::strcmp(info.name.c_str(), name) == 0 &&
           std::strcmp(info.overload.c_str(), overload) == 0;
  }

  const OpInfo& lookup_by_name(const at::RecordFunction& fn, const char* name) {
    const char* overload = fn.overload_name();
    std::string key = name;
    key.push_back('\0');
    key += overload ? overload : "";
    auto it = by_name_.find(key);
    if (it != by_name_.end()) return *it->second;
    // First sight of this op on this thread: copy the schema once (expensive, so cached).
    std::optional<c10::FunctionSchema> schema;
    if (fn.scope() == at::RecordScope::FUNCTION) schema = fn.operator_schema();
    auto info = std::make_unique<OpInfo>(
        make_op_info(name, overload ? overload : "", schema ? &*schema : nullptr));
    const OpInfo& ref = *info;
    by_name_.emplace(std::move(key), std::move(info));
    return ref;
  }

  std::array<FrontEntry, size_t{1} << kFrontBits> front_{};
  std::unordered_map<const char*, const OpInfo*> by_pointer_;
  std::unordered_map<std::string, std::unique_ptr<OpInfo>> by_name_;
};

// Interned markers of one thread: marker text -> NVTX string handle, and the binary keys
// (marker_key.h) of calls already seen -> the same handles. Per thread, because the RecordFunction
// thread id is part of every marker anyway, and so the hot path takes no lock.
class InternedMarkers {
 public:
  // The handle of the marker a call with this binary key got before; 0 if none.
  uint64_t handle_of_key(std::string_view key) const { return by_key_.find(key); }
  void remember_key(std::string_view key, uint64_t handle) {
    if (bytes_ + key.size() > kMaxInternedBytesPerThread) return;
    bytes_ += key.size();
    by_key_.insert(key, handle);
  }

  // The handle of `marker` (NUL-terminated view), registering it on first sight; 0 when the
  // thread's budget is spent and the marker is new.
  uint64_t handle_of(std::string_view marker) {
    auto it = by_text_.find(marker);
    if (it != by_text_.end()) return it->second;
    if (bytes_ + marker.size() > kMaxInternedBytesPerThread) return 0;
    const uint64_t handle = register_marker_string(marker.data());
    if (handle == 0) return 0;
    bytes_ += marker.size();
    by_text_.emplace(std::string(marker), handle);
    g_markers_registered.fetch_add(1, std::memory_order_relaxed);
    return handle;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return MarkerKeyWriter::hash(text); }
  };
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> by_text_;
  KeyHandleTable by_key_;
  size_t bytes_ = 0;  // of both tables' keys
};

// seq + 1 as an NVTX category, when it fits one (0: the op has no seq).
std::optional<uint32_t> seq_category(int64_t seq) {
  if (seq < -1 || seq >= int64_t{UINT32_MAX}) return std::nullopt;
  return static_cast<uint32_t>(seq + 1);
}

struct ThreadState {
  std::string buffer;     // scratch space for the message, reused for every op on this thread
  std::string key;        // scratch space for the marker's binary key
  std::string call_site;  // of the outermost op in progress
  OpInfoCache cache;
  InternedMarkers interned;
  std::shared_ptr<ThreadCounters> counters = new_thread_counters();
  uint64_t next_id = 0;
  uint64_t id_limit = 0;
  // Op ranges (not record_function scopes) open on this thread. An op at depth 0 was called
  // from Python (possibly inside a record_function block); deeper ones were called by an op.
  int op_depth = 0;

  uint64_t new_op_id() {
    if (next_id == id_limit) {
      next_id = g_next_id_block.fetch_add(1, std::memory_order_relaxed) * kIdBlock + 1;
      id_limit = next_id + kIdBlock - 1;  // ids are never 0
    }
    return next_id++;
  }
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// The context of an op started while annotation was paused: its end pops nothing. Allocated
// only then (compiling), so the usual path returns no context at all.
struct PausedOp : at::ObserverContext {};

// The thread whose ops are not annotated (its ThreadState's address), 0 for none: the thread
// torch.compile compiles on, whose ops run on fake tensors and are not the program's work.
// One owner, set and cleared from any thread, so that a resume can never be lost to a thread
// that is not the one that paused (Dynamo's callbacks may end on another thread).
std::atomic<uintptr_t> g_paused_thread{0};

// Every start pushes exactly one range and every end pops one, except for ops started while
// paused (a PausedOp context): RecordFunction runs the end callback for each start callback
// that ran, with the context it returned, and this function never throws.
std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  memory_capture_on_op();  // this thread's allocations from now on (memory_capture.h)
  ThreadState& ts = thread_state();
  if (g_paused_thread.load(std::memory_order_relaxed) == reinterpret_cast<uintptr_t>(&ts)) {
    ThreadCounters::add(ts.counters->paused, 1);
    return std::make_unique<PausedOp>();
  }
  std::string_view message;  // NUL-terminated
  uint64_t handle = 0;       // set when the marker goes by handle
  uint64_t op_id = 0;
  uint32_t category = 0;
  try {
    const OpInfo& info = ts.cache.lookup(fn);
    OpInstance op;
    op.id = ts.new_op_id();
    op.seq = fn.seqNr();
    op.tid = fn.threadId();
    op.fwd_tid = fn.forwardThreadId();
    op.scope = fn.scope();
    if (g_with_stack.load(std::memory_order_relaxed)) {
      // Nested ops share the call site of the op the user called.
      if (ts.op_depth == 0) current_call_site(ts.call_site);
      op.call_site = ts.call_site;
    }
    const bool intern = g_intern.load(std::memory_order_relaxed);
    const std::optional<uint32_t> seq_as_category = seq_category(op.seq);
    if (intern && seq_as_category) {
      op_id = op.id;
      category = *seq_as_category;
      MarkerKeyWriter key(ts.key);
      const bool keyed = write_marker_key(key, info, op, fn.inputs());
      if (keyed) handle = ts.interned.handle_of_key(key.view());
      if (handle == 0) {
        message = build_op_message(ts.buffer, info, op, fn.inputs(), {}, MarkerForm::kInterned);
        handle = ts.interned.handle_of(message);
        if (keyed && handle != 0) ts.interned.remember_key(key.view(), handle);
      }
    }
    if (handle == 0) {
      if (intern) g_not_interned.fetch_add(1, std::memory_order_relaxed);
      message = build_op_message(ts.buffer, info, op, fn.inputs());
    }
  } catch (...) {
    handle = 0;
    message = std::string_view(kErrorMarker.data(), kErrorMarker.size() - 1);
  }
  if (fn.scope() != at::RecordScope::USER_SCOPE) ++ts.op_depth;
  if (handle != 0) {
    push_interned_marker(handle, op_id, category);
    ThreadCounters::add(ts.counters->interned, 1);
  } else {
    push_marker(message.data());
    ThreadCounters::add(ts.counters->message_bytes, message.size());
  }
  ThreadCounters::add(ts.counters->ops_annotated, 1);
  return nullptr;
}

void on_op_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (context != nullptr) return;  // a PausedOp: nothing was pushed
  ThreadState& ts = thread_state();
  if (fn.scope() != at::RecordScope::USER_SCOPE && ts.op_depth > 0) --ts.op_depth;
  pop_marker();
}

}  // namespace

bool install_op_annotator(const AnnotatorOptions& options) {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_handle != 0) return true;
  if (!nvtx_tool_attached()) return false;
  g_with_stack.store(options.with_stack);
  g_intern.store(options.intern_markers);
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&on_op_start, &on_op_end)
          .needsInputs(true)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                   at::RecordScope::USER_SCOPE}));
  return true;
}

void uninstall_op_annotator() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_handle == 0) return;
  at::removeCallback(g_handle);
  g_handle = 0;
}

void pause_annotation(bool pause) {
  g_paused_thread.store(pause ? reinterpret_cast<uintptr_t>(&thread_state()) : 0,
                        std::memory_order_relaxed);
}

bool op_annotator_installed() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  return g_handle != 0;
}

AnnotatorStats annotator_stats() {
  AnnotatorStats stats;
  {
    AllThreadCounters& all = all_thread_counters();
    std::lock_guard<std::mutex> lock(all.mutex);
    for (const auto& counters : all.threads) {
      stats.ops_annotated += counters->ops_annotated.load(std::memory_order_relaxed);
      stats.message_bytes += counters->message_bytes.load(std::memory_order_relaxed);
      stats.interned += counters->interned.load(std::memory_order_relaxed);
      stats.paused += counters->paused.load(std::memory_order_relaxed);
    }
  }
  stats.markers_registered = g_markers_registered.load();
  stats.not_interned = g_not_interned.load();
  return stats;
}

}  // namespace pyprof
