#include "parse/py_literal.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "parse/marker_test_util.h"

namespace pyprof::parse {
namespace {

using namespace std::string_literals;

TEST(PythonLiteral, Conversions) {
  const std::pair<std::string, std::string> cases[] = {
      {"None", "null"},
      {"True", "true"},
      {"False", "false"},
      {"0", "0"},
      {"-17", "-17"},
      {"+5", "5"},
      {"-00", "0"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"9223372036854775808", "\"9223372036854775808\""},
      {"123456789012345678901234567890", "\"123456789012345678901234567890\""},
      {"-123456789012345678901234567890", "\"-123456789012345678901234567890\""},
      {"2.0", "2.0"},
      {"1e-05", "1e-05"},
      {"1e+16", "1e+16"},
      {"1E5", "1e5"},
      {"1e0000005", "1e05"},
      {".5", "0.5"},
      {"5.", "5.0"},
      {"-.25", "-0.25"},
      {"007.50", "7.50"},
      {"14.142135623730951", "14.142135623730951"},
      {"1e999", "\"inf\""},
      {"-1e999", "\"-inf\""},
      {"1e-999", "0.0"},
      {"'abc'", "\"abc\""},
      {"\"it's\"", "\"it's\""},
      {"'say \"hi\"'", "\"say \\\"hi\\\"\""},
      {R"('a\'b\\c\n\t\r')", R"("a'b\\c\n\t\r")"},
      {R"('\x00\x1f\x7f\xe9')", "\"\\u0000\\u001f\x7f\xc3\xa9\""},
      {R"('\u00e9\U0001f600')", "\"\xc3\xa9\xf0\x9f\x98\x80\""},
      {R"('\ud83d\ude00')", "\"\xf0\x9f\x98\x80\""},
      {R"('\ud83d x')", "\"\xef\xbf\xbd x\""},
      {R"('\a\b\f\v\0\101\777')", "\"\\u0007\\b\\f\\u000b\\u0000A\xc7\xbf\""},
      {R"('\d\q')", R"("\\d\\q")"},
      {"'caf\xc3\xa9'", "\"caf\xc3\xa9\""},
      // Invalid UTF-8 in a string: U+FFFD per byte (escaped, as JsonWriter writes it).
      {"'\xff\xfe'", "\"\\ufffd\\ufffd\""},
      {"'a\nb'", "\"a\\nb\""},
      {"'line\\\ncontinued'", "\"linecontinued\""},
      {"[]", "[]"},
      {"()", "[]"},
      {"{}", "{}"},
      {"(7,)", "[7]"},
      {"(7)", "7"},
      {"((1, 2))", "[1,2]"},
      {"[1, 2, ]", "[1,2]"},
      {"(1, 2,)", "[1,2]"},
      {"{'a': 1,}", "{\"a\":1}"},
      {" [ 1 ,\n 2 ] ", "[1,2]"},
      {"{1: 'one', None: 2, (3, 4): [], 'k': ((),)}",
       R"j({"1":"one","None":2,"(3, 4)":[],"k":[[]]})j"},
      {"{'name': '', 'type': 'tensor', 'shape': (32, 128), 'dtype': 'float16'}",
       R"({"name":"","type":"tensor","shape":[32,128],"dtype":"float16"})"},
  };
  for (const auto& [literal, expected] : cases) {
    std::string json = "stale", error = "stale";
    EXPECT_TRUE(python_literal_to_json(literal, json, error)) << literal << ": " << error;
    EXPECT_EQ(json, expected) << literal;
    EXPECT_EQ(error, "");
    EXPECT_TRUE(is_valid_json(json)) << literal << " -> " << json;
  }
}

TEST(PythonLiteral, Rejections) {
  for (const std::string& literal : {""s,
                                     "   "s,
                                     "inf"s,
                                     "-inf"s,
                                     "nan"s,
                                     "float('inf')"s,
                                     "1j"s,
                                     "0x1F"s,
                                     "1_000"s,
                                     "1.5e"s,
                                     "--5"s,
                                     "+-5"s,
                                     "."s,
                                     ".e5"s,
                                     "Truex"s,
                                     "none"s,
                                     "'\\N{DASH}'"s,
                                     "'unterminated"s,
                                     "'trailing backslash\\"s,
                                     "'\\x4'"s,
                                     "'\\U00110000'"s,
                                     "1 2"s,
                                     "[1 2]"s,
                                     "[1,,2]"s,
                                     "{'a' 1}"s,
                                     "{'a': 1 'b': 2}"s,
                                     "[1, 2"s,
                                     "(1, 2"s,
                                     "{1, 2}"s,
                                     "[1]]"s,
                                     "b'bytes'"s,
                                     "'''triple'''"s,
                                     "set()"s,
                                     "x"s,
                                     "\0"s}) {
    std::string json = "stale", error;
    EXPECT_FALSE(python_literal_to_json(literal, json, error)) << literal << " -> " << json;
    EXPECT_EQ(json, "");
    EXPECT_FALSE(error.empty()) << literal;
  }
}

TEST(PythonLiteral, DepthLimit) {
  std::string json, error;
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_TRUE(python_literal_to_json(ok, json, error)) << error;
  EXPECT_EQ(json, ok);

  EXPECT_FALSE(python_literal_to_json("[" + ok + "]", json, error));
  EXPECT_NE(error.find("64"), std::string::npos) << error;

  const std::string huge = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_FALSE(python_literal_to_json(huge, json, error));
  EXPECT_FALSE(python_literal_to_json(std::string(1000000, '('), json, error));
  EXPECT_FALSE(python_literal_to_json("{'a': " + std::string(1000000, '{'), json, error));
}

TEST(PythonLiteral, MegabyteLiteral) {
  std::string literal = "[";
  for (int i = 0; i < 50000; ++i) literal += "{'shape': (32, 128), 'v': 1.5e-3, 's': 'x\\n'}, ";
  literal += "]";
  std::string json, error;
  ASSERT_TRUE(python_literal_to_json(literal, json, error)) << error;
  EXPECT_TRUE(is_valid_json(json));
}

}  // namespace
}  // namespace pyprof::parse
