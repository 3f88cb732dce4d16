// net.dict's schema (docs/formats.md §3): the one home of what `pyprof parse` writes and what
// every reader of it reads (prof, diff, export and the ranks report, all through
// prof/dict_reader.h): the format versions, the kinds of line, every key with the type of its
// value, the sub-keys of the objects a line holds, and the spellings of the values that are
// names (kind, dir, records, range, dialect, copy and memory kinds, iteration rules).
// parse/record_writer writes its keys and spellings from here; prof/dict_reader finds each key's
// slot here, so a key added here is read by every consumer at once (docs/formats.md §3, "Adding
// a key").
//
// The null rule: a key whose value is unknown is left out, except `op` and `dir`, which every
// record, sync line and CPU op record carries (null when no op encloses it); a time that is
// unknown is null (`duration` of a range never closed, of a GPU row that ends before it starts;
// `tid` of a GPU record whose launch call was not found). Readers take null as absent.
//
// Versions: adding a key is not a version change (readers ignore keys they do not know); removing
// one or changing its meaning bumps both versions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pyprof::dict {

// The header's `pyprof_dict`. The compact form (the default) writes each distinct `args` value
// once, on an `"kind":"args"` line that records refer to (`args_ref`, `bwd_args_ref`).
inline constexpr int kCompactVersion = 2;
// The full form (`pyprof parse --full-records`): every record carries its arguments verbatim.
inline constexpr int kFullVersion = 1;
// The newest version the readers know; a newer file is read with a warning (unknown keys are
// ignored).
inline constexpr int kNewestVersion = kCompactVersion;

// How a key's value is read. A value of another type (or null) reads as absent, except where
// a reader must tell it apart: a time that holds something other than an integer or null makes
// its record's time unreadable; an integer key that holds something else is present but has no
// value (a `step` or `args_ref` that is no index is an error or a warning, not silence).
enum class Value : uint8_t {
  kString,       // a JSON string
  kInt,          // an integer that fits int64
  kTime,         // ns in the trace's timebase, an integer; null: unknown
  kBool,         // true or false
  kRaw,          // an object or an array, kept as its JSON text (args, kernel, grid, devices, ...)
  kStrings,      // an array of strings (non-strings in it are skipped)
  kLaunch,       // the launch object: kLaunch* sub-keys below
  kIntOrString,  // `range`: a range line's kind of range (string), a CPU op record's range id
};

// Every key of every line: X(key, Value). The order is the order of Key; it does not matter
// otherwise. docs/formats.md §3 says on which lines each is written and what it means
// (csrc/common/dict_schema_test.cpp checks that its tables name no key missing here).
#define PYPROF_DICT_KEYS(X)                                                          \
  /* the header line */                                                              \
  X(pyprof_dict, kInt)                                                               \
  X(source, kString)                                                                 \
  X(format, kString)                                                                 \
  X(version, kString)                                                                \
  X(records, kString)                                                                \
  X(rank, kInt)                                                                      \
  X(world_size, kInt)                                                                \
  X(backend, kString)                                                                \
  X(base_time_ns, kInt)                                                              \
  X(truncated, kBool)                                                                \
  X(unfinished_capture, kRaw)                                                        \
  X(write_failure, kRaw)                                                             \
  X(torch_settings, kRaw)                                                            \
  X(devices, kRaw)                                                                   \
  X(iterations, kRaw)                                                                \
  /* records, sync, comm, mark, range, args and compiled_kernel lines */             \
  X(kind, kString)                                                                   \
  X(name, kString)                                                                   \
  X(long_name, kString)                                                              \
  X(bytes, kInt)                                                                     \
  X(copy_kind, kString)                                                              \
  X(src_kind, kString)                                                               \
  X(dst_kind, kString)                                                               \
  X(value, kInt)                                                                     \
  X(mem_kind, kString)                                                               \
  X(device, kInt)                                                                    \
  X(context, kInt)                                                                   \
  X(stream, kInt)                                                                    \
  X(grid, kRaw)                                                                      \
  X(block, kRaw)                                                                     \
  X(registers, kInt)                                                                 \
  X(shared_static, kInt)                                                             \
  X(shared_dynamic, kInt)                                                            \
  X(shared_memory, kInt)                                                             \
  X(start, kTime)                                                                    \
  X(duration, kTime)                                                                 \
  X(negative_duration, kInt)                                                         \
  X(self_duration, kTime)                                                            \
  X(correlation, kInt)                                                               \
  X(pid, kInt)                                                                       \
  X(tid, kInt)                                                                       \
  X(graph_node, kInt)                                                                \
  X(compiled_graph, kString)                                                         \
  X(compiled_symbols, kRaw)                                                          \
  X(launch, kLaunch)                                                                 \
  X(id, kInt)                                                                        \
  X(parent_id, kInt)                                                                 \
  X(op, kString)                                                                     \
  X(dir, kString)                                                                    \
  X(op_id, kInt)                                                                     \
  X(dialect, kString)                                                                \
  X(legacy_mod, kString)                                                             \
  X(seq, kInt)                                                                       \
  X(instance, kInt)                                                                  \
  X(sub, kInt)                                                                       \
  X(args, kRaw)                                                                      \
  X(args_ref, kInt)                                                                  \
  X(stack, kString)                                                                  \
  X(module, kString)                                                                 \
  X(module_type, kString)                                                            \
  X(trace, kStrings)                                                                 \
  X(bwd_node, kString)                                                               \
  X(bwd_node_id, kInt)                                                               \
  X(paired, kBool)                                                                   \
  X(fwd_op_id, kInt)                                                                 \
  X(fwd_instance, kInt)                                                              \
  X(bwd_op, kString)                                                                 \
  X(bwd_op_id, kInt)                                                                 \
  X(bwd_args, kRaw)                                                                  \
  X(bwd_args_ref, kInt)                                                              \
  X(step, kInt)                                                                      \
  X(before_trace, kBool)                                                             \
  X(user_ranges, kStrings)                                                           \
  /* range lines (`pyprof parse --ranges`, §3.1); `range` also on CPU op records */ \
  X(range, kIntOrString)                                                             \
  X(parent, kInt)                                                                    \
  X(domain, kString)                                                                 \
  X(rf_tid, kInt)                                                                    \
  X(fwd_tid, kInt)                                                                   \
  X(detail, kString)                                                                 \
  X(fwd, kInt)                                                                       \
  /* compiled_kernel lines */                                                        \
  X(graph, kString)                                                                  \
  X(kernel, kRaw)                                                                    \
  /* memory lines (§3.2) and the header's `memory` */                               \
  X(addr, kInt)                                                                      \
  X(total_allocated, kInt)                                                           \
  X(total_reserved, kInt)                                                            \
  X(memory, kRaw)

enum class Key : uint8_t {
#define PYPROF_DICT_KEY_ENUM(name, value) name,
  PYPROF_DICT_KEYS(PYPROF_DICT_KEY_ENUM)
#undef PYPROF_DICT_KEY_ENUM
};

// Each key as it is spelled in the file, for the writer: `w.raw_key(key::long_name)`.
namespace key {
#define PYPROF_DICT_KEY_NAME(name, value) inline constexpr std::string_view name = #name;
PYPROF_DICT_KEYS(PYPROF_DICT_KEY_NAME)
#undef PYPROF_DICT_KEY_NAME
}  // namespace key

inline constexpr std::array kKeyNames = {
#define PYPROF_DICT_KEY_STRING(name, value) std::string_view(#name),
    PYPROF_DICT_KEYS(PYPROF_DICT_KEY_STRING)
#undef PYPROF_DICT_KEY_STRING
};
inline constexpr std::array kKeyValues = {
#define PYPROF_DICT_KEY_VALUE(name, value) Value::value,
    PYPROF_DICT_KEYS(PYPROF_DICT_KEY_VALUE)
#undef PYPROF_DICT_KEY_VALUE
};
inline constexpr size_t kKeyCount = kKeyNames.size();

constexpr std::string_view name_of(Key k) { return kKeyNames[static_cast<size_t>(k)]; }
constexpr Value value_of(Key k) { return kKeyValues[static_cast<size_t>(k)]; }

// ---- sub-keys --------------------------------------------------------------------------------

// `launch` (GPU records, sync lines): the API call that launched the activity.
namespace launch_key {
inline constexpr std::string_view api = "api";  // version suffix stripped: cudaLaunchKernel
inline constexpr std::string_view start = "start";
inline constexpr std::string_view duration = "duration";  // null: ended before it started
inline constexpr std::string_view negative_duration = "negative_duration";  // then: end - start
}  // namespace launch_key

// The header's `devices`: one object per GPU.
namespace device_key {
inline constexpr std::string_view id = "id";  // CUDA ordinal, as records' `device`
inline constexpr std::string_view name = "name";
inline constexpr std::string_view sm_count = "sm_count";
inline constexpr std::string_view clock_hz = "clock_hz";
inline constexpr std::string_view memory_bandwidth = "memory_bandwidth";      // bytes/s
inline constexpr std::string_view total_memory = "total_memory";              // bytes
inline constexpr std::string_view compute_capability = "compute_capability";  // [major, minor]
}  // namespace device_key

// The header's `iterations` and each of its `steps`.
namespace iterations_key {
inline constexpr std::string_view rule = "rule";  // iteration_rule below
inline constexpr std::string_view range = "range";
inline constexpr std::string_view count = "count";
inline constexpr std::string_view steps = "steps";
}  // namespace iterations_key
namespace step_key {
inline constexpr std::string_view index = "index";  // 0..N-1 in time order
inline constexpr std::string_view name = "name";
inline constexpr std::string_view start = "start";
inline constexpr std::string_view end = "end";
inline constexpr std::string_view cut = "cut";  // true: the capture ended inside the step
}  // namespace step_key

// The header's `unfinished_capture` and `write_failure`.
namespace unfinished_capture_key {
inline constexpr std::string_view threads = "threads";
inline constexpr std::string_view events_per_thread_at_risk = "events_per_thread_at_risk";
}  // namespace unfinished_capture_key
namespace write_failure_key {
inline constexpr std::string_view message = "message";
inline constexpr std::string_view events_lost = "events_lost";
inline constexpr std::string_view cuda_records_lost = "cuda_records_lost";
}  // namespace write_failure_key

// The header's `memory` (§3.2): what the memory lines hold and what the checks counted.
namespace memory_key {
inline constexpr std::string_view events = "events";                    // memory lines
inline constexpr std::string_view source = "source";                    // memory_source below
inline constexpr std::string_view frees_unknown = "frees_unknown";      // of blocks never allocated
inline constexpr std::string_view negative_totals = "negative_totals";  // kept as reported
inline constexpr std::string_view outside_steps = "outside_steps";      // in no step
}  // namespace memory_key
// The header's `memory.source`: where the memory lines came from.
namespace memory_source {
inline constexpr std::string_view kPyprof = "pyprof";  // PYPROF_MEMORY_EVENTS (§2.2)
inline constexpr std::string_view kKineto = "kineto";  // torch.profiler's `[memory]` events (§4)
}  // namespace memory_source

// ---- spellings -------------------------------------------------------------------------------

// `kind`: what a line is. Records are kernel, memcpy, memset (a GPU profile's) or op (a CPU-only
// profile's); the others are no records.
enum class LineKind : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kOp,
  kSync,            // a synchronizing API call, after a GPU profile's records
  kComm,            // a communication backend's span of one collective
  kMark,            // a program's instantaneous marker
  kArgs,            // the compact form's definition of an `args` value
  kRange,           // `pyprof parse --ranges`: a range's span (§3.1)
  kCompiledKernel,  // what an Inductor kernel computes, after the header
  kMemory,          // one allocation or free of a PyTorch allocator (§3.2): no record
  kOther,           // a kind this version does not know (or none): read as a record
};
inline constexpr std::array<std::string_view, 11> kLineKindNames = {
    "kernel", "memcpy", "memset",          "op",    "sync", "comm", "mark",
    "args",   "range",  "compiled_kernel", "memory"};
constexpr std::string_view name_of(LineKind k) { return kLineKindNames[static_cast<size_t>(k)]; }
constexpr LineKind line_kind_of(std::string_view name) {
  for (size_t i = 0; i < kLineKindNames.size(); ++i) {
    if (kLineKindNames[i] == name) return static_cast<LineKind>(i);
  }
  return LineKind::kOther;
}

// `dir`: fprop, bprop; null when no op encloses the record.
namespace direction {
inline constexpr std::string_view kFprop = "fprop";
inline constexpr std::string_view kBprop = "bprop";
}  // namespace direction

// The header's `records`: what the records are.
namespace records_kind {
inline constexpr std::string_view kGpu = "gpu";  // GPU activities, in GPU start order
inline constexpr std::string_view kOp = "op";    // a CPU-only profile's op instances
}  // namespace records_kind

// A range line's `range`.
namespace range_kind {
inline constexpr std::string_view kOp = "op";
inline constexpr std::string_view kNode = "node";  // a backward node
inline constexpr std::string_view kModule = "module";
inline constexpr std::string_view kUser = "user";
inline constexpr std::string_view kTrace = "trace";  // a legacy PyProf traceMarker
}  // namespace range_kind

// `dialect`: which markers named the op (range lines: `user` for user ranges).
namespace dialect {
inline constexpr std::string_view kPyprof = "pyprof";
inline constexpr std::string_view kEmitNvtx = "emit_nvtx";
inline constexpr std::string_view kLegacyPyprof = "legacy_pyprof";
inline constexpr std::string_view kKineto = "kineto";
inline constexpr std::string_view kUser = "user";
}  // namespace dialect

// The header's `iterations.rule`: the rule that found the steps (docs/formats.md §3).
namespace iteration_rule {
inline constexpr std::string_view kStepRange = "step_range";
inline constexpr std::string_view kProfilerStep = "profiler_step";
inline constexpr std::string_view kUserRange = "user_range";
inline constexpr std::string_view kOptimizerStep = "optimizer_step";
inline constexpr std::string_view kModuleForward = "module_forward";
}  // namespace iteration_rule

// `copy_kind` of a memcpy, by Nsight Systems' copyKind number (common/nsys_schema.h).
inline constexpr std::array<std::string_view, 14> kCopyKinds = {
    "unknown", "HtoD", "DtoH", "HtoA", "AtoH",     "AtoA",     "AtoD",
    "DtoA",    "DtoD", "HtoH", "PtoP", "UVM HtoD", "UVM DtoH", "UVM DtoD"};
// `src_kind`, `dst_kind` of a memcpy and `mem_kind` of a memset, by CUPTI's memory kind number.
inline constexpr std::array<std::string_view, 8> kMemoryKinds = {
    "pageable", "pinned",        "device",         "array",
    "managed",  "device_static", "managed_static", "unknown"};
// A memcpy's `name`: "[CUDA memcpy HtoD]"; a memset's.
inline constexpr std::string_view kMemcpyNamePrefix = "[CUDA memcpy ";
inline constexpr std::string_view kMemsetName = "[CUDA memset]";

// ---- finding a key ---------------------------------------------------------------------------

namespace detail {
inline constexpr size_t kKeyTableSize = 256;  // a power of two, over twice the keys
// A key's first bucket: its length and three of its bytes, a handful of instructions on the
// reader's hot path (every key of every line).
constexpr size_t key_bucket(std::string_view s) {
  const size_t n = s.size();
  if (n == 0) return 0;
  return (n * 37 + static_cast<uint8_t>(s[0]) * 7 + static_cast<uint8_t>(s[n - 1]) * 13 +
          static_cast<uint8_t>(s[n / 2]) * 3) &
         (kKeyTableSize - 1);
}
// Open addressing: each entry is a key's index + 1, 0 where empty; a key lies at its bucket or
// after it, before the next empty entry.
struct KeyTable {
  std::array<uint8_t, kKeyTableSize> entry{};
  size_t longest_probe = 0;
};
constexpr KeyTable make_key_table() {
  KeyTable t;
  for (size_t k = 0; k < kKeyCount; ++k) {
    size_t b = key_bucket(kKeyNames[k]), probe = 1;
    for (; t.entry[b] != 0; b = (b + 1) & (kKeyTableSize - 1)) ++probe;
    t.entry[b] = static_cast<uint8_t>(k + 1);
    if (probe > t.longest_probe) t.longest_probe = probe;
  }
  return t;
}
inline constexpr KeyTable kKeyTable = make_key_table();
static_assert(kKeyCount < kKeyTableSize / 2 && kKeyCount < 255);
static_assert(kKeyTable.longest_probe <= 4, "dict keys crowd one bucket: change key_bucket");
}  // namespace detail

// The key spelled `name`; none for a key this version does not know (readers ignore it).
constexpr std::optional<Key> find_key(std::string_view name) {
  for (size_t b = detail::key_bucket(name);; b = (b + 1) & (detail::kKeyTableSize - 1)) {
    const uint8_t e = detail::kKeyTable.entry[b];
    if (e == 0) return std::nullopt;
    if (kKeyNames[e - 1] == name) return static_cast<Key>(e - 1);
  }
}

}  // namespace pyprof::dict
