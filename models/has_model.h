// Whether an op has a cost model at all, whatever its arguments: the question prof's reports
// ask of the ops whose records are not modelled (docs/prof.md §3, the summary's ops without a
// FLOP model), apart from op_cost(), which answers for one call. A header of its own, so that
// asking it does not recompile every model.
#pragma once

#include <string_view>

namespace pyprof::models {

// True when op_cost() would find a model of `op` ("vllm::moe_forward", "aten::addmm",
// "add_"): a user model installed for it (models/user_models.h) or a registry entry under its
// qualified name, its bare name or its in-place variant's. A record of such an op may still be
// unmodelled (its arguments were not recorded, or did not fit); a record of any other op is.
bool has_op_model(std::string_view op);

}  // namespace pyprof::models
