// The collectives family: c10d's process-group ops (c10d::allreduce_, allgather_, broadcast_,
// reduce_scatter_, ...), the functional collectives (_c10d_functional::all_reduce,
// all_gather_into_tensor, reduce_scatter_tensor, ...) and legacy PyProf's torch.distributed
// calls. Bytes only: docs/ops.md "collectives".
//
// bytes = the payload: the bytes of the tensor data this rank puts into the collective (its send
// buffer): allreduce/broadcast/reduce/send/recv: the tensors; all-gather: this rank's input
// (group_size times smaller than the gathered output); reduce-scatter: the full input
// (group_size times the output); all-to-all: the input. FLOPs are 0: the reduction's additions
// (group_size - 1 per element for a sum) are not counted, as they run inside the communication
// library and are bound by the links.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/shape_util.h"

namespace pyprof::models {
namespace {

using shape_util::dtype_suffix;
using shape_util::elem_size;
using shape_util::unmodeled;

// Payload of one argument: a tensor or a tensor list. -1 when unreadable: a list of lists
// (Tensor[][]) is not decoded by OpArgs, and a rank-0 "tensor" is emit_nvtx's placeholder for any
// non-tensor argument (tensor lists included); a real 0-dim payload is not worth the confusion.
double payload(const Value* v, size_t* count, std::string* dtype) {
  if (!v) return -1;
  if (v->kind == Value::Kind::kTensor && v->tensor.rank() > 0) {
    *count += 1;
    if (dtype->empty()) *dtype = v->tensor.dtype;
    return tensor_bytes(v->tensor);
  }
  if (v->kind == Value::Kind::kTensorList) {
    double b = 0;
    for (const Tensor& t : v->tensors) {
      b += tensor_bytes(t);
      if (dtype->empty()) *dtype = t.dtype;
    }
    *count += v->tensors.size();
    return b;
  }
  return -1;
}

// The payload is the argument `name` (at `position` in positional records); `kind` names the
// collective in the params column.
struct Collective {
  const char* kind;
  const char* name;
  size_t position;
  const char* alt_name = nullptr;  // older schemas ("self" for "input")
  // An int argument giving the group's size (vLLM's world_size), for the ranks report.
  const char* group_name = nullptr;
  size_t group_position = SIZE_MAX;
};

bool collective(const OpArgs& args, OpCost& cost, const Collective& c) {
  const Value* v = args.arg(c.name, c.position);
  if (!v && c.alt_name) v = args.get(c.alt_name);
  size_t count = 0;
  std::string dtype;
  double bytes = payload(v, &count, &dtype);
  if (bytes < 0) return unmodeled(cost, std::string(c.kind) + ": payload tensors unreadable");
  cost.flops = 0;
  cost.bytes = bytes;
  cost.dtype = dtype;
  cost.tc_eligible = false;
  std::string p = c.kind;
  if (count > 1) p += ",tensors=" + std::to_string(count);
  p += ",bytes=" + std::to_string(static_cast<int64_t>(bytes));
  int64_t group = args.int_or("group_size", SIZE_MAX, 0);
  if (c.group_name) {
    group = args.int_or(c.group_name, c.group_position, 0);
    if (group > 0) cost.group = static_cast<int32_t>(std::min<int64_t>(group, INT32_MAX));
  }
  if (group > 0) p += ",group=" + std::to_string(group);
  const Value* op = args.get("reduce_op");
  if (op && op->kind == Value::Kind::kString && !op->s.starts_with('<')) {  // "sum", not "<...>"
    p.push_back(',');
    p.append(op->s);
  }
  p += dtype_suffix(dtype);
  cost.params = std::move(p);
  return true;
}

ModelFn model(Collective c) {
  return [c](const OpArgs& args, OpCost& cost) { return collective(args, cost, c); };
}

// Legacy torch.distributed.all_gather(tensor_list, tensor, group, async_op): PyProf flattened
// the output list into several arguments, so the input is the last tensor argument.
bool legacy_all_gather(const OpArgs& args, OpCost& cost) {
  const Value* in = args.get("tensor");
  const Tensor* t = in && in->is_tensor() ? &in->tensor : nullptr;
  if (!t) {
    std::vector<const Tensor*> ts = args.tensors();
    if (ts.empty()) return unmodeled(cost, "all_gather: no tensors");
    t = ts.back();
  }
  cost.flops = 0;
  cost.bytes = tensor_bytes(*t);
  cost.dtype = t->dtype;
  cost.params = "all_gather,bytes=" + std::to_string(static_cast<int64_t>(cost.bytes)) +
                dtype_suffix(t->dtype);
  return true;
}

// "record_param_comms": the RecordFunction c10d's NCCL/Gloo backends open around each collective
// (RECORD_PARAM_COMMS_DATA): no schema, positional inputs (input tensors, seq, process group
// name, rank, collective name, split sizes, ...). Nested inside the c10d op, so it counts only
// where no outer op is modelled. The older form without tensors first is unmodelled.
bool param_comms(const OpArgs& args, OpCost& cost) {
  // torch.profiler's form (docs/formats.md §4): named element counts, dtype and group size, with
  // or without the positional tensors.
  if (const Value* nelems = args.get("in_nelems"); nelems && nelems->kind == Value::Kind::kInt) {
    const Value* dtype_value = args.get("dtype");
    const std::string dtype =
        dtype_value && dtype_value->kind == Value::Kind::kString ? dtype_value->s : "";
    const int size = dtype_size(dtype);
    if (size <= 0 || nelems->i < 0) {
      return unmodeled(cost, "record_param_comms: unknown dtype or element count");
    }
    const Value* name = args.get("collective");
    const std::string kind =
        name && name->kind == Value::Kind::kString && !name->s.empty() ? name->s : "comms";
    cost.flops = 0;
    cost.bytes = static_cast<double>(nelems->i) * size;
    cost.dtype = dtype;
    cost.tc_eligible = false;
    if (const Value* group = args.get("group_size"); group && group->kind == Value::Kind::kInt) {
      cost.group = static_cast<int32_t>(std::clamp<int64_t>(group->i, 0, INT32_MAX));
    }
    cost.params = kind + ",bytes=" + std::to_string(static_cast<int64_t>(cost.bytes)) +
                  dtype_suffix(dtype) +
                  (cost.group > 0 ? ",group=" + std::to_string(cost.group) : "");
    return true;
  }
  size_t count = 0;
  std::string dtype;
  double bytes = payload(args.at(0), &count, &dtype);
  if (bytes < 0) return unmodeled(cost, "record_param_comms: no input tensors");
  std::string kind = "comms";
  size_t kind_at = 0;
  for (size_t i = 1; i < args.size() && i < 7; ++i) {
    const Value* v = args.at(i);
    if (v->kind == Value::Kind::kString && !v->s.empty() && v->s[0] != '<') {
      kind = v->s;
      kind_at = i;
      break;
    }
  }
  cost.flops = 0;
  cost.bytes = bytes;
  cost.dtype = dtype;
  cost.tc_eligible = false;
  // RECORD_PARAM_COMMS_DATA's inputs (tensors, seq, pg name, rank, collective name, in splits,
  // out splits, global rank start, stride, group size): with the name at 4, 9 is the group size.
  if (const Value* group = kind_at == 4 && args.size() >= 10 ? args.at(9) : nullptr;
      group && group->kind == Value::Kind::kInt && group->i > 0) {
    cost.group = static_cast<int32_t>(std::min<int64_t>(group->i, INT32_MAX));
  }
  cost.params = kind + ",bytes=" + std::to_string(static_cast<int64_t>(bytes)) +
                dtype_suffix(dtype) +
                (cost.group > 0 ? ",group=" + std::to_string(cost.group) : "");
  return true;
}

}  // namespace

void register_collectives(Registry& r) {
  const std::string f = "collectives";
  // c10d (ProcessGroup) ops. Their names end in "_" for real: registered exactly. c10d::scatter_
  // and c10d::gather_ are left out: op_cost drops the namespace, and "scatter_" is also
  // aten::scatter_ (the movement family's scatter).
  r.add("allreduce_", f, model({"allreduce", "tensors", 0}));
  r.add("allreduce_coalesced_", f, model({"allreduce", "tensors", 0}));
  r.add("broadcast_", f, model({"broadcast", "tensors", 0}));
  r.add("reduce_", f, model({"reduce", "tensors", 0}));
  r.add("allgather_", f, model({"allgather", "input_tensors", 1}));
  r.add("_allgather_base_", f, model({"allgather", "input_tensor", 1}));
  r.add("allgather_coalesced_", f, model({"allgather", "input_list", 1}));
  r.add("allgather_into_tensor_coalesced_", f, model({"allgather", "inputs", 1}));
  // reduce_scatter_(output_tensors, input_tensors[][]): the input is a list of lists, which the
  // args decoder does not read; counted when it becomes readable.
  r.add("reduce_scatter_", f, model({"reduce_scatter", "input_tensors", 1}));
  r.add("_reduce_scatter_base_", f, model({"reduce_scatter", "input_tensor", 1}));
  r.add("reduce_scatter_tensor_coalesced_", f, model({"reduce_scatter", "inputs", 1}));
  r.add("alltoall_", f, model({"alltoall", "input_tensors", 1}));
  r.add("alltoall_base_", f, model({"alltoall", "input", 1}));
  r.add("send", f, model({"send", "tensors", 0}));
  r.add("recv_", f, model({"recv", "tensors", 0}));
  r.add("recv_any_source_", f, model({"recv", "tensors", 0}));
  // Functional collectives (_c10d_functional, _c10d_functional_autograd, and the older
  // c10d_functional whose first argument is "self"); legacy PyProf torch.distributed.all_reduce
  // and broadcast (tensor first).
  r.add("all_reduce", f, model({"allreduce", "input", 0, "self"}));
  r.add("all_reduce_coalesced", f, model({"allreduce", "inputs", 0, "self"}));
  r.add("all_gather_into_tensor", f, model({"allgather", "input", 0, "self"}));
  r.add("all_gather_into_tensor_coalesced", f, model({"allgather", "inputs", 0, "self"}));
  r.add("reduce_scatter_tensor", f, model({"reduce_scatter", "input", 0, "self"}));
  r.add("reduce_scatter_tensor_coalesced", f, model({"reduce_scatter", "inputs", 0, "self"}));
  r.add("all_to_all_single", f, model({"alltoall", "input", 0, "self"}));
  r.add("isend", f, model({"send", "tensor", 0}));
  r.add("irecv", f, model({"recv", "tensor", 0}));
  r.add("broadcast", f, model({"broadcast", "tensor", 0, "self"}));
  r.add("all_gather", f, legacy_all_gather);
  r.add("record_param_comms", f, param_comms);
  // Symmetric-memory collectives (torch/csrc/distributed/c10d/symm_mem, namespace symm_mem): the
  // payload is the input; NVLink SHARP (multimem) or peer loads do the reduction, not NCCL.
  for (const char* op :
       {"multimem_all_reduce_", "one_shot_all_reduce", "two_shot_all_reduce_",
        "multimem_one_shot_all_reduce", "one_shot_all_reduce_out", "two_shot_all_reduce_out"}) {
    r.add(std::string("symm_mem::") + op, f, model({"allreduce", "input", 0}));
  }
  r.add("symm_mem::multimem_all_gather_out", f, model({"allgather", "input", 0}));
  r.add("symm_mem::reduce_scatter_out", f, model({"reduce_scatter", "input", 0}));
  r.add("symm_mem::multimem_one_shot_reduce_out", f, model({"reduce", "input", 0}));
  // vLLM: its custom all-reduce (csrc/torch_bindings.cpp, _C_custom_ar): all_reduce(int fa,
  // Tensor inp, Tensor! out, int reg_buffer, int reg_buffer_sz_bytes) and ROCm's quick reduce
  // qr_all_reduce(int fa, Tensor inp, Tensor out, int quant_level, bool cast_bf2half); and the
  // collectives it registers for torch.compile (vllm/distributed/parallel_state.py):
  // all_reduce(Tensor tensor, str group_name), all_gather / reduce_scatter(Tensor tensor,
  // int dim, int world_size, str group_name).
  r.add("_C_custom_ar::all_reduce", f, model({"allreduce", "inp", 1}));
  r.add("_C_custom_ar::qr_all_reduce", f, model({"allreduce", "inp", 1}));
  r.add("vllm::all_reduce", f, model({"allreduce", "tensor", 0}));
  r.add("vllm::all_gather", f, model({"allgather", "tensor", 0, nullptr, "world_size", 2}));
  r.add("vllm::reduce_scatter", f,
        model({"reduce_scatter", "tensor", 0, nullptr, "world_size", 2}));
}

}  // namespace pyprof::models
