// Allocations and frees (net.dict memory lines, docs/formats.md §3.2): read into
// ReadResult::memory, and what they add up to per device, step, op and module, for the memory
// report, the summary's memory rows and the batch-size advice (docs/memory.md §6).
//
// Counting (docs/prof.md §3, memory): on each device a running total of the events' bytes, from
// the first event the reports cover (the capture's, or the selected iterations' when a
// selection is active), as torch.profiler counts its "Total Allocated" since its capture began.
// An allocation and its free are joined by (device, address); a free of an address the covered
// events never allocated (a block allocated before the capture or the selection) is counted
// apart and still lowers the running total, as the allocator's total did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "prof/dict_reader.h"
#include "prof/records.h"

namespace pyprof::prof {

// Reads the memory lines of one net.dict into `out.memory`, counting what it skips.
class MemoryLineReader {
 public:
  // One memory line; `step` the header's step index it names (-1: none or not a step).
  void read(const DictLine& l, int32_t step, ReadResult& out);
  // After the last line: the events in time order, and one warning for the lines skipped and
  // one for the totals ignored.
  void finish(ReadResult& out);

 private:
  int64_t first_skipped_line_ = 0, first_bad_totals_line_ = 0;
  std::string first_problem_;
  bool ordered_ = true;
};

// What one device's events in one step (or outside every step) add up to.
struct MemoryStepFacts {
  int32_t device = -1;
  int32_t step = -1;  // -1: the events outside every step
  int64_t events = 0;
  int64_t allocated = 0, freed = 0;            // bytes allocated, bytes freed (>= 0)
  int64_t live_at_start = 0, live_at_end = 0;  // the running total before and after its events
  int64_t peak = 0;                            // the running total's largest value after an event
  int64_t peak_event = -1;                     // the event (ReadResult::memory index) at the peak
  // The allocator's own totals where the lines give them (-1: not given): its total allocated
  // before the first event (the first event's total less its bytes), its largest total
  // allocated and total reserved after an event (reserved: CUDA only; torch's CPU allocator
  // reports 0).
  int64_t allocator_at_start = -1, allocator_peak = -1, reserved_peak = -1;
  int64_t unknown_frees = 0, unknown_free_bytes = 0;  // frees of addresses not allocated since
};

// What one op (or module) allocated and freed on one device, in one direction.
struct MemoryGroup {
  int32_t device = -1;
  uint32_t name = 0;  // the op or module string id (0: none)
  Dir dir = Dir::kNone;
  int64_t allocations = 0, allocated = 0;  // its allocations: count, bytes
  int64_t frees = 0, freed = 0;            // the frees it made: count, bytes (>= 0)
  // Of its allocations: the bytes still live when their step (or stretch outside the steps)
  // ended, and the bytes a backward op freed (a forward op's: activations kept for backward).
  int64_t live_at_step_end = 0, freed_in_backward = 0;
};

struct MemoryAnalysis {
  int64_t events = 0;                  // the events covered (after the iteration selection)
  std::vector<MemoryStepFacts> steps;  // by device, then step (outside-steps rows last)
  std::vector<MemoryGroup> ops;        // by device, then bytes allocated, largest first
  std::vector<MemoryGroup> modules;    // the same by module path
};

// The events the reports cover: all of them, or while an iteration selection is active
// (prof/iterations.h) those of the selected steps.
bool memory_event_selected(const ReadResult& data, const MemoryEvent& e);

MemoryAnalysis analyse_memory(const ReadResult& data);

// "cpu" for device -1, "cuda:N" for a CUDA device.
std::string memory_device_name(int32_t device);

}  // namespace pyprof::prof
