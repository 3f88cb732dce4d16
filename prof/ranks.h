// The cross-rank report (`pyprof prof --report ranks DICT...`, docs/prof.md "Ranks"): one
// net.dict per rank of a distributed job, each reduced to a RankSummary as soon as it is read
// (a fleet's records never sit in memory together), then compared step by step.
//
// Per rank and step: wall time; compute (the union of non-communication work: kernels and
// copies on a GPU profile, outermost ops on a CPU one); communication (collective kernels on a
// GPU; on a CPU the backend's spans, `"kind":"comm"`, and the c10d ops that block on them);
// communication overlapped with compute and exposed; idle (neither). A rank that waits for
// another does so inside communication, so per step the straggler is the rank with the most
// time outside exposed communication, by how much it exceeds the median of the others.
// Per rank and collective: calls, message size, time, algorithm and bus bandwidth (nccl-tests'
// definitions, docs/ops.md "collectives").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

struct RankStep {
  int32_t index = 0;
  int64_t start = 0;
  int64_t wall = 0;
  int64_t compute = 0;     // union of compute intervals
  int64_t comm = 0;        // union of communication intervals
  int64_t overlapped = 0;  // compute ∩ communication
  int64_t idle = 0;        // wall − (compute ∪ communication)
  bool selected = true;    // prof's iteration selection kept it
  int64_t exposed() const { return comm - overlapped; }
  // Time the rank was not blocked in communication: what the others wait for.
  int64_t working() const { return wall - exposed(); }
};

struct RankCollective {
  std::string kind;          // all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, ...
  std::string op;            // the op that called it ("c10d::allreduce_")
  double payload_bytes = 0;  // per call: this rank's send buffer (prof's bytes for the op)
  int64_t calls = 0;
  int64_t time = 0;   // ns, all calls: kernels (GPU), the backend's spans (CPU) or the op's own
  int32_t group = 0;  // its process group's size when the records say (torch.profiler); 0: not said
  // calls and time per step index (-1: the profile has no steps): ranks_report leaves out, on
  // every rank, a step that any rank left out, and recounts calls and time from these.
  std::map<int32_t, std::pair<int64_t, int64_t>> by_step;
};

struct RankSummary {
  int64_t rank = -1;
  int64_t world_size = -1;
  std::string source;
  bool cpu_only = false;
  std::vector<RankStep> steps;  // in step order; empty when the profile has no iterations
  std::vector<RankCollective> collectives;  // one per (kind, op, message size, group)
  int64_t records = 0;
};

// The communication kind of a collective op, kernel or backend span ("c10d::allreduce_",
// "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "gloo:all_reduce" -> "all_reduce"); "" when it is
// none.
std::string collective_kind(std::string_view name);
// nccl-tests' bus bandwidth factor of `kind` over `group` ranks (all_reduce 2(n-1)/n,
// all_gather / reduce_scatter / all_to_all (n-1)/n, others 1).
double bus_factor(const std::string& kind, int64_t group);

// Reduces one rank's costed, iteration-selected records to its summary.
RankSummary summarize_rank(const ReadResult& data);

// The report's tables: per rank, per rank and step (with the straggler of each step), and per
// rank and collective. `world` is the group size for the bus bandwidth when a rank's header does
// not say (0: the number of summaries).
std::vector<ReportTable> ranks_report(std::vector<RankSummary> ranks, int64_t world = 0);

}  // namespace pyprof::prof
