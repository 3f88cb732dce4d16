// Placeholder: the movement family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_movement(Registry&) {}

}  // namespace pyprof::models
