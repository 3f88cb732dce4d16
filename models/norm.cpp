// Placeholder: the norm family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_norm(Registry&) {}

}  // namespace pyprof::models
