// The moe family: the fused mixture-of-experts ops of serving stacks (vLLM's and SGLang's
// inplace/outplace_fused_experts, their Triton fused_moe path) and vLLM's moe_sum. Formulas:
// docs/ops.md "Library and serving ops".
//
// What is recorded: hidden_states [T, H], w1 [E, N1, H] (N1 = 2·I for a gated activation, I
// otherwise), w2 [E, H, I], topk_weights and topk_ids [T, k]. Which expert each token goes to is
// not recorded, and the total work does not depend on it: every token runs through exactly k
// experts, so the GEMMs multiply T·k rows whatever the routing:
//   FLOPs = 2·T·k·H·N1 (w1) + 2·T·k·I·H (w2) + T·k·I·(4+1 [+1 gated]) (the activation, silu's
//           count; gated: × the other half) + T·k·H (router weights) + (T·k − T)·H (the sum over
//           the k experts).
// What routing decides is how many experts' weights are read: at most min(E, T·k) (each pair
// reaches one expert), all E when T·k ≥ E and the router spreads tokens; the model counts that
// bound, min(E, T·k)/E of the weights (and of their per-expert scales), and says so in params.
// Under expert parallelism (an expert_map) pairs routed to other ranks' experts are skipped: the
// count is then an upper bound, and params say `ep`. Weights packed two to a byte (int4 w4a16)
// are not modelled: the recorded shapes are not the GEMM's.
#include <algorithm>
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::fl;
using shape_util::nbytes;
using shape_util::num_str;
using shape_util::unmodeled;

bool fused_experts(const OpArgs& a, OpCost& c) {
  const Tensor* x = a.tensor("hidden_states", 0);
  const Tensor* w1 = a.tensor("w1", 1);
  const Tensor* w2 = a.tensor("w2", 2);
  const Tensor* tw = a.tensor("topk_weights", 3);
  const Tensor* ids = a.tensor("topk_ids", 4);
  if (!x || !w1 || !w2 || !tw || !ids || x->rank() != 2 || w1->rank() != 3 || w2->rank() != 3 ||
      ids->rank() != 2) {
    return unmodeled(c, "fused_experts: needs hidden_states [T,H], w1/w2 [E,..], topk_ids [T,k]");
  }
  const int64_t t = x->shape[0], h = x->shape[1], k = ids->shape[1], e = w1->shape[0];
  const int64_t n1 = w1->shape[1], inter = w2->shape[2];
  if (w1->shape[2] != h || w2->shape[1] != h || w2->shape[0] != e || ids->shape[0] != t) {
    return unmodeled(c,
                     "fused_experts: weights not [E,N,H]/[E,H,I] of the hidden size "
                     "(packed int4 weights are not modelled)");
  }
  const bool gated_act = n1 == 2 * inter;
  if (!gated_act && n1 != inter) return unmodeled(c, "fused_experts: w1 and w2 sizes differ");
  const double rows = static_cast<double>(count_mul(t, k));  // token-expert pairs
  const double dh = static_cast<double>(h), di = static_cast<double>(inter);
  c.flops = 2 * rows * dh * static_cast<double>(n1) + 2 * rows * di * dh +
            rows * di * fl(4 + (gated_act ? 1 : 0), 1) + rows * dh * fl(1) +
            (rows - static_cast<double>(t)) * dh * fl(1);
  // Weights: the experts the pairs can reach.
  const double touched = std::min(static_cast<double>(e), rows);
  const double share = e > 0 ? touched / static_cast<double>(e) : 0;
  double bytes =
      tensor_bytes(*x) + tensor_bytes(*x) /* out */ + tensor_bytes(*tw) + tensor_bytes(*ids);
  bool ep = false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Value* v = a.at(i);
    if (!v->is_tensor() || i == 0 || i == 3 || i == 4) continue;
    const Tensor& tensor = v->tensor;
    if (tensor.rank() == 0 && tensor.dtype.empty()) continue;  // None
    if (a.name_at(i) == "expert_map") {
      ep = true;
      bytes += tensor_bytes(tensor);
      continue;
    }
    // Per-expert tensors (weights, their scales and zero points, biases) at the reached share.
    const bool per_expert = tensor.rank() >= 1 && tensor.shape[0] == e;
    bytes += per_expert ? share * tensor_bytes(tensor) : tensor_bytes(tensor);
  }
  c.bytes = bytes;
  // The GEMMs' inputs: FP8/INT8 weights mean an FP8/INT8 GEMM (w8a8), else the activations'.
  const std::string wdt = canonical_dtype(w1->dtype);
  const bool narrow = wdt.starts_with("float8") || wdt == "int8";
  c.dtype = narrow ? wdt : canonical_dtype(x->dtype);
  c.tc_eligible = tc_eligible(c.dtype, n1, inter, h, /*allow_tf32=*/true);
  std::string p = "T=" + std::to_string(t) + ",topk=" + std::to_string(k) +
                  ",E=" + std::to_string(e) + ",H=" + std::to_string(h) +
                  ",I=" + std::to_string(inter);
  if (!gated_act) p += ",ungated";
  p += shape_util::dtype_suffix(c.dtype);
  p += ",experts<=" + num_str(touched);
  if (ep) p += ",ep";
  c.params = std::move(p);
  return true;
}

// moe_sum(Tensor input [T, k, H], Tensor! output [T, H]): the k experts' outputs summed.
bool moe_sum(const OpArgs& a, OpCost& c) {
  const Tensor* in = a.tensor("input", 0);
  const Tensor* out = a.tensor("output", 1);
  if (!in || !out || in->rank() != 3) return unmodeled(c, "moe_sum: needs input [T,k,H], output");
  const double o = static_cast<double>(out->numel());
  c.flops = (static_cast<double>(in->numel()) - o) * fl(1);
  c.bytes = tensor_bytes(*in) + tensor_bytes(*out);
  c.dtype = canonical_dtype(in->dtype);
  c.params = shape_util::describe(*in);
  return true;
}

}  // namespace

void register_moe(Registry& r) {
  const std::string f = "moe";
  // vLLM (vllm/model_executor/layers/fused_moe/fused_moe.py) and SGLang
  // (sglang/srt/layers/moe/fused_moe_triton): (hidden_states, w1, w2, topk_weights, topk_ids,
  // ...); inplace writes the result over hidden_states, outplace into a new tensor: the same
  // bytes.
  for (const char* ns : {"vllm::", "sglang::"}) {
    r.add(std::string(ns) + "inplace_fused_experts", f, fused_experts);
    r.add(std::string(ns) + "outplace_fused_experts", f, fused_experts);
  }
  r.add("_moe_C::moe_sum", f, moe_sum);
}

}  // namespace pyprof::models
