// What the marker decoders share, internal to them: markers.cpp decodes pyprof JSON markers and
// legacy PyProf dicts and picks the dialect of each message; emit_nvtx_marker.cpp decodes
// PyTorch's emit_nvtx strings. The rest of parse includes markers.h only.
#pragma once

#include <cstddef>
#include <limits>
#include <string_view>

#include "parse/markers.h"

namespace pyprof::parse {

// The autograd engine's wrapper around each backward node it runs: a FUNCTION-scope
// RecordFunction named after the node, yet no op of its own.
inline constexpr std::string_view kEvaluateFunctionPrefix = "autograd::engine::evaluate_function: ";

// Appends `what` and `detail` to `out.error`, after a "; " when it already says something.
void add_error(Marker& out, std::string_view what, std::string_view detail = {});

// `[a-z_][A-Za-z0-9_]*` namespaces, then `[A-Za-z_][A-Za-z0-9_.]*`: "aten::addmm",
// "c10d::allreduce_", "_C::rms_norm". Namespaces must start in lower case because other
// libraries' NVTX ranges look like C++ qualified names too (nvFuser's "Fusion::resetTvUses",
// "GpuLower::Lower::validateIr") while operator namespaces are lower case by convention.
// `max_namespaces`: registered operators have exactly one; where nothing else says the text came
// from torch, "fusion_executor::allocations::inferShape" must not pass for an op.
bool is_namespaced_op(std::string_view s,
                      size_t max_namespaces = std::numeric_limits<size_t>::max());

// Decodes an emit_nvtx string of any era (markers.h lists them). Returns false when the text is
// no emit_nvtx string; `out` may then hold partial fields.
bool decode_emit_nvtx(std::string_view text, Marker& out);

}  // namespace pyprof::parse
