#include "parse/json_stream.h"

#include <zlib.h>

#if PYPROF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "parse/ascii.h"

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

#if PYPROF_HAVE_ISAL
// gzip through Intel's ISA-L (igzip), which inflates about three times as fast as zlib: a
// trace's .gz is otherwise read no faster than zlib inflates it. Concatenated members are one
// stream, as for zlib.
class IsalGzipSource : public ByteSource {
 public:
  explicit IsalGzipSource(std::FILE* file) : file_(file), input_(size_t{1} << 20) {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
  }
  ~IsalGzipSource() override { std::fclose(file_); }
  size_t read(char* buffer, size_t capacity) override {
    for (;;) {
      if (failed_) return 0;
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        // One member ended: another may follow (bytes other than a gzip header end it).
        if (state_.avail_in == 0 && !refill()) return 0;
        if (state_.avail_in >= 1 && state_.next_in[0] != 0x1f) return 0;
        uint8_t* next = state_.next_in;
        const uint32_t avail = state_.avail_in;
        isal_inflate_reset(&state_);
        state_.crc_flag = ISAL_GZIP;
        state_.next_in = next;
        state_.avail_in = avail;
      }
      if (state_.avail_in == 0 && !refill()) {
        failed_ = true;
        if (error_.empty()) error_ = "the gzip stream ends early (truncated file?)";
        return 0;
      }
      state_.next_out = reinterpret_cast<uint8_t*>(buffer);
      state_.avail_out = static_cast<uint32_t>(std::min<size_t>(capacity, 1u << 30));
      const uint32_t asked = state_.avail_out;
      const int code = isal_inflate(&state_);
      const size_t produced = asked - state_.avail_out;
      if (code != ISAL_DECOMP_OK) {
        failed_ = true;
        error_ = code == ISAL_INCORRECT_CHECKSUM ? "gzip: checksum mismatch (damaged file?)"
                                                 : "gzip: invalid compressed data (damaged file?)";
        return produced;
      }
      if (produced > 0) return produced;
    }
  }
  const std::string& error() const override { return error_; }

 private:
  bool refill() {
    if (input_end_) return false;
    const size_t n = std::fread(input_.data(), 1, input_.size(), file_);
    if (n == 0) {
      input_end_ = true;
      if (std::ferror(file_)) error_ = std::string("read error: ") + std::strerror(errno);
      return false;
    }
    state_.next_in = input_.data();
    state_.avail_in = static_cast<uint32_t>(n);
    return true;
  }

  std::FILE* file_;
  std::vector<uint8_t> input_;
  inflate_state state_;
  bool input_end_ = false;
  bool failed_ = false;
  std::string error_;
};
#endif

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
    Chunk& front = ready_.front();
    size_t n = std::min(capacity, front.size - offset_);
    std::memcpy(buffer, front.bytes.get() + offset_, n);
    offset_ += n;
    if (offset_ == front.size) {
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
      Chunk chunk{std::unique_ptr<char[]>(new char[chunk_]), 0};  // not zero-filled
      size_t n = inner_->read(chunk.bytes.get(), chunk_);
      chunk.size = n;
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

  struct Chunk {
    std::unique_ptr<char[]> bytes;
    size_t size;
  };
  std::unique_ptr<ByteSource> inner_;
  size_t chunk_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Chunk> ready_;
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

// The next byte at or after p that can change the scanner's state: in a string '"' and '\\';
// outside, '"' and brackets. At least 16 bytes past `end` must be readable (the buffer's
// padding): sixteen bytes are tested at a time.
size_t next_special(const char* data, size_t p, size_t end, bool in_string) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  // '[' 0x5B, ']' 0x5D, '{' 0x7B, '}' 0x7D are the bytes with c & 0xD9 == 0x59, with 'Y', '_',
  // 'y' and DEL, which cannot occur outside a string in JSON (the caller ignores them).
  const __m128i bracket_bits = _mm_set1_epi8(static_cast<char>(0xD9));
  const __m128i bracket = _mm_set1_epi8(0x59);
  for (; p < end; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + p));
    const __m128i other = in_string ? _mm_cmpeq_epi8(v, backslash)
                                    : _mm_cmpeq_epi8(_mm_and_si128(v, bracket_bits), bracket);
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), other));
    if (mask != 0) return std::min(end, p + static_cast<size_t>(__builtin_ctz(mask)));
  }
  return end;
#else
  for (; p < end; ++p) {
    const char c = data[p];
    if (c == '"' || (in_string ? c == '\\' : (c == '{' || c == '}' || c == '[' || c == ']'))) {
      return p;
    }
  }
  return end;
#endif
}

// While a value is handed to a visitor, the kJsonPadding bytes after it read as zeros (as in a
// simdjson::padded_string): they are the document's next bytes, or stale ones past a read's end,
// and simdjson's On-Demand parser lets them decide whether some damaged values parse (a string
// where a key belongs), so an event could be kept or skipped by where a read happened to end.
// The bytes are put back afterwards (they may be the next value's).
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

// Scanning (finding where each event ends) runs on its own thread, ahead of the caller's
// parsing: the scanner hands over batches of events that point into the buffer they were read
// into, and the buffer goes with them; buffers come back to a pool once parsed.
class BufferPool {
 public:
  explicit BufferPool(size_t standard) : standard_(standard) {}
  ~BufferPool() {
    for (char* p : free_) delete[] p;
  }
  // A buffer of at least `capacity` bytes (its size in `got`).
  std::shared_ptr<char[]> get(size_t capacity, size_t& got) {
    char* raw = nullptr;
    if (capacity <= standard_) {
      capacity = standard_;
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        raw = free_.back();
        free_.pop_back();
      }
    }
    if (raw == nullptr) raw = new char[capacity];  // not zero-filled
    got = capacity;
    return std::shared_ptr<char[]>(raw, [this, capacity](char* p) { release(p, capacity); });
  }

 private:
  void release(char* p, size_t capacity) {
    if (capacity == standard_) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (free_.size() < 8) {
        free_.push_back(p);
        return;
      }
    }
    delete[] p;
  }

  const size_t standard_;
  std::mutex mutex_;
  std::vector<char*> free_;
};

struct ScanItem {
  std::string_view json;
  int64_t offset = 0;
  bool top_level = false;
  std::string key;  // top-level values only
};

struct ScanBatch {
  std::shared_ptr<char[]> buffer;  // what the items point into
  std::vector<ScanItem> items;
};

class BatchQueue {
 public:
  // Blocks while the queue is full (memory stays bounded); false once the reader gave up.
  bool push(ScanBatch batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return batches_.size() < kMaxBatches || abandoned_; });
    if (abandoned_) return false;
    batches_.push_back(std::move(batch));
    cv_.notify_all();
    return true;
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    cv_.notify_all();
  }
  void abandon() {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
    batches_.clear();
    cv_.notify_all();
  }
  bool abandoned() {
    std::lock_guard<std::mutex> lock(mutex_);
    return abandoned_;
  }
  // False when the scanner has finished and everything was taken.
  bool pop(ScanBatch& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !batches_.empty() || finished_; });
    if (batches_.empty()) return false;
    out = std::move(batches_.front());
    batches_.pop_front();
    cv_.notify_all();
    return true;
  }

 private:
  static constexpr size_t kMaxBatches = 4;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ScanBatch> batches_;
  bool finished_ = false;
  bool abandoned_ = false;
};

class Scanner {
 public:
  Scanner(ByteSource& source, BatchQueue& queue, BufferPool& pool, const ChromeTraceVisitor& filter,
          const ChromeTraceLimits& limits, ChromeTraceScan& result)
      : source_(source),
        queue_(queue),
        pool_(pool),
        filter_(filter),
        limits_(limits),
        result_(result) {
    buffer_ = pool_.get(limits_.chunk_bytes + kJsonPadding, capacity_);
  }
  ~Scanner() { flush(); }

  void run() {
    result_.ok = true;
    if (!skip_space()) return fail_empty();
    // A source may hand over fewer bytes than asked: the whole byte order mark before judging.
    while (offset() == 0 && size_ - pos_ < 3 && fill(pos_)) {
    }
    if (offset() == 0 && size_ - pos_ >= 3 &&
        std::memcmp(buffer_.get() + pos_, "\xEF\xBB\xBF", 3) == 0) {
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

  // Reads one more chunk, keeping the bytes from `keep` on (moved to the front of a new
  // buffer: events handed over point into the current one, which goes with them). False at the
  // end of the input, or once the reader has given up.
  bool fill(size_t keep) {
    if (eof_) return false;
    if (queue_.abandoned()) {
      eof_ = true;
      return false;
    }
    keep = std::min(keep, size_);
    const size_t kept = size_ - keep;
    // Room for what is kept and a chunk; a value larger than a chunk in progress grows it by
    // doubling, never past what the largest value kept can need (the limits, not the document).
    size_t wanted = kept + limits_.chunk_bytes + kJsonPadding;
    if (wanted > capacity_) {
      const size_t most = std::max(limits_.max_event_bytes, limits_.max_top_level_bytes) +
                          2 * limits_.chunk_bytes + kJsonPadding;
      wanted = std::max(wanted, std::min(capacity_ * 2, most));
    }
    size_t capacity = 0;
    std::shared_ptr<char[]> next = pool_.get(wanted, capacity);
    // The kept bytes are copied out before the events go: the reader zeroes the bytes after
    // each event while it parses it (ZeroPadding), and they may be the start of these.
    if (kept > 0) std::memcpy(next.get(), buffer_.get() + keep, kept);
    flush();
    buffer_ = std::move(next);
    capacity_ = capacity;
    base_ += static_cast<int64_t>(keep);
    pos_ -= keep;
    size_ = kept;
    size_t n = source_.read(buffer_.get() + size_, limits_.chunk_bytes);
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
      while (pos_ < size_ && is_json_space(buffer_[pos_])) ++pos_;
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
      const char* data = buffer_.get();
      bool done = false;
      while (p < size_) {
        if (escape) {
          escape = false;
          ++p;
          continue;
        }
        if (!nested && !string) {  // a number or literal ends at a delimiter
          const char c = data[p];
          if (c == ',' || c == ']' || c == '}' || is_json_space(c)) {
            done = true;
            break;
          }
          ++p;
          continue;
        }
        p = next_special(data, p, size_, in_string);
        if (p == size_) break;
        const char c = data[p++];
        if (in_string) {
          if (c == '\\') {
            escape = true;
          } else {
            in_string = false;
            if (string) {
              done = true;
              break;
            }
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
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
    value = std::string_view(buffer_.get() + start, length);
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
        if (const int slot = filter_.drop_unparsed(event); slot >= 0) {
          if (result_.dropped.size() <= static_cast<size_t>(slot)) result_.dropped.resize(slot + 1);
          ++result_.dropped[slot];
        } else {
          batch_.items.push_back({event, at, false, {}});
        }
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
        ++result_.trace_events_arrays;
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
        batch_.items.push_back({value, 0, true, key});
      }
    }
  }

  ByteSource& source_;
  BatchQueue& queue_;
  BufferPool& pool_;
  const ChromeTraceVisitor& filter_;
  const ChromeTraceLimits& limits_;
  ChromeTraceScan& result_;
  // Hands the events found so far over, with the buffer they point into.
  void flush() {
    if (batch_.items.empty()) return;
    batch_.buffer = buffer_;
    queue_.push(std::move(batch_));
    batch_ = ScanBatch{};
  }

  ScanBatch batch_;
  std::shared_ptr<char[]> buffer_;  // [0, size_) read, then at least kJsonPadding spare bytes
  size_t capacity_ = 0;
  size_t pos_ = 0;
  size_t size_ = 0;
  int64_t base_ = 0;  // document offset of buffer_[0]
  bool eof_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  unsigned char magic[2] = {0, 0};
  const bool gzip = std::fread(magic, 1, 2, file) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  // A plain file is read straight into the scanner's buffer (zlib passes large reads through);
  // a gzip stream is inflated on a thread of its own, ahead of the scanner.
#if PYPROF_HAVE_ISAL
  // PYPROF_GZIP=zlib reads with zlib all the same (the tests check both inflaters).
  const char* inflater = std::getenv("PYPROF_GZIP");
  if (gzip && !(inflater && std::string_view(inflater) == "zlib")) {
    std::rewind(file);
    return std::make_unique<PrefetchSource>(std::make_unique<IsalGzipSource>(file),
                                            size_t{4} << 20);
  }
#endif
  std::fclose(file);
  gzFile zfile = gzopen(path.c_str(), "rb");
  if (zfile == nullptr) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  gzbuffer(zfile, 1u << 20);
  auto source = std::make_unique<GzipFileSource>(zfile);
  if (!gzip) return source;
  return std::make_unique<PrefetchSource>(std::move(source), size_t{4} << 20);
}

std::unique_ptr<ByteSource> memory_source(std::string_view bytes) {
  return std::make_unique<MemorySource>(bytes);
}

ChromeTraceScan scan_chrome_trace(ByteSource& source, ChromeTraceVisitor& visitor,
                                  const ChromeTraceLimits& limits) {
  ChromeTraceScan result;
  BufferPool pool(2 * limits.chunk_bytes + kJsonPadding);
  BatchQueue queue;
  std::exception_ptr scanner_failure;
  std::thread scanner([&] {
    try {
      Scanner(source, queue, pool, visitor, limits, result).run();
    } catch (...) {  // out of memory: the caller rethrows it
      scanner_failure = std::current_exception();
    }
    queue.finish();
  });
  std::exception_ptr visitor_failure;
  ScanBatch batch;
  while (queue.pop(batch)) {
    try {
      for (const ScanItem& item : batch.items) {
        ZeroPadding padding(item.json);
        if (item.top_level) {
          visitor.on_top_level(item.key, item.json);
        } else {
          visitor.on_event(item.json, item.offset);
        }
      }
    } catch (...) {
      visitor_failure = std::current_exception();
      queue.abandon();
      break;
    }
    batch = ScanBatch{};  // the buffer goes back to the pool
  }
  batch = ScanBatch{};
  scanner.join();
  if (visitor_failure) std::rethrow_exception(visitor_failure);
  if (scanner_failure) std::rethrow_exception(scanner_failure);
  return result;
}

bool looks_like_json_or_gzip(std::string_view head) {
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return true;
  }
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  size_t i = 0;
  while (i < head.size() && is_json_space(head[i])) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

}  // namespace pyprof::parse
