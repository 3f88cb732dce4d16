#include "parse/json_stream.h"

#include <zlib.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace pyprof::parse {

namespace {

// ---- sources ------------------------------------------------------------------------------------

class GzipFileSource : public ByteSource {
 public:
  explicit GzipFileSource(gzFile file) : file_(file) {}
  ~GzipFileSource() override { gzclose(file_); }
  size_t read(char* buffer, size_t capacity) override {
    if (failed_) return 0;
    const unsigned ask = static_cast<unsigned>(std::min<size_t>(capacity, 1u << 30));
    int n = gzread(file_, buffer, ask);
    if (n > 0) return static_cast<size_t>(n);
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (n < 0 || code != Z_OK) {
      failed_ = true;
      error_ = code == Z_BUF_ERROR ? "the gzip stream ends early (truncated file?)"
                                   : std::string("gzip: ") + (message ? message : "read error");
    }
    return 0;
  }
  const std::string& error() const override { return error_; }

 private:
  gzFile file_;
  bool failed_ = false;
  std::string error_;
};

// Runs another source on its own thread, two chunks ahead of the reader.
class PrefetchSource : public ByteSource {
 public:
  PrefetchSource(std::unique_ptr<ByteSource> inner, size_t chunk)
      : inner_(std::move(inner)), chunk_(chunk), thread_([this] { produce(); }) {}
  ~PrefetchSource() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  size_t read(char* buffer, size_t capacity) override {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !ready_.empty() || done_; });
    if (ready_.empty()) return 0;
    std::string& front = ready_.front();
    size_t n = std::min(capacity, front.size() - offset_);
    std::memcpy(buffer, front.data() + offset_, n);
    offset_ += n;
    if (offset_ == front.size()) {
      ready_.pop_front();
      offset_ = 0;
      cv_.notify_all();
    }
    return n;
  }
  const std::string& error() const override { return error_; }

 private:
  void produce() {
    for (;;) {
      std::string chunk(chunk_, '\0');
      size_t n = inner_->read(chunk.data(), chunk.size());
      chunk.resize(n);
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return ready_.size() < 2 || stop_; });
      if (stop_) return;
      if (n == 0) {
        error_ = inner_->error();
        done_ = true;
        cv_.notify_all();
        return;
      }
      ready_.push_back(std::move(chunk));
      cv_.notify_all();
    }
  }

  std::unique_ptr<ByteSource> inner_;
  size_t chunk_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;
  size_t offset_ = 0;
  bool done_ = false;
  bool stop_ = false;
  std::string error_;
  std::thread thread_;  // last: started once the members above exist
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* buffer, size_t capacity) override {
    size_t n = std::min(capacity, bytes_.size() - at_);
    std::memcpy(buffer, bytes_.data() + at_, n);
    at_ += n;
    return n;
  }
  const std::string& error() const override { return error_; }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
  std::string error_;
};

// ---- scanner ------------------------------------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Bytes that matter outside strings: quotes and brackets.
struct StructuralTable {
  bool special[256] = {};
  constexpr StructuralTable() {
    for (unsigned char c : {'"', '{', '}', '[', ']'}) special[c] = true;
  }
};
constexpr StructuralTable kStructural;

// The first '"' or '\\' in [p, end), or end. Eight bytes at a time: strings are most of a trace.
const char* find_quote_or_backslash(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    uint64_t quote = word ^ (kOnes * '"');
    uint64_t slash = word ^ (kOnes * '\\');
    uint64_t hit = ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash);
    if (hit & kHighs) break;
    p += 8;
  }
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

// While a value is handed to a visitor, the kJsonPadding bytes after it read as zeros (as in a
// simdjson::padded_string): they are the document's next bytes, or stale ones past a read's end,
// and simdjson's On-Demand parser lets them decide whether some damaged values parse (a string
// where a key belongs), so an event could be kept or skipped by where a read happened to end.
// The bytes are put back afterwards.
class ZeroPadding {
 public:
  explicit ZeroPadding(std::string_view value)
      : after_(const_cast<char*>(value.data()) + value.size()) {
    std::memcpy(saved_, after_, kJsonPadding);
    std::memset(after_, 0, kJsonPadding);
  }
  ~ZeroPadding() { std::memcpy(after_, saved_, kJsonPadding); }
  ZeroPadding(const ZeroPadding&) = delete;
  ZeroPadding& operator=(const ZeroPadding&) = delete;

 private:
  char* after_;
  char saved_[kJsonPadding];
};

class Scanner {
 public:
  Scanner(ByteSource& source, ChromeTraceVisitor& visitor, const ChromeTraceLimits& limits,
          ChromeTraceScan& result)
      : source_(source), visitor_(visitor), limits_(limits), result_(result) {
    buffer_.resize(limits_.chunk_bytes + kJsonPadding);
  }

  void run() {
    result_.ok = true;
    if (!skip_space()) return fail_empty();
    // A source may hand over fewer bytes than asked: the whole byte order mark before judging.
    while (offset() == 0 && size_ - pos_ < 3 && fill(pos_)) {
    }
    if (offset() == 0 && size_ - pos_ >= 3 &&
        std::memcmp(buffer_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) {
      pos_ += 3;  // UTF-8 byte order mark
      if (!skip_space()) return fail_empty();
    }
    const char first = buffer_[pos_];
    if (first == '[') {
      ++pos_;
      result_.has_trace_events = true;
      if (!scan_events()) return;
    } else if (first == '{') {
      ++pos_;
      if (!scan_object()) return;
    } else {
      return fail("not JSON: the document starts with " + describe(first) + ", not '{' or '['");
    }
    if (skip_space()) result_.trailing_garbage = true;
    if (!source_.error().empty()) fail_source();
  }

 private:
  int64_t offset() const { return base_ + static_cast<int64_t>(pos_); }

  static std::string describe(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
    return std::string("byte ") + hex;
  }

  // A key as a message quotes it: the one line must stay one printable line whatever a damaged
  // document holds there (newlines, escape sequences, megabytes).
  static std::string printable(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 60)) out += c >= 0x20 && c < 0x7f ? c : '?';
    if (text.size() > 60) out += "...";
    return out;
  }

  void fail(std::string message) {
    result_.ok = false;
    result_.error = message + " (at byte " + std::to_string(offset()) + ")";
  }
  void fail_empty() {
    if (!source_.error().empty()) return fail_source();
    result_.ok = false;
    result_.error = offset() == 0 ? "the file is empty" : "the file holds only white space";
  }
  void fail_source() {
    result_.ok = false;
    result_.error = source_.error() + " after " + std::to_string(offset()) + " bytes";
  }
  // The document ended (or its bytes could not be read) before it was complete.
  void ended_early(const char* inside) {
    if (result_.has_trace_events && result_.events > 0) {
      result_.truncated = true;
      result_.error =
          (source_.error().empty() ? std::string("the document ends") : source_.error() + ";") +
          " inside " + inside + " after " + std::to_string(offset()) + " bytes";
      return;
    }
    if (!source_.error().empty()) return fail_source();
    fail(std::string("the document ends inside ") + inside + " (truncated file?)");
  }

  // Reads one more chunk, keeping the bytes from `keep` on (moved to the front). False at the
  // end of the input.
  bool fill(size_t keep) {
    if (eof_) return false;
    keep = std::min(keep, size_);
    const size_t kept = size_ - keep;
    if (keep > 0) {
      std::memmove(buffer_.data(), buffer_.data() + keep, kept);
      base_ += static_cast<int64_t>(keep);
      pos_ -= keep;
      size_ = kept;
    }
    if (buffer_.size() < size_ + limits_.chunk_bytes + kJsonPadding) {
      buffer_.resize(std::max(buffer_.size() * 2, size_ + limits_.chunk_bytes + kJsonPadding));
    }
    size_t n = source_.read(buffer_.data() + size_, limits_.chunk_bytes);
    if (n == 0) {
      eof_ = true;
      result_.bytes = base_ + static_cast<int64_t>(size_);
      return false;
    }
    size_ += n;
    result_.bytes = base_ + static_cast<int64_t>(size_);
    return true;
  }

  // Skips white space; false at the end of the input.
  bool skip_space() {
    for (;;) {
      while (pos_ < size_ && is_space(buffer_[pos_])) ++pos_;
      if (pos_ < size_) return true;
      if (!fill(pos_)) return false;
    }
  }

  // Finds the end of the value starting at pos_. When it ends, `value` views it (in the buffer,
  // padded) and pos_ is just past it. A value longer than `max_bytes` is skipped without being
  // kept: `value` is empty and `skipped` its length. False when the input ends first.
  bool capture(size_t max_bytes, std::string_view& value, int64_t& skipped) {
    value = {};
    skipped = 0;
    size_t start = pos_;
    int64_t dropped = 0;  // bytes of this value already discarded (skipping an oversized one)
    bool skipping = false;
    const char first = buffer_[pos_];
    const bool nested = first == '{' || first == '[';
    const bool string = first == '"';
    int depth = 0;
    bool in_string = false, escape = false;
    size_t p = pos_;
    if (string) {
      in_string = true;
      ++p;
    }
    for (;;) {
      const char* data = buffer_.data();
      bool done = false;
      while (p < size_) {
        if (in_string) {
          if (escape) {
            escape = false;
            ++p;
            continue;
          }
          p = static_cast<size_t>(find_quote_or_backslash(data + p, data + size_) - data);
          if (p == size_) break;
          if (data[p] == '\\') {
            escape = true;
          } else {
            in_string = false;
            if (string) {
              ++p;
              done = true;
              break;
            }
          }
          ++p;
          continue;
        }
        if (!nested) {  // a number or literal ends at a delimiter
          const char c = data[p];
          if (c == ',' || c == ']' || c == '}' || is_space(c)) {
            done = true;
            break;
          }
          ++p;
          continue;
        }
        const unsigned char c = static_cast<unsigned char>(data[p]);
        ++p;
        if (!kStructural.special[c]) continue;
        if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (--depth == 0) {
          done = true;
          break;
        }
      }
      if (done) break;
      const size_t held = p - start;
      if (!skipping && held > max_bytes) skipping = true;
      if (skipping) {  // drop what was scanned: the value will not be kept
        dropped += static_cast<int64_t>(held);
        start = p;
      }
      pos_ = p;
      const bool more = fill(start);
      // fill() may have moved the bytes even when it read nothing more: positions again.
      p = pos_;
      start = skipping ? p : pos_ - held;
      if (!more) {
        if (!nested && !string && (held > 0 || dropped > 0)) {  // a literal at the very end
          done = true;
          break;
        }
        pos_ = size_;
        return false;
      }
    }
    const size_t length = p - start;
    pos_ = p;
    if (skipping || length > max_bytes) {
      skipped = dropped + static_cast<int64_t>(length);
      return true;
    }
    value = std::string_view(buffer_.data() + start, length);
    return true;
  }

  bool scan_events() {
    for (;;) {
      if (!skip_space()) {
        ended_early("\"traceEvents\"");
        return false;
      }
      if (buffer_[pos_] == ']') {
        ++pos_;
        return true;
      }
      const int64_t at = offset();
      std::string_view event;
      int64_t skipped = 0;
      if (!capture(limits_.max_event_bytes, event, skipped)) {
        ended_early("an event of \"traceEvents\"");
        return false;
      }
      if (skipped > 0) {
        ++result_.oversized_events;
        result_.largest_skipped = std::max(result_.largest_skipped, skipped);
      } else {
        ++result_.events;
        ZeroPadding padding(event);
        visitor_.on_event(event, at);
      }
      if (!skip_space()) {
        ended_early("\"traceEvents\"");
        return false;
      }
      const char c = buffer_[pos_];
      if (c == ',') {
        ++pos_;
      } else if (c != ']') {
        fail("invalid JSON in \"traceEvents\": " + describe(c) + " where ',' or ']' belongs");
        return false;
      }
    }
  }

  bool scan_object() {
    for (bool first = true;; first = false) {
      if (!skip_space()) {
        ended_early("the top-level object");
        return false;
      }
      char c = buffer_[pos_];
      if (c == '}') {
        ++pos_;
        return true;
      }
      if (!first) {
        if (c != ',') {
          fail("invalid JSON: " + describe(c) + " where ',' or '}' belongs");
          return false;
        }
        ++pos_;
        if (!skip_space()) {
          ended_early("the top-level object");
          return false;
        }
        c = buffer_[pos_];
      }
      if (c != '"') {
        fail("invalid JSON: " + describe(c) + " where a key belongs");
        return false;
      }
      std::string_view key_json;
      int64_t skipped = 0;
      if (!capture(4096, key_json, skipped)) {
        ended_early("a key");
        return false;
      }
      std::string key(key_json.size() >= 2 ? key_json.substr(1, key_json.size() - 2) : "");
      if (!skip_space() || buffer_[pos_] != ':') {
        if (pos_ < size_) {
          fail("invalid JSON: " + describe(buffer_[pos_]) + " where ':' belongs");
        } else {
          ended_early("the top-level object");
        }
        return false;
      }
      ++pos_;
      if (!skip_space()) {
        ended_early("the top-level object");
        return false;
      }
      if (key == "traceEvents" && buffer_[pos_] == '[') {
        ++pos_;
        result_.has_trace_events = true;
        if (!scan_events()) return false;
        continue;
      }
      std::string_view value;
      if (!capture(limits_.max_top_level_bytes, value, skipped)) {
        ended_early(("the value of \"" + printable(key) + "\"").c_str());
        return false;
      }
      if (skipped > 0) {
        ++result_.oversized_values;
        result_.largest_skipped = std::max(result_.largest_skipped, skipped);
      } else {
        ZeroPadding padding(value);
        visitor_.on_top_level(key, value);
      }
    }
  }

  ByteSource& source_;
  ChromeTraceVisitor& visitor_;
  const ChromeTraceLimits& limits_;
  ChromeTraceScan& result_;
  std::string buffer_;  // [0, size_) read, then at least kJsonPadding spare bytes
  size_t pos_ = 0;
  size_t size_ = 0;
  int64_t base_ = 0;  // document offset of buffer_[0]
  bool eof_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  gzbuffer(file, 1u << 20);
  return std::make_unique<PrefetchSource>(std::make_unique<GzipFileSource>(file), size_t{4} << 20);
}

std::unique_ptr<ByteSource> memory_source(std::string_view bytes) {
  return std::make_unique<MemorySource>(bytes);
}

ChromeTraceScan scan_chrome_trace(ByteSource& source, ChromeTraceVisitor& visitor,
                                  const ChromeTraceLimits& limits) {
  ChromeTraceScan result;
  Scanner(source, visitor, limits, result).run();
  return result;
}

bool looks_like_json_or_gzip(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return true;
  }
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  size_t i = 0;
  while (i < head.size() && is_space(head[i])) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

}  // namespace pyprof::parse
