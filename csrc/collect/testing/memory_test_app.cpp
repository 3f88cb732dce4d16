// memory_test_app: plays pyprof's annotator for memory capture: NVTX ranges (headers only) and
// the collector's memory C API (pyprof_collect_memory_*, found in the injected library as the
// annotator finds it), on several threads. memory_events_test runs it with the collector
// injected; argv[1] picks the scenario. It prints facts ("key=value") the test checks the
// database against, and exits non-zero (with a message on stderr) when a call misbehaves.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "pyprof_collect.h"
#include "test_app_support.h"

namespace {

using pyprof::collect::testing::monotonic_ns;
using pyprof::collect::testing::sleep_until;

constexpr int32_t kCpu = 0;
constexpr int32_t kCuda = 1;

template <class Function>
Function collector_function(const char* name) {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* library = path != nullptr ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  Function function =
      library != nullptr ? reinterpret_cast<Function>(dlsym(library, name)) : nullptr;
  if (function == nullptr) {
    std::fprintf(stderr, "memory_test_app: the collector has no %s\n", name);
    std::exit(2);
  }
  return function;
}

decltype(&pyprof_collect_memory_event) record;

void print_fact(const char* key, long long value) {
  std::printf("%s=%lld\n", key, value);
  std::fflush(stdout);
}

void find_functions() {
  nvtxInitialize(nullptr);  // loads the collector
  record =
      collector_function<decltype(&pyprof_collect_memory_event)>("pyprof_collect_memory_event");
}

// (1) Allocations and frees inside nested ranges, between ranges and on a second thread, the
// device facts and the status: every value the annotator can give, back in the database.
int basic() {
  find_functions();
  auto device =
      collector_function<decltype(&pyprof_collect_memory_device)>("pyprof_collect_memory_device");
  auto capture =
      collector_function<decltype(&pyprof_collect_memory_capture)>("pyprof_collect_memory_capture");
  print_fact("pid", getpid());
  print_fact("tid", gettid());
  capture("on", 0);

  nvtxRangePushA("op A");
  record(0x1000, 256, 256, 0, kCpu, -1);
  nvtxRangePushA("op B");
  record(0x2000, 1024, 1280, 0, kCpu, -1);
  nvtxRangePop();
  record(0x1000, -256, 1024, 0, kCpu, -1);
  nvtxRangePop();
  record(0x2000, -1024, 0, 0, kCpu, -1);  // between ranges (Python dropped the tensor)

  std::thread worker([] {
    print_fact("worker", gettid());
    nvtxRangePushA("worker op");
    record(0x7f0000200000, 2 << 20, 2 << 20, 20 << 20, kCuda, 3);
    nvtxRangePop();
  });
  worker.join();

  pyprof_memory_device gpu{};
  gpu.struct_size = sizeof(gpu);
  gpu.device_type = kCuda;
  gpu.device_index = 3;
  gpu.total_memory = 150'000'000'000;
  gpu.free_memory = 149'000'000'000;
  gpu.allocator_limit = -1;
  gpu.allocated = 2 << 20;
  gpu.reserved = 20 << 20;
  gpu.peak_allocated = 2 << 20;
  gpu.peak_reserved = 20 << 20;
  gpu.alloc_retries = 1;
  gpu.ooms = 0;
  if (device(&gpu, "exit") != 0) return 3;
  pyprof_memory_device short_struct = gpu;
  short_struct.struct_size = 8;  // an older caller's struct: refused, not read past its end
  if (device(&short_struct, "exit") != -1) return 4;
  capture("on", 3);  // the last call wins
  return 0;
}

// (2) Capture window [1 s, 2 s) (set by the test): one event before, one inside, one after.
int window() {
  constexpr int64_t kMs = 1'000'000;
  const int64_t start = monotonic_ns();
  setenv("PYPROF_SESSION_START_MONO_NS", std::to_string(start).c_str(), 1);
  find_functions();
  sleep_until(start + 500 * kMs);
  record(0x1000, 64, 64, 0, kCpu, -1);
  sleep_until(start + 1500 * kMs);
  record(0x2000, 128, 192, 0, kCpu, -1);
  sleep_until(start + 2500 * kMs);
  record(0x1000, -64, 128, 0, kCpu, -1);
  return 0;
}

// (3) More events than PYPROF_BUFFER_BYTES lets wait.
int drop() {
  find_functions();
  for (int i = 0; i < 200000; ++i) record(0x1000, i % 2 == 0 ? 64 : -64, 64, 0, kCpu, -1);
  return 0;
}

// (4) fork(): the child's allocations go to its own database, the parent's to the parent's.
int fork_scenario() {
  find_functions();
  record(0x1000, 64, 64, 0, kCpu, -1);
  const pid_t child = fork();
  if (child == 0) {
    nvtxRangePushA("child op");
    record(0x2000, 4096, 4160, 0, kCpu, -1);
    nvtxRangePop();
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
  print_fact("child", child);
  record(0x1000, -64, 0, 0, kCpu, -1);
  return 0;
}

// (5) Events after pyprof_collect_shutdown() (a program past os._exit's shutdown) are ignored.
int after_shutdown() {
  find_functions();
  record(0x1000, 64, 64, 0, kCpu, -1);
  auto shutdown = collector_function<decltype(&pyprof_collect_shutdown)>("pyprof_collect_shutdown");
  if (shutdown() != 0) return 6;
  record(0x1000, -64, 0, 0, kCpu, -1);
  std::fflush(stdout);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "basic") return basic();
  if (scenario == "window") return window();
  if (scenario == "drop") return drop();
  if (scenario == "fork") return fork_scenario();
  if (scenario == "after-shutdown") return after_shutdown();
  std::fprintf(stderr, "memory_test_app: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
