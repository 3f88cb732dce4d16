// Plain rows for the tables around NVTX_EVENTS, shared by the collector and SqliteWriter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pyprof::collect {

struct StringRow {  // StringIds
  uint64_t id = 0;
  std::string value;
};

struct ThreadNameRow {  // ThreadNames (nameId -> StringIds)
  uint64_t global_tid = 0;
  uint64_t name_id = 0;
  std::optional<int64_t> priority;
};

struct ProcessRow {  // PROCESSES
  uint64_t global_pid = 0;
  int64_t pid = 0;
  std::string name;
};

struct SessionStart {  // TARGET_INFO_SESSION_START_TIME
  int64_t utc_epoch_ns = 0;
  int64_t monotonic_ns = 0;  // -> systemClockNs (the clock every row is relative to)
};

struct MetadataRow {  // META_DATA_EXPORT / META_DATA_CAPTURE
  std::string name;
  std::string value;
};

struct StatRow {  // PYPROF_COLLECTOR_STATS
  std::string name;
  int64_t value = 0;
};

}  // namespace pyprof::collect
