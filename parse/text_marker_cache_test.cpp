// TextMarkerCache against its oracle, add_range: the same ranges, pool ids, counts and warnings
// for text markers that repeat, that differ in their args, that are malformed, or whose id or
// seq the cache's key cannot stand for; and find_pyprof_id_digits' edge cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse/markers.h"
#include "parse/trace.h"

namespace pyprof::parse {
namespace {

TEST(FindPyprofIdDigits, TheAnnotatorsLayout) {
  const std::string text =
      R"({"v":1,"op":"aten::addmm","id":906,"seq":-1,"tid":1,"scope":"function","args":{}})";
  const auto d = find_pyprof_id_digits(text);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->id, 906);
  EXPECT_EQ(d->seq, -1);
  EXPECT_EQ(text.substr(0, d->id_begin), R"({"v":1,"op":"aten::addmm","id":)");
  EXPECT_EQ(text.substr(d->seq_end), R"(,"tid":1,"scope":"function","args":{}})");

  const auto last = find_pyprof_id_digits(R"({"v":1,"op":"x","id":0,"seq":123456789012345678})");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, 0);
  EXPECT_EQ(last->seq, 123456789012345678);
  EXPECT_EQ(last->seq_end,
            std::string_view(R"({"v":1,"op":"x","id":0,"seq":123456789012345678)").size());
}

TEST(FindPyprofIdDigits, AnythingElseIsLeftToTheDecoder) {
  for (const char* text : {
           R"({"v":1,"op":"x","id":01,"seq":2,"args":{}})",                   // leading zero
           R"({"v":1,"op":"x","id":1234567890123456789,"seq":2,"args":{}})",  // 19 digits
           R"({"v":1,"op":"x","id":-,"seq":2,"args":{}})",
           R"({"v":1,"op":"x","id":1.5,"seq":2,"args":{}})",
           R"({"v":1,"op":"x","id":1e3,"seq":2,"args":{}})",
           R"({"v":1,"op":"x","id":1,"seq":2 ,"args":{}})",
           R"({"v":1,"op":"x","id":1,"seq":2)",                // cut short
           R"({"v":1,"op":"x\"y","id":1,"seq":2,"args":{}})",  // an escape in the name
           R"({"v":1,"op":"x","seq":2,"id":1,"args":{}})",     // another order
           R"({"v":2,"op":"x","id":1,"seq":2,"args":{}})",
           R"( {"v":1,"op":"x","id":1,"seq":2,"args":{}})",
           R"({"v":1,"op":"x","id":"1","seq":2,"args":{}})",
           R"({"v":1,"op":"x)",
           "",
       }) {
    EXPECT_FALSE(find_pyprof_id_digits(text).has_value()) << text;
  }
}

// Op markers as pyprof's annotator writes them, step after step, with the cases the cache must
// hand to the decoder mixed in.
std::vector<std::string> marker_texts() {
  std::vector<std::string> out;
  int64_t id = 100;
  for (int step = 0; step < 4; ++step) {
    for (int layer = 0; layer < 3; ++layer) {
      const std::string shape = std::to_string(32 * (layer + 1));
      out.push_back(
          R"({"v":1,"op":"aten::addmm","id":)" + std::to_string(id++) + R"(,"seq":)" +
          std::to_string(step * 10 + layer) +
          R"(,"tid":1,"scope":"function","stack":"train.py:12","args":{"self":{"shape":[)" + shape +
          R"(],"dtype":"float32"},"alpha":1}})");
      out.push_back(R"({"v":1,"op":"AddmmBackward0","id":)" + std::to_string(id++) + R"(,"seq":)" +
                    std::to_string(step * 10 + layer) +
                    R"(,"tid":2,"fwd_tid":1,"scope":"backward","args":{}})");
      out.push_back(
          R"({"v":1,"op":"aten::empty","id":)" + std::to_string(id++) +
          R"(,"seq":-1,"tid":1,"scope":"function","overload":"memory_format","args":{"size":[)" +
          shape + R"(]}})");
    }
    // A second "id" key: the decoder takes the later one. In step 0 both are 7, so that decoding
    // that one text cannot tell the cache that the key does not stand for the others.
    out.push_back(R"({"v":1,"op":"aten::dup","id":)" + std::to_string(step == 0 ? 7 : id++) +
                  R"(,"seq":5,"tid":1,"scope":"function","args":{},"id":7})");
    // Malformed args (warned, quoted): every one decoded and warned.
    out.push_back(R"({"v":1,"op":"aten::bad","id":)" + std::to_string(id++) +
                  R"(,"seq":-1,"tid":1,"scope":"function","args":{"x":[1,}})");
    // An id past int64 (too many digits for a key, and a leading zero in step 0): decoded and
    // warned each time.
    out.push_back(R"({"v":1,"op":"aten::big","id":)" + std::to_string(step) +
                  R"(99999999999999999999,"seq":-1,"tid":1,"scope":"function","args":{}})");
    // A user range and a module marker in the pyprof domain.
    out.push_back(R"({"v":1,"op":"prefetch","id":)" + std::to_string(id++) +
                  R"(,"seq":-1,"tid":1,"scope":"user","args":{}})");
    out.push_back(R"({"v":1,"module":"Net.fc","type":"Linear"})");
  }
  return out;
}

struct Built {
  Trace trace;
  int64_t hits = 0;
};

// The texts as ranges of the pyprof domain (or of the default domain, where the digits are part
// of the name), through the cache or through add_range.
Built build(const std::vector<std::string>& texts, bool cached, bool pyprof_domain = true) {
  Built b;
  const uint32_t domain = pyprof_domain ? b.trace.pool.intern("pyprof") : 0;
  TextMarkerCache cache;
  Marker scratch;
  int64_t t = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    RangeRecord r;
    r.start = t;
    r.end = t + 5;
    t += 10;
    r.pid = 7;
    r.tid = 7;
    r.domain = domain;
    const TextRef ref{TextRef::Where::kRow, static_cast<int64_t>(i + 1)};
    if (cached) {
      cache.add_range(b.trace, r, texts[i], ref, scratch);
    } else {
      add_range(b.trace, r, texts[i], ref, scratch);
    }
  }
  b.hits = cache.hits();
  return b;
}

// A range's args as the record writer finds them: in the pool, or in its text.
std::string_view args_of(const Built& b, const RangeRecord& r,
                         const std::vector<std::string>& texts) {
  if (r.args_length == kArgsInPool) return b.trace.pool.get(r.args_offset);
  return std::string_view(texts[static_cast<size_t>(r.text.id) - 1])
      .substr(r.args_offset, r.args_length);
}

// The same ranges, pool and warnings. Args may be found in the pool where add_range, the
// trace's budget for interned args spent, points into the text: the same args either way.
void expect_same(const Built& got, const Built& want, const std::vector<std::string>& texts) {
  ASSERT_EQ(got.trace.ranges.size(), want.trace.ranges.size());
  for (size_t i = 0; i < want.trace.ranges.size(); ++i) {
    const RangeRecord &a = got.trace.ranges[i], &b = want.trace.ranges[i];
    SCOPED_TRACE("range " + std::to_string(i));
    EXPECT_EQ(a.start, b.start);
    EXPECT_EQ(a.end, b.end);
    EXPECT_EQ(a.op_id, b.op_id);
    EXPECT_EQ(a.seq, b.seq);
    EXPECT_EQ(a.rf_tid, b.rf_tid);
    EXPECT_EQ(a.fwd_tid, b.fwd_tid);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.detail, b.detail);
    EXPECT_EQ(a.stack, b.stack);
    EXPECT_EQ(a.domain, b.domain);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.dialect, b.dialect);
    EXPECT_EQ(a.has_args, b.has_args);
    EXPECT_EQ(args_of(got, a, texts), args_of(want, b, texts));
    EXPECT_EQ(a.text.where, b.text.where);
    EXPECT_EQ(a.text.id, b.text.id);
  }
  ASSERT_EQ(got.trace.pool.size(), want.trace.pool.size());
  for (uint32_t id = 0; id < want.trace.pool.size(); ++id) {
    EXPECT_EQ(got.trace.pool.get(id), want.trace.pool.get(id));
  }
  EXPECT_EQ(got.trace.stats.ranges, want.trace.stats.ranges);
  EXPECT_EQ(got.trace.stats.malformed_markers, want.trace.stats.malformed_markers);
  ASSERT_EQ(got.trace.warnings.size(), want.trace.warnings.size());
  for (size_t i = 0; i < want.trace.warnings.size(); ++i) {
    EXPECT_EQ(got.trace.warnings[i].category, want.trace.warnings[i].category);
    EXPECT_EQ(got.trace.warnings[i].count, want.trace.warnings[i].count);
    EXPECT_EQ(got.trace.warnings[i].examples, want.trace.warnings[i].examples);
  }
}

TEST(TextMarkerCache, AddsWhatAddRangeAdds) {
  const std::vector<std::string> texts = marker_texts();
  const Built want = build(texts, false);
  const Built got = build(texts, true);
  expect_same(got, want, texts);
  // Each layer's addmm and empty repeat in steps 2 to 4 (9 + 9); the backward node's text is the
  // same in every layer (11) and so is "prefetch" (3); the dup ranges never come from the cache.
  EXPECT_EQ(got.hits, 32);
  // What the oracle says about the special cases, so that the comparison means something.
  EXPECT_EQ(want.trace.stats.malformed_markers, 8);  // the bad args and the big ids
  int64_t dup_ids = 0;
  for (const RangeRecord& r : want.trace.ranges) {
    if (want.trace.pool.get(r.name) == "aten::dup") {
      EXPECT_EQ(r.op_id, 7);
      ++dup_ids;
    }
  }
  EXPECT_EQ(dup_ids, 4);
}

TEST(TextMarkerCache, OtherDomainsKeepTheDigitsInTheName) {
  const std::vector<std::string> texts = marker_texts();
  const Built got = build(texts, true, false);
  expect_same(got, build(texts, false, false), texts);
  EXPECT_EQ(got.hits, 0);
}

TEST(TextMarkerCache, StopsGrowingAtItsBound) {
  // Signatures that never repeat (a new shape every call), then one that does.
  std::vector<std::string> texts;
  for (size_t i = 0; i < TextMarkerCache::kMaxEntries + 50; ++i) {
    texts.push_back(R"({"v":1,"op":"aten::relu","id":)" + std::to_string(i) +
                    R"(,"seq":-1,"tid":1,"scope":"function","args":{"self":{"shape":[)" +
                    std::to_string(i) + "]}}}");
  }
  for (int i = 0; i < 3; ++i) texts.push_back(texts.back());
  const Built got = build(texts, true);
  expect_same(got, build(texts, false), texts);
  EXPECT_EQ(got.hits, 0);  // the repeated one came after the bound: decoded each time
}

TEST(TextMarkerCache, LongMarkersStopItAtItsByteBound) {
  // Markers of 1 MB args that repeat: past 32 MB of texts none is kept, and each is decoded.
  const std::string big(1 << 20, 'x');
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) {
    texts.push_back(R"({"v":1,"op":"aten::cat","id":)" + std::to_string(i) +
                    R"(,"seq":-1,"tid":1,"scope":"function","args":{"s":")" + std::to_string(i) +
                    big + R"("}})");
  }
  for (int i = 0; i < 40; ++i) texts.push_back(texts[i]);  // the same 40 again
  const Built got = build(texts, true);
  expect_same(got, build(texts, false), texts);
  // Each counts twice its text (key and marker): the first ones up to 32 MiB are kept (15 of
  // these), and hit in the second round.
  int64_t kept = 0;
  for (size_t bytes = 0; bytes + 2 * texts[kept].size() <= TextMarkerCache::kMaxBytes; ++kept) {
    bytes += 2 * texts[kept].size();
  }
  EXPECT_EQ(kept, 15);
  EXPECT_EQ(got.hits, kept);
}

}  // namespace
}  // namespace pyprof::parse
