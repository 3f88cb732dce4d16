// The C API of pyprof's collector (csrc/collect/pyprof_collect.h), found at run time in the NVTX
// injection library this process already loaded. pyprof._C does not link the collector: under
// Nsight Systems, or with no tool at all, the functions are simply absent.
#pragma once

namespace pyprof {

// The collector's exported function `name`, or nullptr when the attached NVTX tool is not
// pyprof's collector (or none is attached yet). The library stays loaded: the pointer is valid
// for the life of the process.
void* collector_function(const char* name);

}  // namespace pyprof
