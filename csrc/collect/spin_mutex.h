// SpinMutex: a one-word lock for the per-thread buffers. Its owner thread takes it around every
// NVTX call and almost never meets another thread there (only the writer, every 500 ms, for a
// few pointer moves), so the uncontended cost is what matters: one atomic exchange to lock and a
// plain release store to unlock, inlined, against a library call each way for std::mutex.
// Waiters spin briefly, then yield, so a preempted owner does not burn a core.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

#include "clock.h"

namespace pyprof::collect {

class SpinMutex {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) {
          cpu_relax();
        } else {
          sched_yield();
        }
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  // For the writer and finalization, which must not wait forever on a thread that will never
  // release the lock (e.g. one interrupted by a signal handler that calls exit()).
  bool try_lock_for(int64_t timeout_ns) noexcept {
    const int64_t deadline = monotonic_ns() + timeout_ns;
    while (!try_lock()) {
      if (monotonic_ns() >= deadline) return false;
      sched_yield();
    }
    return true;
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace pyprof::collect
