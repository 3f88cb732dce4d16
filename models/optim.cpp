// Placeholder: the optim family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_optim(Registry&) {}

}  // namespace pyprof::models
