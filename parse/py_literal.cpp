#include "parse/py_literal.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <new>
#include <system_error>

#include "common/json_writer.h"
#include "parse/ascii.h"

namespace pyprof::parse {
namespace {

constexpr int kMaxLiteralDepth = 64;

// ---------------------------------------------------------------------------------------------
// JSON string output.

constexpr char kHex[] = "0123456789abcdef";

void append_escaped_code_point(std::string& out, uint32_t cp) {
  switch (cp) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      break;
  }
  if (cp < 0x20) {
    const char escape[6] = {'\\', 'u', '0', '0', kHex[cp >> 4], kHex[cp & 0xF]};
    out.append(escape, 6);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Appends raw bytes as JSON string content. NVTX text can be any bytes; JsonWriter replaces
// invalid UTF-8 by U+FFFD, since simdjson (and every other consumer) rejects it.
void append_escaped_bytes(std::string& out, std::string_view s) {
  JsonWriter::append_escaped(out, s, std::numeric_limits<size_t>::max());
}

// ---------------------------------------------------------------------------------------------
// Python literal → JSON. Hand-written because no JSON library reads repr() output; recursion is
// bounded by kMaxLiteralDepth and every loop advances through the input, so hostile text costs
// time linear in its length.

class LiteralConverter {
 public:
  LiteralConverter(std::string_view in, std::string& out) : in_(in), out_(out) {}

  bool convert(std::string& error) {
    skip_space();
    if (value(0)) {
      skip_space();
      if (pos_ == in_.size()) return true;
      fail("unexpected text after the literal");
    }
    error = why_;
    error += " at byte ";
    error += std::to_string(where_);
    return false;
  }

 private:
  bool fail(const char* why) {
    if (why_ == nullptr) {
      why_ = why;
      where_ = pos_;
    }
    return false;
  }
  bool at_end() const { return pos_ >= in_.size(); }
  char peek() const { return in_[pos_]; }  // only when !at_end()
  bool eat(char c) {
    if (!at_end() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void skip_space() {
    while (!at_end() && (is_json_space(peek()) || peek() == '\f' || peek() == '\v')) ++pos_;
  }

  // `depth`: containers around this value.
  bool value(int depth) {
    if (at_end()) return fail("unexpected end of the literal");
    const char c = peek();
    switch (c) {
      case '{':
        return dict(depth + 1);
      case '[':
        return sequence(depth + 1);
      case '(':
        return tuple(depth + 1);
      case '\'':
      case '"':
        return string();
      case 'T':
        return keyword("True", "true");
      case 'F':
        return keyword("False", "false");
      case 'N':
        return keyword("None", "null");
      default:
        if (is_digit(c) || c == '-' || c == '+' || c == '.') return number();
        return fail("not a Python literal");
    }
  }

  bool check_depth(int depth) {
    return depth <= kMaxLiteralDepth || fail("nesting deeper than 64 levels");
  }

  bool keyword(std::string_view word, std::string_view json) {
    if (in_.compare(pos_, word.size(), word) != 0) return fail("not a Python literal");
    const size_t next = pos_ + word.size();
    if (next < in_.size() && is_ident_char(in_[next])) return fail("not a Python literal");
    pos_ = next;
    out_ += json;
    return true;
  }

  bool dict(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    out_ += '{';
    skip_space();
    if (eat('}')) {
      out_ += '}';
      return true;
    }
    while (true) {
      const size_t key_start = pos_;
      const size_t key_out = out_.size();
      if (!value(depth)) return false;
      if (out_[key_out] != '"') {
        // JSON keys are strings; a tuple or number key keeps its literal text.
        out_.resize(key_out);
        out_ += '"';
        append_escaped_bytes(out_, in_.substr(key_start, pos_ - key_start));
        out_ += '"';
      }
      skip_space();
      if (!eat(':')) return fail("expected ':' in a dict");
      out_ += ':';
      skip_space();
      if (!value(depth)) return false;
      skip_space();
      const bool comma = eat(',');
      skip_space();
      if (eat('}')) {
        out_ += '}';
        return true;
      }
      if (!comma) return fail("expected ',' or '}' in a dict");
      out_ += ',';
    }
  }

  // The elements of a list or tuple up to `close`, the opening bracket already written.
  bool elements(int depth, char close) {
    while (true) {
      if (!value(depth)) return false;
      skip_space();
      const bool comma = eat(',');
      skip_space();
      if (eat(close)) {
        out_ += ']';
        return true;
      }
      if (!comma) {
        return fail(close == ']' ? "expected ',' or ']' in a list" : "expected ',' or ')'");
      }
      out_ += ',';
    }
  }

  bool sequence(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    out_ += '[';
    skip_space();
    if (eat(']')) {
      out_ += ']';
      return true;
    }
    return elements(depth, ']');
  }

  bool tuple(int depth) {
    if (!check_depth(depth)) return false;
    ++pos_;
    skip_space();
    if (eat(')')) {
      out_ += "[]";
      return true;
    }
    const size_t open = out_.size();
    out_ += '[';
    if (!value(depth)) return false;
    skip_space();
    if (eat(')')) {
      out_.erase(open, 1);  // "(x)" is x in parentheses; only "(x,)" is a tuple
      return true;
    }
    if (!eat(',')) return fail("expected ',' or ')'");
    skip_space();
    if (eat(')')) {
      out_ += ']';
      return true;
    }
    out_ += ',';
    return elements(depth, ')');
  }

  bool hex_digits(size_t count, uint32_t& cp) {
    if (in_.size() - pos_ < count) return fail("truncated escape in a string");
    cp = 0;
    for (size_t k = 0; k < count; ++k) {
      const char c = in_[pos_ + k];
      uint32_t digit;
      if (is_digit(c)) {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return fail("invalid escape in a string");
      }
      cp = (cp << 4) | digit;
    }
    pos_ += count;
    return true;
  }

  // After "\u" of a high surrogate: Python keeps lone surrogates, which UTF-8 (and so JSON
  // text) cannot hold, but a pair stands for one character.
  uint32_t combine_surrogates(uint32_t high) {
    if (high > 0xDBFF || in_.size() - pos_ < 6 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') {
      return 0xFFFD;
    }
    const size_t saved = pos_;
    pos_ += 2;
    uint32_t low;
    const char* saved_why = why_;
    if (!hex_digits(4, low) || low < 0xDC00 || low > 0xDFFF) {
      why_ = saved_why;
      pos_ = saved;
      return 0xFFFD;
    }
    return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
  }

  // One escape sequence, pos_ on the character after the backslash.
  bool escape() {
    if (at_end()) return fail("unterminated string");
    const char e = in_[pos_++];
    uint32_t cp;
    switch (e) {
      case '\\':
      case '\'':
      case '"':
        append_escaped_code_point(out_, static_cast<unsigned char>(e));
        return true;
      case 'n':
        out_ += "\\n";
        return true;
      case 't':
        out_ += "\\t";
        return true;
      case 'r':
        out_ += "\\r";
        return true;
      case 'a':
        append_escaped_code_point(out_, 0x07);
        return true;
      case 'b':
        out_ += "\\b";
        return true;
      case 'f':
        out_ += "\\f";
        return true;
      case 'v':
        append_escaped_code_point(out_, 0x0B);
        return true;
      case '\n':  // line continuation
        return true;
      case '\r':
        eat('\n');
        return true;
      case 'x':
        if (!hex_digits(2, cp)) return false;
        append_escaped_code_point(out_, cp);
        return true;
      case 'u':
      case 'U':
        if (!hex_digits(e == 'u' ? 4 : 8, cp)) return false;
        if (cp > 0x10FFFF) return fail("escape past U+10FFFF in a string");
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = e == 'u' ? combine_surrogates(cp) : 0xFFFD;
        append_escaped_code_point(out_, cp);
        return true;
      case 'N':
        return fail("named escapes are not supported");
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      cp = e - '0';
      for (int k = 0; k < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++k) {
        cp = cp * 8 + (in_[pos_++] - '0');
      }
      append_escaped_code_point(out_, cp);
      return true;
    }
    // Python keeps an unknown escape as it is, backslash included.
    out_ += "\\\\";
    --pos_;
    return true;
  }

  bool string() {
    const char quote = in_[pos_++];
    out_ += '"';
    while (true) {
      const size_t run = pos_;
      while (!at_end() && peek() != quote && peek() != '\\') ++pos_;
      append_escaped_bytes(out_, in_.substr(run, pos_ - run));
      if (at_end()) return fail("unterminated string");
      if (peek() == quote) {
        ++pos_;
        out_ += '"';
        return true;
      }
      ++pos_;
      if (!escape()) return false;
    }
  }

  static std::string_view strip_leading_zeros(std::string_view digits) {
    size_t k = 0;
    while (k < digits.size() && digits[k] == '0') ++k;
    return digits.substr(k);
  }

  // Python ints and floats, rewritten in JSON's stricter grammar: no leading zeros or "+" sign,
  // digits on both sides of the point.
  bool number() {
    bool negative = false;
    if (peek() == '-' || peek() == '+') {
      negative = peek() == '-';
      ++pos_;
    }
    const auto scan_digits = [&] {
      const size_t start = pos_;
      while (!at_end() && is_digit(peek())) ++pos_;
      return in_.substr(start, pos_ - start);
    };
    const std::string_view int_digits = scan_digits();
    bool is_float = false;
    std::string_view frac_digits;
    const bool has_point = eat('.');
    if (has_point) {
      is_float = true;
      frac_digits = scan_digits();
    }
    if (int_digits.empty() && frac_digits.empty()) return fail("invalid number");
    std::string_view exp_digits;
    char exp_sign = 0;
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      is_float = true;
      ++pos_;
      if (!at_end() && (peek() == '-' || peek() == '+')) exp_sign = in_[pos_++];
      exp_digits = scan_digits();
      if (exp_digits.empty()) return fail("invalid number");
    }
    if (!at_end() && (is_ident_char(peek()) || peek() == '.')) return fail("invalid number");

    const std::string_view int_part = strip_leading_zeros(int_digits);
    if (!is_float) {
      if (int_part.empty()) {
        out_ += '0';
        return true;
      }
      int64_t value;
      const size_t mark = out_.size();
      if (negative) out_ += '-';
      out_ += int_part;
      const auto [ptr, ec] = std::from_chars(out_.data() + mark, out_.data() + out_.size(), value);
      if (ec == std::errc()) return true;
      // Past int64: JSON parsers disagree on big integers, so keep the digits as a string.
      out_.insert(mark, 1, '"');
      out_ += '"';
      return true;
    }

    const size_t mark = out_.size();
    if (negative) out_ += '-';
    out_ += int_part.empty() ? std::string_view("0") : int_part;
    if (has_point) {
      out_ += '.';
      out_ += frac_digits.empty() ? std::string_view("0") : frac_digits;
    }
    if (!exp_digits.empty()) {
      out_ += 'e';
      if (exp_sign != 0) out_ += exp_sign;
      // Python writes at least two exponent digits ("1e-05"); more leading zeros are dropped.
      std::string_view exp_part = strip_leading_zeros(exp_digits);
      if (exp_part.size() < 2) {
        exp_part = exp_digits.substr(exp_digits.size() - std::min<size_t>(2, exp_digits.size()));
      }
      out_ += exp_part;
    }
    double value;
    const auto [ptr, ec] = std::from_chars(out_.data() + mark, out_.data() + out_.size(), value);
    if (ec == std::errc() && ptr == out_.data() + out_.size()) return true;
    if (ec != std::errc::result_out_of_range) return fail("invalid number");
    // Python reads these as inf or 0.0; JSON numbers cannot be infinite, and PyProf writes
    // non-finite floats as strings. The sign of the leading digit's decimal exponent tells which.
    int64_t exponent = 0;
    for (const char d : exp_digits) {
      exponent = std::min<int64_t>(exponent * 10 + (d - '0'), 1 << 20);
    }
    if (exp_sign == '-') exponent = -exponent;
    const std::string_view frac_significant = strip_leading_zeros(frac_digits);
    exponent += !int_part.empty()
                    ? static_cast<int64_t>(int_part.size()) - 1
                    : -static_cast<int64_t>(frac_digits.size() - frac_significant.size()) - 1;
    out_.resize(mark);
    if (exponent > 0) {
      out_ += negative ? "\"-inf\"" : "\"inf\"";
    } else {
      out_ += negative ? "-0.0" : "0.0";
    }
    return true;
  }

  std::string_view in_;
  std::string& out_;
  size_t pos_ = 0;
  const char* why_ = nullptr;
  size_t where_ = 0;
};

}  // namespace

bool python_literal_to_json(std::string_view literal, std::string& json, std::string& error) {
  json.clear();
  error.clear();
  try {
    if (LiteralConverter(literal, json).convert(error)) return true;
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  }
  json.clear();
  return false;
}

}  // namespace pyprof::parse
