// The user's call site (file:line) of an op called from Python, for `init(with_stack=True)`.
#pragma once

#include <string>
#include <vector>

namespace pyprof {

// Frames whose file starts with one of these prefixes (torch's and pyprof's own package
// directories) are framework frames and are skipped.
void set_framework_prefixes(std::vector<std::string> prefixes);

// Writes "file:line" of the innermost non-framework Python frame of the calling thread into
// `out`, or clears it when the thread runs no Python code. Takes the GIL briefly.
void current_call_site(std::string& out);

}  // namespace pyprof
