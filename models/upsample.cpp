// Placeholder: the upsample family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_upsample(Registry&) {}

}  // namespace pyprof::models
