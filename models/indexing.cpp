// The movement family's indexing ops (docs/ops.md "movement"): advanced indexing (index,
// index_put and their unsafe and in-place forms), index_select, gather/take, scatter,
// index_add/copy/fill and the masked ops. No arithmetic except where they accumulate
// (scatter_add, index_add, index_put with accumulate) or select (masked_fill: 1 per element).
// Bytes: the index tensors read, the addressed elements read and written once; out-of-place
// variants first copy self (read + write).
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

// ---- indexing ----

// The `indices` of index/index_put: the defined index tensors and, when the record kept the
// list's undefined entries (pyprof's captures write each `None` as null), each tensor's place in
// the list: a None there is a whole dim, so `x[:, i, j]` is [null, i, j] and i, j address dims 1
// and 2. Kineto and emit_nvtx record no optional-tensor list at all (the list is empty).
struct IndexList {
  std::vector<const Tensor*> tensors;
  std::vector<int32_t> slots;  // empty when the places are unknown
  int32_t slot_count = 0;
};

IndexList index_list(const OpArgs& a) {
  IndexList l;
  const Value* v = a.arg("indices", 1);
  if (v && v->kind == Value::Kind::kTensorList) {
    for (const Tensor& t : v->tensors) l.tensors.push_back(&t);
    if (v->dropped == 0 && v->slots.size() == v->tensors.size()) {
      l.slots = v->slots;
      l.slot_count = v->slot_count;
    }
  } else if (v && v->is_tensor() && !v->tensor.dtype.empty()) {
    l.tensors.push_back(&v->tensor);
  }
  return l;
}

bool is_mask(const Tensor& t) {
  return canonical_dtype(t.dtype) == "bool" || canonical_dtype(t.dtype) == "uint8";
}

bool has_mask(const IndexList& idx) {
  return std::any_of(idx.tensors.begin(), idx.tensors.end(),
                     [](const Tensor* t) { return is_mask(*t); });
}

// Rank of x[indices]: x's dims less those the index tensors address, plus the rank of their
// broadcast shape (a mask's addressed elements form one dim).
int result_rank(const Tensor& x, const IndexList& idx) {
  int consumed = 0;
  int broadcast = 0;
  for (const Tensor* t : idx.tensors) {
    consumed += is_mask(*t) ? std::max(t->rank(), 1) : 1;
    broadcast = std::max(broadcast, is_mask(*t) ? 1 : t->rank());
  }
  return x.rank() - consumed + broadcast;
}

// Elements addressed by advanced indexing of `x`: the index tensors broadcast together, times
// every element of the dims they do not address. A bool/uint8 mask of rank r addresses r dims
// and counts as all-true (an upper bound: which elements are true is not recorded). With the
// list's places known, each entry addresses the dims at its place (a None entry one whole dim);
// without them (the Nones were not recorded), the masks go where their shapes match x's dims,
// else first, and the other tensors from there on.
std::optional<double> indexed_elems(const Tensor& x, const IndexList& idx) {
  std::vector<int64_t> bshape;
  std::vector<bool> addressed(static_cast<size_t>(std::max(x.rank(), 1)), false);
  int consumed = 0;
  for (const Tensor* t : idx.tensors) {
    bool mask = is_mask(*t);
    consumed += mask ? std::max(t->rank(), 1) : 1;
    std::vector<int64_t> s = mask ? std::vector<int64_t>{t->numel()} : t->shape;
    if (!broadcast_into(bshape, s)) return std::nullopt;
  }
  if (!idx.slots.empty()) {
    // Walk the list: d is the dim the next entry addresses.
    int d = 0;
    size_t next = 0;
    for (int32_t slot = 0; slot < idx.slot_count; ++slot) {
      if (next < idx.slots.size() && idx.slots[next] == slot) {
        const Tensor& t = *idx.tensors[next++];
        int r = is_mask(t) ? std::max(t.rank(), 1) : 1;
        if (d + r > std::max(x.rank(), 1)) return std::nullopt;
        for (int i = 0; i < r; ++i) addressed[static_cast<size_t>(d + i)] = true;
        d += r;
      } else {
        ++d;  // None: every element of this dim
      }
    }
    if (d > std::max(x.rank(), 1)) return std::nullopt;
  } else {
    if (consumed > std::max(x.rank(), 1)) return std::nullopt;
    int lead = 0;
    for (int l = 0; l + consumed <= x.rank(); ++l) {
      bool match = true;
      int d = l;
      for (const Tensor* t : idx.tensors) {
        if (!is_mask(*t)) {
          ++d;
          continue;
        }
        for (int i = 0; i < t->rank(); ++i, ++d) match = match && x.dim(d) == t->shape[i];
      }
      if (match) {
        lead = l;
        break;
      }
    }
    for (int d = lead; d < lead + consumed && d < static_cast<int>(addressed.size()); ++d)
      addressed[static_cast<size_t>(d)] = true;
  }
  double rest = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (!addressed[static_cast<size_t>(d)]) rest *= static_cast<double>(x.dim(d));
  return rest * static_cast<double>(numel_of(bshape));
}

double bytes_of(const std::vector<const Tensor*>& ts) {
  double b = 0;
  for (const Tensor* t : ts) b += tensor_bytes(*t);
  return b;
}

// index(self, indices): read the indices and the addressed elements, write them.
bool index(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  if (!x) return unmodeled(c, "no self tensor");
  IndexList idx = index_list(a);
  if (idx.tensors.empty()) return unmodeled(c, "indices unknown");
  auto n = indexed_elems(*x, idx);
  if (!n) return unmodeled(c, "indices do not fit self");
  c.flops = 0;
  c.bytes = bytes_of(idx.tensors) + 2 * *n * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + "," + describe(idx.tensors);
  return true;
}

// index_put(self, indices, values, accumulate) (out of place: self copied first) and the
// in-place index_put_ / _index_put_impl_: read indices and values, write the W addressed
// elements (accumulate: also read them and add, W FLOPs).
ModelFn index_put(bool inplace) {
  return [inplace](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* values = a.tensor("values", 2);
    if (!x || !values) return unmodeled(c, "needs self and values");
    IndexList idx = index_list(a);
    double w = static_cast<double>(values->numel());
    if (auto n = indexed_elems(*x, idx); n && !idx.tensors.empty()) {
      w = *n;
      // A mask's true elements are not recorded, but values of the result's full rank (the
      // gradient IndexBackward passes, for one) hold exactly one element per addressed one.
      if (has_mask(idx) && values->rank() == result_rank(*x, idx) && values->numel() < w)
        w = static_cast<double>(values->numel());
    }
    bool acc = a.bool_or("accumulate", 3, false);
    double sz = elem_size(x->dtype);
    c.flops = acc ? w * fl(1) : 0;
    c.bytes = bytes_of(idx.tensors) + tensor_bytes(*values) + w * sz * (acc ? 2 : 1) +
              (inplace ? 0 : 2 * tensor_bytes(*x));
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + "," + describe(*values) + (acc ? ",accumulate" : "");
    return true;
  };
}

// index_select(self, dim, index): index read, the selected slices read and written.
bool index_select(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  const Tensor* idx = a.tensor("index", 2);
  if (!x || !idx) return unmodeled(c, "needs self and index");
  int d = wrap_dim(a.int_or("dim", 1, 0), x->rank());
  double len = static_cast<double>(d < 0 ? 1 : x->dim(d));
  double out =
      len > 0 ? static_cast<double>(x->numel()) / len * static_cast<double>(idx->numel()) : 0;
  c.flops = 0;
  c.bytes = tensor_bytes(*idx) + 2 * out * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, idx});
  return true;
}

// gather(self, dim, index, sparse_grad) / take(self, index): the output has the index's shape;
// index read, gathered elements read and written.
ModelFn gather(size_t index_pos) {
  return [index_pos](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* idx = a.tensor("index", index_pos);
    if (!x || !idx) return unmodeled(c, "needs self and index");
    double out = static_cast<double>(idx->numel());
    c.flops = 0;
    c.bytes = tensor_bytes(*idx) + 2 * out * elem_size(x->dtype);
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe({x, idx});
    return true;
  };
}

// scatter(self, dim, index, src|value, reduce), scatter_add(self, dim, index, src),
// scatter_reduce(self, dim, index, src, reduce, include_self): W = index elements; read index
// and W src elements, write W elements; reducing variants read the W destinations and do W
// FLOPs. Out-of-place variants copy self first.
ModelFn scatter(bool inplace, bool reduces) {
  return [inplace, reduces](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* idx = a.tensor("index", 2);
    if (!x || !idx) return unmodeled(c, "needs self and index");
    const Value* src = a.get("src");
    if (!src) src = a.arg("value", 3);
    bool reduce = reduces || (a.get("reduce") && a.get("reduce")->kind == Value::Kind::kString);
    double w = static_cast<double>(idx->numel());
    double sz = elem_size(x->dtype);
    c.flops = reduce ? w * fl(1) : 0;
    c.bytes = tensor_bytes(*idx) + w * sz * (reduce ? 2 : 1) +
              (src && src->is_tensor() ? w * elem_size(src->tensor.dtype) : 0) +
              (inplace ? 0 : 2 * tensor_bytes(*x));
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe({x, idx});
    return true;
  };
}

// index_add(self, dim, index, source, alpha) / index_copy(self, dim, index, source) /
// index_reduce(self, dim, index, source, reduce): W = source elements read and written into
// self (index_add/index_reduce: read-modify-write, W FLOPs, +W when alpha != 1).
ModelFn index_add(bool inplace, bool accumulate) {
  return [inplace, accumulate](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* idx = a.tensor("index", 2);
    const Tensor* src = a.tensor("source", 3);
    if (!x || !idx || !src) return unmodeled(c, "needs self, index, source");
    double w = static_cast<double>(src->numel());
    const Value* alpha = a.get("alpha");
    bool scaled = alpha && is_number(alpha) && alpha->d != 1.0;
    c.flops = accumulate ? w * fl(scaled ? 2 : 1) : 0;
    c.bytes = tensor_bytes(*idx) + tensor_bytes(*src) +
              w * elem_size(x->dtype) * (accumulate ? 2 : 1) + (inplace ? 0 : 2 * tensor_bytes(*x));
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe({x, idx, src});
    return true;
  };
}

// index_fill(self, dim, index, value): the selected slices written.
ModelFn index_fill(bool inplace) {
  return [inplace](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* idx = a.tensor("index", 2);
    if (!x || !idx) return unmodeled(c, "needs self and index");
    int d = wrap_dim(a.int_or("dim", 1, 0), x->rank());
    double len = static_cast<double>(d < 0 ? 1 : x->dim(d));
    double w =
        len > 0 ? static_cast<double>(x->numel()) / len * static_cast<double>(idx->numel()) : 0;
    c.flops = 0;
    c.bytes = tensor_bytes(*idx) + w * elem_size(x->dtype) + (inplace ? 0 : 2 * tensor_bytes(*x));
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe({x, idx});
    return true;
  };
}

// ---- masked ops ----

// masked_fill(self, mask, value): where(mask, value, self): 1 select per element; self and
// mask (own size) read, the output written.
bool masked_fill(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  const Tensor* mask = a.tensor("mask", 1);
  if (!x || !mask) return unmodeled(c, "needs self and mask");
  std::vector<int64_t> shape = x->shape;
  if (!broadcast_into(shape, mask->shape)) return unmodeled(c, "shapes do not broadcast");
  const Tensor* value = opt_tensor(a, "value", 2);
  double out = static_cast<double>(numel_of(shape));
  c.flops = out * fl(1);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*mask) + nbytes(value) + out * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, mask});
  return true;
}

// masked_select(self, mask): the output size depends on the data; upper bound: every element
// selected.
bool masked_select(const OpArgs& a, OpCost& c) {
  const Tensor* x = self_of(a);
  const Tensor* mask = a.tensor("mask", 1);
  if (!x || !mask) return unmodeled(c, "needs self and mask");
  std::vector<int64_t> shape = x->shape;
  if (!broadcast_into(shape, mask->shape)) return unmodeled(c, "shapes do not broadcast");
  double out = static_cast<double>(numel_of(shape));
  c.flops = 0;
  c.bytes = tensor_bytes(*x) + tensor_bytes(*mask) + out * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, mask}) + ",upper bound";
  return true;
}

// masked_scatter(self, mask, source): up to min(source, self) elements read and written
// (upper bound); the out-of-place form copies self first.
ModelFn masked_scatter(bool inplace) {
  return [inplace](const OpArgs& a, OpCost& c) {
    const Tensor* x = self_of(a);
    const Tensor* mask = a.tensor("mask", 1);
    const Tensor* src = a.tensor("source", 2);
    if (!x || !mask || !src) return unmodeled(c, "needs self, mask, source");
    std::vector<int64_t> shape = x->shape;
    if (!broadcast_into(shape, mask->shape)) return unmodeled(c, "shapes do not broadcast");
    double n = std::min(static_cast<double>(numel_of(shape)), static_cast<double>(src->numel()));
    c.flops = 0;
    c.bytes = tensor_bytes(*mask) + n * (elem_size(src->dtype) + elem_size(x->dtype)) +
              (inplace ? 0 : 2 * tensor_bytes(*x));
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe({x, mask, src}) + ",upper bound";
    return true;
  };
}

}  // namespace

void register_indexing(Registry& r) {
  const char* f = "movement";
  add_ops(r, f, {"index", "_unsafe_index"}, index);
  add_ops(r, f, {"index_put", "_unsafe_index_put"}, index_put(false));
  add_ops(r, f, {"index_put_", "_index_put_impl_"}, index_put(true));
  add_ops(r, f, {"index_select"}, index_select);
  add_ops(r, f, {"gather"}, gather(2));
  add_ops(r, f, {"take"}, gather(1));
  add_ops(r, f, {"scatter"}, scatter(false, false));
  add_ops(r, f, {"scatter_"}, scatter(true, false));
  add_ops(r, f, {"scatter_add", "scatter_reduce"}, scatter(false, true));
  add_ops(r, f, {"scatter_add_", "scatter_reduce_"}, scatter(true, true));
  add_ops(r, f, {"index_add", "index_reduce"}, index_add(false, true));
  add_ops(r, f, {"index_add_", "index_reduce_"}, index_add(true, true));
  add_ops(r, f, {"index_copy"}, index_add(false, false));
  add_ops(r, f, {"index_copy_"}, index_add(true, false));
  add_ops(r, f, {"index_fill"}, index_fill(false));
  add_ops(r, f, {"index_fill_"}, index_fill(true));
  add_ops(r, f, {"masked_fill"}, masked_fill);
  add_ops(r, f, {"masked_select"}, masked_select);
  add_ops(r, f, {"masked_scatter"}, masked_scatter(false));
  add_ops(r, f, {"masked_scatter_"}, masked_scatter(true));
}

}  // namespace pyprof::models
