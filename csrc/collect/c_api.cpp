// The collector's C API besides the NVTX entry point (see pyprof_collect.h).

#include <sqlite3.h>
#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>

#include "collector.h"
#include "cupti_tracer.h"
#include "diagnostics.h"
#include "pyprof_collect.h"
#include "session_metadata.h"

extern "C" int pyprof_collect_shutdown(void) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  if (collector == nullptr) return 1;
  return collector->shutdown();
}

extern "C" const char* pyprof_collect_output_path(void) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  return collector != nullptr ? collector->output_path() : nullptr;
}

extern "C" int pyprof_collect_cupti_request(const char* tool) {
  if (tool == nullptr || *tool == '\0') return 0;
  return pyprof::collect::CuptiTracer::announce_other_client(tool);
}

extern "C" void pyprof_collect_memory_event(uint64_t address, int64_t bytes,
                                            uint64_t total_allocated, uint64_t total_reserved,
                                            int32_t device_type, int32_t device_index) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  if (collector == nullptr) return;
  pyprof::collect::MemoryEvent event;
  event.address = address;
  event.bytes = bytes;
  event.total_allocated = total_allocated;
  event.total_reserved = total_reserved;
  event.device_type = device_type;
  event.device_index = device_index;
  collector->memory_event(event);
}

extern "C" int pyprof_collect_memory_device(const pyprof_memory_device* device,
                                            const char* moment) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  if (collector == nullptr || device == nullptr ||
      device->struct_size < offsetof(pyprof_memory_device, ooms) + sizeof(device->ooms)) {
    return -1;
  }
  try {
    const auto known = [](int64_t value) {
      return value >= 0 ? std::optional<int64_t>(value) : std::nullopt;
    };
    pyprof::collect::MemoryDeviceRow row;
    row.device_type = device->device_type;
    row.device_index = device->device_index;
    row.moment = moment != nullptr ? moment : "";
    row.total_memory = known(device->total_memory);
    row.free_memory = known(device->free_memory);
    row.allocator_limit = known(device->allocator_limit);
    row.allocated = known(device->allocated);
    row.reserved = known(device->reserved);
    row.peak_allocated = known(device->peak_allocated);
    row.peak_reserved = known(device->peak_reserved);
    row.alloc_retries = known(device->alloc_retries);
    row.ooms = known(device->ooms);
    collector->memory_device(std::move(row));
    return 0;
  } catch (...) {
    return -1;
  }
}

extern "C" void pyprof_collect_memory_capture(const char* status, uint64_t ops_unseen) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  if (collector == nullptr) return;
  try {
    collector->set_memory_capture(status != nullptr ? status : "", ops_unseen);
  } catch (...) {
  }
}

extern "C" int pyprof_collect_write_empty(const char* path, const char* note) {
  try {
    if (path == nullptr || *path == '\0') return -1;
    std::string error;
    if (pyprof::collect::write_empty_database(path, note, &error)) return 0;
    pyprof::collect::print_line("cannot write an empty database: %s", error.c_str());
  } catch (...) {
  }
  return -1;
}

extern "C" int pyprof_collect_database_finished(const char* path) {
  if (path == nullptr || *path == '\0') return -1;
  const std::string journal = std::string(path) + "-journal";
  struct stat st {};
  if (::stat(journal.c_str(), &st) == 0 && st.st_size > 0) return 0;
  sqlite3* db = nullptr;
  // Not a URI: the path is taken as it is, whatever its characters.
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  // The collector's last transaction writes FINALIZED_BY with its statistics; the launcher's
  // empty database has statistics only.
  const char* kQuery =
      "SELECT (SELECT count(*) FROM META_DATA_CAPTURE WHERE name = 'FINALIZED_BY') + "
      "(SELECT count(*) FROM PYPROF_COLLECTOR_STATS)";
  sqlite3_stmt* stmt = nullptr;
  int finished = -1;
  if (sqlite3_prepare_v2(db, kQuery, -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    finished = sqlite3_column_int64(stmt, 0) > 0 ? 1 : 0;
  } else if (sqlite3_errcode(db) == SQLITE_ERROR) {
    finished = 0;  // no such table: not even the schema was written
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return finished;
}

extern "C" int pyprof_collect_database_is_empty_note(const char* path) {
  if (path == nullptr || *path == '\0') return -1;
  struct stat st {};
  if (::lstat(path, &st) != 0) return -1;
  if (!S_ISREG(st.st_mode)) return 0;  // never a link or a device: only what we wrote
  const std::string journal = std::string(path) + "-journal";
  if (::stat(journal.c_str(), &st) == 0 && st.st_size > 0) return 0;  // a write was cut off
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  const char* kQuery =
      "SELECT (SELECT count(*) FROM META_DATA_CAPTURE WHERE name = 'PYPROF_NOTE') > 0 AND "
      "(SELECT count(*) FROM META_DATA_CAPTURE WHERE name = 'FINALIZED_BY') = 0 AND "
      "NOT EXISTS (SELECT 1 FROM NVTX_EVENTS)";
  sqlite3_stmt* stmt = nullptr;
  int empty = -1;
  if (sqlite3_prepare_v2(db, kQuery, -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    empty = sqlite3_column_int64(stmt, 0) != 0 ? 1 : 0;
  } else if (sqlite3_errcode(db) == SQLITE_ERROR) {
    empty = 0;  // not our schema: not ours to replace
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return empty;
}
