// The pointwise family's library ops: the gated activations of serving stacks (vLLM's and
// SGLang's silu_and_mul and its kin, Liger's SiLU/GELU-mul Functions), rotary position
// embeddings (vLLM, SGLang), and the FP8/INT8 quantization kernels (vLLM). Registered under
// their qualified names. Formulas: docs/ops.md "Library and serving ops".
//
// Counts follow the pointwise family's per-element table (docs/ops.md "pointwise"): silu 4+1,
// gelu 4+1 (erf) or 8+1 (tanh), a multiply 1. Bytes: inputs read once, outputs written once.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::describe;
using shape_util::fl;
using shape_util::nbytes;
using shape_util::num_str;
using shape_util::unmodeled;

// ---- gated activations: out[..., d] = act(x[..., :d]) * x[..., d:] ----
// (out, input) as vLLM's and SGLang's ops take them; `per_out` = the activation's count + 1 for
// the multiply, per output element. mul_and_silu computes x[..., :d] * act(x[..., d:]): the same.
bool gated(const OpArgs& a, OpCost& c, double arith, double trans, const char* what) {
  const Tensor* out = a.tensor("out", 0);
  if (!out) out = a.tensor("result", 0);
  const Tensor* x = a.tensor("input", 1);
  if (!out || !x || out->rank() == 0 || x->rank() == 0) {
    return unmodeled(c, std::string(what) + ": needs out and input");
  }
  if (x->dim(-1) != 2 * out->dim(-1) || x->numel() != 2 * out->numel()) {
    return unmodeled(c, std::string(what) + ": input's last dim is not twice the output's");
  }
  const double o = static_cast<double>(out->numel());
  c.flops = o * fl(arith + 1, trans);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*out);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",d=" + std::to_string(out->dim(-1));
  return true;
}

ModelFn gated_model(double arith, double trans, const char* what) {
  return [=](const OpArgs& a, OpCost& c) { return gated(a, c, arith, trans, what); };
}

// Liger's LigerSiLUMulFunction(a, b) / LigerGELUMulFunction(a, b): act(a) * b, a and b the same
// shape, by position.
bool gated_pair(const OpArgs& a, OpCost& c, double arith, double trans) {
  const Tensor* x = a.tensor("a", 0);
  const Tensor* y = a.tensor("b", 1);
  if (!x || !y || x->shape != y->shape) return unmodeled(c, "gated mul: needs a and b, one shape");
  const double e = static_cast<double>(x->numel());
  c.flops = e * fl(arith + 1, trans);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*y) + tensor_bytes(*x);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x);
  return true;
}

// ---- rotary embedding ----
// rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size,
// Tensor cos_sin_cache, bool is_neox) (vLLM _C, SGLang sgl_kernel): query [T, Hq*head_size] or
// [T, Hq, head_size] (or [B, S, ...]), key likewise with Hkv heads (or None), cos_sin_cache
// [max_position, rot_dim] (cos and sin halves). Each token's heads rotate their first rot_dim
// elements in pairs: (x1·cos − x2·sin, x2·cos + x1·sin) = 6 FLOPs a pair, 3 an element. Bytes:
// positions read; the rotated part of query and key read and written in place; one cache row
// (rot_dim elements) per token, at most the cache's rows.
bool rotary(const OpArgs& a, OpCost& c) {
  const Tensor* pos = a.tensor("positions", 0);
  const Tensor* q = a.tensor("query", 1);
  const Tensor* k = a.tensor("key", 2);
  if (k && k->rank() == 0 && k->dtype.empty()) k = nullptr;
  const Tensor* cache = a.tensor("cos_sin_cache", 4);
  const int64_t head = a.int_or("head_size", 3, 0);
  if (!pos || !q || !cache || cache->rank() != 2 || head <= 0) {
    return unmodeled(c, "rotary_embedding: needs positions, query, head_size, cos_sin_cache");
  }
  const double tokens = static_cast<double>(pos->numel());
  const double rot = static_cast<double>(cache->dim(-1));
  if (tokens <= 0 || rot > static_cast<double>(head)) {
    return unmodeled(c, "rotary_embedding: rotary dim larger than the head");
  }
  auto heads = [&](const Tensor* t) {
    return t ? static_cast<double>(t->numel()) / (tokens * static_cast<double>(head)) : 0.0;
  };
  const double hq = heads(q), hkv = heads(k);
  const double rotated = tokens * (hq + hkv) * rot;
  c.flops = rotated * fl(3);
  const double rows = std::min(tokens, static_cast<double>(cache->dim(0)));
  c.bytes = tensor_bytes(*pos) + 2 * nbytes(rotated, q->dtype) + nbytes(rows * rot, cache->dtype);
  c.dtype = canonical_dtype(q->dtype);
  std::string p = "T=" + num_str(tokens) + ",Hq=" + num_str(hq);
  if (k) p += ",Hkv=" + num_str(hkv);
  p += ",D=" + std::to_string(head);
  if (rot != static_cast<double>(head)) p += ",rot=" + num_str(rot);
  p += shape_util::dtype_suffix(q->dtype);
  c.params = std::move(p);
  return true;
}

// Liger's LigerRopeFunction(q, k, cos, sin, position_ids, unsqueeze_dim): q [B, Hq, S, D],
// k [B, Hkv, S, D], cos/sin [1 or B, S, D] (the two halves duplicated). Every element rotates:
// 3 FLOPs; q and k read and written, cos and sin read.
bool liger_rope(const OpArgs& a, OpCost& c) {
  const Tensor* q = a.tensor("q", 0);
  const Tensor* k = a.tensor("k", 1);
  const Tensor* cos = a.tensor("cos", 2);
  const Tensor* sin = a.tensor("sin", 3);
  if (!q || !k || !cos || !sin) return unmodeled(c, "rope: needs q, k, cos, sin");
  const double e = static_cast<double>(q->numel()) + static_cast<double>(k->numel());
  c.flops = e * fl(3);
  c.bytes = 2 * (tensor_bytes(*q) + tensor_bytes(*k)) + tensor_bytes(*cos) + tensor_bytes(*sin);
  c.dtype = canonical_dtype(q->dtype);
  c.params = describe(*q) + "," + describe(*k);
  return true;
}

// ---- quantization (vLLM) ----
// Static: out = clamp(x * (1/scale)) to the format's range: 3 per element (the reciprocal once).
// Dynamic per tensor / per token: the absolute maximum first (abs, max: 2 per element), then the
// scale (max / format max: 1 per tensor or per token, +1 with an upper bound) and the static
// step. INT8 rounds (+1) and adds the zero point when given (+1). Bytes: input read, output
// (1 byte an element) written, the scale read (static) or written (dynamic), azp likewise.
enum class Scaling : uint8_t { kStatic, kDynamicTensor, kDynamicToken };

bool quantize(const OpArgs& a, OpCost& c, Scaling s, bool int8) {
  const Tensor* out = a.tensor("result", 0);
  const Tensor* x = a.tensor("input", 1);
  const Tensor* scale = a.tensor("scale", 2);
  if (!out || !x || x->rank() == 0) return unmodeled(c, "quant: needs result and input");
  if (out->numel() != x->numel()) return unmodeled(c, "quant: result and input sizes differ");
  const Tensor* azp = int8 ? a.tensor("azp", 3) : nullptr;
  if (azp && azp->rank() == 0 && azp->dtype.empty()) azp = nullptr;
  const Tensor* scale_ub = !int8 && s == Scaling::kDynamicToken ? a.tensor("scale_ub", 3) : nullptr;
  if (scale_ub && scale_ub->rank() == 0 && scale_ub->dtype.empty()) scale_ub = nullptr;
  const double e = static_cast<double>(x->numel());
  double per = 3 + (int8 ? 1 : 0) + (azp ? 1 : 0);
  double groups = 0;  // scales computed
  if (s != Scaling::kStatic) {
    per += 2;
    groups = s == Scaling::kDynamicTensor ? 1 : e / static_cast<double>(x->dim(-1));
  }
  c.flops = e * fl(per) + groups * fl(scale_ub ? 2 : 1);
  c.bytes = tensor_bytes(*x) + tensor_bytes(*out) + nbytes(scale) + nbytes(azp) + nbytes(scale_ub);
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + "->" + short_dtype(out->dtype) +
             (s == Scaling::kStatic          ? ",static"
              : s == Scaling::kDynamicTensor ? ",per-tensor"
                                             : ",per-token");
  return true;
}

ModelFn quant_model(Scaling s, bool int8) {
  return [=](const OpArgs& a, OpCost& c) { return quantize(a, c, s, int8); };
}

}  // namespace

void register_fused_pointwise(Registry& r) {
  const std::string f = "pointwise";
  // ---- gated activations: (Tensor! out, Tensor input) ----
  const ModelFn silu_mul = gated_model(4, 1, "silu_and_mul");
  const ModelFn gelu_mul = gated_model(4, 1, "gelu_and_mul");
  const ModelFn gelu_tanh_mul = gated_model(8, 1, "gelu_tanh_and_mul");
  for (const char* ns : {"_C::", "sgl_kernel::"}) {
    r.add(std::string(ns) + "silu_and_mul", f, silu_mul);
    r.add(std::string(ns) + "gelu_and_mul", f, gelu_mul);
    r.add(std::string(ns) + "gelu_tanh_and_mul", f, gelu_tanh_mul);
  }
  r.add("_C::mul_and_silu", f, silu_mul);
  // fatrelu_and_mul(out, input, threshold): x > t ? x : 0 (1) then the multiply.
  r.add("_C::fatrelu_and_mul", f, gated_model(1, 0, "fatrelu_and_mul"));
  r.add("LigerSiLUMulFunction", f,
        [](const OpArgs& a, OpCost& c) { return gated_pair(a, c, 4, 1); });
  r.add("LigerGELUMulFunction", f,
        [](const OpArgs& a, OpCost& c) { return gated_pair(a, c, 8, 1); });  // tanh GELU
  // ---- rotary embeddings ----
  r.add("_C::rotary_embedding", f, rotary);
  r.add("sgl_kernel::rotary_embedding", f, rotary);
  r.add("LigerRopeFunction", f, liger_rope);
  // ---- quantization: (Tensor! result, Tensor input, Tensor scale, ...) ----
  r.add("_C::static_scaled_fp8_quant", f, quant_model(Scaling::kStatic, false));
  r.add("_C::dynamic_scaled_fp8_quant", f, quant_model(Scaling::kDynamicTensor, false));
  r.add("_C::dynamic_per_token_scaled_fp8_quant", f, quant_model(Scaling::kDynamicToken, false));
  r.add("_C::static_scaled_int8_quant", f, quant_model(Scaling::kStatic, true));
  r.add("_C::dynamic_scaled_int8_quant", f, quant_model(Scaling::kDynamicToken, true));
}

}  // namespace pyprof::models
