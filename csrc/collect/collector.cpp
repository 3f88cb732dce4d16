#include "collector.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "clock.h"
#include "common/nsys_schema.h"
#include "diagnostics.h"

namespace pyprof::collect {

std::atomic<Collector*> Collector::instance_{nullptr};

namespace {

using nsys::NvtxEventType;

// The writer wakes at least this often, and hands partial chunks of threads idle this long.
constexpr int64_t kWriterTickNs = 500'000'000;
constexpr int kWriterPollMs = 500;
constexpr size_t kMaxSpareChunks = 16;
// At most this many chunks (4096 events each) per SQLite transaction of the writer loop.
constexpr size_t kChunksPerTransaction = 16;
// Finalization waits at most this long for one thread's buffer lock.
constexpr int64_t kFinalLockTimeoutNs = 1'000'000'000;
// window_begin_ while a cudaProfilerApi capture range has not started: no range can overlap.
constexpr int64_t kNeverBegun = std::numeric_limits<int64_t>::max();

// The calling thread's buffer. `generation` must match Collector::generation_: a fork child bumps
// it, so a pointer cached in the parent is never trusted after fork.
struct ThreadCache {
  ThreadBuffer* buffer = nullptr;
  uint64_t generation = 0;
};
thread_local ThreadCache t_cache;

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

uint32_t current_tid() { return static_cast<uint32_t>(::gettid()); }

std::string current_thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// The OS name of a live thread of this process ("" if it is gone).
std::string live_thread_name(uint32_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/comm";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char name[64];
  const ssize_t n = ::read(fd, name, sizeof(name));
  ::close(fd);
  std::string result(name, n > 0 ? static_cast<size_t>(n) : 0);
  while (!result.empty() && result.back() == '\n') result.pop_back();
  return result;
}

// The *_written GPU counters of `from`, added once their transaction has committed.
void add_gpu_written(CollectorStats& into, const CollectorStats& from) {
  into.kernels_written += from.kernels_written;
  into.api_calls_written += from.api_calls_written;
  into.memcpys_written += from.memcpys_written;
  into.memsets_written += from.memsets_written;
  into.syncs_written += from.syncs_written;
  into.gpus_written += from.gpus_written;
}

void add_counters(ThreadCounters& into, const ThreadCounters& from) {
  into.events_recorded += from.events_recorded;
  into.events_dropped += from.events_dropped;
  into.events_outside_window += from.events_outside_window;
  into.unbalanced_pops += from.unbalanced_pops;
  into.messages_truncated += from.messages_truncated;
}

struct Tally {
  uint64_t events = 0;  // ranges + marks
  uint64_t ranges = 0;
  uint64_t marks = 0;
  void add(const EventChunk& chunk) {
    for (const CompletedEvent& event : chunk.events) {
      if (event.event_type == NvtxEventType::kMark) {
        ++marks;
        ++events;
      } else if (event.event_type == NvtxEventType::kPushPopRange ||
                 event.event_type == NvtxEventType::kStartEndRange) {
        ++ranges;
        ++events;
      }
    }
  }
};

// Restores the default action and delivers the signal again, so the exit status says "killed
// by SIGTERM" as it would have without the collector.
void reraise(int signal_number) {
  signal(signal_number, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal_number);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal_number);
}

void exit_hook() {
  if (Collector* collector = Collector::instance()) collector->on_process_exit();
}

void signal_hook(int signal_number) {
  const int saved_errno = errno;
  if (Collector* collector = Collector::instance()) {
    collector->on_terminating_signal(signal_number);
  } else {
    reraise(signal_number);
  }
  errno = saved_errno;
}

void prepare_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->before_fork();
}
void parent_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->after_fork_in_parent();
}
void child_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->after_fork_in_child();
}

// SIGTERM/SIGHUP get our handler only where the program left the default (termination) action:
// a program that handles them itself keeps its handler. SIGINT is left alone on purpose: Python
// handles it (KeyboardInterrupt). An uncaught KeyboardInterrupt ends with Python re-raising
// SIGINT after finalization, which skips C atexit handlers, so pyprof.init() also registers
// pyprof_collect_shutdown() with Python's atexit.
void install_signal_handlers() {
  for (const int signal_number : {SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = signal_hook;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESTART;
    sigaction(signal_number, &ours, nullptr);
  }
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "signal";
  }
}

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
      std::atexit(exit_hook);
      pthread_atfork(prepare_fork_hook, parent_fork_hook, child_fork_hook);
      install_signal_handlers();
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
// GPU activity and the capture range
// ---------------------------------------------------------------------------------------------

void Collector::attach_gpu_trace(GpuTraceSource* source) noexcept { gpu_source_.store(source); }

bool Collector::gpu_buffer_allowed(uint64_t pending, uint64_t bytes) const noexcept {
  if (phase_.load(std::memory_order_relaxed) == kFinalized) return false;
  // One buffer is always allowed while nothing waits, so that a limit below one CUPTI buffer
  // slows recording down instead of stopping it.
  const uint64_t waiting = queued_bytes_.load(std::memory_order_relaxed) + pending;
  return waiting == 0 || waiting + bytes <= config_.buffer_limit_bytes;
}

void Collector::submit_gpu_batch(std::unique_ptr<GpuBatch> batch, uint64_t records) noexcept {
  if (!batch || batch->rows() == 0) return;
  try {
    const uint64_t bytes = batch->bytes();
    std::lock_guard lock(queue_mutex_);
    // Finalizing still accepts until the final write takes the queue: flush_for_exit() delivers
    // the last buffers then. Later batches would never be written, so they are counted.
    if (gpu_queue_closed_ || forked_child_) {
      gpu_records_after_shutdown_.fetch_add(records, std::memory_order_relaxed);
      return;
    }
    gpu_queue_.push_back(std::move(batch));
    queued_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  } catch (...) {
    gpu_records_after_shutdown_.fetch_add(records, std::memory_order_relaxed);
    return;
  }
  wake_writer();
}

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

void Collector::start_writer() noexcept {
  if (writer_thread_ != nullptr) return;
  stop_writer_.store(false);
  writer_exited_ = false;
  writer_running_.store(true);
  // The writer runs with every signal blocked, so the application's threads receive them.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    writer_thread_ = new std::thread([this] { writer_main(); });
    writer_thread_id_ = writer_thread_->get_id();
  } catch (...) {
    writer_running_.store(false);
    print_line("cannot start the writer thread (pid %d); events are written at exit",
               static_cast<int>(pid_));
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Hot path
// ---------------------------------------------------------------------------------------------

ThreadBuffer* Collector::recording_thread() noexcept {
  const int phase = phase_.load(std::memory_order_relaxed);
  if (phase != kRecording && (phase != kChildNotStarted || !resume_in_child())) {
    count_call_after_shutdown();
    return nullptr;
  }
  const ThreadCache& cache = t_cache;
  if (cache.buffer != nullptr && cache.generation == generation_.load(std::memory_order_relaxed)) {
    return cache.buffer;
  }
  ThreadBuffer* buffer = register_current_thread();
  if (buffer == nullptr) count_call_after_shutdown();
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
  try {
    std::lock_guard lock(queue_mutex_);
    queue_.push_back(std::move(chunk));
    queued_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  } catch (...) {
    buffer.counters.events_dropped += events;
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

// ---------------------------------------------------------------------------------------------
// Writer thread
// ---------------------------------------------------------------------------------------------

void Collector::wake_writer() noexcept {
  const uint64_t one = 1;
  // Best effort: the writer also wakes every 500 ms on its own.
  [[maybe_unused]] const ssize_t ignored = ::write(wake_fd_, &one, sizeof(one));
}

void Collector::writer_main() noexcept {
  pthread_setname_np(pthread_self(), "pyprof-writer");
  {
    std::lock_guard busy(writer_busy_);
    open_database_locked();
  }
  int64_t last_sweep = now();
  for (;;) {
    pollfd wake{wake_fd_, POLLIN, 0};
    ::poll(&wake, 1, kWriterPollMs);
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t ignored = ::read(wake_fd_, &count, sizeof(count));

    if (pending_signal_.load() != 0) {
      // Finalize here and re-raise (in finalize). If another thread is already finalizing, it
      // waits for this thread to leave and re-raises the signal itself.
      finalize(FinalizeReason::kSignal);
      break;
    }
    if (stop_writer_.load()) break;

    ChunkList chunks;
    GpuBatchList gpu_batches;
    {
      std::lock_guard lock(queue_mutex_);
      chunks.swap(queue_);
      gpu_batches.swap(gpu_queue_);
    }
    const int64_t time = now();
    if (time - last_sweep >= kWriterTickNs) {
      last_sweep = time;
      try {
        for (auto& chunk : collect_idle_chunks(time)) chunks.push_back(std::move(chunk));
      } catch (...) {
      }
    }
    write_batch(std::move(chunks), std::move(gpu_batches));
  }
  {
    std::lock_guard lock(lifecycle_mutex_);
    writer_exited_ = true;
    writer_running_.store(false);
  }
  lifecycle_cv_->notify_all();
}

void Collector::open_database_locked() noexcept {
  if (db_ || db_failed_) return;
  try {
    if (!output_path_ready_.load(std::memory_order_acquire)) {
      db_failed_ = true;
      db_error_ = "no output file could be created";
      return;
    }
    db_ = SqliteWriter::open(output_path_, &db_error_);
    if (!db_) {
      db_failed_ = true;
      print_line("cannot write %s: %s", output_path_.c_str(), db_error_.c_str());
      return;
    }
    process_.pid = pid_;
    const ProcessRow process{nsys::global_pid(static_cast<uint32_t>(pid_)), pid_, process_.name};
    const bool ok =
        db_->begin() &&
        db_->write_session_start({config_.session_start_utc_ns, config_.session_start_mono_ns}) &&
        db_->write_process(process) &&
        db_->write_metadata(MetadataTable::kExport, export_metadata()) &&
        db_->write_metadata(MetadataTable::kCapture,
                            capture_metadata(config_, &process_, output_path_)) &&
        db_->commit();
    if (!ok) {
      db_error_ = db_->last_error();
      db_->rollback();
      ++write_errors_;
    }
  } catch (...) {
    db_failed_ = true;
  }
}

Collector::ChunkList Collector::collect_idle_chunks(int64_t now) {
  ChunkList chunks;
  std::lock_guard lock(registry_mutex_);
  for (size_t i = 0; i < buffers_.size();) {
    ThreadBuffer& buffer = *buffers_[i];
    bool reclaim = false;
    if (!buffer.mutex.try_lock()) {  // busy recording: its chunk will come when full
      ++i;
      continue;
    }
    {
      std::lock_guard buffer_lock(buffer.mutex, std::adopt_lock);
      if (buffer.chunk && !buffer.chunk->empty() &&
          (buffer.exited || now - buffer.chunk->first_event_time >= kWriterTickNs)) {
        buffer.chunk->accounted_bytes = buffer.chunk->bytes();
        queued_bytes_.fetch_add(buffer.chunk->accounted_bytes, std::memory_order_relaxed);
        chunks.push_back(std::move(buffer.chunk));
      }
      // A buffer of an exited thread is dropped once nothing in it is pending; its counters
      // and its ThreadNames record stay.
      reclaim =
          buffer.exited && (!buffer.chunk || buffer.chunk->empty()) && !buffer.has_open_ranges();
      if (reclaim) add_counters(retired_counters_, buffer.counters);
    }
    if (reclaim) {
      buffers_.erase(buffers_.begin() + static_cast<ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return chunks;
}

void Collector::write_batch(ChunkList chunks, GpuBatchList gpu_batches) noexcept {
  try {
    EventChunk metadata;
    metadata_.take_unwritten(metadata);
    std::vector<StringRow> strings = strings_.take_unwritten();
    // Several transactions of a bounded size rather than one for the whole backlog: fork()
    // waits for writer_busy_, so no single hold may last long.
    size_t next = 0;
    do {
      const size_t count = std::min(kChunksPerTransaction, chunks.size() - next);
      const ChunkList::const_iterator first = chunks.begin() + static_cast<ptrdiff_t>(next);
      next += count;
      if (count == 0 && metadata.empty() && strings.empty()) break;
      Tally tally;
      for (auto chunk = first; chunk != first + static_cast<ptrdiff_t>(count); ++chunk) {
        tally.add(**chunk);
      }
      std::lock_guard busy(writer_busy_);
      bool ok = db_ && db_->begin() && db_->write_strings(strings) && db_->write_events(metadata);
      for (auto chunk = first; ok && chunk != first + static_cast<ptrdiff_t>(count); ++chunk) {
        ok = db_->write_events(**chunk);
      }
      ok = ok && db_->commit();
      if (ok) {
        events_written_ += tally.events;
        ranges_written_ += tally.ranges;
        marks_written_ += tally.marks;
      } else {
        if (db_) {
          db_error_ = db_->last_error();
          db_->rollback();
        }
        ++write_errors_;
        events_lost_in_writes_ += tally.events;
      }
      metadata.clear();
      strings.clear();
    } while (next < chunks.size());
    // One transaction per CUPTI buffer (tens of thousands of rows at most). Kernel names were
    // interned before their batch was queued, so the strings written above cover them.
    for (const auto& batch : gpu_batches) {
      std::lock_guard busy(writer_busy_);
      CollectorStats written;
      const bool ok = db_ && db_->begin() &&
                      write_gpu_batches_locked(std::span(&batch, 1), written) && db_->commit();
      if (ok) {
        add_gpu_written(gpu_written_, written);
      } else {
        if (db_) {
          db_error_ = db_->last_error();
          db_->rollback();
        }
        ++write_errors_;
        gpu_rows_lost_in_writes_ += batch->rows();
      }
    }
  } catch (...) {
  }
  for (auto& chunk : chunks) {
    queued_bytes_.fetch_sub(chunk->accounted_bytes, std::memory_order_relaxed);
    recycle_chunk(std::move(chunk));
  }
  release_gpu_batches(gpu_batches);
}

bool Collector::write_gpu_batches_locked(std::span<const std::unique_ptr<GpuBatch>> batches,
                                         CollectorStats& written) noexcept {
  for (const auto& batch : batches) {
    if (!db_->write_gpu_batch(*batch)) return false;
    written.kernels_written += batch->kernels.size();
    written.api_calls_written += batch->api_calls.size();
    written.memcpys_written += batch->memcpys.size();
    written.memsets_written += batch->memsets.size();
    written.syncs_written += batch->syncs.size();
    written.gpus_written += batch->gpus.size();
  }
  return true;
}

void Collector::release_gpu_batches(GpuBatchList& batches) noexcept {
  for (auto& batch : batches) {
    if (batch) queued_bytes_.fetch_sub(batch->bytes(), std::memory_order_relaxed);
  }
  batches.clear();
}

bool Collector::write_chunks_locked(const ChunkList& chunks, const EventChunk* extra) noexcept {
  for (const auto& chunk : chunks) {
    if (!db_->write_events(*chunk)) return false;
  }
  return extra == nullptr || db_->write_events(*extra);
}

// ---------------------------------------------------------------------------------------------
// Finalization
// ---------------------------------------------------------------------------------------------

int Collector::shutdown() noexcept { return finalize(FinalizeReason::kShutdownCall); }

void Collector::on_process_exit() noexcept { finalize(FinalizeReason::kExit); }

void Collector::on_terminating_signal(int signal_number) noexcept {
  // Async-signal-safe: atomics on lock-free types and write(2) only. The writer (or a thread
  // already finalizing) does the work; a second signal, or no one to do the work, ends the
  // process at once.
  const bool writer = writer_running_.load();
  const bool someone_finalizes = writer || phase_.load() == kFinalizing;
  int expected = 0;
  if (someone_finalizes && pending_signal_.compare_exchange_strong(expected, signal_number)) {
    if (writer) wake_writer();
    return;
  }
  reraise(signal_number);
}

int Collector::finalize(FinalizeReason reason) noexcept {
  bool on_writer_thread = false;
  {
    std::lock_guard lock(lifecycle_mutex_);
    on_writer_thread = writer_thread_ != nullptr && std::this_thread::get_id() == writer_thread_id_;
  }
  int phase = phase_.load();
  do {
    if (phase == kFinalizing || phase == kFinalized) {
      // Someone else finalizes. The writer must not wait: that someone may be waiting for it.
      return on_writer_thread ? -1 : wait_until_finalized();
    }
  } while (!phase_.compare_exchange_weak(phase, kFinalizing));

  int result = 0;
  bool writer_stopped = true;
  if (!on_writer_thread) {
    std::unique_lock lock(lifecycle_mutex_);
    if (writer_thread_ != nullptr) {
      stop_writer_.store(true);
      wake_writer();
      writer_stopped =
          lifecycle_cv_->wait_for(lock, std::chrono::nanoseconds(config_.finalize_timeout_ns),
                                  [this] { return writer_exited_; });
      if (writer_stopped) {
        writer_thread_->join();
        delete writer_thread_;
        writer_thread_ = nullptr;
      }
    }
  }
  if (writer_stopped) {
    result = write_final(reason);
    print_summary(result);
  } else {
    result = -1;
    print_line(
        "the writer did not finish within PYPROF_FINALIZE_TIMEOUT_S=%lld s; %s keeps "
        "what was written so far (pid %d)",
        static_cast<long long>(config_.finalize_timeout_ns / kNanosPerSecond),
        output_path_ready_.load() ? output_path_.c_str() : "the output file",
        static_cast<int>(pid_));
  }
  {
    std::lock_guard lock(lifecycle_mutex_);
    finalize_result_ = result;
    phase_.store(kFinalized);
  }
  lifecycle_cv_->notify_all();
  if (const int signal_number = pending_signal_.exchange(0); signal_number != 0) {
    reraise(signal_number);
  }
  return result;
}

int Collector::wait_until_finalized() noexcept {
  std::unique_lock lock(lifecycle_mutex_);
  const auto timeout =
      std::chrono::nanoseconds(config_.finalize_timeout_ns) + std::chrono::seconds(5);
  if (!lifecycle_cv_->wait_for(lock, timeout, [this] { return phase_.load() == kFinalized; })) {
    return -1;
  }
  return finalize_result_;
}

int Collector::write_final(FinalizeReason reason) noexcept {
  try {
    // CUPTI's last buffers first (outside writer_busy_: they arrive through submit_gpu_batch).
    GpuTraceSource* gpu_source = forked_child_ ? nullptr : gpu_source_.load();
    if (gpu_source != nullptr) gpu_source->flush_for_exit();
    std::lock_guard busy(writer_busy_);
    if (forked_child_) {
      std::lock_guard lock(lifecycle_mutex_);
      choose_output_file();
    }
    open_database_locked();

    ChunkList chunks;
    EventChunk unclosed;  // open ranges, written with end NULL
    ThreadCounters totals;
    size_t skipped_buffers = 0;
    std::vector<ThreadRecord> threads;
    {
      std::lock_guard lock(registry_mutex_);
      registry_sealed_ = true;
      totals = retired_counters_;
      for (auto& buffer : buffers_) {
        if (!buffer->mutex.try_lock_for(kFinalLockTimeoutNs)) {
          ++skipped_buffers;  // held by a thread that does not come back (see SpinMutex)
          continue;
        }
        std::lock_guard buffer_lock(buffer->mutex, std::adopt_lock);
        buffer->sealed = true;
        if (buffer->chunk && !buffer->chunk->empty()) {
          buffer->chunk->accounted_bytes = buffer->chunk->bytes();
          queued_bytes_.fetch_add(buffer->chunk->accounted_bytes, std::memory_order_relaxed);
          chunks.push_back(std::move(buffer->chunk));
        }
        buffer->for_each_open_range(
            [&](uint32_t domain_id, const OpenRange& range, std::string_view text) {
              if (range.start >= window_end() || window_begin() == kNeverBegun) {
                ++totals.events_outside_window;
                return;
              }
              CompletedEvent event;
              event.start = range.start;
              event.event_type = NvtxEventType::kPushPopRange;
              event.global_tid = buffer->global_tid;
              event.attrs = range.attrs;
              event.domain_id = domain_id;
              unclosed.add(event, text);
            });
        add_counters(totals, buffer->counters);
      }
      threads = threads_seen_;
    }
    if (skipped_buffers > 0) {
      print_line(
          "WARNING: %zu threads held their event buffers through finalization; their "
          "pending events are missing (pid %d)",
          skipped_buffers, static_cast<int>(pid_));
    }
    GpuBatchList gpu_batches;
    {
      std::lock_guard lock(queue_mutex_);
      for (auto& chunk : queue_) chunks.push_back(std::move(chunk));
      queue_.clear();
      gpu_batches.swap(gpu_queue_);
      gpu_queue_closed_ = true;
    }
    {
      std::lock_guard lock(start_end_mutex_);
      for (const auto& [range_id, range] : start_end_ranges_) {
        if (range.start >= window_end() || window_begin() == kNeverBegun) {
          ++totals.events_outside_window;
          continue;
        }
        CompletedEvent event;
        event.start = range.start;
        event.event_type = NvtxEventType::kStartEndRange;
        event.range_id = range_id;
        event.global_tid = range.global_tid;
        event.attrs = range.attrs;
        event.domain_id = range.domain_id;
        unclosed.add(event, range.text);
      }
    }

    // ThreadNames: one row per thread (the last name seen); live threads may have been renamed
    // since they first called NVTX.
    std::vector<ThreadNameRow> thread_names;
    std::unordered_set<uint64_t> named;
    for (auto record = threads.rbegin(); record != threads.rend(); ++record) {
      if (!named.insert(record->global_tid).second) continue;
      if (!record->exited) {
        std::string name = live_thread_name(record->tid);
        if (!name.empty()) record->name = std::move(name);
      }
      thread_names.push_back({record->global_tid, strings_.intern(record->name), std::nullopt});
    }

    EventChunk metadata;
    metadata_.take_unwritten(metadata);
    const std::vector<StringRow> strings = strings_.take_unwritten();

    Tally tally;
    for (const auto& chunk : chunks) tally.add(*chunk);
    tally.add(unclosed);

    CollectorStats& stats = final_stats_;
    stats.events_recorded = totals.events_recorded + unclosed.events.size();
    stats.events_written = events_written_ + tally.events;
    stats.events_dropped = totals.events_dropped + events_lost_in_writes_;
    stats.events_outside_window = totals.events_outside_window;
    stats.events_after_shutdown = events_after_shutdown_.load();
    stats.messages_truncated = totals.messages_truncated + other_messages_truncated_.load();
    stats.unclosed_ranges = unclosed.events.size();
    stats.unbalanced_pops = totals.unbalanced_pops;
    stats.unknown_range_ends = unknown_range_ends_.load();
    stats.threads = named.size();
    stats.ranges_written = ranges_written_ + tally.ranges;
    stats.marks_written = marks_written_ + tally.marks;
    stats.write_errors = write_errors_;
    stats.nvtx_inits = nvtx_inits_.load();
    uint64_t gpu_rows = 0;
    for (const auto& batch : gpu_batches) gpu_rows += batch->rows();
    CollectorStats gpu_final;
    if (gpu_source != nullptr) gpu_source->fill_stats(stats);
    add_gpu_written(stats, gpu_written_);
    stats.cupti_records_dropped += gpu_rows_lost_in_writes_;
    stats.cupti_records_after_shutdown += gpu_records_after_shutdown_.load();
    const MetadataRow cuda_trace =
        gpu_source != nullptr
            ? MetadataRow{std::string(nsys::kCudaTraceMetadata), gpu_source->status()}
            : cuda_trace_not_started_row(config_);

    const MetadataRow finalized_by{"FINALIZED_BY", reason == FinalizeReason::kExit ? "exit"
                                                   : reason == FinalizeReason::kShutdownCall
                                                       ? "pyprof_collect_shutdown"
                                                       : signal_name(pending_signal_.load())};
    // Rows of the final GPU batches are counted before they are written, so the stats row in
    // the same transaction is right; a failed transaction rolls back both.
    bool ok = db_ && db_->begin() && write_gpu_batches_locked(gpu_batches, gpu_final);
    add_gpu_written(stats, gpu_final);
    const MetadataRow capture_rows[] = {finalized_by, cuda_trace};
    ok = ok && db_->write_strings(strings) && db_->write_events(metadata) &&
         write_chunks_locked(chunks, &unclosed) && db_->write_thread_names(thread_names) &&
         db_->write_stats(stats.rows()) &&
         db_->write_metadata(MetadataTable::kExport, {{export_time_row(realtime_ns())}}) &&
         db_->write_metadata(MetadataTable::kCapture, capture_rows) && db_->commit();
    if (ok) {
      events_written_ = stats.events_written;
      ranges_written_ = stats.ranges_written;
      marks_written_ = stats.marks_written;
    } else {
      if (db_) {
        db_error_ = db_->last_error();
        db_->rollback();
      }
      stats.events_dropped += tally.events;
      stats.events_written -= tally.events;
      stats.ranges_written -= tally.ranges;
      stats.marks_written -= tally.marks;
      stats.cupti_records_dropped += gpu_rows;
      stats.kernels_written -= gpu_final.kernels_written;
      stats.api_calls_written -= gpu_final.api_calls_written;
      stats.memcpys_written -= gpu_final.memcpys_written;
      stats.memsets_written -= gpu_final.memsets_written;
      stats.syncs_written -= gpu_final.syncs_written;
      stats.gpus_written -= gpu_final.gpus_written;
    }
    for (auto& chunk : chunks) {
      queued_bytes_.fetch_sub(chunk->accounted_bytes, std::memory_order_relaxed);
    }
    release_gpu_batches(gpu_batches);
    db_.reset();  // closes the database
    return ok ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

void Collector::print_summary(int result) noexcept {
  const CollectorStats& stats = final_stats_;
  const char* path = output_path_ready_.load() ? output_path_.c_str() : "(no file)";
  if (result == 0) {
    print_line("wrote %s (pid %d): %llu ranges, %llu marks, %llu dropped", path,
               static_cast<int>(pid_), static_cast<unsigned long long>(stats.ranges_written),
               static_cast<unsigned long long>(stats.marks_written),
               static_cast<unsigned long long>(stats.events_dropped));
  } else {
    print_line("FAILED to write %s (pid %d): %s", path, static_cast<int>(pid_), db_error_.c_str());
  }
  if (stats.events_dropped > 0) {
    const unsigned long long limit = config_.buffer_limit_bytes;
    char limit_text[48];
    if (limit >= (1ULL << 20)) {
      std::snprintf(limit_text, sizeof(limit_text), "%llu MiB", limit >> 20);
    } else {
      std::snprintf(limit_text, sizeof(limit_text), "%llu bytes", limit);
    }
    print_line(
        "WARNING: %llu events dropped: more than %s were waiting to be written (raise the "
        "limit with PYPROF_BUFFER_MB)",
        static_cast<unsigned long long>(stats.events_dropped), limit_text);
  }
  if (gpu_source_.load() != nullptr && !forked_child_) {
    print_line("CUDA (pid %d): %llu kernels, %llu API calls, %llu copies, %llu memsets, %llu syncs",
               static_cast<int>(pid_), static_cast<unsigned long long>(stats.kernels_written),
               static_cast<unsigned long long>(stats.api_calls_written),
               static_cast<unsigned long long>(stats.memcpys_written),
               static_cast<unsigned long long>(stats.memsets_written),
               static_cast<unsigned long long>(stats.syncs_written));
  }
  if (stats.cupti_records_dropped > 0) {
    print_line(
        "WARNING: %llu CUDA activity records were dropped (CUPTI's own buffers overflowed, more "
        "than PYPROF_BUFFER_MB was waiting to be written, or a write failed); kernels are missing",
        static_cast<unsigned long long>(stats.cupti_records_dropped));
  }
  if (stats.cupti_records_no_timestamp > 0) {
    print_line("WARNING: %llu CUDA activity records had no timestamp and were left out",
               static_cast<unsigned long long>(stats.cupti_records_no_timestamp));
  }
  if (stats.cupti_records_after_shutdown > 0) {
    print_line("%llu CUDA activity records arrived after the database was closed (not written)",
               static_cast<unsigned long long>(stats.cupti_records_after_shutdown));
  }
  if (config_.capture_range_cuda_profiler && capture_starts_.load() == 0) {
    print_line(
        "WARNING: --capture-range cudaProfilerApi, but the program never called "
        "cudaProfilerStart() (torch.cuda.profiler.start()): nothing was recorded");
  } else if (capture_starts_.load() > 1 || capture_stops_.load() > 1) {
    print_line("only the first cudaProfilerStart()/Stop() pair was used (%d starts, %d stops)",
               capture_starts_.load(), capture_stops_.load());
  }
  if (stats.messages_truncated > 0) {
    print_line(
        "WARNING: %llu NVTX messages were longer than %zu bytes and were truncated "
        "(fixed limit)",
        static_cast<unsigned long long>(stats.messages_truncated), kMaxMessageBytes);
  }
}

// ---------------------------------------------------------------------------------------------
// fork()
// ---------------------------------------------------------------------------------------------

void Collector::before_fork() noexcept {
  // Take every lock (in the documented order) so the child gets consistent copies: in
  // particular writer_busy_, which the writer holds whenever it is inside SQLite.
  writer_busy_.lock();
  lifecycle_mutex_.lock();
  registry_mutex_.lock();
  fork_thread_buffer_ = t_cache.generation == generation_.load() ? t_cache.buffer : nullptr;
  if (fork_thread_buffer_ != nullptr) fork_thread_buffer_->mutex.lock();
  queue_mutex_.lock();
  start_end_mutex_.lock();
  strings_.mutex().lock();
  domains_.mutex().lock();
  metadata_.mutex().lock();
  spare_mutex_.lock();
}

void Collector::after_fork_in_parent() noexcept {
  spare_mutex_.unlock();
  metadata_.mutex().unlock();
  domains_.mutex().unlock();
  strings_.mutex().unlock();
  start_end_mutex_.unlock();
  queue_mutex_.unlock();
  if (fork_thread_buffer_ != nullptr) fork_thread_buffer_->mutex.unlock();
  registry_mutex_.unlock();
  lifecycle_mutex_.unlock();
  writer_busy_.unlock();
}

void Collector::after_fork_in_child() noexcept {
  after_fork_in_parent();  // this thread took the locks; in the child it still owns them
  // Only this thread exists now. Everything the parent will write (queued chunks, other threads'
  // buffers, its database handle) is forgotten without being touched: leaked rather than freed,
  // since another thread may have been half-way through changing it, and untouched copy-on-write
  // pages cost nothing.
  try {
    pid_ = ::getpid();
    forked_child_ = true;
    process_.pid = pid_;
    const uint64_t generation = generation_.fetch_add(1) + 1;
    ThreadBuffer* self = fork_thread_buffer_;
    fork_thread_buffer_ = nullptr;
    const uint32_t tid = current_tid();
    const uint64_t old_global_tid = self != nullptr ? self->global_tid : 0;
    const uint64_t new_global_tid = nsys::global_tid(static_cast<uint32_t>(pid_), tid);

    std::unique_ptr<ThreadBuffer> kept;
    for (auto& buffer : buffers_) {
      if (buffer.get() == self) {
        kept = std::move(buffer);
      } else {
        static_cast<void>(buffer.release());
      }
    }
    buffers_.clear();
    threads_seen_.clear();
    retired_counters_ = {};
    registry_sealed_ = false;
    if (kept) {
      // The child continues inside the forking thread's open ranges; its finished events belong
      // to the parent.
      kept->tid = tid;
      kept->global_tid = new_global_tid;
      static_cast<void>(kept->chunk.release());
      kept->counters = {};
      kept->sealed = false;
      kept->exited = false;
      threads_seen_.push_back({tid, new_global_tid, current_thread_name(), false});
      kept->record_index = 0;
      buffers_.push_back(std::move(kept));
      t_cache.buffer = self;
      t_cache.generation = generation;
    } else {
      t_cache = {};
    }

    for (auto& chunk : queue_) static_cast<void>(chunk.release());
    queue_.clear();
    for (auto& chunk : spare_chunks_) static_cast<void>(chunk.release());
    spare_chunks_.clear();
    // CUDA does not survive fork(): no CUPTI buffers will come in the child.
    for (auto& batch : gpu_queue_) static_cast<void>(batch.release());
    gpu_queue_.clear();
    gpu_written_ = {};
    gpu_rows_lost_in_writes_ = 0;
    gpu_records_after_shutdown_.store(0);
    queued_bytes_.store(0);

    // Start/end ranges opened by the forking thread continue in the child, as its own.
    for (auto it = start_end_ranges_.begin(); it != start_end_ranges_.end();) {
      if (self != nullptr && it->second.global_tid == old_global_tid) {
        it->second.global_tid = new_global_tid;
        ++it;
      } else {
        it = start_end_ranges_.erase(it);
      }
    }
    strings_.mark_all_unwritten();
    metadata_.reset_for_child(new_global_tid);

    if (db_) {
      db_->abandon();
      db_.reset();
    }
    db_failed_ = false;
    db_error_.clear();
    events_written_ = ranges_written_ = marks_written_ = 0;
    events_lost_in_writes_ = write_errors_ = 0;
    events_after_shutdown_.store(0);
    unknown_range_ends_.store(0);
    other_messages_truncated_.store(0);
    nvtx_inits_.store(0);

    // The parent's writer thread does not exist here; its std::thread must not be destroyed.
    writer_thread_ = nullptr;
    writer_thread_id_ = {};
    writer_exited_ = false;
    writer_running_.store(false);
    stop_writer_.store(false);
    pending_signal_.store(0);
    lifecycle_cv_ = new std::condition_variable();  // the old one may count phantom waiters
    if (wake_fd_ >= 0) ::close(wake_fd_);           // shared with the parent: get our own
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

    output_path_ready_.store(false);
    output_path_.clear();  // chosen (pid form) at the first NVTX call or at exit
    if (phase_.load() == kRecording) phase_.store(kChildNotStarted);
  } catch (...) {
    phase_.store(kFinalized);  // a half-reset child must not write anything
  }
}

bool Collector::resume_in_child() noexcept {
  std::lock_guard lock(lifecycle_mutex_);
  if (phase_.load() != kChildNotStarted) return phase_.load() == kRecording;
  choose_output_file();
  start_writer();
  int expected = kChildNotStarted;
  // If finalization began meanwhile, it sees (and stops) the writer started above.
  return phase_.compare_exchange_strong(expected, kRecording) || expected == kRecording;
}

}  // namespace pyprof::collect
