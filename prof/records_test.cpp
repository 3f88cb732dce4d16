// read_dict's input handling: lines are read in blocks of a megabyte and their keys on two
// threads (prof/dict_reader.cpp), so these tests put lines across block boundaries, a line
// longer than a block, escapes, CRLF and blank lines, and errors past the first block.
#include "prof/records.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "prof/dict_reader.h"

namespace pyprof::prof {
namespace {

constexpr char kHeader[] = R"({"pyprof_dict":2,"records":"op"})"
                           "\n";

// An op line whose name is `name` and whose filler makes it about `bytes` long.
std::string op_line(const std::string& name, int64_t start, size_t bytes = 0) {
  std::string line = R"({"kind":"op","name":")" + name + R"(","start":)" + std::to_string(start) +
                     R"(,"duration":1,"stack":")" + std::string(bytes, 'x') + "\"}\n";
  return line;
}

// read_dict on `text`: true with `out` filled, or false with `error`.
bool read_text(const std::string& text, ReadResult& out, std::string& error) {
  std::FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  bool ok = read_dict(f, ReadOptions{}, out, error);
  std::fclose(f);
  return ok;
}

TEST(ReadDictInput, LinesAcrossBlockBoundariesKeepTheirOrderAndNames) {
  // 6,000 lines of ~1,000 bytes: six blocks, nearly every boundary inside a line.
  std::string text = kHeader;
  for (int i = 0; i < 6000; ++i) text += op_line("op" + std::to_string(i), i, 950 + i % 97);
  ReadResult out;
  std::string error;
  ASSERT_TRUE(read_text(text, out, error)) << error;
  ASSERT_EQ(out.records.size(), 6000u);
  for (int i = 0; i < 6000; ++i) {
    ASSERT_EQ(out.strings.get(out.records[i].name), "op" + std::to_string(i)) << i;
    ASSERT_EQ(out.records[i].start, i);
  }
  EXPECT_EQ(out.lines, 6001);
  EXPECT_EQ(out.skipped_lines, 0);
}

TEST(ReadDictInput, ALineLongerThanABlockIsReadWhole) {
  std::string text =
      kHeader + op_line("before", 1) + op_line("long", 2, 3 << 20) + op_line("after", 3);
  ReadResult out;
  std::string error;
  ASSERT_TRUE(read_text(text, out, error)) << error;
  ASSERT_EQ(out.records.size(), 3u);
  EXPECT_EQ(out.strings.get(out.records[1].name), "long");
  EXPECT_EQ(out.strings.get(out.records[1].trace).size(), size_t{3} << 20);
  EXPECT_EQ(out.strings.get(out.records[2].name), "after");
}

TEST(ReadDictInput, EscapedStringsAreUnescapedAndOutliveTheirLine) {
  // The escaped names are kept apart from the block; 3,000 lines later they must still read.
  std::string text = kHeader;
  text += R"({"kind":"op","name":"a\"b\\c\u00e9","start":1,"duration":1})"
          "\n";
  for (int i = 0; i < 3000; ++i) text += op_line("plain", 10 + i, 900);
  text += R"({"kind":"op","name":"tab\there","start":5000,"duration":1})"
          "\n";
  ReadResult out;
  std::string error;
  ASSERT_TRUE(read_text(text, out, error)) << error;
  ASSERT_EQ(out.records.size(), 3002u);
  EXPECT_EQ(out.strings.get(out.records.front().name), "a\"b\\c\xc3\xa9");
  EXPECT_EQ(out.strings.get(out.records.back().name), "tab\there");
}

TEST(ReadDictInput, CrlfBlankLinesAndNoFinalLineEnd) {
  std::string text = std::string(R"({"pyprof_dict":2,"records":"op"})") + "\r\n\r\n\n" +
                     R"({"kind":"op","name":"a","start":1,"duration":1})" + "\r\n" +
                     R"({"kind":"op","name":"b","start":2,"duration":1})";
  ReadResult out;
  std::string error;
  ASSERT_TRUE(read_text(text, out, error)) << error;
  ASSERT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.strings.get(out.records[1].name), "b");
  EXPECT_EQ(out.lines, 5);
  EXPECT_EQ(out.skipped_lines, 0);
}

TEST(ReadDictInput, LineNumbersPastTheFirstBlocksAreTheInputs) {
  // Blank lines count: line numbers are the input's, whichever block and thread read them.
  std::string text = kHeader;
  for (int i = 0; i < 4000; ++i) text += op_line("op", i, 900) + (i % 10 == 0 ? "\n" : "");
  // 1 header + 4,000 records + 400 blank lines: the bad line is line 4,402.
  text += "not json\n";
  text += R"({"kind":"op","name":"x","start":1,"duration":1,"args_ref":7})"
          "\n";
  ReadResult out;
  std::string error;
  EXPECT_FALSE(read_text(text, out, error));
  EXPECT_EQ(out.skipped_lines, 1);
  ASSERT_FALSE(out.warnings.empty());
  EXPECT_EQ(out.warnings[0], "line 4402: not a JSON object");
  EXPECT_EQ(error, "line 4403: \"args_ref\": 7 names no \"args\" line before it");
}

TEST(ReadDictInput, AnErrorStopsTheReadersEarly) {
  // An error in the first block returns while later blocks are still being read: the reader
  // threads stop and are joined (the test would hang or crash otherwise).
  std::string text = kHeader;
  text += R"({"kind":"args","id":1,"args":{}})"
          "\n";
  text += R"({"kind":"args","id":1,"args":{}})"
          "\n";
  for (int i = 0; i < 20000; ++i) text += op_line("op", i, 900);
  ReadResult out;
  std::string error;
  EXPECT_FALSE(read_text(text, out, error));
  EXPECT_EQ(error, "line 3: args id 1 is defined twice");
}

// A line may hold kMaxDictLineBytes (its line end aside); one byte more, with or without a line
// end after it, stops the read with an error naming the line instead of growing without bound.
TEST(ReadDictInput, ALineOverTheLimitIsAnErrorNamingIt) {
  const std::string before = kHeader + op_line("before", 1);
  const size_t overhead = op_line("long", 2).size() - 1;  // without the line end
  const std::string at_limit = op_line("long", 2, kMaxDictLineBytes - overhead);
  ASSERT_EQ(at_limit.size(), kMaxDictLineBytes + 1);
  ReadResult out;
  std::string error;
  ASSERT_TRUE(read_text(before + at_limit + op_line("after", 3), out, error)) << error;
  EXPECT_EQ(out.records.size(), 3u);
  for (const char* end : {"", "\n"}) {
    ReadResult over;
    std::string line = op_line("long", 2, kMaxDictLineBytes - overhead + 1);
    line.pop_back();  // its line end
    const std::string text = before + line + end;
    EXPECT_FALSE(read_text(text, over, error));
    EXPECT_EQ(error,
              "line 3: longer than 64 MiB, the most a net.dict line may hold (pyprof parse "
              "writes none that long: not a net.dict?)");
  }
}

}  // namespace
}  // namespace pyprof::prof
