#include "prof/record_links.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace pyprof::prof {

void link_cpu_parents(const std::vector<CpuOp>& cpu_ops, std::vector<ProfRecord>& records) {
  struct Key {
    int64_t pid, id;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.id) ^ (std::hash<int64_t>()(k.pid) << 1);
    }
  };
  std::unordered_map<Key, int32_t, KeyHash> by_id;
  for (const CpuOp& op : cpu_ops) {
    if (op.id != 0) by_id[{op.pid, op.id}] = op.record;  // a repeated id: the last one wins
  }
  for (const CpuOp& op : cpu_ops) {
    if (op.parent_id == 0) continue;
    auto it = by_id.find({op.pid, op.parent_id});
    if (it != by_id.end()) records[op.record].parent = it->second;
  }
}

// A forward op whose backward is estimated from its own cost (no backward arguments: emit_nvtx,
// legacy PyProf) may have several backward nodes, each with kernels; the estimate is charged
// once (docs/prof.md §1, "Backward"):
// - a GEMM-like op's estimate (matmul, conv: its dgrad and wgrad) is the work of the nodes that
//   ran an op of its family (MmBackward's aten::mm for a linear). The kernels of its other
//   nodes (UnsafeViewBackward's clone, AddBackward0's bias sum) did none of it: they are left
//   unmodelled (their own cost is unknown without the backward ops' arguments), in the family
//   of the op they ran;
// - otherwise (a composite such as cross_entropy, whose NllLossBackward and LogSoftmaxBackward
//   each do part of the work, or nodes whose ops are not known) the estimate is split equally
//   between the nodes.
// Within a node, its kernels share the node's part by duration (assign_costs).
void charge_backward_estimates(ReadResult& result) {
  struct Node {
    int64_t instance;
    bool work;  // ran an op of the forward op's family
  };
  struct Forward {
    std::vector<Node> nodes;
    bool gemm_like = false;
  };
  std::unordered_map<int64_t, Forward> forwards;  // by the forward op's instance
  const uint32_t matmul = result.strings.intern("matmul"), conv = result.strings.intern("conv");
  for (const ProfRecord& r : result.records) {
    if (!r.estimated || !r.fwd_instance || !r.instance) continue;
    Forward& f = forwards[r.fwd_instance];
    f.gemm_like = f.gemm_like || r.family == matmul || r.family == conv;
    auto it = std::find_if(f.nodes.begin(), f.nodes.end(),
                           [&](const Node& n) { return n.instance == r.instance; });
    if (it == f.nodes.end()) it = f.nodes.insert(f.nodes.end(), Node{r.instance, false});
    it->work = it->work || r.bwd_op_family == r.family;
  }
  for (auto& [instance, f] : forwards) {
    const bool by_work = f.gemm_like && std::any_of(f.nodes.begin(), f.nodes.end(),
                                                    [](const Node& n) { return n.work; });
    if (!by_work) {
      for (Node& n : f.nodes) n.work = true;
    }
  }
  for (ProfRecord& r : result.records) {
    if (!r.estimated || !r.fwd_instance || !r.instance) continue;
    const Forward& f = forwards[r.fwd_instance];
    const auto work = static_cast<size_t>(
        std::count_if(f.nodes.begin(), f.nodes.end(), [](const Node& n) { return n.work; }));
    const bool mine = std::any_of(f.nodes.begin(), f.nodes.end(), [&](const Node& n) {
      return n.instance == r.instance && n.work;
    });
    if (!mine) {
      r.modeled = r.estimated = r.tc_eligible = false;
      r.flops = r.bytes = r.op_flops = r.op_bytes = r.op_masked_flops = 0;
      r.family = r.bwd_op_family;  // what it ran (a copy, a reduction), not the estimate's
      continue;
    }
    const double share = 1.0 / static_cast<double>(work);
    r.flops *= share;
    r.bytes *= share;
    r.op_flops *= share;
    r.op_bytes *= share;
    r.op_masked_flops *= share;
  }
}

}  // namespace pyprof::prof
