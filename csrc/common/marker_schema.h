// The version of the marker JSON (docs/formats.md §1): annotate writes it as the "v" key of every
// op and module marker, and parse may read it. Here rather than in annotate so that readers can
// share it without depending on torch.
#pragma once

namespace pyprof {

// Bump on incompatible changes only: adding a key is not one (readers ignore keys they do not
// know); removing a key or changing its meaning is.
inline constexpr int kMarkerSchemaVersion = 1;

}  // namespace pyprof
