// Pointwise family: unary, binary and ternary element-wise ops, activations and their backward
// ops (docs/ops.md "pointwise").
//
// FLOPs = E(out) * per-element count from the table below (shape_util kArith/kTrans weights);
// bytes = every tensor operand read once at its own size + E(out) * size(out dtype), where out is
// the broadcast of the tensor operands and its dtype follows PyTorch's type promotion
// (comparisons and logical ops give bool, float-only functions give float32 on int inputs).
#include <string>
#include <string_view>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

enum class Out : uint8_t {
  kPromote,    // result_type of the operands
  kFloat,      // result_type, int/bool promoted to float32 (exp, sqrt, true division, ...)
  kBool,       // comparisons, logical ops, isnan, ...
  kSkipFirst,  // result_type without the first operand (where: the condition)
};

// Per-call corrections of the table's count.
enum class Adj : uint8_t {
  kNone,
  kAlpha,         // add/sub/rsub: +1 multiply when alpha != 1
  kValue,         // addcmul/addcdiv: +1 multiply when value != 1
  kRounding,      // div: +1 (floor/trunc) with a rounding_mode
  kClamp,         // clamp: one min/max per bound given (the table count is 0)
  kGelu,          // approximate="tanh": the tanh formula
  kGeluBackward,  // approximate="tanh": the tanh formula
};

struct PwOp {
  std::string_view names;     // space-separated: ATen name, aliases, dunder/legacy forms
  std::string_view operands;  // tensor-or-scalar operands: "name" (position = index) or
                              // "name@position"; "a|b": alternative names (legacy keywords)
  double arith;               // arithmetic operations per output element
  double trans;               // elementary functions per output element
  Out out = Out::kPromote;
  Adj adj = Adj::kNone;
};

// The per-element counts, each the textbook formula written in the comment.
constexpr PwOp kOps[] = {
    // ---- arithmetic ----
    {"add __add__ __radd__ __iadd__", "self|input other", 1, 0, Out::kPromote, Adj::kAlpha},
    {"sub subtract __sub__ __isub__", "self|input other", 1, 0, Out::kPromote, Adj::kAlpha},
    {"rsub __rsub__", "self|input other", 1, 0, Out::kPromote, Adj::kAlpha},
    {"mul multiply __mul__ __rmul__ __imul__", "self|input other", 1, 0},
    {"div divide __truediv__ __rtruediv__ __itruediv__ __div__ __rdiv__ __idiv__",
     "self|input other", 1, 0, Out::kFloat, Adj::kRounding},
    {"true_divide", "self|input other", 1, 0, Out::kFloat},
    {"floor_divide __floordiv__ __rfloordiv__ __ifloordiv__", "self|input other", 2,
     0},                                                                // /, floor
    {"fmod", "self|input other", 0, 1},                                 // fmod
    {"remainder __mod__ __rmod__ __imod__", "self|input other", 2, 1},  // fmod, sign fix (cmp, +)
    {"pow __pow__ __rpow__ __ipow__", "self|input exponent|other", 0, 1},  // pow
    {"float_power", "self|input exponent", 0, 1, Out::kFloat},
    {"atan2 arctan2", "self|input other", 0, 1, Out::kFloat},
    {"hypot", "self|input other", 3, 1},               // x*x + y*y, sqrt
    {"xlogy", "self|input other", 2, 1, Out::kFloat},  // x == 0 ? 0 : x*log(y)
    {"copysign", "self|input other", 1, 0, Out::kFloat},
    {"maximum fmax", "self|input other", 1, 0},
    {"minimum fmin", "self|input other", 1, 0},
    {"addcmul", "self|input tensor1 tensor2", 2, 0, Out::kPromote, Adj::kValue},  // s + v*t1*t2
    {"addcdiv", "self|input tensor1 tensor2", 2, 0, Out::kPromote, Adj::kValue},  // s + v*t1/t2
    {"lerp", "self|input end weight", 3, 0},                                      // s + w*(e - s)
    {"where", "condition self|input other", 1, 0, Out::kSkipFirst},               // select
    {"clamp clip", "self|input min max", 0, 0, Out::kPromote, Adj::kClamp},
    {"clamp_min", "self|input min", 1, 0},
    {"clamp_max", "self|input max", 1, 0},
    // ---- comparisons, logical, bitwise ----
    {"eq __eq__", "self|input other", 1, 0, Out::kBool},
    {"ne not_equal __ne__", "self|input other", 1, 0, Out::kBool},
    {"lt less __lt__", "self|input other", 1, 0, Out::kBool},
    {"le less_equal __le__", "self|input other", 1, 0, Out::kBool},
    {"gt greater __gt__", "self|input other", 1, 0, Out::kBool},
    {"ge greater_equal __ge__", "self|input other", 1, 0, Out::kBool},
    {"logical_and", "self|input other", 1, 0, Out::kBool},
    {"logical_or", "self|input other", 1, 0, Out::kBool},
    {"logical_xor", "self|input other", 1, 0, Out::kBool},
    {"logical_not", "self|input", 1, 0, Out::kBool},
    {"isnan isinf isfinite isposinf isneginf signbit", "self|input", 1, 0, Out::kBool},
    {"bitwise_and __and__ __rand__ __iand__", "self|input other", 1, 0},
    {"bitwise_or __or__ __ror__ __ior__", "self|input other", 1, 0},
    {"bitwise_xor __xor__ __rxor__ __ixor__", "self|input other", 1, 0},
    {"bitwise_left_shift __lshift__ __rlshift__ __ilshift__", "self|input other", 1, 0},
    {"bitwise_right_shift __rshift__ __rrshift__ __irshift__", "self|input other", 1, 0},
    {"bitwise_not __invert__", "self|input", 1, 0},
    // ---- unary arithmetic ----
    {"neg negative __neg__", "self|input", 1, 0},
    {"abs absolute __abs__", "self|input", 1, 0},
    {"sign sgn", "self|input", 1, 0},
    {"ceil floor round trunc fix", "self|input", 1, 0},
    {"frac", "self|input", 2, 0},  // x - trunc(x)
    {"square", "self|input", 1, 0},
    {"reciprocal", "self|input", 1, 0, Out::kFloat},
    {"nan_to_num", "self|input", 3, 0},  // isnan, isinf, select
    // ---- elementary functions ----
    {"exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh "
     "asinh acosh atanh arcsin arccos arctan erf erfc erfinv lgamma digamma i0 sinc",
     "self|input", 0, 1, Out::kFloat},
    {"tanh", "self|input", 0, 1, Out::kFloat},
    {"sigmoid special_expit", "self|input", 3, 1, Out::kFloat},  // 1 / (1 + exp(-x))
    {"logit", "self|input", 2, 1, Out::kFloat},                  // log(x / (1 - x))
    // ---- activations ----
    {"relu", "self|input", 1, 0},                             // max(x, 0)
    {"relu6 hardtanh", "self|input", 2, 0},                   // min(max(x, lo), hi)
    {"leaky_relu rrelu", "self|input", 2, 0},                 // x > 0 ? x : a*x
    {"threshold", "self|input", 1, 0},                        // x > t ? x : v
    {"elu", "self|input", 3, 1},                              // x > 0 ? x : a*(exp(x) - 1)
    {"selu celu", "self|input", 4, 1},                        // elu with a scale (x/a)
    {"gelu", "self|input", 4, 1, Out::kPromote, Adj::kGelu},  // x/2 * (1 + erf(x/sqrt2))
    {"silu", "self|input", 4, 1},                             // x * sigmoid(x)
    {"mish", "self|input", 2, 3},                             // x * tanh(log1p(exp(x)))
    {"softplus", "self|input", 3, 2},                         // b*x > t ? x : log1p(exp(b*x)) / b
    {"hardswish", "self|input", 5, 0},                        // x * min(max(x + 3, 0), 6) / 6
    {"hardsigmoid", "self|input", 4, 0},                      // min(max(x + 3, 0), 6) / 6
    {"log_sigmoid logsigmoid log_sigmoid_forward", "self|input", 4, 2},  // min(x,0) -
                                                                         // log1p(exp(-|x|))
    {"softshrink", "self|input", 3, 0},  // x > l ? x - l : x < -l ? x + l : 0
    {"hardshrink", "self|input", 2, 0},  // |x| > l ? x : 0
    {"tanhshrink", "self|input", 1, 1},  // x - tanh(x)
    {"softsign", "self|input", 3, 0},    // x / (1 + |x|)
    // ---- backward of activations: grad_input from grad_output and the saved tensor ----
    {"threshold_backward", "grad_output self", 1, 0},  // x <= t ? 0 : g
    {"gelu_backward", "grad_output self", 9, 2, Out::kPromote, Adj::kGeluBackward},
    {"silu_backward", "grad_output self", 8, 1},       // s = sigmoid(x); g*s*(1 + x*(1 - s))
    {"sigmoid_backward", "grad_output output", 3, 0},  // g * y * (1 - y)
    {"tanh_backward", "grad_output output", 3, 0},     // g * (1 - y*y)
    {"hardtanh_backward", "grad_output self", 2, 0},   // lo < x < hi ? g : 0
    {"leaky_relu_backward rrelu_with_noise_backward", "grad_output self", 2, 0},  // x>0 ? g : a*g
    {"elu_backward", "grad_output@0 self_or_result@5", 4, 1},  // x > 0 ? g : g*a*exp(x)
    {"softplus_backward", "grad_output self", 5, 1},           // z = exp(b*x); g * z / (z + 1)
    {"mish_backward", "grad_output self", 10, 4},  // sigmoid, softplus, tanh; g*(t + x*s*(1-t^2))
    {"hardswish_backward", "grad_output self", 5, 0},    // x<-3 ? 0 : x<=3 ? g*(x/3 + .5) : g
    {"hardsigmoid_backward", "grad_output self", 3, 0},  // -3 < x < 3 ? g/6 : 0
    {"softshrink_backward hardshrink_backward", "grad_output|grad_out self", 2, 0},
    {"log_sigmoid_backward", "grad_output self", 4, 1},         // g * sigmoid(-x)
    {"logit_backward", "grad_output self", 3, 0, Out::kFloat},  // g / (x * (1 - x))
};

struct Operand {
  std::vector<std::string> names;
  size_t position;
};

std::vector<Operand> parse_operands(std::string_view spec) {
  std::vector<Operand> out;
  size_t index = 0;
  while (!spec.empty()) {
    size_t sp = spec.find(' ');
    std::string_view token = spec.substr(0, sp);
    spec = sp == std::string_view::npos ? std::string_view() : spec.substr(sp + 1);
    if (token.empty()) continue;
    Operand o;
    o.position = index++;
    size_t at = token.find('@');
    if (at != std::string_view::npos) {
      o.position = static_cast<size_t>(std::stoul(std::string(token.substr(at + 1))));
      token = token.substr(0, at);
    }
    while (!token.empty()) {
      size_t bar = token.find('|');
      o.names.emplace_back(token.substr(0, bar));
      token = bar == std::string_view::npos ? std::string_view() : token.substr(bar + 1);
    }
    out.push_back(std::move(o));
  }
  return out;
}

const Value* lookup(const OpArgs& a, const Operand& o) {
  for (const std::string& n : o.names) {
    if (const Value* v = a.get(n)) return v;
  }
  return a.arg(o.names.front(), o.position);
}

std::string string_arg(const OpArgs& a, std::string_view name, size_t position) {
  const Value* v = a.arg(name, position);
  return v && v->kind == Value::Kind::kString ? v->s : std::string();
}

bool is_not_one(const Value* v) { return is_number(v) && v->d != 1.0; }

bool model(const PwOp& op, const std::vector<Operand>& operands, const OpArgs& a, OpCost& c) {
  std::vector<const Tensor*> tensors;
  std::vector<int64_t> out_shape;
  TypeState types;
  int bounds = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Value* v = lookup(a, operands[i]);
    if (!v || v->kind == Value::Kind::kNone) continue;
    bool counts = !(op.out == Out::kSkipFirst && i == 0);
    if (v->is_tensor()) {
      tensors.push_back(&v->tensor);
      if (!broadcast_into(out_shape, v->tensor.shape)) {
        return unmodeled(c, "shapes do not broadcast: " + describe(tensors));
      }
      if (counts) types.add(v->tensor);
    } else if (is_number(v) || v->kind == Value::Kind::kOther) {
      if (counts) types.add_scalar(*v);
    } else {
      continue;
    }
    if (i > 0) ++bounds;
  }
  if (tensors.empty()) return unmodeled(c, "no tensor operand");

  double arith = op.arith, trans = op.trans;
  bool rounded = false;
  switch (op.adj) {
    case Adj::kNone:
      break;
    case Adj::kAlpha:
      if (is_not_one(a.arg("alpha", 2))) arith += 1;
      break;
    case Adj::kValue:
      if (is_not_one(a.arg("value", 3))) arith += 1;
      break;
    case Adj::kRounding: {
      std::string mode = string_arg(a, "rounding_mode", 2);
      if (mode == "trunc" || mode == "floor") {
        arith += 1;
        rounded = true;  // integer inputs stay integer
      }
      break;
    }
    case Adj::kClamp:
      arith += bounds;
      break;
    case Adj::kGelu:
      if (string_arg(a, "approximate", 1) == "tanh") {
        arith = 8;  // x/2 * (1 + tanh(c*(x + k*x^3)))
        trans = 1;
      }
      break;
    case Adj::kGeluBackward:
      if (string_arg(a, "approximate", 2) == "tanh") {
        arith = 17;  // the tanh formula's derivative
        trans = 1;
      }
      break;
  }

  std::string in_dtype = types.result();
  std::string out_dtype = in_dtype;
  if (op.out == Out::kFloat && !rounded && !in_dtype.empty()) out_dtype = float_dtype_of(in_dtype);
  if (op.out == Out::kBool) out_dtype = "bool";

  double out = static_cast<double>(numel_of(out_shape));
  c.flops = out * fl(arith, trans);
  c.bytes = out * elem_size(out_dtype);
  for (const Tensor* t : tensors) c.bytes += tensor_bytes(*t);
  c.dtype = op.out == Out::kBool ? in_dtype : out_dtype;
  c.params = describe(tensors);
  return true;
}

// glu(self, dim): a * sigmoid(b) over the two halves of dim.
bool glu(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  double out = static_cast<double>(x->numel()) / 2;
  c.flops = out * fl(4, 1);  // sigmoid (3 + exp), mul
  c.bytes = tensor_bytes(*x) + out * elem_size(x->dtype);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x);
  return true;
}

// glu_backward(grad_output, self, dim): s = sigmoid(b); da = g*s; db = g*a*s*(1 - s).
bool glu_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* x = a.tensor("self", 1);
  if (!g || !x) return unmodeled(c, "needs grad_output and self");
  double half = static_cast<double>(x->numel()) / 2;
  c.flops = half * fl(8, 1);  // sigmoid (3 + exp), g*s, 1 - s, g*a, *s, *(1 - s)
  c.bytes = tensor_bytes(*g) + 2 * tensor_bytes(*x);  // read g, x; write grad_input
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({g, x});
  return true;
}

// prelu(self, weight): x > 0 ? x : w*x, weight per channel (dim 1); _prelu_kernel takes the
// weight already shaped to broadcast.
bool prelu(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"self", "input"}, 0);
  const Tensor* w = a.tensor("weight", 1);
  if (!x || !w) return unmodeled(c, "needs self and weight");
  double out = static_cast<double>(x->numel());
  TypeState t;
  t.add(*x);
  t.add(*w);
  c.dtype = t.result();
  c.flops = out * fl(2);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*w) + out * elem_size(c.dtype);
  c.params = describe({x, w});
  return true;
}

// _prelu_kernel_backward(grad_output, self, weight) -> (grad_input, grad_weight):
// dx = x > 0 ? g : w*g; dw = sum(x > 0 ? 0 : x*g).
bool prelu_backward(const OpArgs& a, OpCost& c) {
  const Tensor* g = a.tensor("grad_output", 0);
  const Tensor* x = a.tensor("self", 1);
  const Tensor* w = a.tensor("weight", 2);
  if (!g || !x || !w) return unmodeled(c, "needs grad_output, self, weight");
  double n = static_cast<double>(x->numel());
  c.flops = n * fl(4);                                              // compare, w*g; x*g, accumulate
  c.bytes = tensor_bytes(*g) + tensor_bytes(*x) + tensor_bytes(*w)  // read
            + n * elem_size(x->dtype) + tensor_bytes(*w);           // write dx, dw
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe({g, x, w});
  return true;
}

}  // namespace

void register_pointwise(Registry& r) {
  for (const PwOp& op : kOps) {
    std::vector<Operand> operands = parse_operands(op.operands);
    ModelFn fn = [&op, operands](const OpArgs& a, OpCost& c) { return model(op, operands, a, c); };
    std::string_view names = op.names;
    while (!names.empty()) {
      size_t sp = names.find(' ');
      std::string_view n = names.substr(0, sp);
      names = sp == std::string_view::npos ? std::string_view() : names.substr(sp + 1);
      if (!n.empty()) r.add(std::string(n), "pointwise", fn);
    }
  }
  add_ops(r, "pointwise", {"glu"}, glu);
  add_ops(r, "pointwise", {"glu_backward"}, glu_backward);
  add_ops(r, "pointwise", {"prelu", "_prelu_kernel"}, prelu);
  add_ops(r, "pointwise", {"_prelu_kernel_backward"}, prelu_backward);
}

}  // namespace pyprof::models
