// The roofline of a profile (docs/peaks.md): each counted op type and op instance placed by its
// arithmetic intensity (FLOPs per ideal DRAM byte) and achieved FLOP/s under its device's roof,
// min(peak of its math mode, intensity x memory bandwidth). Reports `peaks` and `roofline`.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "prof/device_peaks.h"
#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// The math mode a record's FLOPs ran in: from its dtype and, on a GPU (`cpu` false), its
// kernel's Tensor Core use (tc == 1): float64 -> fp64/fp64_tc, float32 -> fp32/tf32_tc,
// float16 -> fp16/fp16_tc, bfloat16 -> bf16/bf16_tc, float8 types -> fp8_tc, int8 -> int8_tc,
// float4 -> fp4_tc. nullopt for any other dtype (int64, complex, unknown): no compute roof.
std::optional<Mode> math_mode(std::string_view dtype, int tc, bool cpu);

// The peak FLOP/s of `mode` in `entry`; a CUDA-core fp16/bf16 without its own figure uses the
// entry's fp32 peak, fp64_tc without one fp64. 0 when the entry has none.
double mode_peak(const PeakEntry& entry, Mode mode);

// Where a point sits under its roof. FLOPs and bytes are the counted ones, `seconds` the time
// they ran in; `peak` (FLOP/s) and `bandwidth` (B/s) 0 when unknown.
struct RoofPoint {
  bool has_roof = false;  // the roof is known (peak when flops > 0, bandwidth when bytes > 0)
  double roof = 0;        // FLOP/s: min(peak, flops/bytes x bandwidth)
  double percent = 0;     // achieved / roof, in %
  bool memory_bound = false;
};
RoofPoint place_under_roof(double flops, double bytes, double seconds, double peak,
                           double bandwidth);

// Table "device peaks" (report `peaks`).
ReportTable peaks_report(const ReadResult& data, const PeaksFile* file);
// Tables "roofline: op types" and "roofline: op instances" (report `roofline`).
std::vector<ReportTable> roofline_report(const ReadResult& data, const PeaksFile* file,
                                         size_t top = 0);

}  // namespace pyprof::prof
