// Records faster than their device can run (docs/prof.md §1, "Rates above the device's peak"):
// a GPU record's FLOPs per second above the peak of the fastest unit its math could use on its
// device, or its bytes per second far above the device's memory bandwidth, is no measurement of
// work. Such records are flagged `above-peak` and left out of the totals.
#pragma once

#include <string_view>

#include "prof/device_peaks.h"
#include "prof/records.h"

namespace pyprof::prof {

// A record's FLOP rate is judged over its duration plus this much: two steps of the GPU timer
// that stamps CUPTI's and nsys's activity records (its start and its end may each be late by
// one). Real traces' durations come in 32 ns steps (the nvprof V100, nsys RTX 2070 SUPER and
// H200 traces of tests/data: 86-87% of them multiples of 32 ns). A kernel of a few hundred
// nanoseconds is not flagged for a rate that one timer step makes.
inline constexpr int64_t kTimerSlackNs = 64;
// How far over its math mode's peak a FLOP rate may be before it is impossible: the datasheet
// peaks hold at the reference boost clock, and GeForce boards run above it (an RTX 5090 ran
// dense FP4 at 1.12x its spec, docs/peaks.md §1).
inline constexpr double kFlopPeakMargin = 1.25;
// How far over the device's memory bandwidth a byte rate may be: an op's bytes are the ideal DRAM
// traffic, which an L2 cache can serve at up to ~4x DRAM bandwidth (A100/H100), and the byte
// models may count more than a kernel moves.
inline constexpr double kBandwidthMargin = 10;

// The fastest FLOP/s a record's math could run at on `roof`: CUDA-core fp32 for an fp32 op that
// could not use Tensor Cores (tc 0, not tc_eligible); otherwise the faster of the dtype's
// CUDA-core and Tensor Core peaks (16-bit and narrower types and fp64 run on either, at rates
// the kernel-name rules cannot always tell apart); the device's fastest mode for a dtype with
// no math mode (unknown, integer). 0 when `roof` has none.
double fastest_flop_rate(const PeakEntry& roof, std::string_view dtype, bool tensor_cores);

// Flags counted GPU records above their device's peak (ProfRecord::above_peak), takes them out
// of the totals and warns once. Devices' peaks come from the built-in table, or from `peaks`
// (a `--peaks` file's overrides; null: none), or are derived from the header's SMs and clock;
// a device with none is checked against the densest Tensor Core rate of its architecture.
void flag_above_peak(ReadResult& result, const PeaksFile* peaks);

}  // namespace pyprof::prof
