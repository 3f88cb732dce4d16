// The dispatcher hook: one global RecordFunction callback that wraps every ATen op, backward
// node and user scope (torch.profiler.record_function) in an NVTX range of the "pyprof" domain
// whose message is the op marker JSON (op_marker.h).
#pragma once

#include <cstdint>

namespace pyprof {

struct AnnotatorOptions {
  bool with_stack = false;  // add the user's file:line to each op called from Python
};

// Installs the callback. Returns false, doing nothing, when no NVTX tool is attached: then no
// string is ever built. Installing twice is a no-op that returns true.
bool install_op_annotator(const AnnotatorOptions& options);
void uninstall_op_annotator();
bool op_annotator_installed();

struct AnnotatorStats {
  uint64_t ops_annotated = 0;  // ranges pushed by the callback
  uint64_t message_bytes = 0;  // total bytes of their messages
};
AnnotatorStats annotator_stats();

}  // namespace pyprof
