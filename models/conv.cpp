// Placeholder: the conv family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_conv(Registry&) {}

}  // namespace pyprof::models
