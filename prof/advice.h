// Expert advice (docs/advice.md): rules over prof's records, each with a measured trigger, the
// time at stake (what the fix could save, estimated from the profile itself), the evidence and
// the fix. Report `advice`.
#pragma once

#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

struct Advice {
  std::string rule;     // id, e.g. "fp32-gemm-tf32"
  std::string finding;  // one sentence with numbers
  double at_stake_ns = 0;
  // at_stake_ns over the profile's wall time: the GPU span (first GPU start to last end), or
  // on a CPU-only profile the ops' total self time.
  double percent = 0;
  std::string evidence;  // the top 3 ops / kernels / modules with their numbers
  std::string fix;
};

// Thresholds (docs/advice.md says why each).
inline constexpr double kMinShare = 0.02;          // a rule fires at >= 2% of the profile time
inline constexpr double kIdleShare = 0.05;         // an idle cause fires at >= 5% of the GPU span
inline constexpr double kUnmodelledShare = 0.05;   // unmodelled-ops: >= 5% of the profile time
inline constexpr int64_t kShortKernelNs = 10'000;  // launch-bound: kernels under 10 µs
inline constexpr double kTf32SpeedupDefault = 8;   // A100: 156 TF32 / 19.5 FP32 TFLOP/s
inline constexpr double kBwdFwdLow = 1.5, kBwdFwdHigh = 3.0;
// batch-size-headroom fires when the batch could at least double (the next batch size people
// try) before the device's memory is full.
inline constexpr double kBatchGrowthMin = 2.0;

// Every rule that fires, sorted by time at stake (largest first).
std::vector<Advice> advise(const ReadResult& data);

// Report `advice`.
ReportTable advice_report(const ReadResult& data);

}  // namespace pyprof::prof
