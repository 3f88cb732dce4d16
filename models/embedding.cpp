// Placeholder: the embedding family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_embedding(Registry&) {}

}  // namespace pyprof::models
