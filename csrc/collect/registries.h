// Process-wide NVTX objects that outlive any one thread: registered strings, domains, and the
// descriptive NVTX_EVENTS rows (domain create/destroy, category and thread names); and what the
// annotator says about memory capture (device facts, its status).
//
// Handles given to NVTX are the ids themselves (cast to pointers): they are never dereferenced,
// so a stale or foreign handle can be rejected by a range check instead of crashing.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db_rows.h"
#include "event_types.h"

namespace pyprof::collect {

// StringIds. Ids are assigned here, when NVTX registers a string, because the handle must be
// returned at once; the writer copies new rows into the database later. Equal values share one
// id, so a string registered in several domains (or also used as a thread name) is stored once.
class StringTable {
 public:
  uint64_t intern(std::string_view value);
  bool contains(uint64_t id) const noexcept {
    return id != 0 && id <= count_.load(std::memory_order_acquire);
  }
  // Rows not yet handed out; they count as written from now on.
  std::vector<StringRow> take_unwritten();
  // Fork child: its new database needs every string again.
  void mark_all_unwritten();
  std::mutex& mutex() { return mutex_; }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> values_;  // values_[id - 1]
  size_t written_ = 0;
  std::atomic<uint64_t> count_{0};
};

// Domain ids: 0 is the default domain, created domains count from 1. The same name always gets
// the same id: every shared object that uses NVTX creates its own "pyprof" domain handle.
class DomainTable {
 public:
  uint32_t find_or_create(std::string_view name, bool* created);
  bool contains(uint32_t id) const noexcept { return id <= count_.load(std::memory_order_acquire); }
  std::mutex& mutex() { return mutex_; }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::atomic<uint32_t> count_{0};
};

// NVTX_EVENTS rows that describe the program rather than time it (eventType 33, 39, 75, 76).
// They bypass the capture window and the buffer limit: a range outside the window is useless,
// but a missing domain name would mislabel every range inside it.
class MetadataLog {
 public:
  void add(const CompletedEvent& event, std::string_view text);
  // Appends the rows not yet handed out to `out`.
  void take_unwritten(EventChunk& out);
  // Fork child: keep domain and category rows (still true in the child), re-attributed to the
  // forking thread so their pid bits are the child's, and drop thread names (they name the
  // parent's threads). Everything kept must be written again.
  void reset_for_child(uint64_t child_global_tid);
  std::mutex& mutex() { return mutex_; }

 private:
  std::mutex mutex_;
  EventChunk rows_;
  size_t written_ = 0;
};

// What memory capture says about itself besides the allocations (pyprof_collect_memory_device,
// pyprof_collect_memory_capture): the PYPROF_MEMORY_DEVICES rows, written by the writer as they
// come, and the status and count written at finalization. Rare calls: one lock is enough.
class MemoryNotes {
 public:
  void add_device(MemoryDeviceRow row);
  std::vector<MemoryDeviceRow> take_devices();
  void set_capture(std::string status, uint64_t ops_unseen);
  // The META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE value ("" when the annotator never said) and the
  // memory_ops_unseen count.
  std::string status() const;
  uint64_t ops_unseen() const;
  // Fork child: the parent writes the rows it was given; the status stays true in the child, but
  // the ops counted so far are the parent's.
  void reset_for_child();
  std::mutex& mutex() { return mutex_; }

 private:
  mutable std::mutex mutex_;
  std::vector<MemoryDeviceRow> devices_;
  std::string status_;
  uint64_t ops_unseen_ = 0;
};

}  // namespace pyprof::collect
