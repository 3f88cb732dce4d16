// Placeholder: the attention family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_attention(Registry&) {}

}  // namespace pyprof::models
