#include "prof/unmodelled_ops.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "common/json_writer.h"
#include "models/has_model.h"
#include "prof/reports.h"

namespace pyprof::prof {

std::vector<bool> cpu_under_counted_ops(const std::vector<ProfRecord>& records) {
  // under[i]: 1 when record i is or runs inside a counted op, 0 when not, -1 not known yet.
  std::vector<int8_t> under(records.size(), -1);
  std::vector<int32_t> path;
  for (size_t i = 0; i < records.size(); ++i) {
    // Up the parents to a counted op, a known record or the top; the guard stops a cycle of
    // parent links, which only a malformed input can hold.
    path.clear();
    int8_t found = 0;
    for (int32_t p = static_cast<int32_t>(i); p >= 0 && path.size() < 1000;) {
      if (under[p] >= 0) {
        found = under[p];
        break;
      }
      if (records[p].counted) {
        found = 1;
        break;
      }
      path.push_back(p);
      p = records[p].parent;
    }
    for (int32_t p : path) under[p] = found;
    if (records[i].counted) under[i] = 1;
  }
  return {under.begin(), under.end()};
}

UnmodelledTime unmodelled_time(const ReadResult& data, const std::vector<bool>* under_counted) {
  const bool cpu = data.cpu_only;
  UnmodelledTime out;
  std::vector<bool> own;
  if (cpu && under_counted == nullptr) own = cpu_under_counted_ops(data.records);
  const std::vector<bool>& under = under_counted != nullptr ? *under_counted : own;
  // Per cost_op string id: its index in out.ops (an op without a model) or in out.uncosted (one
  // with a model), whichever list it belongs to.
  struct Slot {
    bool has_model = false;
    int32_t index = -1;
  };
  std::unordered_map<uint32_t, Slot> slots;
  for (size_t i = 0; i < data.records.size(); ++i) {
    const ProfRecord& r = data.records[i];
    const int64_t time = report_time(r, cpu);
    out.total += time;
    if (r.modeled || r.compiled || r.compiled_call || r.kind == Kind::kMemcpy ||
        r.kind == Kind::kMemset) {
      continue;
    }
    if (cpu && under[i]) continue;
    if (r.cost_op == 0) {
      out.no_op_time += time;
      ++out.no_op_records;
      continue;
    }
    auto [it, added] = slots.try_emplace(r.cost_op);
    Slot& slot = it->second;
    if (added) {
      const std::string_view op = data.strings.get(r.cost_op);
      slot.has_model = models::has_op_model(op);
      std::vector<UnmodelledOp>& list = slot.has_model ? out.uncosted : out.ops;
      slot.index = static_cast<int32_t>(list.size());
      list.push_back({std::string(op), 0, 0});
    }
    UnmodelledOp& op = (slot.has_model ? out.uncosted : out.ops)[static_cast<size_t>(slot.index)];
    op.time += time;
    ++op.records;
    (slot.has_model ? out.uncosted_time : out.unmodelled) += time;
  }
  for (std::vector<UnmodelledOp>* list : {&out.ops, &out.uncosted}) {
    std::sort(list->begin(), list->end(), [](const UnmodelledOp& a, const UnmodelledOp& b) {
      return a.time != b.time ? a.time > b.time : a.op < b.op;
    });
  }
  return out;
}

std::string unmodelled_calls_json_lines(const ReadResult& data) {
  std::string out;
  for (const ReadResult::UnmodelledCall& call : data.unmodelled_calls) {
    {
      // Strings whole: the args text is the table's key, and a cut one would match no record.
      pyprof::JsonWriter w(out, SIZE_MAX);
      w.begin_object();
      w.key("op");
      w.string(call.op);
      w.key("args");
      w.string(call.args);
      w.key("records");
      w.integer(call.records);
      w.end_object();
    }  // the writer trims `out` to what it wrote when it ends: the newline comes after
    out += '\n';
  }
  return out;
}

}  // namespace pyprof::prof
