// Tests of the streaming Chrome-trace scanner (json_stream.h). Documents are fed through
// memory_source() in small chunks (1, 2, 3, ... bytes), so that every value straddles refill
// positions; each event and top-level value must come out byte for byte as it stands in the
// document (checked against the byte ranges the test recorded while building it), and bad
// documents must end with the result json_stream.h documents.
#include "parse/json_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

// The largest single allocation while `g_track_allocations` is set: how the test sees that the
// scanner does not hold an oversized event (its buffer is the only large allocation it makes).
// This replaces the global operator new and delete of the parse_tests binary, every form but the
// aligned ones, so that whatever one form allocates another frees (libraries' nothrow news
// included); untracked, they are plain malloc and free.
namespace {
std::atomic<bool> g_track_allocations{false};
std::atomic<size_t> g_largest_allocation{0};

void* tracked_malloc(size_t n) noexcept {
  if (g_track_allocations.load(std::memory_order_relaxed)) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (n > seen && !g_largest_allocation.compare_exchange_weak(seen, n)) {
    }
  }
  return std::malloc(n == 0 ? 1 : n);
}
void* tracked_malloc_or_throw(size_t n) {
  if (void* p = tracked_malloc(n)) return p;
  throw std::bad_alloc();
}
}  // namespace

// GCC sees free() called on what `new` returned once these inline into a caller; they are a
// matched pair (malloc and free underneath both).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) { return tracked_malloc_or_throw(n); }
void* operator new[](size_t n) { return tracked_malloc_or_throw(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return tracked_malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return tracked_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace pyprof::parse {
namespace {

using namespace std::string_literals;

// Chunk sizes: every refill position for small values, and the whole document at once.
constexpr size_t kChunks[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 4096};

struct Collected : ChromeTraceVisitor {
  std::vector<std::pair<std::string, int64_t>> events;
  std::vector<std::pair<std::string, std::string>> top;
  int64_t nonzero_padding = 0;
  // Reads the kJsonPadding bytes after each view, as simdjson may (ASan checks that they exist):
  // zeros, whatever the document holds there.
  void touch_padding(std::string_view json) {
    for (size_t i = 0; i < kJsonPadding; ++i) nonzero_padding += json.data()[json.size() + i] != 0;
  }
  void on_event(std::string_view json, int64_t offset) override {
    touch_padding(json);
    events.emplace_back(std::string(json), offset);
  }
  void on_top_level(std::string_view key, std::string_view json) override {
    touch_padding(json);
    top.emplace_back(std::string(key), std::string(json));
  }
};

ChromeTraceScan scan(std::string_view doc, size_t chunk, Collected& out,
                     ChromeTraceLimits limits = {}) {
  limits.chunk_bytes = chunk;
  auto source = memory_source(doc);
  return scan_chrome_trace(*source, out, limits);
}

// A document built piece by piece, remembering where each event and value lies.
struct Doc {
  std::string text;
  std::vector<std::pair<std::string, int64_t>> events;  // text, offset
  std::vector<std::pair<std::string, std::string>> top;
  std::vector<size_t> event_ends, top_ends;  // offset just past each
  size_t events_open = 0;                    // offset just past traceEvents' '['
  size_t close = 0;                          // offset of the document's last '}'

  void raw(std::string_view s) { text += s; }
  void event(std::string_view json) {
    events.emplace_back(std::string(json), static_cast<int64_t>(text.size()));
    text += json;
    event_ends.push_back(text.size());
  }
  void value(std::string_view key, std::string_view json) {
    top.emplace_back(std::string(key), std::string(json));
    text += json;
    top_ends.push_back(text.size());
  }
};

// Every kind of event and value, white space everywhere, a BOM, and strings whose escapes,
// quotes and brackets must not be taken for structure.
Doc tricky_document() {
  Doc d;
  d.raw("\xEF\xBB\xBF \r\n\t{ \n  \"schemaVersion\"\t:\n 1 ,\n  \"deviceProperties\" : ");
  d.value("deviceProperties", R"([ {"id": 0, "name": "A \"quoted\" [name] {x} \\"}, {"id" :1 } ])");
  d.raw(" ,\n \"we\\\"ird\":");  // a key holding an escaped quote: handed over as written
  d.value("we\\\"ird", R"("}]\\")");
  d.raw(",\"traceEvents\"\n:\n[");
  d.events_open = d.text.size();
  d.raw("\n   ");
  d.event(R"({"ph": "X", "name": "a\\\"b", "ts": 1.5})");
  d.raw(" ,");
  d.event(R"({"name":"\\\\"})");
  d.raw(",\n");
  d.event(R"({"name":"\\"})");
  d.raw(",");
  d.event(
      R"({"name":"}]{[,:\"\\","args":{"Input Dims":[[2,3],[[1],[2,[3]]]],"x":{"y":{"z":[]}}}})");
  d.raw("\t,\t");
  d.event("{\"name\":\"caf\\u00e9 \\ud83d\\ude00 caf\xC3\xA9\",\"\":{}}");
  d.raw(",");
  d.event("{}");
  d.raw(", ");
  d.event(R"([1, [2, {"a": "]"}]])");
  d.raw(" , ");
  d.event(R"("a string event")");
  d.raw(",\r\n");
  d.event("{ \"ph\" : \"X\" , \"args\" : { } }");
  d.raw("\n ]\n , ");
  d.raw("\"distributedInfo\": ");
  d.value("distributedInfo", R"({"rank": 3, "backend": "nccl", "x": [{}]})");
  d.raw(" , \"traceName\":");
  d.value("traceName", R"("run \"1\".json")");
  d.raw(",\"n\":");
  d.value("n", "7");
  d.close = d.text.size();
  d.raw("}\n\t ");
  return d;
}

TEST(JsonStream, HandsOverEveryEventAndValueExactlyAtEveryChunkSize) {
  const Doc d = tricky_document();
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(d.text, chunk, out);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.has_trace_events);
    EXPECT_FALSE(r.truncated);
    EXPECT_FALSE(r.trailing_garbage);
    EXPECT_EQ(r.bytes, static_cast<int64_t>(d.text.size()));
    EXPECT_EQ(r.events, static_cast<int64_t>(d.events.size()));
    EXPECT_EQ(r.oversized_events, 0);
    EXPECT_EQ(r.oversized_values, 0);
    EXPECT_EQ(out.events, d.events);
    EXPECT_EQ(out.nonzero_padding, 0);
    // "schemaVersion": 1 comes first; the rest as recorded.
    ASSERT_EQ(out.top.size(), d.top.size() + 1);
    EXPECT_EQ(out.top[0], std::make_pair("schemaVersion"s, "1"s));
    EXPECT_EQ(std::vector(out.top.begin() + 1, out.top.end()), d.top);
    for (const auto& [json, offset] : out.events) {
      EXPECT_EQ(d.text.substr(static_cast<size_t>(offset), json.size()), json);
    }
  }
}

TEST(JsonStream, TopLevelArrayIsTheEventList) {
  // The Chrome trace "JSON Array Format", with a BOM and no closing bracket after the last
  // literal but the array's own.
  const std::string doc = "\xEF\xBB\xBF[ {\"ph\":\"X\"},\n{\"a\":[1,2]} ,42]\n";
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(doc, chunk, out);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.has_trace_events);
    EXPECT_FALSE(r.trailing_garbage);
    const std::vector<std::pair<std::string, int64_t>> want = {
        {R"({"ph":"X"})", 5}, {R"({"a":[1,2]})", 17}, {"42", 30}};
    EXPECT_EQ(out.events, want);
    EXPECT_EQ(out.nonzero_padding, 0);
    EXPECT_TRUE(out.top.empty());
  }
}

TEST(JsonStream, LiteralsRightBeforeTheClosingBracket) {
  const std::string doc =
      R"({"traceEvents":[1,-2.5e+3,true,null,"s"],"a":false,"b":-0.5,"c":null})";
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(doc, chunk, out);
    EXPECT_TRUE(r.ok) << r.error;
    ASSERT_EQ(out.events.size(), 5u);
    EXPECT_EQ(out.events[0].first, "1");
    EXPECT_EQ(out.events[1].first, "-2.5e+3");
    EXPECT_EQ(out.events[2].first, "true");
    EXPECT_EQ(out.events[3].first, "null");
    EXPECT_EQ(out.events[4].first, "\"s\"");
    const std::vector<std::pair<std::string, std::string>> want = {
        {"a", "false"}, {"b", "-0.5"}, {"c", "null"}};
    EXPECT_EQ(out.top, want);
  }
}

TEST(JsonStream, EmptyDocumentsAndEmptyArrays) {
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    {
      Collected out;
      ChromeTraceScan r = scan(R"({"traceEvents":[]})", chunk, out);
      EXPECT_TRUE(r.ok);
      EXPECT_TRUE(r.has_trace_events);
      EXPECT_EQ(r.events, 0);
    }
    {
      Collected out;
      ChromeTraceScan r = scan(" [ ] ", chunk, out);
      EXPECT_TRUE(r.ok);
      EXPECT_TRUE(r.has_trace_events);
      EXPECT_FALSE(r.trailing_garbage);
    }
    {
      Collected out;
      ChromeTraceScan r = scan("{}", chunk, out);
      EXPECT_TRUE(r.ok);
      EXPECT_FALSE(r.has_trace_events);
    }
  }
}

TEST(JsonStream, NoTraceEvents) {
  Collected out;
  ChromeTraceScan r = scan(R"({"schemaVersion": 1, "other": [1]})", 3, out);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.has_trace_events);
  EXPECT_EQ(out.top.size(), 2u);
  // traceEvents that is not an array is an ordinary value.
  Collected out2;
  r = scan(R"({"traceEvents": {"ph": "X"}})", 3, out2);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.has_trace_events);
  ASSERT_EQ(out2.top.size(), 1u);
  EXPECT_EQ(out2.top[0].first, "traceEvents");
  EXPECT_EQ(out2.top[0].second, R"({"ph": "X"})");
}

TEST(JsonStream, EmptyAndWhiteSpaceAndNotJson) {
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan("", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "the file is empty");

    r = scan(" \n\t\r  ", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "the file holds only white space");

    r = scan("\xEF\xBB\xBF  ", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "the file holds only white space");

    r = scan("  x{}", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "not JSON: the document starts with 'x', not '{' or '[' (at byte 2)");

    r = scan(R"("traceEvents")", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("starts with '\"'"), std::string::npos) << r.error;

    r = scan("SQLite format 3\0"s, chunk, out);
    EXPECT_FALSE(r.ok);

    r = scan("\x1f\x8b\x08", chunk, out);  // gzip bytes given to the scanner as they are
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("byte 0x1f"), std::string::npos) << r.error;
    EXPECT_TRUE(out.events.empty());
    EXPECT_TRUE(out.top.empty());
  }
}

TEST(JsonStream, StructuralErrorsNameTheByte) {
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(R"({"traceEvents" [{"a":1}]})", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "invalid JSON: '[' where ':' belongs (at byte 15)");

    r = scan(R"({"a":1 "traceEvents":[]})", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "invalid JSON: '\"' where ',' or '}' belongs (at byte 7)");

    r = scan(R"({a:1})", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "invalid JSON: 'a' where a key belongs (at byte 1)");

    r = scan(R"({"a":1,})", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "invalid JSON: '}' where a key belongs (at byte 7)");

    Collected events;
    r = scan(R"({"traceEvents":[{"a":1} {"b":2}]})", chunk, events);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error,
              "invalid JSON in \"traceEvents\": '{' where ',' or ']' belongs (at byte 24)");
    ASSERT_EQ(events.events.size(), 1u);  // what came before was handed over
    EXPECT_EQ(events.events[0].first, R"({"a":1})");

    r = scan(R"({"traceEvents":[{"a":1}}])", chunk, out);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error,
              "invalid JSON in \"traceEvents\": '}' where ',' or ']' belongs (at byte 23)");
  }
}

TEST(JsonStream, TrailingGarbageIsFlagged) {
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(R"({"traceEvents":[{"a":1}]} {"x")", chunk, out);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.trailing_garbage);
    EXPECT_EQ(out.events.size(), 1u);

    r = scan("[{}]\n\n\t ", chunk, out);
    EXPECT_TRUE(r.ok);
    EXPECT_FALSE(r.trailing_garbage);

    r = scan("[{}]\0"s, chunk, out);
    EXPECT_TRUE(r.ok);
    EXPECT_TRUE(r.trailing_garbage);
  }
}

// The document cut at every byte: inside traceEvents (after an event) the events so far are
// kept and the scan is `truncated`; before traceEvents holds a whole event it is an error.
TEST(JsonStream, CutAtEveryByte) {
  const Doc d = tricky_document();
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{4096}}) {
    for (size_t cut = 0; cut <= d.close; ++cut) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", cut at " + std::to_string(cut));
      const std::string_view text = std::string_view(d.text).substr(0, cut);
      Collected out;
      ChromeTraceScan r = scan(text, chunk, out);
      size_t whole_events = 0;
      while (whole_events < d.event_ends.size() && d.event_ends[whole_events] <= cut) {
        ++whole_events;
      }
      ASSERT_EQ(out.events.size(), whole_events);
      EXPECT_TRUE(std::equal(out.events.begin(), out.events.end(), d.events.begin()));
      EXPECT_EQ(r.events, static_cast<int64_t>(whole_events));
      EXPECT_EQ(r.ok, whole_events > 0) << r.error;
      EXPECT_EQ(r.truncated, whole_events > 0);
      EXPECT_FALSE(r.error.empty());
      if (r.ok) {
        EXPECT_NE(r.error.find("the document ends inside"), std::string::npos) << r.error;
      }
      EXPECT_EQ(r.has_trace_events, cut >= d.events_open);
      // Top-level values (all but the one-digit "n" end in a bracket or quote) are handed over
      // once whole. "schemaVersion": 1 is first.
      size_t whole_values = 0;
      while (whole_values < d.top_ends.size() && d.top_ends[whole_values] <= cut) {
        ++whole_values;
      }
      const size_t schema_version = cut > d.text.find(" 1 ,") + 1 ? 1 : 0;
      ASSERT_EQ(out.top.size(), whole_values + schema_version);
      EXPECT_TRUE(std::equal(out.top.begin() + schema_version, out.top.end(), d.top.begin()));
    }
  }
}

// A literal cut by the end of the input is handed over as far as it goes, from where it starts.
TEST(JsonStream, LiteralAtTheEndOfACutDocument) {
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(R"({"traceEvents": [{"a":1}, 12345)", chunk, out);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.truncated);
    const std::vector<std::pair<std::string, int64_t>> want = {{R"({"a":1})", 17}, {"12345", 26}};
    EXPECT_EQ(out.events, want);

    Collected top;
    r = scan(R"({"traceEvents": [{"a":1}], "n": 12345)", chunk, top);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.truncated);
    const std::vector<std::pair<std::string, std::string>> want_top = {{"n", "12345"}};
    EXPECT_EQ(top.top, want_top);
  }
}

TEST(JsonStream, ValuesAtTheLimitAreKeptOneByteMoreIsSkipped) {
  ChromeTraceLimits limits;
  limits.max_event_bytes = 64;
  limits.max_top_level_bytes = 32;
  // An event of exactly 64 bytes and one of 65; a value of 32 bytes and one of 33.
  const std::string at_limit = "{\"name\":\"" + std::string(64 - 11, 'a') + "\"}";
  const std::string over = "{\"name\":\"" + std::string(65 - 11, '\\') + "b\"}";
  ASSERT_EQ(at_limit.size(), 64u);
  ASSERT_EQ(over.size(), 66u);  // 54 backslashes: 27 escaped ones, then "b"
  const std::string value_at = "\"" + std::string(30, 'v') + "\"";
  const std::string value_over = "[" + std::string(31, ' ') + "1]";
  ASSERT_EQ(value_at.size(), 32u);
  ASSERT_EQ(value_over.size(), 34u);
  const std::string doc = "{\"a\":" + value_at + ",\"b\":" + value_over + ",\"traceEvents\":[" +
                          at_limit + "," + over + "," + over + ",{}]}";
  for (size_t chunk : kChunks) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    ChromeTraceScan r = scan(doc, chunk, out, limits);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.events, 2);
    EXPECT_EQ(r.oversized_events, 2);
    EXPECT_EQ(r.oversized_values, 1);
    EXPECT_EQ(r.largest_skipped, 66);
    ASSERT_EQ(out.events.size(), 2u);
    EXPECT_EQ(out.events[0].first, at_limit);
    EXPECT_EQ(out.events[1].first, "{}");
    EXPECT_EQ(out.events[1].second, static_cast<int64_t>(doc.size() - 4));
    ASSERT_EQ(out.top.size(), 1u);
    EXPECT_EQ(out.top[0], std::make_pair("a"s, value_at));
  }
}

// A 10 MB event and a 10 MB top-level value under a 1 KiB limit: skipped, counted, measured,
// and never held (no allocation near their size), with the events around them kept.
TEST(JsonStream, OversizedEventsAndValuesAreNotHeld) {
  constexpr size_t kBig = 10'000'000;
  std::string big_event = "{\"ph\":\"X\",\"name\":\"";
  while (big_event.size() < kBig / 2) big_event += "ab\\\"[{}]\\\\ \\u00e9 ";  // in a string
  big_event += "\",\"args\":{\"list\":[";
  while (big_event.size() < kBig - 16) big_event += "[1,{\"k\":\"]\"}],";
  big_event += "0]}}";
  std::string big_value = "[";
  while (big_value.size() < kBig - 2) big_value += "{\"id\":0,\"name\":\"x\\\"}\"},";
  big_value += "0]";
  const std::string doc = "{\"deviceProperties\":" + big_value + ",\"small\":[1]," +
                          "\"traceEvents\":[{\"a\":1}," + big_event + ",{\"b\":2}]}";
  ChromeTraceLimits limits;
  limits.max_event_bytes = 1024;
  limits.max_top_level_bytes = 1024;
  for (size_t chunk : {size_t{7}, size_t{4096}, size_t{65536}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Collected out;
    out.events.reserve(4);
    out.top.reserve(4);
    g_largest_allocation = 0;
    g_track_allocations = true;
    ChromeTraceScan r = scan(doc, chunk, out, limits);
    g_track_allocations = false;
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.events, 2);
    EXPECT_EQ(r.oversized_events, 1);
    EXPECT_EQ(r.oversized_values, 1);
    EXPECT_EQ(r.largest_skipped,
              static_cast<int64_t>(std::max(big_event.size(), big_value.size())));
    ASSERT_EQ(out.events.size(), 2u);
    EXPECT_EQ(out.events[0].first, R"({"a":1})");
    EXPECT_EQ(out.events[1].first, R"({"b":2})");
    EXPECT_EQ(out.events[1].second, static_cast<int64_t>(doc.size() - 9));
    ASSERT_EQ(out.top.size(), 1u);
    EXPECT_EQ(out.top[0], std::make_pair("small"s, "[1]"s));
    // The buffer holds a chunk and at most one kept value (1 KiB), grown by doubling.
    EXPECT_LT(g_largest_allocation.load(), 4 * (chunk + 1024 + kJsonPadding))
        << "the scanner allocated " << g_largest_allocation.load() << " bytes at once";
  }
  // The largest of the two is reported, whichever comes first.
  Collected out;
  ChromeTraceScan r = scan("[" + big_event + "]", 4096, out, limits);
  EXPECT_EQ(r.largest_skipped, static_cast<int64_t>(big_event.size()));
  EXPECT_EQ(r.events, 0);
  EXPECT_TRUE(r.ok);
}

// A source that fails part way: its error is reported with the bytes read.
class FailingSource : public ByteSource {
 public:
  FailingSource(std::string bytes, std::string error)
      : bytes_(std::move(bytes)), error_(std::move(error)) {}
  size_t read(char* buffer, size_t capacity) override {
    const size_t n = std::min(capacity, bytes_.size() - at_);
    std::memcpy(buffer, bytes_.data() + at_, n);
    at_ += n;
    if (n == 0) failed_ = true;
    return n;
  }
  const std::string& error() const override { return failed_ ? error_ : none_; }

 private:
  std::string bytes_, error_, none_;
  size_t at_ = 0;
  bool failed_ = false;
};

TEST(JsonStream, SourceErrors) {
  ChromeTraceLimits limits;
  limits.chunk_bytes = 5;
  Collected out;
  FailingSource cut_in_events(R"({"traceEvents":[{"a":1},{"b")", "gzip: data error");
  ChromeTraceScan r = scan_chrome_trace(cut_in_events, out, limits);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.error, "gzip: data error; inside an event of \"traceEvents\" after 28 bytes");
  FailingSource cut_before(R"({"schemaVersion":1,"trace)", "gzip: data error");
  r = scan_chrome_trace(cut_before, out, limits);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "gzip: data error after 25 bytes");
  FailingSource nothing("", "cannot read: Is a directory");
  r = scan_chrome_trace(nothing, out, limits);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "cannot read: Is a directory after 0 bytes");
}

// A damaged document's keys can hold anything; the error stays one printable line.
TEST(JsonStream, ErrorsAreOnePrintableLine) {
  Collected out;
  ChromeTraceScan r = scan("{\"x\n\x1b[31m\": [1, 2", 4096, out);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error,
            "the document ends inside the value of \"x??[31m\" (truncated file?) (at byte 17)");
  r = scan("{\"" + std::string(3000, 'k') + "\": {", 4096, out);
  EXPECT_FALSE(r.ok);
  EXPECT_LT(r.error.size(), 200u) << r.error;
}

TEST(JsonStream, LooksLikeJsonOrGzip) {
  EXPECT_TRUE(looks_like_json_or_gzip("\x1f\x8b\x08\x00"));
  EXPECT_TRUE(looks_like_json_or_gzip("{"));
  EXPECT_TRUE(looks_like_json_or_gzip("["));
  EXPECT_TRUE(looks_like_json_or_gzip(" \r\n\t{\"traceEvents\""));
  EXPECT_TRUE(looks_like_json_or_gzip("\xEF\xBB\xBF{"));
  EXPECT_TRUE(looks_like_json_or_gzip("\xEF\xBB\xBF  ["));
  EXPECT_FALSE(looks_like_json_or_gzip(""));
  EXPECT_FALSE(looks_like_json_or_gzip("   \n"));
  EXPECT_FALSE(looks_like_json_or_gzip("\xEF\xBB\xBF"));
  EXPECT_FALSE(looks_like_json_or_gzip("\x1f"));
  EXPECT_FALSE(looks_like_json_or_gzip("\x8b\x1f"));
  EXPECT_FALSE(looks_like_json_or_gzip("SQLite format 3\0"s));
  EXPECT_FALSE(looks_like_json_or_gzip("\"traceEvents\""));
  EXPECT_FALSE(looks_like_json_or_gzip("==PROF== nvprof"));
  EXPECT_FALSE(looks_like_json_or_gzip("\0{"s));
}

}  // namespace
}  // namespace pyprof::parse
