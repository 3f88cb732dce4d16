#include "memory_capture.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <pthread.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <memory>
#include <mutex>

#include "collector_link.h"

namespace pyprof {
namespace detail {
std::atomic<bool> g_memory_capture_on{false};
}  // namespace detail

namespace {

using detail::g_memory_capture_on;
using MemoryCaptureFn = void (*)(const char* status, uint64_t ops_unseen);

std::atomic<MemoryEventSink> g_record{nullptr};

std::atomic<uint64_t> g_threads{0};
std::atomic<uint64_t> g_ops_unseen{0};
std::atomic<uint64_t> g_ops_blocked{0};
std::atomic<uint64_t> g_step_asides{0};

// What sits in a thread's profiler slot on pyprof's behalf. torch reads the slot as a
// ProfilerStateBase wherever it asks whether a profiler runs (profilerEnabled(), profilerType(),
// getProfilerConfig()): a disabled config and no type make it say "none", as with an empty slot.
class MemoryReporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporter()
      : ProfilerStateBase(
            torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {
  }

  // Asked by the CPU allocator before each allocation and free: only then does it keep the
  // size of each block, which its frees report.
  bool memoryProfilingEnabled() const override {
    return g_memory_capture_on.load(std::memory_order_relaxed);
  }

  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated,
                         size_t total_reserved, c10::Device device) override {
    if (!g_memory_capture_on.load(std::memory_order_relaxed)) return;
    const MemoryEventSink record = g_record.load(std::memory_order_relaxed);
    if (record == nullptr) return;
    record(reinterpret_cast<uintptr_t>(ptr), alloc_size, total_allocated, total_reserved,
           static_cast<int32_t>(device.type()), static_cast<int32_t>(device.index()));
  }

  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
};

// One reporter for every thread, never destroyed: slots copied into other threads' state, and
// thread-local destructors at exit, may hold it after any owner is gone.
const std::shared_ptr<c10::DebugInfoBase>& reporter() {
  static auto* shared = new std::shared_ptr<c10::DebugInfoBase>(std::make_shared<MemoryReporter>());
  return *shared;
}

std::mutex g_install_mutex;
std::string g_status;  // the last status sent to the collector

void send_status(const std::string& status) {
  auto send =
      reinterpret_cast<MemoryCaptureFn>(collector_function("pyprof_collect_memory_capture"));
  if (send != nullptr) send(status.c_str(), g_ops_unseen.load() + g_ops_blocked.load());
}

// A forked child (a DataLoader worker) counts its own ops: its collector writes its own file.
void reset_counts_in_child() {
  g_threads.store(0);
  g_ops_unseen.store(0);
  g_ops_blocked.store(0);
  g_step_asides.store(0);
}

}  // namespace

namespace detail {

void put_memory_reporter_on_thread() {
  const c10::DebugInfoBase* held =
      c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
  if (held == reporter().get()) return;
  if (held != nullptr) {
    g_ops_unseen.fetch_add(1, std::memory_order_relaxed);  // torch.profiler (or emit_nvtx) has it
    return;
  }
  // Only into an empty chain, so that the reporter is its root: code that pushed its own debug
  // info (c10::ThreadLocalDebugInfo::_push) and pops it later must find its own on top, and an
  // enclosing guard that restores the chain simply drops the reporter, which the next op puts
  // back. Ops run inside such a scope before the reporter is in are counted.
  if (c10::ThreadLocalDebugInfo::current() != nullptr) {
    g_ops_blocked.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter());
    g_threads.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    g_ops_blocked.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace detail

std::string install_memory_capture() {
  auto sink = reinterpret_cast<MemoryEventSink>(collector_function("pyprof_collect_memory_event"));
  if (sink == nullptr) {
    return "the attached NVTX tool is not pyprof's collector (run the program under `pyprof "
           "profile`): no allocation is recorded";
  }
  install_memory_capture(sink);
  return "";
}

void install_memory_capture(MemoryEventSink sink) {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_memory_capture_on.load()) return;
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, reset_counts_in_child); });
  reporter();  // made now, not inside the first op
  g_record.store(sink);
  g_memory_capture_on.store(true);
}

void uninstall_memory_capture() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  g_memory_capture_on.store(false);
  memory_step_aside();
}

bool memory_capture_installed() { return g_memory_capture_on.load(); }

void report_memory_capture(const std::string& status) {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  g_status = status;
  send_status(g_status);
}

void report_memory_capture_final() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (!g_status.empty()) send_status(g_status);
}

int memory_step_aside() {
  if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != reporter().get()) {
    return 0;
  }
  try {
    // The nearest PROFILER_STATE is the reporter, so a PROFILER_STATE on top is the reporter;
    // anything else on top makes _pop throw without changing the chain.
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    g_step_asides.fetch_add(1, std::memory_order_relaxed);
    return 1;
  } catch (...) {
    return -1;
  }
}

MemoryCaptureStats memory_capture_stats() {
  MemoryCaptureStats stats;
  stats.threads = g_threads.load();
  stats.ops_unseen = g_ops_unseen.load();
  stats.ops_blocked = g_ops_blocked.load();
  stats.step_asides = g_step_asides.load();
  return stats;
}

}  // namespace pyprof
