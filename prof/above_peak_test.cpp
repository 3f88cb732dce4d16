#include "prof/above_peak.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace pyprof::prof {
namespace {

const PeakEntry& row(const std::string& cuda_name) {
  const PeakEntry* e = PeakTable::builtin().find_by_name(cuda_name);
  if (!e) throw std::runtime_error("no table entry for " + cuda_name);
  return *e;
}

// The datasheet figures (prof/gpu_peaks.txt), in TFLOP/s.
double tflops(const PeakEntry& roof, const char* dtype, bool tensor_cores) {
  return fastest_flop_rate(roof, dtype, tensor_cores) / 1e12;
}

TEST(FastestFlopRate, Fp32WithoutTensorCoresIsTheFp32Units) {
  const PeakEntry& a100 = row("NVIDIA A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(tflops(a100, "float32", false), 19.5);  // an elementwise op, a copy
  EXPECT_DOUBLE_EQ(tflops(a100, "float32", true), 156);    // a GEMM that may use TF32
  // A V100 has no TF32: an fp32 GEMM runs on its fp32 units whatever it is eligible for.
  EXPECT_DOUBLE_EQ(tflops(row("Tesla V100-SXM2-16GB"), "float32", true), 15.7);
}

TEST(FastestFlopRate, NarrowTypesAndFp64MayUseEitherUnit) {
  // The table has no CUDA-core figure for 16-bit math, which reaches 4x fp32 on an A100: the
  // Tensor Core peak bounds it, whatever the kernel-name rules said.
  const PeakEntry& a100 = row("NVIDIA A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(tflops(a100, "float16", false), 312);
  EXPECT_DOUBLE_EQ(tflops(a100, "bfloat16", false), 312);
  EXPECT_DOUBLE_EQ(tflops(a100, "float64", false), 19.5);  // fp64 Tensor Cores (DGEMM)
  EXPECT_DOUBLE_EQ(tflops(row("NVIDIA H100 80GB HBM3"), "float8_e4m3fn", false), 1978.9);
}

TEST(FastestFlopRate, NoMathModeTakesTheFastestUnit) {
  const PeakEntry& a100 = row("NVIDIA A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(tflops(a100, "", false), 624);  // INT8 Tensor Cores
  EXPECT_DOUBLE_EQ(tflops(a100, "int64", true), 624);
}

}  // namespace
}  // namespace pyprof::prof
