// The bytes of a Triton kernel launch that torch.profiler recorded without compile metadata:
// docs/ops.md "Triton launches without compile metadata". Inductor wraps each launch of its
// Triton kernels in a RecordFunction named for the kernel (`triton_poi_fused_add_0`) whose
// arguments are the kernel's: its tensors (inputs, then outputs), then the size variables and
// numels it was not specialised on, as integers. No ATen node is named, so no FLOP count can be
// derived; the bytes are estimated from the tensors and the index space.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/op_model.h"

namespace pyprof::models {

namespace {

// The bytes `t` can move when the kernel touches at most `points` of its elements.
double touched_bytes(const Tensor& t, double points) {
  const double size = dtype_size(t.dtype) > 0 ? dtype_size(t.dtype) : 4;
  const double whole = static_cast<double>(t.numel()) * size;
  return points < 0 ? whole : std::min(whole, points * size);
}

// Ops whose Inductor lowering loads several elements of one tensor per point of the index space
// (a pooling window, an interpolation's neighbours, an unfold's patch): a kernel whose name
// lists one of them reads more of an input than N elements, so its tensors count whole.
bool names_a_windowed_op(std::string_view name) {
  for (std::string_view op : {"pool", "upsample", "grid_sampler", "im2col", "col2im", "unfold"}) {
    if (name.find(op) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

TritonKernelKind triton_kernel_kind(std::string_view name) {
  if (!name.starts_with("triton_") || name.size() < 11 || name[10] != '_') {
    return TritonKernelKind::kNone;
  }
  const std::string_view kind = name.substr(7, 3);
  if (kind == "poi") return TritonKernelKind::kPointwise;
  if (kind == "red") return TritonKernelKind::kReduction;
  if (kind == "per") return TritonKernelKind::kPersistentReduction;
  if (kind == "tem") return TritonKernelKind::kTemplate;
  if (kind == "for") return TritonKernelKind::kForeach;
  return TritonKernelKind::kNone;
}

OpCost triton_launch_cost(std::string_view name, const OpArgs& args) {
  OpCost cost;
  const TritonKernelKind kind = triton_kernel_kind(name);
  if (kind == TritonKernelKind::kNone) return cost;
  const std::string prefix = "triton=" + std::string(name.substr(7, 3));
  // The tensors in order, and the integers after the last of them: the kernel's numels
  // (xnumel; ynumel, xnumel; xnumel, r0_numel), after any size variables (ks0, ...).
  std::vector<const Tensor*> tensors;
  std::vector<int64_t> trailing;
  bool trailing_readable = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value* v = args.at(i);
    if (v->kind == Value::Kind::kTensor || v->kind == Value::Kind::kTensorList) {
      if (v->kind == Value::Kind::kTensor) tensors.push_back(&v->tensor);
      for (const Tensor& t : v->tensors) tensors.push_back(&t);
      trailing.clear();
      trailing_readable = true;
    } else if (v->kind == Value::Kind::kInt && v->i >= 0) {
      trailing.push_back(v->i);
    } else {
      trailing_readable = false;  // a scalar that is no count: the index space is not known
    }
  }
  for (const Tensor* t : tensors) {
    for (int64_t d : t->shape) {
      if (d < 0) {
        cost.problem = CostProblem::kNegativeDimension;
        cost.params = "negative dimension " + std::to_string(d);
        return cost;
      }
    }
  }
  if (tensors.empty()) {
    cost.params = prefix + ",no tensor arguments recorded";
    return cost;
  }
  // The index space: a poi/red/per kernel loads or stores one element of each tensor per point
  // of it (a gather: one row element per output element), unless its name lists a windowed op;
  // a template (GEMM, convolution) or foreach kernel reads and writes its tensors whole.
  double points = -1;
  std::string space;
  const bool windowed = names_a_windowed_op(name);
  if ((kind == TritonKernelKind::kPointwise || kind == TritonKernelKind::kReduction ||
       kind == TritonKernelKind::kPersistentReduction) &&
      !windowed) {
    if (trailing.empty() || !trailing_readable) {
      cost.params = prefix + ",index space not recorded";
      return cost;
    }
    int64_t n = 1;
    for (int64_t each : trailing) {
      if (each != 0 && n > INT64_MAX / each) {
        cost.problem = CostProblem::kOverflow;
        cost.params = "overflow: " + prefix + ",index space past 2^63";
        return cost;
      }
      n *= each;
    }
    points = static_cast<double>(n);
    space = ",N=" + std::to_string(n);
  }
  double bytes = 0;
  int capped = 0;
  for (const Tensor* t : tensors) {
    const double b = touched_bytes(*t, points);
    if (b < touched_bytes(*t, -1)) ++capped;
    bytes += b;
  }
  if (!(bytes >= 0 && bytes < kMaxCount)) {
    cost.problem = CostProblem::kOverflow;
    cost.params = "overflow: " + prefix;
    return cost;
  }
  cost.bytes = bytes;
  cost.bytes_estimate = true;
  cost.family = "triton";
  cost.dtype = tensors.back()->dtype;
  cost.params = prefix + space + (windowed ? ",windowed" : "") +
                ",tensors=" + std::to_string(tensors.size()) +
                (capped > 0 ? ",capped=" + std::to_string(capped) : "") + ",flops=na,bytes=est";
  return cost;
}

}  // namespace pyprof::models
