// Allocations and frees of PyTorch's allocators (docs/formats.md §2.2, §3.2, §4): read from a
// pyprof database's PYPROF_MEMORY_EVENTS or a torch.profiler trace's `[memory]` instants into
// Trace::memory_events, placed by correlation (correlate.h: each like a launch at its time on
// its thread), then checked here once the steps are known: frees of blocks the capture never
// saw allocated, negative totals, events outside every step. None of it is fatal: each is
// counted, in the header's `memory` and parse's summary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/dict_schema.h"
#include "parse/correlate.h"
#include "parse/iterations.h"
#include "parse/sqlite_db.h"
#include "parse/trace.h"

namespace simdjson::dom {
class parser;
}  // namespace simdjson::dom

namespace pyprof::parse {

// Reads PYPROF_MEMORY_EVENTS when the database has it (nsys exports and databases older than
// memory capture have none: nothing is read, and net.dict says nothing of memory). Sets
// Trace::memory_source when the table has rows or META_DATA_CAPTURE says capture was on
// (`memory_capture`, read with the metadata). Rows without a time, thread, address or size are
// skipped with a warning; a table of another layout is skipped with a warning. False (with
// `error`) only when SQLite fails reading it.
bool read_memory_table(const SqliteDb& db, Trace& trace, std::string& error);

// A torch.profiler trace's `[memory]` instant events (profile_memory=True): their args "Bytes",
// "Total Allocated", "Total Reserved", "Device Type", "Device Id", "Addr".
class KinetoMemoryEvents {
 public:
  KinetoMemoryEvents();
  ~KinetoMemoryEvents();
  // Whether an instant event named `name` is a memory event.
  static bool is_memory_event(std::string_view name) { return name == "[memory]"; }
  // Adds the event whose JSON text is `json` at `start` ns on (pid, tid) to the trace. False,
  // with `why`, when its args lack an integer "Bytes" (the caller skips it and says so).
  bool add(std::string_view json, int64_t start, uint32_t pid, uint32_t tid, Trace& trace,
           std::string& why);

 private:
  // Events are parsed again whole (the reader's pass keeps only the keys it knows): few, small.
  std::unique_ptr<simdjson::dom::parser> parser_;
};

// What the checks found (the header's `memory`, docs/formats.md §3.2).
struct MemorySummary {
  int64_t events = 0;
  int64_t allocations = 0;
  int64_t frees = 0;
  // Frees of an address with no allocation before it in the capture (a block allocated before
  // the capture began; CUDA reports them, torch's CPU allocator does not).
  int64_t frees_unknown = 0;
  // Events whose total allocated or reserved is negative (kept as reported).
  int64_t negative_totals = 0;
  // Events in no step, when the trace has steps (none found: 0, there is nothing to be outside).
  int64_t outside_steps = 0;
};

// Checks the attributed events (Correlation::memory_order) in time order; warns about negative
// totals (the first few named). `iterations` may be null.
MemorySummary check_memory_events(Trace& trace, const Correlation& corr,
                                  const Iterations* iterations);

// The summary's line: "N memory events (M frees of blocks allocated before the capture)", with
// what else was counted; empty when the input records no memory.
std::string memory_summary_line(const Trace& trace, const MemorySummary& summary);

}  // namespace pyprof::parse
