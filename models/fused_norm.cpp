// The norm family's library ops: the fused RMS norms of serving stacks (vLLM's _C, SGLang's
// sgl_kernel, AMD's aiter and vLLM's ROCm wrappers of it), with a residual add and FP8
// quantization fused in, and the layer/RMS norms apex and Liger run as autograd Functions
// (recorded under the Function's class name with its arguments, by position). Each is registered
// under its qualified name ("_C::rms_norm"), as its schema is not aten::rms_norm's. Formulas:
// docs/ops.md "Library and serving ops".
//
// One formula, aten::rms_norm's (models/norm.cpp), counted per element of the input:
//   x*x accumulated (2), x * rstd (1), * weight (1 when given), * (1 + weight) for Gemma's norm
//   (+1), the fused residual add (+1), FP8 quantization: * 1/scale and the clamp to the format's
//   range (+3), with the dynamic scale's absolute maximum first (+2);
// and per row: / D, + eps (2) and one rsqrt, the dynamic scale (max / format max: +1).
// Bytes: every tensor argument is read or written once at its own size and dtype: the input
// (read; written too when the op normalizes in place), the residual (read, and written back with
// the sum), the output, the weight, the scales; an op that returns its output writes it at the
// input's size and dtype. No statistics are written (these kernels keep rstd in registers).
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::fl;
using shape_util::nbytes;
using shape_util::num_str;
using shape_util::unmodeled;

// An argument: its schema name and its position (for records without names).
struct Arg {
  const char* name = nullptr;
  int position = -1;
  bool given() const { return position >= 0; }
};

enum class Quant : uint8_t { kNone, kStatic, kDynamicPerToken };

// Where one RMS-norm variant keeps its arguments, and what it does.
struct RmsSpec {
  Arg out;    // a separate output, written (absent: the op returns it, or works in place)
  Arg input;  // read
  bool in_place = false;     // the normalized rows overwrite `input`
  bool returns_out = false;  // writes a new tensor the size and dtype of `input`
  Arg residual;              // added to the input before the norm; read
  Arg residual_out;          // where the sum goes: written (== residual: in place)
  Arg weight;
  bool gemma = false;  // * (1 + weight)
  Quant quant = Quant::kNone;
  Arg scale;     // the quantization scale: read (static) or written (dynamic per token)
  Arg scale_ub;  // an upper bound of the dynamic scale, read when given
};

const Tensor* tensor_at(const OpArgs& a, const Arg& arg) {
  if (!arg.given()) return nullptr;
  const Tensor* t = a.tensor(arg.name, static_cast<size_t>(arg.position));
  // A 0-dim placeholder without dtype is emit_nvtx's "None".
  if (t && t->rank() == 0 && t->dtype.empty()) return nullptr;
  return t;
}

bool rms_variant(const OpArgs& a, OpCost& c, const RmsSpec& s) {
  const Tensor* x = tensor_at(a, s.input);
  const Tensor* w = tensor_at(a, s.weight);
  if (!x || x->rank() == 0) return unmodeled(c, "rms norm: needs the input tensor");
  // The rows are normalized over the last dim (the weight's size).
  const double d = static_cast<double>(x->dim(-1));
  if (w && static_cast<double>(w->numel()) != d) {
    return unmodeled(c, "rms norm: the weight's size is not the input's last dim");
  }
  const double e = static_cast<double>(x->numel());
  const double rows = d > 0 ? e / d : 0;
  const Tensor* res = tensor_at(a, s.residual);
  const Tensor* res_out =
      s.residual_out.position == s.residual.position ? res : tensor_at(a, s.residual_out);
  const Tensor* out = tensor_at(a, s.out);
  const Tensor* scale = tensor_at(a, s.scale);
  if (s.residual.given() && !res) return unmodeled(c, "rms norm: needs the residual tensor");
  double per_elem = 3 + (w ? 1 : 0) + (s.gemma ? 1 : 0) + (res ? 1 : 0);
  double per_row = 0;
  if (s.quant == Quant::kStatic) per_elem += 3;
  if (s.quant == Quant::kDynamicPerToken) {
    per_elem += 5;
    per_row += tensor_at(a, s.scale_ub) ? 2 : 1;
  }
  c.flops = e * fl(per_elem) + rows * (fl(2, 1) + fl(per_row));
  double bytes = tensor_bytes(*x) + nbytes(w);
  if (s.in_place || s.returns_out) bytes += tensor_bytes(*x);
  if (out) bytes += tensor_bytes(*out);
  if (res) bytes += tensor_bytes(*res);
  if (res_out) bytes += tensor_bytes(*res_out);
  bytes += nbytes(scale) + nbytes(tensor_at(a, s.scale_ub));
  c.bytes = bytes;
  c.dtype = canonical_dtype(x->dtype);
  std::string p = shape_util::describe(*x) + ",D=" + num_str(d);
  if (res) p += ",+residual";
  if (s.gemma) p += ",gemma";
  if (s.quant != Quant::kNone && out) p += ",quant=" + short_dtype(out->dtype);
  c.params = std::move(p);
  return true;
}

ModelFn rms(RmsSpec s) {
  return [s](const OpArgs& a, OpCost& c) { return rms_variant(a, c, s); };
}

// ---- apex's and Liger's norms: ATen's formulas over their arguments ----
// apex's custom ops and autograd Functions, and Liger's Functions, take the arguments of
// native_layer_norm / rms_norm and their backward ops in another order (Functions are recorded
// by position only). Their cost is ATen's model (models/norm.cpp) on the same arguments, moved
// to ATen's names: one formula for both.
struct AtenArg {
  const char* aten_name;
  Arg from;
};

bool as_aten(const OpArgs& a, OpCost& c, const char* aten_op, const std::vector<AtenArg>& map) {
  OpArgs moved;
  for (const AtenArg& m : map) {
    if (!m.from.given()) continue;
    if (const Value* v = a.arg(m.from.name, static_cast<size_t>(m.from.position))) {
      moved.add(m.aten_name, *v);
    }
  }
  const ModelFn* fn = registry().find(aten_op, nullptr);
  return fn && (*fn)(moved, c);
}

ModelFn aten_model(const char* aten_op, std::vector<AtenArg> map) {
  return [aten_op, map](const OpArgs& a, OpCost& c) { return as_aten(a, c, aten_op, map); };
}

}  // namespace

void register_fused_norm(Registry& r) {
  const std::string f = "norm";
  // ---- vLLM (csrc/torch_bindings.cpp, namespace _C) ----
  RmsSpec plain;  // rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon)
  plain.out = {"result", 0};
  plain.input = {"input", 1};
  plain.weight = {"weight", 2};
  r.add("_C::rms_norm", f, rms(plain));
  RmsSpec fused;  // fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float eps)
  fused.input = {"input", 0};
  fused.in_place = true;
  fused.residual = fused.residual_out = {"residual", 1};
  fused.weight = {"weight", 2};
  r.add("_C::fused_add_rms_norm", f, rms(fused));
  // rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor weight, Tensor scale, float)
  RmsSpec plain_fp8 = plain;
  plain_fp8.quant = Quant::kStatic;
  plain_fp8.scale = {"scale", 3};
  r.add("_C::rms_norm_static_fp8_quant", f, rms(plain_fp8));
  // fused_add_rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor! residual,
  // Tensor weight, Tensor scale, float epsilon)
  RmsSpec fused_fp8;
  fused_fp8.out = {"result", 0};
  fused_fp8.input = {"input", 1};
  fused_fp8.residual = fused_fp8.residual_out = {"residual", 2};
  fused_fp8.weight = {"weight", 3};
  fused_fp8.quant = Quant::kStatic;
  fused_fp8.scale = {"scale", 4};
  r.add("_C::fused_add_rms_norm_static_fp8_quant", f, rms(fused_fp8));
  // rms_norm_dynamic_per_token_quant(Tensor! result, Tensor input, Tensor weight, Tensor! scale,
  // float epsilon, Tensor? scale_ub, Tensor!? residual)
  RmsSpec dynamic = plain;
  dynamic.quant = Quant::kDynamicPerToken;
  dynamic.scale = {"scale", 3};
  dynamic.scale_ub = {"scale_ub", 5};
  r.add("_C::rms_norm_dynamic_per_token_quant", f, [dynamic](const OpArgs& a, OpCost& c) {
    RmsSpec s = dynamic;
    if (tensor_at(a, {"residual", 6})) s.residual = s.residual_out = {"residual", 6};
    return rms_variant(a, c, s);
  });
  // ---- SGLang (sgl-kernel, namespace sgl_kernel): (output, input, weight, eps, enable_pdl) and
  // the in-place fused add (input, residual, weight, eps, enable_pdl) ----
  RmsSpec sgl = plain;
  sgl.out = {"output", 0};
  r.add("sgl_kernel::rmsnorm", f, rms(sgl));
  r.add("sgl_kernel::fused_add_rmsnorm", f, rms(fused));
  RmsSpec sgl_gemma = sgl;
  sgl_gemma.gemma = true;
  r.add("sgl_kernel::gemma_rmsnorm", f, rms(sgl_gemma));
  RmsSpec fused_gemma = fused;
  fused_gemma.gemma = true;
  r.add("sgl_kernel::gemma_fused_add_rmsnorm", f, rms(fused_gemma));
  // ---- aiter (aiter/ops/rmsnorm.py) ----
  RmsSpec aiter_out = plain;  // rmsnorm(out, input, weight, epsilon), rms_norm_cu(...)
  aiter_out.out = {"out", 0};
  r.add("aiter::rmsnorm", f, rms(aiter_out));
  r.add("aiter::rms_norm_cu", f, rms(aiter_out));
  // rms_norm / rmsnorm2d_fwd / rmsnorm2d_fwd_ck(input, weight, epsilon,
  // use_model_sensitive_rmsnorm) -> Tensor
  RmsSpec aiter_ret;
  aiter_ret.input = {"input", 0};
  aiter_ret.weight = {"weight", 1};
  aiter_ret.returns_out = true;
  r.add("aiter::rms_norm", f, rms(aiter_ret));
  r.add("aiter::rmsnorm2d_fwd", f, rms(aiter_ret));
  r.add("aiter::rmsnorm2d_fwd_ck", f, rms(aiter_ret));
  // add_rmsnorm / rmsnorm2d_fwd_with_add(_ck)(out, input, residual_in, residual_out, weight,
  // epsilon[, use_model_sensitive_rmsnorm])
  RmsSpec aiter_add;
  aiter_add.out = {"out", 0};
  aiter_add.input = {"input", 1};
  aiter_add.residual = {"residual_in", 2};
  aiter_add.residual_out = {"residual_out", 3};
  aiter_add.weight = {"weight", 4};
  r.add("aiter::add_rmsnorm", f, rms(aiter_add));
  r.add("aiter::rmsnorm2d_fwd_with_add", f, rms(aiter_add));
  r.add("aiter::rmsnorm2d_fwd_with_add_ck", f, rms(aiter_add));
  // fused_add_rms_norm_cu(input, residual_in, weight, epsilon): in place, as vLLM's
  RmsSpec aiter_fused = fused;
  aiter_fused.residual = aiter_fused.residual_out = {"residual_in", 1};
  r.add("aiter::fused_add_rms_norm_cu", f, rms(aiter_fused));
  // vLLM's ROCm wrappers (vllm/_aiter_ops.py): rocm_aiter_rms_norm(x, weight, variance_epsilon)
  // -> Tensor; rocm_aiter_rmsnorm2d_fwd_with_add(x, residual, weight, variance_epsilon) ->
  // (out, residual_out)
  RmsSpec vllm_rocm = aiter_ret;
  vllm_rocm.input = {"x", 0};
  r.add("vllm::rocm_aiter_rms_norm", f, rms(vllm_rocm));
  RmsSpec vllm_rocm_add;
  vllm_rocm_add.input = {"x", 0};
  vllm_rocm_add.returns_out = true;
  vllm_rocm_add.residual = {"residual", 1};
  vllm_rocm_add.weight = {"weight", 2};
  r.add("vllm::rocm_aiter_rmsnorm2d_fwd_with_add", f, [vllm_rocm_add](const OpArgs& a, OpCost& c) {
    // The sum is returned as a new tensor the residual's size: written once more.
    if (!rms_variant(a, c, vllm_rocm_add)) return false;
    c.bytes += tensor_bytes(*tensor_at(a, vllm_rocm_add.residual));
    return true;
  });
  // ---- apex (apex/normalization/fused_layer_norm.py) ----
  // Custom ops: fused_layer_norm_affine_fwd(input, weight, bias, normalized_shape, eps,
  // memory_efficient) -> (out, mean, invvar); fused_rms_norm_affine_fwd(input, weight,
  // normalized_shape, eps, memory_efficient) -> (out, invvar); fused_rms_norm_fwd(input,
  // normalized_shape, eps, memory_efficient). The autograd Functions of older releases take the
  // same arguments (FusedLayerNormFunction: input, normalized_shape, eps, memory_efficient).
  const ModelFn ln_affine =
      aten_model("native_layer_norm", {{"input", {"input", 0}},
                                       {"weight", {"weight", 1}},
                                       {"bias", {"bias", 2}},
                                       {"normalized_shape", {"normalized_shape", 3}}});
  const ModelFn ln_plain =
      aten_model("native_layer_norm",
                 {{"input", {"input", 0}}, {"normalized_shape", {"normalized_shape", 1}}});
  const ModelFn rms_affine =
      aten_model("rms_norm", {{"input", {"input", 0}},
                              {"weight", {"weight", 1}},
                              {"normalized_shape", {"normalized_shape", 2}}});
  const ModelFn rms_plain = aten_model(
      "rms_norm", {{"input", {"input", 0}}, {"normalized_shape", {"normalized_shape", 1}}});
  r.add("apex::fused_layer_norm_affine_fwd", f, ln_affine);
  r.add("apex::fused_rms_norm_affine_fwd", f, rms_affine);
  r.add("apex::fused_rms_norm_fwd", f, rms_plain);
  r.add("FusedLayerNormAffineFunction", f, ln_affine);
  r.add("FusedLayerNormAffineMixedDtypesFunction", f, ln_affine);
  r.add("FusedLayerNormFunction", f, ln_plain);
  r.add("FusedRMSNormAffineFunction", f, rms_affine);
  r.add("FusedRMSNormAffineMixedDtypesFunction", f, rms_affine);
  r.add("FusedRMSNormFunction", f, rms_plain);
  // Backward: fused_layer_norm_affine_bwd(grad_output, mean, invvar, input_or_output,
  // normalized_shape, weight, bias, eps, memory_efficient) -> (grad_input, grad_weight,
  // grad_bias); fused_rms_norm_affine_bwd(grad_output, invvar, input_or_output,
  // normalized_shape, weight, eps, memory_efficient); fused_rms_norm_bwd(grad_output, invvar,
  // input_or_output, normalized_shape, eps, memory_efficient) -> grad_input.
  r.add("apex::fused_layer_norm_affine_bwd", f,
        aten_model("native_layer_norm_backward", {{"grad_out", {"grad_output", 0}},
                                                  {"mean", {"mean", 1}},
                                                  {"rstd", {"invvar", 2}},
                                                  {"input", {"input_or_output", 3}},
                                                  {"normalized_shape", {"normalized_shape", 4}},
                                                  {"weight", {"weight", 5}},
                                                  {"bias", {"bias", 6}}}));
  r.add("apex::fused_rms_norm_affine_bwd", f,
        aten_model("_fused_rms_norm_backward", {{"grad_out", {"grad_output", 0}},
                                                {"rstd", {"invvar", 1}},
                                                {"input", {"input_or_output", 2}},
                                                {"normalized_shape", {"normalized_shape", 3}},
                                                {"weight", {"weight", 4}}}));
  r.add("apex::fused_rms_norm_bwd", f,
        aten_model("_fused_rms_norm_backward", {{"grad_out", {"grad_output", 0}},
                                                {"rstd", {"invvar", 1}},
                                                {"input", {"input_or_output", 2}},
                                                {"normalized_shape", {"normalized_shape", 3}}}));
  // ---- Liger (liger_kernel/ops), autograd Functions recorded by position ----
  // LigerRMSNormFunction(X, W, eps, offset, casting_mode, in_place, ...): rstd kept for
  // backward; LigerLayerNormFunction(X, W, B, eps): mean and rstd kept.
  r.add("LigerRMSNormFunction", f,
        aten_model("rms_norm", {{"input", {"X", 0}}, {"weight", {"W", 1}}}));
  r.add("LigerLayerNormFunction", f,
        aten_model("native_layer_norm",
                   {{"input", {"X", 0}}, {"weight", {"W", 1}}, {"bias", {"B", 2}}}));
}

}  // namespace pyprof::models
