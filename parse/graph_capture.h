// CUDA/HIP graph replays traced apart from their capture (`pyprof parse REPLAY --graph-capture
// CAPTURE`, docs/formats.md §4.3).
//
// A serving engine captures its graphs once (stream capture: each op launches its kernels into
// the graph, nothing runs) and then replays them: a trace of the replay shows one
// cudaGraphLaunch / hipGraphLaunch per replay with the kernels it ran, and no op around any of
// them. A trace of the capture shows the same kernels as launch calls inside their ops, between
// the stream's BeginCapture and EndCapture calls. This joins the two: each replay launch is
// matched to a capture (by order, checked by the kernels' names where the capture's launch calls
// name them, as torch.profiler's ROCm traces do), and its j-th kernel to the capture's j-th
// kernel launch. The capture's ranges around that launch are copied into the replay's trace,
// once per replay launch (each replay is an op instance of its own, so prof costs every replay),
// on a process number of their own; a joined kernel's attribution is then found around that
// launch by correlate, as for a CUDA graph node recorded at capture (correlate.h).
//
// Matching, per replay launch in time order: the first capture, from the one after the last
// match on (wrapping around, so a trace of many forward passes loops over the captures), with as
// many kernel launches as the replay has kernels and the same names (names a capture does not
// record are not compared); failing that, the capture at that position when it has as many
// kernels: then each kernel whose name differs is left unjoined and counted; failing that, the
// replay launch stays unjoined, its kernels counted. Copies and memsets a replay runs are not
// joined (captures here list kernel launches only) and are counted.
#pragma once

#include <cstdint>
#include <string>

#include "parse/trace.h"

namespace pyprof::parse {

struct GraphJoinStats {
  int64_t captures = 0;             // BeginCapture .. EndCapture windows in the capture trace
  int64_t captured_kernels = 0;     // kernel launch calls inside them
  int64_t captured_named = 0;       // of those, calls that name their kernel
  int64_t graph_launches = 0;       // the replay's graph launch calls that ran GPU work
  int64_t launches_by_name = 0;     // joined to a capture whose kernel names all agree
  int64_t launches_by_order = 0;    // joined by order alone: the capture names no kernel
  int64_t launches_mismatched = 0;  // joined by order with as many kernels, some names differ
  int64_t launches_unjoined = 0;    // no capture with as many kernels
  int64_t kernels = 0;              // kernels the graph launches ran
  int64_t kernels_joined = 0;
  int64_t kernels_name_mismatch = 0;  // in mismatched launches, left unjoined
  int64_t kernels_in_unjoined = 0;    // in unjoined launches
  int64_t copies_not_joined = 0;      // memcpy / memset activities of graph launches
};

// Joins `replay`'s graph-launched kernels to `capture`'s launches (see above): appends the
// copied ranges (Trace::imported_ranges_begin on), one API call per joined kernel standing for
// its captured launch (Trace::imported_calls_begin on) and the pairs in
// Trace::graph_capture_calls. Texts of the capture's ranges are read through `capture_reader`
// and kept in `replay`'s pool, so `capture` may be freed afterwards. False with `error` when
// the capture trace holds no graph capture at all.
bool join_graph_capture(Trace& replay, const Trace& capture, TraceReader& capture_reader,
                        GraphJoinStats& stats, std::string& error);

// The summary line's text after "graph capture: ".
std::string graph_join_summary(const GraphJoinStats& stats);

// cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch (version suffixes already stripped).
bool is_graph_launch_api(std::string_view name);

}  // namespace pyprof::parse
