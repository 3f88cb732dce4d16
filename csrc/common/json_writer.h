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
  // Writes a key that the caller guarantees needs no escaping (compile-time names).
  void raw_key(std::string_view name);

  void string(std::string_view value);
  void integer(int64_t value);
  void unsigned_integer(uint64_t value);
  void number(double value);
  void boolean(bool value);
  void null();
  // Appends an already-encoded JSON value (e.g. a cached fragment) as one element.
  void raw_value(std::string_view json);

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
  void open(char c);
  void open_depth_only();
  void close(char c);

  std::string& out_;
  size_t max_string_;
  int depth_ = 0;
  int overflow_ = 0;  // nesting levels past kMaxDepth (their comma state is not tracked)
  bool after_key_ = false;
  bool has_items_[kMaxDepth + 1] = {};
};

}  // namespace pyprof
