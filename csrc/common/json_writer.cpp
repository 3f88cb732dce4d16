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

void JsonWriter::append_escaped(std::string& out, std::string_view value, size_t max_bytes) {
  const size_t limit = value.size() > max_bytes ? max_bytes : value.size();
  size_t i = 0;
  while (i < limit) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      // Copy the run of plain ASCII in one go.
      size_t j = i + 1;
      while (j < limit) {
        const unsigned char d = static_cast<unsigned char>(value[j]);
        if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
        ++j;
      }
      out.append(value.data() + i, j - i);
      i = j;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
      ++i;
      continue;
    }
    const size_t len = utf8_sequence_length(value, i);
    if (len == 0) {
      out += "\\ufffd";  // invalid byte: keep the output valid UTF-8
      ++i;
    } else if (i + len > limit) {
      break;  // never cut a character in half at the truncation point
    } else {
      out.append(value.data() + i, len);
      i += len;
    }
  }
  if (limit < value.size() || i < limit) {
    const size_t dropped = value.size() - i;
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(dropped));
    out += "...(+";
    out.append(buf, res.ptr);
    out += " bytes)";
  }
}

void JsonWriter::key(std::string_view name) {
  separate();
  out_.push_back('"');
  append_escaped(out_, name, max_string_);
  out_ += "\":";
  after_key_ = true;
}

void JsonWriter::string(std::string_view value) {
  value_prefix();
  out_.push_back('"');
  append_escaped(out_, value, max_string_);
  out_.push_back('"');
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
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, res.ptr);
}

void JsonWriter::rewind(const Mark& m) {
  out_.resize(m.size);
  depth_ = m.depth;
  overflow_ = 0;
  has_items_[depth_] = m.has_items;
  after_key_ = false;
}

}  // namespace pyprof
