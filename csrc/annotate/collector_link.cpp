#include "collector_link.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

namespace pyprof {

void* collector_function(const char* name) {
  // The handle RTLD_NOLOAD gives is a reference that is never dropped: the collector is never
  // unloaded anyway (NVTX keeps its injection), and the functions must stay callable. Not cached
  // while absent: NVTX loads the library at the process's first NVTX call.
  static std::atomic<void*> library{nullptr};
  void* handle = library.load(std::memory_order_acquire);
  if (handle == nullptr) {
    const char* path = std::getenv("NVTX_INJECTION64_PATH");
    if (path == nullptr || *path == '\0') return nullptr;
    handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) return nullptr;
    void* expected = nullptr;
    if (!library.compare_exchange_strong(expected, handle)) {
      dlclose(handle);  // another thread's reference is kept instead
      handle = expected;
    }
  }
  return dlsym(handle, name);
}

}  // namespace pyprof
