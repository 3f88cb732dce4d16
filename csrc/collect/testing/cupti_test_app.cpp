// cupti_test_app: ordinary NVTX3 user code that "uses CUDA" through libfake_cupti.so, run by
// cupti_capture_test with NVTX_INJECTION64_PATH and CUDA_INJECTION64_PATH naming the collector
// and PYPROF_CUPTI_LIBRARY naming libfake_cupti.so (the very library this program is linked
// against, so the collector's dlopen returns it and both see one CUPTI state).
//
// It plays the CUDA driver too: where a CUDA program's first CUDA call would run cuInit, it
// dlopens CUDA_INJECTION64_PATH and calls InitializeInjection, as the driver does.
//
// argv[1] picks the scenario. Facts the test needs are printed on stdout as "key=value" lines:
// pid/tids, one "launch=<correlation id> <what> <range> <tid>" line per CUDA call, and at exit
// (after the collector's own exit handler, see main) the fake's counters as "fake.<name>=...".
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_cupti.h"
#include "test_app_support.h"

namespace {

using pyprof::collect::testing::kAdd;
using pyprof::collect::testing::kCutlass;
using pyprof::collect::testing::kElementwise;
using pyprof::collect::testing::kSgemm;
using pyprof::collect::testing::monotonic_ns;
using pyprof::collect::testing::sleep_until;

// CUPTI enum values (cupti_activity.h), spelled out so this program needs no CUDA header.
constexpr uint8_t kCopyHtoD = 1, kCopyDtoH = 2, kCopyDtoD = 8, kCopyHtoH = 9;
constexpr uint8_t kMemUnknown = 0, kMemPageable = 1, kMemPinned = 2, kMemDevice = 3,
                  kMemManaged = 5;
constexpr uint32_t kSyncEvent = 1, kSyncStream = 3, kSyncContext = 4;
constexpr uint32_t kExternalCustom0 = 3;
constexpr uint8_t kLaunchCooperativeSingleDevice = 1;
constexpr uint32_t kShmemLimitOptin = 1;

constexpr uint32_t kMainStream = 7;  // the null stream of the fake's contexts
constexpr uint32_t kWorkerStream = 13;

long long tid() { return static_cast<long long>(gettid()); }

void print_fact(const std::string& key, const std::string& value) {
  std::printf("%s=%s\n", key.c_str(), value.c_str());
  std::fflush(stdout);
}

void print_fact(const std::string& key, long long value) { print_fact(key, std::to_string(value)); }

void print_launch(uint32_t correlation_id, const char* what, const std::string& range) {
  print_fact("launch", std::to_string(correlation_id) + " " + what + " " + range + " " +
                           std::to_string(tid()));
}

void print_fake_stats() {
  fake_cupti_stats_t stats;
  fake_cupti_get_stats(&stats);
  const std::pair<const char*, uint64_t> counters[] = {
      {"records_emitted", stats.records_emitted},
      {"records_dropped", stats.records_dropped},
      {"records_disabled", stats.records_disabled},
      {"dropped_reported", stats.dropped_reported},
      {"buffers_requested", stats.buffers_requested},
      {"buffers_refused", stats.buffers_refused},
      {"buffers_completed", stats.buffers_completed},
      {"buffers_completed_full", stats.buffers_completed_full},
      {"flushes", stats.flushes},
      {"subscribe_calls", stats.subscribe_calls},
      {"subscriber_callbacks", stats.subscriber_callbacks},
      {"contract_violations", stats.contract_violations},
      {"thread_id_type", stats.thread_id_type},
      {"subscribed", static_cast<uint64_t>(stats.subscribed)},
      {"timestamp_callback", static_cast<uint64_t>(stats.timestamp_callback)},
  };
  for (const auto& [name, value] : counters) {
    print_fact(std::string("fake.") + name, static_cast<long long>(value));
  }
  print_fact("fake.subscriber_name", stats.subscriber_name);
}

// The CUDA libraries a real program would have loaded by the time cuInit runs: its runtime
// (FAKE_CUDART, e.g. a link named libcudart.so.12 to libfake_cudart.so) and the driver
// (FAKE_CUDA_DRIVER, libfake_cuda_driver.so, soname libcuda.so.1). Each only when set.
void load_cuda_libraries() {
  for (const char* variable : {"FAKE_CUDART", "FAKE_CUDA_DRIVER"}) {
    const char* path = std::getenv(variable);
    if (path == nullptr || path[0] == '\0') continue;
    if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      std::fprintf(stderr, "cupti_test_app: dlopen %s: %s\n", path, dlerror());
    }
  }
}

// What cuInit does with CUDA_INJECTION64_PATH: load the library, call InitializeInjection.
void init_cuda() {
  load_cuda_libraries();
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || path[0] == '\0') {
    print_fact("inject", "unset");
    return;
  }
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "cupti_test_app: dlopen %s: %s\n", path, dlerror());
    print_fact("inject", "no-library");
    return;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr) {
    print_fact("inject", "no-entry-point");
    return;
  }
  print_fact("inject", initialize());
}

// The collector's C API, from the already-loaded injection library.
template <class Function>
Function collector_function(const char* name) {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* library = path != nullptr ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  return library != nullptr ? reinterpret_cast<Function>(dlsym(library, name)) : nullptr;
}

// A push/pop range around `body`, whose CUDA calls are printed as launched inside `name`.
template <class Body>
void in_range(const std::string& name, Body body) {
  nvtxRangePushA(name.c_str());
  body(name);
  nvtxRangePop();
}

// Everything the collector records from CUPTI, on the main thread and a worker thread.
// `nvtx_first`: NVTX is initialised (and records) before the driver loads the injection.
int basic(bool nvtx_first) {
  if (nvtx_first) {
    in_range("before cuInit", [](const std::string&) {});
    nvtxMarkA("mark before cuInit");
  }
  init_cuda();
  if (!nvtx_first) {
    in_range("after cuInit", [](const std::string&) {});
    nvtxMarkA("mark after cuInit");
  }
  fake_cupti_emit_device(1);  // a second GPU: DEVICE 1 and its context 2

  in_range("op:gemm", [](const std::string& range) {
    fake_cupti_kernel_t sgemm = fake_cupti_kernel(kSgemm, 128, 256, kMainStream, 20'000);
    sgemm.grid_y = 4;
    sgemm.registers_per_thread = 128;
    sgemm.static_shared_memory = 16'384;
    sgemm.cache_config = 0x12;
    print_launch(fake_cupti_launch(&sgemm), "kernel", range);
    fake_cupti_kernel_t elementwise =
        fake_cupti_kernel(kElementwise, 1024, 128, kMainStream, 5'000);
    elementwise.grid_y = 2;
    elementwise.block_z = 2;
    elementwise.registers_per_thread = 24;
    elementwise.dynamic_shared_memory = 4'096;
    elementwise.driver_api = 1;  // cuLaunchKernel
    print_launch(fake_cupti_launch(&elementwise), "kernel", range);
  });
  in_range("op:copy", [](const std::string& range) {
    print_launch(fake_cupti_memcpy(4'096, kCopyHtoD, kMemPageable, kMemDevice, kMainStream, 3'000),
                 "memcpy", range);
    print_launch(fake_cupti_memcpy(8'192, kCopyDtoH, kMemDevice, kMemPinned, kMainStream, 3'000),
                 "memcpy", range);
    print_launch(fake_cupti_memcpy(16, kCopyHtoH, kMemUnknown, kMemPageable, kMainStream, 1'000),
                 "memcpy", range);
    print_launch(fake_cupti_memcpy_peer(1 << 20, 0, 1, kMainStream, 30'000), "memcpy", range);
  });
  in_range("op:fill", [](const std::string& range) {
    print_launch(fake_cupti_memset(1 << 20, 7, kMemDevice, kMainStream, 4'000), "memset", range);
    print_launch(fake_cupti_memset(256, 0, kMemManaged, kMainStream, 1'000), "memset", range);
  });
  in_range("op:graph", [](const std::string& range) {
    fake_cupti_kernel_t kernel = fake_cupti_kernel(kCutlass, 66, 256, kMainStream, 40'000);
    kernel.graph_node_id = 77;
    kernel.graph_id = 5;
    kernel.launch_type = kLaunchCooperativeSingleDevice;
    kernel.shmem_limit_config = kShmemLimitOptin;
    kernel.shared_memory_executed = 102'400;
    kernel.dynamic_shared_memory = 98'304;
    kernel.local_memory_per_thread = 16;
    kernel.local_memory_total = 1 << 20;
    print_launch(fake_cupti_launch(&kernel), "kernel", range);
  });
  in_range("op:external", [](const std::string& range) {
    fake_cupti_push_external_id(kExternalCustom0, 1234);
    print_launch(fake_cupti_launch_kernel(kAdd, 8, 64, kMainStream, 2'000), "kernel", range);
    fake_cupti_pop_external_id();
  });
  in_range("op:untimed", [](const std::string& range) {
    fake_cupti_kernel_t kernel = fake_cupti_kernel(kAdd, 1, 32, kMainStream, 1'000);
    kernel.no_timestamp = 1;
    print_launch(fake_cupti_launch(&kernel), "untimed-kernel", range);
  });

  long long worker_tid = 0;
  std::thread worker([&worker_tid] {
    pthread_setname_np(pthread_self(), "gpu-worker");
    worker_tid = tid();
    in_range("op:worker", [](const std::string& range) {
      print_launch(fake_cupti_launch_kernel(kAdd, 16, 128, kWorkerStream, 3'000), "kernel", range);
      print_launch(fake_cupti_launch_kernel(kAdd, 16, 128, kWorkerStream, 3'000), "kernel", range);
      print_launch(fake_cupti_launch_kernel("my_c_kernel", 2, 32, kWorkerStream, 1'500), "kernel",
                   range);
      print_launch(
          fake_cupti_memcpy(65'536, kCopyDtoD, kMemDevice, kMemDevice, kWorkerStream, 2'000),
          "memcpy", range);
      print_launch(fake_cupti_memset(512, 1, kMemDevice, kWorkerStream, 1'000), "memset", range);
      print_launch(fake_cupti_synchronize(kSyncStream, 1, kWorkerStream, 0, 10'000), "sync", range);
    });
  });
  worker.join();
  print_fact("worker", worker_tid);

  in_range("op:sync", [](const std::string& range) {
    print_launch(fake_cupti_synchronize(kSyncStream, 1, kMainStream, 0, 50'000), "sync", range);
    print_launch(fake_cupti_synchronize(kSyncEvent, 2, 0, 42, 20'000), "sync", range);
    print_launch(fake_cupti_synchronize(kSyncContext, 1, 0, 0, 5'000), "sync", range);
  });
  return 0;
}

// pyprof-domain op markers (docs/formats.md §1.1) around launches, for the launcher + parse
// test: every kernel must come out of pyprof-parse attributed to the op it was launched in.
// A pyprof op marker range around `body(name)`.
template <class Body>
void pyprof_op(nvtxDomainHandle_t domain, const char* name, int id, int thread, Body body) {
  const std::string marker =
      std::string("{\"v\":1,\"op\":\"") + name + "\",\"id\":" + std::to_string(id) +
      ",\"seq\":-1,\"tid\":" + std::to_string(thread) + ",\"scope\":\"function\",\"args\":{}}";
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = marker.c_str();
  nvtxDomainRangePushEx(domain, &attributes);
  body(std::string(name));
  nvtxDomainRangePop(domain);
}

// CUDA graphs: two kernels captured inside ops (graph 7, nodes 101 and 102), the graph
// instantiated inside an op of its own (executable graph 8, nodes 201 and 202, each announced
// as a real libcupti does: created, then cloned from the captured node), then replayed twice
// inside another op. Each replayed kernel's launch fact names the op it was captured in.
int graphs() {
  init_cuda();
  nvtxDomainHandle_t domain = nvtxDomainCreateA("pyprof");
  pyprof_op(domain, "aten::addmm", 1, 1,
            [](const std::string&) { fake_cupti_graph_node(101, 0, 7); });
  pyprof_op(domain, "aten::relu", 2, 1,
            [](const std::string&) { fake_cupti_graph_node(102, 0, 7); });
  pyprof_op(domain, "CUDAGraph::capture_end", 5, 1, [](const std::string&) {
    for (uint64_t node : {201, 202}) {
      fake_cupti_graph_node(node, 0, 8);
      fake_cupti_graph_node(node, node - 100, 8);
    }
  });
  pyprof_op(domain, "CUDAGraph::replay", 3, 1, [](const std::string&) {
    for (int replay = 0; replay < 2; ++replay) {
      fake_cupti_kernel_t gemm = fake_cupti_kernel(kSgemm, 64, 256, kMainStream, 20'000);
      gemm.graph_node_id = 201;
      gemm.graph_id = 8;
      print_launch(fake_cupti_launch(&gemm), "kernel", "aten::addmm");
      fake_cupti_kernel_t relu = fake_cupti_kernel(kElementwise, 512, 128, kMainStream, 4'000);
      relu.graph_node_id = 202;
      relu.graph_id = 8;
      print_launch(fake_cupti_launch(&relu), "kernel", "aten::relu");
    }
  });
  // A kernel of a node no callback announced (a graph made before pyprof attached) keeps the
  // replay's op.
  pyprof_op(domain, "CUDAGraph::replay", 4, 1, [](const std::string& name) {
    fake_cupti_kernel_t orphan = fake_cupti_kernel(kElementwise, 8, 128, kMainStream, 1'000);
    orphan.graph_node_id = 999;
    orphan.graph_id = 9;
    print_launch(fake_cupti_launch(&orphan), "kernel", name);
  });
  return 0;
}

int ops() {
  init_cuda();
  nvtxDomainHandle_t domain = nvtxDomainCreateA("pyprof");
  const auto op = [domain](const char* name, int id, int thread, auto body) {
    pyprof_op(domain, name, id, thread, body);
  };
  op("aten::linear", 1, 1, [&](const std::string&) {
    op("aten::addmm", 2, 1, [](const std::string& name) {
      print_launch(fake_cupti_launch_kernel(kSgemm, 64, 256, kMainStream, 20'000), "kernel", name);
    });
  });
  op("aten::relu", 3, 1, [](const std::string& name) {
    print_launch(fake_cupti_launch_kernel(kElementwise, 512, 128, kMainStream, 4'000), "kernel",
                 name);
  });
  op("aten::copy_", 4, 1, [](const std::string& name) {
    print_launch(fake_cupti_memcpy(4'096, kCopyHtoD, kMemPageable, kMemDevice, kMainStream, 3'000),
                 "memcpy", name);
  });
  print_launch(fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 1'000), "kernel", "-");
  std::thread worker([&op] {
    op("aten::mul", 5, 2, [](const std::string& name) {
      print_launch(fake_cupti_launch_kernel(kAdd, 8, 128, kWorkerStream, 2'000), "kernel", name);
    });
  });
  worker.join();
  return 0;
}

// PYPROF_CAPTURE_RANGE=cudaProfilerApi: only what happens between the first start/stop pair.
int capture(bool driver_api) {
  init_cuda();
  in_range("before", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z13before_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
    print_launch(fake_cupti_memcpy(64, kCopyHtoD, kMemPageable, kMemDevice, kMainStream, 1'000),
                 "memcpy", range);
  });
  in_range("straddles start", [driver_api](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z13before_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
    fake_cupti_profiler_start(driver_api ? 1 : 0);
    print_launch(fake_cupti_launch_kernel("_Z13inside_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
  });
  in_range("inside", [](const std::string& range) {
    for (int i = 0; i < 3; ++i) {
      print_launch(fake_cupti_launch_kernel("_Z13inside_kernelv", 1, 32, kMainStream, 1'000),
                   "kernel", range);
    }
    print_launch(fake_cupti_memset(64, 0, kMemDevice, kMainStream, 1'000), "memset", range);
  });
  in_range("straddles stop", [driver_api](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z13inside_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
    fake_cupti_profiler_stop(driver_api ? 1 : 0);
    print_launch(fake_cupti_launch_kernel("_Z12after_kernelv", 1, 32, kMainStream, 1'000), "kernel",
                 range);
  });
  in_range("after", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z12after_kernelv", 1, 32, kMainStream, 1'000), "kernel",
                 range);
  });
  // A second start/stop pair does not count.
  fake_cupti_profiler_start(driver_api ? 1 : 0);
  in_range("second window", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z13second_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
  });
  fake_cupti_profiler_stop(driver_api ? 1 : 0);
  return 0;
}

// PYPROF_DELAY_NS=500 ms, PYPROF_DURATION_NS=500 ms (set by the test), relative to a session
// start this process sets itself, as nvtx_test_app's window scenario does.
int window() {
  constexpr int64_t kMs = 1'000'000;
  const int64_t start = monotonic_ns();
  setenv("PYPROF_SESSION_START_MONO_NS", std::to_string(start).c_str(), 1);
  nvtxInitialize(nullptr);
  init_cuda();
  const auto at = [start](int64_t ms) { sleep_until(start + ms * kMs); };
  at(100);
  in_range("before", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z12early_kernelv", 1, 32, kMainStream, 1'000), "kernel",
                 range);
  });
  at(750);
  in_range("inside", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z13inside_kernelv", 1, 32, kMainStream, 1'000),
                 "kernel", range);
    print_launch(fake_cupti_memset(64, 0, kMemDevice, kMainStream, 1'000), "memset", range);
  });
  at(1300);
  in_range("after", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel("_Z11late_kernelv", 1, 32, kMainStream, 1'000), "kernel",
                 range);
  });
  return 0;
}

// Records CUPTI reports as dropped (fake_cupti_add_dropped) between two batches of kernels.
int drops() {
  init_cuda();
  in_range("drops", [](const std::string& range) {
    for (int i = 0; i < 10; ++i) {
      print_launch(fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 1'000), "kernel", range);
    }
    fake_cupti_add_dropped(17);
    for (int i = 0; i < 10; ++i) {
      print_launch(fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 1'000), "kernel", range);
    }
  });
  return 0;
}

// Drops after the last buffer CUPTI delivers: only a query after the final flush sees them.
int drops_at_exit() {
  init_cuda();
  in_range("drops", [](const std::string& range) {
    for (int i = 0; i < 10; ++i) {
      print_launch(fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 1'000), "kernel", range);
    }
  });
  fake_cupti_deliver_now();
  fake_cupti_add_dropped(5);
  return 0;
}

// More records than PYPROF_BUFFER_BYTES (set small by the test) lets wait: the collector
// refuses buffers, CUPTI drops. After a pause (the writer catches up) one last kernel.
int flood() {
  init_cuda();
  constexpr int kKernels = 100'000;
  in_range("flood", [](const std::string&) {
    for (int i = 0; i < kKernels; ++i) fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 100);
  });
  print_fact("flood_kernels", kKernels);
  usleep(1'500'000);
  in_range("after flood", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel(kSgemm, 1, 32, kMainStream, 1'000), "kernel", range);
  });
  return 0;
}

// SIGTERM (or SIGHUP) while records sit in CUPTI's buffer (not yet delivered): the collector
// flushes them at finalization. The program keeps launching until the re-raised signal ends it.
int terminating_signal(int signal_number) {
  init_cuda();
  constexpr int kBefore = 50;
  in_range("before signal", [](const std::string& range) {
    for (int i = 0; i < kBefore; ++i) {
      print_launch(fake_cupti_launch_kernel("_Z13before_signalv", 1, 32, kMainStream, 1'000),
                   "kernel", range);
    }
  });
  print_fact("before_signal", kBefore);
  print_fake_stats();
  raise(signal_number);
  for (int i = 0; i < 10'000; ++i) {
    in_range("after signal", [](const std::string&) {
      fake_cupti_launch_kernel("_Z12after_signalv", 1, 32, kMainStream, 1'000);
    });
    usleep(1'000);
  }
  return 3;  // the collector should have ended us with the signal long before
}

// 200k kernels from four threads: many full buffers, completed on the emitting threads.
int many() {
  init_cuda();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50'000;
  std::vector<long long> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &tids] {
      tids[t] = tid();
      const char* names[] = {kAdd, kSgemm, kElementwise, kCutlass};
      in_range("thread " + std::to_string(t), [&](const std::string&) {
        for (int i = 0; i < kPerThread; ++i) {
          fake_cupti_launch_kernel(names[i % 4], 1 + i % 7, 32, kWorkerStream + t, 200);
        }
      });
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) print_fact("thread" + std::to_string(t), tids[t]);
  print_fact("kernels", kThreads * kPerThread);
  return 0;
}

// A program that never initialises CUDA: no cuInit, so no InitializeInjection.
int nvtx_only() {
  in_range("no cuda", [](const std::string&) {
    fake_cupti_launch_kernel(kAdd, 1, 32, kMainStream, 1'000);  // CUPTI is not attached
  });
  nvtxMarkA("still no cuda");
  return 0;
}

// pyprof_collect_shutdown() with CUPTI attached, then more CUDA work and os._exit().
int shutdown() {
  init_cuda();
  in_range("before shutdown", [](const std::string& range) {
    for (int i = 0; i < 5; ++i) {
      print_launch(fake_cupti_launch_kernel("_Z15before_shutdownv", 1, 32, kMainStream, 1'000),
                   "kernel", range);
    }
  });
  auto shutdown_fn = collector_function<int (*)()>("pyprof_collect_shutdown");
  print_fact("shutdown", shutdown_fn != nullptr ? shutdown_fn() : -100);
  for (int i = 0; i < 3; ++i) {
    fake_cupti_launch_kernel("_Z14after_shutdownv", 1, 32, kMainStream, 1'000);
  }
  fake_cupti_deliver_now();  // CUPTI may still deliver to a collector that finished
  print_fake_stats();
  std::fflush(stdout);
  _exit(0);
}

}  // namespace

// Kineto's first CUPTI call when torch.profiler starts with CUDA activity: a subscription
// (cuptiSubscribe, as in every torch release; it never names itself). Declared here, as this
// program includes no CUDA header; the fake exports it.
extern "C" int cuptiSubscribe(void** subscriber, void* callback, void* userdata);
extern "C" int cuptiUnsubscribe(void* subscriber);
void kineto_callback(void*, int, uint32_t, const void*) {}

// pyprof.init()'s hook of torch.profiler, then torch.profiler starting with CUDA activity: the
// program announces the client to the collector, then Kineto subscribes. Prints the
// collector's answer and CUPTI's.
void* start_torch_profiler(const char* label) {
  auto request = collector_function<int (*)(const char*)>("pyprof_collect_cupti_request");
  print_fact(std::string("cupti_request_") + label,
             request != nullptr ? request("torch.profiler") : -100);
  void* subscriber = nullptr;
  const int result =
      cuptiSubscribe(&subscriber, reinterpret_cast<void*>(&kineto_callback), nullptr);
  print_fact(std::string("kineto_subscribe_") + label, result);
  return result == 0 ? subscriber : nullptr;
}

// torch.profiler started twice with CUDA activity in a program that pyprof profiles: CUPTI is
// the collector's (it came first, at cuInit); the kernels around and inside each profiler
// window are recorded.
int torch_profiler_after() {
  init_cuda();
  in_range("op:before", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel(kSgemm, 64, 256, kMainStream, 5'000), "kernel", range);
  });
  start_torch_profiler("first");
  in_range("op:profiled", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel(kAdd, 16, 128, kMainStream, 2'000), "kernel", range);
  });
  start_torch_profiler("second");
  in_range("op:after", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel(kElementwise, 8, 128, kMainStream, 2'000), "kernel",
                 range);
  });
  return 0;
}

// torch.profiler holds CUPTI before CUDA initialises (it started first): the collector cannot
// subscribe, and names torch.profiler, which the program announced.
int torch_profiler_first() {
  in_range("before cuInit", [](const std::string&) {});
  void* subscriber = start_torch_profiler("first");
  init_cuda();
  in_range("op:gemm", [](const std::string& range) {
    print_launch(fake_cupti_launch_kernel(kSgemm, 64, 256, kMainStream, 5'000), "kernel", range);
  });
  if (subscriber != nullptr) cuptiUnsubscribe(subscriber);
  return 0;
}

int main(int argc, char** argv) {
  // Registered before the collector registers its own exit handler (at its initialisation),
  // so it runs after it: the counters include the collector's final flush.
  std::atexit(print_fake_stats);
  print_fact("pid", getpid());
  print_fact("tid", tid());
  const std::string scenario = argc > 1 ? argv[1] : "";
  const std::string variant = argc > 2 ? argv[2] : "";
  if (scenario == "basic") return basic(variant == "nvtx-first");
  if (scenario == "ops") return ops();
  if (scenario == "graphs") return graphs();
  if (scenario == "capture") return capture(variant == "driver");
  if (scenario == "window") return window();
  if (scenario == "drops") return drops();
  if (scenario == "drops-at-exit") return drops_at_exit();
  if (scenario == "flood") return flood();
  if (scenario == "sigterm") return terminating_signal(variant == "SIGHUP" ? SIGHUP : SIGTERM);
  if (scenario == "many") return many();
  if (scenario == "nvtx-only") return nvtx_only();
  if (scenario == "shutdown") return shutdown();
  if (scenario == "torch-profiler-after") return torch_profiler_after();
  if (scenario == "torch-profiler-first") return torch_profiler_first();
  std::fprintf(stderr, "cupti_test_app: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
