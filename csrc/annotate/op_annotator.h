// The dispatcher hook: one global RecordFunction callback that wraps every ATen op, backward
// node and user scope (torch.profiler.record_function) in an NVTX range of the "pyprof" domain
// whose message is the op marker JSON (op_marker.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pyprof {

struct AnnotatorOptions {
  bool with_stack = false;  // add the user's file:line to each op called from Python
  // Register each distinct marker once and push it by handle (marker_schema.h) instead of
  // sending its text with every call: a training loop repeats the same few thousand markers.
  bool intern_markers = true;
};

// Per thread, markers registered for interning stop being added past this many bytes of marker
// text (programs whose shapes never repeat); later new markers are sent as text, and counted.
inline constexpr size_t kMaxInternedBytesPerThread = 32u << 20;

// Installs the callback. Returns false, doing nothing, when no NVTX tool is attached: then no
// string is ever built. Installing twice is a no-op that returns true.
bool install_op_annotator(const AnnotatorOptions& options);
void uninstall_op_annotator();
bool op_annotator_installed();
// pause_annotation(true) stops annotating the calling thread's ops until pause_annotation(false)
// (from any thread); one thread at a time. pyprof pauses the thread torch.compile compiles on
// (docs/compile.md).
void pause_annotation(bool pause);

struct AnnotatorStats {
  uint64_t ops_annotated = 0;       // ranges pushed by the callback
  uint64_t message_bytes = 0;       // total bytes of their text messages (interned: 0 per call)
  uint64_t interned = 0;            // ranges pushed by handle
  uint64_t markers_registered = 0;  // distinct markers registered for interning
  uint64_t not_interned = 0;        // sent as text although interning is on (the limits above)
  uint64_t paused = 0;              // ops not annotated: started while paused (compiling)
};
AnnotatorStats annotator_stats();

}  // namespace pyprof
