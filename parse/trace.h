// The in-memory trace that a database reader fills and correlation reads: GPU activities
// (kernels, copies, memsets), the CPU API calls that launched them, and NVTX ranges with their
// messages already decoded (markers.h).
//
// Readers (nsys_reader, nvprof_reader) know table layouts; nothing after them does. Times are
// int64 ns in the file's own timebase (nsys: relative to capture start; nvprof: absolute), only
// ever compared within one file.
//
// Memory is the constraint that shapes this file: a 1M-kernel profile carries ~3M ranges, so a
// range is a fixed-size record with interned strings, and the argument text of op markers is
// kept once per distinct value (a training loop repeats them), up to a bound past which
// `RangeRecord::text` says where to fetch it again when a record is written
// (TraceReader::fetch_text).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/capture_limits.h"
#include "common/string_pool.h"
#include "parse/markers.h"

namespace pyprof::parse {

using pyprof::StringPool;  // common/string_pool.h

inline constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();

enum class ActivityKind : uint8_t { kKernel = 0, kMemcpy, kMemset };

// One GPU activity row. Fields a source does not have stay at their defaults (-1 / 0).
struct GpuActivity {
  ActivityKind kind = ActivityKind::kKernel;
  uint8_t copy_kind = 0;  // memcpy: nsys ENUM_CUDA_MEMCPY_OPER numbering (1 HtoD, 2 DtoH, 8 DtoD..)
  uint8_t src_kind = 7;   // memcpy: nsys ENUM_CUDA_MEM_KIND numbering (7 = unknown)
  uint8_t dst_kind = 7;   // memcpy: dst; memset: the memory kind
  int32_t device = -1;
  int32_t context = -1;
  uint32_t pid = 0;  // process that launched it
  int64_t stream = -1;
  int64_t start = 0;
  int64_t end = 0;
  int64_t correlation_id = -1;  // -1: none recorded
  uint32_t short_name = 0;      // pool id; kernels only
  uint32_t long_name = 0;       // pool id: demangled full name; kernels only
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = -1;
  int32_t static_shared = -1;   // bytes
  int32_t dynamic_shared = -1;  // bytes
  int32_t shared_total = -1;    // bytes, static + dynamic, when only the sum is known (Kineto)
  int64_t bytes = -1;           // memcpy / memset size
  int64_t memset_value = 0;
  int64_t graph_node_id = -1;  // CUDA graph node, -1 when not a graph launch
};
// A million of them in a large profile: members ordered to leave no padding.
static_assert(sizeof(GpuActivity) == 120);

// A CUDA graph node the capture recorded (pyprof databases: PYPROF_CUDA_GRAPH_NODES,
// docs/formats.md §2.1): created on a thread at a time, or cloned from another node.
struct GraphNode {
  int64_t node_id = 0;
  int64_t original_node_id = -1;  // cloned from it; -1: created
  int64_t start = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
};

// One CUDA runtime or driver API call (the launch of a GPU activity, or anything else).
struct ApiCall {
  int64_t start = 0;
  int64_t end = 0;
  int64_t correlation_id = -1;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t name = 0;  // pool id, version suffix stripped ("cudaLaunchKernel")
  // Pool id of the kernel a launch call names (torch.profiler's ROCm traces: args "kernel");
  // 0 when the call names none (parse/graph_capture.h checks captured launches by it).
  uint32_t kernel = 0;
};
static_assert(sizeof(ApiCall) == 40);

// One allocation (bytes > 0) or free (bytes < 0) of a PyTorch allocator: a pyprof database's
// PYPROF_MEMORY_EVENTS row, a torch.profiler trace's `[memory]` instant (docs/formats.md §2.2,
// §4). parse/memory_events.h reads and checks them; correlation places each like a launch.
struct MemoryEvent {
  static constexpr int64_t kNoTotal = INT64_MIN;  // the source gave no total
  int64_t start = 0;
  int64_t address = 0;
  int64_t bytes = 0;
  int64_t total_allocated = kNoTotal;  // the allocator's totals right after the event
  int64_t total_reserved = kNoTotal;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t device = -1;  // CUDA ordinal; -1 the CPU allocator
};

// Where a range's message can be read again. kPool: `id` is a StringPool id (the message was
// interned: registered strings, nvprof StringTable, short messages). kRow: `id` is a row
// number the reader understands (nsys: NVTX_EVENTS rowid).
// Eight bytes, so that a RangeRecord is 88: `id` takes the 56 bits after `where`, which is more
// than any pool id, Kineto args offset (block << 32 | offset, blocks in the thousands) or
// NVTX_EVENTS rowid holds (kMaxTextRowId; a reader interns a text whose row is past it).
struct TextRef {
  enum class Where : uint8_t { kNone = 0, kPool, kRow };
  Where where = Where::kNone;
  int64_t id : 56 = 0;
};
static_assert(sizeof(TextRef) == 8);
inline constexpr int64_t kMaxTextRowId = (int64_t{1} << 55) - 1;

enum class RangeShape : uint8_t { kPushPop = 0, kStartEnd, kMark };

// RangeRecord::args_length when the args are in the trace's pool (args_offset: their id).
inline constexpr uint32_t kArgsInPool = UINT32_MAX;

// One NVTX range (or mark) with its decoded message.
struct RangeRecord {
  int64_t start = 0;
  // kOpenEnd: never closed (program killed, range left open, or closed only by the session's
  // end): such a range encloses nothing in attribution (correlate.cpp).
  int64_t end = kOpenEnd;
  int64_t op_id = 0;
  int64_t seq = -1;
  TextRef text;
  uint32_t pid = 0;
  uint32_t tid = 0;      // OS thread that pushed/started it
  int32_t rf_tid = -1;   // pyprof: RecordFunction thread id ("tid"); else -1
  int32_t fwd_tid = -1;  // pyprof backward node: "fwd_tid"; else -1
  uint32_t name = 0;     // pool id: Marker::name (op, node, module path, user text)
  uint32_t domain = 0;   // pool id of the NVTX domain name; 0 = default domain
  uint32_t detail = 0;   // pool id: module type (kModule), legacy 'mod' (legacy kOp),
                         // joined frames (kTrace)
  uint32_t stack = 0;    // pool id: pyprof call site
  int32_t parent = -1;   // filled by correlation: tightest enclosing range, same thread
  // Where the decoded "args" are. args_length kArgsInPool: add_range interned them, and
  // args_offset is their pool id. Else (pyprof markers) their place in the message, so that
  // writing a record copies them from the re-fetched text instead of decoding the marker again.
  // 0/0: unknown.
  uint32_t args_offset = 0;
  uint32_t args_length = 0;
  MarkerKind kind = MarkerKind::kUser;
  Dialect dialect = Dialect::kUser;
  RangeShape shape = RangeShape::kPushPop;
  bool has_args = false;
};
static_assert(sizeof(RangeRecord) == 88);  // 3.2M of them in a 1M-kernel profile

// What a reader counts while reading; printed in the summary and never silently dropped.
struct ReadStats {
  int64_t kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, ranges = 0, marks = 0;
  int64_t malformed_markers = 0;        // decode_marker set `error`
  int64_t ranges_end_before_start = 0;  // kept with end = start
  int64_t ranges_unclosed = 0;          // end NULL / no END row / closed by the session
  // Of ranges_unclosed: ranges whose end the tool wrote at the session's (or capture's) end
  // because no pop ever came (Nsight Systems closes them so; nsys_reader finds them).
  int64_t ranges_closed_by_session = 0;
  int64_t rows_skipped = 0;  // rows missing an essential value (each one warned)
  // Kept with their start, written with duration null (count_reversed_times).
  int64_t gpu_end_before_start = 0;
  int64_t api_end_before_start = 0;
  // Capture-side losses the file reports (our PYPROF_COLLECTOR_STATS), name -> value.
  std::vector<std::pair<std::string, int64_t>> capture_stats;
};

struct Trace {
  std::string format;   // "pyprof", "nsys", "nvprof"
  std::string version;  // tool version when the file says it, else ""
  // pyprof databases: META_DATA_CAPTURE PYPROF_CUDA_TRACE ("on: ..." or why kernels are absent).
  std::string cuda_trace;
  // pyprof databases: the capture window of `pyprof profile --delay/--duration` (META_DATA_CAPTURE
  // DELAY_NS, DURATION_NS) in the records' timebase, [begin, end); open when not given.
  int64_t capture_window_begin = INT64_MIN;
  int64_t capture_window_end = INT64_MAX;
  // pyprof databases: the last settings mark's object (the torch flags the program ran with,
  // docs/formats.md §1.4), validated JSON; empty when the trace has none.
  std::string torch_settings;
  // pyprof compiled-kernel marks (docs/formats.md §1.5), in the order first seen: each Inductor
  // kernel's run-time name, the compile id of its graph ("0/1"; empty when the mark has none)
  // and its "kernel" object (validated JSON), one entry per distinct (name, graph, kernel).
  // Triton names carry no graph: two graphs (a recompile, a graph break) can each have a kernel
  // of one name computing different nodes. resolve_compiled_kernels sorts the names out.
  struct CompiledKernel {
    std::string name;
    std::string graph;
    std::string kernel;
  };
  enum class CompiledName : uint8_t {
    kOne,       // every mark of the name says the same: records join it by name
    kByGraph,   // one object per graph: records join it by their graph (`compiled_graph`)
    kAmbiguous  // different objects the graphs do not tell apart: no record joins it
  };
  std::vector<GraphNode> graph_nodes;  // pyprof databases of programs that used CUDA graphs
  std::vector<CompiledKernel> compiled_kernels;
  // pyprof compiled-call marks: each call of a graph compiled with symbolic sizes, on the
  // thread that called it, with the value of each symbol (validated JSON object). Sorted by
  // thread and time by resolve_compiled_kernels.
  struct CompiledCall {
    uint32_t pid = 0;
    uint32_t tid = 0;
    int64_t time = 0;
    std::string graph;
    std::string symbols;
  };
  std::vector<CompiledCall> compiled_calls;
  // name -> its entries in compiled_kernels
  std::unordered_map<std::string, std::vector<size_t>> compiled_kernel_index;
  // Filled by resolve_compiled_kernels: each name's verdict, and the pool ids of the kByGraph
  // names (the records' names, to look up while writing).
  std::unordered_map<std::string, CompiledName> compiled_names;
  // The pool ids of every name a compiled mark names, whatever its verdict.
  std::unordered_set<uint32_t> compiled_marked;
  std::unordered_set<uint32_t> compiled_by_graph;
  // Of those, the names a graph calls at several places (marks with `call_site`): their records'
  // `compiled_graph` adds the place (compiled_site_suffix).
  std::unordered_set<uint32_t> compiled_by_site;
  // Pool ids of the compiled kernel names with a symbolic size in their object: their records
  // get the sizes of the graph call they ran in (`compiled_symbols`).
  std::unordered_set<uint32_t> compiled_symbolic;
  // TARGET_INFO_GPU rows (nsys >= 2021.2 and pyprof databases) or TARGET_INFO_CUDA_GPU rows
  // (nsys 2020.x), for peak rates downstream.
  struct Device {
    int64_t id = -1;  // CUDA ordinal (kernel deviceId)
    std::string name;
    int64_t sm_count = 0;
    int64_t clock_hz = 0;
    int64_t memory_bandwidth = 0;  // bytes/s
    int64_t total_memory = 0;      // bytes
    int64_t compute_major = 0;
    int64_t compute_minor = 0;
    // A device fact stored in `scale`ths of the header's unit (kHz, KB/s, MiB), in that unit; none
    // for a negative value or one the conversion would take past 64 bits (a damaged file).
    static std::optional<int64_t> in_header_units(int64_t stored, int64_t scale) {
      int64_t out = 0;
      if (stored < 0 || __builtin_mul_overflow(stored, scale, &out)) return std::nullopt;
      return out;
    }
  };
  std::vector<Device> devices;
  // pyprof databases without the collector's finalisation record (killed, or its last write
  // failed): each thread's unwritten events are lost, up to kEventsPerThreadChunk
  // (common/capture_limits.h), with what the writer had queued.
  bool unfinished_capture = false;
  int64_t capture_threads = 0;  // threads seen recording in the unfinished capture
  // A pyprof database whose writes failed (a full disk) but whose final record fit: the
  // collector's message (META_DATA_CAPTURE PYPROF_WRITE_ERROR) and what it counted as lost.
  struct WriteFailure {
    std::string message;
    int64_t failed_transactions = 0;  // write_errors
    int64_t events_lost = 0;          // events_write_failed
    int64_t cuda_records_lost = 0;    // cupti_records_write_failed
  };
  std::optional<WriteFailure> write_failure;
  // The rank: torch.profiler (Kineto) traces: distributedInfo; pyprof databases: the RANK and
  // WORLD_SIZE the program ran with; else the input file name (NAME.rank<R>.sqlite). Kineto: the
  // time base the times are relative to,
  // and what the file held.
  struct Distributed {
    int64_t rank = -1;
    int64_t world_size = -1;
    std::string backend;
  };
  std::optional<Distributed> distributed;
  int64_t base_time_ns = 0;      // baseTimeNanoseconds; 0 when absent (times are then absolute)
  int64_t trace_events = 0;      // elements of traceEvents
  bool truncated_input = false;  // the document ended early; the events before are kept
  std::vector<std::pair<std::string, int64_t>> event_counts;  // by category, sorted
  // Forward op -> backward node pairs the trace states itself (Kineto's fwdbwd flows), as range
  // indices: correlation checks its own pairing against them.
  std::vector<std::pair<int32_t, int32_t>> declared_pairs;
  StringPool pool;
  // Bytes of distinct op arguments add_range has put in `pool`, and how many it may: past the
  // budget, further args stay in the database and are read again when written (a trace whose
  // every call has new arguments keeps bounded memory). A reader that reads a table in parts,
  // each into a Trace of its own, splits the budget between them.
  size_t interned_args_bytes = 0;
  size_t interned_args_budget = size_t{32} << 20;
  std::vector<GpuActivity> activities;
  std::vector<ApiCall> api_calls;
  std::vector<RangeRecord> ranges;
  // Allocations and frees, in the order the source holds them (memory_events.h), and where
  // they came from: "pyprof" (the database has PYPROF_MEMORY_EVENTS), "kineto" (the trace has
  // `[memory]` events); empty: the input records no memory, and net.dict says nothing of it.
  std::vector<MemoryEvent> memory_events;
  std::string memory_source;
  // pyprof databases: META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE ("on", or "off: why"); else empty.
  std::string memory_capture;
  // `--graph-capture` (parse/graph_capture.h): ranges and API calls from the capture trace start
  // at these indices (SIZE_MAX: none). They give joined replayed kernels their context only:
  // iteration detection, the trace's bounds and `--ranges` lines leave them out.
  size_t imported_ranges_begin = SIZE_MAX;
  size_t imported_calls_begin = SIZE_MAX;
  bool imported_range(size_t i) const { return i >= imported_ranges_begin; }
  bool imported_call(size_t i) const { return i >= imported_calls_begin; }
  // Replayed activity -> the api_calls entry standing for its launch in the capture.
  std::vector<std::pair<int32_t, int32_t>> graph_capture_calls;
  ReadStats stats;
  // Warnings by category ("malformed marker", "kernel without launch", ...): how many, and the
  // first few messages of each, in the order they were first seen.
  struct WarningGroup {
    std::string category;
    int64_t count = 0;
    std::vector<std::string> examples;
  };
  std::vector<WarningGroup> warnings;
  static constexpr size_t kWarningExamples = 3;
  void warn(std::string_view category, std::string message);
};

// A database reader. open() fills the trace; fetch_text() reads a kRow message again.
class TraceReader {
 public:
  virtual ~TraceReader() = default;
  // Returns false with a one-line reason in `error` when the file cannot be read at all.
  virtual bool read(Trace& trace, std::string& error) = 0;
  // The message of a range; for kPool refs the pool view. Empty when it cannot be read.
  virtual std::string_view fetch_text(const Trace& trace, TextRef ref) = 0;
};

// Which dialects a range's domain can hold (the default domain, "pyprof", any other name).
MarkerDomain marker_domain(const Trace& trace, const RangeRecord& r);

// Counts and warns about GPU activities and API calls whose end precedes their start (a
// tracer's clock trouble). They stay in the trace: their start still places them, but their
// length is unknown, so records carry duration null and sums leave them out.
void count_reversed_times(Trace& trace);

// Adds `part`'s compiled-kernel marks (read from a later part of the same table) to `trace`'s.
void merge_compiled_kernels(const Trace& part, Trace& trace);
// Once the whole trace is read (a name's marks may lie in chunks read apart): each name's
// Trace::CompiledName, and one "ambiguous compiled kernel" warning per ambiguous name.
void resolve_compiled_kernels(Trace& trace);
// The compile id in a Dynamo region range's name ("Torch-Compiled Region: 0/1" -> "0/1");
// empty for any other name.
std::string_view compiled_region_id(std::string_view range_name);

// Names (user ranges, ops, kernels, modules) are interned up to this many bytes: a hostile
// megabyte label is kept cut, ending "...(+N bytes)".
inline constexpr size_t kMaxNameBytes = 4096;
uint32_t intern_bounded(Trace& trace, std::string_view s);

// The key of one thread of one process, for sorting and grouping by thread.
inline uint64_t thread_key(uint32_t pid, uint32_t tid) { return (uint64_t{pid} << 32) | tid; }

// The NVTX event attributes of a range that an interned pyprof marker (Marker::interned) takes
// its op id and seq from.
struct RangeValues {
  bool has_uint64 = false;
  uint64_t uint64_value = 0;  // NVTX_EVENTS.uint64Value: the op id
  uint32_t category = 0;      // NVTX_EVENTS.category (NULL = 0): seq + 1, 0 = no seq
};

// Adds one range to the trace: decodes `text` with `marker` (reused scratch), interns what the
// record keeps, counts malformed markers. `ref` says how to fetch the text again; a reader may
// pass TextRef::kPool with the interned id when the text is short or already pooled.
void add_range(Trace& trace, RangeRecord base, std::string_view text, TextRef ref, Marker& marker,
               const RangeValues& values = {});
// The pool ids of what add_decoded_range interns from one decoded marker. A reader that decodes
// a registered string once for all the ranges that use it keeps them beside the marker, so that
// its later ranges hash and intern nothing (a training loop pushes a few thousand registered
// strings millions of times).
struct MarkerPoolIds {
  bool known = false;  // filled by the first add_decoded_range given them
  uint32_t name = 0;
  uint32_t detail = 0;
  uint32_t stack = 0;
  bool args_in_pool = false;  // the args were kept in the pool, as `args`
  uint32_t args = 0;
};
// The same for a message the caller has already decoded into `marker` (readers that decode a
// registered string once for all the ranges that use it), with that marker's pool ids when the
// caller keeps them (`ids`, filled on first use; the same trace's pool).
void add_decoded_range(Trace& trace, RangeRecord base, std::string_view text, TextRef ref,
                       const Marker& marker, const RangeValues& values = {},
                       MarkerPoolIds* ids = nullptr);

// add_range for the text (version-1) pyprof op markers of one trace, which a training loop
// repeats step after step with only their op id and seq changed (find_pyprof_id_digits): each
// distinct marker is decoded and interned once, like a registered string, and its later ranges
// take the decoded marker with their own op id and seq. A text the cache cannot key, or one
// whose decoding depends on more than that (a malformed marker, an "id" or "seq" key given
// twice), goes through add_range. The ranges it adds are the ones add_range adds.
//
// One cache belongs to one trace (its pool ids) and one thread; it keeps at most kMaxEntries
// markers and kMaxBytes of their texts, so that a trace whose markers never repeat, or whose
// args are megabytes long, costs a bounded amount of memory.
class TextMarkerCache {
 public:
  static constexpr size_t kMaxEntries = 16384;
  static constexpr size_t kMaxBytes = size_t{32} << 20;

  void add_range(Trace& trace, RangeRecord base, std::string_view text, TextRef ref,
                 Marker& scratch, const RangeValues& values = {});
  // Ranges added from a cached marker, for tests and timings.
  int64_t hits() const { return hits_; }

 private:
  struct Entry {
    Marker marker;
    MarkerPoolIds ids;
    bool usable = false;  // decoding depends on the key alone
  };
  std::unordered_map<std::string, Entry> entries_;
  std::string key_;   // scratch
  size_t bytes_ = 0;  // of the entries' texts: key and decoded marker, about twice the text
  int64_t hits_ = 0;
};

}  // namespace pyprof::parse
