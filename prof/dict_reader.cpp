#include "prof/dict_reader.h"

#include <fmt/core.h>
#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "prof/records.h"

namespace pyprof::prof {

namespace od = simdjson::ondemand;
using dict::Key;

// ---- DictLine ---------------------------------------------------------------------------------

const std::vector<std::string_view>& DictLine::strings(Key k) const {
  static const std::vector<std::string_view> kNone;
  return has(k) ? lists_[dict_slots::kSlots.list[static_cast<size_t>(k)]] : kNone;
}

void DictLine::clear() {
  present_[0] = present_[1] = 0;
  valued_[0] = valued_[1] = 0;
  kind_ = dict::LineKind::kOther;
  unreadable = {};
  unreadable_time = {};
}

void DictLine::set_text(Key k, std::string_view value) {
  text_[dict_slots::kSlots.text[static_cast<size_t>(k)]] = value;
  set_valued(k, false);  // `range`: a kind, not an id
  mark(k);
}

void DictLine::set_number(Key k, int64_t value) {
  number_[dict_slots::kSlots.number[static_cast<size_t>(k)]] = value;
  set_valued(k, true);
  if (const int8_t t = dict_slots::kSlots.text[static_cast<size_t>(k)]; t >= 0) {
    text_[t] = {};  // `range`: an id, not a kind
  }
  mark(k);
}

void DictLine::set_present_without_value(Key k) {
  set_valued(k, false);
  mark(k);
}

std::vector<std::string_view>& DictLine::list_to_fill(Key k) {
  std::vector<std::string_view>& list = lists_[dict_slots::kSlots.list[static_cast<size_t>(k)]];
  list.clear();
  mark(k);
  return list;
}

DictLine::Launch& DictLine::launch_to_fill() {
  launch_ = Launch{};
  mark(Key::launch);
  return launch_;
}

namespace {

// ---- 1. lines ---------------------------------------------------------------------------------

// Bytes [0, size) of the input, with simdjson's padding readable beyond them, so that every
// line in it can be parsed in place. Never zero-filled: a block is a megabyte.
struct Block {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  size_t capacity = 0;  // without the padding

  void reserve(size_t n) {
    if (n <= capacity) return;
    n = std::max(n, 2 * capacity);
    std::unique_ptr<char[]> grown(new char[n + simdjson::SIMDJSON_PADDING]);
    if (size > 0) std::memcpy(grown.get(), data.get(), size);
    data = std::move(grown);
    capacity = n;
  }
};

// A line past kMaxDictLineBytes: the read stops there.
struct LineTooLong : std::length_error {
  LineTooLong()
      : std::length_error(fmt::format(
            "longer than {} MiB, the most a net.dict line may hold (pyprof parse writes none that "
            "long: not a net.dict?)",
            kMaxDictLineBytes >> 20)) {}
};

// The input in blocks of whole lines.
class BlockReader {
 public:
  explicit BlockReader(std::FILE* in) : in_(in) {}

  // Fills `block` with the next lines (the last one possibly without its line end, at the end
  // of the input); false when nothing is left. A line longer than a block makes its block longer.
  bool next(Block& block) {
    block.size = 0;
    block.reserve(carry_.size() + kBlockBytes);
    if (!carry_.empty()) std::memcpy(block.data.get(), carry_.data(), carry_.size());
    block.size = carry_.size();
    carry_.clear();
    while (!eof_) {
      const size_t old = block.size;
      block.reserve(old + kBlockBytes);
      const size_t n = std::fread(block.data.get() + old, 1, kBlockBytes, in_);
      block.size = old + n;
      // Only the block's first line, begun before this read (what came before has no line
      // end), can be longer than a read: it must not grow without bound (/dev/zero).
      if (block.size > kMaxDictLineBytes) {
        const auto* first_end =
            static_cast<const char*>(std::memchr(block.data.get() + old, '\n', n));
        const size_t first_line =
            first_end != nullptr ? static_cast<size_t>(first_end - block.data.get()) : block.size;
        if (first_line > kMaxDictLineBytes) throw LineTooLong();
      }
      if (n < kBlockBytes) {
        eof_ = true;
        failed_ = std::ferror(in_) != 0;
        break;
      }
      // The carried part has no line end: only the new bytes can hold the last one.
      const auto* last = static_cast<const char*>(memrchr(block.data.get() + old, '\n', n));
      if (last != nullptr) {
        const size_t kept = static_cast<size_t>(last - block.data.get()) + 1;
        carry_.assign(block.data.get() + kept, block.size - kept);
        block.size = kept;
        break;
      }
    }
    return block.size > 0;
  }
  // Whether reading stopped on an I/O error rather than the end of the input.
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  std::FILE* in_;
  std::string carry_;  // the unfinished line after the last block's last line end
  bool eof_ = false, failed_ = false;
};

// ---- 2. keys ----------------------------------------------------------------------------------

// Keys longer than this are read through simdjson's unescaping (none of the schema's is).
constexpr size_t kMaxRawKey = 64;

std::string_view trim_end(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// A string: a view into the line unless it holds an escape (parse writes few), unescaped into
// `unescaped` then, so that the line's values outlive the parser's string buffer, which the next
// line reuses. False when the value is no string.
bool read_string(od::value& v, std::string_view& out, std::deque<std::string>& unescaped) {
  const std::string_view token = trim_end(v.raw_json_token());
  // A quote inside the token is escaped: looking for backslashes is enough.
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"' &&
      std::memchr(token.data() + 1, '\\', token.size() - 2) == nullptr) {
    out = token.substr(1, token.size() - 2);
    return true;
  }
  if (v.get_string().get(out) == simdjson::SUCCESS) {
    out = unescaped.emplace_back(out);
    return true;
  }
  return false;
}

// Any value but null as its JSON text (objects and arrays whole); false for null.
bool read_raw(od::value& v, std::string_view& out) {
  od::json_type type;
  if (v.type().get(type) != simdjson::SUCCESS) return false;
  if (type == od::json_type::object) {
    od::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS || o.raw_json().get(out) != simdjson::SUCCESS) {
      return false;
    }
  } else if (type == od::json_type::array) {
    od::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS || a.raw_json().get(out) != simdjson::SUCCESS) {
      return false;
    }
  } else if (type == od::json_type::null) {
    return false;
  } else {
    out = v.raw_json_token();
  }
  out = trim_end(out);
  return true;
}

bool is_null(od::value& v) {
  bool null = false;
  return v.is_null().get(null) == simdjson::SUCCESS && null;
}

// An integer key: its value, or present without one when it holds something else (null aside).
void read_number(od::value& v, Key k, DictLine& line) {
  int64_t x;
  if (v.get_int64().get(x) == simdjson::SUCCESS) {
    line.set_number(k, x);
  } else if (!is_null(v)) {
    line.set_present_without_value(k);
  }
}

void read_launch(od::value& v, DictLine& line, std::deque<std::string>& unescaped) {
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return;
  DictLine::Launch& launch = line.launch_to_fill();
  for (auto field : o) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
    od::value value = field.value();
    int64_t x;
    if (key == dict::launch_key::api) {
      if (!read_string(value, launch.api, unescaped)) launch.api = {};
    } else if (key == dict::launch_key::start) {
      if (value.get_int64().get(x) == simdjson::SUCCESS) launch.start = x;
    } else if (key == dict::launch_key::duration) {
      if (value.get_int64().get(x) == simdjson::SUCCESS) launch.duration = x;
    } else if (key == dict::launch_key::negative_duration) {
      if (value.get_int64().get(x) == simdjson::SUCCESS) launch.negative_duration = x;
    }
  }
}

// One pass over the object's fields (On-Demand): no tape of the whole line; each key the schema
// knows read as its dict::Value says, the others skipped.
bool read_object(od::object o, DictLine& line, std::deque<std::string>& unescaped) {
  for (auto field : o) {
    std::string_view key;
    // The key as it is in the line when it holds no escape (parse writes none): unescaping
    // copies every key of every line, a tenth of the read.
    if (field.error() != simdjson::SUCCESS) return false;
    const char* raw_key = field.value_unsafe().key().raw();
    const auto* key_end = static_cast<const char*>(std::memchr(raw_key, '"', kMaxRawKey));
    const size_t length = key_end != nullptr ? static_cast<size_t>(key_end - raw_key) : 0;
    if (key_end != nullptr && std::memchr(raw_key, '\\', length) == nullptr) {
      key = std::string_view(raw_key, length);
    } else if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      return false;
    }
    const std::optional<Key> k = dict::find_key(key);
    if (!k) continue;
    od::value v = field.value();
    std::string_view text;
    switch (dict::value_of(*k)) {
      case dict::Value::kString:
        if (read_string(v, text, unescaped)) line.set_text(*k, text);
        break;
      case dict::Value::kInt:
        read_number(v, *k, line);
        break;
      case dict::Value::kTime: {
        // An integer, or null (unknown); anything else makes the record's time unknown.
        if (is_null(v)) break;
        int64_t x;
        if (v.get_int64().get(x) == simdjson::SUCCESS) {
          line.set_number(*k, x);
        } else if (line.unreadable_time.empty()) {
          line.unreadable_time = dict::name_of(*k);
        }
        break;
      }
      case dict::Value::kBool: {
        bool b = false;
        if (v.get_bool().get(b) == simdjson::SUCCESS) line.set_number(*k, b ? 1 : 0);
        break;
      }
      case dict::Value::kRaw:
        if (read_raw(v, text)) line.set_text(*k, text);
        break;
      case dict::Value::kStrings: {
        od::array a;
        if (v.get_array().get(a) != simdjson::SUCCESS) break;
        std::vector<std::string_view>& list = line.list_to_fill(*k);
        for (auto e : a) {
          od::value element;
          if (e.get(element) != simdjson::SUCCESS) continue;
          if (read_string(element, text, unescaped)) list.push_back(text);
        }
        break;
      }
      case dict::Value::kLaunch:
        read_launch(v, line, unescaped);
        break;
      case dict::Value::kIntOrString: {
        const std::string_view token = v.raw_json_token();
        if (!token.empty() && token.front() == '"') {
          if (read_string(v, text, unescaped)) line.set_text(*k, text);
        } else {
          read_number(v, *k, line);
        }
        break;
      }
    }
  }
  line.set_kind(dict::line_kind_of(line.str(Key::kind)));
  return true;
}

constexpr std::string_view kNotAnObject = "not a JSON object";

// Reads lines into DictLines: On-Demand for the keys, the DOM parser to check strict JSON.
class LineParser {
 public:
  explicit LineParser(bool strict) : strict_(strict) {}

  // Line `text` (simdjson's padding readable after it) into `line`; strings that held escapes
  // and the reason a line is unreadable go to `storage`.
  void parse(const char* text, size_t length, size_t padded_length, DictLine& line,
             std::deque<std::string>& storage) {
    line.clear();
    line.text = std::string_view(text, length);
    if (strict_) {
      if (auto invalid = validator_.parse(text, length, false).error()) {
        line.unreadable = storage.emplace_back(fmt::format(
            "not valid JSON ({}; a damaged net.dict?)", simdjson::error_message(invalid)));
        return;
      }
    }
    od::document doc;
    od::object o;
    if (parser_.iterate(text, length, padded_length).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(o) != simdjson::SUCCESS || !read_object(o, line, storage)) {
      line.clear();
      line.text = std::string_view(text, length);
      line.unreadable = kNotAnObject;
    }
  }

 private:
  bool strict_;
  od::parser parser_;
  simdjson::dom::parser validator_;
};

// One block's lines read into DictLines.
struct LineBatch {
  Block text;                       // the block's lines
  std::vector<DictLine> lines;      // its non-blank lines in order: the first `size` of them
  size_t size = 0;                  // their `line` counts from 1 at the block's first line
  std::deque<std::string> storage;  // the strings of `lines` that held escapes
  int64_t line_count = 0;           // the block's lines, blank ones included
};

}  // namespace

// Steps 1 and 2 on threads of their own, a few blocks ahead of the caller, who takes the lines
// block after block in input order. On a million-kernel net.dict reading the keys costs about
// twice what prof does with them: two threads read them.
class DictReader::Threads {
 public:
  Threads(std::FILE* in, bool strict) : blocks_(in), strict_(strict) {
    const int threads = std::thread::hardware_concurrency() > 1 ? 2 : 1;
    for (int i = 0; i < 3 * threads; ++i) free_.push_back(std::make_unique<LineBatch>());
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~Threads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // The next non-blank line, `line` its number in the input; valid until the next call.
  // nullptr at the end of the input (or where reading failed: failure()).
  DictLine* next_line() {
    while (batch_ == nullptr || index_ == batch_->size) {
      if (batch_ != nullptr) lines_ += batch_->line_count;
      batch_ = next_batch();
      index_ = 0;
      if (batch_ == nullptr) return nullptr;
    }
    DictLine& l = batch_->lines[index_++];
    l.line += lines_;
    return &l;
  }
  // After next_line() returned nullptr: the lines read, blank ones included.
  int64_t lines() const { return lines_; }
  // After next_line() returned nullptr: why reading stopped early ("" at the end of the input).
  const std::string& failure() const { return failure_; }
  // Whether it stopped at a line too long (the line after lines()).
  bool line_too_long() const { return line_too_long_; }

 private:
  // The next batch in input order, valid until the next call; nullptr after the last one.
  LineBatch* next_batch() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (current_) free_.push_back(std::move(current_));
    changed_.notify_all();
    changed_.wait(lock, [this] { return ready_.count(next_) > 0 || next_ >= end_; });
    auto it = ready_.find(next_);
    if (it == ready_.end()) return nullptr;
    current_ = std::move(it->second);
    ready_.erase(it);
    ++next_;
    return current_.get();
  }

  void run() {
    LineParser parser(strict_);
    for (;;) {
      std::unique_ptr<LineBatch> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || exhausted_ || !free_.empty(); });
        if (stop_ || exhausted_) return;
        batch = std::move(free_.front());
        free_.pop_front();
      }
      // Blocks are read one thread at a time, and numbered in the order they were read.
      int64_t sequence;
      bool more = false, too_long = false;
      std::string failure;
      {
        std::lock_guard<std::mutex> lock(read_mutex_);
        sequence = read_++;
        try {
          more = blocks_.next(batch->text);
          if (!more && blocks_.failed()) failure = "read error";
        } catch (const LineTooLong& e) {
          failure = e.what();
          too_long = true;
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
      if (more) {
        try {
          fill(parser, *batch);
        } catch (const std::exception& e) {
          more = false;
          failure = e.what();
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (more) {
          ready_.emplace(sequence, std::move(batch));
        } else {
          // The input ends (or fails) at this block: the caller stops before it.
          exhausted_ = true;
          if (sequence < end_) {
            end_ = sequence;
            failure_ = failure;
            line_too_long_ = too_long;
          }
        }
      }
      changed_.notify_all();
    }
  }

  // Parses each line of the batch's block in place (the block's padding covers the last one).
  static void fill(LineParser& parser, LineBatch& batch) {
    batch.size = 0;
    batch.storage.clear();
    int64_t lines = 0;
    const char* p = batch.text.data.get();
    const char* end = p + batch.text.size;
    const char* padded_end = end + simdjson::SIMDJSON_PADDING;
    while (p < end) {
      const auto* line_end = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* next = line_end != nullptr ? line_end + 1 : end;
      if (line_end == nullptr) line_end = end;
      ++lines;
      size_t length = static_cast<size_t>(line_end - p);
      while (length > 0 && (p[length - 1] == '\r' || p[length - 1] == '\n')) --length;
      if (length > 0) {
        if (batch.size == batch.lines.size()) batch.lines.emplace_back();
        DictLine& l = batch.lines[batch.size++];
        parser.parse(p, length, static_cast<size_t>(padded_end - p), l, batch.storage);
        l.line = lines;
        l.line_bytes = static_cast<size_t>(next - p);
      }
      p = next;
    }
    batch.line_count = lines;
  }

  BlockReader blocks_;  // read under read_mutex_
  const bool strict_;
  int64_t read_ = 0;  // blocks read (or tried) so far, under read_mutex_
  std::mutex read_mutex_;
  std::mutex mutex_;  // guards what follows, up to the threads
  std::condition_variable changed_;
  std::deque<std::unique_ptr<LineBatch>> free_;
  std::map<int64_t, std::unique_ptr<LineBatch>> ready_;  // by block number
  std::unique_ptr<LineBatch> current_;                   // the caller's
  int64_t next_ = 0;                                     // the block the caller reads next
  int64_t end_ = std::numeric_limits<int64_t>::max();    // the first block past the input
  bool stop_ = false, exhausted_ = false;
  std::string failure_;
  bool line_too_long_ = false;
  LineBatch* batch_ = nullptr;        // the caller's: the batch next_line() is in
  size_t index_ = 0;                  // its next line
  int64_t lines_ = 0;                 // the input's lines before it
  std::vector<std::thread> threads_;  // last: started once the members they use exist
};

// ---- 3. the header ----------------------------------------------------------------------------

namespace {

// One object of the header's `devices`.
DictDevice read_device(od::object o) {
  DictDevice d;
  for (auto field : o) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) break;
    od::value v = field.value();
    int64_t x = 0;
    namespace dk = dict::device_key;
    if (key == dk::compute_capability) {
      od::array a;
      if (v.get_array().get(a) != simdjson::SUCCESS) continue;
      int i = 0;
      for (auto e : a) {
        if (e.get_int64().get(x) == simdjson::SUCCESS)
          (i == 0 ? d.compute_major : d.compute_minor) = x;
        ++i;
      }
    } else if (key == dk::name) {
      std::string_view name;
      if (v.get_string().get(name) == simdjson::SUCCESS) d.name = std::string(name);
    } else if (v.get_int64().get(x) == simdjson::SUCCESS) {
      if (key == dk::id) d.id = x;
      if (key == dk::sm_count) d.sm_count = x;
      if (key == dk::clock_hz) d.clock_hz = x;
      if (key == dk::memory_bandwidth) d.memory_bandwidth = x;
      if (key == dk::total_memory) d.total_memory = x;
    }
  }
  return d;
}

// The header's `iterations` object; a problem (a missing or mistyped key, indices not 0..N-1,
// steps out of time order or overlapping) is said in h.iterations_problem, and the readers then
// take the profile as one without iterations.
void read_iterations(od::value v, DictHeader& h) {
  h.has_iterations = true;
  std::string& problem = h.iterations_problem;
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) {
    problem = "not an object";
    return;
  }
  int64_t count = -1;
  bool steps_seen = false;
  namespace ik = dict::iterations_key;
  namespace sk = dict::step_key;
  for (auto field : o) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
      problem = "unreadable key";
      return;
    }
    od::value value = field.value();
    std::string_view text;
    if (key == ik::rule || key == ik::range) {
      if (value.get_string().get(text) != simdjson::SUCCESS) {
        problem = fmt::format("`{}` is not a string", key);
        return;
      }
      (key == ik::rule ? h.iteration_rule : h.iteration_range) = text;
    } else if (key == ik::count) {
      if (value.get_int64().get(count) != simdjson::SUCCESS) {
        problem = "`count` is not an integer";
        return;
      }
    } else if (key == ik::steps) {
      steps_seen = true;
      od::array a;
      if (value.get_array().get(a) != simdjson::SUCCESS) {
        problem = "`steps` is not an array";
        return;
      }
      for (auto e : a) {
        od::object so;
        if (e.get_object().get(so) != simdjson::SUCCESS) {
          problem = fmt::format("step {} is not an object", h.steps.size());
          return;
        }
        DictStep step;
        int64_t index = -1;
        bool has_start = false, has_end = false;
        for (auto sf : so) {
          std::string_view k;
          if (sf.unescaped_key().get(k) != simdjson::SUCCESS) break;
          od::value sv = sf.value();
          if (k == sk::index) {
            if (sv.get_int64().get(index) != simdjson::SUCCESS) index = -1;
          } else if (k == sk::name) {
            if (sv.get_string().get(text) == simdjson::SUCCESS) step.name = text;
          } else if (k == sk::start) {
            has_start = sv.get_int64().get(step.start) == simdjson::SUCCESS;
          } else if (k == sk::end) {
            has_end = sv.get_int64().get(step.end) == simdjson::SUCCESS;
          } else if (k == sk::cut) {
            bool cut = false;
            step.cut = sv.get_bool().get(cut) == simdjson::SUCCESS && cut;
          }
        }
        const size_t i = h.steps.size();
        if (index != static_cast<int64_t>(i)) {
          problem = fmt::format("step {} has index {} (expected 0..N-1 in order)", i, index);
          return;
        }
        if (!has_start || !has_end || step.start < 0 || step.end < step.start ||
            step.end > kMaxRecordStart) {
          problem = fmt::format("step {} has no credible span [start, end)", i);
          return;
        }
        if (i > 0 && step.start < h.steps.back().end) {
          problem = fmt::format(
              "step {} starts before step {} ends (steps must be in time "
              "order and not overlap)",
              i, i - 1);
          return;
        }
        if (step.name.empty()) step.name = fmt::format("step {}", i);
        h.steps.push_back(std::move(step));
        if (h.steps.size() > (size_t{1} << 30)) {
          problem = "more than 2^30 steps";
          return;
        }
      }
    }
  }
  if (!steps_seen || h.steps.empty()) {
    problem = "no `steps`";
  } else if (count >= 0 && count != static_cast<int64_t>(h.steps.size())) {
    problem = fmt::format("`count` {} but {} steps", count, h.steps.size());
  } else if (h.iteration_rule.empty()) {
    problem = "no `rule`";
  }
  if (!problem.empty()) h.steps.clear();
}

// The header line's keys into `h` (its objects parsed from their text once, off the hot path).
void read_header(const DictLine& l, DictHeader& h) {
  h = DictHeader{};
  h.text = std::string(l.text);
  h.version = l.num(Key::pyprof_dict, 0);
  h.source = l.str(Key::source);
  h.format = l.str(Key::format);
  h.tool_version = l.str(Key::version);
  h.records = l.str(Key::records);
  h.backend = l.str(Key::backend);
  h.rank = l.number(Key::rank);
  h.world_size = l.number(Key::world_size);
  h.base_time_ns = l.number(Key::base_time_ns);
  od::parser parser;
  auto parse = [&](Key k, auto&& read) {
    if (!l.has(k)) return;
    simdjson::padded_string text(l.raw(k));
    od::document doc;
    od::value v;
    if (parser.iterate(text).get(doc) != simdjson::SUCCESS ||
        doc.get_value().get(v) != simdjson::SUCCESS) {
      return;
    }
    read(v);
  };
  parse(Key::devices, [&](od::value v) {
    od::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) return;
    for (auto e : a) {
      od::object o;
      if (e.get_object().get(o) == simdjson::SUCCESS) h.devices.push_back(read_device(o));
    }
  });
  parse(Key::torch_settings, [&](od::value v) {
    od::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) return;
    for (auto field : o) {
      std::string_view k, raw;
      if (field.unescaped_key().get(k) != simdjson::SUCCESS) continue;
      // Scalars (booleans, strings, numbers): their token's text.
      raw = field.value().raw_json_token();
      while (!raw.empty() &&
             (raw.back() == ' ' || raw.back() == '\n' || raw.back() == ',' || raw.back() == '}')) {
        raw.remove_suffix(1);
      }
      h.torch_settings.emplace_back(std::string(k), std::string(raw));
    }
  });
  if (l.has(Key::iterations)) {
    h.has_iterations = true;
    parse(Key::iterations, [&](od::value v) { read_iterations(v, h); });
    if (h.steps.empty() && h.iterations_problem.empty()) h.iterations_problem = "not an object";
  }
}

}  // namespace

// ---- the reader -------------------------------------------------------------------------------

struct DictReader::Again {
  explicit Again(bool strict) : parser(strict) {}
  LineParser parser;
  std::string padded;
  std::deque<std::string> storage;
};

DictReader::DictReader(std::FILE* in, DictReadOptions options)
    : threads_(std::make_unique<Threads>(in, options.strict_json)),
      again_(std::make_unique<Again>(options.strict_json)) {}

DictReader::~DictReader() = default;

int64_t DictReader::lines() const { return threads_->lines(); }

DictLine* DictReader::next_line() {
  if (!failure_.empty()) return nullptr;
  for (;;) {
    DictLine* l = threads_->next_line();
    if (l == nullptr) {
      const int64_t lines = threads_->lines();
      if (const std::string& failure = threads_->failure(); !failure.empty()) {
        failure_ = threads_->line_too_long()
                       ? fmt::format("line {}: {}", lines + 1, failure)
                       : fmt::format("{} after line {} of the input", failure, lines);
      } else if (!header_seen_) {
        failure_ = lines == 0 ? "empty input (expected the output of `pyprof parse`)"
                              : "no pyprof_dict header (is this the output of `pyprof parse`?)";
      }
      return nullptr;
    }
    if (!header_seen_ && !l->header()) {
      failure_ = l->unreadable.empty()
                     ? fmt::format(
                           "line {}: no pyprof_dict header (is this the output of `pyprof parse`?)",
                           l->line)
                     : fmt::format(
                           "line {}: {}; expected the pyprof_dict header (is this the output of "
                           "`pyprof parse`?)",
                           l->line, l->unreadable);
      return nullptr;
    }
    if (!l->unreadable.empty()) return l;
    if (l->header()) {
      read_header(*l, header_);
      header_seen_ = true;
      return l;
    }
    if (l->kind() == dict::LineKind::kArgs) {
      if (!define_args(*l)) return nullptr;
      continue;
    }
    if (!resolve_args(*l)) return nullptr;
    return l;
  }
}

bool DictReader::define_args(const DictLine& l) {
  const int64_t id = l.num(Key::id, -1);
  const std::string_view args = l.raw(Key::args);
  if (id < 0 || args.empty() || (args.front() != '{' && args.front() != '[')) {
    failure_ = fmt::format(
        "line {}: an \"args\" line needs an \"id\" (a non-negative integer) and \"args\" (an "
        "object or array)",
        l.line);
    return false;
  }
  if (!args_.emplace(id, std::string(args)).second) {
    failure_ = fmt::format("line {}: args id {} is defined twice", l.line, id);
    return false;
  }
  return true;
}

bool DictReader::resolve_args(DictLine& l) {
  return resolve_one(l, Key::args_ref, Key::args) &&
         resolve_one(l, Key::bwd_args_ref, Key::bwd_args);
}

bool DictReader::resolve_one(DictLine& l, Key ref, Key target) {
  if (!l.has(ref)) return true;
  const int64_t id = l.num(ref, -1);
  if (id < 0) {
    failure_ =
        fmt::format("line {}: \"{}\" is not a non-negative integer", l.line, dict::name_of(ref));
    return false;
  }
  auto it = args_.find(id);
  if (it == args_.end()) {
    failure_ = fmt::format("line {}: \"{}\": {} names no \"args\" line before it", l.line,
                           dict::name_of(ref), id);
    return false;
  }
  l.set_text(target, it->second);
  return true;
}

bool DictReader::read_again(std::string_view text, int64_t line, DictLine& out) {
  Again& a = *again_;
  a.storage.clear();
  a.padded.assign(text);
  a.padded.append(simdjson::SIMDJSON_PADDING, '\0');
  a.parser.parse(a.padded.data(), text.size(), a.padded.size(), out, a.storage);
  out.line = line;
  if (!out.unreadable.empty()) return false;
  const std::string failure = failure_;
  const bool resolved = resolve_args(out);
  failure_ = failure;  // a reference that resolves no more is the line's problem, not the read's
  return resolved;
}

}  // namespace pyprof::prof
