#include "common/terminal_text.h"

#include <cstdint>

namespace pyprof {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_byte_escape(std::string& out, unsigned char byte) {
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

// Length of the valid UTF-8 sequence at `s[i]` (2 to 4 bytes), or 0 when it is not one:
// overlong forms, surrogates and code points past U+10FFFF are invalid too.
size_t utf8_sequence_length(std::string_view s, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  size_t length;
  uint32_t min;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    min = 0x80;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    min = 0x800;
    code_point = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    min = 0x10000;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < length) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(k) & 0x3F);
  }
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return 0;
  }
  return length;
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) {
        append_byte_escape(out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    uint32_t code_point = 0;
    const size_t length = utf8_sequence_length(text, i, code_point);
    if (length == 0) {
      append_byte_escape(out, c);
      ++i;
    } else if (code_point <= 0x9F) {
      out += "\\u00";
      out += kHex[code_point >> 4];
      out += kHex[code_point & 0xF];
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace pyprof
