#include "text_utils.h"

#include <cstdint>
#include <cstring>

namespace pyprof::collect {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD

bool is_continuation_byte(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence starting at text[0], or 0 if it is invalid (overlong
// forms, surrogates and code points above U+10FFFF are invalid, as in RFC 3629).
size_t valid_sequence_length(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t available = text.size();
  const unsigned char lead = bytes[0];
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t min_code_point = 0;
  uint32_t code_point = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    min_code_point = 0x80;
    code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    min_code_point = 0x800;
    code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    min_code_point = 0x10000;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (available < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if (!is_continuation_byte(bytes[i])) return 0;
    code_point = (code_point << 6) | (bytes[i] & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

// Encodes one code point; invalid ones (surrogates, > U+10FFFF) become U+FFFD.
size_t encode_utf8(uint32_t code_point, char out[4]) {
  if (code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    std::memcpy(out, kReplacementCharacter.data(), 3);
    return 3;
  }
  if (code_point < 0x80) {
    out[0] = static_cast<char>(code_point);
    return 1;
  }
  if (code_point < 0x800) {
    out[0] = static_cast<char>(0xC0 | (code_point >> 6));
    out[1] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 2;
  }
  if (code_point < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (code_point >> 12));
    out[1] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (code_point & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (code_point >> 18));
  out[1] = static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (code_point & 0x3F));
  return 4;
}

}  // namespace

std::string_view utf8_prefix(std::string_view text, size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // Step back over continuation bytes so the byte at `cut` (the first one dropped) starts a
  // character. A run longer than 3 is not UTF-8 anyway; then cut where we are.
  for (size_t steps = 0; cut > 0 && steps < 4; ++steps, --cut) {
    if (!is_continuation_byte(static_cast<unsigned char>(text[cut]))) break;
  }
  if (is_continuation_byte(static_cast<unsigned char>(text[cut]))) cut = max_bytes;
  return text.substr(0, cut);
}

BoundedText bounded_c_string(const char* text, size_t max_bytes) noexcept {
  if (text == nullptr) return {};
  const size_t length = strnlen(text, max_bytes + 1);
  if (length <= max_bytes) return {std::string_view(text, length), false};
  return {utf8_prefix(std::string_view(text, length), max_bytes), true};
}

bool append_wide_as_utf8(const wchar_t* text, size_t max_bytes, std::string& out) {
  if (text == nullptr) return false;
  const size_t limit = out.size() + max_bytes;
  char encoded[4];
  for (; *text != L'\0'; ++text) {
    const size_t length = encode_utf8(static_cast<uint32_t>(*text), encoded);
    if (out.size() + length > limit) return true;
    out.append(encoded, length);
  }
  return false;
}

bool is_valid_utf8(std::string_view text) noexcept {
  size_t i = 0;
  // ASCII fast path: most NVTX messages are plain ASCII.
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t length = valid_sequence_length(text.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string repair_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = valid_sequence_length(text.substr(i));
    if (length == 0) {
      out.append(kReplacementCharacter);
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace pyprof::collect
