#include "marker_key.h"

#include <cstring>

namespace pyprof {
namespace {

// Beyond these the JSON encoder truncates or summarises (ivalue_json.h's EncodeLimits); such
// values are rare, so the key simply gives up on them rather than mirror those rules.
constexpr size_t kMaxListItems = 1024;
constexpr int kMaxDepth = 4;
constexpr int64_t kMaxTensorDims = 12;

// Distinct first bytes for every kind of value, so that no two encodings can collide.
enum Tag : uint8_t {
  kNone = 1,
  kUndefinedTensor,
  kTensor,
  kInt,
  kBool,
  kDouble,
  kString,
  kList,
  kTuple,
  kDevice,
  kComplex,
};

}  // namespace

void MarkerKeyWriter::grow(size_t size) { buffer_.resize(size < 256 ? 512 : size * 2); }

bool MarkerKeyWriter::tensor(const at::Tensor& t) {
  if (!t.defined()) {
    u8(kUndefinedTensor);
    return true;
  }
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->is_nested() || impl->has_symbolic_sizes_strides() || impl->layout() != c10::kStrided ||
      impl->dim() > kMaxTensorDims) {
    return false;
  }
  const c10::Device device = impl->device();
  const c10::IntArrayRef sizes = impl->sizes();
  const c10::IntArrayRef strides = impl->strides();
  const size_t dims = sizes.size();
  // One reservation and plain stores: tensors are most of every key.
  char* out = reserve(5 + 2 * dims * sizeof(int64_t));
  out[0] = static_cast<char>(kTensor);
  out[1] = static_cast<char>(t.scalar_type());
  out[2] = static_cast<char>(device.type());
  out[3] = static_cast<char>(device.index());
  out[4] = static_cast<char>(dims);
  out += 5;
  for (size_t i = 0; i < dims; ++i, out += sizeof(int64_t)) {
    std::memcpy(out, &sizes[i], sizeof(int64_t));
  }
  for (size_t i = 0; i < dims; ++i, out += sizeof(int64_t)) {
    std::memcpy(out, &strides[i], sizeof(int64_t));
  }
  pos_ += 5 + 2 * dims * sizeof(int64_t);
  return true;
}

bool MarkerKeyWriter::value(const c10::IValue& v, int depth) {
  if (v.isTensor()) return tensor(v.toTensor());
  if (v.isNone()) {
    u8(kNone);
  } else if (v.isInt()) {
    u8(kInt);
    u64(static_cast<uint64_t>(v.toInt()));
  } else if (v.isBool()) {
    u8(kBool);
    u8(v.toBool() ? 1 : 0);
  } else if (v.isDouble()) {
    u8(kDouble);
    const double d = v.toDouble();
    bytes(&d, sizeof d);
  } else if (v.isString()) {
    u8(kString);
    text(v.toStringRef());
  } else if (v.isDevice()) {
    const c10::Device device = v.toDevice();
    u8(kDevice);
    u8(static_cast<uint8_t>(device.type()));
    u8(static_cast<uint8_t>(device.index()));
  } else if (v.isComplexDouble()) {
    const auto c = v.toComplexDouble();
    u8(kComplex);
    const double parts[2] = {c.real(), c.imag()};
    bytes(parts, sizeof parts);
  } else if (v.isList() || v.isTuple()) {
    if (depth >= kMaxDepth) return false;
    const c10::ArrayRef<c10::IValue> items =
        v.isList() ? v.toListRef() : v.toTupleRef().elements().asArrayRef();
    if (items.size() > kMaxListItems) return false;
    u8(v.isList() ? kList : kTuple);
    u64(items.size());
    for (const c10::IValue& item : items) {
      if (!value(item, depth + 1)) return false;
    }
  } else {
    return false;  // SymInt/SymFloat, dicts, generators, objects: the JSON is the key
  }
  return true;
}

bool MarkerKeyWriter::inputs(c10::ArrayRef<const c10::IValue> values) {
  u64(values.size());
  for (const c10::IValue& v : values) {
    if (!value(v, 0)) return false;
  }
  return true;
}

void KeyHandleTable::place(const Slot& slot) {
  size_t i = slot.hash & mask_;
  while (slots_[i].handle != 0) i = (i + 1) & mask_;
  slots_[i] = slot;
}

void KeyHandleTable::insert(std::string_view key, uint64_t handle) {
  // At most half full, so that probes stay short.
  if (2 * (used_ + 1) > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.handle != 0) place(s);
    }
  }
  place({MarkerKeyWriter::hash(key), handle, arena_.size(), key.size()});
  arena_.append(key);
  ++used_;
}

}  // namespace pyprof
