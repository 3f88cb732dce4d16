// What the collector's test apps (nvtx_test_app, cupti_test_app) and the tests that run them
// (collector_test, cupti_capture_test) share: the apps' clock, and the kernels cupti_test_app
// launches, whose names the tests check the collector's output against.
#pragma once

#include <time.h>

#include <cerrno>
#include <cstdint>

namespace pyprof::collect::testing {

inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline void sleep_until(int64_t monotonic_deadline_ns) {
  timespec ts{static_cast<time_t>(monotonic_deadline_ns / 1'000'000'000),
              static_cast<long>(monotonic_deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Kernel names as CUPTI reports them: mangled C++ names and plain C names.
inline constexpr char kSgemm[] = "volta_sgemm_128x64_nn";
inline constexpr char kElementwise[] =
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_"
    "copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE8_clEvEUlfE_EEvS4_RKT_"
    "EUliE_EEviT1_";
inline constexpr char kAdd[] = "_Z10add_kernelPfS_i";
inline constexpr char kCutlass[] =
    "_ZN7cutlass7Kernel2I30cutlass_80_tensorop_s1688gemm_EEvNT_6ParamsE";

}  // namespace pyprof::collect::testing
