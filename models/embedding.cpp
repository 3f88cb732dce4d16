// Embedding family: embedding lookups, embedding bags and their backward ops (docs/ops.md
// "embedding").
//
// I = indices, D = embedding dim (weight.shape[-1]), V = rows of the weight (num_weights),
// B = bags. A lookup does no arithmetic: bytes are the indices, the I gathered rows and the
// output. The dense backward accumulates I rows of D into a V x D gradient written once.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

// aten::embedding(weight, indices, ...); legacy F.embedding(input, weight, ...) has the indices
// first: the floating tensor is the weight.
bool weight_and_indices(const OpArgs& a, const Tensor*& w, const Tensor*& idx) {
  w = a.tensor("weight", 0);
  idx = tensor_any(a, {"indices", "input"}, 1);
  if (!w || !idx) return false;
  if (is_integral(w->dtype) && is_floating(idx->dtype)) std::swap(w, idx);
  return true;
}

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
bool embedding(const OpArgs& a, OpCost& c) {
  const Tensor *w, *idx;
  if (!weight_and_indices(a, w, idx)) return unmodeled(c, "needs weight and indices");
  double rows = static_cast<double>(idx->numel());
  double d = static_cast<double>(w->dim(-1));
  c.flops = 0;
  c.bytes = tensor_bytes(*idx) + 2 * rows * d * elem_size(w->dtype);  // gather + write
  c.dtype = canonical_dtype(w->dtype);
  c.params = describe({w, idx});
  return true;
}

// embedding_renorm(self, indices, max_norm, norm_type): the norm of each looked-up row (2 per
// element: square, add) and its rescale (1); the rows are read and written back.
bool embedding_renorm(const OpArgs& a, OpCost& c) {
  const Tensor* w = a.tensor("self", 0);
  const Tensor* idx = a.tensor("indices", 1);
  if (!w || !idx) return unmodeled(c, "needs self and indices");
  double n = static_cast<double>(idx->numel()) * static_cast<double>(w->dim(-1));
  c.flops = n * fl(3);
  c.bytes = tensor_bytes(*idx) + 2 * n * elem_size(w->dtype);
  c.dtype = canonical_dtype(w->dtype);
  c.params = describe({w, idx});
  return true;
}

// Dense gradient of V rows from I looked-up rows: one add per element (+1 division with
// scale_grad_by_freq); read grad (I x D) and indices, write V x D once.
bool dense_backward(const Tensor& grad, const Tensor& idx, const Value* num_weights,
                    bool scale_by_freq, OpCost& c) {
  if (!num_weights || num_weights->kind != Value::Kind::kInt) {
    return unmodeled(c, "num_weights unknown");
  }
  double i = static_cast<double>(idx.numel());
  double d = static_cast<double>(grad.dim(-1));
  double v = static_cast<double>(num_weights->i);
  c.flops = i * d * fl(scale_by_freq ? 2 : 1);
  c.bytes = tensor_bytes(grad) + tensor_bytes(idx) + v * d * elem_size(grad.dtype);
  c.dtype = canonical_dtype(grad.dtype);
  c.params = describe({&grad, &idx}) + ",V=" + std::to_string(num_weights->i);
  return true;
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
bool embedding_dense_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* idx = a.tensor("indices", 1);
  if (!g || !idx) return unmodeled(c, "needs grad_output and indices");
  return dense_backward(*g, *idx, a.arg("num_weights", 2),
                        a.bool_or("scale_grad_by_freq", 4, false), c);
}

// embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
// dense as above; sparse writes a sparse gradient of I rows (values and int64 indices).
bool embedding_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad", 0);
  const Tensor* idx = a.tensor("indices", 1);
  if (!g || !idx) return unmodeled(c, "needs grad and indices");
  bool scale = a.bool_or("scale_grad_by_freq", 4, false);
  if (!a.bool_or("sparse", 5, false)) {
    return dense_backward(*g, *idx, a.arg("num_weights", 2), scale, c);
  }
  double i = static_cast<double>(idx->numel());
  double d = static_cast<double>(g->dim(-1));
  c.flops = scale ? i * d * fl(1) : 0;
  c.bytes = tensor_bytes(*g) + tensor_bytes(*idx) + i * d * elem_size(g->dtype) + i * 8;
  c.dtype = canonical_dtype(g->dtype);
  c.params = describe({g, idx}) + ",sparse";
  return true;
}

int64_t bag_count(const Tensor& idx, const Tensor* offsets, bool include_last_offset) {
  if (idx.rank() == 2) return idx.dim(0);
  if (!offsets) return 1;
  return std::max<int64_t>(offsets->numel() - (include_last_offset ? 1 : 0), 0);
}

// embedding_bag / _embedding_bag / _embedding_bag_forward_only(weight, indices, offsets,
// scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx)
// -> (output, offset2bag, bag_size, max_indices). mode 0 sum: I*D adds (+ I*D multiplies with
// per_sample_weights); 1 mean: + B*D divisions; 2 max: I*D comparisons and B*D int64 indices.
bool embedding_bag(const OpArgs& a, OpCost& c) {
  const Tensor *w, *idx;
  if (!weight_and_indices(a, w, idx)) return unmodeled(c, "needs weight and indices");
  const Tensor* offsets = opt_tensor(a, "offsets", 2);
  int64_t mode = a.int_or("mode", 4, 0);
  const Tensor* psw = opt_tensor(a, "per_sample_weights", 6);
  bool last = a.bool_or("include_last_offset", 7, false);
  double i = static_cast<double>(idx->numel());
  double b = static_cast<double>(bag_count(*idx, offsets, last));
  double d = static_cast<double>(w->dim(-1));
  double sz = elem_size(w->dtype);
  double isz = elem_size(idx->dtype);
  c.flops = i * d * fl(psw ? 2 : 1) + (mode == 1 ? b * d * fl(1) : 0);
  c.bytes = tensor_bytes(*idx) + nbytes(offsets) + nbytes(psw) + i * d * sz  // reads
            + b * d * sz + i * isz + b * isz                                 // out, offset2bag,
            + (mode == 2 ? b * d * isz : 0);                                 // bag_size, max_idx
  c.dtype = canonical_dtype(w->dtype);
  c.params = describe({w, idx}) + ",mode=" +
             (mode == 0   ? std::string("sum")
              : mode == 1 ? "mean"
                          : "max");
  return true;
}

// _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices,
// num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx) and
// _embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
// num_weights, scale_grad_by_freq, mode, per_sample_weights, padding_idx).
// sum: I*D adds (+ I*D multiplies with per_sample_weights); mean: + I*D divisions by the bag
// size; max: B*D adds (only the arg-max rows). Write V x D once (sparse: I rows and their
// int64 indices).
ModelFn embedding_bag_backward(bool dense) {
  return [dense](const OpArgs& a, OpCost& c) {
    size_t shift = dense ? 1 : 0;  // the dense variant has no offsets
    const Tensor* g = a.tensor("grad", 0);
    const Tensor* idx = a.tensor("indices", 1);
    if (!g || !idx) return unmodeled(c, "needs grad and indices");
    const Tensor* offsets = dense ? nullptr : opt_tensor(a, "offsets", 2);
    const Tensor* offset2bag = opt_tensor(a, "offset2bag", 3 - shift);
    const Tensor* bag_size = opt_tensor(a, "bag_size", 4 - shift);
    const Tensor* max_idx = opt_tensor(a, "maximum_indices", 5 - shift);
    const Value* num_weights = a.arg("num_weights", 6 - shift);
    int64_t mode = a.int_or("mode", 8 - shift, 0);
    const Tensor* psw = opt_tensor(a, "per_sample_weights", 10 - 2 * shift);
    if (!num_weights || num_weights->kind != Value::Kind::kInt) {
      return unmodeled(c, "num_weights unknown");
    }
    double i = static_cast<double>(idx->numel());
    double b = static_cast<double>(g->numel()) / std::max<double>(g->dim(-1), 1);
    double d = static_cast<double>(g->dim(-1));
    double v = static_cast<double>(num_weights->i);
    if (mode == 2) {
      c.flops = b * d * fl(1);
    } else {
      c.flops = i * d * fl(1 + (psw ? 1 : 0) + (mode == 1 ? 1 : 0));
    }
    bool sparse = !dense && a.bool_or("sparse", 9, false);
    c.bytes = tensor_bytes(*g) + tensor_bytes(*idx) + nbytes(offsets) + nbytes(offset2bag) +
              nbytes(bag_size) + (mode == 2 ? nbytes(max_idx) : 0) + nbytes(psw) +
              (sparse ? i * d * elem_size(g->dtype) + i * 8 : v * d * elem_size(g->dtype));
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe({g, idx}) + ",V=" + std::to_string(num_weights->i);
    return true;
  };
}

// _embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode,
// padding_idx): one dot product of D per index (2*D), reading the gathered grad and weight
// rows; I values written.
bool per_sample_weights_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad", 0);
  const Tensor* w = a.tensor("weight", 1);
  const Tensor* idx = a.tensor("indices", 2);
  if (!g || !w || !idx) return unmodeled(c, "needs grad, weight and indices");
  double i = static_cast<double>(idx->numel());
  double d = static_cast<double>(w->dim(-1));
  c.flops = i * d * fl(2);
  c.bytes = tensor_bytes(*idx) + nbytes(opt_tensor(a, "offset2bag", 4)) +
            i * d * (elem_size(g->dtype) + elem_size(w->dtype)) + i * elem_size(g->dtype);
  c.dtype = canonical_dtype(w->dtype);
  c.params = describe({g, w, idx});
  return true;
}

}  // namespace

void register_embedding(Registry& r) {
  add_ops(r, "embedding", {"embedding"}, embedding);
  add_ops(r, "embedding", {"embedding_renorm"}, embedding_renorm);
  add_ops(r, "embedding", {"embedding_dense_backward"}, embedding_dense_backward);
  add_ops(r, "embedding", {"embedding_backward"}, embedding_backward);
  add_ops(r, "embedding", {"embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"},
          embedding_bag);
  add_ops(r, "embedding", {"_embedding_bag_backward"}, embedding_bag_backward(false));
  add_ops(r, "embedding", {"_embedding_bag_dense_backward"}, embedding_bag_backward(true));
  add_ops(r, "embedding", {"_embedding_bag_per_sample_weights_backward"},
          per_sample_weights_backward);
}

}  // namespace pyprof::models
