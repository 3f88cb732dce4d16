// Placeholder: the rnn family's models are being written.
#include "models/op_model.h"

namespace pyprof::models {

void register_rnn(Registry&) {}

}  // namespace pyprof::models
