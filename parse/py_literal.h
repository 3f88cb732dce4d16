// Python literals as JSON. apex/NVIDIA PyProf wrote its NVTX markers as repr() of Python dicts
// ("{'mod': 'torch.nn.functional', 'op': 'linear', 'args': [{'shape': (32, 128), ...}]}"), which
// no JSON library reads; markers.cpp converts them with this and then reads them as JSON.
#pragma once

#include <string>
#include <string_view>

namespace pyprof::parse {

// Converts a Python literal (what repr() of dicts, lists, tuples, str, int, float, bool, None
// prints) to JSON. Returns false (and leaves an explanation in `error`) on anything else;
// nesting deeper than 64 levels is refused. `json` and `error` are cleared first; `json` is left
// empty on failure, and running out of memory is such a failure.
bool python_literal_to_json(std::string_view literal, std::string& json, std::string& error);

}  // namespace pyprof::parse
