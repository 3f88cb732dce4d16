#include "parse/record_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "common/dict_schema.h"
#include "common/env_vars.h"
#include "common/json_writer.h"
#include "common/ordered_chunks.h"

namespace pyprof::parse {

std::string_view dialect_name(Dialect d) {
  switch (d) {
    case Dialect::kPyprof:
      return dict::dialect::kPyprof;
    case Dialect::kEmitNvtx:
      return dict::dialect::kEmitNvtx;
    case Dialect::kLegacyPyprof:
      return dict::dialect::kLegacyPyprof;
    case Dialect::kKineto:
      return dict::dialect::kKineto;
    case Dialect::kUser:
      break;
  }
  return dict::dialect::kUser;
}

std::string_view copy_kind_name(uint8_t kind) {
  return kind < dict::kCopyKinds.size() ? dict::kCopyKinds[kind] : dict::kCopyKinds[0];
}

std::string_view mem_kind_name(uint8_t kind) {
  return kind < dict::kMemoryKinds.size() ? dict::kMemoryKinds[kind] : dict::kMemoryKinds.back();
}

int copy_kind_of_name(std::string_view name) {
  for (size_t i = 0; i < dict::kCopyKinds.size(); ++i) {
    if (name == dict::kCopyKinds[i]) return static_cast<int>(i);
  }
  return -1;
}

int mem_kind_of_name(std::string_view name) {
  for (size_t i = 0; i < dict::kMemoryKinds.size(); ++i) {
    if (name == dict::kMemoryKinds[i]) return static_cast<int>(i);
  }
  return -1;
}

std::string_view range_kind_name(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::kOp:
      return dict::range_kind::kOp;
    case MarkerKind::kBackwardNode:
      return dict::range_kind::kNode;
    case MarkerKind::kModule:
      return dict::range_kind::kModule;
    case MarkerKind::kTrace:
      return dict::range_kind::kTrace;
    case MarkerKind::kUser:
    case MarkerKind::kSettings:
    case MarkerKind::kCompiledKernel:
    case MarkerKind::kCompiledCall:
      break;
  }
  return dict::range_kind::kUser;
}

Dialect dialect_of_name(std::string_view name) {
  for (Dialect d :
       {Dialect::kPyprof, Dialect::kEmitNvtx, Dialect::kLegacyPyprof, Dialect::kKineto}) {
    if (name == dialect_name(d)) return d;
  }
  return Dialect::kUser;
}

namespace {

constexpr size_t kFlushBytes = size_t{1} << 20;
// The compact form keeps the text of each distinct args value. A training loop has a few
// hundred; a trace whose every call has new arguments would keep them all, so past this the
// new ones are written inline (readers accept either form on any record).
constexpr size_t kMaxInternedArgsBytes = size_t{64} << 20;

}  // namespace

const std::string& RecordWriter::args_of(int32_t index) {
  for (int s = 0; s < 2; ++s) {
    if (cached_index_[s] == index) return cached_args_[s];
  }
  int slot = next_slot_;
  next_slot_ ^= 1;
  cached_index_[slot] = index;
  cached_args_[slot].clear();
  const RangeRecord& r = trace_.ranges[index];
  if (r.args_length == kArgsInPool) {
    cached_args_[slot].assign(trace_.pool.get(r.args_offset));
    return cached_args_[slot];
  }
  std::string_view text = reader_.fetch_text(trace_, r.text);
  if (text.empty()) {
    ++args_unavailable_;
    return cached_args_[slot];
  }
  if (r.args_length != 0 && text.size() >= size_t{r.args_offset} + r.args_length) {
    cached_args_[slot].assign(text.substr(r.args_offset, r.args_length));
    return cached_args_[slot];
  }
  decode_marker(text, marker_domain(trace_, r), marker_);
  cached_args_[slot].swap(marker_.args);
  return cached_args_[slot];
}

int32_t RecordWriter::args_id_of(int32_t index, std::string& definitions) {
  if (args_id_of_range_.empty()) args_id_of_range_.assign(trace_.ranges.size(), -1);
  int32_t& known = args_id_of_range_[index];
  if (known >= 0) return known;
  const std::string& args = args_of(index);
  if (args.empty()) return -1;  // not kept: args_of counts each unavailable fetch
  auto it = args_ids_.find(args);
  if (it != args_ids_.end()) return known = it->second;
  if (interned_args_bytes_ + args.size() > kMaxInternedArgsBytes) return -1;
  const auto id = static_cast<int32_t>(interned_args_.size());
  interned_args_.push_back(std::make_unique<std::string>(args));
  interned_args_bytes_ += args.size();
  args_ids_.emplace(*interned_args_.back(), id);
  // The definition precedes its first use: it goes to the output before the record that
  // resolves it.
  // {"kind":"args","id":N,"args":...}
  definitions += R"({")";
  definitions += dict::key::kind;
  definitions += R"(":")";
  definitions += dict::name_of(dict::LineKind::kArgs);
  definitions += R"(",")";
  definitions += dict::key::id;
  definitions += R"(":)";
  definitions += std::to_string(id);
  definitions += R"(,")";
  definitions += dict::key::args;
  definitions += R"(":)";
  definitions += args;
  definitions += "}\n";
  return known = id;
}

ArgsRef RecordWriter::resolve_args(int32_t range, std::string& definitions) {
  if (!full_records_) {
    const int32_t id = args_id_of(range, definitions);
    if (id >= 0) return {id, {}};
  }
  return {-1, args_of(range)};
}

std::array<int32_t, 2> args_ranges(const std::vector<RangeRecord>& ranges, const Attribution& a) {
  std::array<int32_t, 2> out{-1, -1};
  if (a.dir == Direction::kNone) return out;
  if (a.op >= 0 && ranges[a.op].has_args) out[0] = a.op;
  if (a.dir == Direction::kBackward && a.bwd_op >= 0 && ranges[a.bwd_op].has_args) {
    out[1] = a.bwd_op;
  }
  return out;
}

BackgroundOutput::BackgroundOutput(std::FILE* out) : out_(out), thread_([this] { run(); }) {}

BackgroundOutput::~BackgroundOutput() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundOutput::run() {
  std::string writing;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return has_pending_ || stop_; });
    if (!has_pending_) return;
    writing.swap(pending_);
    has_pending_ = false;
    bool skip = failed_;
    lock.unlock();
    cv_.notify_all();
    bool ok = skip || std::fwrite(writing.data(), 1, writing.size(), out_) == writing.size();
    int error = errno;
    writing.clear();
    lock.lock();
    if (!ok && !failed_) {
      failed_ = true;
      error_ = error;
    }
    ++written_;
    cv_.notify_all();
  }
}

bool BackgroundOutput::submit(std::string& buffer) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !has_pending_; });
  if (failed_) {
    errno = error_;
    return false;
  }
  pending_.swap(buffer);
  buffer.clear();
  has_pending_ = true;
  ++submitted_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

bool BackgroundOutput::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return written_ == submitted_; });
  if (failed_) errno = error_;
  return !failed_;
}

bool RecordWriter::flush() {
  if (buffer_.empty()) return true;
  return output_.submit(buffer_);
}

void RecordWriter::write_header(const std::string& source) {
  std::string line;
  {
    JsonWriter w(line, kNoTruncation, 0);
    write_header_object(w, source);
  }
  buffer_ += line;
  buffer_ += '\n';
}

void RecordWriter::write_header_object(JsonWriter& w, const std::string& source) {
  w.begin_object();
  w.raw_key(dict::key::pyprof_dict);
  w.integer(full_records_ ? dict::kFullVersion : dict::kCompactVersion);
  w.raw_key(dict::key::source);
  w.string(source);
  w.raw_key(dict::key::format);
  w.string(trace_.format);
  if (!trace_.version.empty()) {
    w.raw_key(dict::key::version);
    w.string(trace_.version);
  }
  w.raw_key(dict::key::records);
  w.trusted_string(corr_.cpu_only ? dict::records_kind::kOp : dict::records_kind::kGpu);
  if (trace_.distributed) {
    if (trace_.distributed->rank >= 0) {
      w.raw_key(dict::key::rank);
      w.integer(trace_.distributed->rank);
    }
    if (trace_.distributed->world_size >= 0) {
      w.raw_key(dict::key::world_size);
      w.integer(trace_.distributed->world_size);
    }
    if (!trace_.distributed->backend.empty()) {
      w.raw_key(dict::key::backend);
      w.string(trace_.distributed->backend);
    }
  }
  if (trace_.base_time_ns != 0) {
    w.raw_key(dict::key::base_time_ns);
    w.integer(trace_.base_time_ns);
  }
  if (trace_.truncated_input) {
    w.raw_key(dict::key::truncated);
    w.boolean(true);
  }
  if (trace_.unfinished_capture) {
    w.raw_key(dict::key::unfinished_capture);
    w.begin_object();
    w.raw_key(dict::unfinished_capture_key::threads);
    w.integer(trace_.capture_threads);
    w.raw_key(dict::unfinished_capture_key::events_per_thread_at_risk);
    w.integer(static_cast<int64_t>(kEventsPerThreadChunk));
    w.end_object();
  }
  if (trace_.write_failure) {
    w.raw_key(dict::key::write_failure);
    w.begin_object();
    w.raw_key(dict::write_failure_key::message);
    w.string(trace_.write_failure->message);
    w.raw_key(dict::write_failure_key::events_lost);
    w.integer(trace_.write_failure->events_lost);
    w.raw_key(dict::write_failure_key::cuda_records_lost);
    w.integer(trace_.write_failure->cuda_records_lost);
    w.end_object();
  }
  if (!trace_.torch_settings.empty()) {
    w.raw_key(dict::key::torch_settings);
    w.raw_value(trace_.torch_settings);  // validated by the marker decoder
  }
  if (!trace_.devices.empty()) {
    w.raw_key(dict::key::devices);
    w.begin_array();
    for (const Trace::Device& d : trace_.devices) {
      w.begin_object();
      w.raw_key(dict::device_key::id);
      w.integer(d.id);
      w.raw_key(dict::device_key::name);
      w.string(d.name);
      w.raw_key(dict::device_key::sm_count);
      w.integer(d.sm_count);
      w.raw_key(dict::device_key::clock_hz);
      w.integer(d.clock_hz);
      w.raw_key(dict::device_key::memory_bandwidth);
      w.integer(d.memory_bandwidth);
      w.raw_key(dict::device_key::total_memory);
      w.integer(d.total_memory);
      w.raw_key(dict::device_key::compute_capability);
      w.begin_array();
      w.integer(d.compute_major);
      w.integer(d.compute_minor);
      w.end_array();
      w.end_object();
    }
    w.end_array();
  }
  if (memory_ != nullptr && !trace_.memory_source.empty()) {
    w.raw_key(dict::key::memory);
    w.begin_object();
    w.raw_key(dict::memory_key::events);
    w.integer(memory_->events);
    w.raw_key(dict::memory_key::source);
    w.string(trace_.memory_source);
    w.raw_key(dict::memory_key::frees_unknown);
    w.integer(memory_->frees_unknown);
    w.raw_key(dict::memory_key::negative_totals);
    w.integer(memory_->negative_totals);
    w.raw_key(dict::memory_key::outside_steps);
    w.integer(memory_->outside_steps);
    w.end_object();
  }
  if (iterations_ && !iterations_->steps.empty()) {
    w.raw_key(dict::key::iterations);
    w.begin_object();
    w.raw_key(dict::iterations_key::rule);
    w.trusted_string(iteration_rule_name(iterations_->rule));
    w.raw_key(dict::iterations_key::range);
    w.string(iterations_->range);
    w.raw_key(dict::iterations_key::count);
    w.integer(static_cast<int64_t>(iterations_->steps.size()));
    w.raw_key(dict::iterations_key::steps);
    w.begin_array();
    for (size_t i = 0; i < iterations_->steps.size(); ++i) {
      const IterationStep& step = iterations_->steps[i];
      w.begin_object();
      w.raw_key(dict::step_key::index);
      w.integer(static_cast<int64_t>(i));
      w.raw_key(dict::step_key::name);
      w.string(step.name);
      w.raw_key(dict::step_key::start);
      w.integer(step.start);
      w.raw_key(dict::step_key::end);
      w.integer(step.end);
      if (step.cut) {
        w.raw_key(dict::step_key::cut);
        w.boolean(true);
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
}

namespace {
bool is_backend_collective_scope(std::string_view name) {
  for (std::string_view prefix : {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:"}) {
    if (name.size() > prefix.size() && name.starts_with(prefix)) return true;
  }
  return false;
}
}  // namespace

bool RecordWriter::write_comm_lines(RecordFormatter& f) {
  std::vector<int32_t> scopes;
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    if (r.shape == RangeShape::kMark || r.end == kOpenEnd) continue;
    if (r.kind != MarkerKind::kUser && r.kind != MarkerKind::kOp) continue;
    if (!is_backend_collective_scope(trace_.pool.get(r.name))) continue;
    scopes.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(scopes.begin(), scopes.end(), [&](int32_t a, int32_t b) {
    return trace_.ranges[a].start < trace_.ranges[b].start;
  });
  for (int32_t i : scopes) {
    f.write_comm(trace_.ranges[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

bool RecordWriter::write_mark_lines(RecordFormatter& f) {
  // The program's own marks; pyprof's settings and compiled-kernel marks went to the header
  // and the compiled_kernel lines, and are not in trace_.ranges.
  std::vector<int32_t> marks;
  for (size_t i = 0; i < trace_.ranges.size(); ++i) {
    const RangeRecord& r = trace_.ranges[i];
    if (r.shape == RangeShape::kMark && r.kind == MarkerKind::kUser) {
      marks.push_back(static_cast<int32_t>(i));
    }
  }
  std::stable_sort(marks.begin(), marks.end(), [&](int32_t a, int32_t b) {
    return trace_.ranges[a].start < trace_.ranges[b].start;
  });
  for (int32_t i : marks) {
    f.write_mark(trace_.ranges[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

bool RecordWriter::write_memory_lines(RecordFormatter& f) {
  if (memory_ == nullptr || trace_.memory_source.empty()) return true;
  for (size_t k = 0; k < corr_.memory_order.size(); ++k) {
    f.write_memory(corr_.memory_order[k], corr_.memory_attributions[k]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

bool RecordWriter::write_range_lines(RecordFormatter& f) {
  // Which forward op each backward node was paired with, as the records say it.
  std::vector<int32_t> forward_of_node(trace_.ranges.size(), -1);
  for (const Attribution& a : corr_.attributions) {
    if (a.dir == Direction::kBackward && a.paired && a.node >= 0 && a.op >= 0) {
      forward_of_node[a.node] = a.op;
    }
  }
  // In the trace's own order, which a reader of the exported trace keeps (its ranks, and so
  // the records' `instance` numbers, then come out the same).
  // Ranges a --graph-capture join copied from the capture trace are left out: they are the
  // capture's, at its times (parse/graph_capture.h).
  for (size_t i = 0; i < trace_.ranges.size() && !trace_.imported_range(i); ++i) {
    if (trace_.ranges[i].shape == RangeShape::kMark) continue;
    f.write_range(static_cast<int32_t>(i), forward_of_node[i]);
    if (buffer_.size() >= kFlushBytes && !flush()) return false;
  }
  return true;
}

void RecordWriter::write_compiled_kernel_lines() {
  std::string line;
  for (size_t i = 0; i < trace_.compiled_kernels.size(); ++i) {
    const Trace::CompiledKernel& k = trace_.compiled_kernels[i];
    auto verdict = trace_.compiled_names.find(k.name);
    if (verdict == trace_.compiled_names.end() ||
        verdict->second == Trace::CompiledName::kAmbiguous) {
      continue;
    }
    const bool by_graph = verdict->second == Trace::CompiledName::kByGraph;
    // kOne: the name's first entry stands for all of them.
    if (!by_graph && trace_.compiled_kernel_index.at(k.name).front() != i) {
      continue;
    }
    line.clear();
    {
      JsonWriter w(line, kNoTruncation, 0);
      w.begin_object();
      w.raw_key(dict::key::kind);
      w.trusted_string(dict::name_of(dict::LineKind::kCompiledKernel));
      w.raw_key(dict::key::name);
      w.string(k.name);
      if (by_graph) {
        w.raw_key(dict::key::graph);
        w.string(k.graph);
      }
      w.raw_key(dict::key::kernel);
      w.raw_value(k.kernel);  // validated by the marker decoder
      w.end_object();
    }
    buffer_ += line;
    buffer_ += '\n';
  }
}

namespace {

// A chunk of records: its args resolved, in record order, on the writer's thread; then its
// lines formatted on a worker.
struct RecordChunk {
  struct Resolved {
    int32_t range;
    int32_t id;         // >= 0: a reference
    size_t text_begin;  // else the inline text, in `inline_args`
    size_t text_size;
  };
  // Hands a formatter the chunk's resolved args in the order it asks for them (args_ranges).
  class Args final : public ArgsSource {
   public:
    explicit Args(const RecordChunk& chunk) : chunk_(chunk) {}
    ArgsRef resolve(int32_t range) override {
      if (next_ >= chunk_.args.size() || chunk_.args[next_].range != range) {
        throw std::logic_error("parse: a record asked for args its chunk did not resolve");
      }
      const Resolved& r = chunk_.args[next_++];
      if (r.id >= 0) return {r.id, {}};
      return {-1, std::string_view(chunk_.inline_args).substr(r.text_begin, r.text_size)};
    }

   private:
    const RecordChunk& chunk_;
    size_t next_ = 0;
  };

  std::vector<Resolved> args;
  std::string inline_args;
  // `"kind":"args"` lines defined by the chunk's records: those before record i of the chunk
  // end at definitions_end[i].
  std::string definitions;
  std::vector<size_t> definitions_end;
  std::string text;  // the formatted lines
  std::unique_ptr<RecordFormatter> formatter;
};

}  // namespace

bool RecordWriter::write_records() {
  size_t chunk_records = 2048;
  unsigned threads = format_threads();
  if (const char* set = std::getenv(env::kParseWriteChunkRecords);
      set != nullptr && std::atoll(set) > 0) {
    chunk_records = static_cast<size_t>(std::atoll(set));
    threads = std::max(threads, 2u);
  }
  const size_t n = corr_.order.size();
  const size_t chunks = (n + chunk_records - 1) / chunk_records;
  if (!flush()) return false;  // the header goes first
  auto prepare = [&](size_t c, RecordChunk& chunk) {
    chunk.args.clear();
    chunk.inline_args.clear();
    chunk.definitions.clear();
    chunk.definitions_end.clear();
    for (size_t k = c * chunk_records, end = std::min(n, k + chunk_records); k < end; ++k) {
      for (int32_t range : args_ranges(trace_.ranges, corr_.attributions[k])) {
        if (range < 0) continue;
        const ArgsRef args = resolve_args(range, chunk.definitions);
        chunk.args.push_back({range, args.id, chunk.inline_args.size(), args.text.size()});
        chunk.inline_args += args.text;
      }
      chunk.definitions_end.push_back(chunk.definitions.size());
    }
  };
  auto format = [&](size_t c, RecordChunk& chunk) {
    if (!chunk.formatter) {
      chunk.formatter =
          std::make_unique<RecordFormatter>(trace_, corr_, iterations_, write_ranges_);
    }
    RecordChunk::Args args(chunk);
    RecordFormatter& f = *chunk.formatter;
    f.set_output(&chunk.text);
    f.set_args(&args);
    chunk.text.clear();
    size_t defined = 0;
    for (size_t k = c * chunk_records, end = std::min(n, k + chunk_records); k < end; ++k) {
      const size_t definitions_end = chunk.definitions_end[k - c * chunk_records];
      chunk.text.append(chunk.definitions, defined, definitions_end - defined);
      defined = definitions_end;
      f.write_record(k);
    }
  };
  bool written = true;
  auto consume = [&](size_t, RecordChunk& chunk) { return written = output_.submit(chunk.text); };
  try {
    process_chunks_in_order<RecordChunk>(chunks, threads, prepare, format, consume);
  } catch (...) {
    output_.finish();  // nothing in flight once this returns
    throw;
  }
  return written;
}

bool RecordWriter::write(const std::string& source) {
  buffer_.reserve(kFlushBytes + (kFlushBytes >> 2));
  write_header(source);
  write_compiled_kernel_lines();
  bool ok = write_records();
  RecordFormatter f(trace_, corr_, iterations_, write_ranges_);
  f.set_output(&buffer_);
  f.set_args(this);
  // After the GPU records, in start order: they are no GPU activity (docs/formats.md §3).
  for (size_t k = 0; ok && k < corr_.sync_attributions.size(); ++k) {
    f.write_sync(corr_.sync_attributions[k]);
    if (buffer_.size() >= kFlushBytes) ok = flush();
  }
  ok = ok && write_comm_lines(f);
  ok = ok && write_mark_lines(f);
  ok = ok && write_memory_lines(f);
  if (ok && write_ranges_) ok = write_range_lines(f);
  ok = ok && flush();
  // Waited for after a failure too: the caller closes the stream once this returns, so no
  // write may still be in flight (errno: the failed write's).
  ok = output_.finish() && ok;
  return ok && std::fflush(out_) == 0;
}

}  // namespace pyprof::parse
