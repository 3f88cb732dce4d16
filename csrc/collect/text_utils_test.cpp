// Message handling: bounded reads, UTF-8 truncation and repair, wchar_t conversion.
#include "text_utils.h"

#include <gtest/gtest.h>

#include <string>

#include "event_types.h"

namespace pyprof::collect {
namespace {

TEST(Utf8Prefix, CutsOnlyBetweenCharacters) {
  const std::string euro = "\xE2\x82\xAC";     // 3 bytes
  const std::string text = "a" + euro + euro;  // 7 bytes
  EXPECT_EQ(utf8_prefix(text, 100), text);
  EXPECT_EQ(utf8_prefix(text, 7), text);
  EXPECT_EQ(utf8_prefix(text, 6), "a" + euro);
  EXPECT_EQ(utf8_prefix(text, 5), "a" + euro);
  EXPECT_EQ(utf8_prefix(text, 4), "a" + euro);
  EXPECT_EQ(utf8_prefix(text, 3), "a");
  EXPECT_EQ(utf8_prefix(text, 1), "a");
  EXPECT_EQ(utf8_prefix(text, 0), "");
}

TEST(BoundedCString, ReadsAtMostTheCapPlusOne) {
  EXPECT_EQ(bounded_c_string(nullptr, 10).text, "");
  EXPECT_FALSE(bounded_c_string("short", 10).truncated);
  EXPECT_EQ(bounded_c_string("exactly10!", 10).text, "exactly10!");
  EXPECT_FALSE(bounded_c_string("exactly10!", 10).truncated);
  const BoundedText cut = bounded_c_string("eleven char", 10);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.text, "eleven cha");
  // A long multi-byte message: cut at the cap, on a character boundary.
  std::string big;
  for (int i = 0; i < 30000; ++i) big += "\xE2\x82\xAC";
  const BoundedText capped = bounded_c_string(big.c_str(), kMaxMessageBytes);
  EXPECT_TRUE(capped.truncated);
  EXPECT_EQ(capped.text.size(), 65535u);  // 21845 whole characters
  EXPECT_TRUE(is_valid_utf8(capped.text));
}

TEST(WideToUtf8, ConvertsAndBounds) {
  std::string out;
  EXPECT_FALSE(append_wide_as_utf8(L"wide \u2713 \U0001F600", 100, out));
  EXPECT_EQ(out, "wide \xE2\x9C\x93 \xF0\x9F\x98\x80");
  out.clear();
  EXPECT_TRUE(append_wide_as_utf8(L"ab\u2713", 4, out));  // the check mark would need 5 bytes
  EXPECT_EQ(out, "ab");
  out.clear();
  const wchar_t invalid[] = {L'x', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), 0};
  append_wide_as_utf8(invalid, 100, out);
  EXPECT_EQ(out, "x\xEF\xBF\xBD\xEF\xBF\xBD");
  out.clear();
  EXPECT_FALSE(append_wide_as_utf8(nullptr, 100, out));
  EXPECT_EQ(out, "");
}

TEST(Utf8Validation, RepairsInvalidSequences) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));              // truncated sequence
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_EQ(repair_utf8("a\xFF"
                        "b\xC3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(repair_utf8("\xC3\xA9"), "\xC3\xA9");
}

}  // namespace
}  // namespace pyprof::collect
