// Collector: the process-wide recording state behind the NVTX callbacks.
//
// Threads record into their own ThreadBuffer (one uncontended lock per call). Full chunks go to
// a queue that a background writer thread drains into SQLite; the writer also picks up partial
// chunks of idle threads every 500 ms. Finalization (flush, stats, close) happens exactly once:
// at exit (atexit), on pyprof_collect_shutdown(), or on SIGTERM/SIGHUP (the signal handler only
// wakes the writer, which finalizes and re-raises the signal). fork() children keep recording
// into their own file.
//
// Implemented in collector.cpp (start-up, the NVTX event API, chunks), collector_writer.cpp,
// collector_finalize.cpp (with the exit and signal hooks) and collector_fork.cpp;
// collector_internal.h holds what they share.
//
// Lock order (outer to inner); no code takes them in another order, and the fork handlers take
// all of them in this order:
//   writer_busy_ -> lifecycle_mutex_ -> registry_mutex_ -> ThreadBuffer::mutex -> queue_mutex_
//   -> start_end_mutex_ -> strings_ -> domains_ -> metadata_ -> memory_notes_ -> spare_mutex_
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "event_types.h"
#include "registries.h"
#include "session_metadata.h"
#include "sqlite_writer.h"
#include "text_utils.h"
#include "thread_buffer.h"

namespace pyprof::collect {

// Returned by push/pop when the collector no longer tracks ranges (NVTX_NO_PUSH_POP_TRACKING).
inline constexpr int kNoPushPopTracking = -2;

// The CUDA side (cupti_tracer) as the collector sees it. Finalization flushes it before the
// last write and asks it for its status and counters.
class GpuTraceSource {
 public:
  virtual ~GpuTraceSource() = default;
  // Hands over every record CUPTI still holds (through Collector::submit_gpu_batch) before
  // returning. Called once, when finalization begins.
  virtual void flush_for_exit() noexcept = 0;
  // META_DATA_CAPTURE PYPROF_CUDA_TRACE: "on: ..." or a sentence saying why not.
  virtual std::string status() const = 0;
  // The cupti_records* counters.
  virtual void fill_stats(CollectorStats& stats) const noexcept = 0;
};

class Collector {
 public:
  // The collector, or nullptr before the first InitializeInjectionNvtx2 call. It is never
  // destroyed: NVTX calls can still arrive from static destructors after finalization.
  static Collector* instance() noexcept { return instance_.load(std::memory_order_acquire); }
  // Creates and starts the collector on the first call (thread-safe).
  static Collector* initialize() noexcept;
  void count_nvtx_init() noexcept { nvtx_inits_.fetch_add(1, std::memory_order_relaxed); }

  // ---- GPU activity (cupti_tracer). ----
  const CollectorConfig& config() const noexcept { return config_; }
  pid_t pid() const noexcept { return pid_; }
  StringTable& strings() noexcept { return strings_; }
  // The capture window in ns since the session start; moves with cudaProfilerStart/Stop.
  int64_t window_begin() const noexcept { return window_begin_.load(std::memory_order_relaxed); }
  int64_t window_end() const noexcept { return window_end_.load(std::memory_order_relaxed); }
  // The CUDA tracer registers itself once; finalization flushes it and reports its counters.
  void attach_gpu_trace(GpuTraceSource* source) noexcept;
  // Whether CUPTI may have another buffer of `bytes` while it holds `pending` bytes of ours:
  // true while the rows waiting to be written stay within PYPROF_BUFFER_MB.
  bool gpu_buffer_allowed(uint64_t pending, uint64_t bytes) const noexcept;
  // Queues converted records for the writer. `records` counts the CUPTI records behind them,
  // for the after-shutdown counter when the batch arrives too late.
  void submit_gpu_batch(std::unique_ptr<GpuBatch> batch, uint64_t records) noexcept;
  // --capture-range cudaProfilerApi: the first cudaProfilerStart() opens the window, the next
  // cudaProfilerStop() closes it; later calls are counted and ignored. Returns whether the call
  // changed the window.
  bool begin_capture() noexcept;
  bool end_capture() noexcept;

  // ---- NVTX entry points. noexcept: failures are counted, never thrown into the app. ----
  int push_range(uint32_t domain_id, const EventAttributes& attrs, BoundedText text) noexcept;
  int pop_range(uint32_t domain_id) noexcept;
  uint64_t start_range(uint32_t domain_id, const EventAttributes& attrs, BoundedText text) noexcept;
  void end_range(uint64_t range_id) noexcept;
  void mark(uint32_t domain_id, const EventAttributes& attrs, BoundedText text) noexcept;
  void name_category(uint32_t domain_id, uint32_t category, BoundedText name) noexcept;
  void name_os_thread(uint32_t os_tid, BoundedText name) noexcept;
  // Returns the domain id (>= 1), or 0 if the call was ignored.
  uint32_t create_domain(BoundedText name) noexcept;
  void destroy_domain(uint32_t domain_id) noexcept;
  // Returns the StringIds id (>= 1), or 0 if the call was ignored.
  uint64_t register_string(BoundedText value) noexcept;

  // ---- Memory capture (pyprof_collect_memory_*, fed by csrc/annotate/memory_capture). ----
  // One allocation or free on the calling thread; its time and thread are set here, on the
  // clock and with the thread id of the NVTX ranges around it. Like a mark: inside the capture
  // window, within the buffer limit, else counted.
  void memory_event(MemoryEvent event) noexcept;
  // A PYPROF_MEMORY_DEVICES row (its time and thread set here); written with the next batch.
  void memory_device(MemoryDeviceRow row) noexcept;
  // META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE and the memory_ops_unseen count (the last call wins).
  void set_memory_capture(std::string status, uint64_t ops_unseen) noexcept;

  bool is_domain(uint32_t domain_id) const noexcept { return domains_.contains(domain_id); }
  bool is_string(uint64_t string_id) const noexcept { return strings_.contains(string_id); }
  // True once finalization has begun; the NVTX layer then skips decoding work.
  bool finished() const noexcept { return phase_.load(std::memory_order_relaxed) >= kFinalizing; }
  // Any NVTX call the collector ignores because it has finalized.
  void count_call_after_shutdown() noexcept {
    events_after_shutdown_.fetch_add(1, std::memory_order_relaxed);
  }

  // Finalizes now (idempotent). 0 = the database was written completely.
  int shutdown() noexcept;
  // The file this process writes; nullptr until chosen (a fork child chooses lazily).
  const char* output_path() const noexcept;

  // Entry points for process-level hooks (atexit, signals, pthread_atfork).
  void on_process_exit() noexcept;
  void on_terminating_signal(int signal_number) noexcept;  // async-signal-safe
  void before_fork() noexcept;
  void after_fork_in_parent() noexcept;
  void after_fork_in_child() noexcept;
  void on_thread_exit(ThreadBuffer* buffer) noexcept;

 private:
  enum Phase : int { kRecording, kChildNotStarted, kFinalizing, kFinalized };
  enum class FinalizeReason { kExit, kShutdownCall, kSignal };

  // One nvtxRangeStart range, waiting for its nvtxRangeEnd (possibly on another thread).
  struct OpenStartEndRange {
    int64_t start = 0;
    uint64_t global_tid = 0;
    uint32_t domain_id = 0;
    EventAttributes attrs;
    std::string text;
  };
  struct ThreadRecord {  // every thread seen, for ThreadNames (kept after the thread exits)
    uint32_t tid = 0;
    uint64_t global_tid = 0;
    std::string name;
    bool exited = false;
  };
  using ChunkList = std::vector<std::unique_ptr<EventChunk>>;
  using GpuBatchList = std::vector<std::unique_ptr<GpuBatch>>;

  Collector() = default;
  void start() noexcept;

  // Hot-path helpers. A call that comes too late (finalizing) is counted in `after_shutdown`.
  ThreadBuffer* recording_thread(std::atomic<uint64_t>& after_shutdown) noexcept;
  ThreadBuffer* recording_thread() noexcept { return recording_thread(events_after_shutdown_); }
  ThreadBuffer* register_current_thread() noexcept;
  bool resume_in_child() noexcept;
  int64_t now() const noexcept;
  bool range_in_window(int64_t start, int64_t end) const noexcept {
    return start < window_end() && end >= window_begin();
  }
  void append_locked(ThreadBuffer& buffer, const CompletedEvent& event, std::string_view text,
                     int64_t now) noexcept;
  void append_memory_locked(ThreadBuffer& buffer, const MemoryEvent& event) noexcept;
  void hand_off_locked(ThreadBuffer& buffer) noexcept;
  std::unique_ptr<EventChunk> acquire_chunk();
  void recycle_chunk(std::unique_ptr<EventChunk> chunk) noexcept;
  void add_metadata_row(CompletedEvent event, std::string_view text) noexcept;

  // Writer side.
  bool choose_output_file() noexcept;  // lifecycle_mutex_ held
  void start_writer() noexcept;        // lifecycle_mutex_ held
  void wake_writer() noexcept;
  void writer_main() noexcept;
  void open_database_locked() noexcept;  // writer_busy_ held
  // writer_busy_ held, after a failed transaction: rolls back and counts it; a storage failure
  // (disk full) stops all further writes.
  void on_write_failure_locked() noexcept;
  // Tells the launcher (PYPROF_STATUS_FD) that this database is incomplete, and why.
  void report_write_failure_to_launcher() noexcept;
  ChunkList collect_idle_chunks(int64_t now);
  void write_batch(ChunkList chunks, GpuBatchList gpu_batches) noexcept;
  // writer_busy_ held; adds the rows written to `written` (the caller commits).
  bool write_gpu_batches_locked(std::span<const std::unique_ptr<GpuBatch>> batches,
                                CollectorStats& written) noexcept;
  void release_gpu_batches(GpuBatchList& batches) noexcept;
  bool write_chunks_locked(const ChunkList& chunks, const EventChunk* extra) noexcept;

  // Finalization.
  int finalize(FinalizeReason reason) noexcept;
  int wait_until_finalized() noexcept;
  int write_final(FinalizeReason reason) noexcept;
  void print_summary(int result) noexcept;

  static std::atomic<Collector*> instance_;

  CollectorConfig config_;
  // Relaxed atomics: read on every NVTX call, written only by begin/end_capture.
  std::atomic<int64_t> window_begin_{0};
  std::atomic<int64_t> window_end_{0};
  std::atomic<int> capture_starts_{0};
  std::atomic<int> capture_stops_{0};
  pid_t pid_ = 0;
  bool forked_child_ = false;
  std::atomic<int> phase_{kRecording};
  // Bumped in a fork child so every cached thread pointer from the parent is re-validated.
  std::atomic<uint64_t> generation_{1};

  std::mutex registry_mutex_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
  std::vector<ThreadRecord> threads_seen_;
  bool registry_sealed_ = false;                // finalization has begun: no new thread buffers
  ThreadCounters retired_counters_;             // counters of reclaimed buffers (exited threads)
  ThreadBuffer* fork_thread_buffer_ = nullptr;  // the forking thread's buffer, between fork hooks

  std::mutex queue_mutex_;
  ChunkList queue_;
  GpuBatchList gpu_queue_;         // guarded by queue_mutex_; bytes counted in queued_bytes_
  bool gpu_queue_closed_ = false;  // guarded by queue_mutex_: the final write has taken it
  std::atomic<uint64_t> queued_bytes_{0};  // chunks handed off and not yet written
  std::mutex spare_mutex_;
  ChunkList spare_chunks_;  // written chunks, recycled with their capacity

  std::mutex start_end_mutex_;
  std::unordered_map<uint64_t, OpenStartEndRange> start_end_ranges_;
  std::atomic<uint64_t> next_range_id_{1};

  StringTable strings_;
  DomainTable domains_;
  MetadataLog metadata_;
  MemoryNotes memory_notes_;

  std::atomic<uint64_t> events_after_shutdown_{0};
  std::atomic<uint64_t> memory_after_shutdown_{0};  // allocations reported after finalization
  std::atomic<uint64_t> unknown_range_ends_{0};
  std::atomic<uint64_t> other_messages_truncated_{0};  // names, domains, registered strings
  std::atomic<uint64_t> nvtx_inits_{0};

  // Writer state. db_ and the write counters are guarded by writer_busy_, which is held
  // whenever this process is inside SQLite (so a fork never copies SQLite mid-operation).
  std::mutex writer_busy_;
  std::unique_ptr<SqliteWriter> db_;
  bool db_failed_ = false;
  std::string db_error_;
  uint64_t events_written_ = 0;
  uint64_t ranges_written_ = 0;
  uint64_t marks_written_ = 0;
  uint64_t memory_written_ = 0;
  uint64_t events_lost_in_writes_ = 0;
  uint64_t memory_lost_in_writes_ = 0;
  uint64_t memory_devices_written_ = 0;
  uint64_t write_errors_ = 0;
  // The schema is committed: whatever else fails, the file is a readable database.
  bool database_created_ = false;
  // The storage refused a write (disk full, file size limit, I/O error), or the database could
  // not be opened: nothing more is written (retrying would fail again and cost time), what was
  // committed stays, and the losses are counted. write_failure_ says why, naming the file.
  bool writes_stopped_ = false;
  std::string write_failure_;
  CollectorStats gpu_written_;  // only the *_written counters; guarded by writer_busy_
  uint64_t gpu_rows_lost_in_writes_ = 0;
  std::atomic<GpuTraceSource*> gpu_source_{nullptr};
  std::atomic<uint64_t> gpu_records_after_shutdown_{0};
  ProcessInfo process_;
  CollectorStats final_stats_;

  // Lifecycle (output file, writer thread, finalization), guarded by lifecycle_mutex_.
  std::mutex lifecycle_mutex_;
  // A pointer so a fork child can replace it: the parent's waiters would be phantoms in the
  // child, and glibc may block on them in notify or destroy.
  std::condition_variable* lifecycle_cv_ = new std::condition_variable();
  std::thread* writer_thread_ = nullptr;  // leaked on purpose in a fork child
  std::thread::id writer_thread_id_;
  bool writer_exited_ = false;
  int finalize_result_ = 0;
  std::atomic<bool> writer_running_{false};  // read by the signal handler
  std::atomic<bool> stop_writer_{false};
  std::atomic<int> pending_signal_{0};  // the termination signal finalization re-raises
  // When pending_signal_ was set (monotonic ns), and how many termination signals arrived after
  // it and were held until the file was finished.
  std::atomic<int64_t> pending_signal_ns_{0};
  std::atomic<int> signals_held_{0};
  int wake_fd_ = -1;  // eventfd: producers, the signal handler and finalize wake the writer
  std::string output_path_;
  std::atomic<bool> output_path_ready_{false};
};

}  // namespace pyprof::collect
