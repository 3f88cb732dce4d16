// Placeholder: the reduction family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_reduction(Registry&) {}

}  // namespace pyprof::models
