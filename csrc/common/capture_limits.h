// Limits of the collector that later stages put in their messages: what a capture that did not
// finish (its process killed, its last write failed) may have lost. The collector uses them;
// parse and the launcher report them.
#pragma once

#include <cstddef>

namespace pyprof {

// Completed events a thread holds before it hands them to the writer as one chunk: a process
// killed before its collector finished loses up to this many per thread, plus what the writer
// had queued but not yet committed.
inline constexpr size_t kEventsPerThreadChunk = 4096;

}  // namespace pyprof
