// Loss family: cross entropy, NLL, MSE, L1, smooth L1/Huber, binary cross entropy (with
// logits), KL divergence, soft margin; forward and backward (docs/ops.md "loss").
//
// E = elements of the (broadcast) input, S = samples of NLL (elements of target), C = classes.
// Reduction: "none" writes E (S) outputs; "mean"/"sum" accumulate (+1 per element) and write
// one, "mean" divides once (+1). Per-element counts are those of the formula in each comment.
// Bytes: every input read once at its own size (NLL reads only the S target-class elements of
// its input), outputs written once.
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

const char* reduction_name(Reduction r) {
  return r == Reduction::kNone ? "none" : r == Reduction::kSum ? "sum" : "mean";
}

// FLOPs of reducing n per-element losses, and the output element count.
double reduce_flops(Reduction r, double n) {
  if (r == Reduction::kNone) return 0;
  return n * fl(1) + (r == Reduction::kMean ? fl(1) : 0);
}
double out_elems(Reduction r, double n) { return r == Reduction::kNone ? n : 1; }

// ---- NLL ----
// Per sample: ignore_index compare (1), -w[t]*x[n,t] (1); reduced: accumulate (1); mean also
// accumulates the total weight (1) and divides once. Bytes: target, the S gathered input
// elements, the weight (own size), output and total_weight.
void nll_cost(const Tensor& x, const Tensor& t, const Tensor* w, Reduction red, OpCost& c) {
  double s = static_cast<double>(t.numel());
  c.flops = s * fl(2) + reduce_flops(red, s) + (red == Reduction::kMean ? s * fl(1) : 0);
  c.bytes = tensor_bytes(t) + s * elem_size(x.dtype) + nbytes(w) +
            (out_elems(red, s) + 1) * elem_size(x.dtype);
}

// nll_loss / nll_loss_nd / nll_loss2d / nll_loss_forward / nll_loss2d_forward
// (self, target, weight, reduction, ignore_index)
bool nll_loss(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  const Tensor* t = a.tensor("target", 1);
  if (!x || !t) return unmodeled(c, "needs input and target");
  Reduction red = reduction_of(a, 3);
  nll_cost(*x, *t, opt_tensor(a, "weight", 2), red, c);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t}) + "," + reduction_name(red);
  return true;
}

// nll_loss_backward / nll_loss2d_backward(grad_output, self, target, weight, reduction,
// ignore_index, total_weight): grad_input zero-filled and one value per sample scattered:
// compare, * weight, * grad (/ total_weight folded into the grad) (3) per sample.
bool nll_loss_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* x = a.tensor("self", 1);
  const Tensor* t = a.tensor("target", 2);
  if (!g || !x || !t) return unmodeled(c, "needs grad_output, self, target");
  const Tensor* w = opt_tensor(a, "weight", 3);
  const Tensor* tw = opt_tensor(a, "total_weight", 6);
  double s = static_cast<double>(t->numel());
  c.flops = s * fl(3);
  c.bytes = tensor_bytes(*g) + tensor_bytes(*t) + nbytes(w) + nbytes(tw) + tensor_bytes(*x);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t}) + "," + reduction_name(reduction_of(a, 4));
  return true;
}

// cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing):
// log_softmax over the class dim (materialized: its output is written and read back, as
// PyTorch's decomposition does) + NLL. Class-index targets: the NLL formula; label smoothing
// adds sum_c logp (* w) per element (1-2) and the mix (3) per sample, reading logp again.
// Probability targets: -sum t*logp (* w): 2 (3) per element; smoothing mixes the target (2).
bool cross_entropy(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  const Tensor* t = a.tensor("target", 1);
  if (!x || !t) return unmodeled(c, "needs input and target");
  const Tensor* w = opt_tensor(a, "weight", 2);
  Reduction red = reduction_of(a, 3);
  double smoothing = a.double_or("label_smoothing", 5, 0);
  double e = static_cast<double>(x->numel());
  double classes = static_cast<double>(x->dim(x->rank() >= 2 ? 1 : 0));
  double rows = classes > 0 ? e / classes : 0;
  double sz = elem_size(x->dtype);
  // log_softmax: read x, write logp.
  double flops = e * fl(4, 1) + rows * fl(0, 1);
  double bytes = tensor_bytes(*x) + e * sz;
  bool probabilities =
      is_floating(t->dtype) || (t->dtype.empty() && t->rank() == x->rank() && x->rank() > 0);
  if (probabilities) {
    flops += e * fl(2 + (w ? 1 : 0) + (smoothing > 0 ? 2 : 0)) + reduce_flops(red, rows);
    bytes += e * sz + tensor_bytes(*t) + nbytes(w) + out_elems(red, rows) * sz;
  } else {
    OpCost nll;
    nll_cost(*x, *t, w, red, nll);
    flops += nll.flops;
    bytes += nll.bytes;
    if (smoothing > 0) {
      double s = static_cast<double>(t->numel());
      flops += e * fl(1 + (w ? 1 : 0)) + s * fl(3);
      bytes += e * sz;
    }
  }
  c.flops = flops;
  c.bytes = bytes;
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t}) + "," + reduction_name(red);
  return true;
}

// ---- element-wise losses (self, target, ...) ----
struct PairLoss {
  double arith;  // per element, before the reduction
  double trans;
  int reduction_pos;
  int weight_pos = -1;  // optional per-element weight (+1 multiply)
};

bool pair_loss(const PairLoss& op, const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  const Tensor* t = a.tensor("target", 1);
  if (!x || !t) return unmodeled(c, "needs input and target");
  std::vector<int64_t> shape = x->shape;
  if (!broadcast_into(shape, t->shape)) return unmodeled(c, "shapes do not broadcast");
  const Tensor* w = op.weight_pos >= 0 ? opt_tensor(a, "weight", op.weight_pos) : nullptr;
  Reduction red = reduction_of(a, op.reduction_pos);
  double e = static_cast<double>(numel_of(shape));
  c.flops = e * fl(op.arith + (w ? 1 : 0), op.trans) + reduce_flops(red, e);
  c.bytes =
      tensor_bytes(*x) + tensor_bytes(*t) + nbytes(w) + out_elems(red, e) * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t}) + "," + reduction_name(red);
  return true;
}

ModelFn pair(PairLoss op) {
  return [op](const OpArgs& a, OpCost& c) { return pair_loss(op, a, c); };
}

// binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
// (1 - t)*x - lw*log_sigmoid(x), log_sigmoid = min(x,0) - log1p(exp(-|x|)) (4 + exp + log1p),
// 1 - t, * x, - (3); pos_weight: lw = 1 + (pw - 1)*t and * lw (4); weight: * w (1).
bool bce_with_logits(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  const Tensor* t = a.tensor("target", 1);
  if (!x || !t) return unmodeled(c, "needs input and target");
  const Tensor* w = opt_tensor(a, "weight", 2);
  const Tensor* pw =
      a.get("pos_weight") || !is_legacy(a) ? opt_tensor(a, "pos_weight", 3) : nullptr;
  Reduction red = reduction_of(a, 4);
  std::vector<int64_t> shape = x->shape;
  if (!broadcast_into(shape, t->shape)) return unmodeled(c, "shapes do not broadcast");
  double e = static_cast<double>(numel_of(shape));
  c.flops = e * fl(7 + (pw ? 4 : 0) + (w ? 1 : 0), 2) + reduce_flops(red, e);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*t) + nbytes(w) + nbytes(pw) +
            out_elems(red, e) * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t}) + "," + reduction_name(red);
  return true;
}

// kl_div(self, target, reduction, log_target): t*(log t - x) via xlogy(t, t) - t*x: 4 + log;
// log_target: exp(t)*(t - x): 2 + exp.
bool kl_div(const OpArgs& a, OpCost& c) {
  bool log_target = a.bool_or("log_target", 3, false);
  PairLoss op{log_target ? 2.0 : 4.0, 1, 2};
  return pair_loss(op, a, c);
}

// Backward of the element-wise losses: (grad_output, self, target, ..., reduction):
// grad_input = f'(x, t) * g, written once; grad_output read at its size (one value when reduced).
struct PairBackward {
  double arith;
  double trans;
  int weight_pos = -1;
};

bool pair_backward(const PairBackward& op, const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* x = a.tensor("self", 1);
  const Tensor* t = a.tensor("target", 2);
  if (!g || !x || !t) return unmodeled(c, "needs grad_output, self, target");
  std::vector<int64_t> shape = x->shape;
  if (!broadcast_into(shape, t->shape) || !broadcast_into(shape, g->shape)) {
    return unmodeled(c, "shapes do not broadcast");
  }
  const Tensor* w = op.weight_pos >= 0 ? opt_tensor(a, "weight", op.weight_pos) : nullptr;
  double e = static_cast<double>(numel_of(shape));
  c.flops = e * fl(op.arith + (w ? 1 : 0), op.trans);
  c.bytes =
      tensor_bytes(*g) + tensor_bytes(*x) + tensor_bytes(*t) + nbytes(w) + e * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({x, t});
  return true;
}

ModelFn pair_bwd(PairBackward op) {
  return [op](const OpArgs& a, OpCost& c) { return pair_backward(op, a, c); };
}

}  // namespace

void register_loss(Registry& r) {
  add_ops(r, "loss", {"cross_entropy_loss", "cross_entropy"}, cross_entropy);
  add_ops(r, "loss",
          {"nll_loss", "nll_loss_nd", "nll_loss2d", "nll_loss_forward", "nll_loss2d_forward"},
          nll_loss);
  add_ops(r, "loss", {"nll_loss_backward", "nll_loss2d_backward"}, nll_loss_backward);
  // mse: x - t, ^2 (2).  backward: 2*(x - t)*g (norm folded) (3).
  add_ops(r, "loss", {"mse_loss"}, pair({2, 0, 2}));
  add_ops(r, "loss", {"mse_loss_backward"}, pair_bwd({3, 0}));
  // l1: x - t, |.| (2) (its backward runs as pointwise ops: sgn, mul).
  add_ops(r, "loss", {"l1_loss"}, pair({2, 0, 2}));
  // smooth L1 / Huber: z = |x - t| (2), z < b (1), 0.5*z*z/b or z - 0.5*b (3) = 6.
  // backward: x - t, |.|, compare, (x - t)/b or sign, * g = 5.
  add_ops(r, "loss", {"smooth_l1_loss", "huber_loss"}, pair({6, 0, 2}));
  add_ops(r, "loss", {"smooth_l1_loss_backward", "huber_loss_backward"}, pair_bwd({5, 0}));
  // bce: -w*(t*max(log x, -100) + (1 - t)*max(log(1 - x), -100)): 1 - x, 2 clamps, t*, 1 - t,
  // *, +, neg (8) + 2 logs; backward: g*(x - t)/max((1 - x)*x, eps) (* w): 6.
  add_ops(r, "loss", {"binary_cross_entropy"}, pair({8, 2, 3, 2}));
  add_ops(r, "loss", {"binary_cross_entropy_backward"}, pair_bwd({6, 0, 3}));
  add_ops(r, "loss", {"binary_cross_entropy_with_logits"}, bce_with_logits);
  add_ops(r, "loss", {"kl_div"}, kl_div);
  // soft margin: log(1 + exp(-t*x)): *, neg (2) + exp + log1p; backward:
  // z = exp(-t*x) (2 + exp), -t*z/(1 + z) (3), * g (1).
  add_ops(r, "loss", {"soft_margin_loss"}, pair({2, 2, 2}));
  add_ops(r, "loss", {"soft_margin_loss_backward"}, pair_bwd({6, 1}));
}

}  // namespace pyprof::models
