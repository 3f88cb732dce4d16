// What the fuzz tests share: their time budget and random seed from the environment, and a
// printable form of a failing input.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pyprof::parse {

// PYPROF_FUZZ_SEED replays or varies a test's random stream (the seed is printed on failure).
inline uint64_t fuzz_seed(uint64_t default_seed) {
  if (const char* env = std::getenv("PYPROF_FUZZ_SEED"); env && *env) {
    return std::strtoull(env, nullptr, 0);
  }
  return default_seed;
}

// PYPROF_FUZZ_SECONDS: how long a fuzz test file runs in all (3 s by default).
inline double fuzz_seconds() {
  if (const char* env = std::getenv("PYPROF_FUZZ_SECONDS"); env && *env) {
    return std::strtod(env, nullptr);
  }
  return 3.0;
}

// Printable form of a failing input (C escapes for everything else), cut to `limit` bytes.
inline std::string escaped(std::string_view s, size_t limit) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (out.size() >= limit) out += "...";
  return out;
}

}  // namespace pyprof::parse
