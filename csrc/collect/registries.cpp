#include "registries.h"

#include <utility>

namespace pyprof::collect {

uint64_t StringTable::intern(std::string_view value) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = ids_.try_emplace(std::string(value), 0);
  if (inserted) {
    values_.emplace_back(value);
    it->second = values_.size();
    count_.store(values_.size(), std::memory_order_release);
  }
  return it->second;
}

std::vector<StringRow> StringTable::take_unwritten() {
  std::lock_guard lock(mutex_);
  std::vector<StringRow> rows;
  rows.reserve(values_.size() - written_);
  for (; written_ < values_.size(); ++written_) {
    rows.push_back({written_ + 1, values_[written_]});
  }
  return rows;
}

void StringTable::mark_all_unwritten() {
  std::lock_guard lock(mutex_);
  written_ = 0;
}

uint32_t DomainTable::find_or_create(std::string_view name, bool* created) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = ids_.try_emplace(std::string(name), 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(ids_.size());
    count_.store(it->second, std::memory_order_release);
  }
  if (created != nullptr) *created = inserted;
  return it->second;
}

void MetadataLog::add(const CompletedEvent& event, std::string_view text) {
  std::lock_guard lock(mutex_);
  rows_.add(event, text);
}

void MetadataLog::take_unwritten(EventChunk& out) {
  std::lock_guard lock(mutex_);
  for (; written_ < rows_.events.size(); ++written_) {
    const CompletedEvent& event = rows_.events[written_];
    out.add(event, rows_.text_of(event));
  }
}

void MetadataLog::reset_for_child(uint64_t child_global_tid) {
  std::lock_guard lock(mutex_);
  EventChunk kept;
  for (CompletedEvent event : rows_.events) {
    if (event.event_type == nsys::NvtxEventType::kThread) continue;
    const std::string_view text = rows_.text_of(event);
    event.global_tid = child_global_tid;
    kept.add(event, text);
  }
  rows_ = std::move(kept);
  written_ = 0;
}

void MemoryNotes::add_device(MemoryDeviceRow row) {
  std::lock_guard lock(mutex_);
  devices_.push_back(std::move(row));
}

std::vector<MemoryDeviceRow> MemoryNotes::take_devices() {
  std::lock_guard lock(mutex_);
  return std::exchange(devices_, {});
}

void MemoryNotes::set_capture(std::string status, uint64_t ops_unseen) {
  std::lock_guard lock(mutex_);
  status_ = std::move(status);
  ops_unseen_ = ops_unseen;
}

std::string MemoryNotes::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

uint64_t MemoryNotes::ops_unseen() const {
  std::lock_guard lock(mutex_);
  return ops_unseen_;
}

void MemoryNotes::reset_for_child() {
  std::lock_guard lock(mutex_);
  devices_.clear();
  ops_unseen_ = 0;
}

}  // namespace pyprof::collect
