// The writer side: the queue of GPU batches the CUDA tracer submits, and the writer thread, which
// opens the database, drains event chunks and GPU batches into SQLite in bounded transactions,
// and collects the partial chunks of idle threads.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <span>

#include "collector.h"
#include "collector_internal.h"
#include "common/nsys_schema.h"
#include "diagnostics.h"

namespace pyprof::collect {
namespace {

using detail::add_counters;
using detail::add_gpu_written;
using detail::Tally;

// The writer wakes at least this often, and hands partial chunks of threads idle this long.
constexpr int64_t kWriterTickNs = 500'000'000;
constexpr int kWriterPollMs = 500;
// At most this many chunks (4096 events each) per SQLite transaction of the writer loop.
constexpr size_t kChunksPerTransaction = 16;

}  // namespace

// ---------------------------------------------------------------------------------------------
// GPU activity
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

// ---------------------------------------------------------------------------------------------
// Writer thread
// ---------------------------------------------------------------------------------------------

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
      writes_stopped_ = true;
      db_error_ = "no output file could be created";
      write_failure_ = db_error_;
      return;
    }
    bool storage_failure = false;
    db_ = SqliteWriter::open(output_path_, &db_error_, &storage_failure);
    if (!db_) {
      db_failed_ = true;
      writes_stopped_ = true;
      ++write_errors_;
      write_failure_ = detail::write_failure_message(storage_failure, output_path_, db_error_);
      print_line("%s (pid %d)", write_failure_.c_str(), static_cast<int>(pid_));
      return;
    }
    database_created_ = true;
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
    if (!ok) on_write_failure_locked();
  } catch (...) {
    db_failed_ = true;
    writes_stopped_ = true;
  }
}

void Collector::on_write_failure_locked() noexcept {
  ++write_errors_;
  if (!db_) return;
  try {
    db_error_ = db_->last_error();
    const bool storage_failure = db_->storage_failed();
    db_->rollback();
    if (!storage_failure || writes_stopped_) return;
    writes_stopped_ = true;
    write_failure_ = detail::write_failure_message(true, output_path_, db_error_);
    print_line("%s; what was written before stays, nothing more is written (pid %d)",
               write_failure_.c_str(), static_cast<int>(pid_));
  } catch (...) {
    writes_stopped_ = true;
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
    std::vector<MemoryDeviceRow> devices = memory_notes_.take_devices();
    // Several transactions of a bounded size rather than one for the whole backlog: fork()
    // waits for writer_busy_, so no single hold may last long.
    size_t next = 0;
    do {
      const size_t count = std::min(kChunksPerTransaction, chunks.size() - next);
      const ChunkList::const_iterator first = chunks.begin() + static_cast<ptrdiff_t>(next);
      next += count;
      if (count == 0 && metadata.empty() && strings.empty() && devices.empty()) break;
      Tally tally;
      for (auto chunk = first; chunk != first + static_cast<ptrdiff_t>(count); ++chunk) {
        tally.add(**chunk);
      }
      std::lock_guard busy(writer_busy_);
      if (writes_stopped_) {  // the disk is full: count what cannot be written
        events_lost_in_writes_ += tally.events;
        memory_lost_in_writes_ += tally.memory;
        metadata.clear();
        strings.clear();
        devices.clear();
        continue;
      }
      bool ok = db_ && db_->begin() && db_->write_strings(strings) && db_->write_events(metadata) &&
                db_->write_memory_devices(devices);
      for (auto chunk = first; ok && chunk != first + static_cast<ptrdiff_t>(count); ++chunk) {
        ok = db_->write_events(**chunk);
      }
      ok = ok && db_->commit();
      if (ok) {
        events_written_ += tally.events;
        ranges_written_ += tally.ranges;
        marks_written_ += tally.marks;
        memory_written_ += tally.memory;
        memory_devices_written_ += devices.size();
      } else {
        on_write_failure_locked();
        events_lost_in_writes_ += tally.events;
        memory_lost_in_writes_ += tally.memory;
      }
      metadata.clear();
      strings.clear();
      devices.clear();
    } while (next < chunks.size());
    // One transaction per CUPTI buffer (tens of thousands of rows at most). Kernel names were
    // interned before their batch was queued, so the strings written above cover them.
    for (const auto& batch : gpu_batches) {
      std::lock_guard busy(writer_busy_);
      if (writes_stopped_) {
        gpu_rows_lost_in_writes_ += batch->rows();
        continue;
      }
      CollectorStats written;
      const bool ok = db_ && db_->begin() &&
                      write_gpu_batches_locked(std::span(&batch, 1), written) && db_->commit();
      if (ok) {
        add_gpu_written(gpu_written_, written);
      } else {
        on_write_failure_locked();
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

}  // namespace pyprof::collect
