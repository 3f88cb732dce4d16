// Streaming a Chrome-trace JSON document (torch.profiler's export_chrome_trace, plain or gzip) in
// bounded memory: the top-level object's values are handed over one at a time, and the
// "traceEvents" array one event at a time, so a 10 GB trace needs no more memory than its largest
// event.
//
// The scanner only finds where each value begins and ends (strings, escapes and nesting); the
// caller parses the value's text (simdjson). Every view handed to a visitor has at least
// kJsonPadding readable bytes after it, as simdjson's On-Demand parser requires.
//
// Bad input never throws: structural errors end the scan with a one-line message naming the byte
// offset; values too large to hold, values of the wrong kind and a document cut short are
// reported to the visitor or in the result, and the scan goes on where it can.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof::parse {

inline constexpr size_t kJsonPadding = 64;  // >= SIMDJSON_PADDING

// Where the bytes come from. read() fills up to `capacity` bytes and returns how many, 0 at the
// end; on failure it returns 0 and error() says why.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t read(char* buffer, size_t capacity) = 0;
  virtual const std::string& error() const = 0;
};

// A file, plain or gzip (told apart by its first bytes, not its name; concatenated gzip members
// are read as one stream). Decompression runs on a second thread, so that inflating and
// parsing overlap.
std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error);

// Bytes already in memory (tests, fuzzing).
std::unique_ptr<ByteSource> memory_source(std::string_view bytes);

class ChromeTraceVisitor {
 public:
  virtual ~ChromeTraceVisitor() = default;
  // One element of "traceEvents" (normally an object; the caller checks). `offset`: its first
  // byte's offset in the (decompressed) document.
  virtual void on_event(std::string_view json, int64_t offset) = 0;
  // A top-level value other than "traceEvents" (deviceProperties, distributedInfo, ...).
  virtual void on_top_level(std::string_view key, std::string_view json) = 0;
  // Called on the scanner's thread with each event's bytes before it is handed over: a number
  // >= 0 drops the event unparsed and counts it in ChromeTraceScan::dropped under that number
  // (events the caller only counts, found cheaply); -1 hands it over. It runs concurrently with
  // the calls above, so it must not touch the visitor's state.
  virtual int drop_unparsed(std::string_view json) const {
    (void)json;
    return -1;
  }
};

struct ChromeTraceScan {
  bool ok = false;    // false: `error` says why nothing (more) could be read
  std::string error;  // one line, with the byte offset
  bool has_trace_events = false;
  int64_t trace_events_arrays = 0;  // "traceEvents" keys with an array (one, in a sound trace)
  bool truncated = false;           // the document ended inside traceEvents (events so far kept)
  int64_t bytes = 0;                // decompressed bytes read
  int64_t events = 0;               // elements of traceEvents (handed to on_event, or dropped)
  std::vector<int64_t> dropped;     // by drop_unparsed's number
  int64_t oversized_events = 0;     // elements larger than the limit, skipped
  int64_t oversized_values = 0;     // top-level values larger than the limit, skipped
  int64_t largest_skipped = 0;      // bytes of the largest skipped element or value
  bool trailing_garbage = false;    // bytes after the document's end
};

struct ChromeTraceLimits {
  size_t max_event_bytes = size_t{16} << 20;      // one event (real ones: well under 1 MiB)
  size_t max_top_level_bytes = size_t{64} << 20;  // one top-level value (deviceProperties)
  size_t chunk_bytes = size_t{4} << 20;           // read size
};

// Scans the whole document. A top-level array (the Chrome trace "JSON Array Format") is taken as
// the event list.
ChromeTraceScan scan_chrome_trace(ByteSource& source, ChromeTraceVisitor& visitor,
                                  const ChromeTraceLimits& limits = {});

// True when `head` (a file's first bytes) looks like a JSON document or a gzip stream.
bool looks_like_json_or_gzip(std::string_view head);

}  // namespace pyprof::parse
