// A shared library that uses NVTX3 on its own, like libtorch or NCCL: it has its own NVTX
// globals and so calls InitializeInjectionNvtx2 separately. Built twice (a and b).
#include <nvtx3/nvToolsExt.h>

#define PYPROF_PASTE_(a, b, c) a##b##c
#define PYPROF_PASTE(a, b, c) PYPROF_PASTE_(a, b, c)
#define PYPROF_STR_(x) #x
#define PYPROF_STR(x) PYPROF_STR_(x)
#define LIB_WORK PYPROF_PASTE(nvtx_test_lib_, NVTX_TEST_LIB_NAME, _work)

// Records "lib_<name> range" (default domain) around "lib registered" (domain "pyprof",
// registered string); returns the domain handle so the app can compare handles across modules.
extern "C" __attribute__((visibility("default"))) void* LIB_WORK() {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("pyprof");
  nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "lib registered");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = name;
  nvtxRangePushA("lib_" PYPROF_STR(NVTX_TEST_LIB_NAME) " range");
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);
  nvtxRangePop();
  return domain;
}
