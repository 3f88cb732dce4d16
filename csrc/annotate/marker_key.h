// The binary key of an interned op marker: a cheaper stand-in for the marker's JSON when looking
// up the handle of a marker registered before (op_annotator.cpp).
//
// A training loop calls the same ops with the same shapes step after step, so almost every call
// finds its marker already registered. Formatting the JSON only to find it in a table costs more
// than the rest of the callback; the key instead copies the raw bytes the JSON is made from
// (dtype, device, sizes, strides, scalars) into a buffer. The key must never map two different
// markers to one handle: it holds at least everything the JSON encodes (often more, e.g. a whole
// list the JSON truncates), and values it cannot capture exactly make append_input_keys fail, so
// the caller falls back to the JSON itself as the key.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof {

class MarkerKeyWriter {
 public:
  explicit MarkerKeyWriter(std::string& buffer) : buffer_(buffer) {}

  void u8(uint8_t value) { bytes(&value, 1); }
  void u64(uint64_t value) { bytes(&value, sizeof value); }
  void text(std::string_view value) {
    u64(value.size());
    bytes(value.data(), value.size());
  }
  // Appends the key of every input; false (the key is then unusable) if one holds a value the
  // key cannot capture exactly (opaque objects, symbolic shapes, long or deep lists, ...).
  bool inputs(c10::ArrayRef<const c10::IValue> values);

  std::string_view view() const { return std::string_view(buffer_.data(), pos_); }

  // A hash of a key, 8 bytes at a time: several times faster than std::hash's byte-wise Murmur
  // on keys of a few hundred bytes, and good enough for a hash table of a few thousand keys.
  static uint64_t hash(std::string_view key) {
    uint64_t h = key.size() * 0x9E3779B97F4A7C15ull;
    size_t i = 0;
    for (; i + 8 <= key.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, key.data() + i, 8);
      h = (h ^ word) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 29;
    }
    if (i < key.size()) {
      uint64_t word = 0;
      std::memcpy(&word, key.data() + i, key.size() - i);
      h = (h ^ word) * 0xC4CEB9FE1A85EC53ull;
    }
    return h ^ (h >> 32);
  }

 private:
  bool value(const c10::IValue& v, int depth);
  bool tensor(const at::Tensor& t);
  void bytes(const void* data, size_t size) {
    if (pos_ + size > buffer_.size()) grow(pos_ + size);
    std::memcpy(buffer_.data() + pos_, data, size);
    pos_ += size;
  }
  void grow(size_t size);
  // Room for `size` more bytes; returns where they go (advance with pos_ += size).
  char* reserve(size_t size) {
    if (pos_ + size > buffer_.size()) grow(pos_ + size);
    return buffer_.data() + pos_;
  }

  std::string& buffer_;  // scratch, reused across calls: its size() is not the key's
  size_t pos_ = 0;
};

// Binary keys -> marker handles, for the hit path of every annotated op. Open addressing with
// linear probing over a power-of-two array, each slot holding its key's hash: a lookup is a
// hash, a mask and, nearly always, one memcmp, with no modulo and no node to chase (a
// std::unordered_map<std::string> took two divisions and a pointer hop). Keys live in one
// arena. Handles are never 0: 0 means "not found".
class KeyHandleTable {
 public:
  uint64_t find(std::string_view key) const {
    if (slots_.empty()) return 0;
    const uint64_t h = MarkerKeyWriter::hash(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.handle == 0) return 0;
      if (s.hash == h && s.size == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.handle;
      }
    }
  }
  // Adds `key` (not in the table) with `handle` (not 0).
  void insert(std::string_view key, uint64_t handle);
  size_t size() const { return used_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint64_t handle = 0;  // 0: empty
    size_t offset = 0;    // of the key in arena_
    size_t size = 0;
  };
  void place(const Slot& slot);

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t used_ = 0;
  std::string arena_;
};

}  // namespace pyprof
