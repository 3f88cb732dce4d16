// JsonWriter: a small, allocation-free (after warm-up) JSON encoder that appends to a
// caller-owned std::string.
//
// It exists because the annotation hot path builds one JSON object per ATen op, so it must be
// cheap (no iostreams, no temporary strings) and it must always produce valid, bounded JSON:
// - every string is escaped (quotes, backslashes, control characters) and invalid UTF-8 is
//   replaced by U+FFFD, so any consumer's JSON parser accepts it;
// - strings longer than a limit are cut at a character boundary and end with "...(+N bytes)";
// - non-finite doubles, which JSON cannot represent, are written as the strings "inf", "-inf",
//   "nan".
// Commas are inserted automatically; the caller only has to nest begin/end calls correctly.
#pragma once

#include <cstddef>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace pyprof {

class JsonWriter {
 public:
  // Strings longer than this many bytes (of input) are truncated.
  static constexpr size_t kDefaultMaxString = 512;
  static constexpr int kMaxDepth = 32;

  explicit JsonWriter(std::string& out, size_t max_string = kDefaultMaxString)
      : out_(out), max_string_(max_string) {}

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
  // were escaped once and cached). Inline: the op-marker hot path calls it ~20 times per op.
  void raw_key(std::string_view name) {
    separate();
    out_.push_back('"');
    out_.append(name);
    out_.append("\":", 2);
    after_key_ = true;
  }

  void string(std::string_view value);
  // A string the caller guarantees needs no escaping and no truncation (dtype names, "cpu").
  void trusted_string(std::string_view value) {
    value_prefix();
    out_.push_back('"');
    out_.append(value);
    out_.push_back('"');
  }
  void integer(int64_t value) {
    value_prefix();
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, value);
    out_.append(buf, res.ptr - buf);
  }
  void unsigned_integer(uint64_t value) {
    value_prefix();
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, value);
    out_.append(buf, res.ptr - buf);
  }
  void number(double value);
  void boolean(bool value) {
    value_prefix();
    if (value) {
      out_.append("true", 4);
    } else {
      out_.append("false", 5);
    }
  }
  void null() {
    value_prefix();
    out_.append("null", 4);
  }
  // Appends an already-encoded JSON value (e.g. a cached fragment) as one element.
  void raw_value(std::string_view json) {
    value_prefix();
    out_.append(json);
  }

  // Current nesting depth (0 = top level).
  int depth() const { return depth_; }
  size_t size() const { return out_.size(); }

  // Restores the writer to an earlier point: `size` from size() and `depth`/`has_items` as
  // they were then (see Mark). Used to drop an element that turned out too large.
  struct Mark {
    size_t size;
    int depth;
    bool has_items;
  };
  Mark mark() const { return {out_.size(), depth_, has_items_[depth_]}; }
  void rewind(const Mark& m);

  // Appends the escaped form of `value` (without quotes) to `out`, truncated to `max_bytes`.
  static void append_escaped(std::string& out, std::string_view value, size_t max_bytes);

 private:
  void separate() {
    if (has_items_[depth_]) out_.push_back(',');
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
    out_.push_back(c);
    open_depth_only();
  }
  void open_depth_only() {
    if (depth_ < kMaxDepth) {
      ++depth_;
      has_items_[depth_] = false;
    } else {
      // Past the tracked depth all levels share one comma flag: start it afresh.
      has_items_[depth_] = false;
      ++overflow_;
    }
  }
  void close(char c) {
    out_.push_back(c);
    if (overflow_ > 0) {
      --overflow_;
      has_items_[depth_] = true;  // the closed container is an item of its parent
    } else if (depth_ > 0) {
      --depth_;
    }
  }

  std::string& out_;
  size_t max_string_;
  int depth_ = 0;
  int overflow_ = 0;  // nesting levels past kMaxDepth (their comma state is not tracked)
  bool after_key_ = false;
  bool has_items_[kMaxDepth + 1] = {};
};

}  // namespace pyprof
