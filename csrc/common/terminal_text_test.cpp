#include "common/terminal_text.h"

#include <gtest/gtest.h>

namespace pyprof {
namespace {

TEST(TerminalSafe, KeepsValidUtf8AndEscapesEverythingElse) {
  EXPECT_EQ(terminal_safe("aten::add é 中 😀"), "aten::add é 中 😀");
  // ESC and BEL: a terminal would clear the screen and set its title.
  EXPECT_EQ(terminal_safe("a\x1b[2J\x1b]0;t\x07z"), "a\\x1b[2J\\x1b]0;t\\x07z");
  EXPECT_EQ(terminal_safe("one\ntwo\tthree\x7f"), "one\\x0atwo\\x09three\\x7f");
  EXPECT_EQ(terminal_safe(std::string_view("nul\0here", 8)), "nul\\x00here");
  // Invalid UTF-8: a stray continuation byte, a truncated sequence, an overlong '/', a UTF-16
  // surrogate, past U+10FFFF.
  EXPECT_EQ(terminal_safe("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(terminal_safe("back\xc3("), "back\\xc3(");
  EXPECT_EQ(terminal_safe("\xe4\xb8"), "\\xe4\\xb8");
  EXPECT_EQ(terminal_safe("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(terminal_safe("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(terminal_safe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  // C1 controls in UTF-8 (U+009B is CSI to many terminals).
  EXPECT_EQ(terminal_safe("\xc2\x9b"), "\\u009b");
  EXPECT_EQ(terminal_safe("\xc2\xa0"), "\xc2\xa0");  // no-break space: printable
}

}  // namespace
}  // namespace pyprof
