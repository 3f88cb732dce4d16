// Placeholder: the collectives family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_collectives(Registry&) {}

}  // namespace pyprof::models
