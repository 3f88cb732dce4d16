#include "module_ranges.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "nvtx_ranges.h"

namespace pyprof {
namespace {

// All of this is touched only with the GIL held (hooks and registration run in Python).
std::unordered_map<const PyObject*, uint64_t> g_marker_of_module;  // key: id(module)
PyObject* g_namer = nullptr;                                       // owned reference

// Modules whose range is open on this thread, innermost last (borrowed: a module is alive
// while its forward runs).
thread_local std::vector<PyObject*> t_open_modules;

bool check_arity(const char* name, Py_ssize_t nargs, Py_ssize_t expected) {
  if (nargs == expected) return true;
  PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", name, expected, nargs);
  return false;
}

PyObject* module_pre_hook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_arity("module_pre_hook", nargs, 2)) return nullptr;
  PyObject* module = args[0];
  uint64_t handle = 0;
  auto it = g_marker_of_module.find(module);
  if (it != g_marker_of_module.end()) {
    handle = it->second;
  } else {
    if (g_namer == nullptr) Py_RETURN_NONE;  // not initialised: record nothing
    PyObject* parent = t_open_modules.empty() ? Py_None : t_open_modules.back();
    PyObject* result = PyObject_CallFunctionObjArgs(g_namer, module, parent, nullptr);
    if (result != nullptr) {
      handle = PyLong_AsUnsignedLongLong(result);
      Py_DECREF(result);
    }
    if (PyErr_Occurred()) {
      // A profiler must never break the program: report once, then leave this module without
      // a range (its post-hook then finds it is not on top and pops nothing).
      static bool reported = false;
      if (!reported) {
        reported = true;
        PyErr_WriteUnraisable(module);
      }
      PyErr_Clear();
      Py_RETURN_NONE;
    }
  }
  push_registered_marker(handle);
  t_open_modules.push_back(module);
  Py_RETURN_NONE;
}

PyObject* module_post_hook(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_arity("module_post_hook", nargs, 3)) return nullptr;
  // Only pop what this module pushed: init() may have run while a forward was in progress.
  if (!t_open_modules.empty() && t_open_modules.back() == args[0]) {
    t_open_modules.pop_back();
    pop_marker();
  }
  Py_RETURN_NONE;
}

PyObject* set_module_marker(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_arity("set_module_marker", nargs, 2)) return nullptr;
  const uint64_t handle = PyLong_AsUnsignedLongLong(args[1]);
  if (PyErr_Occurred()) return nullptr;
  g_marker_of_module[args[0]] = handle;
  Py_RETURN_NONE;
}

PyObject* forget_module(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_arity("forget_module", nargs, 1)) return nullptr;
  void* key = PyLong_AsVoidPtr(args[0]);
  if (PyErr_Occurred()) return nullptr;
  g_marker_of_module.erase(static_cast<const PyObject*>(key));
  Py_RETURN_NONE;
}

PyObject* set_module_namer(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!check_arity("set_module_namer", nargs, 1)) return nullptr;
  PyObject* namer = args[0] == Py_None ? nullptr : args[0];
  Py_XINCREF(namer);
  Py_XSETREF(g_namer, namer);
  Py_RETURN_NONE;
}

}  // namespace

PyMethodDef kModuleRangeMethods[] = {
    {"module_pre_hook",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&module_pre_hook)), METH_FASTCALL,
     "Global nn.Module forward pre-hook: push the module's range."},
    {"module_post_hook",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&module_post_hook)), METH_FASTCALL,
     "Global nn.Module forward hook: pop the module's range."},
    {"set_module_marker",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&set_module_marker)), METH_FASTCALL,
     "set_module_marker(module, handle)"},
    {"forget_module", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&forget_module)),
     METH_FASTCALL, "forget_module(id(module))"},
    {"set_module_namer",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&set_module_namer)), METH_FASTCALL,
     "set_module_namer(fn): fn(module, parent_or_None) -> handle for unseen modules"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace pyprof
