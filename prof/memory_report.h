// The memory report (`pyprof prof --report memory`, docs/prof.md §3 and docs/memory.md §6), the
// summary's memory rows, and the batch-size headroom the advice rule judges: all from the
// profile's allocations and frees (prof/memory_events.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "prof/iterations.h"
#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// Report `memory`: tables `steps` (per device and step: peak, the op and module at it, bytes
// allocated and freed, live at start and end, the allocator's own peaks), `ops` and `modules`
// (per device, op or module path, and direction: bytes allocated, freed, live at the step's end,
// freed in backward). `top` > 0: only the ops and modules that allocated the most. No table at
// all when the profile has no memory lines (prof_main says so when the report was asked for).
std::vector<ReportTable> memory_report(const ReadResult& data, size_t top);

// The summary's rows (none without memory lines): `memory allocated peak (bytes)` on each
// device, and the allocator's own peaks where the lines give them.
std::vector<SummaryRow> memory_summary_rows(const ReadResult& data);

// How far the batch could grow on a CUDA device before its memory is full, from the step with
// the largest peak (docs/advice.md, `batch-size-headroom`). Assumes the memory live when a step
// starts (weights, gradients, optimizer state, what earlier steps keep) does not grow with the
// batch and what the step allocates on top of it (activations, their gradients, workspaces)
// grows in proportion: factor = (total_memory - at_start) / (peak - at_start).
struct BatchHeadroom {
  int32_t device = 0;
  int32_t step = -1;
  int64_t peak = 0;          // the step's peak: the allocator's total allocated where given
  int64_t at_start = 0;      // what was live as the step began, on the same count
  int64_t total_memory = 0;  // the device's (header `devices`)
  int64_t reserved_peak = -1;
  bool allocator_totals = false;  // peak and at_start are the allocator's process totals
  double factor = 0;
};
// The device with the least headroom among those with a known memory size and a step that
// allocated on top of what it started with; nullopt when there is none.
std::optional<BatchHeadroom> batch_headroom(const ReadResult& data);

}  // namespace pyprof::prof
