// Softmax family: softmax, log_softmax and their backward ops (docs/ops.md "softmax").
//
// E = elements, R = rows (E / size of the softmax dim). Per element (shape_util weights):
//   softmax      max (1), x - max (1), exp, sum (1), * 1/sum (1)          = 4 + 1 exp
//   log_softmax  max (1), x - max (1), exp, sum (1), x - max - log(sum) (1) = 4 + 1 exp
// per row: 1/sum (1) for softmax, log(sum) (1 function) for log_softmax.
// Backward: softmax dx = y*(g - sum(g*y)): 4; log_softmax dx = g - exp(y)*sum(g): 3 + 1 exp.
// Bytes: the ideal single pass: input (and grad) read once, output written once.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

// Size of the softmax dimension: `dim` when readable; None or absent (legacy F.softmax without
// dim) takes PyTorch's implicit choice; otherwise (emit_nvtx `[]`) the last dimension.
double dim_size(const Tensor& x, const Value* dim) {
  if (dim && dim->kind == Value::Kind::kInt)
    return static_cast<double>(x.dim(static_cast<int>(dim->i)));
  if (!dim || dim->kind == Value::Kind::kNone) {
    int r = x.rank();
    return static_cast<double>(x.dim((r == 0 || r == 1 || r == 3) ? 0 : 1));
  }
  return static_cast<double>(x.dim(-1));
}

// softmax(self, dim, dtype) / _softmax(self, dim, half_to_float) / log_softmax / _log_softmax /
// _safe_softmax (+1 select per element for fully masked rows).
ModelFn softmax(bool log, double extra) {
  return [log, extra](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"self", "input"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    double e = static_cast<double>(x->numel());
    double d = dim_size(*x, a.arg("dim", 1));
    double rows = d > 0 ? e / d : 0;
    std::string out = canonical_dtype(x->dtype);
    if (std::string dt = dtype_value(a.arg("dtype", 2)); !dt.empty()) out = dt;
    if (a.get("half_to_float") && a.bool_or("half_to_float", 2, false)) out = "float32";
    c.flops = e * fl(4 + extra, 1) + rows * (log ? fl(0, 1) : fl(1));
    c.bytes = tensor_bytes(*x) + e * elem_size(out);
    c.dtype = out;
    c.params = describe(*x) + ",D=" + num_str(d);
    return true;
  };
}

// _softmax_backward_data(grad_output, output, dim, input_dtype) and the log_softmax one.
ModelFn softmax_backward(bool log) {
  return [log](const OpArgs& a, OpCost& c) {
    const Tensor* g = a.tensor("grad_output", 0);
    const Tensor* y = a.tensor("output", 1);
    if (!g || !y) return unmodeled(c, "needs grad_output and output");
    double e = static_cast<double>(y->numel());
    std::string out = canonical_dtype(g->dtype);
    if (std::string dt = dtype_value(a.arg("input_dtype", 3)); !dt.empty()) out = dt;
    c.flops = e * (log ? fl(3, 1) : fl(4));
    c.bytes = tensor_bytes(*g) + tensor_bytes(*y) + e * elem_size(out);
    c.dtype = out;
    c.params = describe(*y) + ",D=" + num_str(dim_size(*y, a.arg("dim", 2)));
    return true;
  };
}

}  // namespace

void register_softmax(Registry& r) {
  add_ops(r, "softmax", {"softmax", "_softmax", "special_softmax"}, softmax(false, 0));
  add_ops(r, "softmax", {"_safe_softmax"}, softmax(false, 1));
  add_ops(r, "softmax", {"log_softmax", "_log_softmax", "special_log_softmax"}, softmax(true, 0));
  add_ops(r, "softmax", {"_softmax_backward_data"}, softmax_backward(false));
  add_ops(r, "softmax", {"_log_softmax_backward_data"}, softmax_backward(true));
}

}  // namespace pyprof::models
