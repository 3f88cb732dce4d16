// Upsample family: nearest / linear / bilinear / bicubic / trilinear interpolation, forward and
// backward, and the legacy F.interpolate (docs/ops.md "upsample").
//
// O = output elements. Separable interpolation per output element: each 1-D pass is a
// weighted sum of the taps (2 taps: 2 multiplies + 1 add = 3; 4 taps (cubic): 4 + 3 = 7):
//   nearest 0, linear1d 3, bilinear2d 2*3 + 3 = 9, trilinear3d 4*3 + 2*3 + 3 = 21,
//   bicubic2d 4*7 + 7 = 35 (tap weights, computed once per output row/column, not counted).
// Backward applies the transposed (adjoint) map: the same count per grad_output element;
// nearest adds each grad_output element into its source (1).
// Bytes: input (grad_output) read once, output (grad_input) written once.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

enum class Mode : uint8_t { kNearest, kLinear, kCubic };

double per_output(Mode mode, int k) {
  switch (mode) {
    case Mode::kNearest:
      return 0;
    case Mode::kLinear:
      return 3 * ((1 << k) - 1);  // 3, 9, 21
    case Mode::kCubic:
      return k == 1 ? 7 : 35;
  }
  return 0;
}

const char* mode_name(Mode m) {
  return m == Mode::kNearest ? "nearest" : m == Mode::kLinear ? "linear" : "cubic";
}

// Output spatial sizes: output_size (k ints), else integer scale factors (the .vec overload's
// scale_factors, the legacy scale_factor); nullopt when neither is readable.
std::optional<std::vector<int64_t>> output_sizes(const Tensor& x, int k, const Value* size,
                                                 const Value* scales) {
  if (auto s = int_list(size); s && !s->empty()) {
    if (s->size() == 1 && k > 1) return std::vector<int64_t>(k, (*s)[0]);
    if (static_cast<int>(s->size()) == k) return s;
  }
  std::vector<double> f;
  if (scales && scales->kind == Value::Kind::kIntList) {
    for (int64_t v : scales->ints) f.push_back(static_cast<double>(v));
  } else if (is_number(scales)) {
    f.assign(k, scales->d);
  }
  if (f.size() == 1 && k > 1) f.assign(k, f[0]);
  if (static_cast<int>(f.size()) != k || x.rank() < k) return std::nullopt;
  std::vector<int64_t> out;
  for (int i = 0; i < k; ++i) {
    out.push_back(
        static_cast<int64_t>(std::floor(static_cast<double>(x.dim(x.rank() - k + i)) * f[i])));
  }
  return out;
}

void forward_cost(const Tensor& x, int k, Mode mode, const std::vector<int64_t>& out_sp,
                  OpCost& c) {
  double sp = static_cast<double>(numel_of(std::vector<int64_t>(x.shape.end() - k, x.shape.end())));
  double bc = sp > 0 ? static_cast<double>(x.numel()) / sp : 0;
  double out = bc * static_cast<double>(numel_of(out_sp));
  c.flops = out * fl(per_output(mode, k));
  c.bytes = tensor_bytes(x) + out * elem_size(x.dtype);
  c.dtype = canonical_dtype(x.dtype);
  c.params = describe(x) + ",out=" + shape_str(out_sp) + "," + mode_name(mode);
}

// upsample_*(self, output_size, [align_corners,] scales...) and the .vec overloads
// (input, output_size, [align_corners,] scale_factors).
ModelFn upsample(int k, Mode mode) {
  return [k, mode](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"self", "input"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    if (x->rank() < k) return unmodeled(c, "input rank too small");
    const Value* scales = a.get("scale_factors");
    if (!scales) scales = a.arg("scale_factors", mode == Mode::kNearest ? 2 : 3);
    auto out_sp = output_sizes(*x, k, a.arg("output_size", 1), scales);
    if (!out_sp) return unmodeled(c, "output size unknown");
    forward_cost(*x, k, mode, *out_sp, c);
    return true;
  };
}

// Legacy F.interpolate(input, size, scale_factor, mode, align_corners, ...) and
// F.upsample(...): mode "nearest" (default), "linear", "bilinear", "bicubic", "trilinear",
// "nearest-exact"; "area" is adaptive average pooling and not modelled here.
// F.upsample_nearest / F.upsample_bilinear(input, size, scale_factor) fix the mode.
bool interpolate(const OpArgs& a, OpCost& c, const std::string& default_mode) {
  const Tensor* x = tensor_any(a, {"input"}, 0);
  if (!x) return unmodeled(c, "no input tensor");
  int k = x->rank() - 2;
  if (k < 1 || k > 3) return unmodeled(c, "input must be 3-D to 5-D");
  const Value* mv = a.arg("mode", 3);
  std::string m = mv && mv->kind == Value::Kind::kString ? mv->s : default_mode;
  Mode mode;
  if (m == "nearest" || m == "nearest-exact") {
    mode = Mode::kNearest;
  } else if (m == "linear" || m == "bilinear" || m == "trilinear") {
    mode = Mode::kLinear;
  } else if (m == "bicubic") {
    mode = Mode::kCubic;
  } else {
    return unmodeled(c, "mode " + m + " not modelled");
  }
  auto out_sp = output_sizes(*x, k, a.arg("size", 1), a.arg("scale_factor", 2));
  if (!out_sp) return unmodeled(c, "output size unknown");
  forward_cost(*x, k, mode, *out_sp, c);
  return true;
}

// upsample_*_backward(grad_output, output_size, input_size, [align_corners,] scales...):
// grad_input has input_size.
ModelFn upsample_backward(int k, Mode mode) {
  return [k, mode](const OpArgs& a, OpCost& c) {
    const Tensor* g = a.tensor("grad_output", 0);
    if (!g) return unmodeled(c, "no grad_output tensor");
    auto in = int_list(a.arg("input_size", 2));
    if (!in || in->empty()) return unmodeled(c, "input_size unknown");
    double out = static_cast<double>(g->numel());
    double per = mode == Mode::kNearest ? 1 : per_output(mode, k);
    c.flops = out * fl(per);
    c.bytes = tensor_bytes(*g) + static_cast<double>(numel_of(*in)) * elem_size(g->dtype);
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe(*g) + ",in=" + shape_str(*in) + "," + mode_name(mode);
    return true;
  };
}

}  // namespace

void register_upsample(Registry& r) {
  struct Name {
    const char* name;
    int k;
    Mode mode;
  };
  const Name names[] = {
      {"upsample_nearest1d", 1, Mode::kNearest},
      {"upsample_nearest2d", 2, Mode::kNearest},
      {"upsample_nearest3d", 3, Mode::kNearest},
      {"_upsample_nearest_exact1d", 1, Mode::kNearest},
      {"_upsample_nearest_exact2d", 2, Mode::kNearest},
      {"_upsample_nearest_exact3d", 3, Mode::kNearest},
      {"upsample_linear1d", 1, Mode::kLinear},
      {"upsample_bilinear2d", 2, Mode::kLinear},
      {"upsample_trilinear3d", 3, Mode::kLinear},
      {"upsample_bicubic2d", 2, Mode::kCubic},
  };
  for (const Name& n : names) {
    r.add(n.name, "upsample", upsample(n.k, n.mode));
    r.add(std::string(n.name) + "_backward", "upsample", upsample_backward(n.k, n.mode));
  }
  auto legacy = [](std::string mode) -> ModelFn {
    return [mode](const OpArgs& a, OpCost& c) { return interpolate(a, c, mode); };
  };
  add_ops(r, "upsample", {"interpolate", "upsample", "upsample_nearest"}, legacy("nearest"));
  add_ops(r, "upsample", {"upsample_bilinear"}, legacy("bilinear"));
}

}  // namespace pyprof::models
