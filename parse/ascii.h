// ASCII character classes for parse's hand-written scanners (marker dialects, Python literals).
// Not <cctype>: its answers depend on the C locale, and marker text is bytes whatever the
// locale; and these are constexpr and take a char without the cast to unsigned char.
#pragma once

namespace pyprof::parse {

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_alpha(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z'); }
// What Python identifiers and C++ names are made of (ASCII only).
constexpr bool is_ident_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
// The four characters JSON counts as whitespace.
constexpr bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace pyprof::parse
