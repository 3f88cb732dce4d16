// FLOP counts computed outside prof, one per distinct op call: the table `pyprof prof
// --flop-registry MODULE` writes from the formulas libraries register with PyTorch
// (torch.utils.flop_counter's register_flop_formula, docs/ops.md "Formulas registered with
// PyTorch"), and `pyprof-prof --flop-table FILE` reads (the format: docs/formats.md §6).
//
// A call is found by its op and its `args` text exactly as prof reads it from net.dict (the
// key prof memoises costs by), so the lookup is one hash per distinct call. An entry of an op
// that pyprof models (its registry or a user model, models/has_model.h) is ignored: pyprof's
// model wins. The table holds FLOPs only; a call's bytes are the tensors its record lists
// (every tensor argument, lists flattened) plus the outputs the table states (`out_bytes`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/op_model.h"

namespace pyprof::models {

struct FlopTableEntry {
  double flops = 0;
  double out_bytes = 0;  // bytes of the outputs the record does not list; 0: not known
  std::string params;    // what prof's Params column shows: "registry=torch.utils.flop_counter"
  std::string where;     // "FILE:LINE", for messages
};

class FlopTable {
 public:
  // Adds the entries of `text`, read from `file` (named in errors). False with `error`
  // ("FILE:LINE: message") at the first line that is not right; then nothing of `text` is
  // added. A call given twice with the same FLOPs is kept once; with other FLOPs, an error.
  bool add_text(std::string_view text, const std::string& file, std::string& error);
  bool add_file(const std::string& path, std::string& error);
  // Removes the entries of ops `has_op_model` says pyprof models; returns those ops, sorted.
  std::vector<std::string> drop_modelled_ops();

  // The entry of the call of `op` with `args` (net.dict's args text), or null.
  const FlopTableEntry* find(std::string_view op, std::string_view args) const;
  size_t size() const { return entries_.size(); }

 private:
  std::unordered_map<std::string, FlopTableEntry> entries_;  // op + '\n' + args -> entry
};

// The cost of one call from its table entry: FLOPs from the table, bytes the record's tensors
// plus the entry's out_bytes, the dtype that of the first tensor argument, family "user", not
// Tensor Core eligible.
bool flop_table_cost(const FlopTableEntry& entry, const OpArgs& args, OpCost& cost);

// Reads `files` and installs their entries for op_cost(), after the user models (whose ops
// count as modelled). `notes`: one line per file whose entries name ops pyprof models (those
// entries ignored). False with `error` naming the file and line of the first problem (nothing
// installed). Installed once, before any op is costed; an empty list installs nothing.
bool load_flop_tables(const std::vector<std::string>& files, std::vector<std::string>& notes,
                      std::string& error);
void install_flop_table(FlopTable table);
const FlopTable* installed_flop_table();

}  // namespace pyprof::models
