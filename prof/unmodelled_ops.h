// The time of ops without a FLOP model, per op (docs/prof.md §3, the summary's "unmodelled op N"
// rows and its `unmodelled` table; docs/advice.md `unmodelled-ops`): what a user would add a
// model for (docs/ops.md "Adding your own models", `pyprof prof --op-models FILE`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "prof/records.h"

namespace pyprof::prof {

struct UnmodelledOp {
  std::string op;  // the op as records name it (bprop: the backward op that ran)
  int64_t time = 0;
  int64_t records = 0;
};

struct UnmodelledTime {
  // The profile's time, the summary's denominator: GPU the kernels', copies' and memsets'
  // durations; CPU the ops' self times.
  int64_t total = 0;
  // The ops that neither pyprof's registry nor a user model knows (models/has_model.h), with the
  // time of their records that no FLOP model covers, most time first (ties: by name). Not here:
  // records of modelled ops, even at 0 FLOPs (movement ops); torch.compile's kernels (the
  // summary's Inductor and C++ wrapper rows); copies and memsets.
  std::vector<UnmodelledOp> ops;
  int64_t unmodelled = 0;  // the sum of ops' time
  // The ops that have a model whose calls it could not cost (`na`: an argument the record does
  // not carry, a shape the model does not know), with the same time, most first: the time that
  // "covered by a FLOP model" misses beside the unmodelled ops'.
  std::vector<UnmodelledOp> uncosted;
  int64_t uncosted_time = 0;  // the sum of uncosted's time
  // Records with no op to model, outside every covered call tree: GPU kernels launched outside
  // every op; CPU a backward node's own record (its ops carry the cost) or a record without op.
  int64_t no_op_time = 0;
  int64_t no_op_records = 0;
};

// CPU-only profiles: per record, whether it is a counted op or runs inside one, so that a FLOP
// model covers its self time (counted ops never nest: assign_costs counts a call tree at its
// outermost modelled op).
std::vector<bool> cpu_under_counted_ops(const std::vector<ProfRecord>& records);

// The time of `data`'s records whose op has no model: GPU their durations; CPU the self time of
// those not inside a counted op (an unmodelled op's modelled callees are covered already).
// `under`: cpu_under_counted_ops(data.records) when the caller has it (CPU), else null.
UnmodelledTime unmodelled_time(const ReadResult& data, const std::vector<bool>* under = nullptr);

// `pyprof-prof --unmodelled-calls`: data.unmodelled_calls (ReadOptions::list_unmodelled_calls)
// as JSON Lines, one {"op":..,"args":..,"records":N} per call, `args` the call's args JSON as a
// string, byte for byte as net.dict holds it (docs/formats.md §5): the calls the Python front
// costs with the formulas registered with PyTorch (`--flop-registry`).
std::string unmodelled_calls_json_lines(const ReadResult& data);

}  // namespace pyprof::prof
