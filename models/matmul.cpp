// The matmul family: mm addmm bmm baddbmm addbmm matmul linear addmv mv dot vdot addr outer
// _scaled_mm einsum, and the backward ops that have their own schema (linear_backward,
// matmul_backward). Formulas and deviations: docs/ops.md "matmul".
//
// FLOPs are 2 per multiply-add of the GEMM (torch.utils.flop_counter.FlopCounterMode's
// convention: the bias/C add and the alpha/beta scaling are not counted). Bytes read every input
// at its own size (a broadcast C or bias is read once), write the output once, and read C only
// when beta != 0.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

// Element size for byte counts: unknown dtypes count as 4 (tensor_bytes' rule).

double product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  double p = 1;
  for (size_t i = begin; i < end && i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

// The first known dtype of the given tensors ("" when none says).
std::string first_dtype(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (t && !t->dtype.empty()) return t->dtype;
  }
  return "";
}

// One GEMM (or a batch of them): C[batch, m, n] = A[batch, m, k] . B[batch, k, n].
struct Gemm {
  double batch = 1;
  int64_t m = 1, n = 1, k = 1;
  double out_elems() const { return batch * static_cast<double>(m) * static_cast<double>(n); }
  double flops() const {
    return 2 * batch * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// Fills the cost of a GEMM-like op; `bytes` already has everything.
bool finish(OpCost& cost, const Gemm& g, double flops, double bytes, const std::string& dtype,
            std::string_view extra = {}) {
  cost.flops = flops;
  cost.bytes = bytes;
  cost.dtype = dtype;
  // fp32 GEMMs may run on TF32 Tensor Cores (torch.backends.cuda.matmul.allow_tf32 is not in the
  // trace): counted as eligible, docs/ops.md.
  cost.tc_eligible = tc_eligible(dtype, g.m, g.n, g.k, /*allow_tf32=*/true);
  std::string p;
  if (g.batch != 1) p += "B=" + shape_util::num_str(g.batch) + ",";
  p += "M=" + std::to_string(g.m) + ",N=" + std::to_string(g.n) + ",K=" + std::to_string(g.k);
  p += dtype_suffix(dtype);
  if (!extra.empty()) p += std::string(",") + std::string(extra);
  cost.params = std::move(p);
  return true;
}

// The output dtype: an explicit out_dtype argument (mm.dtype, _scaled_mm) or the input's.
std::string out_dtype(const OpArgs& args, size_t position, const std::string& fallback) {
  const Value* v = args.get("out_dtype");
  if (!v && position != SIZE_MAX) v = args.arg("out_dtype", position);
  if (std::string dt = dtype_value(v); !dt.empty()) return dt;
  return fallback;
}

// Bytes of the C/self operand of addmm-like ops: read only when beta != 0.
double c_bytes(const OpArgs& args, const Tensor* c, size_t beta_position) {
  if (!c) return 0;
  double beta = args.double_or("beta", beta_position, 1.0);
  return beta == 0 ? 0 : tensor_bytes(*c);
}

// Broadcasts two batch shapes (right-aligned); false when incompatible.
bool broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>& out) {
  size_t n = std::max(a.size(), b.size());
  out.assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

// torch.matmul's shape rules (1-D/2-D/N-D with batch broadcasting).
bool matmul_gemm(const Tensor& a, const Tensor& b, Gemm& g) {
  int ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0) return false;
  if (ra == 1 && rb == 1) {  // dot
    if (a.shape[0] != b.shape[0]) return false;
    g.k = a.shape[0];
    return true;
  }
  std::vector<int64_t> as = a.shape, bs = b.shape;
  if (ra == 1) as.insert(as.begin(), 1);  // [k] -> [1, k]
  if (rb == 1) bs.push_back(1);           // [k] -> [k, 1]
  g.m = as[as.size() - 2];
  g.k = as.back();
  g.n = bs.back();
  if (bs[bs.size() - 2] != g.k) return false;
  std::vector<int64_t> batch;
  if (!broadcast(std::vector<int64_t>(as.begin(), as.end() - 2),
                 std::vector<int64_t>(bs.begin(), bs.end() - 2), batch)) {
    return false;
  }
  g.batch = product(batch, 0, batch.size());
  return true;
}

// mm(self[m,k], mat2[k,n]) (also mm.dtype with out_dtype).
bool mm(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* b = args.tensor("mat2", 1);
  if (!a || !b || a->rank() != 2 || b->rank() != 2)
    return unmodeled(cost, "mm: expects 2-D tensors");
  if (a->shape[1] != b->shape[0]) return unmodeled(cost, "mm: inner dimensions differ");
  Gemm g{1, a->shape[0], b->shape[1], a->shape[1]};
  std::string dt = first_dtype({a, b});
  double bytes =
      tensor_bytes(*a) + tensor_bytes(*b) + g.out_elems() * elem_size(out_dtype(args, 2, dt));
  return finish(cost, g, g.flops(), bytes, dt);
}

// addmm(self (C, broadcast to [m,n]), mat1[m,k], mat2[k,n], *, beta, alpha); also
// _addmm_activation (the GELU/ReLU epilogue is not counted, like the bias add).
bool addmm(const OpArgs& args, OpCost& cost) {
  const Tensor* c = args.tensor("self", 0);
  const Tensor* a = args.tensor("mat1", 1);
  const Tensor* b = args.tensor("mat2", 2);
  if (!a || !b || a->rank() != 2 || b->rank() != 2) {
    return unmodeled(cost, "addmm: expects 2-D mat1, mat2");
  }
  if (a->shape[1] != b->shape[0]) return unmodeled(cost, "addmm: inner dimensions differ");
  Gemm g{1, a->shape[0], b->shape[1], a->shape[1]};
  std::string dt = first_dtype({a, b, c});
  double bytes = tensor_bytes(*a) + tensor_bytes(*b) + c_bytes(args, c, 3) +
                 g.out_elems() * elem_size(out_dtype(args, SIZE_MAX, dt));
  return finish(cost, g, g.flops(), bytes, dt);
}

// bmm(self[b,m,k], mat2[b,k,n]).
bool bmm(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* b = args.tensor("mat2", 1);
  if (!a || !b || a->rank() != 3 || b->rank() != 3)
    return unmodeled(cost, "bmm: expects 3-D tensors");
  if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1]) {
    return unmodeled(cost, "bmm: shapes differ");
  }
  Gemm g{static_cast<double>(a->shape[0]), a->shape[1], b->shape[2], a->shape[2]};
  std::string dt = first_dtype({a, b});
  double bytes =
      tensor_bytes(*a) + tensor_bytes(*b) + g.out_elems() * elem_size(out_dtype(args, 2, dt));
  return finish(cost, g, g.flops(), bytes, dt);
}

// baddbmm(self (broadcast to [b,m,n]), batch1[b,m,k], batch2[b,k,n], *, beta, alpha) and
// addbmm(self (broadcast to [m,n]), batch1, batch2): addbmm also sums over the batch, so its
// output is [m,n] (the b-1 additions per element are part of the b*m*n*k multiply-adds).
template <bool kSumBatch>
bool baddbmm(const OpArgs& args, OpCost& cost) {
  const Tensor* c = args.tensor("self", 0);
  const Tensor* a = args.tensor("batch1", 1);
  const Tensor* b = args.tensor("batch2", 2);
  if (!a || !b || a->rank() != 3 || b->rank() != 3) {
    return unmodeled(cost, "baddbmm: expects 3-D batch1, batch2");
  }
  if (a->shape[0] != b->shape[0] || a->shape[2] != b->shape[1]) {
    return unmodeled(cost, "baddbmm: shapes differ");
  }
  Gemm g{static_cast<double>(a->shape[0]), a->shape[1], b->shape[2], a->shape[2]};
  std::string dt = first_dtype({a, b, c});
  double out = kSumBatch ? static_cast<double>(g.m) * static_cast<double>(g.n) : g.out_elems();
  double bytes = tensor_bytes(*a) + tensor_bytes(*b) + c_bytes(args, c, 3) + out * elem_size(dt);
  return finish(cost, g, g.flops(), bytes, dt);
}

// matmul(self, other): torch.matmul's 1-D/2-D/N-D broadcasting rules. Composite (it calls
// dot/mv/mm/bmm), modelled so that emit_nvtx and legacy records naming only matmul get a cost.
bool matmul_impl(const Tensor* a, const Tensor* b, OpCost& cost) {
  Gemm g;
  if (!a || !b || !matmul_gemm(*a, *b, g)) return unmodeled(cost, "matmul: shapes do not multiply");
  std::string dt = first_dtype({a, b});
  double bytes = tensor_bytes(*a) + tensor_bytes(*b) + g.out_elems() * elem_size(dt);
  return finish(cost, g, g.flops(), bytes, dt);
}

bool matmul(const OpArgs& args, OpCost& cost) {
  return matmul_impl(args.tensor("self", 0), args.tensor("other", 1), cost);
}

// Legacy Tensor.__rmatmul__(self, other) computes other @ self.
bool rmatmul(const OpArgs& args, OpCost& cost) {
  return matmul_impl(args.tensor("other", 1), args.tensor("self", 0), cost);
}

// linear(input[..., k], weight[n, k] (or [k]), bias[n]?): composite (addmm/matmul), modelled so
// that records naming only linear get a cost; prof counts a call tree once, at its outermost
// modelled op, so linear -> addmm is not counted twice. M = prod(input.shape[:-1]).
// Y[..., n] = X[..., k] . W[n, k]^T (+ bias): linear and the library GEMMs of that form. The
// arguments' names and positions; `out_dtype` names the output's dtype argument when the op has
// one.
struct XWt {
  const char* x;
  const char* w;
  const char* bias;
  const char* out_dtype = nullptr;
  size_t out_dtype_position = SIZE_MAX;
};

bool x_wt(const OpArgs& args, OpCost& cost, const XWt& s) {
  const Tensor* x = args.tensor(s.x, 0);
  const Tensor* w = args.tensor(s.w, 1);
  const Tensor* bias = args.tensor(s.bias, 2);
  if (!x || !w || x->rank() == 0 || w->rank() == 0 || w->rank() > 2) {
    return unmodeled(cost, "linear: expects input[...,K], weight[N,K]");
  }
  Gemm g;
  g.k = x->shape.back();
  g.n = w->rank() == 2 ? w->shape[0] : 1;
  if (w->shape.back() != g.k) return unmodeled(cost, "linear: in_features differ");
  g.m = static_cast<int64_t>(product(x->shape, 0, x->shape.size() - 1));
  std::string dt = first_dtype({x, w});
  std::string odt = dt;
  if (s.out_dtype) {
    const Value* v = args.arg(s.out_dtype, s.out_dtype_position);
    if (std::string named = dtype_value(v); !named.empty()) odt = named;
  }
  double bytes = tensor_bytes(*x) + tensor_bytes(*w) + (bias ? tensor_bytes(*bias) : 0) +
                 g.out_elems() * elem_size(odt);
  return finish(cost, g, g.flops(), bytes, dt);
}

bool linear(const OpArgs& args, OpCost& cost) {
  return x_wt(args, cost, {"input", "weight", "bias"});
}

// linear_backward(self=input, grad_output, weight, output_mask[grad_input, grad_weight,
// grad_bias]): dgrad and wgrad are one GEMM each (2*M*N*K); grad_bias is a sum (not counted,
// as FlopCounterMode does not count biases).
bool linear_backward(const OpArgs& args, OpCost& cost) {
  const Tensor* x = args.tensor("self", 0);
  const Tensor* go = args.tensor("grad_output", 1);
  const Tensor* w = args.tensor("weight", 2);
  if (!x || !go || !w || x->rank() == 0 || w->rank() != 2) {
    return unmodeled(cost, "linear_backward: expects input, grad_output, weight[N,K]");
  }
  std::vector<int64_t> mask = args.ints_or("output_mask", 3, {1, 1, 1});
  mask.resize(3, 0);
  Gemm g;
  g.k = x->shape.back();
  g.n = w->shape[0];
  g.m = static_cast<int64_t>(product(x->shape, 0, x->shape.size() - 1));
  std::string dt = first_dtype({go, x, w});
  double flops = 0, bytes = tensor_bytes(*go);
  if (mask[0]) {  // grad_input = grad_output . weight
    flops += g.flops();
    bytes += tensor_bytes(*w) + tensor_bytes(*x);
  }
  if (mask[1]) {  // grad_weight = grad_output^T . input
    flops += g.flops();
    bytes += tensor_bytes(*x) + tensor_bytes(*w);
  }
  if (mask[2]) bytes += static_cast<double>(g.n) * elem_size(dt);
  return finish(cost, g, flops, bytes, dt);
}

// matmul_backward(grad, self, other, mask[grad_self, grad_other]): one matmul per gradient.
bool matmul_backward(const OpArgs& args, OpCost& cost) {
  const Tensor* grad = args.tensor("grad", 0);
  const Tensor* a = args.tensor("self", 1);
  const Tensor* b = args.tensor("other", 2);
  Gemm g;
  if (!grad || !a || !b || !matmul_gemm(*a, *b, g)) {
    return unmodeled(cost, "matmul_backward: shapes do not multiply");
  }
  std::vector<int64_t> mask = args.ints_or("mask", 3, {1, 1});
  mask.resize(2, 0);
  std::string dt = first_dtype({grad, a, b});
  double flops = 0, bytes = tensor_bytes(*grad);
  if (mask[0]) {
    flops += g.flops();
    bytes += tensor_bytes(*b) + tensor_bytes(*a);
  }
  if (mask[1]) {
    flops += g.flops();
    bytes += tensor_bytes(*a) + tensor_bytes(*b);
  }
  return finish(cost, g, flops, bytes, dt);
}

// addmv(self[m], mat[m,k], vec[k], *, beta, alpha) and mv(self[m,k], vec[k]).
bool addmv(const OpArgs& args, OpCost& cost) {
  const Tensor* c = args.tensor("self", 0);
  const Tensor* a = args.tensor("mat", 1);
  const Tensor* v = args.tensor("vec", 2);
  if (!a || !v || a->rank() != 2 || v->rank() != 1 || a->shape[1] != v->shape[0]) {
    return unmodeled(cost, "addmv: expects mat[M,K], vec[K]");
  }
  Gemm g{1, a->shape[0], 1, a->shape[1]};
  std::string dt = first_dtype({a, v, c});
  double bytes =
      tensor_bytes(*a) + tensor_bytes(*v) + c_bytes(args, c, 3) + g.out_elems() * elem_size(dt);
  return finish(cost, g, g.flops(), bytes, dt);
}

bool mv(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* v = args.tensor("vec", 1);
  if (!a || !v || a->rank() != 2 || v->rank() != 1 || a->shape[1] != v->shape[0]) {
    return unmodeled(cost, "mv: expects self[M,K], vec[K]");
  }
  Gemm g{1, a->shape[0], 1, a->shape[1]};
  std::string dt = first_dtype({a, v});
  double bytes = tensor_bytes(*a) + tensor_bytes(*v) + g.out_elems() * elem_size(dt);
  return finish(cost, g, g.flops(), bytes, dt);
}

// dot(self[k], tensor[k]) and vdot(self[k], other[k]): 2*k, one scalar written.
bool dot(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* b = args.tensor("tensor", 1);
  if (!b) b = args.tensor("other", 1);
  if (!a || !b || a->rank() != 1 || b->rank() != 1 || a->shape[0] != b->shape[0]) {
    return unmodeled(cost, "dot: expects two 1-D tensors of one size");
  }
  Gemm g{1, 1, 1, a->shape[0]};
  std::string dt = first_dtype({a, b});
  double bytes = tensor_bytes(*a) + tensor_bytes(*b) + elem_size(dt);
  return finish(cost, g, g.flops(), bytes, dt);
}

// outer(self[m], vec2[n]) / ger: m*n multiplications (no additions); addr(self, vec1[m],
// vec2[n], *, beta, alpha): one multiply-add per output element, 2*m*n.
template <bool kAdd>
bool outer(const OpArgs& args, OpCost& cost) {
  const Tensor* c = kAdd ? args.tensor("self", 0) : nullptr;
  const Tensor* a = kAdd ? args.tensor("vec1", 1) : args.tensor("self", 0);
  const Tensor* b = kAdd ? args.tensor("vec2", 2) : args.tensor("vec2", 1);
  if (!a || !b || a->rank() != 1 || b->rank() != 1) return unmodeled(cost, "outer: expects 1-D");
  Gemm g{1, a->shape[0], b->shape[0], 1};
  std::string dt = first_dtype({a, b, c});
  double flops = kAdd ? g.flops() : g.out_elems();
  double bytes = tensor_bytes(*a) + tensor_bytes(*b) + (kAdd ? c_bytes(args, c, 3) : 0) +
                 g.out_elems() * elem_size(dt);
  return finish(cost, g, flops, bytes, dt);
}

// Values per stored element along K: 2 for float4_e2m1fn_x2 (two FP4 values a byte, the MX/NV
// FP4 GEMMs' operands: self [M, K/2], mat2 [K/2, N]), else 1.
int64_t values_per_element(const std::string& dtype) { return dtype == "float4_e2m1fn_x2" ? 2 : 1; }

// _scaled_mm(self[m,k], mat2[k,n], scale_a, scale_b, bias?, scale_result?, out_dtype?,
// use_fast_accum): fp8 (or MX/NV fp4) GEMM, 2*m*n*k; the scale tensors (per-tensor, row-wise or
// blockwise) are read.
bool scaled_mm(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* b = args.tensor("mat2", 1);
  if (!a || !b || a->rank() != 2 || b->rank() != 2 || a->shape[1] != b->shape[0]) {
    return unmodeled(cost, "_scaled_mm: expects self[M,K], mat2[K,N]");
  }
  Gemm g{1, a->shape[0], b->shape[1],
         count_mul(a->shape[1], values_per_element(canonical_dtype(a->dtype)))};
  std::string dt = first_dtype({a, b});
  double bytes = tensor_bytes(*a) + tensor_bytes(*b);
  const char* extras[] = {"scale_a", "scale_b", "bias", "scale_result"};
  for (size_t i = 0; i < 4; ++i) {
    if (const Tensor* t = args.tensor(extras[i], 2 + i)) bytes += tensor_bytes(*t);
  }
  bytes += g.out_elems() * elem_size(out_dtype(args, 6, dt));
  return finish(cost, g, g.flops(), bytes, dt);
}

// _grouped_mm(self, mat2, offs?, bias?, out_dtype?) and _scaled_grouped_mm(self, mat2, scale_a,
// scale_b, offs?, bias?, scale_result?, out_dtype?, use_fast_accum): G GEMMs whose sizes come from
// the offsets' values (not in the args); the total work does not depend on them:
//   2-D x 3-D: [sum M, K] x [G, K, N] -> [sum M, N]:  2 * sum M * K * N
//   3-D x 2-D: [G, M, K] x [K, sum N] -> [M, sum N]:  2 * M * K * sum N
//   2-D x 2-D: [M, sum K] x [sum K, N] -> [G, M, N]:  2 * M * N * sum K
//   3-D x 3-D: [G, M, K] x [G, K, N] -> [G, M, N]:    2 * G * M * N * K
template <bool kScaled>
bool grouped_mm(const OpArgs& args, OpCost& cost) {
  const Tensor* a = args.tensor("self", 0);
  const Tensor* b = args.tensor("mat2", 1);
  if (!a || !b || a->rank() < 2 || a->rank() > 3 || b->rank() < 2 || b->rank() > 3) {
    return unmodeled(cost, "_grouped_mm: expects 2-D or 3-D operands");
  }
  const Tensor* offs = args.tensor("offs", kScaled ? 4 : 2);
  int64_t groups = offs && offs->rank() == 1 ? offs->shape[0] : 1;
  Gemm g;
  double out = 0;
  if (a->rank() == 2 && b->rank() == 3) {
    g = Gemm{1, a->shape[0], b->shape[2], a->shape[1]};
    out = g.out_elems();
  } else if (a->rank() == 3 && b->rank() == 2) {
    g = Gemm{1, a->shape[1], b->shape[1], a->shape[2]};
    out = g.out_elems();
  } else if (a->rank() == 2 && b->rank() == 2) {
    g = Gemm{1, a->shape[0], b->shape[1], a->shape[1]};
    out = g.out_elems() * static_cast<double>(groups);
  } else {
    g = Gemm{static_cast<double>(a->shape[0]), a->shape[1], b->shape[2], a->shape[2]};
    out = g.out_elems();
  }
  if (a->dim(-1) != b->dim(-2)) return unmodeled(cost, "_grouped_mm: inner dimensions differ");
  std::string dt = first_dtype({a, b});
  g.k = count_mul(g.k, values_per_element(canonical_dtype(a->dtype)));
  double bytes = tensor_bytes(*a) + tensor_bytes(*b);
  for (const Tensor* t : args.tensors()) {
    if (t != a && t != b) bytes += tensor_bytes(*t);  // offsets, scales, bias
  }
  bytes += out * elem_size(out_dtype(args, kScaled ? 7 : 4, dt));
  std::string extra = "G=" + std::to_string(groups);
  return finish(cost, g, g.flops(), bytes, dt, extra);
}

// ---- einsum ----

// One operand of an einsum: a size per index letter, in order.
struct Operand {
  std::vector<std::pair<char, int64_t>> dims;
  bool has(char c) const {
    return std::any_of(dims.begin(), dims.end(), [c](const auto& d) { return d.first == c; });
  }
};

// einsum(equation, tensors, *, path): the multiply-adds of torch's pairwise contraction
// (left to right, or the given opt_einsum `path`). Per pair: an index that appears in one
// operand only and is not needed later is summed out first (not counted: a reduction); then, when
// an index is contracted, 2 * prod(sizes of the remaining indices) (the bmm FlopCounterMode
// counts); without a contracted index the pair is an elementwise/outer product: prod(sizes)
// multiplications. A single operand (trace, sum, permute) counts 0.
bool einsum(const OpArgs& args, OpCost& cost) {
  const Value* eq = args.arg("equation", 0);
  const Value* list = args.arg("tensors", 1);
  if (!eq || eq->kind != Value::Kind::kString || !list || list->kind != Value::Kind::kTensorList ||
      list->tensors.empty()) {
    return unmodeled(cost, "einsum: needs the equation and the tensors");
  }
  std::string e;
  for (char ch : eq->s) {
    if (ch != ' ') e += ch;
  }
  size_t arrow = e.find("->");
  std::string lhs = e.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::vector<Tensor>& ts = list->tensors;
  if (terms.size() != ts.size()) return unmodeled(cost, "einsum: operand count differs");
  // Ellipsis dimensions become the letters '0'..'9' (right-aligned, broadcast).
  std::map<char, int64_t> size;
  std::vector<Operand> ops;
  size_t max_ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    size_t ell = t.find("...");
    size_t letters = t.size() - (ell == std::string::npos ? 0 : 3);
    if (static_cast<size_t>(ts[i].rank()) < letters)
      return unmodeled(cost, "einsum: rank mismatch");
    size_t n_ell = ell == std::string::npos ? 0 : ts[i].rank() - letters;
    if (n_ell > 10) return unmodeled(cost, "einsum: too many ellipsis dimensions");
    max_ell = std::max(max_ell, n_ell);
    Operand op;
    int dim = 0;
    for (size_t j = 0; j < t.size(); ++j) {
      if (j == ell) {
        for (size_t q = 0; q < n_ell; ++q) {
          char c = static_cast<char>('9' - (n_ell - 1 - q));
          op.dims.push_back({c, ts[i].shape[dim++]});
        }
        j += 2;
        continue;
      }
      op.dims.push_back({t[j], ts[i].shape[dim++]});
    }
    if (dim != ts[i].rank()) return unmodeled(cost, "einsum: rank mismatch");
    for (auto& [c, s] : op.dims) {
      auto it = size.find(c);
      if (it == size.end() || it->second == 1) {
        size[c] = s;
      } else if (s != 1 && s != it->second) {
        return unmodeled(cost, "einsum: sizes differ");
      }
    }
    ops.push_back(std::move(op));
  }
  for (Operand& op : ops) {  // broadcast sizes
    for (auto& d : op.dims) d.second = size[d.first];
  }
  std::string out;
  if (arrow != std::string::npos) {
    std::string rhs = e.substr(arrow + 2);
    size_t ell = rhs.find("...");
    if (ell != std::string::npos) {
      std::string ell_letters;
      for (size_t q = 0; q < max_ell; ++q)
        ell_letters += static_cast<char>('9' - (max_ell - 1 - q));
      rhs.replace(ell, 3, ell_letters);
    }
    out = rhs;
  } else {  // implicit output: ellipsis, then letters that appear once, sorted
    std::map<char, int> count;
    for (const Operand& op : ops) {
      for (const auto& d : op.dims) ++count[d.first];
    }
    for (auto& [c, n] : count) {
      if ((c >= '0' && c <= '9') || n == 1) out += c;
    }
  }
  // The contraction order: torch contracts left to right unless a path is given (pairs of
  // indices into the current operand list; the result is appended at the end).
  std::vector<int64_t> path = args.ints_or("path", 2, {});
  double flops = 0;
  while (ops.size() > 1) {
    size_t ia = 0, ib = 1;
    bool from_path = path.size() >= 2;
    if (from_path) {
      ia = static_cast<size_t>(std::min(path[0], path[1]));
      ib = static_cast<size_t>(std::max(path[0], path[1]));
      path.erase(path.begin(), path.begin() + 2);
      if (ib >= ops.size() || ia == ib) return unmodeled(cost, "einsum: bad path");
    }
    Operand a = ops[ia], b = ops[ib];
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(ib));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(ia));
    auto needed = [&](char c) {
      if (out.find(c) != std::string::npos) return true;
      return std::any_of(ops.begin(), ops.end(), [c](const Operand& o) { return o.has(c); });
    };
    Operand result;
    double work = 1;
    bool contracted = false;
    std::map<char, bool> seen;
    for (const Operand* o : {&a, &b}) {
      const Operand* other = o == &a ? &b : &a;
      for (const auto& [c, s] : o->dims) {
        if (seen[c]) continue;
        bool in_other = other->has(c);
        if (!in_other && !needed(c)) continue;  // summed out before the product
        seen[c] = true;
        work *= static_cast<double>(s);
        if (in_other && !needed(c)) {
          contracted = true;
        } else {
          result.dims.push_back({c, s});
        }
      }
    }
    flops += contracted ? 2 * work : work;
    if (from_path) {
      ops.push_back(std::move(result));
    } else {
      ops.insert(ops.begin(), std::move(result));
    }
  }
  std::string dt = ts[0].dtype;
  double bytes = 0;
  for (const Tensor& t : ts) bytes += tensor_bytes(t);
  double out_elems = 1;
  for (char c : out) out_elems *= static_cast<double>(size.count(c) ? size[c] : 1);
  bytes += out_elems * elem_size(dt);
  cost.flops = flops;
  cost.bytes = bytes;
  cost.dtype = dt;
  cost.tc_eligible = false;  // shapes of the inner bmm are not known here
  cost.params = "eq=" + eq->s + dtype_suffix(dt);
  return true;
}

}  // namespace

void register_matmul(Registry& r) {
  const std::string f = "matmul";
  r.add("mm", f, mm);
  r.add("addmm", f, addmm);
  r.add("_addmm_activation", f, addmm);
  r.add("bmm", f, bmm);
  r.add("baddbmm", f, baddbmm<false>);
  r.add("addbmm", f, baddbmm<true>);
  r.add("matmul", f, matmul);
  r.add("__matmul__", f, matmul);    // legacy PyProf Tensor.__matmul__
  r.add("__rmatmul__", f, rmatmul);  // legacy PyProf Tensor.__rmatmul__
  r.add("linear", f, linear);
  r.add("mkldnn_linear", f, linear);
  r.add("linear_backward", f, linear_backward);
  r.add("matmul_backward", f, matmul_backward);
  r.add("addmv", f, addmv);
  r.add("mv", f, mv);
  r.add("dot", f, dot);
  r.add("vdot", f, dot);
  r.add("outer", f, outer<false>);
  r.add("ger", f, outer<false>);
  r.add("addr", f, outer<true>);
  r.add("_scaled_mm", f, scaled_mm);
  r.add("_grouped_mm", f, grouped_mm<false>);
  r.add("_scaled_grouped_mm", f, grouped_mm<true>);
  r.add("einsum", f, einsum);
  // Library GEMMs of linear's form. aiter (aiter/tuned_gemm.py): gemm_a16w16(A[..., K],
  // B[N, K], bias?, otype?, scale_a?, scale_b?, scale_c?) -> A.B^T in otype; vLLM's ROCm
  // wrapper (vllm/model_executor/layers/utils.py): rocm_unquantized_gemm(x, weight, bias?).
  r.add("aiter::gemm_a16w16", f, [](const OpArgs& args, OpCost& cost) {
    return x_wt(args, cost, {"A", "B", "bias", "otype", 3});
  });
  r.add("vllm::rocm_unquantized_gemm", f, [](const OpArgs& args, OpCost& cost) {
    return x_wt(args, cost, {"x", "weight", "bias"});
  });
}

}  // namespace pyprof::models
