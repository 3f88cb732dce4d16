#include "json_writer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>

namespace pyprof {
namespace {

// Parses `json` with an independent parser (simdjson); fails the test if it is not valid JSON.
simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  auto error = parser.parse(json).get(doc);
  EXPECT_EQ(error, simdjson::SUCCESS) << "invalid JSON: " << json;
  return doc;
}

std::string encode_string(std::string_view s, size_t max = JsonWriter::kDefaultMaxString) {
  std::string out;
  JsonWriter w(out, max);
  w.string(s);
  w.finish();
  return out;
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(encode_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(encode_string("l1\nl2\tx\r\b\f"), R"("l1\nl2\tx\r\b\f")");
  EXPECT_EQ(encode_string(std::string("nul\0x\x01\x1f", 7)), R"("nul\u0000x\u0001\u001f")");
  EXPECT_EQ(encode_string("\x7f"), "\"\x7f\"");  // DEL needs no escape in JSON
  simdjson::dom::parser parser;
  std::string_view back;
  ASSERT_EQ(parse(parser, encode_string("q\"\\\n\x02")).get(back), simdjson::SUCCESS);
  EXPECT_EQ(back, "q\"\\\n\x02");
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(encode_string("名前 é €"), "\"名前 é €\"");
  EXPECT_EQ(encode_string("\xF0\x9F\x98\x80"), "\"\xF0\x9F\x98\x80\"");  // 4-byte emoji
  // A lone continuation byte, a truncated sequence, an overlong '/', a UTF-16 surrogate and a
  // code point past U+10FFFF are all invalid UTF-8.
  EXPECT_EQ(encode_string("a\x80z"), R"("a\ufffdz")");
  EXPECT_EQ(encode_string("a\xE2\x82"), R"("a\ufffd\ufffd")");
  EXPECT_EQ(encode_string("\xC0\xAF"), R"("\ufffd\ufffd")");
  EXPECT_EQ(encode_string("\xED\xA0\x80"), R"("\ufffd\ufffd\ufffd")");
  EXPECT_EQ(encode_string("\xF4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");
  simdjson::dom::parser parser;
  parse(parser, encode_string("\xff\xfe mixed \xE2\x82\xAC ok"));
}

TEST(JsonWriter, TruncatesLongStringsAtACharacterBoundaryWithAMarker) {
  std::string ascii(1000, 'x');
  EXPECT_EQ(encode_string(ascii, 10), "\"xxxxxxxxxx...(+990 bytes)\"");
  // 2-byte characters with an odd limit: the cut must not split a character.
  std::string accents;
  for (int i = 0; i < 10; ++i) accents += "é";
  const std::string out = encode_string(accents, 5);
  EXPECT_EQ(out, "\"éé...(+16 bytes)\"");
  simdjson::dom::parser parser;
  parse(parser, out);
  // Exactly at the limit: no marker.
  EXPECT_EQ(encode_string("abc", 3), "\"abc\"");
}

TEST(JsonWriter, WritesNumbersExactlyAndNonFiniteAsStrings) {
  std::string out;
  JsonWriter w(out);
  w.begin_array();
  w.integer(std::numeric_limits<int64_t>::min());
  w.integer(std::numeric_limits<int64_t>::max());
  w.unsigned_integer(std::numeric_limits<uint64_t>::max());
  w.number(0.1);
  w.number(-2.5e-300);
  w.number(std::numeric_limits<double>::infinity());
  w.number(-std::numeric_limits<double>::infinity());
  w.number(std::nan(""));
  w.boolean(true);
  w.boolean(false);
  w.null();
  w.end_array();
  w.finish();
  EXPECT_EQ(out,
            "[-9223372036854775808,9223372036854775807,18446744073709551615,0.1,-2.5e-300,"
            "\"inf\",\"-inf\",\"nan\",true,false,null]");
  simdjson::dom::parser parser;
  auto doc = parse(parser, out);
  double d = 0;
  ASSERT_EQ(doc.at(3).get(d), simdjson::SUCCESS);
  EXPECT_EQ(d, 0.1);  // shortest round-trip form
}

TEST(JsonWriter, PlacesCommasInNestedContainers) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a");
  w.begin_array();
  w.integer(1);
  w.begin_object();
  w.end_object();
  w.begin_array();
  w.end_array();
  w.string("s");
  w.end_array();
  w.key("b\"");
  w.null();
  w.end_object();
  w.finish();
  EXPECT_EQ(out, R"({"a":[1,{},[],"s"],"b\"":null})");
}

TEST(JsonWriter, ResumesAnObjectStartedByACachedPrefix) {
  std::string out = R"({"v":1,"op":"aten::add")";
  JsonWriter w(out);
  w.resume_object();
  w.raw_key("id");
  w.integer(7);
  w.end_object();
  w.finish();
  EXPECT_EQ(out, R"({"v":1,"op":"aten::add","id":7})");
}

TEST(JsonWriter, RewindDropsAnElementAndKeepsCommasRight) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.raw_key("kept");
  w.integer(1);
  const auto m = w.mark();
  w.raw_key("dropped");
  w.begin_array();
  w.integer(2);
  w.rewind(m);
  w.raw_key("next");
  w.integer(3);
  w.end_object();
  w.finish();
  EXPECT_EQ(out, R"({"kept":1,"next":3})");

  std::string first;
  JsonWriter w2(first);
  w2.begin_object();
  const auto m2 = w2.mark();
  w2.raw_key("x");
  w2.integer(1);
  w2.rewind(m2);
  w2.raw_key("y");
  w2.integer(2);
  w2.end_object();
  w2.finish();
  EXPECT_EQ(first, R"({"y":2})");
}

// A writer appending to a long string reserves room for what it writes, not for the string
// again: parse's Python-literal converter appends each string of a legacy traceMarker list to
// one growing output, and scratch proportional to the output made that quadratic (800k frames
// took 30 s). The string's size runs ahead of the JSON while the writer lives: that is the
// zero-filled scratch, the work this test counts.
TEST(JsonWriter, ScratchIsBoundedByWhatTheWriterWrites) {
  constexpr size_t kLong = size_t{1} << 20;
  std::string out(kLong, 'x');
  {
    JsonWriter w(out);
    w.string("ab");
    EXPECT_LE(out.size(), kLong + 4096);
  }
  EXPECT_EQ(out.size(), kLong + 4);
  EXPECT_EQ(out.substr(kLong), "\"ab\"");
  // The same through append_escaped, many times: each call costs its own length.
  std::string appended(kLong, 'y');
  for (int i = 0; i < 1000; ++i) JsonWriter::append_escaped(appended, "frame\n", 64);
  EXPECT_EQ(appended.size(), kLong + 1000 * 7);
  EXPECT_EQ(appended.substr(kLong, 14), "frame\\nframe\\n");
  // A long-lived writer still grows geometrically: 100k values, few reallocations.
  std::string grown;
  size_t reallocations = 0;
  {
    JsonWriter w(grown);
    w.begin_array();
    const char* data = grown.data();
    for (int i = 0; i < 100000; ++i) {
      w.integer(i);
      if (grown.data() != data) {
        ++reallocations;
        data = grown.data();
      }
    }
    w.end_array();
  }
  EXPECT_LT(reallocations, 40u);
}

TEST(JsonWriter, StaysValidPastTheTrackedNestingDepth) {
  std::string out;
  JsonWriter w(out);
  const int depth = JsonWriter::kMaxDepth + 8;
  for (int i = 0; i < depth; ++i) w.begin_array();
  w.integer(1);
  w.integer(2);
  for (int i = 0; i < depth; ++i) w.end_array();
  EXPECT_EQ(w.depth(), 0);
  w.finish();
  simdjson::dom::parser parser;
  parse(parser, out);
}

}  // namespace
}  // namespace pyprof
