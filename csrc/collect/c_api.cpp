// The collector's C API besides the NVTX entry point (see pyprof_collect.h).

#include <string>

#include "collector.h"
#include "diagnostics.h"
#include "pyprof_collect.h"
#include "session_metadata.h"

extern "C" int pyprof_collect_shutdown(void) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  if (collector == nullptr) return 1;
  return collector->shutdown();
}

extern "C" const char* pyprof_collect_output_path(void) {
  pyprof::collect::Collector* collector = pyprof::collect::Collector::instance();
  return collector != nullptr ? collector->output_path() : nullptr;
}

extern "C" int pyprof_collect_write_empty(const char* path, const char* note) {
  try {
    if (path == nullptr || *path == '\0') return -1;
    std::string error;
    if (pyprof::collect::write_empty_database(path, note, &error)) return 0;
    pyprof::collect::print_line("cannot write an empty database: %s", error.c_str());
  } catch (...) {
  }
  return -1;
}
