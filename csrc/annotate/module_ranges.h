// nn.Module ranges: the global forward pre/post hooks, written against the CPython C API.
//
// torch calls these hooks on every Module.__call__, so they are plain METH_FASTCALL functions:
// a Python hook (or a pybind11-wrapped one) cost ~3.8 us per module call in the overhead
// benchmark, most of pyprof's per-module cost. Naming a module the first time it is seen stays
// in Python (pyprof/_api.py), which registers the module's marker string here.
#pragma once

#include <Python.h>

namespace pyprof {

// Python-callable functions, added to the `_C` module by python_module.cpp:
//   module_pre_hook(module, args)            push the module's marker range
//   module_post_hook(module, args, output)   pop it (only if this module pushed the top range)
//   set_module_marker(module, handle)        the registered marker string of a module
//   forget_module(module_id)                 drop a dead module's entry (by id(module))
//   set_module_namer(fn)                     fn(module, parent_or_None) -> handle, called for a
//                                            module seen for the first time
extern PyMethodDef kModuleRangeMethods[];

}  // namespace pyprof
