// Per-thread recording state. Each thread that calls NVTX gets one ThreadBuffer, owned by the
// collector's registry (not by the thread) so its events survive the thread's exit; the thread
// reaches it through a thread_local pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "event_types.h"
#include "spin_mutex.h"

namespace pyprof::collect {

// Open push/pop ranges of one domain on one thread. Messages are kept in one LIFO byte buffer
// rather than one string per range, so pushing does not allocate once the buffer has grown.
struct RangeStack {
  std::vector<OpenRange> ranges;
  std::string text;
};

// Summed over all threads at finalization (kept per thread so the hot path touches no shared
// cache line).
struct ThreadCounters {
  uint64_t events_recorded = 0;  // ranges/marks inside the window (then written or dropped)
  uint64_t events_dropped = 0;   // recorded but not buffered: PYPROF_BUFFER_MB reached
  uint64_t events_outside_window = 0;
  uint64_t unbalanced_pops = 0;
  uint64_t messages_truncated = 0;
  uint64_t memory_recorded =
      0;                        // allocations and frees inside the window (then written or dropped)
  uint64_t memory_dropped = 0;  // recorded but not buffered: PYPROF_BUFFER_MB reached
  uint64_t memory_outside_window = 0;
};

class ThreadBuffer {
 public:
  ThreadBuffer(uint32_t tid, uint64_t global_tid) : tid(tid), global_tid(global_tid) {}

  // Taken by the owning thread around every NVTX call (uncontended), and by the writer when it
  // collects a partial chunk or finalizes. Guards every member below.
  SpinMutex mutex;

  uint32_t tid;
  uint64_t global_tid;
  size_t record_index = 0;  // into the collector's list of threads seen (registry lock)
  bool exited = false;      // the OS thread is gone; the writer may reclaim the buffer
  bool sealed = false;      // finalization collected this buffer; later events are only counted
  std::unique_ptr<EventChunk> chunk;  // completed events not yet handed to the writer
  ThreadCounters counters;

  // Opens a range in `domain_id`; returns its 0-based nesting level (the NVTX return value).
  int push(uint32_t domain_id, int64_t start, const EventAttributes& attrs, std::string_view text) {
    if (domain_id >= stacks_.size()) stacks_.resize(domain_id + 1);
    RangeStack& stack = stacks_[domain_id];
    OpenRange range;
    range.start = start;
    range.attrs = attrs;
    range.text_offset = static_cast<uint32_t>(stack.text.size());
    range.text_length = static_cast<uint32_t>(text.size());
    stack.text.append(text);
    stack.ranges.push_back(range);
    return static_cast<int>(stack.ranges.size()) - 1;
  }

  // Closes the innermost range of `domain_id`: calls on_range(range, text) and returns the
  // range's level, or returns -1 (NVTX's error value) if the domain has no open range.
  template <class Fn>
  int pop(uint32_t domain_id, const Fn& on_range) {
    if (domain_id >= stacks_.size() || stacks_[domain_id].ranges.empty()) return -1;
    RangeStack& stack = stacks_[domain_id];
    const OpenRange& range = stack.ranges.back();
    on_range(range, std::string_view(stack.text).substr(range.text_offset, range.text_length));
    stack.text.resize(range.text_offset);
    stack.ranges.pop_back();
    return static_cast<int>(stack.ranges.size());
  }

  // Calls fn(domain_id, range, text) for every open range, outermost first.
  template <class Fn>
  void for_each_open_range(const Fn& fn) const {
    for (uint32_t domain_id = 0; domain_id < stacks_.size(); ++domain_id) {
      const RangeStack& stack = stacks_[domain_id];
      for (const OpenRange& range : stack.ranges) {
        fn(domain_id, range,
           std::string_view(stack.text).substr(range.text_offset, range.text_length));
      }
    }
  }

  bool has_open_ranges() const;

 private:
  std::vector<RangeStack> stacks_;  // indexed by domain id
};

}  // namespace pyprof::collect
