// The records the collector keeps between an NVTX call and the SQLite row it becomes.
//
//   NVTX push/start ──> OpenRange (per thread, per domain stack; or the global start/end map)
//   NVTX pop/end/mark ──> CompletedEvent in an EventChunk ──> queue ──> writer ──> NVTX_EVENTS
//   pyprof_collect_memory_event ──> MemoryEvent in the same chunk ──> PYPROF_MEMORY_EVENTS
//
// Texts never live inside the records: an OpenRange points into its stack's byte buffer and a
// CompletedEvent into its chunk's byte arena, so steady-state recording does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/capture_limits.h"
#include "common/nsys_schema.h"

namespace pyprof::collect {

// Longest message kept, in bytes of UTF-8. Longer ones are cut at a character boundary.
inline constexpr size_t kMaxMessageBytes = 64 * 1024;

using PayloadType = nsys::PayloadType;

union PayloadValue {
  uint64_t u64;
  int64_t i64;
  double f64;
  uint32_t u32;
  int32_t i32;
  float f32;
};

// What an NVTX call says about an event, apart from the message bytes.
struct EventAttributes {
  uint64_t text_id = 0;  // StringIds id of a registered-string message; 0 = none
  PayloadValue payload{.u64 = 0};
  uint32_t category = 0;  // 0 = no category (NVTX default) -> NULL
  uint32_t color = 0;     // ARGB, meaningful iff has_color
  PayloadType payload_type = PayloadType::kNone;
  bool has_color = false;
  bool has_text = false;  // message was ASCII/Unicode; the text itself may be empty
};

// A push/pop range that has been pushed but not popped yet.
struct OpenRange {
  int64_t start = 0;  // ns since session start
  EventAttributes attrs;
  uint32_t text_offset = 0;  // into the owning RangeStack::text
  uint32_t text_length = 0;
};

// One future NVTX_EVENTS row.
struct CompletedEvent {
  int64_t start = 0;  // ns since session start
  int64_t end = 0;    // ns since session start; meaningful iff has_end
  uint64_t global_tid = 0;
  uint64_t end_global_tid = 0;  // 0 -> NULL (set only when a start/end range ends elsewhere)
  uint64_t range_id = 0;        // 0 -> NULL (start/end ranges only)
  EventAttributes attrs;
  uint32_t domain_id = 0;  // 0 = default domain
  uint32_t text_offset = 0;
  uint32_t text_length = 0;
  nsys::NvtxEventType event_type = nsys::NvtxEventType::kMark;
  bool has_end = false;
};

// One allocation (bytes > 0) or free (bytes < 0) of a PyTorch allocator, reported on the thread
// that made it (csrc/annotate/memory_capture.h), with the allocator's totals after it. One future
// PYPROF_MEMORY_EVENTS row.
struct MemoryEvent {
  int64_t time = 0;  // ns since session start
  uint64_t global_tid = 0;
  uint64_t address = 0;
  int64_t bytes = 0;
  uint64_t total_allocated = 0;  // bytes the allocator holds for tensors on this device, after it
  uint64_t total_reserved = 0;   // bytes it holds from the system (CUDA caching allocator; CPU: 0)
  int32_t device_type = 0;       // c10::DeviceType: 0 CPU, 1 CUDA
  int32_t device_index = -1;     // -1: the CPU
};

// A batch of completed events of one thread, moved as a whole to the writer.
struct EventChunk {
  // A thread hands its chunk to the writer when either limit is reached.
  static constexpr size_t kMaxEvents = kEventsPerThreadChunk;
  static constexpr size_t kMaxMemoryEvents = kEventsPerThreadChunk;
  static constexpr size_t kMaxTextBytes = 1 << 20;

  std::vector<CompletedEvent> events;
  std::string text;                 // message bytes of all events, back to back
  std::vector<MemoryEvent> memory;  // allocations and frees, in the order they happened
  int64_t first_event_time = 0;     // ns since session start of the first event (idle detection)
  size_t accounted_bytes = 0;       // what was added to the queued-bytes total at hand-off

  void add(CompletedEvent event, std::string_view message) {
    event.text_offset = static_cast<uint32_t>(text.size());
    event.text_length = static_cast<uint32_t>(message.size());
    text.append(message);
    events.push_back(event);
  }
  std::string_view text_of(const CompletedEvent& event) const {
    return std::string_view(text).substr(event.text_offset, event.text_length);
  }
  void add_memory(const MemoryEvent& event) {
    // Full capacity at the first one: growing by doubling would copy every event once more.
    if (memory.capacity() == 0) memory.reserve(kMaxMemoryEvents);
    memory.push_back(event);
  }
  bool empty() const { return events.empty() && memory.empty(); }
  bool full() const {
    return events.size() >= kMaxEvents || text.size() >= kMaxTextBytes ||
           memory.size() >= kMaxMemoryEvents;
  }
  // Memory the buffered events stand for, used for the PYPROF_BUFFER_MB limit.
  size_t bytes() const {
    return events.size() * sizeof(CompletedEvent) + text.size() +
           memory.size() * sizeof(MemoryEvent);
  }
  // Empties the chunk but keeps its capacity, so a recycled chunk does not allocate again.
  void clear() {
    events.clear();
    text.clear();
    memory.clear();
    first_event_time = 0;
    accounted_bytes = 0;
  }
};

}  // namespace pyprof::collect
