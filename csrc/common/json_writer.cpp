#include "json_writer.h"

#include <charconv>
#include <cmath>

namespace pyprof {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// Length of the UTF-8 sequence starting at s[i] if it is well formed, else 0.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t len;
  uint32_t min_code;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    min_code = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    min_code = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    min_code = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  uint32_t code = c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  // Reject overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if (code < min_code || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return len;
}

}  // namespace

void JsonWriter::grow(size_t needed) {
  // Scratch as large again as what this writer has written (at least 512 bytes), so that its
  // own growth is geometric. Not as large as the whole string: a writer appending a short
  // value to a long string (append_escaped on a growing output) must cost the value's length;
  // zero-filling the string's size again made appending n values O(n^2).
  size_t room = pos_ - origin_;
  if (room < 512) room = 512;
  size_t size = pos_ + room;
  if (size < needed) size = needed;
  if (size > out_.size()) out_.resize(size);
}

void JsonWriter::put_escaped(std::string_view value, size_t max_bytes) {
  // Worst case: every byte becomes a 6-byte escape, plus the truncation marker.
  char* const begin = reserve(value.size() * 6 + 32);
  char* p = begin;
  const size_t limit = value.size() > max_bytes ? max_bytes : value.size();
  size_t i = 0;
  while (i < limit) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *p++ = static_cast<char>(c);
      ++i;
      continue;
    }
    char short_escape = 0;
    switch (c) {
      case '"':
        short_escape = '"';
        break;
      case '\\':
        short_escape = '\\';
        break;
      case '\n':
        short_escape = 'n';
        break;
      case '\r':
        short_escape = 'r';
        break;
      case '\t':
        short_escape = 't';
        break;
      case '\b':
        short_escape = 'b';
        break;
      case '\f':
        short_escape = 'f';
        break;
      default:
        break;
    }
    if (short_escape != 0) {
      *p++ = '\\';
      *p++ = short_escape;
      ++i;
      continue;
    }
    if (c < 0x20) {
      std::memcpy(p, "\\u00", 4);
      p[4] = kHex[c >> 4];
      p[5] = kHex[c & 0xF];
      p += 6;
      ++i;
      continue;
    }
    const size_t len = utf8_sequence_length(value, i);
    if (len == 0) {
      std::memcpy(p, "\\ufffd", 6);  // invalid byte: keep the output valid UTF-8
      p += 6;
      ++i;
    } else if (i + len > limit) {
      break;  // never cut a character in half at the truncation point
    } else {
      std::memcpy(p, value.data() + i, len);
      p += len;
      i += len;
    }
  }
  if (limit < value.size() || i < limit) {
    const size_t dropped = value.size() - i;
    std::memcpy(p, "...(+", 5);
    p = std::to_chars(p + 5, p + 25, static_cast<uint64_t>(dropped)).ptr;
    std::memcpy(p, " bytes)", 7);
    p += 7;
  }
  pos_ += p - begin;
}

void JsonWriter::append_escaped(std::string& out, std::string_view value, size_t max_bytes) {
  JsonWriter w(out);
  w.put_escaped(value, max_bytes);
}

void JsonWriter::key(std::string_view name) {
  separate();
  put('"');
  put_escaped(name, max_string_);
  put("\":");
  after_key_ = true;
}

void JsonWriter::string(std::string_view value) {
  value_prefix();
  put('"');
  put_escaped(value, max_string_);
  put('"');
}

void JsonWriter::number(double value) {
  if (std::isnan(value)) {
    string("nan");
    return;
  }
  if (std::isinf(value)) {
    string(value > 0 ? "inf" : "-inf");
    return;
  }
  value_prefix();
  char* p = reserve(32);
  pos_ = std::to_chars(p, p + 32, value).ptr - out_.data();
}

void JsonWriter::rewind(const Mark& m) {
  pos_ = m.size;
  depth_ = m.depth;
  overflow_ = 0;
  has_items_[depth_] = m.has_items;
  after_key_ = false;
}

}  // namespace pyprof
