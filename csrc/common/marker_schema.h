// The version of the marker JSON (docs/formats.md §1): annotate writes it as the "v" key of every
// op and module marker, and parse may read it. Here rather than in annotate so that readers can
// share it without depending on torch.
#pragma once

namespace pyprof {

// Bump on incompatible changes only: adding a key is not one (readers ignore keys they do not
// know); removing a key or changing its meaning is.
inline constexpr int kMarkerSchemaVersion = 1;

// Interned op markers (docs/formats.md §1.1, interned form): the same JSON without the per-call
// "id" and "seq", registered once as an NVTX string per distinct (op, arguments, thread, call site)
// and pushed by handle; the call's id travels as the range's uint64 payload and seq + 1 as its
// category (0: no seq). Removing those keys changes the marker's meaning, hence its own version.
inline constexpr int kInternedMarkerSchemaVersion = 2;

// The NVTX domain of the ranges pyprof opens around each launch configuration Triton's autotuner
// benchmarks (docs/compile.md): what runs inside one is not the program's work, and prof leaves
// it out of the reports. parse writes such a range in `user_ranges` as "pyprof.autotune:<text>".
inline constexpr char kAutotuneDomain[] = "pyprof.autotune";

}  // namespace pyprof
