// JsonWriter: a small JSON encoder that writes into a caller-owned std::string.
//
// It exists because the annotation hot path builds one JSON object per ATen op, so it must be
// cheap and it must always produce valid, bounded JSON:
// - it writes through a raw cursor into the string's buffer (grown geometrically, reused across
//   messages) instead of many small std::string::append calls, and inlines the per-value
//   methods: a typical 300-byte op marker takes about a hundred nanoseconds;
// - every string is escaped (quotes, backslashes, control characters) and invalid UTF-8 is
//   replaced by U+FFFD, so any consumer's JSON parser accepts it;
// - strings longer than a limit are cut at a character boundary and end with "...(+N bytes)";
// - non-finite doubles, which JSON cannot represent, are written as the strings "inf", "-inf",
//   "nan".
// Commas are inserted automatically; the caller only has to nest begin/end calls correctly.
//
// While the writer is in use the string's size() runs ahead of the JSON written so far; call
// finish() (or destroy the writer) before reading the string.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace pyprof {

class JsonWriter {
 public:
  // Strings longer than this many bytes (of input) are truncated.
  static constexpr size_t kDefaultMaxString = 512;
  static constexpr int kMaxDepth = 32;

  // Appends to whatever `out` already holds.
  explicit JsonWriter(std::string& out, size_t max_string = kDefaultMaxString)
      : out_(out), pos_(out.size()), origin_(pos_), max_string_(max_string) {}
  // Overwrites `out` from byte `start` on, reusing its current size as scratch room (no
  // zero-filling when a buffer is reused for message after message).
  JsonWriter(std::string& out, size_t max_string, size_t start)
      : out_(out),
        pos_(start < out.size() ? start : out.size()),
        origin_(pos_),
        max_string_(max_string) {}
  ~JsonWriter() { finish(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  // Trims the string to the JSON written so far. The writer stays usable.
  void finish() { out_.resize(pos_); }
  // The JSON written so far, NUL-terminated in place, without trimming the string: for a
  // buffer reused message after message, so that it keeps its scratch room.
  std::string_view terminated_view() {
    *reserve(1) = '\0';
    return std::string_view(out_.data(), pos_);
  }

  void begin_object() { open('{'); }
  // Continues an object whose opening brace and first members the caller already appended
  // (e.g. a cached prefix): the next member gets a leading comma.
  void resume_object() {
    open_depth_only();
    has_items_[depth_] = true;
  }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  // Writes `"name":`. `name` is escaped like any string.
  void key(std::string_view name);
  // Writes a key that the caller guarantees needs no escaping (compile-time names, keys that
  // were escaped once and cached).
  void raw_key(std::string_view name) {
    char* p = reserve(name.size() + 4);
    if (has_items_[depth_]) *p++ = ',';
    has_items_[depth_] = true;
    *p++ = '"';
    std::memcpy(p, name.data(), name.size());
    p += name.size();
    *p++ = '"';
    *p++ = ':';
    pos_ = p - out_.data();
    after_key_ = true;
  }

  void string(std::string_view value);
  // A string the caller guarantees needs no escaping and no truncation (dtype names, "cpu").
  void trusted_string(std::string_view value) {
    value_prefix();
    char* p = reserve(value.size() + 2);
    *p++ = '"';
    std::memcpy(p, value.data(), value.size());
    p += value.size();
    *p++ = '"';
    pos_ = p - out_.data();
  }
  void integer(int64_t value) {
    value_prefix();
    char* p = reserve(24);
    pos_ = std::to_chars(p, p + 24, value).ptr - out_.data();
  }
  void unsigned_integer(uint64_t value) {
    value_prefix();
    char* p = reserve(24);
    pos_ = std::to_chars(p, p + 24, value).ptr - out_.data();
  }
  void number(double value);
  void boolean(bool value) {
    value_prefix();
    put(value ? std::string_view("true") : std::string_view("false"));
  }
  void null() {
    value_prefix();
    put("null");
  }
  // Appends text as it is, with no comma logic: the caller keeps the JSON valid (used for a
  // cached `{"v":1,"op":...` prefix, followed by resume_object()).
  void raw(std::string_view text) { put(text); }
  // Appends an already-encoded JSON value (e.g. a cached fragment) as one element.
  void raw_value(std::string_view json) {
    value_prefix();
    put(json);
  }

  // Current nesting depth (0 = top level).
  int depth() const { return depth_; }
  // Bytes of the string so far (what it held before plus the JSON written).
  size_t size() const { return pos_; }

  // Restores the writer to an earlier point, dropping what was written since (e.g. an element
  // that turned out too large).
  struct Mark {
    size_t size;
    int depth;
    bool has_items;
  };
  Mark mark() const { return {pos_, depth_, has_items_[depth_]}; }
  void rewind(const Mark& m);

  // Appends the escaped form of `value` (without quotes) to `out`, truncated to `max_bytes`.
  static void append_escaped(std::string& out, std::string_view value, size_t max_bytes);

 private:
  // Room for n more bytes at the cursor; returns the cursor.
  char* reserve(size_t n) {
    if (pos_ + n > out_.size()) grow(pos_ + n);
    return out_.data() + pos_;
  }
  void grow(size_t needed);
  void put(char c) {
    *reserve(1) = c;
    ++pos_;
  }
  void put(std::string_view s) {
    std::memcpy(reserve(s.size()), s.data(), s.size());
    pos_ += s.size();
  }
  void put_escaped(std::string_view value, size_t max_bytes);

  void separate() {
    if (has_items_[depth_]) put(',');
    has_items_[depth_] = true;
  }
  // Before a value: a comma unless it directly follows its key.
  void value_prefix() {
    if (after_key_) {
      after_key_ = false;
    } else {
      separate();
    }
  }
  void open(char c) {
    value_prefix();
    put(c);
    open_depth_only();
  }
  void open_depth_only() {
    if (depth_ < kMaxDepth) {
      ++depth_;
    } else {
      ++overflow_;  // past the tracked depth all levels share one comma flag
    }
    has_items_[depth_] = false;
  }
  void close(char c) {
    put(c);
    if (overflow_ > 0) {
      --overflow_;
      has_items_[depth_] = true;  // the closed container is an item of its parent
    } else if (depth_ > 0) {
      --depth_;
    }
  }

  std::string& out_;
  size_t pos_;     // end of the JSON written so far; out_.size() may be larger (scratch room)
  size_t origin_;  // where this writer started: scratch grows with what it wrote since
  size_t max_string_;
  int depth_ = 0;
  int overflow_ = 0;  // nesting levels past kMaxDepth
  bool after_key_ = false;
  bool has_items_[kMaxDepth + 1] = {};
};

}  // namespace pyprof
