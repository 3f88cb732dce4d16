#include "models/op_model.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "models/flop_table.h"
#include "models/has_model.h"
#include "models/user_models.h"

namespace pyprof::models {

namespace {
// Set by count_mul/count_add when a result does not fit; op_cost() clears it before a model runs
// and reads it after. Per thread: each thread costs its own op.
thread_local bool count_overflowed = false;
}  // namespace

int64_t count_mul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product)) {
    count_overflowed = true;
    return std::numeric_limits<int64_t>::max();
  }
  return product;
}

int64_t count_add(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    count_overflowed = true;
    return std::numeric_limits<int64_t>::max();
  }
  return sum;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n = count_mul(n, d < 0 ? 0 : d);
  return n;
}

int64_t Tensor::dim(int d) const {
  int r = rank();
  if (d < 0) d += r;
  return (d < 0 || d >= r) ? 1 : shape[d];
}

namespace {

namespace dom = simdjson::dom;

// Integer lists, and bool lists (output_mask) as 0/1.
bool read_int_array(dom::array a, std::vector<int64_t>& out) {
  out.clear();
  for (dom::element e : a) {
    int64_t v;
    bool b;
    if (e.get_int64().get(v) == simdjson::SUCCESS) {
      out.push_back(v);
    } else if (e.get_bool().get(b) == simdjson::SUCCESS) {
      out.push_back(b ? 1 : 0);
    } else {
      return false;
    }
  }
  return true;
}

// {"shape":[...],"dtype":"float32","stride":[...]} (pyprof, emit_nvtx) or the legacy
// {"type":"tensor","shape":[...],"dtype":...} form.
bool read_tensor(dom::object o, Tensor& t) {
  dom::array shape;
  if (o["shape"].get_array().get(shape) != simdjson::SUCCESS) return false;
  if (!read_int_array(shape, t.shape)) return false;
  std::string_view dtype;
  if (o["dtype"].get_string().get(dtype) == simdjson::SUCCESS) t.dtype = dtype;
  dom::array stride;
  if (o["stride"].get_array().get(stride) == simdjson::SUCCESS) read_int_array(stride, t.stride);
  return true;
}

Value read_value(dom::element e) {
  Value v;
  switch (e.type()) {
    case dom::element_type::NULL_VALUE:
      v.kind = Value::Kind::kNone;
      break;
    case dom::element_type::BOOL:
      v.kind = Value::Kind::kBool;
      v.i = e.get_bool().value_unsafe() ? 1 : 0;
      v.d = static_cast<double>(v.i);
      break;
    case dom::element_type::INT64:
      v.kind = Value::Kind::kInt;
      v.i = e.get_int64().value_unsafe();
      v.d = static_cast<double>(v.i);
      break;
    case dom::element_type::UINT64:
      v.kind = Value::Kind::kDouble;
      v.d = static_cast<double>(e.get_uint64().value_unsafe());
      break;
    case dom::element_type::DOUBLE:
      v.kind = Value::Kind::kDouble;
      v.d = e.get_double().value_unsafe();
      break;
    case dom::element_type::STRING: {
      v.kind = Value::Kind::kString;
      v.s = std::string(e.get_string().value_unsafe());
      // Non-finite floats are written as strings (docs/formats.md §1.1).
      if (v.s == "inf") v.d = INFINITY;
      if (v.s == "-inf") v.d = -INFINITY;
      if (v.s == "nan") v.d = NAN;
      break;
    }
    case dom::element_type::OBJECT: {
      dom::object o = e.get_object().value_unsafe();
      if (read_tensor(o, v.tensor)) {
        v.kind = Value::Kind::kTensor;
      } else {
        v.kind = Value::Kind::kOther;
      }
      break;
    }
    case dom::element_type::ARRAY: {
      dom::array a = e.get_array().value_unsafe();
      if (read_int_array(a, v.ints)) {
        v.kind = Value::Kind::kIntList;
        break;
      }
      v.ints.clear();
      // Tensor lists: undefined entries skipped, nested lists (Tensor[][]) flattened, and the
      // "...+N" marker of a list the annotator cut short ignored (the listed tensors remain).
      bool tensors = true;
      auto add_tensors = [&](auto& self, dom::array items, int depth) -> void {
        for (dom::element item : items) {
          if (!tensors) return;
          if (depth == 0) ++v.slot_count;
          if (item.type() == dom::element_type::NULL_VALUE) continue;
          if (item.type() == dom::element_type::STRING) {
            std::string_view text = item.get_string().value_unsafe();
            if (text.starts_with("...+")) {
              v.dropped += std::strtoll(std::string(text.substr(4)).c_str(), nullptr, 10);
              continue;
            }
            tensors = false;
            return;
          }
          dom::array inner;
          if (depth < 2 && item.get_array().get(inner) == simdjson::SUCCESS) {
            self(self, inner, depth + 1);
            continue;
          }
          dom::object o;
          Tensor t;
          if (item.get_object().get(o) != simdjson::SUCCESS || !read_tensor(o, t)) {
            tensors = false;
            return;
          }
          v.tensors.push_back(std::move(t));
          v.slots.push_back(v.slot_count - 1);
        }
      };
      add_tensors(add_tensors, a, 0);
      if (v.tensors.empty()) tensors = false;
      v.kind = tensors ? Value::Kind::kTensorList : Value::Kind::kOther;
      if (!tensors) {
        v.tensors.clear();
        v.slots.clear();
        v.slot_count = 0;
      }
      break;
    }
  }
  return v;
}

// Legacy PyProf argument: {"name":"","type":"tensor"|"int"|"float"|"bool"|"tuple"|...,
// "shape":..., "dtype":..., "value":...}.
Value read_legacy_value(dom::object o) {
  std::string_view type;
  if (o["type"].get_string().get(type) != simdjson::SUCCESS) return Value::of(Value::Kind::kOther);
  if (type == "tensor" || type == "ndarray") {
    Value v;
    v.kind = read_tensor(o, v.tensor) ? Value::Kind::kTensor : Value::Kind::kOther;
    return v;
  }
  dom::element value;
  if (o["value"].get(value) != simdjson::SUCCESS) return Value::of(Value::Kind::kNone);
  return read_value(value);
}

}  // namespace

OpArgs OpArgs::from_json(std::string_view json) {
  OpArgs args;
  if (json.empty()) return args;
  thread_local dom::parser parser;
  dom::element root;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) return args;
  dom::object object;
  dom::array array;
  if (root.get_object().get(object) == simdjson::SUCCESS) {
    for (auto field : object) args.add(std::string(field.key), read_value(field.value));
  } else if (root.get_array().get(array) == simdjson::SUCCESS) {
    for (dom::element e : array) {
      dom::object o;
      std::string_view name;
      if (e.get_object().get(o) != simdjson::SUCCESS) {
        args.add("", Value::of(Value::Kind::kOther));
        continue;
      }
      if (o["name"].get_string().get(name) != simdjson::SUCCESS) name = "";
      args.add(std::string(name), read_legacy_value(o));
    }
  }
  return args;
}

void OpArgs::add(std::string name, Value value) {
  names_.push_back(std::move(name));
  values_.push_back(std::move(value));
}

const Value* OpArgs::at(size_t position) const {
  return position < values_.size() ? &values_[position] : nullptr;
}

const Value* OpArgs::get(std::string_view name) const {
  if (name.empty()) return nullptr;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return &values_[i];
  }
  return nullptr;
}

const Value* OpArgs::arg(std::string_view name, size_t position) const {
  if (const Value* v = get(name)) return v;
  // Positional access only when the record carries no schema names (emit_nvtx, legacy
  // positional arguments): names "0", "1", ... or "".
  if (position < names_.size()) {
    const std::string& n = names_[position];
    if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return &values_[position];
  }
  return nullptr;
}

const Tensor* OpArgs::tensor(std::string_view name, size_t position) const {
  const Value* v = arg(name, position);
  return v && v->is_tensor() ? &v->tensor : nullptr;
}

std::vector<const Tensor*> OpArgs::tensors() const {
  std::vector<const Tensor*> out;
  for (const Value& v : values_) {
    if (v.kind == Value::Kind::kTensor) out.push_back(&v.tensor);
    if (v.kind == Value::Kind::kTensorList) {
      for (const Tensor& t : v.tensors) out.push_back(&t);
    }
  }
  return out;
}

int64_t OpArgs::int_or(std::string_view name, size_t position, int64_t fallback) const {
  const Value* v = arg(name, position);
  if (!v) return fallback;
  if (v->kind == Value::Kind::kInt || v->kind == Value::Kind::kBool) return v->i;
  if (v->kind == Value::Kind::kIntList && v->ints.size() == 1) return v->ints[0];
  return fallback;
}

double OpArgs::double_or(std::string_view name, size_t position, double fallback) const {
  const Value* v = arg(name, position);
  if (!v) return fallback;
  if (v->kind == Value::Kind::kInt || v->kind == Value::Kind::kDouble ||
      v->kind == Value::Kind::kBool) {
    return v->d;
  }
  return fallback;
}

std::vector<int64_t> OpArgs::ints_or(std::string_view name, size_t position,
                                     std::vector<int64_t> fallback) const {
  const Value* v = arg(name, position);
  if (!v) return fallback;
  if (v->kind == Value::Kind::kIntList) return v->ints;
  if (v->kind == Value::Kind::kInt) return {v->i};
  return fallback;
}

bool OpArgs::bool_or(std::string_view name, size_t position, bool fallback) const {
  const Value* v = arg(name, position);
  if (!v) return fallback;
  if (v->kind == Value::Kind::kBool || v->kind == Value::Kind::kInt) return v->i != 0;
  return fallback;
}

namespace {

// "[32,-1]": a shape in a message.
std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

}  // namespace

std::span<const DtypeAlias> dtype_aliases() { return kLegacyDtypeNames; }

std::string canonical_dtype(std::string_view dtype) {
  return std::string(canonical_dtype_name(dtype));
}

std::string_view dtype_of_scalar_type(int64_t number) {
  return dtype_of_scalar_type_number(number);
}

std::string dtype_value(const Value* v) {
  if (v == nullptr) return {};
  if (v->kind == Value::Kind::kString && dtype_size(v->s) != 0) return canonical_dtype(v->s);
  if (v->kind == Value::Kind::kInt) return std::string(dtype_of_scalar_type(v->i));
  return {};
}

int dtype_size(std::string_view dtype) { return dtype_element_size(dtype); }

double tensor_bytes(const Tensor& t) {
  int size = dtype_size(t.dtype);
  return static_cast<double>(t.numel()) * (size == 0 ? 4 : size);
}

std::string short_dtype(std::string_view dtype) {
  const DtypeInfo* info = dtype_info(dtype);
  return std::string(info && !info->short_name.empty() ? info->short_name : dtype);
}

bool tc_eligible(std::string_view dtype, int64_t m, int64_t n, int64_t k, bool allow_tf32) {
  const int64_t align = tensor_core_alignment(dtype, allow_tf32);
  return align > 0 && m > 0 && n > 0 && k > 0 && m % align == 0 && n % align == 0 && k % align == 0;
}

void Registry::add(std::string op, std::string family, ModelFn fn) {
  models_[std::move(op)] = {std::move(family), std::move(fn)};
}

const ModelFn* Registry::find(std::string_view op, std::string* family) const {
  auto it = models_.find(op);
  if (it == models_.end()) return nullptr;
  if (family) *family = it->second.first;
  return &it->second.second;
}

std::vector<std::string> Registry::ops() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : models_) out.push_back(name);
  return out;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_matmul(reg);
    register_conv(reg);
    register_attention(reg);
    register_rnn(reg);
    register_optim(reg);
    register_collectives(reg);
    register_norm(reg);
    register_softmax(reg);
    register_pointwise(reg);
    register_reduction(reg);
    register_loss(reg);
    register_embedding(reg);
    register_pooling(reg);
    register_dropout(reg);
    register_upsample(reg);
    register_movement(reg);
    register_indexing(reg);
    register_fused_norm(reg);
    register_fused_pointwise(reg);
    register_kv_cache(reg);
    register_moe(reg);
    return reg;
  }();
  return r;
}

namespace {

// The cost `model` gives one call, checked: no tensor with a negative dimension, no count past
// int64; scaled up for a tensor list the annotator cut short.
template <typename Model>
OpCost checked_cost(const std::string& family, const OpArgs& args, Model&& model) {
  OpCost cost;
  cost.family = family;
  // A negative dimension is no shape at all: multiplying it (or counting it as 0) would give a
  // cost for a tensor that cannot exist.
  for (const Tensor* t : args.tensors()) {
    for (int64_t d : t->shape) {
      if (d < 0) {
        cost.problem = CostProblem::kNegativeDimension;
        cost.params = "negative dimension " + std::to_string(d) + " in shape " + shape_text(*t);
        return cost;
      }
    }
  }
  count_overflowed = false;
  cost.modeled = model(cost);
  // Counts past int64, whether an integer step overflowed or a floating-point product grew past
  // kMaxCount (or a bug made it negative or not finite), are not a cost.
  auto out_of_range = [](double v) { return !(v >= 0 && v < kMaxCount); };
  if (cost.modeled && (count_overflowed || out_of_range(cost.flops) || out_of_range(cost.bytes) ||
                       out_of_range(cost.flops + cost.masked_flops))) {
    cost.modeled = false;
    cost.problem = CostProblem::kOverflow;
    cost.params = "overflow: " + cost.params;
  }
  count_overflowed = false;
  if (!cost.modeled) {
    cost.flops = cost.masked_flops = 0;
    cost.bytes = 0;
    return cost;
  }
  // A tensor list the annotator cut short (over 256 tensors): the ops taking such lists
  // (_foreach_*, fused optimizers, collectives) cost in proportion to the list, so the listed
  // tensors stand in for the dropped ones, and the params say it is an estimate.
  double scale = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value* v = args.at(i);
    if (v->kind == Value::Kind::kTensorList && v->dropped > 0 && !v->tensors.empty()) {
      double n = static_cast<double>(v->tensors.size());
      scale = std::max(scale, (n + static_cast<double>(v->dropped)) / n);
    }
  }
  if (scale > 1) {
    cost.flops *= scale;
    cost.masked_flops *= scale;
    cost.bytes *= scale;
    cost.params += ",list-est";
  }
  return cost;
}

// The registry's model of `op` as op_cost() looks it up: a library's op whose schema differs from
// an ATen op of the same bare name (vLLM's "_C::rms_norm(result, input, weight, epsilon)" and
// "aten::rms_norm(input, normalized_shape, weight, eps)") is registered under its qualified
// name, which wins; then the bare name ("aten::addmm" / "torch.nn.functional.linear" -> "addmm"
// / "linear"), then an in-place variant's ("add_" -> "add"). `op` is left the bare name.
const ModelFn* find_model(std::string_view& op, std::string* family) {
  size_t colon = op.rfind("::");
  const ModelFn* fn = colon != std::string_view::npos ? registry().find(op, family) : nullptr;
  if (colon != std::string_view::npos) op.remove_prefix(colon + 2);
  size_t dot = op.rfind('.');
  if (dot != std::string_view::npos) op.remove_prefix(dot + 1);
  if (!fn) fn = registry().find(op, family);
  if (!fn && op.size() > 1 && op.back() == '_' && op[op.size() - 2] != '_') {
    fn = registry().find(op.substr(0, op.size() - 1), family);  // in-place variant
  }
  return fn;
}

}  // namespace

bool has_op_model(std::string_view op) {
  if (const UserModels* user = installed_user_models(); user && user->find(op)) return true;
  std::string family;
  return find_model(op, &family) != nullptr;
}

OpCost op_cost(std::string_view op, const OpArgs& args) {
  // A user's model of the op replaces pyprof's (docs/ops.md "Adding your own models").
  if (const UserModels* user = installed_user_models()) {
    if (const UserModel* model = user->find(op)) {
      return checked_cost(model->family, args,
                          [&](OpCost& cost) { return user_model_cost(*model, args, cost); });
    }
  }
  OpCost cost;
  std::string family;
  const ModelFn* fn = find_model(op, &family);
  // Legacy PyProf recorded the deprecated overloads add_(Scalar alpha, Tensor other),
  // sub_(alpha, other) and addcmul_/addcdiv_(Scalar value, Tensor t1, Tensor t2) positionally:
  // move the scalar after the tensors, where the schema (and the models) have it.
  std::string_view base = op.ends_with("_") ? op.substr(0, op.size() - 1) : op;
  if ((base == "add" || base == "sub" || base == "addcmul" || base == "addcdiv") &&
      args.size() >= 3 && args.name_at(1).empty() && args.at(1)->kind != Value::Kind::kTensor &&
      args.at(2)->is_tensor()) {
    OpArgs reordered;
    reordered.add("", *args.at(0));
    for (size_t i = 2; i < args.size(); ++i) reordered.add("", *args.at(i));
    reordered.add("", *args.at(1));
    return op_cost(op, reordered);
  }
  // Inductor's Triton kernel launched under torch.profiler without compile metadata: bytes
  // estimated from its launcher's tensors, no FLOPs (models/triton_launch.cpp).
  if (!fn)
    return triton_kernel_kind(op) != TritonKernelKind::kNone ? triton_launch_cost(op, args) : cost;
  return checked_cost(family, args, [&](OpCost& c) { return (*fn)(args, c); });
}

OpCost op_cost(std::string_view op, const OpArgs& args, std::string_view args_json) {
  if (const FlopTable* table = installed_flop_table()) {
    if (const FlopTableEntry* entry = table->find(op, args_json)) {
      return checked_cost("user", args,
                          [&](OpCost& cost) { return flop_table_cost(*entry, args, cost); });
    }
  }
  return op_cost(op, args);
}

}  // namespace pyprof::models
