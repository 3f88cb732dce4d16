// The interface of the per-op cost models, which give the FLOPs, ideal DRAM bytes and Tensor Core
// eligibility of one op call from the arguments parse wrote for it (docs/formats.md §3): OpArgs
// (the arguments in their three dialects), OpCost, dtype names and sizes, Tensor Core alignment,
// the registry and op_cost(), which finds an op's model by name. The formulas themselves live in
// one file per family (models/<family>.cpp, registered by the register_* functions below), each
// in exactly one function, and are listed in docs/ops.md.
//
// Conventions (stated in docs/ops.md and in prof's column headers):
// - a multiply-add is 2 FLOPs;
// - bytes are the ideal DRAM traffic: each input read once, each output written once,
//   broadcasting honoured (a broadcast input is read at its own size), dtype sizes exact
//   (bool 1, bf16 2, fp8 1, complex64 8, ...);
// - an op with no model is `modeled = false` (prof prints "na"), never an error;
// - composite ops (aten::linear, aten::conv2d, scaled_dot_product_attention) are modelled too,
//   so that traces naming only them (emit_nvtx, legacy PyProf) get costs; prof counts a call
//   tree once, at its outermost modelled op.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtypes.h"

namespace pyprof::models {

// ---- checked counts ---------------------------------------------------------------------------
// Shapes come from the trace and can be anything: a count (elements, FLOPs, bytes) that does not
// fit int64 must not wrap into a negative or small number and reach prof's totals. The integer
// arithmetic on shapes goes through these helpers: on overflow they return INT64_MAX and mark the
// cost being computed on this thread as overflowed, and op_cost() then reports the op not modelled
// ("na", OpCost::problem). Formulas stay readable (count_mul(a, b) where a * b could overflow).
int64_t count_mul(int64_t a, int64_t b);
int64_t count_add(int64_t a, int64_t b);
// The largest FLOP or byte count a model may return: 2^63 (the int64 range prof and the JSON
// consumers read counts in). Anything above is an overflow too.
inline constexpr double kMaxCount = 9223372036854775808.0;

// One tensor argument. dtype "" when the source did not say (emit_nvtx shapes).
struct Tensor {
  std::vector<int64_t> shape;
  std::string dtype;
  std::vector<int64_t> stride;  // empty when unknown
  // Product of the dimensions (checked: count_mul). op_cost() rejects tensor arguments with a
  // negative dimension before any model runs; a negative entry of a shape a model builds itself
  // (view's -1) counts as 0.
  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  // Size of dimension d, negative d counted from the end; 1 when out of range.
  int64_t dim(int d) const;
};

// One argument value.
struct Value {
  enum class Kind : uint8_t {
    kNone,
    kTensor,
    kTensorList,
    kInt,
    kIntList,
    kDouble,
    kBool,
    kString,
    kOther
  };
  Kind kind = Kind::kNone;
  Tensor tensor;                // kTensor
  std::vector<Tensor> tensors;  // kTensorList (undefined tensors in a list are skipped)
  // kTensorList: for each of `tensors`, its place in the recorded list, and the list's length.
  // An undefined entry (null: `None` in an optional-tensor list such as index's `indices`, where
  // a leading None means "every element of dim 0") keeps its place, so a model can tell which
  // dims the defined entries address.
  std::vector<int32_t> slots;
  int32_t slot_count = 0;
  int64_t dropped = 0;        // kTensorList: tensors the annotator left out ("...+N")
  int64_t i = 0;              // kInt; kBool: 0/1
  std::vector<int64_t> ints;  // kIntList
  double d = 0;               // kDouble (also set for kInt)
  std::string s;              // kString (dtype/layout names, "mean", reduction strings)
  bool is_tensor() const { return kind == Kind::kTensor; }
  static Value of(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

// The arguments of one op call, in the order parse wrote them.
//   pyprof: {"self":{...},"mat2":{...},"alpha":1}  -> names and positions
//   emit_nvtx: {"0":{"shape":[5,3]},"1":{"shape":[]}} -> positions; shapes only, no dtypes
//   legacy PyProf: [{"name":"","type":"tensor","shape":[..],"dtype":".."},...] -> positions,
//                  keyword arguments also by name
class OpArgs {
 public:
  // Decodes parse's "args" JSON; anything unreadable becomes kOther values (never throws).
  static OpArgs from_json(std::string_view json);
  void add(std::string name, Value value);

  size_t size() const { return values_.size(); }
  const Value* at(size_t position) const;
  const Value* get(std::string_view name) const;
  // By schema name when present, else by position (emit_nvtx and legacy records have no
  // names): the usual way to read an argument.
  const Value* arg(std::string_view name, size_t position) const;
  const Tensor* tensor(std::string_view name, size_t position) const;
  // Every tensor argument (tensor lists flattened), in order.
  std::vector<const Tensor*> tensors() const;
  int64_t int_or(std::string_view name, size_t position, int64_t fallback) const;
  double double_or(std::string_view name, size_t position, double fallback) const;
  std::vector<int64_t> ints_or(std::string_view name, size_t position,
                               std::vector<int64_t> fallback) const;
  bool bool_or(std::string_view name, size_t position, bool fallback) const;
  const std::string& name_at(size_t position) const { return names_[position]; }

 private:
  std::vector<std::string> names_;
  std::vector<Value> values_;
};

// Why a modelled op's arguments could not be costed (prof counts and warns about each kind).
enum class CostProblem : uint8_t {
  kNone,
  kOverflow,           // a count does not fit int64 (count_mul/count_add, kMaxCount)
  kNegativeDimension,  // a tensor argument has a negative dimension
  kUserModel,          // a user model's formula does not fit the call (models/user_models.h)
};

struct OpCost {
  bool modeled = false;                      // false: no model for this op ("na")
  CostProblem problem = CostProblem::kNone;  // set with modeled = false
  double flops = 0;                          // multiply-add = 2; what the kernel executes
  // FLOPs FlopCounterMode counts that the kernel skips: causal attention's masked score blocks
  // (models/attention.cpp). flops + masked_flops is the dense, FlopCounterMode-compatible count.
  double masked_flops = 0;
  double bytes = 0;          // ideal DRAM traffic
  bool tc_eligible = false;  // Tensor Core eligible: dtype and alignment (see tc_eligible())
  std::string dtype;         // the op's compute dtype ("float16"), "" when unknown
  std::string params;        // short description for the Params column: "M=256,N=32,K=128,fp16"
  std::string family;        // the docs/ops.md family: "matmul", "conv", "pointwise", ...
  // Not modelled (modeled = false: no FLOP count), yet `bytes` holds an estimate from the
  // tensors of a Triton kernel's launcher record (triton_launch_cost): prof shows it,
  // flagged `bytes-est`, and keeps it out of every FLOP and byte total (docs/ops.md).
  bool bytes_estimate = false;
  // Collectives whose record names their process group's size (torch.profiler's
  // record_param_comms): that size, for bus bandwidth; 0 when the record does not say.
  int32_t group = 0;
};

// A dtype spelling of older torch and legacy PyProf records ("half", the name of the Tensor
// method) and PyTorch's Python name for it ("float16", docs/formats.md §1.1). The dtype facts
// below (names, sizes, spellings, Tensor Core alignment) all come from common/dtypes.h, the one
// dtype table parse, the models, prof's advice and the Python front share.
using DtypeAlias = DtypeSpelling;
// The legacy spellings (kLegacyDtypeNames): canonical_dtype() and dtype_size() read them, so a
// legacy record costs what the same record with Python names costs.
std::span<const DtypeAlias> dtype_aliases();
// PyTorch's Python name of `dtype`: legacy spellings mapped, every other name unchanged.
std::string canonical_dtype(std::string_view dtype);
// The dtype named by c10::ScalarType number `number` ("float32" for 6); empty when it names none.
// torch.profiler traces give dtype arguments as these numbers (docs/formats.md §4).
std::string_view dtype_of_scalar_type(int64_t number);
// The dtype a dtype argument names: a dtype name (PyTorch's or a legacy spelling, canonicalised)
// or a ScalarType number; empty for anything else (absent, None, unreadable).
std::string dtype_value(const Value* v);
// Size in bytes of one element of `dtype` (Python names or their legacy spellings); 0 when
// unknown ("" or an unrecognised name). float4_e2m1fn_x2 is 1 (two values per byte).
int dtype_size(std::string_view dtype);
// Bytes of a tensor: numel * dtype_size; unknown dtype counts as 4 bytes (float32, PyTorch's
// default) so that emit_nvtx shapes still give an estimate.
double tensor_bytes(const Tensor& t);
// "fp16", "bf16", "fp32", "fp8", "int8", ... as PyProf printed dtypes.
std::string short_dtype(std::string_view dtype);
// Tensor Core eligibility of a GEMM-like op: M, N, K multiples of tensor_core_alignment()
// (common/dtypes.h): fp16/bf16 8, fp8/int8 16, fp4 (float4_e2m1fn_x2, K in values) 32, fp32 4
// when TF32 is allowed (allow_tf32).
bool tc_eligible(std::string_view dtype, int64_t m, int64_t n, int64_t k, bool allow_tf32);

// The model of one op: returns false when the arguments do not fit the model (then the op is
// reported unmodeled, with the reason in `cost.params`).
using ModelFn = std::function<bool(const OpArgs& args, OpCost& cost)>;

class Registry {
 public:
  // `op` without the "aten::" prefix and overload ("addmm", "convolution_backward"), or a
  // library's op under its qualified name ("_C::rms_norm", "flash_attn::_flash_attn_forward"),
  // which op_cost() tries first.
  void add(std::string op, std::string family, ModelFn fn);
  const ModelFn* find(std::string_view op, std::string* family) const;
  std::vector<std::string> ops() const;

 private:
  std::map<std::string, std::pair<std::string, ModelFn>, std::less<>> models_;
};

// All models. Built once.
const Registry& registry();

// The cost of one call of `op` ("aten::addmm", "addmm", legacy "linear", "torch.nn.functional.
// linear", "_C::rms_norm"): looks the qualified name up in the registry, then the bare name
// (namespace and "_" in-place suffix variants map to the same model: "add_" uses "add"). A user
// model installed for the op (models/user_models.h) comes before all of them.
OpCost op_cost(std::string_view op, const OpArgs& args);
// The same for a call whose args text (net.dict's `args`, as prof reads it) is `args_json`: an
// installed FLOP table's entry for the call (models/flop_table.h; entries exist only for ops
// without a model) is found by it first.
OpCost op_cost(std::string_view op, const OpArgs& args, std::string_view args_json);

// The kind of Triton kernel Inductor's name says (`triton_<kind>_...`): pointwise (poi),
// reduction (red), persistent reduction (per), template (tem: GEMM, convolution, attention),
// foreach (for); kNone for any other name (a user's Triton kernel, `triton_` + something else).
enum class TritonKernelKind : uint8_t {
  kNone,
  kPointwise,
  kReduction,
  kPersistentReduction,
  kTemplate,
  kForeach
};
TritonKernelKind triton_kernel_kind(std::string_view name);

// The estimated bytes of one launch of Inductor's Triton kernel `name`, from the arguments its
// launcher record carries (torch.profiler's `_RecordFunctionFast` around the launch: the
// kernel's tensors, then the integers it was not specialised on) when no compile metadata names
// its ATen nodes: modeled = false (no FLOPs), bytes_estimate = true (docs/ops.md "Triton launches
// without compile metadata"): Σ min(B(t), N·sz(t)) over the tensors for poi/red/per kernels, N
// the product of the integers after the last tensor (the numels); Σ B(t) for tem/for kernels and
// for a name listing a windowed op (pooling, upsampling: several elements of a tensor per
// point). Without N (a poi/red/per launch with no trailing integer), no estimate. op_cost()
// falls back to it for a `triton_<kind>_` op without a model.
OpCost triton_launch_cost(std::string_view name, const OpArgs& args);

// What a compiled kernel's node list held, beside its cost.
struct CompiledKernelNodes {
  int64_t count = 0;    // ATen nodes listed
  int64_t modeled = 0;  // of them with a model
  int64_t missing = 0;  // nodes the compile metadata named but could not describe
  // The bytes of the modelled nodes run one by one (each reading its inputs and writing its
  // output): what the kernel would move unfused.
  double unfused_bytes = 0;
  std::vector<std::string> unmodeled;  // distinct ops without a model
};
// The cost of a kernel torch.compile generated, from its `"kind":"compiled_kernel"` line's
// "kernel" object (docs/formats.md §3): the sum of its nodes' FLOPs (each by op_cost) and the
// bytes of the buffers it reads and writes. Not modelled unless every node has a model and
// every buffer a size (docs/ops.md "compiled kernels").
OpCost compiled_kernel_cost(std::string_view kernel_json, CompiledKernelNodes* nodes = nullptr);

// A compiled kernel's "kernel" object from a graph compiled with symbolic sizes (dynamic
// shapes), with each size expression pyprof wrote as a JSON string ("s77", "128*s77",
// "((s0 + 7)//8)", "Max(1, s0)") replaced by its value under `symbols_json`, one call's sizes
// ({"s77": 8}). Strings that are no such expression (dtypes, devices) are kept. Empty when an
// expression names a symbol `symbols_json` lacks or does not evaluate to an integer: the kernel
// then stays unmodelled.
std::string bind_symbols(std::string_view kernel_json, std::string_view symbols_json);

// Whether a compiled kernel's object (minified, as parse writes it) still has a symbolic size:
// a tensor flagged "symbolic":true, which bind_symbols removes once every size is a number.
bool has_symbolic_sizes(std::string_view kernel_json);

// One size expression as sympy prints it, under `symbols`: +, -, *, //, exact /, %, **,
// parentheses, Max, Min, floor, ceiling, FloorDiv, CeilDiv, CleanDiv, Mod, PythonMod,
// ModularIndexing. nullopt when it is not one or names an unknown symbol.
std::optional<int64_t> eval_size_expr(std::string_view text,
                                      const std::vector<std::pair<std::string, int64_t>>& symbols);

// Families register their ops here; each lives in its own file (models/<family>.cpp).
void register_matmul(Registry& r);     // mm addmm bmm baddbmm matmul linear addmv mv dot _scaled_mm
void register_conv(Registry& r);       // convolution*, conv*d, convolution_backward, cudnn/mkldnn
void register_attention(Registry& r);  // scaled_dot_product_attention and variants, fwd + bwd
void register_rnn(Registry& r);        // lstm/gru/rnn cells, _cudnn_rnn, lstm, gru
void register_optim(Registry& r);      // _foreach_*, _fused_adam(w)_, _fused_sgd_
void register_collectives(Registry& r);  // c10d / _c10d_functional / nccl (bytes only)
void register_norm(Registry& r);         // batch/layer/group/rms norm, fwd + bwd
void register_softmax(Registry& r);      // softmax, log_softmax, fwd + bwd
void register_pointwise(Registry& r);    // unary/binary/ternary, activations, fwd + bwd
void register_reduction(Registry& r);    // sum mean max min amax norm var std ...
void register_loss(Registry& r);         // nll_loss, cross_entropy, mse_loss, ... fwd + bwd
void register_embedding(Registry& r);    // embedding, embedding_dense_backward, embedding_bag
void register_pooling(Registry& r);      // max/avg/adaptive pool, fwd + bwd
void register_dropout(Registry& r);      // dropout, native_dropout(_backward)
void register_upsample(Registry& r);     // upsample_*, interpolate, fwd + bwd
void register_movement(Registry& r);     // copy_, _to_copy, cat, stack, clone, contiguous,
                                         // views, fill, zero, pad, repeat, random fills
void register_indexing(Registry& r);     // the movement family's index*, index_put*, gather,
                                         // scatter*, index_add/copy/fill, masked_*
// Libraries' ops (vLLM, SGLang, aiter, flash-attn, xformers, apex, Liger), registered under their
// qualified names into the families above (attention's and matmul's, collectives' live in
// those files) and the moe family:
void register_fused_norm(Registry& r);       // fused RMS norms (+residual, +FP8 quant), apex's
void register_fused_pointwise(Registry& r);  // silu_and_mul & kin, rotary embeddings, FP8 quant
void register_kv_cache(Registry& r);         // KV-cache writes (movement)
void register_moe(Registry& r);              // fused experts, moe_sum

}  // namespace pyprof::models
