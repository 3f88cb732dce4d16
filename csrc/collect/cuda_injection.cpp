// The CUDA driver's entry point into the collector (CUDA_INJECTION64_PATH): cuInit calls
// InitializeInjection once per process, before any other CUDA work.

#include "collector.h"
#include "cupti_tracer.h"
#include "pyprof_collect.h"

extern "C" int InitializeInjection(void) {
  using namespace pyprof::collect;
  try {
    Collector* collector = Collector::initialize();
    if (collector != nullptr) CuptiTracer::start(*collector);
  } catch (...) {
  }
  return 1;  // CUDA goes on either way: tracing is never a reason to fail cuInit
}
