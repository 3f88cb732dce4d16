// What the unit tests of correlation, iteration detection and the record writer share: a Trace
// built in memory, range by range and call by call, with the fields a database reader would
// fill, so that a test states its trace in a few lines and checks what parse makes of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "parse/trace.h"

namespace pyprof::parse {

struct TraceBuilder {
  TraceBuilder() { trace.format = "pyprof"; }

  Trace trace;
  uint32_t pid = 1;  // the process of everything added next

  // A range of `kind` on OS thread `tid`: pyprof's dialect for ops, backward nodes and modules,
  // a user range's otherwise. Returns its index in trace.ranges.
  int32_t range(std::string_view name, int64_t start, int64_t end,
                MarkerKind kind = MarkerKind::kUser, uint32_t tid = 1) {
    RangeRecord r;
    r.start = start;
    r.end = end;
    r.pid = pid;
    r.tid = tid;
    r.kind = kind;
    r.dialect = kind == MarkerKind::kUser ? Dialect::kUser : Dialect::kPyprof;
    r.name = trace.pool.intern(name);
    trace.ranges.push_back(r);
    return static_cast<int32_t>(trace.ranges.size() - 1);
  }
  // A pyprof op with autograd sequence number `seq` (-1: none), run on OS thread `tid` whose
  // RecordFunction thread id is `rf_tid`.
  int32_t op(std::string_view name, int64_t start, int64_t end, int64_t seq = -1, uint32_t tid = 1,
             int32_t rf_tid = 0) {
    const int32_t i = range(name, start, end, MarkerKind::kOp, tid);
    trace.ranges[i].seq = seq;
    trace.ranges[i].rf_tid = rf_tid;
    return i;
  }
  // A pyprof backward node created by a forward op of (`fwd_tid`, `seq`), run on thread `tid`.
  int32_t node(std::string_view name, int64_t start, int64_t end, int64_t seq, int32_t fwd_tid = 0,
               uint32_t tid = 2) {
    const int32_t i = range(name, start, end, MarkerKind::kBackwardNode, tid);
    trace.ranges[i].seq = seq;
    trace.ranges[i].rf_tid = 1;
    trace.ranges[i].fwd_tid = fwd_tid;
    return i;
  }
  // A pyprof module range: its path and class.
  int32_t module(std::string_view path, int64_t start, int64_t end, std::string_view type = {},
                 uint32_t tid = 1) {
    const int32_t i = range(path, start, end, MarkerKind::kModule, tid);
    if (!type.empty()) trace.ranges[i].detail = trace.pool.intern(type);
    return i;
  }
  // A range from its NVTX message in `domain` ("" for the default one), decoded as a reader
  // decodes it (add_range); the message is kept in the pool, where TraceReader::fetch_text finds
  // it again. Returns its index.
  int32_t marker(std::string_view text, int64_t start, int64_t end, uint32_t tid = 1,
                 std::string_view domain = "pyprof") {
    RangeRecord base;
    base.start = start;
    base.end = end;
    base.pid = pid;
    base.tid = tid;
    if (!domain.empty()) base.domain = trace.pool.intern(domain);
    const auto text_id = static_cast<int64_t>(trace.pool.intern(text));
    Marker scratch;
    add_range(trace, base, text, TextRef{TextRef::Where::kPool, text_id}, scratch);
    return static_cast<int32_t>(trace.ranges.size() - 1);
  }
  // A CUDA API call `api` on thread `tid` with correlation id `correlation`. Returns its index
  // in trace.api_calls.
  int32_t call(std::string_view api, int64_t start, int64_t end, int64_t correlation = -1,
               uint32_t tid = 1) {
    trace.api_calls.push_back({start, end, correlation, pid, tid, trace.pool.intern(api)});
    return static_cast<int32_t>(trace.api_calls.size() - 1);
  }
  // A kernel `name` launched by a cudaLaunchKernel call at `launch` (5 ns long, on thread
  // `tid`, correlation id: the call's position + 1) that runs [run, run + duration). Returns its
  // index in trace.activities.
  int32_t kernel(int64_t launch, int64_t run, uint32_t tid = 1, std::string_view name = "k",
                 int64_t duration = 10) {
    const int64_t id = static_cast<int64_t>(trace.api_calls.size()) + 1;
    call("cudaLaunchKernel", launch, launch + 5, id, tid);
    return activity(id, run, run + duration, name);
  }
  // A kernel `name` of correlation id `correlation`, launched by whatever call has it.
  int32_t activity(int64_t correlation, int64_t start, int64_t end, std::string_view name = "k") {
    GpuActivity a;
    a.start = start;
    a.end = end;
    a.correlation_id = correlation;
    a.pid = pid;
    a.short_name = a.long_name = trace.pool.intern(name);
    trace.activities.push_back(a);
    return static_cast<int32_t>(trace.activities.size() - 1);
  }
};

// Reads messages back from the pool, where TraceBuilder::marker keeps them.
class PoolTextReader final : public TraceReader {
 public:
  bool read(Trace&, std::string&) override { return true; }
  std::string_view fetch_text(const Trace& trace, TextRef ref) override {
    if (ref.where != TextRef::Where::kPool) return {};
    return trace.pool.get(static_cast<uint32_t>(ref.id));
  }
};

}  // namespace pyprof::parse
