// The one reader of net.dict (docs/formats.md §3; its schema: common/dict_schema.h). prof, diff,
// export and the ranks report read parse's output through it, line by line in one pass:
//   1. lines:  the input is read in blocks of whole lines, padded for simdjson;
//   2. keys:   each line's JSON object is walked once (simdjson On-Demand, no document tree) and
//              every key the schema knows is kept in its slot, as views into the block; keys it
//              does not know are skipped (a newer parse's);
//   3. checks: on the caller's thread, in input order: the header comes first (it is parsed into
//              DictHeader), the compact form's `args` lines are kept and every reference to one
//              is resolved, so that a consumer reads `args` whichever form the file has.
// Steps 1 and 2 run on two threads of their own a few blocks ahead of the caller.
//
// A line that cannot be read (not a JSON object; with strict_json, not strictly valid JSON) is
// handed to the caller marked unreadable: every tool skips it, counts it and warns about it
// (prof/records.h, ReadResult::skipped_lines). Before the header it ends the read instead: a file
// whose first line cannot be read is no net.dict, or a damaged one.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/dict_schema.h"

namespace pyprof::prof {

// The longest line the reader takes (its line end aside): parse writes none near it (names are
// cut at 4 KiB, a profile's distinct arguments are kept to 64 MiB), and a longer one (/dev/zero,
// a file that is no net.dict) ends the read with an error instead of growing one line without
// bound.
inline constexpr size_t kMaxDictLineBytes = size_t{64} << 20;

namespace dict_slots {
// Where DictLine keeps each key's value: strings, raw JSON and `range`'s kind in a text slot;
// integers, times, booleans and `range`'s id in a number slot; string arrays in a list slot.
struct Slots {
  std::array<int8_t, dict::kKeyCount> text{}, number{}, list{};
  size_t texts = 0, numbers = 0, lists = 0;
};
constexpr Slots make_slots() {
  Slots s;
  for (size_t k = 0; k < dict::kKeyCount; ++k) {
    const dict::Value v = dict::kKeyValues[k];
    s.text[k] = s.number[k] = s.list[k] = -1;
    if (v == dict::Value::kString || v == dict::Value::kRaw || v == dict::Value::kIntOrString) {
      s.text[k] = static_cast<int8_t>(s.texts++);
    }
    if (v == dict::Value::kInt || v == dict::Value::kTime || v == dict::Value::kBool ||
        v == dict::Value::kIntOrString) {
      s.number[k] = static_cast<int8_t>(s.numbers++);
    }
    if (v == dict::Value::kStrings) s.list[k] = static_cast<int8_t>(s.lists++);
  }
  return s;
}
inline constexpr Slots kSlots = make_slots();
static_assert(dict::kKeyCount <= 128, "DictLine's presence bits hold 128 keys");
}  // namespace dict_slots

// One line of a net.dict: each key the schema knows, as views into the line (or into the
// reader's storage: strings that held escapes, the compact form's args), valid until the next
// line is read.
class DictLine {
 public:
  int64_t line = 0;       // its number in the input, from 1 (for messages)
  size_t line_bytes = 0;  // its length in the input, line end included
  std::string_view text;  // the line as the input holds it, without its line end
  // Why the line cannot be read ("not a JSON object"); empty when it can.
  std::string_view unreadable;
  // The first time (dict::Value::kTime) holding something other than an integer or null: the
  // record's time cannot be known (prof flags it bad-time). Empty when none.
  std::string_view unreadable_time;

  struct Launch {
    std::string_view api;
    std::optional<int64_t> start, duration, negative_duration;
  };

  // The key is there with a value that is not null. A string key holding no string reads as
  // absent; an integer key holding no integer is present without a value (num() falls back).
  bool has(dict::Key k) const {
    const auto i = static_cast<size_t>(k);
    return (present_[i >> 6] >> (i & 63)) & 1;
  }
  // A string's text (escapes resolved); "" when absent.
  std::string_view str(dict::Key k) const {
    const int8_t s = dict_slots::kSlots.text[static_cast<size_t>(k)];
    return has(k) ? text_[s] : std::string_view();
  }
  // An object's or array's JSON text; "" when absent (the compact form's `args`, `bwd_args`:
  // the text their reference names).
  std::string_view raw(dict::Key k) const { return str(k); }
  // An integer (a time, a boolean as 1 or 0); `otherwise` when absent or no integer.
  int64_t num(dict::Key k, int64_t otherwise) const {
    return valued(k) ? number_[dict_slots::kSlots.number[static_cast<size_t>(k)]] : otherwise;
  }
  std::optional<int64_t> number(dict::Key k) const {
    return valued(k)
               ? std::optional<int64_t>(number_[dict_slots::kSlots.number[static_cast<size_t>(k)]])
               : std::nullopt;
  }
  bool flag(dict::Key k) const { return num(k, 0) == 1; }
  // A string array's strings, in order; empty when absent.
  const std::vector<std::string_view>& strings(dict::Key k) const;
  // The launch object; nullptr when the line has none.
  const Launch* launch() const { return has(dict::Key::launch) ? &launch_ : nullptr; }
  // What the line is (its `kind`).
  dict::LineKind kind() const { return kind_; }
  bool header() const { return has(dict::Key::pyprof_dict); }

  // What the parser and the args table use to fill a line.
  void clear();
  void set_text(dict::Key k, std::string_view value);
  void set_number(dict::Key k, int64_t value);
  void set_present_without_value(dict::Key k);
  std::vector<std::string_view>& list_to_fill(dict::Key k);
  Launch& launch_to_fill();
  void set_kind(dict::LineKind k) { kind_ = k; }

 private:
  void mark(dict::Key k) {
    const auto i = static_cast<size_t>(k);
    present_[i >> 6] |= uint64_t{1} << (i & 63);
  }
  // The key holds an integer in its number slot. A bit of its own, not a sentinel value: every
  // int64, INT64_MIN included, is a value a file may hold (a start of -2^63 is a bad time, not
  // an absent one).
  bool valued(dict::Key k) const {
    const auto i = static_cast<size_t>(k);
    return (valued_[i >> 6] >> (i & 63)) & 1;
  }
  void set_valued(dict::Key k, bool on) {
    const auto i = static_cast<size_t>(k);
    const uint64_t bit = uint64_t{1} << (i & 63);
    valued_[i >> 6] = on ? valued_[i >> 6] | bit : valued_[i >> 6] & ~bit;
  }

  uint64_t present_[2] = {0, 0};
  uint64_t valued_[2] = {0, 0};
  dict::LineKind kind_ = dict::LineKind::kOther;
  std::array<std::string_view, dict_slots::kSlots.texts> text_{};
  std::array<int64_t, dict_slots::kSlots.numbers> number_{};
  std::array<std::vector<std::string_view>, dict_slots::kSlots.lists> lists_;
  Launch launch_;
};

// A GPU of the header's `devices`, each fact as the file gives it (absent: not given).
struct DictDevice {
  std::optional<int64_t> id;
  std::optional<std::string> name;
  std::optional<int64_t> sm_count, clock_hz, memory_bandwidth, total_memory;
  std::optional<int64_t> compute_major, compute_minor;  // `compute_capability` [major, minor]
};

// One of the header's `iterations.steps`.
struct DictStep {
  std::string name;  // "step i" when the file names none
  int64_t start = 0, end = 0;
  bool cut = false;
};

// The header line (docs/formats.md §3, "Header keys").
struct DictHeader {
  std::string text;  // the line as the file holds it
  int64_t version = 0;
  std::string source, format, tool_version, records, backend;
  std::optional<int64_t> rank, world_size, base_time_ns;
  std::vector<DictDevice> devices;
  // `torch_settings`: each key with its value's JSON text ("false", "\"high\"", "2").
  std::vector<std::pair<std::string, std::string>> torch_settings;
  // `iterations`, when present: its rule, range and steps if well formed, else why not
  // (iterations_problem; readers then take the profile as one without iterations).
  bool has_iterations = false;
  std::string iteration_rule, iteration_range;
  std::vector<DictStep> steps;
  std::string iterations_problem;
};

struct DictReadOptions {
  // Every line checked to be strict JSON (`pyprof export` copies values into its trace as the
  // file holds them: a token On-Demand lets pass unread, `00012`, `nan`, `0x10`, must not reach
  // it). A line that is not is unreadable. Costs a full parse of each line.
  bool strict_json = false;
};

class DictReader {
 public:
  explicit DictReader(std::FILE* in, DictReadOptions options = {});
  ~DictReader();
  DictReader(const DictReader&) = delete;
  DictReader& operator=(const DictReader&) = delete;

  // The next non-blank line but the compact form's `args` lines (kept: each reference to one is
  // resolved into `args` / `bwd_args`), valid until the next call. The header line is parsed
  // into header() before it is returned. nullptr at the end of the input, or where reading
  // stopped: failure() says why ("" at the end).
  DictLine* next_line();
  // The last header line read.
  const DictHeader& header() const { return header_; }
  // After next_line() returned nullptr: the lines read, blank ones included.
  int64_t lines() const;
  // Why reading stopped early, the line named: the input could not be read, had no header, a
  // line was longer than kMaxDictLineBytes, an `args` line or a reference to one was malformed.
  const std::string& failure() const { return failure_; }
  // A line read earlier, kept as its text (`line` its number), read again into `out` with its
  // references resolved; false when it cannot be read.
  bool read_again(std::string_view text, int64_t line, DictLine& out);

 private:
  class Threads;
  // Keeps an `args` line's definition; false with failure_ set when it is malformed or repeats an
  // id.
  bool define_args(const DictLine& l);
  // Points `args` / `bwd_args` at the text their references name; false with failure_ set when a
  // reference is malformed or names no earlier args line.
  bool resolve_args(DictLine& l);
  bool resolve_one(DictLine& l, dict::Key ref, dict::Key target);

  std::unique_ptr<Threads> threads_;
  DictHeader header_;
  bool header_seen_ = false;
  std::string failure_;
  std::unordered_map<int64_t, std::string> args_;  // id -> the args JSON
  // read_again's parser and the strings it unescaped.
  struct Again;
  std::unique_ptr<Again> again_;
};

}  // namespace pyprof::prof
