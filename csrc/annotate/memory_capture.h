// Memory capture: every allocation and free of PyTorch's allocators (the CPU allocator, the CUDA
// caching allocator) on the threads that run ops, handed to pyprof's collector with the
// allocator's totals after it (pyprof_collect_memory_event), which stamps it with the clock and
// thread id of the NVTX ranges around it: parse attributes it to the op, module, direction and
// step it happened in.
//
// The hook is torch's own memory reporting to profilers: each allocator calls
// c10::reportMemoryUsageToProfiler, which hands the event to the MemoryReportingInfoBase in the
// calling thread's ThreadLocalDebugInfo slot DebugInfoKind::PROFILER_STATE, the slot
// torch.profiler's state occupies while it runs. pyprof puts its reporter into that slot on
// each thread the first time the op annotator sees an op there while the slot is empty; torch
// copies the slot into the autograd engine's threads with the rest of the thread-local state.
// The reporter is a torch::profiler::impl::ProfilerStateBase with a disabled config, because
// torch's code reads whatever sits in the slot as one:
// torch.autograd.profiler._is_profiler_enabled() and the profiler type then see no profiler.
//
// One slot per thread: while torch.profiler (or emit_nvtx) holds a thread's slot, that thread's
// allocations go to it and not to pyprof; the ops run so are counted (ops_unseen). torch.profiler
// refuses to start on a thread whose slot is taken, so pyprof steps aside first: pyprof.init()
// wraps torch.autograd.profiler._enable_profiler to call memory_step_aside(); the reporter comes
// back at the first op after torch.profiler stops. docs/formats.md §2.2.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace pyprof {

// Where each allocation and free goes: pyprof_collect_memory_event's signature.
using MemoryEventSink = void (*)(uint64_t address, int64_t bytes, uint64_t total_allocated,
                                 uint64_t total_reserved, int32_t device_type,
                                 int32_t device_index);

// Turns memory capture on for every thread that runs an op from now on, into the collector.
// Returns "" when on, or why it cannot be (one sentence: the attached NVTX tool is not pyprof's
// collector). Installing twice is a no-op.
std::string install_memory_capture();
// The same into `sink` (the unit tests' own).
void install_memory_capture(MemoryEventSink sink);
// Turns it off: the reporter, still in the slots of the threads that had it, reports nothing
// and tells the allocators that no profiler wants their events; the calling thread's slot is
// freed.
void uninstall_memory_capture();
bool memory_capture_installed();

// What META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE says ("on", "off: why"), with the ops unseen so
// far; sent to the collector at once (when it is pyprof's).
void report_memory_capture(const std::string& status);
// The same with the last status, before the collector finalizes.
void report_memory_capture_final();

// Takes pyprof's reporter out of the calling thread's slot, so that another profiler can take
// it. 1: taken out; 0: it was not there; -1: something was pushed on top of it that pyprof
// cannot take away (the other profiler will then refuse to start).
int memory_step_aside();

struct MemoryCaptureStats {
  uint64_t threads = 0;      // times the reporter went into an empty slot
  uint64_t ops_unseen = 0;   // ops run while the slot held another profiler's state
  uint64_t ops_blocked = 0;  // ops run while other thread-local debug info kept the slot shut
  uint64_t step_asides = 0;  // memory_step_aside() calls that took the reporter out
};
MemoryCaptureStats memory_capture_stats();

namespace detail {
extern std::atomic<bool> g_memory_capture_on;
void put_memory_reporter_on_thread();
}  // namespace detail

// Called by the op annotator at the start of every op, on the op's thread.
inline void memory_capture_on_op() {
  if (detail::g_memory_capture_on.load(std::memory_order_relaxed)) {
    detail::put_memory_reporter_on_thread();
  }
}

}  // namespace pyprof
