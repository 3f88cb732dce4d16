// Data-movement family: copies and dtype conversions, concatenation, fills and factories,
// padding, repeats, and the metadata-only view ops (docs/ops.md "movement"); the family's
// indexing, gather/scatter and masked ops are in indexing.cpp.
//
// These ops do no arithmetic (0 FLOPs) except where they accumulate (pad backward, the
// index_select/unfold backward). Bytes: what is read and written once. View ops (t, transpose,
// view, permute, expand, narrow, slice, select, squeeze, ...) only change metadata: 0 and 0.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

const Tensor* self_of(const OpArgs& a) { return tensor_any(a, {"self", "input"}, 0); }

// The keyword-only dtype argument; `position` is where the schema puts it, for positional
// records (torch.profiler traces, whose dtype is a ScalarType number), SIZE_MAX when that
// depends on the overload.
std::string dtype_kwarg(const OpArgs& a, size_t position = SIZE_MAX) {
  const Value* v = a.get("dtype");
  if (!v && position != SIZE_MAX && is_positional(a)) v = a.at(position);
  return dtype_value(v);
}

// Read `src` once, write `out_elems` elements of `out_dtype`.
bool copy_cost(const Tensor& src, double out_elems, const std::string& out_dtype, OpCost& c) {
  c.flops = 0;
  c.bytes = tensor_bytes(src) + out_elems * elem_size(out_dtype);
  c.dtype = canonical_dtype(out_dtype.empty() ? src.dtype : out_dtype);
  c.params = describe(src);
  if (!out_dtype.empty() && canonical_dtype(out_dtype) != canonical_dtype(src.dtype)) {
    c.params += "->" + short_dtype(canonical_dtype(out_dtype));
  }
  return true;
}
bool copy_same(const Tensor& x, OpCost& c) {
  return copy_cost(x, static_cast<double>(x.numel()), x.dtype, c);
}

bool zero_cost(const Tensor* x, OpCost& c, const char* what) {
  c.flops = 0;
  c.bytes = 0;
  if (x) {
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + "," + what;
  } else {
    c.params = what;
  }
  return true;
}

// ---- copies and conversions ----

// copy_(self, src, non_blocking): src (broadcast to self) read at its size, self written.
// copy_.int/.float(self, other: scalar) is a fill.
bool copy_(const OpArgs& a, OpCost& c) {
  const Tensor* dst = self_of(a);
  if (!dst) return unmodeled(c, "no self tensor");
  const Value* src = a.get("src");
  if (!src) src = a.arg("other", 1);
  c.flops = 0;
  c.dtype = canonical_dtype(dst->dtype);
  if (!src || !src->is_tensor()) {
    c.bytes = tensor_bytes(*dst);
    c.params = describe(*dst);
    return true;
  }
  c.bytes = tensor_bytes(src->tensor) + tensor_bytes(*dst);
  c.params = describe(src->tensor) + "->" + describe(*dst);
  return true;
}

// _copy_from(self, dst, non_blocking) / _copy_from_and_resize(self, dst): self copied into dst.
bool copy_from(const OpArgs& a, OpCost& c) {
  const Tensor* src = self_of(a);
  const Tensor* dst = a.tensor("dst", 1);
  if (!src) return unmodeled(c, "no self tensor");
  return copy_cost(*src, static_cast<double>(src->numel()), dst ? dst->dtype : src->dtype, c);
}

// _to_copy(self, *, dtype, layout, device, ...): always a copy.
bool to_copy(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  std::string dt = dtype_kwarg(a, 1);
  return copy_cost(*x, static_cast<double>(x->numel()), dt.empty() ? x->dtype : dt, c);
}

// A memory_format argument that asks for a layout `x` does not have (strides known).
// nullopt: cannot tell.
std::optional<bool> needs_layout_change(const Tensor& x, const Value* mf) {
  std::string_view format;
  if (mf && mf->kind == Value::Kind::kString) {
    format = mf->s;
  } else if (mf && mf->kind == Value::Kind::kInt) {  // c10::MemoryFormat number (Kineto traces)
    static constexpr std::string_view kFormats[] = {"contiguous_format", "preserve_format",
                                                    "channels_last", "channels_last_3d"};
    if (mf->i < 0 || mf->i >= 4) return std::nullopt;
    format = kFormats[mf->i];
  }
  if (format.empty() || format == "preserve_format") return false;
  if (x.stride.empty()) return std::nullopt;
  if (format == "channels_last" || format == "channels_last_3d") {
    return !is_channels_last(x.shape, x.stride);
  }
  return !is_contiguous(x.shape, x.stride);
}

// torch.profiler traces list to()'s arguments by position, without the overload's name; the
// overload follows from their number and kinds. Device arguments are not recorded (null, as for
// None): a device that may have been given is marked present, so that a call that converts
// nothing is left to the inner _to_copy, as for a device move.
std::optional<OpArgs> named_to_args(const OpArgs& a) {
  static constexpr std::string_view kDtype[] = {"self", "dtype", "non_blocking", "copy",
                                                "memory_format"};
  static constexpr std::string_view kOther[] = {"self", "other", "non_blocking", "copy",
                                                "memory_format"};
  static constexpr std::string_view kDevice[] = {"self",         "device", "dtype",
                                                 "non_blocking", "copy",   "memory_format"};
  static constexpr std::string_view kDtypeLayout[] = {
      "self", "dtype", "layout", "device", "pin_memory", "non_blocking", "copy", "memory_format"};
  std::span<const std::string_view> names;
  if (a.size() == 5) {
    names = a.at(1)->is_tensor() ? std::span<const std::string_view>(kOther) : kDtype;
  } else if (a.size() == 6) {
    names = kDevice;
  } else if (a.size() == 8) {
    names = kDtypeLayout;
  } else {
    return std::nullopt;
  }
  OpArgs named;
  for (size_t i = 0; i < names.size(); ++i) {
    Value v = *a.at(i);
    if (names[i] == "device" && v.kind == Value::Kind::kNone) {
      v = Value::of(Value::Kind::kOther);
    }
    named.add(std::string(names[i]), std::move(v));
  }
  return named;
}

// to(self, dtype | device, dtype | other | *, dtype, device, ..., copy, memory_format): a
// conversion copies; the same dtype with no device and copy=False returns self (0). A device
// argument without a dtype change is left to the inner _to_copy (it may or may not move).
// Legacy Tensor.to records lose the dtype (PyProf drops torch.dtype arguments): costed as a
// same-size copy, as PyProf did.
bool to(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  if (is_legacy(a)) return copy_same(*x, c);
  if (is_positional(a)) {
    // emit_nvtx: shapes only. torch.profiler: every argument, by position.
    std::optional<OpArgs> named = x->dtype.empty() ? std::nullopt : named_to_args(a);
    if (!named) return unmodeled(c, "target unknown (costed by the inner _to_copy)");
    return to(*named, c);
  }
  std::string target = dtype_kwarg(a);
  const Value* other = a.get("other");
  if (target.empty() && other && other->is_tensor()) target = canonical_dtype(other->tensor.dtype);
  const Value* device = a.get("device");
  bool moves = (device && device->kind != Value::Kind::kNone) || (other && other->is_tensor());
  bool copy = a.bool_or("copy", 99, false);
  bool convert = !target.empty() && target != canonical_dtype(x->dtype);
  if (convert || copy) {
    return copy_cost(*x, static_cast<double>(x->numel()), target.empty() ? x->dtype : target, c);
  }
  if (moves) return unmodeled(c, "device move: costed by the inner _to_copy");
  std::optional<bool> relayout = needs_layout_change(*x, a.get("memory_format"));
  if (!relayout) return unmodeled(c, "strides unknown");
  if (*relayout) return copy_same(*x, c);
  return zero_cost(x, c, "no-op");
}

// Legacy dtype converters Tensor.float(), .half(), ...: a copy unless already that dtype.
ModelFn convert_to(std::string dtype) {
  return [dtype](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    if (!x) return unmodeled(c, "no self tensor");
    if (canonical_dtype(x->dtype) == dtype) return zero_cost(x, c, "no-op");
    return copy_cost(*x, static_cast<double>(x->numel()), dtype, c);
  };
}

// clone(self, memory_format): read and write.
bool clone(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  return copy_same(*x, c);
}

// contiguous(self, memory_format): returns self when already in that layout, else a copy.
// Without strides (emit_nvtx, legacy) the inner clone, if any, is costed.
bool contiguous(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  if (x->stride.empty()) return unmodeled(c, "strides unknown (costed by the inner clone)");
  const Value* mf = a.arg("memory_format", 1);
  bool cl = mf && mf->kind == Value::Kind::kString &&
            (mf->s == "channels_last" || mf->s == "channels_last_3d");
  bool ok = cl ? is_channels_last(x->shape, x->stride) : is_contiguous(x->shape, x->stride);
  return ok ? zero_cost(x, c, "no-op") : copy_same(*x, c);
}

// PyTorch's computeStride: whether `shape` can be viewed with `stride` as `target`.
bool can_view(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& target) {
  if (shape.empty() || numel_of(shape) == 0) return true;
  int64_t view_d = static_cast<int64_t>(target.size()) - 1;
  int64_t chunk_base_stride = stride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel = count_mul(tensor_numel, shape[d]);
    if (d == 0 ||
        (shape[d - 1] != 1 && stride[d - 1] != count_mul(tensor_numel, chunk_base_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        view_numel = count_mul(view_numel, target[view_d]);
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = stride[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

// A view when the strides allow it (0), else a copy; without strides the inner
// clone/_unsafe_view, if any, is costed.
bool reshape_to(const Tensor& x, std::vector<int64_t> target, OpCost& c) {
  if (x.stride.size() != x.shape.size()) {
    return unmodeled(c, "strides unknown (a copy is costed by the inner clone)");
  }
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      infer = static_cast<int>(i);
    } else {
      known = count_mul(known, target[i]);
    }
  }
  if (infer >= 0) target[infer] = known > 0 ? x.numel() / known : 0;
  if (numel_of(target) != x.numel()) return unmodeled(c, "shape does not match");
  if (can_view(x.shape, x.stride, target)) return zero_cost(&x, c, "view");
  copy_same(x, c);
  c.params += ",copy";
  return true;
}

// reshape(self, shape)
bool reshape(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  auto shape = int_list(a.arg("shape", 1));
  if (!shape) return unmodeled(c, "shape unknown");
  return reshape_to(*x, *shape, c);
}

// flatten(self, start_dim, end_dim)
bool flatten(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  int r = x->rank();
  if (r == 0) return zero_cost(x, c, "view");
  int s = wrap_dim(a.int_or("start_dim", 1, 0), r);
  int e = wrap_dim(a.int_or("end_dim", 2, -1), r);
  if (s < 0 || e < 0 || s > e) return unmodeled(c, "bad dims");
  std::vector<int64_t> target(x->shape.begin(), x->shape.begin() + s);
  int64_t mid = 1;
  for (int i = s; i <= e; ++i) mid *= x->shape[i];
  target.push_back(mid);
  target.insert(target.end(), x->shape.begin() + e + 1, x->shape.end());
  return reshape_to(*x, target, c);
}

bool view_op(const OpArgs& a, OpCost& c) { return zero_cost(self_of(a), c, "view"); }
bool alloc_op(const OpArgs& a, OpCost& c) { return zero_cost(self_of(a), c, "alloc"); }

// ---- concatenation ----

// The tensors of cat/stack: the `tensors` list (pyprof), the flattened positional tensors
// (legacy); emit_nvtx records do not show tensor lists.
std::vector<const Tensor*> list_tensors(const OpArgs& a) {
  std::vector<const Tensor*> ts;
  const Value* v = a.arg("tensors", 0);
  if (v && v->kind == Value::Kind::kTensorList) {
    for (const Tensor& t : v->tensors) ts.push_back(&t);
  } else if (is_legacy(a)) {
    ts = a.tensors();
  }
  return ts;
}

// cat/concat/concatenate/stack/hstack/vstack/dstack/column_stack(tensors, dim): every input
// read, the output (their total size, promoted dtype) written.
bool cat(const OpArgs& a, OpCost& c) {
  std::vector<const Tensor*> ts = list_tensors(a);
  if (ts.empty()) return unmodeled(c, "tensor list unknown");
  TypeState types;
  double in = 0, n = 0;
  for (const Tensor* t : ts) {
    types.add(*t);
    in += tensor_bytes(*t);
    n += static_cast<double>(t->numel());
  }
  c.dtype = types.result();
  c.flops = 0;
  c.bytes = in + n * elem_size(c.dtype);
  c.params =
      ts.size() <= 4 ? describe(ts) : describe(*ts.front()) + ",x" + std::to_string(ts.size());
  return true;
}

// ---- fills and factories (write only) ----

// fill_/fill(self, value), zero_/zero(self): self written (a 0-dim value tensor read).
bool fill(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  const Value* v = a.arg("value", 1);
  c.flops = 0;
  c.bytes = tensor_bytes(*x) +
            (v && v->is_tensor() && !v->tensor.dtype.empty() ? tensor_bytes(v->tensor) : 0);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x);
  return true;
}

// zeros_like/ones_like/full_like(self, [fill_value,] *, dtype, ...): self's size written in
// dtype (default self's); self is not read.
bool like(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  std::string dt = dtype_kwarg(a);
  if (dt.empty()) dt = canonical_dtype(x->dtype);
  double n = static_cast<double>(x->numel());
  c.flops = 0;
  c.bytes = n * elem_size(dt);
  c.dtype = dt;
  c.params = shape_str(x->shape) + short_dtype(dt);
  return true;
}

// The dtype torch.full infers from its fill value.
std::string fill_dtype(const Value* v) {
  if (!v) return "float32";
  if (v->kind == Value::Kind::kBool) return "bool";
  if (v->kind == Value::Kind::kInt) return "int64";
  if (v->kind == Value::Kind::kOther) return "complex64";
  return "float32";
}

// zeros/ones(size, *, dtype), full(size, fill_value, *, dtype): prod(size) elements written;
// default dtype float32 (full: from the fill value). Legacy torch.zeros(2, 3) lists the sizes
// as separate ints.
ModelFn factory(bool has_fill) {
  return [has_fill](const OpArgs& a, OpCost& c) {
    const Value* v0 = a.arg("size", 0);
    std::optional<std::vector<int64_t>> size;
    if (v0 && v0->kind == Value::Kind::kIntList) size = v0->ints;
    if (!size && !has_fill && is_legacy(a)) {
      std::vector<int64_t> dims;
      for (size_t i = 0; i < a.size() && a.name_at(i).empty(); ++i) {
        if (a.at(i)->kind != Value::Kind::kInt) break;
        dims.push_back(a.at(i)->i);
      }
      if (!dims.empty()) size = dims;
    }
    if (!size) return unmodeled(c, "size unknown");
    std::string dt = dtype_kwarg(a, has_fill ? 2 : 1);
    if (dt.empty()) dt = has_fill ? fill_dtype(a.arg("fill_value", 1)) : "float32";
    double n = static_cast<double>(numel_of(*size));
    c.flops = 0;
    c.bytes = n * elem_size(dt);
    c.dtype = dt;
    c.params = shape_str(*size) + short_dtype(dt);
    return true;
  };
}

// new_zeros/new_ones(self, size, *, dtype), new_full(self, size, fill_value, *, dtype):
// prod(size) elements written in dtype (default self's).
bool new_factory(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  auto size = int_list(a.arg("size", 1));
  if (!x || !size) return unmodeled(c, "needs self and size");
  std::string dt = dtype_kwarg(a);
  if (dt.empty()) dt = canonical_dtype(x->dtype);
  double n = static_cast<double>(numel_of(*size));
  c.flops = 0;
  c.bytes = n * elem_size(dt);
  c.dtype = dt;
  c.params = shape_str(*size) + short_dtype(dt);
  return true;
}

// ---- repeats, flips, padding ----

// repeat(self, repeats) / tile(self, dims): self read, self * prod(repeats) written.
bool repeat(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  auto reps = int_list(a.get("dims") ? a.get("dims") : a.arg("repeats", 1));
  if (!reps) return unmodeled(c, "repeats unknown");
  double out = static_cast<double>(x->numel()) * static_cast<double>(numel_of(*reps));
  copy_cost(*x, out, x->dtype, c);
  c.params += ",x" + shape_str(*reps);
  return true;
}

// repeat_interleave(self, repeats: int | Tensor, dim, *, output_size)
bool repeat_interleave(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  const Value* reps = a.arg("repeats", 1);
  const Value* dimv = a.arg("dim", 2);
  double n = static_cast<double>(x->numel());
  double out;
  if (reps && reps->kind == Value::Kind::kInt) {
    out = n * static_cast<double>(reps->i);
  } else if (const Value* os = a.get("output_size"); os && os->kind == Value::Kind::kInt) {
    double len = 1;
    if (dimv && dimv->kind == Value::Kind::kInt) {
      int d = wrap_dim(dimv->i, x->rank());
      len = static_cast<double>(d < 0 ? 1 : x->dim(d));
    } else {
      len = n;
    }
    out = len > 0 ? n / len * static_cast<double>(os->i) : 0;
  } else {
    return unmodeled(c, "output size depends on the data");
  }
  copy_cost(*x, out, x->dtype, c);
  if (reps && reps->is_tensor()) c.bytes += tensor_bytes(reps->tensor);
  return true;
}

// Padded output: pad = (left, right) pairs from the last dim backwards; negative pads crop.
// Reads the kept input region, writes the output.
bool pad(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  const Value* pv = a.get("pad");
  if (!pv) pv = a.get("padding");
  if (!pv) pv = a.arg("pad", 1);
  auto p = int_list(pv);
  if (!p || p->size() % 2 != 0 || static_cast<int>(p->size() / 2) > x->rank()) {
    return unmodeled(c, "pad unknown");
  }
  std::vector<int64_t> out = x->shape, read = x->shape;
  for (size_t i = 0; i < p->size() / 2; ++i) {
    size_t d = x->shape.size() - 1 - i;
    int64_t l = (*p)[2 * i], r = (*p)[2 * i + 1];
    out[d] = std::max<int64_t>(count_add(count_add(x->shape[d], l), r), 0);
    read[d] = std::max<int64_t>(
        count_add(count_add(x->shape[d], std::min<int64_t>(l, 0)), std::min<int64_t>(r, 0)), 0);
  }
  double sz = elem_size(x->dtype);
  c.flops = 0;
  c.bytes = static_cast<double>(numel_of(read)) * sz + static_cast<double>(numel_of(out)) * sz;
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",out=" + shape_str(out);
  return true;
}

// reflection/replication_padNd_backward(grad_output, self, padding): every grad_output
// element added into grad_input (1 per element), grad_input written once.
bool pad_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* x = a.tensor("self", 1);
  if (!g || !x) return unmodeled(c, "needs grad_output and self");
  c.flops = static_cast<double>(g->numel()) * fl(1);
  c.bytes = tensor_bytes(*g) + static_cast<double>(x->numel()) * elem_size(g->dtype);
  c.dtype = canonical_dtype(g->dtype);
  c.params = describe({g, x});
  return true;
}

// nonzero/argwhere(self): self read; the int64 [count, ndim] output, upper bound count = E.
bool nonzero(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  c.flops = 0;
  c.bytes = tensor_bytes(*x) + static_cast<double>(x->numel()) * std::max(x->rank(), 1) * 8;
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",upper bound";
  return true;
}

// _local_scalar_dense(self) (Tensor.item()): one element read.
bool item(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  c.flops = 0;
  c.bytes = elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x);
  return true;
}

// ---- gradients of view ops ----

// slice/select/diagonal/as_strided_backward(grad_output, input_sizes, ...): grad_output copied
// into a zero-filled tensor of input_sizes: grad read, grad_input written once.
// index_select_backward(grad, self_sizes, dim, index) and unfold_backward(grad_in, input_sizes,
// dim, size, step) accumulate: one add per grad element (+ the index read).
ModelFn view_backward(bool accumulates) {
  return [accumulates](const OpArgs& a, OpCost& c) {
    const Tensor* g = tensor_any(a, {"grad_output", "grad", "grad_in"}, 0);
    auto sizes = int_list(arg_any(a, {"input_sizes", "self_sizes", "sizes"}, 1));
    if (!g || !sizes) return unmodeled(c, "needs grad and input_sizes");
    const Tensor* idx = opt_tensor(a, "index", 3);
    c.flops = accumulates ? static_cast<double>(g->numel()) * fl(1) : 0;
    c.bytes = tensor_bytes(*g) + nbytes(idx) +
              static_cast<double>(numel_of(*sizes)) * elem_size(g->dtype);
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe(*g) + ",in=" + shape_str(*sizes);
    return true;
  };
}

// ---- random fills (write only; random-number generation is not counted as FLOPs) ----

// bernoulli_/normal_/uniform_/random_/exponential_/...(self, ...): self written (a tensor p
// read). Out-of-place bernoulli(self) reads its probabilities; bernoulli.p(self, p) does not.
ModelFn rng_fill(bool inplace) {
  return [inplace](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    if (!x) return unmodeled(c, "no self tensor");
    const Value* p = a.arg("p", 1);
    bool p_tensor = p && p->is_tensor() && !p->tensor.dtype.empty();
    c.flops = 0;
    c.bytes = tensor_bytes(*x) + (p_tensor ? tensor_bytes(p->tensor) : 0) +
              (!inplace && !(p && (p_tensor || is_number(p))) ? tensor_bytes(*x) : 0);
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + ",rng";
    return true;
  };
}

// rand/randn(size, *, dtype), randint([low,] high, size, *, dtype): prod(size) written
// (default float32, randint int64). The size is the `size` list (legacy: the first int list,
// or rand/randn's separate ints).
ModelFn rng_factory(const char* default_dtype) {
  std::string def = default_dtype;
  return [def](const OpArgs& a, OpCost& c) {
    std::optional<std::vector<int64_t>> size = int_list(a.get("size"));
    if (!size && !is_positional(a)) {
      for (size_t i = 0; i < a.size() && !size; ++i) {
        if (a.at(i)->kind == Value::Kind::kIntList) size = a.at(i)->ints;
      }
      if (!size && def != "int64" && is_legacy(a)) {
        std::vector<int64_t> dims;
        for (size_t i = 0; i < a.size() && a.name_at(i).empty(); ++i) {
          if (a.at(i)->kind != Value::Kind::kInt) break;
          dims.push_back(a.at(i)->i);
        }
        if (!dims.empty()) size = dims;
      }
    }
    if (!size) return unmodeled(c, "size unknown");
    std::string dt = dtype_kwarg(a);
    if (dt.empty()) dt = def;
    c.flops = 0;
    c.bytes = static_cast<double>(numel_of(*size)) * elem_size(dt);
    c.dtype = dt;
    c.params = shape_str(*size) + short_dtype(dt) + ",rng";
    return true;
  };
}

// rand_like/randn_like/randint_like(self, ..., *, dtype): self's size written.
bool rng_like(const OpArgs& a, OpCost& c) {
  if (!like(a, c)) return false;
  c.params += ",rng";
  return true;
}

// randperm(n, *, dtype=int64): n values written.
bool randperm(const OpArgs& a, OpCost& c) {
  const Value* n = a.arg("n", 0);
  if (!n || n->kind != Value::Kind::kInt) return unmodeled(c, "n unknown");
  std::string dt = dtype_kwarg(a);
  if (dt.empty()) dt = "int64";
  c.flops = 0;
  c.bytes = static_cast<double>(n->i) * elem_size(dt);
  c.dtype = dt;
  c.params = "n=" + std::to_string(n->i) + short_dtype(dt) + ",rng";
  return true;
}

}  // namespace

void register_movement(Registry& r) {
  const char* f = "movement";
  add_ops(r, f, {"copy_", "copy"}, copy_);
  add_ops(r, f, {"_copy_from", "_copy_from_and_resize"}, copy_from);
  add_ops(r, f, {"_to_copy"}, to_copy);
  add_ops(r, f, {"to"}, to);
  // Legacy PyProf records Tensor.half(), .float(), ... by method name; each method converts to
  // the dtype it spells (canonical_dtype: "half" -> "float16"; "bfloat16" and "bool" already
  // are Python names).
  for (std::string_view method : {"float", "double", "half", "bfloat16", "long", "int", "short",
                                  "char", "byte", "bool", "cfloat", "cdouble"}) {
    r.add(std::string(method), f, convert_to(canonical_dtype(method)));
  }
  add_ops(r, f, {"clone"}, clone);
  add_ops(r, f, {"contiguous"}, contiguous);
  add_ops(r, f, {"reshape"}, reshape);
  add_ops(r, f, {"flatten"}, flatten);
  // Metadata only (views).
  std::string_view views =
      "t transpose permute view view_as expand expand_as narrow slice select squeeze "
      "unsqueeze as_strided alias detach _unsafe_view _reshape_alias unflatten unbind "
      "split split_with_sizes unsafe_split unsafe_split_with_sizes chunk unsafe_chunk "
      "tensor_split unfold diagonal movedim moveaxis swapaxes swapdims numpy_T adjoint "
      "real imag view_as_real view_as_complex lift_fresh _conj conj positive "
      "broadcast_tensors";
  while (!views.empty()) {
    size_t sp = views.find(' ');
    r.add(std::string(views.substr(0, sp)), f, view_op);
    views = sp == std::string_view::npos ? std::string_view() : views.substr(sp + 1);
  }
  // Allocation without a kernel.
  add_ops(r, f,
          {"resize_", "resize_as_", "empty", "empty_like", "empty_strided", "new_empty",
           "new_empty_strided"},
          alloc_op);
  add_ops(r, f,
          {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack"},
          cat);
  add_ops(r, f, {"fill", "fill_", "zero", "zero_"}, fill);
  add_ops(r, f, {"zeros_like", "ones_like", "full_like"}, like);
  add_ops(r, f, {"zeros", "ones"}, factory(false));
  add_ops(r, f, {"full"}, factory(true));
  add_ops(r, f, {"new_zeros", "new_ones", "new_full"}, new_factory);
  add_ops(r, f, {"repeat", "tile"}, repeat);
  add_ops(r, f, {"repeat_interleave"}, repeat_interleave);
  add_ops(r, f, {"flip", "fliplr", "flipud", "roll", "rot90", "triu", "tril"}, clone);
  add_ops(r, f,
          {"constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d", "reflection_pad3d",
           "replication_pad1d", "replication_pad2d", "replication_pad3d", "_pad_enum"},
          pad);
  add_ops(
      r, f,
      {"reflection_pad1d_backward", "reflection_pad2d_backward", "reflection_pad3d_backward",
       "replication_pad1d_backward", "replication_pad2d_backward", "replication_pad3d_backward"},
      pad_backward);
  add_ops(r, f, {"nonzero", "argwhere"}, nonzero);
  add_ops(r, f, {"_local_scalar_dense", "item"}, item);
  add_ops(r, f, {"slice_backward", "select_backward", "diagonal_backward"}, view_backward(false));
  add_ops(r, f, {"index_select_backward", "unfold_backward"}, view_backward(true));
  // Random fills: write-only data movement here (no family owns RNG; not counted as FLOPs).
  add_ops(r, f,
          {"bernoulli_", "normal_", "uniform_", "random_", "exponential_", "geometric_",
           "log_normal_", "cauchy_"},
          rng_fill(true));
  add_ops(r, f, {"bernoulli"}, rng_fill(false));
  add_ops(r, f, {"rand", "randn"}, rng_factory("float32"));
  add_ops(r, f, {"randint"}, rng_factory("int64"));
  add_ops(r, f, {"rand_like", "randn_like", "randint_like"}, rng_like);
  add_ops(r, f, {"randperm"}, randperm);
}

}  // namespace pyprof::models
