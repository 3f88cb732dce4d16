// Pooling family: max, average and adaptive pooling in 1-3 spatial dimensions, forward and
// backward (docs/ops.md "pooling").
//
// O = output elements (N*C*prod(out spatial)), K = kernel elements (prod(kernel_size)).
// max: K comparisons per output; avg: K adds + 1 division per output (every window position,
// padding included). Adaptive pools sum the exact window sizes: per dim the windows
// [floor(i*in/out), ceil((i+1)*in/out)). Bytes: input read once, output (and int64 indices)
// written once; backward reads grad_output (and indices), writes grad_input once.
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using namespace shape_util;

// An int list of k entries: one value applies to every dim; nullopt when absent/unreadable.
std::optional<std::vector<int64_t>> per_dim(const Value* v, int k) {
  auto l = int_list(v);
  if (!l || l->empty()) return std::nullopt;
  if (l->size() == 1) return std::vector<int64_t>(k, (*l)[0]);
  if (static_cast<int>(l->size()) != k) return std::nullopt;
  return l;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  int64_t num = count_add(count_add(in, count_mul(2, p)),
                          count_add(-count_mul(d, k - 1), (ceil ? s - 1 : 0) - 1));
  int64_t out = floor_div(num, s) + 1;
  if (ceil && count_mul(out - 1, s) >= count_add(in, p)) --out;
  return std::max<int64_t>(out, 0);
}

struct Spatial {
  double bc = 0;            // batch * channels
  std::vector<int64_t> in;  // spatial sizes
};

bool spatial_of(const Tensor& x, int k, Spatial& s) {
  if (x.rank() < k + 1) return false;
  s.in.assign(x.shape.end() - k, x.shape.end());
  double sp = static_cast<double>(numel_of(s.in));
  s.bc = sp > 0 ? static_cast<double>(x.numel()) / sp : 0;
  return true;
}

enum class Kind : uint8_t { kMax, kAvg };

// max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode) [-> (out, indices)],
// avg_poolNd(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
ModelFn pool(Kind kind, int k, bool indices) {
  return [kind, k, indices](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"self", "input"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    Spatial s;
    if (!spatial_of(*x, k, s)) return unmodeled(c, "input rank too small");
    auto kernel = per_dim(a.arg("kernel_size", 1), k);
    if (!kernel) return unmodeled(c, "kernel_size unknown");
    auto stride = per_dim(a.arg("stride", 2), k).value_or(*kernel);
    auto pad = per_dim(a.arg("padding", 3), k).value_or(std::vector<int64_t>(k, 0));
    std::vector<int64_t> dil(k, 1);
    bool ceil;
    if (kind == Kind::kMax) {
      dil = per_dim(a.arg("dilation", 4), k).value_or(dil);
      ceil = a.bool_or("ceil_mode", 5, false);
    } else {
      ceil = a.bool_or("ceil_mode", 4, false);
    }
    bool with_indices = indices || a.bool_or("return_indices", 99, false);
    double kk = 1, out = s.bc;
    std::vector<int64_t> out_sp;
    for (int i = 0; i < k; ++i) {
      if (stride[i] <= 0) return unmodeled(c, "bad stride");
      out_sp.push_back(pooled_size(s.in[i], (*kernel)[i], stride[i], pad[i], dil[i], ceil));
      kk *= static_cast<double>((*kernel)[i]);
      out *= static_cast<double>(out_sp.back());
    }
    c.flops = out * (kind == Kind::kMax ? fl(kk) : fl(kk + 1));
    c.bytes = tensor_bytes(*x) + out * elem_size(x->dtype) + (with_indices ? out * 8 : 0);
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + ",k=" + shape_str(*kernel) + ",s=" + shape_str(stride) +
               ",out=" + shape_str(out_sp);
    return true;
  };
}

// Sum over the adaptive windows of one dim: sum_i (ceil((i+1)*in/out) - floor(i*in/out)), in
// closed form so a huge output_size costs nothing to model: the floors telescope to `in`, and
// each ceil adds one except for the gcd(in, out) values of i+1 where out divides (i+1)*in.
double window_sum(int64_t in, int64_t out) {
  if (in < 0 || out <= 0) return 0;
  return static_cast<double>(in) + static_cast<double>(out) -
         static_cast<double>(std::gcd(in, out));
}

double adaptive_reads(const Spatial& s, const std::vector<int64_t>& out_sp) {
  double w = s.bc;
  for (size_t i = 0; i < out_sp.size(); ++i) w *= window_sum(s.in[i], out_sp[i]);
  return w;
}

// adaptive_avg_poolNd / _adaptive_avg_poolNd / adaptive_max_poolNd(self, output_size):
// avg: one add per window element + one division per output; max: one comparison per window
// element, int64 indices written.
ModelFn adaptive(Kind kind, int k) {
  return [kind, k](const OpArgs& a, OpCost& c) {
    const Tensor* x = tensor_any(a, {"self", "input"}, 0);
    if (!x) return unmodeled(c, "no input tensor");
    Spatial s;
    if (!spatial_of(*x, k, s)) return unmodeled(c, "input rank too small");
    auto out_sp = per_dim(a.arg("output_size", 1), k);
    if (!out_sp) return unmodeled(c, "output_size unknown");
    double out = s.bc * static_cast<double>(numel_of(*out_sp));
    double reads = adaptive_reads(s, *out_sp);
    c.flops = kind == Kind::kMax ? reads * fl(1) : reads * fl(1) + out * fl(1);
    c.bytes = tensor_bytes(*x) + out * elem_size(x->dtype) + (kind == Kind::kMax ? out * 8 : 0);
    c.dtype = canonical_dtype(x->dtype);
    c.params = describe(*x) + ",out=" + shape_str(*out_sp);
    return true;
  };
}

// Backward of max pools with saved indices (max_poolNd_with_indices_backward(grad_output, self,
// kernel_size, stride, padding, dilation, ceil_mode, indices), adaptive_max_poolNd_backward(
// grad_output, self, indices)): one add per grad_output element scattered to its arg-max.
// max_pool2d_backward (no indices) recomputes the arg-max: + K comparisons per output.
ModelFn max_backward(int indices_pos, bool recompute) {
  return [indices_pos, recompute](const OpArgs& a, OpCost& c) {
    const Tensor* g = a.tensor("grad_output", 0);
    const Tensor* x = a.tensor("self", 1);
    if (!g || !x) return unmodeled(c, "needs grad_output and self");
    double out = static_cast<double>(g->numel());
    c.flops = out * fl(1);
    c.bytes = tensor_bytes(*g) + static_cast<double>(x->numel()) * elem_size(g->dtype);
    if (recompute) {
      auto kernel = per_dim(a.arg("kernel_size", 2), std::max(x->rank() - 2, 1));
      if (!kernel) return unmodeled(c, "kernel_size unknown");
      c.flops += out * fl(static_cast<double>(numel_of(*kernel)));
      c.bytes += tensor_bytes(*x);
    } else {
      const Tensor* idx = opt_tensor(a, "indices", indices_pos);
      c.bytes += idx ? tensor_bytes(*idx) : out * 8;
    }
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe({g, x});
    return true;
  };
}

// avg_poolNd_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override): each grad_output element divided once and added to
// the K inputs of its window: K + 1 per output. An unreadable kernel_size (emit_nvtx) is
// estimated as in/out (non-overlapping windows), shown as "k~".
ModelFn avg_backward(int k) {
  return [k](const OpArgs& a, OpCost& c) {
    const Tensor* g = a.tensor("grad_output", 0);
    const Tensor* x = a.tensor("self", 1);
    if (!g || !x) return unmodeled(c, "needs grad_output and self");
    double out = static_cast<double>(g->numel());
    double in = static_cast<double>(x->numel());
    auto kernel = per_dim(a.arg("kernel_size", 2), k);
    double kk = kernel ? static_cast<double>(numel_of(*kernel))
                       : std::max(1.0, std::round(out > 0 ? in / out : 1));
    c.flops = out * fl(kk + 1);
    c.bytes = tensor_bytes(*g) + in * elem_size(g->dtype);
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe({g, x}) + (kernel ? ",k=" + shape_str(*kernel) : ",k~" + num_str(kk));
    return true;
  };
}

// _adaptive_avg_poolNd_backward(grad_output, self): the forward's count (window adds +
// one division per output); output sizes from grad_output.
ModelFn adaptive_avg_backward(int k) {
  return [k](const OpArgs& a, OpCost& c) {
    const Tensor* g = a.tensor("grad_output", 0);
    const Tensor* x = a.tensor("self", 1);
    if (!g || !x) return unmodeled(c, "needs grad_output and self");
    Spatial s;
    if (!spatial_of(*x, k, s) || g->rank() < k) return unmodeled(c, "input rank too small");
    std::vector<int64_t> out_sp(g->shape.end() - k, g->shape.end());
    double out = static_cast<double>(g->numel());
    c.flops = adaptive_reads(s, out_sp) * fl(1) + out * fl(1);
    c.bytes = tensor_bytes(*g) + static_cast<double>(x->numel()) * elem_size(g->dtype);
    c.dtype = canonical_dtype(g->dtype);
    c.params = describe({g, x});
    return true;
  };
}

}  // namespace

void register_pooling(Registry& r) {
  const char* dims[] = {"1d", "2d", "3d"};
  for (int k = 1; k <= 3; ++k) {
    std::string d = dims[k - 1];
    r.add("max_pool" + d, "pooling", pool(Kind::kMax, k, false));
    r.add("max_pool" + d + "_with_indices", "pooling", pool(Kind::kMax, k, true));
    r.add("avg_pool" + d, "pooling", pool(Kind::kAvg, k, false));
    r.add("adaptive_avg_pool" + d, "pooling", adaptive(Kind::kAvg, k));
    r.add("_adaptive_avg_pool" + d, "pooling", adaptive(Kind::kAvg, k));
    r.add("adaptive_max_pool" + d, "pooling", adaptive(Kind::kMax, k));
    r.add("max_pool" + d + "_with_indices_backward", "pooling", max_backward(7, false));
    r.add("adaptive_max_pool" + d + "_backward", "pooling", max_backward(2, false));
    r.add("avg_pool" + d + "_backward", "pooling", avg_backward(k));
    r.add("_adaptive_avg_pool" + d + "_backward", "pooling", adaptive_avg_backward(k));
  }
  r.add("max_pool2d_backward", "pooling", max_backward(-1, true));
}

}  // namespace pyprof::models
