// Placeholder: the pooling family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_pooling(Registry&) {}

}  // namespace pyprof::models
