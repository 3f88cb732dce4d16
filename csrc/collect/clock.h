// The collector's single clock. Every timestamp is CLOCK_MONOTONIC nanoseconds: the launcher
// records PYPROF_SESSION_START_MONO_NS on the same clock, and NTP steps cannot reorder events.
#pragma once

#include <time.h>

#include <cstdint>

namespace pyprof::collect {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;

inline int64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * kNanosPerSecond + ts.tv_nsec;
}

// Wall clock, only for TARGET_INFO_SESSION_START_TIME and META_DATA_EXPORT.
inline int64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * kNanosPerSecond + ts.tv_nsec;
}

}  // namespace pyprof::collect
