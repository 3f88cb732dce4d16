// collector_bench: cost of NVTX calls with and without libpyprof_collect.so attached.
//
//   collector_bench [iterations] [--keep]     (--keep: leave the databases in /tmp)
//
// Runs itself as a child process without NVTX_INJECTION64_PATH (NVTX calls are no-ops) and
// with the collector, and prints ns per call. Push and pop are timed separately (batches of 32
// nested pushes, then 32 pops), plus push+pop pairs, a domain push+pop with a registered string,
// and marks, with 1 and 2 threads.
//
// Two load patterns with the collector:
//   flood  back-to-back calls, millions per second: far faster than SQLite can store them, so
//          the backlog grows and every new chunk is fresh memory (page faults included).
//   paced  bursts of 2048 calls with a 10 ms pause after each (~1M calls/s at most): the writer
//          keeps up and chunks are recycled, as in a real training loop. Only bursts are timed.
// The collector's database goes to a temporary folder.
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/env_vars.h"

namespace {

constexpr int kBatch = 32;
constexpr int kRepeats = 5;
constexpr long kBurst = 2048;  // paced mode: calls between pauses
bool g_paced = false;

int64_t now_ns();

// In paced mode, pauses (untimed) after every kBurst calls; returns the time spent pausing.
int64_t maybe_pause(long calls_done) {
  if (!g_paced || calls_done % kBurst != 0) return 0;
  const int64_t t0 = now_ns();
  timespec pause{0, 10'000'000};
  nanosleep(&pause, nullptr);
  return now_ns() - t0;
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Timing {
  double push_ns = 0;
  double pop_ns = 0;
  double pair_ns = 0;
  double domain_pair_ns = 0;
  double mark_ns = 0;
};

// Best of kRepeats runs (least disturbed by the scheduler and the writer thread).
Timing measure(long iterations) {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("bench");
  nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "registered");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = name;

  Timing best{1e18, 1e18, 1e18, 1e18, 1e18};
  const long batches = std::max(1L, iterations / kBatch);
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    int64_t push_total = 0;
    int64_t pop_total = 0;
    for (long b = 0; b < batches; ++b) {
      const int64_t t0 = now_ns();
      for (int i = 0; i < kBatch; ++i) nvtxRangePushA("aten::linear, seq = 42");
      const int64_t t1 = now_ns();
      for (int i = 0; i < kBatch; ++i) nvtxRangePop();
      push_total += t1 - t0;
      pop_total += now_ns() - t1;
      maybe_pause((b + 1) * kBatch);
    }
    const double calls = static_cast<double>(batches) * kBatch;
    best.push_ns = std::min(best.push_ns, push_total / calls);
    best.pop_ns = std::min(best.pop_ns, pop_total / calls);

    int64_t paused = 0;
    int64_t t0 = now_ns();
    for (long i = 0; i < iterations; ++i) {
      nvtxRangePushA("aten::linear, seq = 42");
      nvtxRangePop();
      paused += maybe_pause(i + 1);
    }
    best.pair_ns = std::min(best.pair_ns, static_cast<double>(now_ns() - t0 - paused) / iterations);

    paused = 0;
    t0 = now_ns();
    for (long i = 0; i < iterations; ++i) {
      nvtxDomainRangePushEx(domain, &attributes);
      nvtxDomainRangePop(domain);
      paused += maybe_pause(i + 1);
    }
    best.domain_pair_ns =
        std::min(best.domain_pair_ns, static_cast<double>(now_ns() - t0 - paused) / iterations);

    paused = 0;
    t0 = now_ns();
    for (long i = 0; i < iterations; ++i) {
      nvtxMarkA("mark");
      paused += maybe_pause(i + 1);
    }
    best.mark_ns = std::min(best.mark_ns, static_cast<double>(now_ns() - t0 - paused) / iterations);
  }
  return best;
}

int run_child(long iterations, bool paced) {
  g_paced = paced;
  nvtxInitialize(nullptr);
  const Timing one = measure(iterations);
  std::vector<Timing> per_thread(2);
  std::vector<std::thread> threads;
  for (auto& timing : per_thread) {
    threads.emplace_back([&timing, iterations] { timing = measure(iterations); });
  }
  for (auto& thread : threads) thread.join();
  std::printf(
      "  1 thread : push %6.1f ns  pop %6.1f ns  push+pop %6.1f ns  "
      "domain push+pop (registered) %6.1f ns  mark %6.1f ns\n",
      one.push_ns, one.pop_ns, one.pair_ns, one.domain_pair_ns, one.mark_ns);
  std::printf(
      "  2 threads: push %6.1f ns  pop %6.1f ns  push+pop %6.1f ns  "
      "domain push+pop (registered) %6.1f ns  mark %6.1f ns  (per thread, worst)\n",
      std::max(per_thread[0].push_ns, per_thread[1].push_ns),
      std::max(per_thread[0].pop_ns, per_thread[1].pop_ns),
      std::max(per_thread[0].pair_ns, per_thread[1].pair_ns),
      std::max(per_thread[0].domain_pair_ns, per_thread[1].domain_pair_ns),
      std::max(per_thread[0].mark_ns, per_thread[1].mark_ns));
  std::fflush(stdout);
  return 0;
}

int spawn_self(const char* self, long iterations, const char* mode, const char* injection,
               const char* output) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (injection != nullptr) {
      setenv(pyprof::env::kNvtxInjection, injection, 1);
      setenv(pyprof::env::kOutput, output, 1);
    } else {
      unsetenv(pyprof::env::kNvtxInjection);
    }
    const std::string count = std::to_string(iterations);
    execl(self, self, "--child", count.c_str(), mode, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--child") == 0) {
    return run_child(std::atol(argv[2]), std::strcmp(argv[3], "paced") == 0);
  }
  long iterations = 50000;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--keep") == 0) {
      keep = true;
    } else {
      iterations = std::atol(argv[i]);
    }
  }
  char folder[] = "/tmp/pyprof_bench_XXXXXX";
  if (mkdtemp(folder) == nullptr) return 1;
  const std::string flood_output = std::string(folder) + "/flood";
  const std::string paced_output = std::string(folder) + "/paced";

  std::printf("NVTX without injection (no-op):\n");
  std::fflush(stdout);
  int rc = spawn_self(argv[0], iterations, "flood", nullptr, nullptr);
  std::printf("NVTX with %s, flood:\n", PYPROF_COLLECT_LIBRARY);
  std::fflush(stdout);
  rc |= spawn_self(argv[0], iterations, "flood", PYPROF_COLLECT_LIBRARY, flood_output.c_str());
  std::printf("NVTX with the collector, paced (bursts of %ld calls, 10 ms pauses):\n", kBurst);
  std::fflush(stdout);
  rc |= spawn_self(argv[0], iterations, "paced", PYPROF_COLLECT_LIBRARY, paced_output.c_str());
  if (keep) {
    std::printf("(databases in %s)\n", folder);
  } else {  // a few hundred MB
    std::remove((flood_output + ".sqlite").c_str());
    std::remove((paced_output + ".sqlite").c_str());
    rmdir(folder);
  }
  return rc;
}
