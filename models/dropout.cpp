// Placeholder: the dropout family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_dropout(Registry&) {}

}  // namespace pyprof::models
