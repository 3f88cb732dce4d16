// nvtx_test_app: ordinary NVTX3 user code (headers only, no link to the collector) that
// collector_test runs with NVTX_INJECTION64_PATH set. argv[1] picks the scenario. It prints
// facts the test needs (pids, tids) as "key=value" lines on stdout, checks NVTX return values
// itself and exits non-zero (with a message on stderr) if one is wrong.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_app_support.h"

extern "C" void* nvtx_test_lib_a_work();
extern "C" void* nvtx_test_lib_b_work();

namespace {

using pyprof::collect::testing::monotonic_ns;
using pyprof::collect::testing::sleep_until;

int failures = 0;

#define CHECK_EQ(actual, expected)                                                        \
  do {                                                                                    \
    const auto actual_value = (actual);                                                   \
    const auto expected_value = (expected);                                               \
    if (!(actual_value == expected_value)) {                                              \
      std::fprintf(stderr, "nvtx_test_app: %s:%d: %s == %lld, expected %lld\n", __FILE__, \
                   __LINE__, #actual, static_cast<long long>(actual_value),               \
                   static_cast<long long>(expected_value));                               \
      ++failures;                                                                         \
    }                                                                                     \
  } while (0)

void print_fact(const char* key, long long value) {
  std::printf("%s=%lld\n", key, value);
  std::fflush(stdout);
}

long long tid() { return static_cast<long long>(gettid()); }

nvtxEventAttributes_t attributes(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

// The collector's C API, found in the already-loaded injection library.
template <class Function>
Function collector_function(const char* name) {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  void* library = path != nullptr ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
  return library != nullptr ? reinterpret_cast<Function>(dlsym(library, name)) : nullptr;
}

void print_output_path() {
  auto output_path = collector_function<const char* (*)()>("pyprof_collect_output_path");
  const char* path = output_path != nullptr ? output_path() : nullptr;
  std::printf("path=%s\n", path != nullptr ? path : "(null)");
  std::fflush(stdout);
}

// (1) Everything the collector records, on several threads.
int basic() {
  print_fact("pid", getpid());
  print_fact("tid", tid());
  nvtxNameOsThreadA(static_cast<uint32_t>(gettid()), "nvtx-main");
  nvtxNameCategoryA(7, "category seven");
  nvtxDomainHandle_t domain = nvtxDomainCreateA("pyprof");
  CHECK_EQ(nvtxDomainCreateA("pyprof") == domain, true);  // same name, same handle
  CHECK_EQ(domain != nullptr, true);
  nvtxDomainNameCategoryA(domain, 8, "domain category");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered op");
  CHECK_EQ(nvtxDomainRegisterStringA(domain, "registered op") == registered, true);
  CHECK_EQ(registered != nullptr, true);

  CHECK_EQ(nvtxRangePushA("outer"), 0);
  CHECK_EQ(nvtxRangePushA("inner"), 1);
  nvtxMarkA("mark in inner");
  CHECK_EQ(nvtxRangePop(), 1);

  nvtxEventAttributes_t colored{};
  colored.version = NVTX_VERSION;
  colored.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  colored.colorType = NVTX_COLOR_ARGB;
  colored.color = 0xFF00FF00u;
  colored.category = 8;
  colored.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  colored.payload.llValue = -42;
  colored.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  colored.message.registered = registered;
  CHECK_EQ(nvtxDomainRangePushEx(domain, &colored), 0);  // per-domain stack
  CHECK_EQ(nvtxDomainRangePop(domain), 0);
  CHECK_EQ(nvtxDomainRangePop(domain), -1);  // empty domain stack

  nvtxRangePushW(L"wide \u2713 message");
  nvtxRangePop();
  nvtxRangePushA(
      "say \"hi\"\n\tand 'bye' \xC3\xBCn\xC3\xAF"
      "c\xC3\xB6"
      "d\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC");
  nvtxRangePop();
  std::string big;
  while (big.size() < 200 * 1024) big += "\xE2\x82\xAC";  // 200 KiB of 3-byte characters
  nvtxRangePushA(big.c_str());
  nvtxRangePop();

  nvtxEventAttributes_t payload = attributes("payload u64");
  payload.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  payload.payload.ullValue = 18446744073709551615ULL;
  nvtxMarkEx(&payload);
  payload = attributes("payload double");
  payload.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  payload.payload.dValue = 3.25;
  nvtxMarkEx(&payload);
  payload = attributes("payload u32");
  payload.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
  payload.payload.uiValue = 4000000000u;
  nvtxMarkEx(&payload);
  payload = attributes("payload i32");
  payload.payloadType = NVTX_PAYLOAD_TYPE_INT32;
  payload.payload.iValue = -7;
  nvtxMarkEx(&payload);
  payload = attributes("payload float");
  payload.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
  payload.payload.fValue = 0.5f;
  nvtxMarkEx(&payload);
  nvtxEventAttributes_t in_domain = attributes("domain mark");
  nvtxDomainMarkEx(domain, &in_domain);

  CHECK_EQ(nvtxRangePop(), 0);   // closes "outer"
  CHECK_EQ(nvtxRangePop(), -1);  // unbalanced

  const nvtxRangeId_t same_thread = nvtxRangeStartA("same thread");
  CHECK_EQ(same_thread != 0, true);
  nvtxRangeEnd(same_thread);
  const nvtxRangeId_t cross_thread = nvtxRangeStartA("cross thread");
  CHECK_EQ(cross_thread != same_thread, true);
  nvtxEventAttributes_t domain_range = attributes("domain start/end");
  const nvtxRangeId_t in_domain_range = nvtxDomainRangeStartEx(domain, &domain_range);
  nvtxDomainRangeEnd(domain, in_domain_range);

  std::vector<long long> worker_tids(3);
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([i, cross_thread, &worker_tids] {
      const std::string name = "worker-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      worker_tids[i] = tid();
      const std::string message = "worker range " + std::to_string(i);
      CHECK_EQ(nvtxRangePushA(message.c_str()), 0);
      CHECK_EQ(nvtxRangePop(), 0);
      if (i == 0) nvtxRangeEnd(cross_thread);
    });
  }
  for (auto& worker : workers) worker.join();
  for (int i = 0; i < 3; ++i) print_fact(("worker" + std::to_string(i)).c_str(), worker_tids[i]);

  nvtxDomainDestroy(domain);
  return failures == 0 ? 0 : 1;
}

// (2) Ranges still open at exit.
int unclosed() {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("pyprof");
  nvtxRangePushA("open A");
  nvtxRangePushA("open B");
  nvtxEventAttributes_t open_c = attributes("open C");
  nvtxDomainRangePushEx(domain, &open_c);
  nvtxRangeStartA("open start/end");
  nvtxMarkA("closed mark");
  return 0;  // exit() runs the collector's atexit finalization
}

// (3) Killed by SIGTERM while inside a range. With "own-handler", the app handles SIGTERM
// itself (installed before NVTX initialises) and exits with status 7.
extern "C" void exit_seven(int) { std::exit(7); }

int sigterm(bool own_handler) {
  if (own_handler) signal(SIGTERM, exit_seven);
  print_fact("pid", getpid());
  nvtxRangePushA("before signal");
  nvtxRangePop();
  nvtxRangePushA("waiting for the signal");
  std::printf("ready\n");
  std::fflush(stdout);
  for (int i = 0; i < 600; ++i) usleep(100 * 1000);  // the test kills us long before this
  return 3;
}

// (4) fork(): the child continues inside the parent's open range and records its own events.
int fork_scenario() {
  nvtxRangePushA("parent outer");
  nvtxRangePushA("parent before fork");
  nvtxRangePop();
  const pid_t child = fork();
  if (child == 0) {
    nvtxRangePushA("child range");
    nvtxRangePop();
    nvtxMarkA("child mark");
    CHECK_EQ(nvtxRangePop(), 0);  // closes "parent outer", in the child
    print_output_path();
    std::exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK_EQ(WIFEXITED(status) && WEXITSTATUS(status) == 0, true);
  print_fact("child", child);
  nvtxRangePushA("parent after fork");
  nvtxRangePop();
  CHECK_EQ(nvtxRangePop(), 0);
  return failures == 0 ? 0 : 1;
}

// (4b) fork() while other threads record as fast as they can.
int fork_stress() {
  std::atomic<bool> stop{false};
  std::vector<std::thread> hammers;
  for (int i = 0; i < 2; ++i) {
    hammers.emplace_back([&stop] {
      for (int n = 1; !stop.load(); ++n) {
        nvtxRangePushA("hammer");
        nvtxMarkA("hammer mark");
        nvtxRangePop();
        if (n % 64 == 0) usleep(50);  // busy, but not a flood the writer cannot follow
      }
    });
  }
  usleep(20 * 1000);
  for (int i = 0; i < 5; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      const std::string name = "child " + std::to_string(i);
      for (int j = 0; j < 100; ++j) {
        nvtxRangePushA(name.c_str());
        nvtxRangePop();
      }
      std::exit(0);
    }
    print_fact("child", child);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK_EQ(WIFEXITED(status) && WEXITSTATUS(status) == 0, true);
    usleep(30 * 1000);
  }
  stop.store(true);
  for (auto& hammer : hammers) hammer.join();
  return failures == 0 ? 0 : 1;
}

// (5) More events than PYPROF_BUFFER_BYTES lets wait.
int drop() {
  for (int i = 0; i < 200000; ++i) {
    nvtxRangePushA("drop me");
    nvtxRangePop();
  }
  return 0;
}

// (6) Capture window [1 s, 2 s) (set by the test); the schedule is relative to a session start
// this process sets itself right before its first NVTX call.
int window() {
  constexpr int64_t kMs = 1'000'000;
  const int64_t start = monotonic_ns();
  setenv("PYPROF_SESSION_START_MONO_NS", std::to_string(start).c_str(), 1);
  nvtxInitialize(nullptr);
  const auto at = [start](int64_t ms) { sleep_until(start + ms * kMs); };
  at(100);
  nvtxRangePushA("before");
  at(500);
  nvtxRangePop();
  at(600);
  nvtxMarkA("mark before");
  at(800);
  nvtxRangePushA("straddles start");
  at(1300);
  nvtxRangePop();
  at(1400);
  nvtxMarkA("mark inside");
  at(1500);
  nvtxRangePushA("inside");
  at(1600);
  nvtxRangePop();
  nvtxRangeStartA("unclosed inside");
  at(1800);
  nvtxRangePushA("straddles end");
  at(2300);
  nvtxRangePop();
  at(2400);
  nvtxRangePushA("after");
  at(2500);
  nvtxRangePop();
  at(2600);
  nvtxMarkA("mark after");
  nvtxRangePushA("unclosed after");
  return 0;
}

// (7) Three modules (the app and two shared libraries) each initialise the injection.
int libs() {
  void* domain_a = nvtx_test_lib_a_work();
  void* domain_b = nvtx_test_lib_b_work();
  nvtxDomainHandle_t own = nvtxDomainCreateA("pyprof");
  CHECK_EQ(domain_a == domain_b, true);
  CHECK_EQ(static_cast<void*>(own) == domain_a, true);
  nvtxEventAttributes_t app = attributes("app range");
  nvtxDomainRangePushEx(own, &app);
  nvtxDomainRangePop(own);
  return failures == 0 ? 0 : 1;
}

// pyprof_collect_shutdown() then os._exit-style termination: later calls are ignored.
int shutdown() {
  nvtxRangePushA("before shutdown");
  nvtxRangePop();
  nvtxRangePushA("open at shutdown");
  auto shutdown_fn = collector_function<int (*)()>("pyprof_collect_shutdown");
  CHECK_EQ(shutdown_fn != nullptr, true);
  if (shutdown_fn == nullptr) return 1;
  print_output_path();
  CHECK_EQ(shutdown_fn(), 0);
  CHECK_EQ(shutdown_fn(), 0);                      // idempotent
  CHECK_EQ(nvtxRangePushA("after shutdown"), -2);  // NVTX_NO_PUSH_POP_TRACKING
  nvtxRangePop();
  nvtxMarkA("after shutdown");
  std::fflush(stdout);
  _exit(failures == 0 ? 0 : 1);  // no atexit, like os._exit
}

// Output naming: one range, then report which file the collector chose.
int naming() {
  print_fact("pid", getpid());
  nvtxRangePushA("named");
  nvtxRangePop();
  print_output_path();
  return 0;
}

// Threads come and go; the writer reclaims the buffers of exited threads in between.
int thread_churn() {
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 20; ++i) {
      threads.emplace_back([round, i] {
        const std::string name = "churn " + std::to_string(round) + "-" + std::to_string(i);
        pthread_setname_np(pthread_self(), name.c_str());
        nvtxRangePushA(name.c_str());
        nvtxRangePop();
      });
    }
    for (auto& thread : threads) thread.join();
    usleep(1200 * 1000);  // two writer ticks: drained and reclaimed
  }
  nvtxMarkA("main done");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "basic") return basic();
  if (scenario == "unclosed") return unclosed();
  if (scenario == "sigterm") return sigterm(false);
  if (scenario == "sigterm-own-handler") return sigterm(true);
  if (scenario == "fork") return fork_scenario();
  if (scenario == "fork-stress") return fork_stress();
  if (scenario == "drop") return drop();
  if (scenario == "window") return window();
  if (scenario == "libs") return libs();
  if (scenario == "shutdown") return shutdown();
  if (scenario == "naming") return naming();
  if (scenario == "thread-churn") return thread_churn();
  std::fprintf(stderr, "nvtx_test_app: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
