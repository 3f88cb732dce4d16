// Reduction family: sum, mean, prod, amax/amin, max/min, norms, var/std, any/all, argmax/argmin,
// cumulative ops, logsumexp (docs/ops.md "reduction").
//
// E = input elements, O = output elements (E / product of the reduced dims; 1 for a full
// reduction). FLOPs: per-input-element work * E + per-output work * O (shape_util weights).
// Bytes: input read once, every output written once (indices as int64).
#include <cmath>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

struct Reduced {
  double in = 0;
  double out = 1;
  std::string dims;  // for params: "dim=[1]", "all", "dim=?"
};

// Output size for `dim` (int, int list, None/[]/bool = all dims). An unreadable dim (emit_nvtx)
// is taken as a full reduction. keepdim does not change the element count.
Reduced reduce(const Tensor& x, const Value* dim) {
  Reduced r;
  r.in = static_cast<double>(x.numel());
  std::optional<std::vector<int64_t>> dims = int_list(dim);
  if (!dims || dims->empty()) {
    bool unknown = dim && dim->is_tensor();
    r.out = 1;
    r.dims = unknown ? "dim=?" : "all";
    return r;
  }
  double reduced = 1;
  std::vector<bool> seen(std::max(x.rank(), 1), false);
  for (int64_t d : *dims) {
    int w = wrap_dim(d, x.rank());
    if (w < 0 || seen[w]) continue;
    seen[w] = true;
    reduced *= static_cast<double>(x.dim(w));
  }
  r.out = reduced > 0 ? r.in / reduced : 0;
  r.dims = "dim=" + shape_str(*dims);
  return r;
}

std::string dtype_arg(const OpArgs& a, size_t position) {
  const Value* v = a.get("dtype");
  if (!v) v = a.arg("dtype", position);
  return dtype_value(v);
}

struct RedOp {
  double per_in_arith = 1;  // per input element
  double per_in_trans = 0;
  double per_out_arith = 0;  // per output element
  double per_out_trans = 0;
  int dim_pos = 1;     // position of `dim`
  int dtype_pos = -1;  // position of `dtype` (-1: keyword only)
  enum class Out : uint8_t { kSame, kSumLike, kReal, kBool, kInt64 } out = Out::kSame;
  bool indices = false;  // also writes int64 indices of the output size
  int outputs = 1;       // outputs of the output size (var_mean: 2)
};

bool reduction(const RedOp& op, const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  Reduced r = reduce(*x, a.arg("dim", op.dim_pos));
  std::string in = canonical_dtype(x->dtype);
  std::string out = in;
  switch (op.out) {
    case RedOp::Out::kSame:
      break;
    case RedOp::Out::kSumLike:  // sum/prod/cumsum of bool and ints accumulate in int64
      if (is_integral(in)) out = "int64";
      break;
    case RedOp::Out::kReal:
      out = real_of(in);
      break;
    case RedOp::Out::kBool:
      out = in == "uint8" ? "uint8" : "bool";
      break;
    case RedOp::Out::kInt64:
      out = "int64";
      break;
  }
  std::string requested = dtype_arg(a, op.dtype_pos < 0 ? 999 : op.dtype_pos);
  if (!requested.empty()) out = requested;
  c.flops =
      r.in * fl(op.per_in_arith, op.per_in_trans) + r.out * fl(op.per_out_arith, op.per_out_trans);
  c.bytes = tensor_bytes(*x) + op.outputs * r.out * elem_size(out) + (op.indices ? r.out * 8 : 0);
  c.dtype = in;
  c.params = describe(*x) + "," + r.dims;
  return true;
}

ModelFn red(RedOp op) {
  return [op](const OpArgs& a, OpCost& c) { return reduction(op, a, c); };
}

// max/min: max(self) (full), max.dim(self, dim, keepdim) -> (values, indices),
// max.other(self, other) (element-wise maximum).
bool max_min(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  const Value* second = a.get("other");
  if (!second) second = a.arg("dim", 1);
  bool unknown_scalar = second && second->is_tensor() && second->tensor.rank() == 0 &&
                        second->tensor.dtype.empty() && a.size() >= 3;
  if (second && second->is_tensor() && !unknown_scalar) {  // element-wise
    const Tensor* y = &second->tensor;
    std::vector<int64_t> shape = x->shape;
    if (!broadcast_into(shape, y->shape)) return unmodeled(c, "shapes do not broadcast");
    TypeState t;
    t.add(*x);
    t.add(*y);
    double out = static_cast<double>(numel_of(shape));
    c.dtype = t.result();
    c.flops = out * fl(1);
    c.bytes = tensor_bytes(*x) + tensor_bytes(*y) + out * elem_size(c.dtype);
    c.params = describe({x, y});
    return true;
  }
  RedOp op;
  op.indices = second && (second->kind == Value::Kind::kInt || unknown_scalar);
  return reduction(op, a, c);
}

// norm(self, p, dim, keepdim, dtype) / linalg_vector_norm(self, ord, dim, keepdim, dtype):
// p = 2: x*x accumulated (2) + sqrt per output; p = 1: |x| accumulated (2); p = +-inf: |x|, max
// (2); p = 0: x != 0 counted (2); other p: |x|^p accumulated (2 + pow) + ^(1/p) per output.
bool norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  const Value* pv = a.get("ord");
  if (!pv) pv = a.arg("p", 1);
  double p = 2;
  if (pv && is_number(pv)) p = pv->d;
  if (pv && pv->kind == Value::Kind::kString) {
    if (pv->s == "nuc") return unmodeled(c, "nuclear norm (SVD) not modelled");
    p = pv->s == "fro" ? 2 : pv->d;  // "inf"/"-inf" decode to +-infinity
  }
  RedOp op;
  op.per_in_arith = 2;
  op.dim_pos = 2;
  op.out = RedOp::Out::kReal;
  if (p == 2) {
    op.per_out_trans = 1;
  } else if (!(p == 1 || std::isinf(p) || p == 0)) {
    op.per_in_trans = 1;
    op.per_out_trans = 1;
  }
  bool ok = reduction(op, a, c);
  c.params += ",p=" + (std::isinf(p) ? std::string(p > 0 ? "inf" : "-inf") : num_str(p));
  return ok;
}

// cumsum/cumprod(self, dim, dtype), cummax/cummin(self, dim) -> (values, indices): one add
// (multiply, comparison) per element; the output has the input's size.
ModelFn cumulative(bool indices) {
  return [indices](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"self", "input"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    double e = static_cast<double>(x->numel());
    std::string in = canonical_dtype(x->dtype);
    std::string out = indices || !is_integral(in) ? in : "int64";
    std::string requested = dtype_arg(a, 2);
    if (!requested.empty()) out = requested;
    c.flops = e * fl(1);
    c.bytes = tensor_bytes(*x) + e * elem_size(out) + (indices ? e * 8 : 0);
    c.dtype = in;
    c.params = describe(*x) + ",dim=" + std::to_string(a.int_or("dim", 1, 0));
    return true;
  };
}

}  // namespace

void register_reduction(Registry& r) {
  using O = RedOp::Out;
  // sum: one add per input element.
  add_ops(r, "reduction", {"sum"}, red({1, 0, 0, 0, 1, 3, O::kSumLike}));
  add_ops(r, "reduction", {"nansum"}, red({2, 0, 0, 0, 1, 3, O::kSumLike}));  // isnan, add
  add_ops(r, "reduction", {"prod"}, red({1, 0, 0, 0, 1, 3, O::kSumLike}));
  // mean: sum, then one division per output.
  add_ops(r, "reduction", {"mean", "nanmean"}, red({1, 0, 1, 0, 1, 3, O::kSame}));
  // amax/amin: one comparison per element.
  add_ops(r, "reduction", {"amax", "amin"}, red({1, 0, 0, 0, 1, -1, O::kSame}));
  add_ops(r, "reduction", {"aminmax"}, red({2, 0, 0, 0, 1, -1, O::kSame, false, 2}));
  add_ops(r, "reduction", {"max", "min"}, max_min);
  add_ops(r, "reduction", {"argmax", "argmin"}, red({1, 0, 0, 0, 1, -1, O::kInt64}));
  add_ops(r, "reduction", {"any", "all"}, red({1, 0, 0, 0, 1, -1, O::kBool}));
  add_ops(r, "reduction", {"count_nonzero"}, red({2, 0, 0, 0, 1, -1, O::kInt64}));  // !=0, add
  add_ops(r, "reduction", {"norm", "linalg_vector_norm", "frobenius_norm"}, norm);
  // var: sum x (1), (x - mean)^2 accumulated (3); per output mean = s/n, var = ss/(n - c) (2);
  // std: + sqrt per output. *_mean also writes the mean.
  add_ops(r, "reduction", {"var"}, red({4, 0, 2, 0, 1, -1, O::kReal}));
  add_ops(r, "reduction", {"std"}, red({4, 0, 2, 1, 1, -1, O::kReal}));
  add_ops(r, "reduction", {"var_mean"}, red({4, 0, 2, 0, 1, -1, O::kReal, false, 2}));
  add_ops(r, "reduction", {"std_mean"}, red({4, 0, 2, 1, 1, -1, O::kReal, false, 2}));
  // logsumexp: max (1), x - max (1), exp, sum (1); per output log + max (1 + log).
  add_ops(r, "reduction", {"cumsum", "cumprod"}, cumulative(false));
  add_ops(r, "reduction", {"cummax", "cummin"}, cumulative(true));
  add_ops(r, "reduction", {"logsumexp"}, red({3, 1, 1, 1, 1, -1, O::kSame}));
}

}  // namespace pyprof::models
