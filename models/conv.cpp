// The conv family: aten::convolution and every op that reaches a convolution kernel (conv1d/2d/3d,
// conv_transpose1d/2d/3d, _convolution, cudnn/miopen/mkldnn/mps/slow/depthwise/nnpack variants,
// conv_tbc) and their backward ops (convolution_backward, convolution_backward_overrideable,
// _slow_conv2d_backward, conv_tbc_backward). Formulas and deviations: docs/ops.md "conv".
//
// FLOPs follow torch.utils.flop_counter.FlopCounterMode's conv_flop_count: 2 * N *
// prod(spatial) * prod(kernel) * w.shape[0] * w.shape[1], where spatial is the output's (the
// input's for a transposed conv); bias adds are not counted. Output sizes are derived from
// stride/padding/dilation/output_padding (the args carry no output shapes).
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

double product(const std::vector<int64_t>& v) {
  double p = 1;
  for (int64_t d : v) p *= static_cast<double>(d);
  return p;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s.push_back('x');
    s.append(std::to_string(v[i]));
  }
  return s;
}

// Where an op keeps its arguments (schema position; -1 when the op has no such argument).
struct Layout {
  int bias = 2, stride = 3, padding = 4, dilation = 5, transposed = -1, output_padding = -1,
      groups = -1, extra_input = -1;  // extra_input: cudnn_convolution_add_relu's z
  bool always_transposed = false;
  bool depthwise = false;  // groups = input channels
};

// A convolution's shapes, all derived.
struct Conv {
  int64_t n = 1, c_in = 0, c_out = 0, groups = 1;
  std::vector<int64_t> in, kernel, out, stride, padding, dilation, output_padding;
  bool transposed = false;
  std::string padding_mode;  // "same"/"valid" for the string-padding overloads
  bool assumed = false;      // some argument was unknown (emit_nvtx): defaults used
  double flops() const {
    // FlopCounterMode: conv_shape = (input if transposed else output) spatial; w[0] * w[1] is
    // c_out * c_in/groups (c_in * c_out/groups for a transposed weight).
    double w01 = transposed ? static_cast<double>(c_in) * static_cast<double>(c_out / groups)
                            : static_cast<double>(c_out) * static_cast<double>(c_in / groups);
    return 2 * static_cast<double>(n) * product(transposed ? in : out) * product(kernel) * w01;
  }
};

// Reads a spatial int list (a single int or a 1-element list is broadcast to nd dims). An
// argument present but not an int list (emit_nvtx writes every non-tensor as {"shape":[]}) uses
// the default and marks the conv as assumed.
std::vector<int64_t> spatial(const OpArgs& args, const char* name, int position, size_t nd,
                             int64_t fallback, bool& assumed) {
  std::vector<int64_t> def(nd, fallback);
  if (position < 0) return def;
  const Value* v = args.arg(name, static_cast<size_t>(position));
  if (!v || v->kind == Value::Kind::kNone) return def;
  if (v->kind == Value::Kind::kInt) return std::vector<int64_t>(nd, v->i);
  if (v->kind == Value::Kind::kIntList) {
    if (v->ints.size() == nd) return v->ints;
    if (v->ints.size() == 1) return std::vector<int64_t>(nd, v->ints[0]);
  }
  assumed = true;
  return def;
}

// Fills `c` from input x, weight w and the layout's arguments; false (with the reason) when the
// shapes do not fit.
bool describe(const OpArgs& args, const Layout& l, const Tensor& x, const Tensor& w, Conv& c,
              std::string& why) {
  if (w.rank() < 3) {
    why = "conv: weight must be [out, in/groups, kernel...]";
    return false;
  }
  size_t nd = static_cast<size_t>(w.rank() - 2);
  bool batched = x.rank() == w.rank();
  if (!batched && x.rank() != w.rank() - 1) {
    why = "conv: input and weight ranks differ";
    return false;
  }
  c.n = batched ? x.shape[0] : 1;
  c.c_in = x.shape[batched ? 1 : 0];
  c.in.assign(x.shape.end() - static_cast<std::ptrdiff_t>(nd), x.shape.end());
  c.kernel.assign(w.shape.begin() + 2, w.shape.end());
  c.transposed = l.always_transposed;
  if (l.transposed >= 0) {
    const Value* t = args.arg("transposed", static_cast<size_t>(l.transposed));
    if (t && (t->kind == Value::Kind::kBool || t->kind == Value::Kind::kInt)) {
      c.transposed = t->i != 0;
    } else if (t && t->kind != Value::Kind::kNone) {
      c.assumed = true;
    }
  }
  // groups: the argument, the input channels for depthwise ops, else derived from the shapes
  // when the argument is unknown (emit_nvtx): c_in / w[1] for a regular conv.
  c.groups = 1;
  if (l.depthwise) {
    c.groups = c.c_in;
  } else if (l.groups >= 0) {
    const Value* g = args.arg("groups", static_cast<size_t>(l.groups));
    if (g && g->kind == Value::Kind::kInt) {
      c.groups = g->i;
    } else if (g && g->kind != Value::Kind::kNone) {
      c.assumed = true;
      if (!c.transposed && w.shape[1] > 0 && c.c_in % w.shape[1] == 0) {
        c.groups = c.c_in / w.shape[1];
      }
    }
  }
  if (c.groups <= 0) {
    why = "conv: bad groups";
    return false;
  }
  if (c.transposed) {
    if (w.shape[0] != c.c_in) {
      why = "conv_transpose: weight[0] differs from input channels";
      return false;
    }
    c.c_out = w.shape[1] * c.groups;
  } else {
    if (w.shape[1] * c.groups != c.c_in) {
      why = "conv: input channels differ from weight[1] * groups";
      return false;
    }
    c.c_out = w.shape[0];
  }
  c.stride = spatial(args, "stride", l.stride, nd, 1, c.assumed);
  c.dilation = spatial(args, "dilation", l.dilation, nd, 1, c.assumed);
  c.output_padding = spatial(args, "output_padding", l.output_padding, nd, 0, c.assumed);
  const Value* pv = l.padding >= 0 ? args.arg("padding", static_cast<size_t>(l.padding)) : nullptr;
  if (pv && pv->kind == Value::Kind::kString) {
    c.padding_mode = pv->s;
    c.padding.assign(nd, 0);
  } else {
    c.padding = spatial(args, "padding", l.padding, nd, 0, c.assumed);
  }
  c.out.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t eff = count_add(count_mul(c.dilation[i], c.kernel[i] - 1), 1);
    if (c.padding_mode == "same") {
      c.out[i] = c.in[i];
    } else if (c.transposed) {
      c.out[i] =
          count_add(count_add(count_mul(c.in[i] - 1, c.stride[i]), -count_mul(2, c.padding[i])),
                    count_add(eff, c.output_padding[i]));
    } else {
      if (c.stride[i] <= 0) {
        why = "conv: bad stride";
        return false;
      }
      int64_t span = count_add(count_add(c.in[i], count_mul(2, c.padding[i])), -eff);
      c.out[i] = span < 0 ? 0 : span / c.stride[i] + 1;
    }
    if (c.out[i] <= 0) {
      why = "conv: empty output";
      return false;
    }
  }
  return true;
}

std::string params(const Conv& c, const std::string& dtype) {
  std::string p = "N=" + std::to_string(c.n) + ",C=" + std::to_string(c.c_in) +
                  ",K=" + std::to_string(c.c_out) + ",in=" + join(c.in) + ",out=" + join(c.out) +
                  ",kernel=" + join(c.kernel) + ",stride=" + join(c.stride) +
                  ",pad=" + (c.padding_mode.empty() ? join(c.padding) : c.padding_mode) +
                  ",dil=" + join(c.dilation) + ",g=" + std::to_string(c.groups);
  if (c.transposed) p += ",transposed,outpad=" + join(c.output_padding);
  p += dtype_suffix(dtype);
  if (c.assumed) p += ",args unknown: defaults assumed";
  return p;
}

// Tensor Core eligibility of an implicit-GEMM conv: channels per group, in and out, aligned
// (fp16/bf16: 8, TF32: 4, fp8/int8: 16); depthwise convs (1 channel per group) are not.
bool conv_tc(const Conv& c, const std::string& dtype) {
  int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
  return tc_eligible(dtype, cout_g, cin_g, cin_g, /*allow_tf32=*/true);
}

const Tensor* input_tensor(const OpArgs& args) {
  const Tensor* x = args.tensor("input", 0);
  return x ? x : args.tensor("self", 0);
}

// A forward convolution with the given layout.
bool conv_forward(const OpArgs& args, OpCost& cost, const Layout& l) {
  const Tensor* x = input_tensor(args);
  const Tensor* w = args.tensor("weight", 1);
  if (!x || !w) return unmodeled(cost, "conv: needs input and weight");
  Conv c;
  std::string why;
  if (!describe(args, l, *x, *w, c, why)) return unmodeled(cost, why);
  std::string dt = x->dtype.empty() ? w->dtype : x->dtype;
  double bytes =
      tensor_bytes(*x) + tensor_bytes(*w) +
      static_cast<double>(c.n) * static_cast<double>(c.c_out) * product(c.out) * elem_size(dt);
  if (l.bias >= 0) {
    const Tensor* b = args.tensor("bias", static_cast<size_t>(l.bias));
    if (b && b->rank() > 0) bytes += tensor_bytes(*b);  // rank 0: emit_nvtx's placeholder
  }
  if (l.extra_input >= 0) {
    if (const Tensor* z = args.tensor("z", static_cast<size_t>(l.extra_input))) {
      bytes += tensor_bytes(*z);
    }
  }
  cost.flops = c.flops();
  cost.bytes = bytes;
  cost.dtype = dt;
  cost.tc_eligible = conv_tc(c, dt);
  cost.params = params(c, dt);
  return true;
}

// Positions of a backward op's arguments.
struct BackwardLayout {
  int stride, padding, dilation, transposed, output_padding, groups, output_mask;
};

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask[grad_input, grad_weight, grad_bias]).
// grad_input and grad_weight cost one forward convolution each (grad_output gives the output
// size); grad_bias is a sum, not counted (FlopCounterMode does not count it either).
// FlopCounterMode counts grad_weight as conv(input^T, grad_output^T), which for groups > 1 is
// groups times the real multiply-adds; we count the real ones (docs/ops.md).
bool conv_backward(const OpArgs& args, OpCost& cost, const BackwardLayout& l) {
  const Tensor* go = args.tensor("grad_output", 0);
  const Tensor* x = args.tensor("input", 1);
  if (!x) x = args.tensor("self", 1);
  const Tensor* w = args.tensor("weight", 2);
  if (!go || !x || !w || w->rank() < 3 || go->rank() != w->rank() || x->rank() != w->rank()) {
    return unmodeled(cost, "convolution_backward: needs grad_output, input, weight of one rank");
  }
  Layout fl;
  fl.bias = -1;
  fl.stride = l.stride;
  fl.padding = l.padding;
  fl.dilation = l.dilation;
  fl.transposed = l.transposed;
  fl.output_padding = l.output_padding;
  fl.groups = l.groups;
  Conv c;
  std::string why;
  if (!describe(args, fl, *x, *w, c, why)) return unmodeled(cost, why);
  // The output is grad_output's size, whatever the arguments said.
  size_t nd = c.in.size();
  c.out.assign(go->shape.end() - static_cast<std::ptrdiff_t>(nd), go->shape.end());
  c.c_out = go->shape[1];
  std::vector<int64_t> mask =
      args.ints_or("output_mask", static_cast<size_t>(l.output_mask), {1, 1, 1});
  mask.resize(3, 0);
  std::string dt = go->dtype.empty() ? x->dtype : go->dtype;
  double flops = 0, bytes = tensor_bytes(*go);
  if (mask[0]) {  // grad_input: read weight, write an input-sized gradient
    flops += c.flops();
    bytes += tensor_bytes(*w) + tensor_bytes(*x);
  }
  if (mask[1]) {  // grad_weight: read input, write a weight-sized gradient
    flops += c.flops();
    bytes += tensor_bytes(*x) + tensor_bytes(*w);
  }
  if (mask[2]) bytes += static_cast<double>(c.c_out) * elem_size(dt);  // grad_bias
  cost.flops = flops;
  cost.bytes = bytes;
  cost.dtype = dt;
  cost.tc_eligible = conv_tc(c, dt);
  std::string p = params(c, dt);
  p += ",mask=";
  for (int64_t m : mask) p += m ? "1" : "0";
  cost.params = std::move(p);
  return true;
}

// conv_tbc(self[T, B, C_in], weight[k, C_in, C_out], bias[C_out], pad): a 1-D conv over time,
// T' = T + 2 * pad - k + 1.
bool conv_tbc(const OpArgs& args, OpCost& cost) {
  const Tensor* x = args.tensor("self", 0);
  const Tensor* w = args.tensor("weight", 1);
  const Tensor* b = args.tensor("bias", 2);
  if (!x || !w || x->rank() != 3 || w->rank() != 3 || x->shape[2] != w->shape[1]) {
    return unmodeled(cost, "conv_tbc: expects self[T,B,C], weight[k,C,K]");
  }
  int64_t t_out =
      count_add(count_add(x->shape[0], count_mul(2, args.int_or("pad", 3, 0))), 1 - w->shape[0]);
  if (t_out <= 0) return unmodeled(cost, "conv_tbc: empty output");
  double flops = 2 * static_cast<double>(t_out) * static_cast<double>(x->shape[1]) *
                 static_cast<double>(w->shape[0]) * static_cast<double>(w->shape[1]) *
                 static_cast<double>(w->shape[2]);
  double out = static_cast<double>(t_out) * static_cast<double>(x->shape[1]) *
               static_cast<double>(w->shape[2]);
  cost.flops = flops;
  cost.bytes =
      tensor_bytes(*x) + tensor_bytes(*w) + (b ? tensor_bytes(*b) : 0) + out * elem_size(x->dtype);
  cost.dtype = x->dtype;
  cost.tc_eligible = tc_eligible(x->dtype, w->shape[2], w->shape[1], w->shape[1], true);
  cost.params = "T=" + std::to_string(x->shape[0]) + ",B=" + std::to_string(x->shape[1]) +
                ",C=" + std::to_string(x->shape[2]) + ",K=" + std::to_string(w->shape[2]) +
                ",kernel=" + std::to_string(w->shape[0]) + dtype_suffix(x->dtype);
  return true;
}

// conv_tbc_backward(self=grad_output[T', B, K], input, weight, bias, pad): grad_input and
// grad_weight, one forward conv each.
bool conv_tbc_backward(const OpArgs& args, OpCost& cost) {
  const Tensor* go = args.tensor("self", 0);
  const Tensor* x = args.tensor("input", 1);
  const Tensor* w = args.tensor("weight", 2);
  if (!go || !x || !w || go->rank() != 3 || x->rank() != 3 || w->rank() != 3) {
    return unmodeled(cost, "conv_tbc_backward: expects 3-D grad, input, weight");
  }
  double fwd = 2 * static_cast<double>(go->shape[0]) * static_cast<double>(x->shape[1]) *
               static_cast<double>(w->shape[0]) * static_cast<double>(w->shape[1]) *
               static_cast<double>(w->shape[2]);
  cost.flops = 2 * fwd;
  cost.bytes = tensor_bytes(*go) + 2 * tensor_bytes(*x) + 2 * tensor_bytes(*w) +
               static_cast<double>(w->shape[2]) * elem_size(go->dtype);
  cost.dtype = go->dtype;
  cost.tc_eligible = tc_eligible(go->dtype, w->shape[2], w->shape[1], w->shape[1], true);
  cost.params = "T=" + std::to_string(x->shape[0]) + ",B=" + std::to_string(x->shape[1]) +
                ",C=" + std::to_string(x->shape[2]) + ",K=" + std::to_string(w->shape[2]) +
                ",kernel=" + std::to_string(w->shape[0]) + dtype_suffix(go->dtype);
  return true;
}

ModelFn forward(Layout l) {
  return [l](const OpArgs& args, OpCost& cost) { return conv_forward(args, cost, l); };
}

ModelFn backward(BackwardLayout l) {
  return [l](const OpArgs& args, OpCost& cost) { return conv_backward(args, cost, l); };
}

}  // namespace

void register_conv(Registry& r) {
  const std::string f = "conv";
  // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
  Layout generic;
  generic.transposed = 6;
  generic.output_padding = 7;
  generic.groups = 8;
  for (const char* op : {"convolution", "_convolution", "convolution_overrideable"}) {
    r.add(op, f, forward(generic));
  }
  // conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups); padding may be a
  // string ("same"/"valid", the .padding overload); _convolution_mode has the same layout.
  Layout convnd;
  convnd.groups = 6;
  for (const char* op : {"conv1d", "conv2d", "conv3d", "_convolution_mode",
                         "cudnn_convolution_relu", "miopen_convolution_relu"}) {
    r.add(op, f, forward(convnd));
  }
  // conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups,
  // dilation)
  Layout convt;
  convt.output_padding = 5;
  convt.groups = 6;
  convt.dilation = 7;
  convt.always_transposed = true;
  for (const char* op : {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}) {
    r.add(op, f, forward(convt));
  }
  // cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)
  Layout cudnn;
  cudnn.bias = -1;
  cudnn.padding = 2;
  cudnn.stride = 3;
  cudnn.dilation = 4;
  cudnn.groups = 5;
  r.add("cudnn_convolution", f, forward(cudnn));
  // cudnn_convolution_transpose(self, weight, padding, output_padding, stride, dilation, groups)
  Layout cudnn_t;
  cudnn_t.bias = -1;
  cudnn_t.padding = 2;
  cudnn_t.output_padding = 3;
  cudnn_t.stride = 4;
  cudnn_t.dilation = 5;
  cudnn_t.groups = 6;
  cudnn_t.always_transposed = true;
  r.add("cudnn_convolution_transpose", f, forward(cudnn_t));
  // mkldnn/miopen/mps(self, weight, bias, padding, stride, dilation, groups, ...)
  Layout mkldnn;
  mkldnn.padding = 3;
  mkldnn.stride = 4;
  mkldnn.dilation = 5;
  mkldnn.groups = 6;
  for (const char* op : {"mkldnn_convolution", "miopen_convolution", "miopen_depthwise_convolution",
                         "_mps_convolution"}) {
    r.add(op, f, forward(mkldnn));
  }
  // miopen_convolution_transpose(self, weight, bias, padding, output_padding, stride, dilation,
  // groups, ...)
  Layout miopen_t;
  miopen_t.padding = 3;
  miopen_t.output_padding = 4;
  miopen_t.stride = 5;
  miopen_t.dilation = 6;
  miopen_t.groups = 7;
  miopen_t.always_transposed = true;
  r.add("miopen_convolution_transpose", f, forward(miopen_t));
  // cudnn/miopen_convolution_add_relu(self, weight, z, alpha, bias, stride, padding, dilation,
  // groups): z is read too.
  Layout add_relu;
  add_relu.extra_input = 2;
  add_relu.bias = 4;
  add_relu.stride = 5;
  add_relu.padding = 6;
  add_relu.dilation = 7;
  add_relu.groups = 8;
  r.add("cudnn_convolution_add_relu", f, forward(add_relu));
  r.add("miopen_convolution_add_relu", f, forward(add_relu));
  // (self, weight, kernel_size, bias, stride, padding): groups 1, dilation 1
  Layout slow;
  slow.bias = 3;
  slow.stride = 4;
  slow.padding = 5;
  slow.dilation = -1;
  for (const char* op :
       {"_slow_conv2d_forward", "thnn_conv2d", "slow_conv3d", "slow_conv3d_forward"}) {
    r.add(op, f, forward(slow));
  }
  // (self, weight, kernel_size, bias, stride, padding, dilation)
  Layout dilated = slow;
  dilated.dilation = 6;
  r.add("slow_conv_dilated2d", f, forward(dilated));
  r.add("slow_conv_dilated3d", f, forward(dilated));
  Layout depthwise = dilated;
  depthwise.depthwise = true;
  r.add("_conv_depthwise2d", f, forward(depthwise));
  r.add("conv_depthwise3d", f, forward(depthwise));
  // slow_conv_transpose2d/3d(self, weight, kernel_size, bias, stride, padding, output_padding,
  // dilation)
  Layout slow_t = slow;
  slow_t.output_padding = 6;
  slow_t.dilation = 7;
  slow_t.always_transposed = true;
  r.add("slow_conv_transpose2d", f, forward(slow_t));
  r.add("slow_conv_transpose3d", f, forward(slow_t));
  // _nnpack_spatial_convolution(input, weight, bias, padding, stride)
  Layout nnpack;
  nnpack.padding = 3;
  nnpack.stride = 4;
  nnpack.dilation = -1;
  r.add("_nnpack_spatial_convolution", f, forward(nnpack));
  r.add("conv_tbc", f, conv_tbc);

  // Backward.
  r.add("convolution_backward", f, backward({4, 5, 6, 7, 8, 9, 10}));
  r.add("convolution_backward_overrideable", f, backward({3, 4, 5, 6, 7, 8, 9}));
  // _slow_conv2d_backward(grad_output, self, weight, kernel_size, stride, padding, output_mask)
  r.add("_slow_conv2d_backward", f, backward({4, 5, -1, -1, -1, -1, 6}));
  r.add("conv_tbc_backward", f, conv_tbc_backward);
}

}  // namespace pyprof::models
