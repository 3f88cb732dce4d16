// Placeholder: the softmax family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_softmax(Registry&) {}

}  // namespace pyprof::models
