// Finalization, exactly once: at exit, on pyprof_collect_shutdown(), or on SIGTERM/SIGHUP
// (through the writer thread). It takes what every thread still holds, writes it with the
// statistics in one last transaction, closes the database and prints the summary. Termination
// signals arriving while it runs are held until the file is finished (see
// on_terminating_signal).
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>

#include "clock.h"
#include "collector.h"
#include "collector_internal.h"
#include "common/env_vars.h"
#include "common/nsys_schema.h"
#include "diagnostics.h"

namespace pyprof::collect {
namespace {

// The final transaction's events and GPU rows could not be written: they move from the written
// counters to the dropped ones (and to the *_write_failed counters that say why).
void count_as_write_failed(CollectorStats& stats, const detail::Tally& tally, uint64_t gpu_rows,
                           uint64_t device_rows) {
  stats.events_dropped += tally.events;
  stats.events_write_failed += tally.events;
  stats.events_written -= tally.events;
  stats.ranges_written -= tally.ranges;
  stats.marks_written -= tally.marks;
  stats.memory_events_dropped += tally.memory;
  stats.memory_events_write_failed += tally.memory;
  stats.memory_events_written -= tally.memory;
  stats.memory_devices_written -= device_rows;
  stats.cupti_records_dropped += gpu_rows;
  stats.cupti_records_write_failed += gpu_rows;
}

using detail::add_counters;
using detail::add_gpu_written;
using detail::kNeverBegun;
using detail::Tally;
using nsys::NvtxEventType;

// Finalization waits at most this long for one thread's buffer lock.
constexpr int64_t kFinalLockTimeoutNs = 1'000'000'000;

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

// The signals held while the file is finished after a termination signal. A process-group kill
// (scancel, a closed terminal, kill -- -PGID) reaches the program and, a moment later, the
// launcher's forwarded copy; users and job systems repeat themselves; Ctrl-C may follow.
constexpr int kHeldSignals[] = {SIGTERM, SIGHUP, SIGINT};

// Routes every held signal to signal_hook, replacing the program's own handlers (Python's
// SIGINT handler too): the process ends by the first signal as soon as the file is finished,
// so no handler of the program would run to completion anyway. Async-signal-safe.
void hold_termination_signals() {
  struct sigaction ours {};
  ours.sa_handler = signal_hook;
  sigemptyset(&ours.sa_mask);
  ours.sa_flags = SA_RESTART;
  for (const int signal_number : kHeldSignals) sigaction(signal_number, &ours, nullptr);
}

void write_stderr(const char* text, size_t size) {
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text, size);
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal";
  }
}

}  // namespace

namespace detail {

void install_exit_hook() { std::atexit(exit_hook); }

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

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Finalization
// ---------------------------------------------------------------------------------------------

int Collector::shutdown() noexcept { return finalize(FinalizeReason::kShutdownCall); }

void Collector::on_process_exit() noexcept { finalize(FinalizeReason::kExit); }

void Collector::on_terminating_signal(int signal_number) noexcept {
  // Async-signal-safe: atomics on lock-free types, clock_gettime, sigaction and write(2) only.
  // The writer (or a thread already finalizing) does the work and then re-raises the first
  // signal; with no one to do the work the process ends at once.
  const int64_t now_ns = monotonic_ns();
  if (pending_signal_.load() == 0) {
    const bool writer = writer_running_.load();
    if (!writer && phase_.load() != kFinalizing) {
      reraise(signal_number);
      return;
    }
    pending_signal_ns_.store(now_ns);  // before pending_signal_: a repeat reads it
    int expected = 0;
    if (pending_signal_.compare_exchange_strong(expected, signal_number)) {
      hold_termination_signals();
      if (writer) wake_writer();
      return;
    }
    // Another thread's handler took the first signal a moment ago: this one is a repeat.
  }
  // A repeat while the file is finished is held: dying now would leave the file unfinished. One
  // arriving after the finalization timeout means finalization hangs and the user insists.
  if (now_ns - pending_signal_ns_.load() <= config_.finalize_timeout_ns) {
    signals_held_.fetch_add(1);
    return;
  }
  static constexpr char kGivingUp[] =
      "pyprof-collect: termination signal repeated while the database was still being finished "
      "after the finalization timeout; ending now, the database may be unfinished\n";
  write_stderr(kGivingUp, sizeof(kGivingUp) - 1);
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
    if (!write_failure_.empty()) report_write_failure_to_launcher();
  } else {
    result = -1;
    print_line(
        "the writer did not finish within %s=%lld s; %s keeps what was written so far (pid %d)",
        env::kFinalizeTimeoutS,
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
    if (const int held = signals_held_.load(); held > 0) {
      print_line(
          "held %d further termination signal%s until %s was finished; ending by %s (pid %d)", held,
          held == 1 ? "" : "s", output_path_ready_.load() ? output_path_.c_str() : "the database",
          signal_name(signal_number), static_cast<int>(pid_));
    }
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
    const std::vector<MemoryDeviceRow> devices = memory_notes_.take_devices();

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
    stats.events_write_failed = events_lost_in_writes_;
    stats.nvtx_inits = nvtx_inits_.load();
    stats.memory_events = totals.memory_recorded;
    stats.memory_events_written = memory_written_ + tally.memory;
    stats.memory_events_dropped = totals.memory_dropped + memory_lost_in_writes_;
    stats.memory_events_write_failed = memory_lost_in_writes_;
    stats.memory_events_outside_window = totals.memory_outside_window;
    stats.memory_events_after_shutdown = memory_after_shutdown_.load();
    stats.memory_ops_unseen = memory_notes_.ops_unseen();
    stats.memory_devices_written = memory_devices_written_ + devices.size();
    const std::string memory_status = memory_notes_.status();
    uint64_t gpu_rows = 0;
    for (const auto& batch : gpu_batches) gpu_rows += batch->rows();
    CollectorStats gpu_final;
    if (gpu_source != nullptr) gpu_source->fill_stats(stats);
    add_gpu_written(stats, gpu_written_);
    stats.cupti_records_dropped += gpu_rows_lost_in_writes_;
    stats.cupti_records_write_failed = gpu_rows_lost_in_writes_;
    stats.cupti_records_after_shutdown += gpu_records_after_shutdown_.load();
    const MetadataRow cuda_trace =
        gpu_source != nullptr
            ? MetadataRow{std::string(nsys::kCudaTraceMetadata), gpu_source->status()}
            : cuda_trace_not_started_row(config_);

    // A termination signal pending here ends the process once the file is finished (it is
    // re-raised below), whoever got to finalize first: Python's atexit shutdown call wins the
    // race when a SIGINT right after the SIGTERM unwinds the program before the writer wakes.
    const int pending_signal = pending_signal_.load();
    const MetadataRow finalized_by{"FINALIZED_BY", pending_signal != 0 ? signal_name(pending_signal)
                                                   : reason == FinalizeReason::kExit ? "exit"
                                                   : reason == FinalizeReason::kShutdownCall
                                                       ? "pyprof_collect_shutdown"
                                                       : signal_name(pending_signal)};
    std::vector<MetadataRow> capture_rows = {finalized_by, cuda_trace};
    if (!memory_status.empty()) capture_rows.push_back({"PYPROF_MEMORY_CAPTURE", memory_status});
    if (writes_stopped_) {
      // The disk is full: what is still pending is lost, and only the finalization record is
      // attempted (it may fit where rolled-back transactions left room). It says the database is
      // incomplete: write_errors, the *_write_failed counters and PYPROF_WRITE_ERROR.
      count_as_write_failed(stats, tally, gpu_rows, devices.size());
      capture_rows.push_back({"PYPROF_WRITE_ERROR", write_failure_});
      const bool recorded =
          db_ && db_->begin() && db_->write_stats(stats.rows()) &&
          db_->write_metadata(MetadataTable::kExport, {{export_time_row(realtime_ns())}}) &&
          db_->write_metadata(MetadataTable::kCapture, capture_rows) && db_->commit();
      if (!recorded && db_) db_->rollback();
      for (auto& chunk : chunks) {
        queued_bytes_.fetch_sub(chunk->accounted_bytes, std::memory_order_relaxed);
      }
      release_gpu_batches(gpu_batches);
      db_.reset();
      return -1;
    }
    // Rows of the final GPU batches are counted before they are written, so the stats row in
    // the same transaction is right; a failed transaction rolls back both.
    bool ok = db_ && db_->begin() && write_gpu_batches_locked(gpu_batches, gpu_final);
    add_gpu_written(stats, gpu_final);
    ok = ok && db_->write_strings(strings) && db_->write_events(metadata) &&
         db_->write_memory_devices(devices) && write_chunks_locked(chunks, &unclosed) &&
         db_->write_thread_names(thread_names) && db_->write_stats(stats.rows()) &&
         db_->write_metadata(MetadataTable::kExport, {{export_time_row(realtime_ns())}}) &&
         db_->write_metadata(MetadataTable::kCapture, capture_rows) && db_->commit();
    if (ok) {
      events_written_ = stats.events_written;
      ranges_written_ = stats.ranges_written;
      marks_written_ = stats.marks_written;
      memory_written_ = stats.memory_events_written;
      memory_devices_written_ = stats.memory_devices_written;
    } else {
      on_write_failure_locked();
      stats.write_errors = write_errors_;
      count_as_write_failed(stats, tally, gpu_rows, devices.size());
      if (write_failure_.empty()) {
        write_failure_ = detail::write_failure_message(
            false, output_path_ready_.load() ? output_path_ : std::string("the output"), db_error_);
      }
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

void Collector::report_write_failure_to_launcher() noexcept {
  if (config_.status_fd < 0) return;
  struct stat pipe_stat {};
  if (::fstat(config_.status_fd, &pipe_stat) != 0 || !S_ISFIFO(pipe_stat.st_mode) ||
      static_cast<uint64_t>(pipe_stat.st_ino) != config_.status_pipe_inode) {
    return;  // not the launcher's pipe any more
  }
  try {
    // Tabs and line breaks separate fields and lines; a path or message containing them is
    // shown with spaces instead.
    const auto field = [](std::string text) {
      for (char& c : text) {
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
      }
      return text;
    };
    const CollectorStats& stats = final_stats_;
    std::string line = std::string(env::kStatusLinePrefix) +
                       "\tpath=" + field(output_path_ready_.load() ? output_path_ : std::string()) +
                       "\tusable=" + (database_created_ ? "1" : "0") +
                       "\tranges=" + std::to_string(stats.ranges_written) +
                       "\tmarks=" + std::to_string(stats.marks_written) +
                       "\tkernels=" + std::to_string(stats.kernels_written) +
                       "\tevents_dropped=" + std::to_string(stats.events_write_failed) +
                       "\tcuda_dropped=" + std::to_string(stats.cupti_records_write_failed) +
                       "\treason=" + field(write_failure_);
    // One write of at most PIPE_BUF bytes is atomic: lines of several processes never mix.
    if (line.size() + 1 > PIPE_BUF) line.resize(PIPE_BUF - 1);
    line += '\n';
    [[maybe_unused]] const ssize_t written = ::write(config_.status_fd, line.data(), line.size());
  } catch (...) {
  }
}

void Collector::print_summary(int result) noexcept {
  const CollectorStats& stats = final_stats_;
  const char* path = output_path_ready_.load() ? output_path_.c_str() : "(no file)";
  if (!write_failure_.empty()) {
    if (database_created_) {
      print_line(
          "FAILED: %s; kept %llu ranges, %llu marks and %llu kernels; dropped %llu NVTX events "
          "and %llu CUDA records (pid %d)",
          write_failure_.c_str(), static_cast<unsigned long long>(stats.ranges_written),
          static_cast<unsigned long long>(stats.marks_written),
          static_cast<unsigned long long>(stats.kernels_written),
          static_cast<unsigned long long>(stats.events_write_failed),
          static_cast<unsigned long long>(stats.cupti_records_write_failed),
          static_cast<int>(pid_));
    } else {
      print_line("FAILED: %s; nothing usable was kept (pid %d)", write_failure_.c_str(),
                 static_cast<int>(pid_));
    }
  } else if (result == 0) {
    print_line("wrote %s (pid %d): %llu ranges, %llu marks, %llu dropped", path,
               static_cast<int>(pid_), static_cast<unsigned long long>(stats.ranges_written),
               static_cast<unsigned long long>(stats.marks_written),
               static_cast<unsigned long long>(stats.events_dropped));
  } else {
    print_line("FAILED to write %s (pid %d): %s", path, static_cast<int>(pid_), db_error_.c_str());
  }
  if (memory_notes_.status().starts_with("on") || stats.memory_events > 0) {
    print_line("memory (pid %d): %llu allocations and frees, %llu dropped", static_cast<int>(pid_),
               static_cast<unsigned long long>(stats.memory_events_written),
               static_cast<unsigned long long>(stats.memory_events_dropped));
  }
  // Only events the buffer limit refused are worth the advice; failed writes are not.
  const uint64_t events_over_limit = stats.events_dropped - stats.events_write_failed +
                                     stats.memory_events_dropped - stats.memory_events_write_failed;
  if (events_over_limit > 0) {
    const unsigned long long limit = config_.buffer_limit_bytes;
    char limit_text[48];
    if (limit >= (1ULL << 20)) {
      std::snprintf(limit_text, sizeof(limit_text), "%llu MiB", limit >> 20);
    } else {
      std::snprintf(limit_text, sizeof(limit_text), "%llu bytes", limit);
    }
    print_line(
        "WARNING: %llu events dropped: more than %s were waiting to be written (raise the "
        "limit with %s)",
        static_cast<unsigned long long>(events_over_limit), limit_text, env::kBufferMb);
  }
  if (gpu_source_.load() != nullptr && !forked_child_) {
    print_line("CUDA (pid %d): %llu kernels, %llu API calls, %llu copies, %llu memsets, %llu syncs",
               static_cast<int>(pid_), static_cast<unsigned long long>(stats.kernels_written),
               static_cast<unsigned long long>(stats.api_calls_written),
               static_cast<unsigned long long>(stats.memcpys_written),
               static_cast<unsigned long long>(stats.memsets_written),
               static_cast<unsigned long long>(stats.syncs_written));
  }
  if (const uint64_t dropped = stats.cupti_records_dropped - stats.cupti_records_write_failed;
      dropped > 0) {
    print_line(
        "WARNING: %llu CUDA activity records were dropped (CUPTI's own buffers overflowed, or "
        "more than %s was waiting to be written); kernels are missing",
        static_cast<unsigned long long>(dropped), env::kBufferMb);
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

}  // namespace pyprof::collect
