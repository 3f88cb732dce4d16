// The least any RecordFunction + NVTX annotation can cost, for benchmarks/overhead.py's floor
// modes (docs/benchmarks.md §1.6). Not part of pyprof: a benchmark module built beside
// marker_bench, so that pyprof's own per-op cost can be told apart from what the mechanism
// the design rests on costs by itself on the same machine, in the same run.
//
//   install("record_function")  a global callback over pyprof's scopes that asks for the inputs
//                               (as pyprof's does) and does nothing with them
//   install("nvtx")             the same, and each op pushes one NVTX range by a registered
//                               string (the collector's cheapest record) and pops it at its end
#include <ATen/record_function.h>
#include <nvtx3/nvToolsExt.h>
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace {

nvtxDomainHandle_t g_domain = nullptr;
nvtxStringHandle_t g_marker = nullptr;

std::unique_ptr<at::ObserverContext> start_nothing(const at::RecordFunction&) { return nullptr; }
void end_nothing(const at::RecordFunction&, at::ObserverContext*) {}

std::unique_ptr<at::ObserverContext> start_push(const at::RecordFunction&) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = g_marker;
  nvtxDomainRangePushEx(g_domain, &attr);
  return nullptr;
}
void end_pop(const at::RecordFunction&, at::ObserverContext*) { nvtxDomainRangePop(g_domain); }

at::CallbackHandle g_handle = 0;

void install(const std::string& kind) {
  if (g_handle != 0) throw std::runtime_error("already installed");
  at::RecordFunctionCallback callback(&start_nothing, &end_nothing);
  if (kind == "nvtx") {
    // A domain of its own: parse would read pyprof's domain's ranges as op markers.
    g_domain = nvtxDomainCreateA("pyprof-bench-floor");
    g_marker = nvtxDomainRegisterStringA(g_domain, "floor");
    callback = at::RecordFunctionCallback(&start_push, &end_pop);
  } else if (kind != "record_function") {
    throw std::invalid_argument("kind: expected 'record_function' or 'nvtx', got '" + kind + "'");
  }
  g_handle = at::addGlobalCallback(callback.needsInputs(true).scopes(
      {at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
       at::RecordScope::USER_SCOPE}));
}

}  // namespace

PYBIND11_MODULE(overhead_floor, m) { m.def("install", &install, pybind11::arg("kind")); }
