// Placeholder: the loss family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_loss(Registry&) {}

}  // namespace pyprof::models
