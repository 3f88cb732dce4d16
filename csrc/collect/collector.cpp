// The collector's start-up and its NVTX event API: thread registration, the capture window,
// ranges, marks and descriptive calls recorded into per-thread chunks that go to the writer.
#include "collector.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "clock.h"
#include "collector_internal.h"
#include "common/nsys_schema.h"
#include "diagnostics.h"

namespace pyprof::collect {

std::atomic<Collector*> Collector::instance_{nullptr};

namespace detail {

constinit thread_local ThreadCache t_cache;

uint32_t current_tid() { return static_cast<uint32_t>(::gettid()); }

std::string current_thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

}  // namespace detail

namespace {

using detail::current_thread_name;
using detail::current_tid;
using detail::kNeverBegun;
using detail::t_cache;
using detail::ThreadCache;
using nsys::NvtxEventType;

// Written chunks kept for reuse, with their capacity; more are freed.
constexpr size_t kMaxSpareChunks = 16;

// Tells the collector when a thread that used NVTX exits (its buffer can then be reclaimed once
// drained). A separate object because t_cache must stay trivially destructible: NVTX calls from
// other thread_local destructors may still read it.
struct ThreadExitNotifier {
  bool armed = false;
  ~ThreadExitNotifier() {
    Collector* collector = Collector::instance();
    if (armed && collector != nullptr && t_cache.buffer != nullptr) {
      collector->on_thread_exit(t_cache.buffer);
    }
    t_cache = {};
  }
};
thread_local ThreadExitNotifier t_exit_notifier;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Start-up
// ---------------------------------------------------------------------------------------------

Collector* Collector::initialize() noexcept {
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      auto* collector = new Collector();  // never deleted, see instance()
      collector->start();
      instance_.store(collector, std::memory_order_release);
      // Hooks last: they look the collector up through instance().
      detail::install_exit_hook();
      detail::install_fork_hooks();
      detail::install_signal_handlers();
    });
  } catch (...) {
    // Without a collector NVTX calls stay unrecorded; never take the application down.
  }
  return instance();
}

void Collector::start() noexcept {
  try {
    const int64_t mono = monotonic_ns();
    config_ = CollectorConfig::from_environment(mono, realtime_ns());
    // With a cudaProfilerApi capture range nothing is recorded until cudaProfilerStart().
    window_begin_.store(config_.capture_range_cuda_profiler ? kNeverBegun
                                                            : config_.window_begin_ns());
    window_end_.store(config_.window_end_ns());
    pid_ = ::getpid();
    process_ = read_process_info(pid_);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    std::lock_guard lock(lifecycle_mutex_);
    choose_output_file();
    start_writer();
  } catch (...) {
  }
}

int64_t Collector::now() const noexcept { return monotonic_ns() - config_.session_start_mono_ns; }

bool Collector::choose_output_file() noexcept {
  if (output_path_ready_.load(std::memory_order_acquire)) return true;
  try {
    std::string error;
    std::optional<std::string> path = create_output_file(config_, pid_, forked_child_, &error);
    if (!path) {
      print_line("cannot create an output file (pid %d): %s", static_cast<int>(pid_),
                 error.c_str());
      return false;
    }
    output_path_ = std::move(*path);
    output_path_ready_.store(true, std::memory_order_release);
    return true;
  } catch (...) {
    return false;
  }
}

const char* Collector::output_path() const noexcept {
  return output_path_ready_.load(std::memory_order_acquire) ? output_path_.c_str() : nullptr;
}

// ---------------------------------------------------------------------------------------------
// The capture range
// ---------------------------------------------------------------------------------------------

bool Collector::begin_capture() noexcept {
  if (capture_starts_.fetch_add(1) != 0) return false;
  window_begin_.store(std::max(now(), config_.window_begin_ns()));
  return true;
}

bool Collector::end_capture() noexcept {
  if (capture_starts_.load() == 0 || capture_stops_.fetch_add(1) != 0) return false;
  window_end_.store(std::min(now(), config_.window_end_ns()));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Hot path
// ---------------------------------------------------------------------------------------------

ThreadBuffer* Collector::recording_thread(std::atomic<uint64_t>& after_shutdown) noexcept {
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase != kRecording && (phase != kChildNotStarted || !resume_in_child())) {
    after_shutdown.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const ThreadCache& cache = t_cache;
  if (cache.buffer != nullptr && cache.generation == generation_.load(std::memory_order_relaxed)) {
    return cache.buffer;
  }
  ThreadBuffer* buffer = register_current_thread();
  if (buffer == nullptr) after_shutdown.fetch_add(1, std::memory_order_relaxed);
  return buffer;
}

ThreadBuffer* Collector::register_current_thread() noexcept {
  try {
    const uint32_t tid = current_tid();
    const uint64_t global_tid = nsys::global_tid(static_cast<uint32_t>(pid_), tid);
    auto buffer = std::make_unique<ThreadBuffer>(tid, global_tid);
    ThreadBuffer* raw = buffer.get();
    std::string name = current_thread_name();
    {
      std::lock_guard lock(registry_mutex_);
      if (registry_sealed_) return nullptr;
      threads_seen_.push_back({tid, global_tid, std::move(name), false});
      raw->record_index = threads_seen_.size() - 1;
      buffers_.push_back(std::move(buffer));
    }
    t_cache.buffer = raw;
    t_cache.generation = generation_.load(std::memory_order_relaxed);
    t_exit_notifier.armed = true;  // first use registers its destructor for this thread
    return raw;
  } catch (...) {
    return nullptr;
  }
}

void Collector::on_thread_exit(ThreadBuffer* buffer) noexcept {
  try {
    std::string name = current_thread_name();
    std::lock_guard lock(registry_mutex_);
    std::lock_guard buffer_lock(buffer->mutex);
    if (buffer->record_index < threads_seen_.size()) {
      ThreadRecord& record = threads_seen_[buffer->record_index];
      if (!name.empty()) record.name = std::move(name);
      record.exited = true;
    }
    buffer->exited = true;
  } catch (...) {
  }
}

int Collector::push_range(uint32_t domain_id, const EventAttributes& attrs,
                          BoundedText text) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return kNoPushPopTracking;
  const int64_t start = now();
  try {
    std::lock_guard lock(buffer->mutex);
    if (text.truncated) ++buffer->counters.messages_truncated;
    return buffer->push(domain_id, start, attrs, text.text);
  } catch (...) {
    return kNoPushPopTracking;
  }
}

int Collector::pop_range(uint32_t domain_id) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return kNoPushPopTracking;
  const int64_t end = now();
  try {
    std::lock_guard lock(buffer->mutex);
    const int level = buffer->pop(domain_id, [&](const OpenRange& range, std::string_view text) {
      if (!range_in_window(range.start, end)) {
        ++buffer->counters.events_outside_window;
        return;
      }
      CompletedEvent event;
      event.start = range.start;
      event.end = end;
      event.has_end = true;
      event.event_type = NvtxEventType::kPushPopRange;
      event.global_tid = buffer->global_tid;
      event.attrs = range.attrs;
      event.domain_id = domain_id;
      append_locked(*buffer, event, text, end);
    });
    if (level < 0) ++buffer->counters.unbalanced_pops;
    return level;
  } catch (...) {
    return kNoPushPopTracking;
  }
}

uint64_t Collector::start_range(uint32_t domain_id, const EventAttributes& attrs,
                                BoundedText text) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return 0;
  const int64_t start = now();
  const uint64_t range_id = next_range_id_.fetch_add(1, std::memory_order_relaxed);
  if (text.truncated) other_messages_truncated_.fetch_add(1, std::memory_order_relaxed);
  try {
    OpenStartEndRange range{start, buffer->global_tid, domain_id, attrs, std::string(text.text)};
    std::lock_guard lock(start_end_mutex_);
    start_end_ranges_.emplace(range_id, std::move(range));
  } catch (...) {
  }
  return range_id;
}

void Collector::end_range(uint64_t range_id) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return;
  const int64_t end = now();
  try {
    decltype(start_end_ranges_)::node_type node;
    {
      std::lock_guard lock(start_end_mutex_);
      node = start_end_ranges_.extract(range_id);
    }
    if (node.empty()) {
      unknown_range_ends_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const OpenStartEndRange& range = node.mapped();
    std::lock_guard lock(buffer->mutex);
    if (!range_in_window(range.start, end)) {
      ++buffer->counters.events_outside_window;
      return;
    }
    CompletedEvent event;
    event.start = range.start;
    event.end = end;
    event.has_end = true;
    event.event_type = NvtxEventType::kStartEndRange;
    event.range_id = range_id;
    event.global_tid = range.global_tid;
    // nsys sets endGlobalTid only for ranges that end on another thread.
    event.end_global_tid = buffer->global_tid != range.global_tid ? buffer->global_tid : 0;
    event.attrs = range.attrs;
    event.domain_id = range.domain_id;
    append_locked(*buffer, event, range.text, end);
  } catch (...) {
  }
}

void Collector::mark(uint32_t domain_id, const EventAttributes& attrs, BoundedText text) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return;
  const int64_t time = now();
  try {
    std::lock_guard lock(buffer->mutex);
    if (text.truncated) ++buffer->counters.messages_truncated;
    if (time < window_begin() || time >= window_end()) {
      ++buffer->counters.events_outside_window;
      return;
    }
    CompletedEvent event;
    event.start = time;
    event.event_type = NvtxEventType::kMark;
    event.global_tid = buffer->global_tid;
    event.attrs = attrs;
    event.domain_id = domain_id;
    append_locked(*buffer, event, text.text, time);
  } catch (...) {
  }
}

void Collector::append_locked(ThreadBuffer& buffer, const CompletedEvent& event,
                              std::string_view text, int64_t now) noexcept {
  if (buffer.sealed) {
    count_call_after_shutdown();
    return;
  }
  ++buffer.counters.events_recorded;
  try {
    const size_t held = buffer.chunk ? buffer.chunk->bytes() : 0;
    const uint64_t needed =
        queued_bytes_.load(std::memory_order_relaxed) + held + sizeof(CompletedEvent) + text.size();
    if (needed > config_.buffer_limit_bytes) {
      // Over PYPROF_BUFFER_MB: hand what we hold to the writer so the backlog can drain, and
      // drop this event (counted; reported at finalization).
      if (held > 0) hand_off_locked(buffer);
      ++buffer.counters.events_dropped;
      return;
    }
    if (!buffer.chunk) buffer.chunk = acquire_chunk();
    if (buffer.chunk->empty()) buffer.chunk->first_event_time = now;
    buffer.chunk->add(event, text);
    if (buffer.chunk->full()) hand_off_locked(buffer);
  } catch (...) {
    ++buffer.counters.events_dropped;
  }
}

void Collector::hand_off_locked(ThreadBuffer& buffer) noexcept {
  std::unique_ptr<EventChunk> chunk = std::move(buffer.chunk);
  if (!chunk || chunk->empty()) return;
  chunk->accounted_bytes = chunk->bytes();
  const size_t bytes = chunk->accounted_bytes;
  const size_t events = chunk->events.size();
  const size_t memory = chunk->memory.size();
  try {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(std::move(chunk));
    queued_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  } catch (...) {
    buffer.counters.events_dropped += events;
    buffer.counters.memory_dropped += memory;
    return;
  }
  wake_writer();
}

std::unique_ptr<EventChunk> Collector::acquire_chunk() {
  {
    std::lock_guard lock(spare_mutex_);
    if (!spare_chunks_.empty()) {
      std::unique_ptr<EventChunk> chunk = std::move(spare_chunks_.back());
      spare_chunks_.pop_back();
      return chunk;
    }
  }
  // Full capacity up front: growing by doubling would copy every event once more.
  auto chunk = std::make_unique<EventChunk>();
  chunk->events.reserve(EventChunk::kMaxEvents);
  return chunk;
}

void Collector::recycle_chunk(std::unique_ptr<EventChunk> chunk) noexcept {
  try {
    chunk->clear();
    std::lock_guard lock(spare_mutex_);
    if (spare_chunks_.size() < kMaxSpareChunks) spare_chunks_.push_back(std::move(chunk));
  } catch (...) {
  }
}

// ---------------------------------------------------------------------------------------------
// Memory capture
// ---------------------------------------------------------------------------------------------

void Collector::memory_event(MemoryEvent event) noexcept {
  ThreadBuffer* buffer = recording_thread(memory_after_shutdown_);
  if (buffer == nullptr) return;
  event.time = now();
  std::lock_guard lock(buffer->mutex);
  if (event.time < window_begin() || event.time >= window_end()) {
    ++buffer->counters.memory_outside_window;
    return;
  }
  event.global_tid = buffer->global_tid;
  append_memory_locked(*buffer, event);
}

void Collector::append_memory_locked(ThreadBuffer& buffer, const MemoryEvent& event) noexcept {
  if (buffer.sealed) {
    memory_after_shutdown_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ++buffer.counters.memory_recorded;
  try {
    const size_t held = buffer.chunk ? buffer.chunk->bytes() : 0;
    const uint64_t needed = queued_bytes_.load(std::memory_order_relaxed) + held + sizeof(event);
    if (needed > config_.buffer_limit_bytes) {
      if (held > 0) hand_off_locked(buffer);  // as append_locked: let the backlog drain
      ++buffer.counters.memory_dropped;
      return;
    }
    if (!buffer.chunk) buffer.chunk = acquire_chunk();
    if (buffer.chunk->empty()) buffer.chunk->first_event_time = event.time;
    buffer.chunk->add_memory(event);
    if (buffer.chunk->full()) hand_off_locked(buffer);
  } catch (...) {
    ++buffer.counters.memory_dropped;
  }
}

void Collector::memory_device(MemoryDeviceRow row) noexcept {
  try {
    row.start = now();
    const ThreadCache& cache = t_cache;
    if (cache.buffer != nullptr && cache.generation == generation_.load()) {
      row.global_tid = cache.buffer->global_tid;
    }
    memory_notes_.add_device(std::move(row));
    wake_writer();
  } catch (...) {
  }
}

void Collector::set_memory_capture(std::string status, uint64_t ops_unseen) noexcept {
  try {
    memory_notes_.set_capture(std::move(status), ops_unseen);
  } catch (...) {
  }
}

// ---------------------------------------------------------------------------------------------
// Descriptive NVTX calls (domains, categories, thread names, registered strings)
// ---------------------------------------------------------------------------------------------

void Collector::add_metadata_row(CompletedEvent event, std::string_view text) noexcept {
  try {
    event.start = now();
    event.attrs.has_text = event.event_type != NvtxEventType::kDomainDestroy;
    metadata_.add(event, text);
  } catch (...) {
  }
}

void Collector::name_category(uint32_t domain_id, uint32_t category, BoundedText name) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return;
  if (name.truncated) other_messages_truncated_.fetch_add(1, std::memory_order_relaxed);
  CompletedEvent event;
  event.event_type = NvtxEventType::kCategory;
  event.global_tid = buffer->global_tid;
  event.domain_id = domain_id;
  event.attrs.category = category;
  add_metadata_row(event, name.text);
}

void Collector::name_os_thread(uint32_t os_tid, BoundedText name) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return;
  if (name.truncated) other_messages_truncated_.fetch_add(1, std::memory_order_relaxed);
  CompletedEvent event;
  event.event_type = NvtxEventType::kThread;
  event.global_tid = nsys::global_tid(static_cast<uint32_t>(pid_), os_tid);
  add_metadata_row(event, name.text);
}

uint32_t Collector::create_domain(BoundedText name) noexcept {
  try {
    // Handles are handed out even after finalization: an application may treat a NULL domain
    // as an error. Only the 75 row depends on recording.
    bool created = false;
    const uint32_t domain_id = domains_.find_or_create(name.text, &created);
    if (created) {
      ThreadBuffer* buffer = recording_thread();
      if (buffer != nullptr) {
        if (name.truncated) other_messages_truncated_.fetch_add(1, std::memory_order_relaxed);
        CompletedEvent event;
        event.event_type = NvtxEventType::kDomainCreate;
        event.global_tid = buffer->global_tid;
        event.domain_id = domain_id;
        add_metadata_row(event, name.text);
      }
    }
    return domain_id;
  } catch (...) {
    return 0;
  }
}

void Collector::destroy_domain(uint32_t domain_id) noexcept {
  ThreadBuffer* buffer = recording_thread();
  if (buffer == nullptr) return;
  CompletedEvent event;
  event.event_type = NvtxEventType::kDomainDestroy;
  event.global_tid = buffer->global_tid;
  event.domain_id = domain_id;
  add_metadata_row(event, {});
}

uint64_t Collector::register_string(BoundedText value) noexcept {
  try {
    if (value.truncated) other_messages_truncated_.fetch_add(1, std::memory_order_relaxed);
    return strings_.intern(value.text);
  } catch (...) {
    return 0;
  }
}

}  // namespace pyprof::collect
