// Dropout family: dropout, native_dropout (+ backward), feature (channel) dropout, alpha
// dropout (docs/ops.md "dropout").
//
// E = elements. Random numbers are integer work and not counted. dropout: keep = u < 1-p (1),
// y = keep ? x/(1-p) : 0 (1) = 2 per element. Bytes: x read, y written, the mask written once
// (bool, 1 byte, as native_dropout stores it) for the backward. Evaluation (train=false) or
// p = 0 returns the input: 0 and 0.
#include <string>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

double p_of(const OpArgs& a) { return a.double_or("p", 1, 0.5); }

// train (ATen) or training (legacy F.dropout keyword); unreadable (emit_nvtx) means training.
bool train_of(const OpArgs& a) {
  if (const Value* v = a.get("training")) return v->kind == Value::Kind::kNone || v->i != 0;
  const Value* v = a.arg("train", 2);
  if (v && v->kind == Value::Kind::kNone) return true;  // native_dropout(train=None)
  return a.bool_or("train", 2, true);
}

enum class Kind : uint8_t { kElement, kFeature, kAlpha, kFeatureAlpha };

// Elements of the mask: E, or N*C for feature dropout (one value per channel of 3-D+ inputs;
// an unbatched input has one per C).
double mask_elems(const Tensor& x, bool feature) {
  if (!feature) return static_cast<double>(x.numel());
  return static_cast<double>(x.dim(0)) * static_cast<double>(x.rank() >= 3 ? x.dim(1) : 1);
}

// dropout / feature_dropout / alpha_dropout / feature_alpha_dropout(input, p, train) (also
// the legacy F.dropout, dropout1d/2d/3d, alpha_dropout names).
// feature: mask of M = N*C values in x's dtype: draw and scale (2 per mask value), x*mask (1 per
// element); alpha: noise b = (m - 1)*a*alpha + a*alpha*p, m*a (4 per mask value), x*m + b (2 per
// element), one compare per mask value.
ModelFn dropout(Kind kind) {
  return [kind](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"input", "self"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    double p = p_of(a);
    bool train = train_of(a);
    double e = static_cast<double>(x->numel());
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + ",p=" + num_str(p);
    if (!train || p == 0 || e == 0) {  // returns the input
      c.flops = 0;
      c.bytes = 0;
      c.params += train ? "" : ",eval";
      return true;
    }
    double sz = elem_size(x->dtype);
    bool feature = kind == Kind::kFeature || kind == Kind::kFeatureAlpha;
    double m = mask_elems(*x, feature);
    switch (kind) {
      case Kind::kElement:
        c.flops = e * fl(2);
        c.bytes = 2 * e * sz + e;  // x, y, bool mask
        break;
      case Kind::kFeature:
        c.flops = m * fl(2) + e * fl(1);
        c.bytes = 2 * e * sz + m * sz;
        break;
      case Kind::kAlpha:
      case Kind::kFeatureAlpha:
        c.flops = m * fl(5) + e * fl(2);
        c.bytes = 2 * e * sz + m * sz;
        break;
    }
    return true;
  };
}

// native_dropout(input, p, train) -> (output, mask) and _fused_dropout(self, p, generator):
// in training the dropout formula; otherwise output = input copy and an all-true mask.
bool native_dropout(const OpArgs& a, OpCost& c) {
  const Tensor* x = tensor_any(a, {"input", "self"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  double e = static_cast<double>(x->numel());
  bool train = train_of(a);
  c.flops = train ? e * fl(2) : 0;
  c.bytes = 2 * tensor_bytes(*x) + e;
  c.dtype = canonical_dtype(x->dtype);
  c.params = describe(*x) + ",p=" + num_str(p_of(a)) + (train ? "" : ",eval");
  return true;
}

// native_dropout_backward(grad_output, mask, scale) and _masked_scale(self, mask, scale):
// g * mask * scale (2 per element); read g and mask, write grad_input.
bool masked_scale(const OpArgs& a, OpCost& c) {
  const Tensor* g = tensor_any(a, {"grad_output", "self"}, 0);
  const Tensor* mask = a.tensor("mask", 1);
  if (!g || !mask) return unmodeled(c, "needs grad_output and mask");
  double e = static_cast<double>(g->numel());
  c.flops = e * fl(2);
  c.bytes = 2 * tensor_bytes(*g) + tensor_bytes(*mask);
  c.dtype = canonical_dtype(g->dtype);
  c.params = describe({g, mask});
  return true;
}

}  // namespace

void register_dropout(Registry& r) {
  add_ops(r, "dropout", {"dropout"}, dropout(Kind::kElement));
  add_ops(r, "dropout", {"feature_dropout", "dropout1d", "dropout2d", "dropout3d"},
          dropout(Kind::kFeature));
  add_ops(r, "dropout", {"alpha_dropout"}, dropout(Kind::kAlpha));
  add_ops(r, "dropout", {"feature_alpha_dropout"}, dropout(Kind::kFeatureAlpha));
  add_ops(r, "dropout", {"native_dropout", "_fused_dropout"}, native_dropout);
  add_ops(r, "dropout", {"native_dropout_backward", "_masked_scale"}, masked_scale);
}

}  // namespace pyprof::models
