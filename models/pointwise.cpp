// Placeholder: the pointwise family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_pointwise(Registry&) {}

}  // namespace pyprof::models
