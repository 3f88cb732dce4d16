// Helpers the model families share, header-only and internal to models/. The element-wise-style
// families (norm, softmax, pointwise, reduction, loss, embedding, pooling, dropout, upsample,
// movement) use most of it: the FLOP weights of elementary operations, dtype categories and
// PyTorch type promotion, broadcasting, strides and contiguity, argument reading that works for
// all three argument dialects. The GEMM-based, optimizer and collective families use only
// elem_size(), dtype_suffix() and unmodeled(). Dtype names, sizes and aliases are op_model.h's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/op_model.h"

namespace pyprof::models::shape_util {

// ---- FLOP convention (docs/ops.md "Conventions") ------------------------------------------
// One FLOP per element per arithmetic operation: + - * /, min/max, a comparison, a select.
inline constexpr double kArith = 1;
// One elementary function (exp, log, sqrt, rsqrt, tanh, erf, sin, pow, ...): a single
// special-function-unit instruction (or a short polynomial) per element. Counted as 1, like an
// arithmetic op, so that FLOPs stay comparable with hand counts; change it here only.
inline constexpr double kTrans = 1;
// FLOPs of `arith` arithmetic operations and `trans` elementary functions.
constexpr double fl(double arith, double trans = 0) { return arith * kArith + trans * kTrans; }

// ---- dtypes ---------------------------------------------------------------------------------
enum class Cat : uint8_t { kUnknown, kBool, kInt, kFloat, kComplex };

inline Cat category(std::string_view raw) {
  std::string d = canonical_dtype(raw);
  if (d.empty() || dtype_size(d) == 0) return Cat::kUnknown;
  if (d == "bool") return Cat::kBool;
  if (d.starts_with("complex")) return Cat::kComplex;
  if (d.starts_with("float") || d == "bfloat16") return Cat::kFloat;
  return Cat::kInt;  // (u)int*, quantized types
}
inline bool is_floating(std::string_view d) { return category(d) == Cat::kFloat; }
inline bool is_integral(std::string_view d) {  // bool included, as in PyTorch's isIntegralType
  Cat c = category(d);
  return c == Cat::kInt || c == Cat::kBool;
}

// Bytes of one element; an unknown dtype counts 4 (as tensor_bytes()).
inline double elem_size(std::string_view d) {
  int s = dtype_size(d);
  return s == 0 ? 4.0 : static_cast<double>(s);
}
inline double nbytes(double numel, std::string_view dtype) { return numel * elem_size(dtype); }
inline double nbytes(const Tensor* t) { return t ? tensor_bytes(*t) : 0.0; }

// Accumulate type of reductions/statistics (as on CUDA): 16-bit and 8-bit floats -> float32.
inline std::string acc_dtype(std::string_view raw) {
  std::string d = canonical_dtype(raw);
  if (d == "float16" || d == "bfloat16" || d.starts_with("float8") || d.starts_with("float4")) {
    return "float32";
  }
  return d;
}

inline std::string float_dtype_of(std::string_view raw) {  // int/bool -> float32 (default)
  Cat c = category(raw);
  if (c == Cat::kInt || c == Cat::kBool) return "float32";
  return canonical_dtype(raw);
}

inline std::string complex_of(std::string_view f) {
  if (f == "float64") return "complex128";
  if (f == "float16") return "complex32";
  return "complex64";
}
inline std::string real_of(std::string_view c) {
  if (c == "complex128") return "float64";
  if (c == "complex32") return "float16";
  if (c == "complex64") return "float32";
  return std::string(c);
}

// torch.promote_types for two known dtypes (canonical names).
inline std::string promote(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty() || a == b) return a;
  Cat ca = category(a), cb = category(b);
  if (ca == Cat::kUnknown) return b;
  if (cb == Cat::kUnknown) return a;
  if (ca != cb) {
    const std::string& hi = ca > cb ? a : b;
    const std::string& lo = ca > cb ? b : a;
    Cat chi = std::max(ca, cb), clo = std::min(ca, cb);
    if (chi == Cat::kComplex && clo == Cat::kFloat) {
      // complex64 + float64 -> complex128
      return dtype_size(real_of(hi)) >= dtype_size(lo) ? hi : complex_of(lo);
    }
    return hi;
  }
  int sa = dtype_size(a), sb = dtype_size(b);
  if (ca == Cat::kInt) {
    bool ua = a.starts_with("uint"), ub = b.starts_with("uint");
    if (ua == ub) return sa >= sb ? a : b;
    const std::string& s = ua ? b : a;  // the signed one
    const std::string& u = ua ? a : b;
    if (dtype_size(s) > dtype_size(u)) return s;
    int need = std::min(8, 2 * dtype_size(u));
    return need == 2 ? "int16" : need == 4 ? "int32" : "int64";
  }
  if (sa != sb) return sa > sb ? a : b;
  return ca == Cat::kComplex ? "complex64" : "float32";  // float16 + bfloat16, fp8 mixes
}

// PyTorch's result_type: dimensioned tensors, then 0-dim tensors, then Python scalars
// (int -> int64, float -> the default float32), combined by category.
class TypeState {
 public:
  void add(const Tensor& t) {
    std::string d = canonical_dtype(t.dtype);
    if (category(d) == Cat::kUnknown) {
      unknown_ = true;
      return;
    }
    known_ = true;
    std::string& slot = t.rank() > 0 ? dim_ : zero_;
    slot = promote(slot, d);
  }
  void add_scalar(const Value& v) {
    std::string d;
    if (v.kind == Value::Kind::kBool) d = "bool";
    if (v.kind == Value::Kind::kInt) d = "int64";
    if (v.kind == Value::Kind::kDouble) d = "float32";
    if (v.kind == Value::Kind::kOther) d = "complex64";  // {"real":..,"imag":..}
    if (!d.empty()) wrapped_ = promote(wrapped_, d);
  }
  void add(const Value* v) {
    if (!v) return;
    if (v->is_tensor()) {
      add(v->tensor);
    } else {
      add_scalar(*v);
    }
  }
  // "" when no operand had a known dtype (emit_nvtx shapes).
  std::string result() const {
    if (!known_ && unknown_) return "";
    return combine(dim_, combine(zero_, wrapped_));
  }

 private:
  static std::string combine(const std::string& higher, const std::string& lower) {
    if (higher.empty()) return lower;
    if (lower.empty()) return higher;
    Cat h = category(higher), l = category(lower);
    if (h == Cat::kComplex) return higher;
    if (l == Cat::kComplex) return h == Cat::kFloat ? complex_of(higher) : lower;
    if (h == Cat::kFloat) return higher;
    if (h == Cat::kBool || l == Cat::kFloat) return promote(higher, lower);
    return higher;
  }
  std::string dim_, zero_, wrapped_;
  bool known_ = false, unknown_ = false;
};

// ---- shapes ---------------------------------------------------------------------------------
// Product of a shape's sizes (checked, as Tensor::numel; negative sizes count as 0).
inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = count_mul(n, d < 0 ? 0 : d);
  return n;
}

// Broadcasts `shape` into `acc` (numpy rules); false when they do not broadcast.
inline bool broadcast_into(std::vector<int64_t>& acc, const std::vector<int64_t>& shape) {
  if (shape.size() > acc.size()) acc.insert(acc.begin(), shape.size() - acc.size(), 1);
  size_t off = acc.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& a = acc[off + i];
    int64_t b = shape[i];
    if (a == b || b == 1) continue;
    if (a == 1) {
      a = b;
      continue;
    }
    return false;
  }
  return true;
}

// Dimension d wrapped into [0, rank); -1 when out of range. A 0-dim tensor accepts 0 and -1.
inline int wrap_dim(int64_t d, int rank) {
  int r = std::max(rank, 1);
  if (d < 0) d += r;
  return (d < 0 || d >= r) ? -1 : static_cast<int>(d);
}

inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    s[i] = count_mul(s[i + 1], std::max<int64_t>(shape[i + 1], 1));
  }
  return s;
}

// Whether `stride` is the row-major layout of `shape` (size-1 dimensions ignored).
inline bool is_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
  if (stride.size() != shape.size()) return false;
  int64_t expected = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && stride[i] != expected) return false;
    expected = count_mul(expected, shape[i]);
  }
  return true;
}

// Channels-last (NHWC / NDHWC) contiguity of a 4-D or 5-D tensor.
inline bool is_channels_last(const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& stride) {
  if ((shape.size() != 4 && shape.size() != 5) || stride.size() != shape.size()) return false;
  std::vector<int> order;  // innermost first: C, W, H, (D), N
  order.push_back(1);
  for (int i = static_cast<int>(shape.size()) - 1; i >= 2; --i) order.push_back(i);
  order.push_back(0);
  int64_t expected = 1;
  for (int i : order) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && stride[i] != expected) return false;
    expected = count_mul(expected, shape[i]);
  }
  return true;
}

// ---- text -----------------------------------------------------------------------------------
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}
// "[32,256]fp16" as PyProf printed a tensor.
inline std::string describe(const Tensor& t) { return shape_str(t.shape) + short_dtype(t.dtype); }
inline std::string describe(const std::vector<const Tensor*>& ts) {
  std::string s;
  for (const Tensor* t : ts) {
    if (!s.empty()) s += ',';
    s += describe(*t);
  }
  return s;
}
inline std::string num_str(double v) {
  // The range check first: converting a double past int64 to int64 is undefined.
  if (std::abs(v) < kMaxCount && v == static_cast<double>(static_cast<int64_t>(v))) {
    return std::to_string(static_cast<int64_t>(v));
  }
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

// ---- arguments ------------------------------------------------------------------------------
// Legacy PyProf records name positional arguments ""; pyprof records use schema names and
// emit_nvtx records "0", "1", ...
inline bool is_legacy(const OpArgs& a) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.name_at(i).empty()) return true;
  }
  return false;
}
inline bool is_positional(const OpArgs& a) {  // emit_nvtx
  return a.size() > 0 && !a.name_at(0).empty() && a.name_at(0)[0] >= '0' && a.name_at(0)[0] <= '9';
}

// The first of several names (schema name, legacy Python keyword) that is present.
inline const Value* arg_any(const OpArgs& a, std::initializer_list<std::string_view> names,
                            size_t position) {
  for (std::string_view n : names) {
    if (const Value* v = a.get(n)) return v;
  }
  return a.arg(names.size() ? *names.begin() : std::string_view(), position);
}
inline const Tensor* tensor_any(const OpArgs& a, std::initializer_list<std::string_view> names,
                                size_t position) {
  const Value* v = arg_any(a, names, position);
  return v && v->is_tensor() ? &v->tensor : nullptr;
}

// An optional tensor argument (weight, bias, ...): absent when None, and when an emit_nvtx
// record shows `[]` with no dtype (emit_nvtx writes None and non-tensors that way; these
// arguments are never 0-dim tensors).
inline const Tensor* opt_tensor(const OpArgs& a, std::string_view name, size_t position) {
  const Tensor* t = a.tensor(name, position);
  if (t && t->rank() == 0 && t->dtype.empty()) return nullptr;
  return t;
}

// An int list argument (an int is a one-element list); nullopt when absent or not ints.
inline std::optional<std::vector<int64_t>> int_list(const Value* v) {
  if (!v) return std::nullopt;
  if (v->kind == Value::Kind::kIntList) return v->ints;
  if (v->kind == Value::Kind::kInt) return std::vector<int64_t>{v->i};
  return std::nullopt;
}

inline bool is_number(const Value* v) {
  return v && (v->kind == Value::Kind::kInt || v->kind == Value::Kind::kDouble ||
               v->kind == Value::Kind::kBool);
}

// A bool[N] output_mask: all true unless the record lists it (as 0/1 ints).
inline std::vector<bool> output_mask(const OpArgs& a, std::string_view name, size_t position,
                                     size_t n) {
  std::vector<bool> mask(n, true);
  const Value* v = a.arg(name, position);
  if (v && v->kind == Value::Kind::kIntList && v->ints.size() == n) {
    for (size_t i = 0; i < n; ++i) mask[i] = v->ints[i] != 0;
  }
  return mask;
}

// Reduction argument of the losses: ATen int (0 none, 1 mean, 2 sum) or the legacy string.
enum class Reduction : uint8_t { kNone, kMean, kSum };
inline Reduction reduction_of(const OpArgs& a, size_t position) {
  const Value* v = a.get("reduction");
  if (!v) v = a.arg("reduction", position);
  if (v && v->kind == Value::Kind::kInt) {
    return v->i == 0 ? Reduction::kNone : v->i == 2 ? Reduction::kSum : Reduction::kMean;
  }
  if (v && v->kind == Value::Kind::kString) {
    if (v->s == "none") return Reduction::kNone;
    if (v->s == "sum") return Reduction::kSum;
  }
  return Reduction::kMean;
}

// ",fp16"; nothing when the dtype is unknown.
inline std::string dtype_suffix(std::string_view dtype) {
  std::string s;
  if (!dtype.empty()) {
    s.push_back(',');
    s.append(short_dtype(dtype));
  }
  return s;
}

// The model returns false with the reason in params (op_cost() zeroes the costs).
inline bool unmodeled(OpCost& c, std::string why) {
  c.params = std::move(why);
  return false;
}

inline void add_ops(Registry& r, std::string_view family,
                    std::initializer_list<std::string_view> names, const ModelFn& fn) {
  for (std::string_view n : names) r.add(std::string(n), std::string(family), fn);
}

}  // namespace pyprof::models::shape_util
