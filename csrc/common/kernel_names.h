// Kernel names: demangling, and the short name that reports show.
//
// Two demangler styles reach us: GNU (__cxa_demangle, c++filt: "(anonymous namespace)",
// "{lambda()#1}", "4", "> >") for the names we demangle ourselves (nvprof, pyprof), and
// NVIDIA's (cu++filt, what Nsight Systems stores in demangledName: "<unnamed>",
// "[lambda() (instance 1)]", "(int)4", ">>"). The short name rule below works on both.
#pragma once

#include <string>
#include <string_view>

namespace pyprof {

// The demangled form of an Itanium C++ name ("_Z..."). Any other name, and a "_Z" name that
// does not demangle, is returned unchanged.
std::string demangle(std::string_view mangled);

// The kernel's bare function name, as Nsight Systems' shortName column gives it: return type,
// namespaces, enclosing classes, template arguments and the parameter list removed.
//   "void at::native::reduce_kernel<512, ...>(T3)"     -> "reduce_kernel"
//   "void cutlass::Kernel2<cutlass_80_tensorop_...>(...)" -> "Kernel2"
//   "<unnamed>::nvfuser_none_f0_c0_r0_g0(...)"          -> "nvfuser_none_f0_c0_r0_g0"
//   "volta_sgemm_128x64_nn"                              -> unchanged
// Names that are cut short (nsys ends long names with "...") give the name so far. Never empty
// unless `demangled` is. The view points into `demangled`.
std::string_view short_kernel_name(std::string_view demangled);

// Legacy PyProf's kShortName (pyprof/parse/kernel.py:getShortName), quirks included: cut at the
// first '<', remove every "void ", "at::", "cuda::", "native::", "(anonymous namespace)::",
// cut at the first '('. Only for comparing with legacy PyProf output; it keeps other
// namespaces ("cudnn::detail::implicit_convolve_sgemm") and gives "" for nsys-style
// "<unnamed>::name" kernels.
std::string legacy_short_kernel_name(std::string_view demangled);

}  // namespace pyprof
