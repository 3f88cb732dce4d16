// fork() handling: the handlers take every lock around fork() so the child starts from
// consistent state; the child forgets the parent's pending work and, at its first NVTX call,
// starts recording into a file of its own.
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <memory>

#include "collector.h"
#include "collector_internal.h"
#include "common/nsys_schema.h"

namespace pyprof::collect {
namespace {

using detail::current_thread_name;
using detail::current_tid;
using detail::t_cache;

void prepare_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->before_fork();
}
void parent_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->after_fork_in_parent();
}
void child_fork_hook() {
  if (Collector* collector = Collector::instance()) collector->after_fork_in_child();
}

}  // namespace

void detail::install_fork_hooks() {
  pthread_atfork(prepare_fork_hook, parent_fork_hook, child_fork_hook);
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
  memory_notes_.mutex().lock();
  spare_mutex_.lock();
}

void Collector::after_fork_in_parent() noexcept {
  spare_mutex_.unlock();
  memory_notes_.mutex().unlock();
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
    memory_notes_.reset_for_child();

    if (db_) {
      db_->abandon();
      db_.reset();
    }
    db_failed_ = false;
    db_error_.clear();
    events_written_ = ranges_written_ = marks_written_ = 0;
    memory_written_ = memory_lost_in_writes_ = memory_devices_written_ = 0;
    events_lost_in_writes_ = write_errors_ = 0;
    database_created_ = writes_stopped_ = false;
    write_failure_.clear();
    events_after_shutdown_.store(0);
    memory_after_shutdown_.store(0);
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
    pending_signal_ns_.store(0);
    signals_held_.store(0);
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
