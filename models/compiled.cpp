// The cost of a kernel torch.compile (Inductor) generated: docs/ops.md "compiled kernels".
#include <simdjson.h>

#include <algorithm>
#include <string>

#include "models/op_model.h"

namespace pyprof::models {

namespace {
namespace dom = simdjson::dom;

// Sum of the bytes of a list of tensors ({"shape","dtype",...}); false when one has no readable
// extent (a symbolic shape under dynamic shapes).
bool buffer_bytes(dom::element list, double& bytes, std::string& dtype) {
  dom::array items;
  if (list.get_array().get(items) != simdjson::SUCCESS) return false;
  for (dom::element item : items) {
    dom::object o;
    dom::array shape;
    if (item.get_object().get(o) != simdjson::SUCCESS ||
        o["shape"].get_array().get(shape) != simdjson::SUCCESS) {
      return false;
    }
    Tensor t;
    for (dom::element d : shape) {
      int64_t v;
      if (d.get_int64().get(v) != simdjson::SUCCESS || v < 0) return false;
      t.shape.push_back(v);
    }
    std::string_view name;
    if (o["dtype"].get_string().get(name) == simdjson::SUCCESS) t.dtype = name;
    if (dtype.empty()) dtype = t.dtype;
    bytes += tensor_bytes(t);
  }
  return true;
}
}  // namespace

// A fused kernel runs its ATen nodes on values it keeps in registers: its FLOPs are the sum of
// its nodes' FLOPs, each from that op's own model, and its ideal DRAM traffic is the buffers it
// reads and writes once each (the nodes' inputs made outside the kernel, and their outputs used
// outside it), not the sum of the nodes' bytes: what fusion saved.
OpCost compiled_kernel_cost(std::string_view kernel_json, CompiledKernelNodes* nodes_out) {
  OpCost cost;
  CompiledKernelNodes nodes;
  thread_local dom::parser parser;
  dom::element root;
  dom::array list;
  if (parser.parse(kernel_json.data(), kernel_json.size()).get(root) != simdjson::SUCCESS ||
      root["nodes"].get_array().get(list) != simdjson::SUCCESS) {
    if (nodes_out) *nodes_out = nodes;
    return cost;
  }
  int64_t missing = 0;
  if (root["missing"].get_int64().get(missing) != simdjson::SUCCESS) missing = 0;
  nodes.missing = missing;
  bool tc = false;
  for (dom::element node : list) {
    std::string_view op;
    dom::element args;
    if (node["op"].get_string().get(op) != simdjson::SUCCESS) continue;
    ++nodes.count;
    std::string args_json;
    if (node["args"].get(args) == simdjson::SUCCESS) args_json = simdjson::minify(args);
    const OpCost c = op_cost(op, OpArgs::from_json(args_json));
    if (c.modeled) {
      ++nodes.modeled;
      cost.flops += c.flops;
      nodes.unfused_bytes += c.bytes;
      tc = tc || c.tc_eligible;
    } else if (std::find(nodes.unmodeled.begin(), nodes.unmodeled.end(), op) ==
               nodes.unmodeled.end()) {
      nodes.unmodeled.emplace_back(op);
    }
  }
  std::string dtype;
  double bytes = 0;
  dom::element reads, writes;
  const bool have_bytes = root["reads"].get(reads) == simdjson::SUCCESS &&
                          root["writes"].get(writes) == simdjson::SUCCESS &&
                          buffer_bytes(writes, bytes, dtype) && buffer_bytes(reads, bytes, dtype);
  if (nodes_out) *nodes_out = nodes;
  // Exact only when every node has a model and the buffers have sizes; else "na", as any op
  // without a model.
  if (!have_bytes || nodes.modeled != nodes.count || missing > 0 || !(cost.flops < kMaxCount) ||
      !(bytes < kMaxCount)) {
    cost.flops = 0;
    return cost;
  }
  cost.modeled = true;
  cost.bytes = bytes;
  cost.tc_eligible = tc;
  cost.dtype = dtype;
  cost.family = "compiled";
  cost.params = "nodes=" + std::to_string(nodes.count);
  if (!dtype.empty()) cost.params += "," + short_dtype(dtype);
  cost.params += ",unfused_bytes=" + std::to_string(static_cast<int64_t>(nodes.unfused_bytes));
  return cost;
}

}  // namespace pyprof::models
