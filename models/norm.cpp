// Normalization family: batch, layer, group, RMS and instance norm, forward and backward
// (docs/ops.md "norm").
//
// E = elements of the input, G = number of normalization groups (rows of layer/RMS norm,
// channels of batch norm, (n, group) pairs of group norm, (n, c) pairs of instance norm).
// Per element (textbook two-pass formulas, shape_util kArith/kTrans weights):
//   statistics     sum x (1) + (x - mean)^2 accumulated (3)               = 4
//   normalize      (x - mean) * rstd                                        = 2
//   affine         * weight (1 when given) + bias (1 when given)
// Per group: mean = s/n, var = ss/n, + eps (3) and one rsqrt.
// Bytes: input and output once, weight/bias once, statistics (mean/rstd) written once in the
// accumulate dtype (float32 for 16-bit inputs, as on CUDA); backward reads them as given.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

constexpr double kStats = 4;      // per element: sum, (x - mean)^2, accumulate
constexpr double kNormalize = 2;  // per element: (x - mean) * rstd

double affine(const Tensor* w, const Tensor* b) { return (w ? 1 : 0) + (b ? 1 : 0); }

// Size of one normalized row: prod(normalized_shape), else the weight's size, else the last dim.
double row_size(const Tensor& x, const Value* normalized_shape, const Tensor* w) {
  if (auto ns = int_list(normalized_shape)) return static_cast<double>(numel_of(*ns));
  if (w) return static_cast<double>(w->numel());
  return static_cast<double>(x.dim(-1));
}

// Forward of every mean/variance normalization: E elements in `groups` groups, per-channel
// affine parameters, statistics written (`stats_out` tensors of `groups` elements).
void normalize_forward(const Tensor& x, const Tensor* w, const Tensor* b, double groups,
                       int stats_out, OpCost& c) {
  double e = static_cast<double>(x.numel());
  c.flops = e * fl(kStats + kNormalize + affine(w, b)) + groups * fl(3, 1);
  c.bytes =
      2 * tensor_bytes(x) + nbytes(w) + nbytes(b) + stats_out * nbytes(groups, acc_dtype(x.dtype));
  c.dtype = canonical_dtype(x.dtype);
  c.params = describe(x);
}

// ---- layer norm ----
// layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)
bool layer_norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  const Tensor* w = opt_tensor(a, "weight", 2);
  const Tensor* b = opt_tensor(a, "bias", 3);
  double d = row_size(*x, a.arg("normalized_shape", 1), w);
  double rows = d > 0 ? static_cast<double>(x->numel()) / d : 0;
  normalize_forward(*x, w, b, rows, 2, c);
  c.params += ",D=" + num_str(d);
  return true;
}

// Backward of layer norm and group norm (statistics over a row of D elements; weight per
// channel). Per element: x_hat = (x - mean)*rstd (2) when dx or dw; dx: g = dy*w (1 with weight),
// sum g (1), sum g*x_hat (2), dx = rstd*(g - (sum_g + x_hat*sum_gx)/D) (4); dw: sum dy*x_hat (2);
// db: sum dy (1). Per row with dx: the two means (2).
void row_norm_backward(const Tensor& dy, const Tensor& x, const Tensor* mean, const Tensor* rstd,
                       const Tensor* w, const Tensor* bias, double rows,
                       const std::vector<bool>& mask, OpCost& c) {
  bool dx = mask[0], dw = mask[1] && w, db = mask[2] && (w || bias);
  double e = static_cast<double>(x.numel());
  double per = 0;
  if (dx || dw) per += 2;
  if (dx) per += (w ? 1 : 0) + 1 + 2 + 4;
  if (dw) per += 2;
  if (db) per += 1;
  c.flops = e * fl(per) + (dx ? rows * fl(2) : 0);
  c.bytes = tensor_bytes(dy);
  if (dx || dw) c.bytes += tensor_bytes(x) + nbytes(mean) + nbytes(rstd);
  if (dx) c.bytes += nbytes(w) + e * elem_size(x.dtype);
  double params = w ? static_cast<double>(w->numel()) : bias ? bias->numel() : 0;
  std::string pdt = w ? w->dtype : bias ? bias->dtype : x.dtype;
  if (dw) c.bytes += nbytes(params, pdt);
  if (db) c.bytes += nbytes(params, pdt);
  c.dtype = canonical_dtype(x.dtype);
  c.params = describe(x);
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
// output_mask)
bool layer_norm_backward(const OpArgs& a, OpCost& c) {
  const Tensor* dy = a.tensor("grad_out", 0);
  const Tensor* x = a.tensor("input", 1);
  if (!dy || !x) return unmodeled(c, "needs grad_out and input");
  const Tensor* mean = opt_tensor(a, "mean", 3);
  const Tensor* rstd = opt_tensor(a, "rstd", 4);
  const Tensor* w = opt_tensor(a, "weight", 5);
  const Tensor* b = opt_tensor(a, "bias", 6);
  double d = row_size(*x, a.arg("normalized_shape", 2), w);
  double rows = d > 0 ? static_cast<double>(x->numel()) / d : 0;
  row_norm_backward(*dy, *x, mean, rstd, w, b, rows, output_mask(a, "output_mask", 7, 3), c);
  c.params += ",D=" + num_str(d);
  return true;
}

// ---- RMS norm ----
// rms_norm(input, normalized_shape, weight, eps), _fused_rms_norm(...) -> (out, rstd).
// Per element: x*x accumulated (2), x * rstd (1), * weight (1 when given); per row: / D, + eps
// (2) and one rsqrt.
bool rms_norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  const Tensor* w = opt_tensor(a, "weight", 2);
  double d = row_size(*x, a.arg("normalized_shape", 1), w);
  double e = static_cast<double>(x->numel());
  double rows = d > 0 ? e / d : 0;
  c.flops = e * fl(3 + (w ? 1 : 0)) + rows * fl(2, 1);
  c.bytes = 2 * tensor_bytes(*x) + nbytes(w) + nbytes(rows, "float32");  // rstd is float32
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",D=" + num_str(d);
  return true;
}

// _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask[2]).
// Per element: x_hat = x*rstd (1); dx: g = dy*w (1 with weight), sum g*x_hat (2),
// dx = rstd*(g - x_hat*mean(g*x_hat)) (3); dw: sum dy*x_hat (2). Per row with dx: / D (1).
bool rms_norm_backward(const OpArgs& a, OpCost& c) {
  const Tensor* dy = a.tensor("grad_out", 0);
  const Tensor* x = a.tensor("input", 1);
  if (!dy || !x) return unmodeled(c, "needs grad_out and input");
  const Tensor* rstd = opt_tensor(a, "rstd", 3);
  const Tensor* w = opt_tensor(a, "weight", 4);
  std::vector<bool> mask = output_mask(a, "output_mask", 5, 2);
  bool dx = mask[0], dw = mask[1] && w;
  double d = row_size(*x, a.arg("normalized_shape", 2), w);
  double e = static_cast<double>(x->numel());
  double rows = d > 0 ? e / d : 0;
  double per = 1 + (dx ? (w ? 1 : 0) + 2 + 3 : 0) + (dw ? 2 : 0);
  c.flops = e * fl(per) + (dx ? rows * fl(1) : 0);
  c.bytes = tensor_bytes(*dy) + tensor_bytes(*x) + nbytes(rstd);
  if (dx) c.bytes += nbytes(w) + e * elem_size(x->dtype);
  if (dw) c.bytes += nbytes(w);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",D=" + num_str(d);
  return true;
}

// ---- batch norm ----
struct BnArgs {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;
  const Tensor* rm = nullptr;
  const Tensor* rv = nullptr;
  bool training = false;
};

// Training: statistics per channel over N*spatial, normalize, affine; per channel: 3 + rsqrt for
// the statistics and, with running stats, their update (r = (1-m)*r + m*s: 3 each, the unbiased
// variance factor 1) = 7. Bytes: x and y, weight/bias, running stats read and written, the
// saved mean/invstd written.
// Evaluation: (x - running_mean) * invstd (2) + affine per element; per channel var + eps and
// rsqrt. Bytes: x, y, weight/bias, running stats read.
bool batch_norm_forward(const BnArgs& p, OpCost& c) {
  const Tensor& x = *p.x;
  double e = static_cast<double>(x.numel());
  double ch = static_cast<double>(x.rank() >= 2 ? x.dim(1) : p.w ? p.w->numel() : 1);
  bool running = p.rm && p.rv;
  if (p.training) {
    normalize_forward(x, p.w, p.b, ch, 2, c);
    if (running) {
      c.flops += ch * fl(7);
      c.bytes += 2 * (nbytes(p.rm) + nbytes(p.rv));
    }
  } else {
    c.flops = e * fl(kNormalize + affine(p.w, p.b)) + ch * fl(1, 1);
    c.bytes = 2 * tensor_bytes(x) + nbytes(p.w) + nbytes(p.b) + nbytes(p.rm) + nbytes(p.rv);
    c.dtype = canonical_dtype(x.dtype);
    c.params = describe(x);
  }
  c.params += p.training ? ",train" : ",eval";
  return true;
}

// batch_norm / _batch_norm_impl_index / native_batch_norm / cudnn_batch_norm /
// miopen_batch_norm / _native_batch_norm_legit: (input, weight, bias, running_mean,
// running_var, training, momentum, eps, ...). Legacy F.batch_norm(input, running_mean,
// running_var, weight, bias, training, ...).
bool batch_norm(const OpArgs& a, OpCost& c) {
  BnArgs p;
  p.x = tensor_any(a, {"input"}, 0);
  if (!p.x) return unmodeled(c, "no input tensor");
  bool legacy = is_legacy(a);
  // _native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps)
  bool no_stats = !legacy && a.get("training") && !a.get("running_mean") && a.get("weight");
  if (is_positional(a) && a.size() == 6) no_stats = true;
  p.w = opt_tensor(a, "weight", legacy ? 3 : 1);
  p.b = opt_tensor(a, "bias", legacy ? 4 : 2);
  if (!no_stats) {
    p.rm = opt_tensor(a, "running_mean", legacy ? 1 : 3);
    p.rv = opt_tensor(a, "running_var", legacy ? 2 : 4);
  }
  p.training = a.bool_or("training", no_stats ? 3 : 5, legacy ? false : true);
  return batch_norm_forward(p, c);
}

// _native_batch_norm_legit_no_training / _batch_norm_with_update / _batch_norm_no_update:
// (input, weight, bias, running_mean, running_var, momentum, eps).
enum class BnMode : uint8_t { kEval, kTrain, kNoUpdate };
ModelFn batch_norm_fixed(BnMode mode) {
  return [mode](const OpArgs& a, OpCost& c) {
    BnArgs p;
    p.x = tensor_any(a, {"input"}, 0);
    if (!p.x) return unmodeled(c, "no input tensor");
    p.w = opt_tensor(a, "weight", 1);
    p.b = opt_tensor(a, "bias", 2);
    p.rm = opt_tensor(a, "running_mean", 3);
    p.rv = opt_tensor(a, "running_var", 4);
    // _batch_norm_no_update normalizes with batch statistics when there are no running stats.
    p.training = mode == BnMode::kTrain || (mode == BnMode::kNoUpdate && !(p.rm && p.rv));
    if (mode == BnMode::kNoUpdate && p.training) {
      p.rm = p.rv = nullptr;
    }
    return batch_norm_forward(p, c);
  };
}

// Batch norm backward. Training: per element x_hat (2), sum dy (1), sum dy*x_hat (2) (these give
// dw and db), dx = w*invstd*(dy - mean(dy) - x_hat*mean(dy*x_hat)) (4); per channel the two
// means and w*invstd (3). Evaluation: dx = dy*(w*invstd) (1), dw = sum dy*x_hat (2 + 2),
// db = sum dy (1); per channel rsqrt(var + eps) and w*invstd (2 + rsqrt).
struct BnBackward {
  const Tensor* dy = nullptr;
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* rm = nullptr;
  const Tensor* rv = nullptr;
  const Tensor* sm = nullptr;
  const Tensor* sv = nullptr;
  bool train = true;
  std::vector<bool> mask = {true, true, true};
};

bool batch_norm_backward_cost(const BnBackward& p, OpCost& c) {
  if (!p.dy || !p.x) return unmodeled(c, "needs grad_out and input");
  const Tensor& x = *p.x;
  double e = static_cast<double>(x.numel());
  double ch = static_cast<double>(x.rank() >= 2 ? x.dim(1) : p.w ? p.w->numel() : 1);
  bool dx = p.mask[0], dw = p.mask[1], db = p.mask[2];
  c.bytes = tensor_bytes(*p.dy);
  if (p.train) {
    double per = (dx || dw || db) ? 5 : 0;
    if (dx) per += 4;
    c.flops = e * fl(per) + ch * fl(3);
    c.bytes += tensor_bytes(x) + nbytes(p.sm) + nbytes(p.sv);
  } else {
    c.flops = e * fl((dx ? 1 : 0) + (dw ? 4 : 0) + (db ? 1 : 0)) + ch * fl(2, 1);
    if (dw) c.bytes += tensor_bytes(x) + nbytes(p.rm);
    c.bytes += nbytes(p.rv);
  }
  if (dx) c.bytes += nbytes(p.w) + e * elem_size(x.dtype);
  std::string pdt = p.w ? p.w->dtype : acc_dtype(x.dtype);
  if (dw) c.bytes += nbytes(ch, pdt);
  if (db) c.bytes += nbytes(ch, pdt);
  c.dtype = canonical_dtype(x.dtype);
  c.params = describe(x) + (p.train ? ",train" : ",eval");
  return true;
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
// save_invstd, train, eps, output_mask); batch_norm_backward(grad_out, input, weight,
// running_mean, running_var, save_mean, save_var, update, eps, output_mask, reserve).
bool native_batch_norm_backward(const OpArgs& a, OpCost& c) {
  BnBackward p;
  p.dy = a.tensor("grad_out", 0);
  p.x = a.tensor("input", 1);
  p.w = opt_tensor(a, "weight", 2);
  p.rm = opt_tensor(a, "running_mean", 3);
  p.rv = opt_tensor(a, "running_var", 4);
  p.sm = opt_tensor(a, "save_mean", 5);
  p.sv = a.get("save_invstd") ? opt_tensor(a, "save_invstd", 6) : opt_tensor(a, "save_var", 6);
  const Value* train = a.get("train");
  if (!train) train = a.get("update");
  if (!train) train = a.arg("train", 7);
  if (train && (train->kind == Value::Kind::kBool || train->kind == Value::Kind::kInt)) {
    p.train = train->i != 0;
  }
  p.mask = output_mask(a, "output_mask", 9, 3);
  return batch_norm_backward_cost(p, c);
}

// cudnn_batch_norm_backward(input, grad_output, weight, running_mean, running_var, save_mean,
// save_var, epsilon, reserveSpace) and miopen_batch_norm_backward(...): training, all grads.
bool cudnn_batch_norm_backward(const OpArgs& a, OpCost& c) {
  BnBackward p;
  p.x = a.tensor("input", 0);
  p.dy = a.tensor("grad_output", 1);
  p.w = opt_tensor(a, "weight", 2);
  p.rm = opt_tensor(a, "running_mean", 3);
  p.rv = opt_tensor(a, "running_var", 4);
  p.sm = opt_tensor(a, "save_mean", 5);
  p.sv = opt_tensor(a, "save_var", 6);
  return batch_norm_backward_cost(p, c);
}

// _batch_norm_impl_index_backward(impl_index, input, grad_output, weight, running_mean,
// running_var, save_mean, save_var_transform, train, eps, output_mask, reservedSpace)
bool batch_norm_impl_index_backward(const OpArgs& a, OpCost& c) {
  BnBackward p;
  p.x = a.tensor("input", 1);
  p.dy = a.tensor("grad_output", 2);
  p.w = opt_tensor(a, "weight", 3);
  p.rm = opt_tensor(a, "running_mean", 4);
  p.rv = opt_tensor(a, "running_var", 5);
  p.sm = opt_tensor(a, "save_mean", 6);
  p.sv = opt_tensor(a, "save_var_transform", 7);
  p.train = a.bool_or("train", 8, true);
  p.mask = output_mask(a, "output_mask", 10, 3);
  return batch_norm_backward_cost(p, c);
}

// instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
// cudnn_enabled): batch norm over N*C channels; legacy F.instance_norm(input, running_mean,
// running_var, weight, bias, use_input_stats, ...).
bool instance_norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  bool legacy = is_legacy(a);
  const Tensor* w = opt_tensor(a, "weight", legacy ? 3 : 1);
  const Tensor* b = opt_tensor(a, "bias", legacy ? 4 : 2);
  const Tensor* rm = opt_tensor(a, "running_mean", legacy ? 1 : 3);
  const Tensor* rv = opt_tensor(a, "running_var", legacy ? 2 : 4);
  bool stats = a.bool_or("use_input_stats", 5, true);
  if (!stats) {
    BnArgs p{x, w, b, rm, rv, false};
    return batch_norm_forward(p, c);
  }
  double nc = static_cast<double>(x->dim(0)) * static_cast<double>(x->rank() >= 3 ? x->dim(1) : 1);
  normalize_forward(*x, w, b, nc, 2, c);
  if (rm && rv) {
    c.flops += static_cast<double>(rm->numel()) * fl(7);
    c.bytes += 2 * (nbytes(rm) + nbytes(rv));
  }
  return true;
}

// ---- group norm ----
// group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)
bool group_norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  int64_t g = a.int_or("num_groups", 1, 1);
  double groups = static_cast<double>(x->dim(0)) * static_cast<double>(g);
  normalize_forward(*x, opt_tensor(a, "weight", 2), opt_tensor(a, "bias", 3), groups, 2, c);
  c.params += ",G=" + std::to_string(g);
  return true;
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps)
bool native_group_norm(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  int64_t n = a.int_or("N", 3, x->dim(0));
  int64_t g = a.int_or("group", 6, 1);
  normalize_forward(*x, opt_tensor(a, "weight", 1), opt_tensor(a, "bias", 2),
                    static_cast<double>(n) * static_cast<double>(g), 2, c);
  c.params += ",G=" + std::to_string(g);
  return true;
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
// output_mask): the layer-norm backward formula with rows = N*group.
bool native_group_norm_backward(const OpArgs& a, OpCost& c) {
  const Tensor* dy = a.tensor("grad_out", 0);
  const Tensor* x = a.tensor("input", 1);
  if (!dy || !x) return unmodeled(c, "needs grad_out and input");
  const Tensor* mean = opt_tensor(a, "mean", 2);
  const Tensor* rstd = opt_tensor(a, "rstd", 3);
  const Tensor* w = opt_tensor(a, "weight", 4);
  double rows = mean ? static_cast<double>(mean->numel())
                     : static_cast<double>(a.int_or("N", 5, x->dim(0)) * a.int_or("group", 8, 1));
  std::vector<bool> mask = output_mask(a, "output_mask", 9, 3);
  row_norm_backward(*dy, *x, mean, rstd, w, nullptr, rows, mask, c);
  if (mask[2] && !w) {  // db has the channels' size even without a weight
    double ch = static_cast<double>(x->dim(1));
    c.flops += static_cast<double>(x->numel()) * fl(1);
    c.bytes += nbytes(ch, x->dtype);
  }
  return true;
}

}  // namespace

void register_norm(Registry& r) {
  add_ops(r, "norm", {"layer_norm", "native_layer_norm"}, layer_norm);
  add_ops(r, "norm", {"native_layer_norm_backward"}, layer_norm_backward);
  add_ops(r, "norm", {"rms_norm", "_fused_rms_norm"}, rms_norm);
  add_ops(r, "norm", {"_fused_rms_norm_backward"}, rms_norm_backward);
  add_ops(r, "norm",
          {"batch_norm", "_batch_norm_impl_index", "native_batch_norm", "cudnn_batch_norm",
           "miopen_batch_norm", "_native_batch_norm_legit"},
          batch_norm);
  add_ops(r, "norm", {"_native_batch_norm_legit_no_training"}, batch_norm_fixed(BnMode::kEval));
  add_ops(r, "norm", {"_batch_norm_with_update"}, batch_norm_fixed(BnMode::kTrain));
  add_ops(r, "norm", {"_batch_norm_no_update"}, batch_norm_fixed(BnMode::kNoUpdate));
  add_ops(r, "norm", {"native_batch_norm_backward", "batch_norm_backward"},
          native_batch_norm_backward);
  add_ops(r, "norm", {"cudnn_batch_norm_backward", "miopen_batch_norm_backward"},
          cudnn_batch_norm_backward);
  add_ops(r, "norm", {"_batch_norm_impl_index_backward"}, batch_norm_impl_index_backward);
  add_ops(r, "norm", {"instance_norm"}, instance_norm);
  add_ops(r, "norm", {"group_norm"}, group_norm);
  add_ops(r, "norm", {"native_group_norm"}, native_group_norm);
  add_ops(r, "norm", {"native_group_norm_backward"}, native_group_norm_backward);
}

}  // namespace pyprof::models
