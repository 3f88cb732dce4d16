// Placeholder: the matmul family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_matmul(Registry&) {}

}  // namespace pyprof::models
