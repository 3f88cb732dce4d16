// UTF-8 helpers for NVTX messages: bounded reads of C strings, wchar_t -> UTF-8, truncation at a
// character boundary, and repair of invalid UTF-8 before it reaches a TEXT column (Python's
// sqlite3 module raises on invalid UTF-8, so the writer never stores it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pyprof::collect {

// A message as the collector stores it: at most max_bytes of UTF-8.
struct BoundedText {
  std::string_view text;
  bool truncated = false;
};

// Longest prefix of `text` that is at most max_bytes long and does not end inside a UTF-8
// sequence (cuts only before a non-continuation byte).
std::string_view utf8_prefix(std::string_view text, size_t max_bytes) noexcept;

// Reads a NUL-terminated string without looking further than max_bytes + 1 bytes, so a 1 GiB
// message costs the same as a max_bytes one. NULL reads as empty.
BoundedText bounded_c_string(const char* text, size_t max_bytes) noexcept;

// Appends the UTF-8 form of a NUL-terminated wchar_t string (UTF-32 on Linux) to `out`, adding
// at most max_bytes; invalid code points become U+FFFD. Returns true if it had to stop early.
bool append_wide_as_utf8(const wchar_t* text, size_t max_bytes, std::string& out);

bool is_valid_utf8(std::string_view text) noexcept;

// `text` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view text);

}  // namespace pyprof::collect
