// Writes parse's output: JSON Lines, one header line, then one record per GPU activity (in GPU
// start order) or, for a CPU-only profile, per op instance (in CPU start order). The format is
// docs/formats.md §3; its versions, keys and spellings are common/dict_schema.h's.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/json_writer.h"
#include "parse/correlate.h"
#include "parse/iterations.h"
#include "parse/memory_events.h"
#include "parse/trace.h"

namespace pyprof::parse {

// Kernel names and user ranges are bounded upstream; nothing in a line is cut by the writer.
inline constexpr size_t kNoTruncation = size_t{1} << 30;

// Writes buffers to a FILE on a second thread, so that formatting records and the write
// system calls (a million-kernel profile gives over a gigabyte) overlap. One buffer is in
// flight at a time; submit() waits for the previous one.
class BackgroundOutput {
 public:
  explicit BackgroundOutput(std::FILE* out);
  ~BackgroundOutput();
  // Hands `buffer` over (it comes back empty, with the capacity of an earlier buffer).
  // False once a write has failed (errno as the failing write left it).
  bool submit(std::string& buffer);
  // Waits for everything submitted; false if any write failed.
  bool finish();

 private:
  void run();

  std::FILE* out_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string pending_;
  bool has_pending_ = false;
  bool stop_ = false;
  bool failed_ = false;
  int64_t submitted_ = 0;  // buffers handed over
  int64_t written_ = 0;    // buffers the thread has finished with
  int error_ = 0;
  std::thread thread_;
};

// The names a record gives a copy's kind and a memory kind (`copy_kind`, `src_kind`, ...:
// dict::kCopyKinds, dict::kMemoryKinds), and back (the Kineto reader reads them from an exported
// trace's pyprof args). Unknown names: -1.
std::string_view copy_kind_name(uint8_t kind);
std::string_view mem_kind_name(uint8_t kind);
int copy_kind_of_name(std::string_view name);
int mem_kind_of_name(std::string_view name);
// "op", "node", "module", "user", "trace": a range line's `range` (docs/formats.md §3.1).
std::string_view range_kind_name(MarkerKind kind);
// The Dialect a record's `dialect` names; kUser for an unknown name.
std::string_view dialect_name(Dialect d);
Dialect dialect_of_name(std::string_view name);

// A range's args as a record writes them: a reference to their `"kind":"args"` line (id >= 0),
// else the text to write inline (empty: none).
struct ArgsRef {
  int32_t id = -1;
  std::string_view text;
};

// Where a RecordFormatter gets the args of a range it writes.
class ArgsSource {
 public:
  virtual ArgsRef resolve(int32_t range) = 0;

 protected:
  ~ArgsSource() = default;
};

// The ranges whose args a record with attribution `a` writes, in the order it writes them: the
// op's (`args`) and, for bprop, those of the op run inside the backward node (`bwd_args`); -1
// where none. The writer resolves them ahead of formatting in this order.
std::array<int32_t, 2> args_ranges(const std::vector<RangeRecord>& ranges, const Attribution& a);

// Formats records, each line appended to the string set_output() names. One per thread: the
// trace and correlation are only read, and the scratch space and escaped-name cache are its own.
class RecordFormatter {
 public:
  RecordFormatter(const Trace& trace, const Correlation& corr, const Iterations* iterations,
                  bool write_ranges)
      : trace_(trace), corr_(corr), iterations_(iterations), write_ranges_(write_ranges) {}
  void set_output(std::string* out) { out_ = out; }
  void set_args(ArgsSource* args) { args_ = args; }
  // Record `k` of Correlation::order: a GPU activity, or an op instance of a CPU-only profile.
  void write_record(size_t k);
  void write_sync(const Attribution& a);
  void write_comm(const RangeRecord& r);
  // A `"kind":"mark"` line: a user's instantaneous marker (pyprof.mark, nvtxMark).
  void write_mark(const RangeRecord& r);
  // A `"kind":"memory"` line: Trace::memory_events[event], attributed `a` (docs/formats.md §3.2).
  void write_memory(int32_t event, const Attribution& a);
  void write_range(int32_t index, int32_t forward_op);

 private:
  void write_activity(size_t k, int32_t index, const Attribution& a);
  void write_op_instance(size_t k, int32_t index, const Attribution& a);
  void write_user_ranges(JsonWriter& w, const Attribution& a);
  // Appends the finished record and a newline to the output.
  void end_record();
  // `"rank": R` on every record of a trace whose rank is known (Trace::distributed).
  void write_rank(JsonWriter& w);
  // `replay_instance`: the record's instance number when a CUDA graph replayed it
  // (Correlation::replay_instance), 0 otherwise.
  void write_attribution(JsonWriter& w, const Attribution& a, int64_t replay_instance = 0);
  // `"compiled_graph": "0/1"` on a record of a compiled kernel whose name two graphs share
  // (Trace::CompiledName::kByGraph): the compile id of the Dynamo region its op ran in. For a
  // name its graph calls at several places (Trace::compiled_by_site), followed by the place of
  // the record's own op range `site_range` ("0/0#b2"); not written without one (-1).
  void write_compiled_graph(JsonWriter& w, uint32_t name, const Attribution& a, int32_t site_range);
  // The op range a GPU kernel ran in when the kernel's own name has no compiled mark and the
  // op's has: the C++ wrapper's extern call (`aoti_torch_cuda_mm_out`, the op for fprop, the op
  // inside the backward node for bprop), whose cuBLAS kernels are named for neither. -1: none.
  int32_t compiled_call_range(uint32_t name, const Attribution& a) const;
  // `"compiled_symbols": {"s77": 8}` on a record of a compiled kernel with symbolic sizes
  // (Trace::compiled_symbolic): the sizes of the last call of its region's graph made on the
  // thread (pid, tid) at or before `time` (its launch, or the op's start), when there is one.
  void write_compiled_symbols(JsonWriter& w, uint32_t name, const Attribution& a, uint32_t pid,
                              uint32_t tid, int64_t time);
  // The compile id of the innermost "Torch-Compiled Region" range around the record's op (for
  // bprop: its forward op); empty when there is none.
  std::string_view region_graph(const Attribution& a) const;
  // `"step": i` for record `k` of Correlation::order, when it falls in a step.
  void write_step(JsonWriter& w, size_t k);
  // `"step": i` for a record whose CPU-side time is `t` (sync lines).
  void write_step_at(JsonWriter& w, int64_t t);
  // Range `index`'s args under `key`, or a reference to their `"kind":"args"` line under
  // `ref_key`, as args_ resolves them.
  void write_args(JsonWriter& w, int32_t index, std::string_view key, std::string_view ref_key);
  // Writes pool string `id` as a JSON string value.
  void pooled(JsonWriter& w, uint32_t id);

  const Trace& trace_;
  const Correlation& corr_;
  const Iterations* iterations_;
  const bool write_ranges_;
  const int64_t rank_ = trace_.distributed ? trace_.distributed->rank : -1;
  std::string* out_ = nullptr;
  ArgsSource* args_ = nullptr;
  std::string record_;       // the record being written
  std::string record_name_;  // a memcpy's name being written
  std::vector<int32_t> chain_;
  std::vector<std::string> escaped_;  // pool id -> quoted, escaped JSON string
};

class RecordWriter : private ArgsSource {
 public:
  RecordWriter(std::FILE* out, const Trace& trace, const Correlation& corr, TraceReader& reader)
      : out_(out), trace_(trace), corr_(corr), reader_(reader) {}
  // Writes everything; false (errno set) when the output cannot be written (disk full, pipe
  // closed).
  bool write(const std::string& source);
  int64_t args_unavailable() const { return args_unavailable_; }
  // `pyprof parse --ranges`: after the records, one `"kind":"range"` line per range of the
  // trace (op, backward node, module, user, legacy trace marker; marks are not ranges), with
  // its span, thread, parent and what its marker said (docs/formats.md §3.1), and CPU op records
  // get `"range"`: the id of their own range. For `pyprof export`.
  void set_write_ranges(bool on) { write_ranges_ = on; }
  // Detected iterations: the header's `iterations` and each record's `step` (docs/formats.md
  // §3). Null or none detected: neither is written.
  void set_iterations(const Iterations* iterations) { iterations_ = iterations; }
  // `pyprof parse --full-records`: version 1, every record with its `args` and `bwd_args`
  // written out, instead of the compact form's references to `"kind":"args"` lines.
  void set_full_records(bool on) { full_records_ = on; }
  // What check_memory_events found: the header's `memory`, written when the input records
  // memory (Trace::memory_source), with one `"kind":"memory"` line per event after the marks.
  void set_memory(const MemorySummary* memory) { memory_ = memory; }

 private:
  void write_header(const std::string& source);
  // After the header: one `"kind":"compiled_kernel"` line per Inductor kernel whose nodes the
  // capture marked (docs/formats.md §3), one per graph for names two graphs share, ambiguous
  // names left out.
  void write_compiled_kernel_lines();
  void write_header_object(JsonWriter& w, const std::string& source);
  // The records of Correlation::order, in chunks formatted on several threads; their args
  // are resolved (and new `"kind":"args"` lines numbered) in order on this one.
  bool write_records();
  // One `"kind":"comm"` line per span of a communication backend's own scope (gloo's
  // "gloo:all_reduce" on its worker thread, "nccl:all_reduce", ...): on a CPU-only profile the
  // only record of the time a collective took, waiting for the other ranks included.
  bool write_comm_lines(RecordFormatter& f);
  bool write_mark_lines(RecordFormatter& f);
  bool write_memory_lines(RecordFormatter& f);
  bool write_range_lines(RecordFormatter& f);
  // As records written on this thread resolve their args: defining new ones in buffer_.
  ArgsRef resolve(int32_t range) override { return resolve_args(range, buffer_); }
  // Range `range`'s args: a reference (its `"kind":"args"` line, if new, appended to
  // `definitions`), or the text itself in the full form and past kMaxInternedArgsBytes.
  ArgsRef resolve_args(int32_t range, std::string& definitions);
  // The decoded args of range `index` (its message fetched again from the database).
  const std::string& args_of(int32_t index);
  // The id of range `index`'s args in the compact form, their line appended to `definitions`
  // if new; -1 when they are unavailable or go inline (the interned text reached
  // kMaxInternedArgsBytes).
  int32_t args_id_of(int32_t index, std::string& definitions);
  bool flush();

  std::FILE* out_;
  const Trace& trace_;
  const Correlation& corr_;
  TraceReader& reader_;
  BackgroundOutput output_{out_};
  std::string buffer_;  // lines not yet handed to output_
  Marker marker_;
  int32_t cached_index_[2] = {-1, -1};
  std::string cached_args_[2];
  int next_slot_ = 0;
  int64_t args_unavailable_ = 0;
  bool write_ranges_ = false;
  bool full_records_ = false;
  // Compact form: each distinct args text (stored in interned_args_) -> its id, and each
  // range's id once known (-1: not yet), so a range's message is fetched once.
  std::unordered_map<std::string_view, int32_t> args_ids_;
  std::vector<std::unique_ptr<std::string>> interned_args_;
  size_t interned_args_bytes_ = 0;
  std::vector<int32_t> args_id_of_range_;
  const Iterations* iterations_ = nullptr;
  const MemorySummary* memory_ = nullptr;
};

}  // namespace pyprof::parse
