#include "call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <charconv>
#include <mutex>
#include <unordered_map>

namespace pyprof {
namespace {

std::mutex g_prefix_mutex;
std::vector<std::string> g_prefixes;

struct CodeInfo {
  std::string file;
  bool framework = false;
};

// Per thread, keyed by code object. A code object's address can be reused after it is freed,
// so the filename is checked again on every hit (cheap pointer compare of the interned str).
struct CodeCacheEntry {
  PyObject* filename = nullptr;
  CodeInfo info;
};

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

bool is_framework(const std::string& file) {
  if (file.empty() || file.front() == '<') return true;  // <frozen ...>, <string>
  std::lock_guard<std::mutex> lock(g_prefix_mutex);
  for (const auto& prefix : g_prefixes) {
    if (file.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

const CodeInfo& code_info(PyCodeObject* code) {
  thread_local std::unordered_map<PyCodeObject*, CodeCacheEntry> cache;
  PyObject* filename = code->co_filename;
  auto& entry = cache[code];
  if (entry.filename != filename) {
    entry.filename = filename;
    const char* utf8 = filename ? PyUnicode_AsUTF8(filename) : nullptr;
    if (utf8 == nullptr) PyErr_Clear();
    entry.info.file = utf8 ? utf8 : "";
    entry.info.framework = is_framework(entry.info.file);
  }
  return entry.info;
}

}  // namespace

void set_framework_prefixes(std::vector<std::string> prefixes) {
  std::lock_guard<std::mutex> lock(g_prefix_mutex);
  g_prefixes = std::move(prefixes);
}

void current_call_site(std::string& out) {
  out.clear();
  // Only threads that run Python have a call site; never create a thread state for others, and
  // never touch the interpreter while it shuts down.
  if (!Py_IsInitialized() || interpreter_finalizing() ||
      PyGILState_GetThisThreadState() == nullptr) {
    return;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const CodeInfo& info = code_info(code);
    Py_DECREF(code);
    if (!info.framework) {
      out = info.file;
      out.push_back(':');
      char buf[16];
      auto res = std::to_chars(buf, buf + sizeof buf, PyFrame_GetLineNumber(frame));
      out.append(buf, res.ptr);
      Py_DECREF(frame);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  PyGILState_Release(gil);
}

}  // namespace pyprof
