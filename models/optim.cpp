// The optim family: the _foreach_* ops the torch.optim foreach implementations are made of, the
// fused optimizer kernels (_fused_adam(w), _fused_sgd, _fused_adagrad) and legacy apex
// fused_adam_cuda.adam. Formulas and per-element operation counts: docs/ops.md "optim".
//
// A _foreach op costs its per-element FLOPs times the elements of its first tensor list; bytes
// read every tensor list and tensor argument once and write one list shaped like the first (in
// place or not: the traffic is the same, so "_foreach_add_" and "_foreach_add" share a model).
// sqrt, division and transcendental functions count 1 FLOP each.
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

// A readable tensor list argument, else nullptr.
const std::vector<Tensor>* list(const OpArgs& args, std::string_view name, size_t position) {
  const Value* v = args.arg(name, position);
  return v && v->kind == Value::Kind::kTensorList ? &v->tensors : nullptr;
}

double numel(const std::vector<Tensor>& ts) {
  double n = 0;
  for (const Tensor& t : ts) n += static_cast<double>(t.numel());
  return n;
}

double bytes_of(const std::vector<Tensor>& ts) {
  double b = 0;
  for (const Tensor& t : ts) b += tensor_bytes(t);
  return b;
}

std::string list_dtype(const std::vector<Tensor>* ts, const std::string& fallback) {
  return ts && !ts->empty() && !ts->front().dtype.empty() ? ts->front().dtype : fallback;
}

// ---- _foreach_* ----

enum class Out { kLike, kScalarEach };

struct Foreach {
  double flops = 1;         // per element of the first list
  bool reads_first = true;  // false: _foreach_zero_ / _foreach_copy_ only write the first list
  Out out = Out::kLike;     // what is written
  bool alpha = false;       // add/sub: alpha != 1 costs one more multiply
};

bool foreach_op(const OpArgs& args, OpCost& cost, const Foreach& f) {
  const std::vector<Tensor>* first = nullptr;
  double bytes = 0;
  size_t lists = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value* v = args.at(i);
    if (v->kind == Value::Kind::kTensorList) {
      if (!first) {
        first = &v->tensors;
        if (!f.reads_first) continue;
      }
      bytes += bytes_of(v->tensors);
      ++lists;
    } else if (v->kind == Value::Kind::kTensor) {
      bytes += tensor_bytes(v->tensor);  // a Tensor operand (often 0-dim) or tensor lr
    }
  }
  if (!first) {
    // Lists of more than 256 tensors are cut by the marker (docs/formats.md §1.1) and emit_nvtx
    // records carry no list shapes.
    return unmodeled(cost, "foreach: tensor list unreadable");
  }
  double elems = numel(*first);
  std::string dt = list_dtype(first, "");
  if (f.out == Out::kLike) {
    bytes += bytes_of(*first);
  } else {
    bytes += static_cast<double>(first->size()) * elem_size(dt);
  }
  double per = f.flops;
  if (f.alpha && args.double_or("alpha", 2, 1.0) != 1.0) per += 1;
  cost.flops = per * elems;
  cost.bytes = bytes;
  cost.dtype = dt;
  cost.tc_eligible = false;
  cost.params = "tensors=" + std::to_string(first->size()) +
                ",elems=" + std::to_string(static_cast<int64_t>(elems)) + dtype_suffix(dt);
  return true;
}

ModelFn foreach_model(Foreach f) {
  return [f](const OpArgs& args, OpCost& cost) { return foreach_op(args, cost, f); };
}

// ---- fused optimizers ----

// The common part: params (self), grads, the state lists. Lists missing because the marker
// dropped trailing arguments (args_dropped) are taken to be shaped like the params.
struct Fused {
  const std::vector<Tensor>* params = nullptr;
  double elems = 0;
  double sp = 4, sg = 4;  // element sizes of params and grads
  std::string dtype;
};

bool fused_common(const OpArgs& args, Fused& f, OpCost& cost) {
  f.params = list(args, "self", 0);
  if (!f.params) return unmodeled(cost, "fused optimizer: params list unreadable");
  f.elems = numel(*f.params);
  f.dtype = list_dtype(f.params, "");
  f.sp = elem_size(f.dtype);
  f.sg = elem_size(list_dtype(list(args, "grads", 1), f.dtype));
  return true;
}

bool tensor_arg(const OpArgs& args, std::string_view name, size_t position) {
  const Tensor* t = args.tensor(name, position);
  return t != nullptr;
}

void fused_finish(OpCost& cost, const Fused& f, const char* name, double per_elem, double bytes) {
  cost.flops = per_elem * f.elems;
  cost.bytes = bytes;
  cost.dtype = f.dtype;
  cost.tc_eligible = false;
  cost.params = std::string(name) + ",tensors=" + std::to_string(f.params->size()) +
                ",elems=" + std::to_string(static_cast<int64_t>(f.elems)) + dtype_suffix(f.dtype);
}

// _fused_adam(w)(_)(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr,
// beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf). Per element:
//   m = b1*m + (1-b1)*g                3
//   v = b2*v + (1-b2)*g*g              4
//   denom = sqrt(v) / bc2_sqrt + eps   3
//   p -= step_size * m / denom         3   -> 13
// + 2 weight decay (Adam: g += wd*p; AdamW: p -= lr*wd*p), + 1 amsgrad (max), + 1 grad_scale
// (g /= scale), + 1 maximize (-g). Bytes: params, m, v read and written, grads read (and
// written back unscaled with grad_scale), max_exp_avg_sqs read and written with amsgrad; one
// float32 step per tensor read.
bool fused_adam(const OpArgs& args, OpCost& cost) {
  Fused f;
  if (!fused_common(args, f, cost)) return false;
  double ss = elem_size(list_dtype(list(args, "exp_avgs", 2), f.dtype));
  bool amsgrad = args.bool_or("amsgrad", 11, false);
  bool maximize = args.bool_or("maximize", 12, false);
  bool scale = tensor_arg(args, "grad_scale", 13);
  double wd = args.double_or("weight_decay", 9, 0);
  double per = 13 + (wd != 0 ? 2 : 0) + (amsgrad ? 1 : 0) + (scale ? 1 : 0) + (maximize ? 1 : 0);
  double per_bytes = 2 * f.sp + f.sg + 4 * ss + (amsgrad ? 2 * ss : 0) + (scale ? f.sg : 0);
  double steps = static_cast<double>(f.params->size()) * 4;
  fused_finish(cost, f, "Adam", per, f.elems * per_bytes + steps);
  return true;
}

// _fused_sgd(_)(self, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
// nesterov, maximize, is_first_step, grad_scale, found_inf). Per element: p -= lr*g (2);
// + 2 weight decay, + 1 grad_scale, + 1 maximize; with momentum: buf = momentum*buf +
// (1-dampening)*g (3; a plain copy on the first step), + 2 nesterov (g += momentum*buf).
bool fused_sgd(const OpArgs& args, OpCost& cost) {
  Fused f;
  if (!fused_common(args, f, cost)) return false;
  const std::vector<Tensor>* bufs = list(args, "momentum_buffer_list", 2);
  bool momentum = bufs ? !bufs->empty() : args.double_or("momentum", 4, 0) != 0;
  double sb = elem_size(list_dtype(bufs, f.dtype));
  double wd = args.double_or("weight_decay", 3, 0);
  bool nesterov = args.bool_or("nesterov", 7, false);
  bool maximize = args.bool_or("maximize", 8, false);
  bool first = args.bool_or("is_first_step", 9, false);
  bool scale = tensor_arg(args, "grad_scale", 10);
  double per = 2 + (wd != 0 ? 2 : 0) + (scale ? 1 : 0) + (maximize ? 1 : 0);
  double per_bytes = 2 * f.sp + f.sg + (scale ? f.sg : 0);
  if (momentum) {
    per += (first ? 0 : 3) + (nesterov ? 2 : 0);
    per_bytes += (first ? 0 : sb) + sb;
  }
  fused_finish(cost, f, "SGD", per, f.elems * per_bytes);
  return true;
}

// _fused_adagrad(_)(self, grads, state_sums, state_steps, *, lr, lr_decay, weight_decay, eps,
// maximize, grad_scale, found_inf). Per element: s += g*g (2); p -= clr * g / (sqrt(s) + eps)
// (5) -> 7; + 2 weight decay, + 1 grad_scale, + 1 maximize.
bool fused_adagrad(const OpArgs& args, OpCost& cost) {
  Fused f;
  if (!fused_common(args, f, cost)) return false;
  double ss = elem_size(list_dtype(list(args, "state_sums", 2), f.dtype));
  double wd = args.double_or("weight_decay", 6, 0);
  bool maximize = args.bool_or("maximize", 8, false);
  bool scale = tensor_arg(args, "grad_scale", 9);
  double per = 7 + (wd != 0 ? 2 : 0) + (scale ? 1 : 0) + (maximize ? 1 : 0);
  double per_bytes = 2 * f.sp + f.sg + 2 * ss + (scale ? f.sg : 0);
  double steps = static_cast<double>(f.params->size()) * 4;
  fused_finish(cost, f, "Adagrad", per, f.elems * per_bytes + steps);
  return true;
}

// Legacy apex fused_adam_cuda.adam(p, p_copy, m, v, g, lr, beta1, beta2, eps, grad_scale, step,
// mode, bias_correction, decay): g/scale (1), m (3), v (4), denom (2), m/denom (1), p update (2)
// -> 13, + 2 with decay. Bytes: p, m, v read and written, g read, p_copy (fp16 copy) written.
bool apex_adam(const OpArgs& args, OpCost& cost) {
  const Tensor* p = args.tensor("", 0);
  const Tensor* p_copy = args.tensor("", 1);
  const Tensor* g = args.tensor("", 4);
  if (!p || !g) return unmodeled(cost, "adam: expects p, p_copy, m, v, g, ...");
  double elems = static_cast<double>(p->numel());
  double decay = args.double_or("decay", 13, 0);
  cost.flops = elems * (13 + (decay != 0 ? 2 : 0));
  cost.bytes = 6 * tensor_bytes(*p) + tensor_bytes(*g) +
               (p_copy && p_copy->numel() > 0 ? tensor_bytes(*p_copy) : 0);
  cost.dtype = p->dtype;
  cost.tc_eligible = false;
  cost.params = "Adam,elems=" + std::to_string(p->numel()) + dtype_suffix(p->dtype);
  return true;
}

}  // namespace

void register_optim(Registry& r) {
  const std::string f = "optim";
  // Unary: 1 FLOP per element.
  for (const char* op :
       {"abs",   "acos", "asin",  "atan",       "ceil",  "cos",    "cosh",    "erf",
        "erfc",  "exp",  "expm1", "floor",      "frac",  "lgamma", "log",     "log10",
        "log1p", "log2", "neg",   "reciprocal", "round", "rsqrt",  "sigmoid", "sign",
        "sin",   "sinh", "sqrt",  "tan",        "tanh",  "trunc"}) {
    r.add(std::string("_foreach_") + op, f, foreach_model({}));
  }
  // Binary (Scalar, ScalarList, List and Tensor overloads): 1 FLOP per element.
  for (const char* op : {"mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"}) {
    r.add(std::string("_foreach_") + op, f, foreach_model({}));
  }
  Foreach add;
  add.alpha = true;
  r.add("_foreach_add", f, foreach_model(add));
  r.add("_foreach_sub", f, foreach_model(add));
  // Ternary: self + value * t1 * t2 (t1 / t2), self + w * (end - self): 3 FLOPs per element.
  Foreach ternary;
  ternary.flops = 3;
  for (const char* op : {"_foreach_addcmul", "_foreach_addcdiv", "_foreach_lerp"}) {
    r.add(op, f, foreach_model(ternary));
  }
  // Reductions to one scalar per tensor: norm (square/abs and accumulate, 2), max (1).
  Foreach norm;
  norm.flops = 2;
  norm.out = Out::kScalarEach;
  r.add("_foreach_norm", f, foreach_model(norm));
  Foreach max = norm;
  max.flops = 1;
  r.add("_foreach_max", f, foreach_model(max));
  // Writes only.
  Foreach zero;
  zero.flops = 0;
  zero.reads_first = false;
  r.add("_foreach_zero", f, foreach_model(zero));
  r.add("_foreach_copy", f, foreach_model(zero));  // reads src, writes self
  // Fused optimizers ("_fused_adam_" finds "_fused_adam": op_cost strips the in-place "_";
  // the explicit names keep that true even if the rule changes).
  for (const char* op : {"_fused_adam", "_fused_adam_", "_fused_adamw", "_fused_adamw_"}) {
    r.add(op, f, fused_adam);
  }
  r.add("_fused_sgd", f, fused_sgd);
  r.add("_fused_sgd_", f, fused_sgd);
  r.add("_fused_adagrad", f, fused_adagrad);
  r.add("_fused_adagrad_", f, fused_adagrad);
  r.add("adam", f, apex_adam);  // legacy PyProf markers of apex's fused_adam_cuda.adam
}

}  // namespace pyprof::models
