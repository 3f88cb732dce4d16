// SqliteWriter: one SQLite database laid out like an Nsight Systems SQLite export (the subset in
// trace-formats.md §7) plus pyprof's PYPROF_COLLECTOR_STATS and PYPROF_MEMORY_* tables. It owns the
// connection, the schema and the prepared statements; it knows nothing about NVTX injection or
// threads, so tests and the launcher can use it directly. Not thread-safe: one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "db_rows.h"
#include "event_types.h"

namespace pyprof::collect {

inline constexpr std::string_view kProductVersion = "0.1.0";

enum class MetadataTable { kExport, kCapture };  // META_DATA_EXPORT, META_DATA_CAPTURE

class SqliteWriter {
 public:
  // Opens (or creates) the database at `path`, sets PRAGMA synchronous=OFF and creates every
  // table plus the ENUM_NSYS_EVENT_TYPE rows. Returns nullptr and sets *error on failure, and
  // *storage_failure to whether the storage refused the writes (see storage_failed()).
  static std::unique_ptr<SqliteWriter> open(const std::string& path, std::string* error,
                                            bool* storage_failure = nullptr);

  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;

  // Forgets the connection without closing it. For a forked child: the handle belongs to the
  // parent's database, and any call on it (even close) could disturb the parent's file.
  void abandon() noexcept;

  // Writes are batched in explicit transactions; every write_* between begin() and commit()
  // lands atomically. Each returns false (see last_error()) on failure.
  bool begin();
  bool commit();
  void rollback() noexcept;

  // NVTX_EVENTS rows; texts are slices of `text` (EventChunk::text).
  bool write_events(std::span<const CompletedEvent> events, std::string_view text);
  // A chunk's NVTX_EVENTS and PYPROF_MEMORY_EVENTS rows.
  bool write_events(const EventChunk& chunk) {
    return write_events(chunk.events, chunk.text) && write_memory_events(chunk.memory);
  }
  bool write_memory_events(std::span<const MemoryEvent> events);
  bool write_memory_devices(std::span<const MemoryDeviceRow> rows);
  bool write_strings(std::span<const StringRow> rows);
  bool write_thread_names(std::span<const ThreadNameRow> rows);
  bool write_process(const ProcessRow& row);
  bool write_session_start(const SessionStart& start);
  bool write_metadata(MetadataTable table, std::span<const MetadataRow> rows);
  // PYPROF_COLLECTOR_STATS; a name written again replaces its value.
  bool write_stats(std::span<const StatRow> rows);
  // The CUPTI_ACTIVITY_KIND_* and TARGET_INFO_GPU/CUDA_DEVICE rows of one batch. The GPU tables
  // and the CUDA ENUM_* tables are created on first use, as nsys creates a table only when it
  // has data: a CPU-only database has none of them.
  bool write_gpu_batch(const GpuBatch& batch);

  const std::string& path() const { return path_; }
  const std::string& last_error() const { return last_error_; }
  // Whether the last failure was the storage refusing to write: SQLite's "database or disk is
  // full" (ENOSPC) or any of its I/O errors (among them EFBIG, a file size limit, and EDQUOT).
  // Retrying such a write fails again, so the caller should stop writing.
  bool storage_failed() const { return storage_failed_; }

 private:
  SqliteWriter(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  bool exec(const char* sql);
  bool prepare_statements();
  bool fail(const char* what);
  // Records the error of the last call on db_ (code, message, errno) as last_error().
  void record_error(std::string_view what, const char* message);
  void finalize_statements() noexcept;

  sqlite3* db_ = nullptr;
  std::string path_;
  std::string last_error_;
  bool storage_failed_ = false;
  sqlite3_stmt* insert_event_ = nullptr;
  sqlite3_stmt* insert_string_ = nullptr;
  sqlite3_stmt* insert_thread_name_ = nullptr;
  sqlite3_stmt* insert_process_ = nullptr;
  sqlite3_stmt* insert_session_start_ = nullptr;
  sqlite3_stmt* insert_export_meta_ = nullptr;
  sqlite3_stmt* insert_capture_meta_ = nullptr;
  sqlite3_stmt* upsert_stat_ = nullptr;
  sqlite3_stmt* insert_memory_event_ = nullptr;
  sqlite3_stmt* insert_memory_device_ = nullptr;

  bool create_gpu_tables();
  enum GpuStatement {
    kInsertKernel,
    kInsertApi,
    kInsertMemcpy,
    kInsertMemset,
    kInsertSync,
    kInsertExternalCorrelation,
    kInsertGpu,
    kInsertCudaDevice,
    kInsertGraphNode,
    kGpuStatementCount
  };
  bool gpu_tables_ready_ = false;
  sqlite3_stmt* gpu_statements_[kGpuStatementCount] = {};
};

}  // namespace pyprof::collect
