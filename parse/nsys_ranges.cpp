#include "parse/nsys_reader.h"

// NsysReader's NVTX range reading (read_ranges, fetch_text): NVTX_EVENTS read in rowid chunks on
// their own connections and merged, apart from nsys_reader.cpp's tables of kernels, copies, API
// calls and device facts because it is the one part that runs on several threads.

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/env_vars.h"
#include "common/nsys_schema.h"
#include "parse/nsys_columns.h"

namespace pyprof::parse {

namespace {

// Domains are per process: (pid << 32 | domainId) -> domain name.
using DomainNames = std::unordered_map<uint64_t, std::string>;

// NVTX domains without a creation row: (pid, domain id).
using UnknownDomains = std::vector<std::pair<uint32_t, int64_t>>;

uint64_t domain_key(uint32_t pid, int64_t id) {
  return (uint64_t{pid} << 32) | static_cast<uint32_t>(id);
}

// The database's size in bytes (page count times page size); 0 when SQLite does not say.
uint64_t db_file_bytes(const SqliteDb& db) {
  uint64_t product = 1;
  for (const char* pragma : {"PRAGMA page_count", "PRAGMA page_size"}) {
    std::string error;
    Statement s = db.prepare(pragma, error);
    if (!s.valid() || s.step() != SQLITE_ROW || s.int64(0) <= 0) return 0;
    product *= static_cast<uint64_t>(s.int64(0));
  }
  return product;
}

// Reads the NVTX_EVENTS rows with rowid in [lo, hi] into `trace` (ranges, marks, their pool
// strings, stats, warnings), with room reserved for `expected_rows`. Runs on its own connection,
// so two chunks can be read at once. Domains without a creation row are added to
// `unknown_domains` ((pid, id), in the order first used) for warn_unknown_domains, once the
// whole table is read.
bool read_range_chunk(const SqliteDb& db, const std::string& select, int64_t lo, int64_t hi,
                      size_t expected_rows, const DomainNames& domain_names, Trace& trace,
                      UnknownDomains& unknown_domains, std::string& error) {
  Statement s = db.prepare(select + " WHERE rowid BETWEEN ? AND ?", error);
  if (!s.valid()) return false;
  s.bind_int64(1, lo);
  s.bind_int64(2, hi);
  StringIdCache strings;
  if (!strings.open(db, error)) return false;
  // Nearly every row is a range: sized once, the vector never holds two copies while growing
  // (3.2M ranges at 1M kernels: ~300 MB).
  trace.ranges.reserve(trace.ranges.size() + expected_rows);
  auto string_id = [&](int64_t id) { return strings.get(trace, id); };
  std::unordered_map<uint64_t, uint32_t> domains;  // domain_key -> pool id
  auto domain_of = [&](uint32_t pid, int64_t id) -> uint32_t {
    uint64_t key = domain_key(pid, id);
    auto it = domains.find(key);
    if (it != domains.end()) return it->second;
    auto name = domain_names.find(key);
    uint32_t pool_id;
    if (name != domain_names.end()) {
      pool_id = trace.pool.intern(name->second);
    } else {
      pool_id = trace.pool.intern("domain#" + std::to_string(id));
      unknown_domains.emplace_back(pid, id);
    }
    domains.emplace(key, pool_id);
    return pool_id;
  };

  using nsys::NvtxEventType;
  using nsys::to_int;
  Marker marker;
  // Registered strings (module markers, interned op markers) are decoded once per (string,
  // domain): a training loop pushes the same few thousand of them millions of times.
  struct Registered {
    Marker marker;
    MarkerPoolIds ids;
  };
  std::unordered_map<uint64_t, Registered> registered;
  TextMarkerCache text_markers;  // text op markers (version 1), decoded once per signature
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    int64_t type = s.int64_or(3, -1);
    RangeRecord base;
    // Ranges nsys imported from NVTXT files behave like the ones it recorded.
    if (type == to_int(NvtxEventType::kPushPopRange) ||
        type == to_int(NvtxEventType::kNvtxtPushPopRange)) {
      base.shape = RangeShape::kPushPop;
    } else if (type == to_int(NvtxEventType::kStartEndRange) ||
               type == to_int(NvtxEventType::kNvtxtStartEndRange)) {
      base.shape = RangeShape::kStartEnd;
    } else if (type == to_int(NvtxEventType::kMark)) {
      base.shape = RangeShape::kMark;
    } else {
      continue;  // domains (read beforehand), categories, thread names: not ranges
    }
    if (s.is_null(1)) {
      ++trace.stats.rows_skipped;
      trace.warn("range without start", "an NVTX_EVENTS row has NULL start: skipped");
      continue;
    }
    auto gtid = static_cast<uint64_t>(or_default(s, 4, 0));
    base.start = s.int64(1);
    base.end = base.shape == RangeShape::kMark ? base.start : or_default(s, 2, kOpenEnd);
    base.pid = nsys::pid_of_global_id(gtid);
    base.tid = nsys::tid_of_global_tid(gtid);
    int64_t domain_id = or_default(s, 5, 0);
    if (domain_id != 0) base.domain = domain_of(base.pid, domain_id);
    RangeValues values;
    values.uint64_value = static_cast<uint64_t>(s.int64(9));
    values.has_uint64 = values.uint64_value != 0 || !s.is_null(9);
    const int64_t category = or_default(s, 8, 0);
    if (category > 0 && category <= int64_t{UINT32_MAX}) {
      values.category = static_cast<uint32_t>(category);
    }
    if (const int64_t text_id = s.int64(6); text_id != 0 || !s.is_null(6)) {
      const uint32_t id = string_id(text_id);
      const std::string_view text = trace.pool.get(id);
      const TextRef ref{TextRef::Where::kPool, id};
      auto [it, fresh] = registered.try_emplace((uint64_t{id} << 32) | base.domain);
      if (fresh) decode_marker(text, marker_domain(trace, base), it->second.marker);
      add_decoded_range(trace, base, text, ref, it->second.marker, values, &it->second.ids);
    } else {
      const std::string_view text = s.text(7);
      // A rowid past what a TextRef holds (a hand-made table) keeps its text in the pool.
      const int64_t row = s.int64(0);
      const TextRef ref = row >= 0 && row <= kMaxTextRowId
                              ? TextRef{TextRef::Where::kRow, row}
                              : TextRef{TextRef::Where::kPool, trace.pool.intern(text)};
      text_markers.add_range(trace, base, text, ref, marker, values);
    }
  }
  if (rc != SQLITE_DONE) {
    error = "error reading table NVTX_EVENTS: " + db.last_error();
    return false;
  }
  return true;
}

// One warning per domain without a creation row, in the order the table first used them.
void warn_unknown_domains(const UnknownDomains& domains, Trace& trace) {
  std::set<std::pair<uint32_t, int64_t>> warned;
  for (const auto& [pid, id] : domains) {
    if (!warned.insert({pid, id}).second) continue;
    trace.warn("unknown NVTX domain", "ranges use domain id " + std::to_string(id) +
                                          " of process " + std::to_string(pid) +
                                          ", which has no creation row");
  }
}

// Moves `part`'s ranges, counts and warnings into `trace`, renumbering its pool ids.
void merge_ranges(Trace& part, Trace& trace) {
  std::vector<uint32_t> remap(part.pool.size(), UINT32_MAX);
  auto map = [&](uint32_t id) {
    if (remap[id] == UINT32_MAX) remap[id] = trace.pool.intern(part.pool.get(id));
    return remap[id];
  };
  trace.ranges.reserve(trace.ranges.size() + part.ranges.size());
  for (RangeRecord r : part.ranges) {
    r.name = map(r.name);
    r.domain = map(r.domain);
    r.detail = map(r.detail);
    r.stack = map(r.stack);
    if (r.text.where == TextRef::Where::kPool) {
      r.text.id = map(static_cast<uint32_t>(r.text.id));
    }
    if (r.args_length == kArgsInPool) r.args_offset = map(r.args_offset);
    trace.ranges.push_back(r);
  }
  // The trace-level marks: the last settings mark in table order wins, compiled kernels join.
  if (!part.torch_settings.empty()) trace.torch_settings = std::move(part.torch_settings);
  merge_compiled_kernels(part, trace);
  trace.interned_args_bytes += part.interned_args_bytes;
  ReadStats& a = trace.stats;
  const ReadStats& b = part.stats;
  a.ranges += b.ranges;
  a.marks += b.marks;
  a.malformed_markers += b.malformed_markers;
  a.ranges_end_before_start += b.ranges_end_before_start;
  a.ranges_unclosed += b.ranges_unclosed;
  a.rows_skipped += b.rows_skipped;
  for (auto& group : part.warnings) {
    for (int64_t i = 0; i < group.count; ++i) {
      trace.warn(group.category, i < static_cast<int64_t>(group.examples.size())
                                     ? std::move(group.examples[i])
                                     : std::string());
    }
  }
}

}  // namespace

bool NsysReader::read_ranges(Trace& trace, std::string& error,
                             const std::function<bool()>& other_tables) {
  const std::string table = "NVTX_EVENTS";
  if (!db_.has_table(table)) return other_tables();
  auto cols = db_.columns(table);
  if (!require_columns(cols, table, {"start", "eventType"}, error, "", kNotNsys)) return false;
  if (!cols.count("text") && !cols.count("textId")) {
    error = "table NVTX_EVENTS has neither 'text' nor 'textId'";
    return false;
  }
  if (cols.count("text")) {
    text_lookup_ = db_.prepare("SELECT text FROM NVTX_EVENTS WHERE rowid = ?", error);
    if (!text_lookup_.valid()) return false;
  }
  // Domain names must be known before any message is decoded (only the "pyprof" domain holds
  // JSON markers), and a range can come before its domain's creation row in table order.
  auto read_domain_names = [&](const SqliteDb& db, DomainNames& names, std::string& err) {
    Statement s = db.prepare(
        select_columns(cols, table, {"globalTid", "domainId", "text"}, " WHERE eventType = ?"),
        err);
    if (!s.valid()) return false;
    s.bind_int64(1, nsys::to_int(nsys::NvtxEventType::kDomainCreate));
    while (s.step() == SQLITE_ROW) {
      auto pid = nsys::pid_of_global_id(static_cast<uint64_t>(or_default(s, 0, 0)));
      names[domain_key(pid, or_default(s, 1, 0))] = std::string(s.text(2));
    }
    return true;
  };
  // Two single-aggregate queries: SQLite answers each from the b-tree's ends.
  int64_t lo = 0, hi = -1;
  for (const char* agg : {"min", "max"}) {
    Statement s = db_.prepare(std::string("SELECT ") + agg + "(rowid) FROM NVTX_EVENTS", error);
    if (!s.valid()) return false;
    if (s.step() == SQLITE_ROW && !s.is_null(0)) (agg[1] == 'i' ? lo : hi) = s.int64(0);
  }
  DomainNames domain_names;
  const std::string select =
      select_columns(cols, table,
                     {"rowid", "start", "end", "eventType", "globalTid", "domainId", "textId",
                      "text", "category", "uint64Value"});
  uint64_t parallel_rows = 200000, chunk_rows = uint64_t{1} << 18;
  if (const char* set = std::getenv(env::kParseChunkRows); set != nullptr && std::atoll(set) > 0) {
    parallel_rows = 0;
    chunk_rows = static_cast<uint64_t>(std::atoll(set));
  }
  // The chunks below split the rowid span, which in the files nsys and pyprof write is the row
  // count. Any table may have gaps (rows deleted, rowids given by hand, negative ones): a span
  // longer than the whole file could hold rows is read in one pass instead, without a reserve
  // for rows that are not there. (No row of NVTX_EVENTS takes less than 16 bytes of the file.)
  const uint64_t extent = hi >= lo ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 0;
  const bool dense_enough = hi >= lo && extent < db_file_bytes(db_) / 16;
  if (hi < lo || extent < parallel_rows || !dense_enough) {
    UnknownDomains unknown;
    const size_t expected_rows = dense_enough ? static_cast<size_t>(extent + 1) : 0;
    if (!other_tables() || !read_domain_names(db_, domain_names, error) ||
        (hi >= lo && !read_range_chunk(db_, select, lo, hi, expected_rows, domain_names, trace,
                                       unknown, error)))
      return false;
    warn_unknown_domains(unknown, trace);
    return true;
  }
  // Decoding messages is most of the read time. The table is read in chunks of rows, each into a
  // Trace of its own, by two threads on their own connections: a second thread reads the domain
  // names and starts on the chunks at once, this one joins in once it has read the other tables.
  // The chunks are merged in table order as they are done, so the trace (its pool ids included)
  // is the same whichever thread read which chunk, and few chunks wait in memory at a time.
  const auto chunks = static_cast<size_t>(extent / chunk_rows + 1);
  struct Chunk {
    std::unique_ptr<Trace> trace;
    UnknownDomains unknown_domains;
    std::string error;
    bool done = false, ok = false;
  };
  std::vector<Chunk> parts(chunks);
  // The trace's budget for interned args is shared between the chunks: merged, they stay in it.
  const size_t args_budget_per_chunk =
      (trace.interned_args_budget -
       std::min(trace.interned_args_bytes, trace.interned_args_budget)) /
      chunks;
  std::mutex mutex;
  std::condition_variable chunk_done;
  size_t next = 0;
  bool stop = false;
  // Range arrays of merged chunks, emptied, for the chunks still to read (under `mutex`): the
  // kernel zeroes every page of a fresh array when it is first written, ~25 MB a chunk.
  std::vector<std::vector<RangeRecord>> spare_ranges;
  // Reads chunks until none is left (or one failed, or stop); `merge` runs after each.
  auto read_chunks = [&](const SqliteDb& db, const std::function<void()>& merge) {
    for (;;) {
      size_t c;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (stop || next >= chunks) return;
        c = next++;
      }
      auto part = std::make_unique<Trace>();
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!spare_ranges.empty()) {
          part->ranges = std::move(spare_ranges.back());
          spare_ranges.pop_back();
        }
      }
      part->interned_args_budget = args_budget_per_chunk;
      std::string part_error;
      // In range: the extent is below the file's size, far from int64's limits.
      const int64_t first = lo + static_cast<int64_t>(c * chunk_rows);
      const int64_t last = std::min(hi, first + static_cast<int64_t>(chunk_rows) - 1);
      UnknownDomains unknown;
      const bool ok =
          read_range_chunk(db, select, first, last, static_cast<size_t>(last - first + 1),
                           domain_names, *part, unknown, part_error);
      {
        std::lock_guard<std::mutex> lock(mutex);
        parts[c].trace = std::move(part);
        parts[c].unknown_domains = std::move(unknown);
        parts[c].error = std::move(part_error);
        parts[c].ok = ok;
        parts[c].done = true;
        if (!ok) stop = true;
      }
      chunk_done.notify_all();
      if (merge) merge();
    }
  };
  std::string worker_error;
  std::promise<bool> names_ready;
  std::thread worker([&] {
    SqliteDb second;
    bool ok = second.open(db_.opened_path(), worker_error) &&
              read_domain_names(second, domain_names, worker_error);
    names_ready.set_value(ok);
    if (ok) read_chunks(second, nullptr);
  });
  trace.ranges.reserve(trace.ranges.size() + static_cast<size_t>(extent + 1));
  // Merges the chunks that are done, in order, from `merged` on; with `wait`, all of them.
  size_t merged = 0;
  bool merge_ok = true;
  UnknownDomains unknown;
  auto merge_done = [&](bool wait) {
    while (merge_ok && merged < chunks) {
      Chunk* part;
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (wait) {
          chunk_done.wait(lock, [&] { return parts[merged].done || (stop && next <= merged); });
        }
        if (!parts[merged].done) return;
        part = &parts[merged];
      }
      if (!part->ok) {
        error = part->error;
        merge_ok = false;
        return;
      }
      merge_ranges(*part->trace, trace);
      std::vector<RangeRecord> ranges = std::move(part->trace->ranges);
      ranges.clear();
      part->trace.reset();
      {
        // One spare a reading thread: the chunks read ahead while this thread read the other
        // tables are not all kept, which would raise the read's peak by their size.
        std::lock_guard<std::mutex> lock(mutex);
        if (spare_ranges.size() < 2) spare_ranges.push_back(std::move(ranges));
      }
      unknown.insert(unknown.end(), part->unknown_domains.begin(), part->unknown_domains.end());
      ++merged;
    }
  };
  bool ok = other_tables();
  const bool names_ok = names_ready.get_future().get();
  if (ok && names_ok) {
    read_chunks(db_, [&] { merge_done(false); });
    merge_done(true);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  worker.join();
  if (!ok) return false;
  if (!names_ok) {
    error = worker_error;
    return false;
  }
  if (!merge_ok) return false;
  if (merged < chunks) {
    error = "NVTX_EVENTS: chunk " + std::to_string(merged) + " was not read";
    return false;
  }
  warn_unknown_domains(unknown, trace);
  return true;
}

std::string_view NsysReader::fetch_text(const Trace& trace, TextRef ref) {
  if (ref.where == TextRef::Where::kPool) return trace.pool.get(static_cast<uint32_t>(ref.id));
  if (ref.where != TextRef::Where::kRow || !text_lookup_.valid()) return {};
  text_lookup_.reset();
  text_lookup_.bind_int64(1, ref.id);
  if (text_lookup_.step() != SQLITE_ROW) return {};
  fetched_.assign(text_lookup_.text(0));
  return fetched_;
}

}  // namespace pyprof::parse
