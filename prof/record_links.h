// What joins prof's records once the whole net.dict is read (prof/records.cpp's read_dict and
// assign_costs): the CPU ops' call trees, and the charge of a backward estimated from its forward
// op across that op's backward nodes.
#pragma once

#include <cstdint>
#include <vector>

#include "prof/records.h"

namespace pyprof::prof {

// What links a CPU op record to the one it runs inside: parse names the parent by its op id,
// which is unique within a process.
struct CpuOp {
  int32_t record = 0;  // index in ReadResult::records
  int64_t pid = 0;
  int64_t id = 0;         // 0: the markers carry no op ids
  int64_t parent_id = 0;  // 0: at the top of a call tree
};

// Sets ProfRecord::parent of the CPU op records. After the whole input, not as records come: a
// parent may follow its child (parse orders records by start; equal starts keep database order).
void link_cpu_parents(const std::vector<CpuOp>& cpu_ops, std::vector<ProfRecord>& records);

// Charges each backward estimated from its forward op's cost (ProfRecord::estimated) once,
// across the forward op's backward nodes (docs/prof.md §1, "Backward"; the rule at its
// definition).
void charge_backward_estimates(ReadResult& result);

}  // namespace pyprof::prof
