#include "ivalue_json.h"

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

namespace pyprof {

namespace {

// Python's name of a dtype where it is not c10's name in lower case ("Half" is float16).
std::string_view python_only_dtype_name(c10::ScalarType type) {
  using c10::ScalarType;
  switch (type) {
    case ScalarType::Float:
      return "float32";
    case ScalarType::Double:
      return "float64";
    case ScalarType::Half:
      return "float16";
    case ScalarType::Byte:
      return "uint8";
    case ScalarType::Char:
      return "int8";
    case ScalarType::Short:
      return "int16";
    case ScalarType::Int:
      return "int32";
    case ScalarType::Long:
      return "int64";
    case ScalarType::ComplexHalf:
      return "complex32";
    case ScalarType::ComplexFloat:
      return "complex64";
    case ScalarType::ComplexDouble:
      return "complex128";
    default:
      return {};
  }
}

}  // namespace

std::string_view dtype_name(c10::ScalarType type) {
  // Every other dtype's Python name is c10's in lower case (BFloat16, Bool, QUInt4x2,
  // Float8_e4m3fn, Float4_e2m1fn_x2, UInt16, Bits8, ...). Building the table from c10 instead of
  // listing the newer types keeps the extension compiling against torch releases without them.
  static const auto names = [] {
    constexpr size_t kCount = static_cast<size_t>(c10::ScalarType::NumOptions);
    std::array<std::string, kCount> table;
    for (size_t i = 0; i < kCount; ++i) {
      const auto t = static_cast<c10::ScalarType>(i);
      std::string name(python_only_dtype_name(t));
      if (name.empty()) {
        name = c10::toString(t);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      table[i] = std::move(name);
    }
    return table;
  }();
  const auto index = static_cast<size_t>(type);
  return index < names.size() ? std::string_view(names[index]) : std::string_view("undefined");
}

std::string_view layout_name(c10::Layout layout) {
  switch (layout) {
    case c10::kStrided:
      return "strided";
    case c10::kSparse:
      return "sparse_coo";
    case c10::kSparseCsr:
      return "sparse_csr";
    case c10::kSparseCsc:
      return "sparse_csc";
    case c10::kSparseBsr:
      return "sparse_bsr";
    case c10::kSparseBsc:
      return "sparse_bsc";
    case c10::kMkldnn:
      return "_mkldnn";
    case c10::kJagged:
      return "jagged";
    default:
      return "unknown_layout";
  }
}

std::string_view memory_format_name(c10::MemoryFormat format) {
  switch (format) {
    case c10::MemoryFormat::Contiguous:
      return "contiguous_format";
    case c10::MemoryFormat::Preserve:
      return "preserve_format";
    case c10::MemoryFormat::ChannelsLast:
      return "channels_last";
    case c10::MemoryFormat::ChannelsLast3d:
      return "channels_last_3d";
    default:
      return "unknown_memory_format";
  }
}

ArgKind arg_kind_of(const c10::TypePtr& type) {
  c10::TypePtr t = type;
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  switch (t->kind()) {
    case c10::TypeKind::ScalarTypeType:
      return ArgKind::kScalarType;
    case c10::TypeKind::LayoutType:
      return ArgKind::kLayout;
    case c10::TypeKind::MemoryFormatType:
      return ArgKind::kMemoryFormat;
    default:
      return ArgKind::kGeneric;
  }
}

namespace {

void encode_device(JsonWriter& w, const c10::Device& device) {
  if (device.is_cpu()) {
    w.trusted_string("cpu");
  } else {
    w.string(device.str());
  }
}

// The "...+N" marker that ends a truncated list.
void write_truncation_marker(JsonWriter& w, size_t left_out) {
  char buf[32] = "...+";
  auto res = std::to_chars(buf + 4, buf + sizeof buf, static_cast<uint64_t>(left_out));
  w.string(std::string_view(buf, res.ptr - buf));
}

// A tensor's sizes or strides: at most `limit` values, then the "...+N" marker.
void encode_int_array(JsonWriter& w, c10::IntArrayRef values, size_t limit) {
  w.begin_array();
  const size_t n = values.size() < limit ? values.size() : limit;
  for (size_t i = 0; i < n; ++i) w.integer(values[i]);
  if (values.size() > n) write_truncation_marker(w, values.size() - n);
  w.end_array();
}

void encode_enum_int(JsonWriter& w, int64_t value, ArgKind kind) {
  switch (kind) {
    case ArgKind::kScalarType:
      if (value >= 0 && value < static_cast<int64_t>(c10::ScalarType::NumOptions)) {
        w.trusted_string(dtype_name(static_cast<c10::ScalarType>(value)));
        return;
      }
      break;
    case ArgKind::kLayout:
      if (value >= 0 && value < static_cast<int64_t>(c10::Layout::NumOptions)) {
        w.trusted_string(layout_name(static_cast<c10::Layout>(value)));
        return;
      }
      break;
    case ArgKind::kMemoryFormat:
      if (value >= 0 && value < static_cast<int64_t>(c10::MemoryFormat::NumOptions)) {
        w.trusted_string(memory_format_name(static_cast<c10::MemoryFormat>(value)));
        return;
      }
      break;
    case ArgKind::kGeneric:
      break;
  }
  w.integer(value);  // out of range: keep the raw number rather than guess
}

void encode_list(JsonWriter& w, c10::ArrayRef<c10::IValue> items, size_t limit, ArgKind kind,
                 const EncodeLimits& limits, int depth) {
  w.begin_array();
  const size_t n = items.size() < limit ? items.size() : limit;
  for (size_t i = 0; i < n; ++i) encode_ivalue(w, items[i], kind, limits, depth + 1);
  if (items.size() > n) write_truncation_marker(w, items.size() - n);
  w.end_array();
}

void encode_opaque(JsonWriter& w, const c10::IValue& v) {
  std::string label = "<";
  label += v.tagKind();
  label += ">";
  w.string(label);
}

}  // namespace

namespace {

// The common case, a strided CPU/CUDA tensor of a few dims, formatted with a local cursor into
// a stack buffer and appended once: about twice as fast as one writer call per element, and
// tensors are most of every op marker.
constexpr size_t kFastPathMaxDims = 12;

char* append_ints(char* p, c10::IntArrayRef values) {
  *p++ = '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) *p++ = ',';
    p = std::to_chars(p, p + 21, values[i]).ptr;
  }
  *p++ = ']';
  return p;
}

char* append_text(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

bool encode_plain_tensor(JsonWriter& w, const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->is_nested() || impl->has_symbolic_sizes_strides() || impl->layout() != c10::kStrided ||
      impl->dim() > static_cast<int64_t>(kFastPathMaxDims)) {
    return false;
  }
  const c10::Device device = impl->device();
  if (!device.is_cpu() && !device.is_cuda()) return false;
  // 2 lists of at most 12 ints of at most 20 chars + separators, plus the fixed text.
  char buf[2 * kFastPathMaxDims * 21 + 160];
  char* p = append_text(buf, "{\"shape\":");
  p = append_ints(p, impl->sizes());
  p = append_text(p, ",\"dtype\":\"");
  p = append_text(p, dtype_name(t.scalar_type()));
  p = append_text(p, "\",\"stride\":");
  p = append_ints(p, impl->strides());
  if (device.is_cpu()) {
    p = append_text(p, ",\"device\":\"cpu\"}");
  } else {
    p = append_text(p, ",\"device\":\"cuda:");
    p = std::to_chars(p, p + 4, static_cast<int>(device.index())).ptr;
    p = append_text(p, "\"}");
  }
  w.raw_value(std::string_view(buf, p - buf));
  return true;
}

}  // namespace

void encode_tensor(JsonWriter& w, const at::Tensor& t, const EncodeLimits& limits) {
  if (!t.defined()) {
    w.null();
    return;
  }
  if (t.dim() <= static_cast<int64_t>(limits.max_list) && encode_plain_tensor(w, t)) return;
  w.begin_object();
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (t.is_nested()) {
    // Nested tensors have no single shape; say what they are instead of throwing.
    w.raw_key("nested");
    w.boolean(true);
  } else if (impl->has_symbolic_sizes_strides()) {
    w.raw_key("symbolic");
    w.boolean(true);
  } else {
    w.raw_key("shape");
    encode_int_array(w, t.sizes(), limits.max_list);
  }
  w.raw_key("dtype");
  w.trusted_string(dtype_name(t.scalar_type()));
  if (t.layout() == c10::kStrided && !t.is_nested() && !impl->has_symbolic_sizes_strides()) {
    w.raw_key("stride");
    encode_int_array(w, t.strides(), limits.max_list);
  } else {
    w.raw_key("layout");
    w.trusted_string(layout_name(t.layout()));
  }
  w.raw_key("device");
  encode_device(w, t.device());
  w.end_object();
}

void encode_ivalue(JsonWriter& w, const c10::IValue& v, ArgKind kind, const EncodeLimits& limits,
                   int depth) {
  if (v.isTensor()) {
    encode_tensor(w, v.toTensor(), limits);
  } else if (v.isNone()) {
    w.null();
  } else if (v.isInt()) {
    if (kind == ArgKind::kGeneric) {
      w.integer(v.toInt());
    } else {
      encode_enum_int(w, v.toInt(), kind);
    }
  } else if (v.isBool()) {
    w.boolean(v.toBool());
  } else if (v.isDouble()) {
    w.number(v.toDouble());
  } else if (v.isSymInt()) {
    auto value = v.toSymInt().maybe_as_int();
    if (value) {
      w.integer(*value);
    } else {
      w.string("<SymInt>");
    }
  } else if (v.isComplexDouble()) {
    const auto c = v.toComplexDouble();
    w.begin_object();
    w.raw_key("real");
    w.number(c.real());
    w.raw_key("imag");
    w.number(c.imag());
    w.end_object();
  } else if (v.isString()) {
    w.string(v.toStringRef());
  } else if (v.isList()) {
    if (depth >= limits.max_depth) {
      w.string("<List>");
      return;
    }
    const size_t limit = v.isTensorList() ? limits.max_tensor_list : limits.max_list;
    encode_list(w, v.toListRef(), limit, kind, limits, depth);
  } else if (v.isTuple()) {
    if (depth >= limits.max_depth) {
      w.string("<Tuple>");
      return;
    }
    const auto& elements = v.toTupleRef().elements();
    encode_list(w, elements.asArrayRef(), limits.max_list, ArgKind::kGeneric, limits, depth);
  } else if (v.isGenericDict()) {
    if (depth >= limits.max_depth) {
      w.string("<Dict>");
      return;
    }
    // Keys need not be strings, so a dict is written as a list of [key, value] pairs.
    w.begin_object();
    w.raw_key("dict");
    w.begin_array();
    size_t written = 0;
    const auto dict = v.toGenericDict();
    for (const auto& entry : dict) {
      if (written == limits.max_list) {
        write_truncation_marker(w, dict.size() - written);
        break;
      }
      w.begin_array();
      encode_ivalue(w, entry.key(), ArgKind::kGeneric, limits, depth + 2);
      encode_ivalue(w, entry.value(), ArgKind::kGeneric, limits, depth + 2);
      w.end_array();
      ++written;
    }
    w.end_array();
    w.end_object();
  } else if (v.isDevice()) {
    encode_device(w, v.toDevice());
  } else if (v.isSymFloat()) {
    const auto f = v.toSymFloat();
    if (f.is_symbolic()) {
      w.string("<SymFloat>");
    } else {
      w.number(f.as_float_unchecked());
    }
  } else if (v.isSymBool()) {
    const auto b = v.toSymBool();
    auto value = b.maybe_as_bool();
    if (value) {
      w.boolean(*value);
    } else {
      w.string("<SymBool>");
    }
  } else {
    encode_opaque(w, v);
  }
}

}  // namespace pyprof
