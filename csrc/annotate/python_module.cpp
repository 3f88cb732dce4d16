// pyprof._C: the Python bindings of the annotation layer. Kept to argument plumbing; the logic
// lives in op_annotator.cpp (ops), nvtx_ranges.cpp (module and user ranges), call_site.cpp.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "call_site.h"
#include "collector_link.h"
#include "common/marker_schema.h"
#include "memory_capture.h"
#include "module_ranges.h"
#include "nvtx_ranges.h"
#include "op_annotator.h"
#include "op_marker.h"

namespace py = pybind11;

namespace {

// Finalizes our collector's database now, if our collector is the attached NVTX tool. Needed
// before os._exit(), which skips the collector's atexit handler (DataLoader workers end so).
bool shutdown_collector() {
  using ShutdownFn = int (*)();
  auto shutdown =
      reinterpret_cast<ShutdownFn>(pyprof::collector_function("pyprof_collect_shutdown"));
  if (shutdown == nullptr) return false;
  pyprof::report_memory_capture_final();  // its counts, before the statistics are written
  return shutdown() == 0;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "pyprof annotation layer (RecordFunction hook and NVTX ranges)";
  m.attr("MARKER_SCHEMA_VERSION") = pyprof::kMarkerSchemaVersion;
  m.attr("MARKER_DOMAIN") = pyprof::kMarkerDomain;
  m.attr("AUTOTUNE_DOMAIN") = pyprof::kAutotuneDomain;

  m.def("tool_attached", &pyprof::nvtx_tool_attached,
        "True when an NVTX tool (pyprof's collector, Nsight Systems) is attached.");
  m.def(
      "install",
      [](bool with_stack, std::vector<std::string> framework_prefixes, bool intern_markers) {
        pyprof::set_framework_prefixes(std::move(framework_prefixes));
        pyprof::AnnotatorOptions options;
        options.with_stack = with_stack;
        options.intern_markers = intern_markers;
        return pyprof::install_op_annotator(options);
      },
      py::arg("with_stack") = false, py::arg("framework_prefixes") = std::vector<std::string>{},
      py::arg("intern_markers") = true,
      "Install the RecordFunction callback; False (and nothing installed) without an NVTX tool.");
  m.def("uninstall", &pyprof::uninstall_op_annotator);
  m.def("installed", &pyprof::op_annotator_installed);
  m.def("pause_annotation", &pyprof::pause_annotation, py::arg("pause"),
        "Stop annotating this thread's ops (True) or resume the paused thread (False).");
  m.def("stats", [] {
    const auto s = pyprof::annotator_stats();
    py::dict d;
    d["ops_annotated"] = s.ops_annotated;
    d["message_bytes"] = s.message_bytes;
    d["interned"] = s.interned;
    d["markers_registered"] = s.markers_registered;
    d["not_interned"] = s.not_interned;
    d["paused"] = s.paused;
    const auto memory = pyprof::memory_capture_stats();
    d["memory_threads"] = memory.threads;
    d["memory_ops_unseen"] = memory.ops_unseen;
    d["memory_ops_blocked"] = memory.ops_blocked;
    d["memory_step_asides"] = memory.step_asides;
    return d;
  });

  m.def(
      "install_memory_capture", [] { return pyprof::install_memory_capture(); },
      "Record every allocation and free (memory_capture.h); '' when on, else why not.");
  m.def("uninstall_memory_capture", &pyprof::uninstall_memory_capture);
  m.def("memory_capture_installed", &pyprof::memory_capture_installed);
  m.def("report_memory_capture", &pyprof::report_memory_capture, py::arg("status"),
        "Tell the collector what memory capture does (META_DATA_CAPTURE PYPROF_MEMORY_CAPTURE).");
  m.def("memory_step_aside", &pyprof::memory_step_aside,
        "Free this thread's profiler slot for torch.profiler: 1 freed, 0 not held, -1 cannot.");

  m.def(
      "register_marker_string",
      [](const std::string& message) { return pyprof::register_marker_string(message); },
      py::arg("message"));
  m.def("push_registered_marker", &pyprof::push_registered_marker, py::arg("handle"));
  m.def("pop_marker", &pyprof::pop_marker);

  m.def("push_range", &pyprof::push_user_range, py::arg("message"), py::arg("argb") = 0u,
        py::arg("domain") = std::string());
  m.def("pop_range", &pyprof::pop_user_range, py::arg("domain") = std::string());
  m.def("mark", &pyprof::mark, py::arg("message"), py::arg("argb") = 0u,
        py::arg("domain") = std::string());

  for (PyMethodDef* def = pyprof::kModuleRangeMethods; def->ml_name != nullptr; ++def) {
    m.add_object(def->ml_name, py::reinterpret_steal<py::object>(PyCFunction_New(def, nullptr)));
  }

  m.def("collector_shutdown", &shutdown_collector,
        "Finalize pyprof's collector database now (before os._exit); False if not attached.");
}
