#include "prof/roofline.h"

#include <gtest/gtest.h>

#include <string>

namespace pyprof::prof {
namespace {

TEST(MathMode, FromDtypeAndTensorCores) {
  EXPECT_EQ(math_mode("float32", 1, false), Mode::kTf32Tc);
  EXPECT_EQ(math_mode("float32", 0, false), Mode::kFp32);
  EXPECT_EQ(math_mode("float32", 1, true), Mode::kFp32);  // CPU: no Tensor Cores
  EXPECT_EQ(math_mode("float16", 1, false), Mode::kFp16Tc);
  EXPECT_EQ(math_mode("half", 1, false), Mode::kFp16Tc);  // legacy spelling
  EXPECT_EQ(math_mode("float16", 0, false), Mode::kFp16);
  EXPECT_EQ(math_mode("bfloat16", 1, false), Mode::kBf16Tc);
  EXPECT_EQ(math_mode("bfloat16", -1, true), Mode::kBf16);
  EXPECT_EQ(math_mode("float64", 1, false), Mode::kFp64Tc);
  EXPECT_EQ(math_mode("float64", 0, false), Mode::kFp64);
  EXPECT_EQ(math_mode("float8_e4m3fn", 1, false), Mode::kFp8Tc);
  EXPECT_EQ(math_mode("int8", 1, false), Mode::kInt8Tc);
  EXPECT_EQ(math_mode("int64", 0, false), std::nullopt);
  EXPECT_EQ(math_mode("", 1, false), std::nullopt);
}

TEST(ModePeak, CudaCoreHalfUsesFp32) {
  const PeakEntry& a100 = *PeakTable::builtin().find_by_name("NVIDIA A100-SXM4-40GB");
  EXPECT_DOUBLE_EQ(mode_peak(a100, Mode::kFp16), 19.5e12);
  EXPECT_DOUBLE_EQ(mode_peak(a100, Mode::kBf16Tc), 312e12);
  const PeakEntry& t4 = *PeakTable::builtin().find_by_name("Tesla T4");
  EXPECT_DOUBLE_EQ(mode_peak(t4, Mode::kFp64Tc), 0.25e12);
  EXPECT_EQ(mode_peak(t4, Mode::kTf32Tc), 0);
}

TEST(PlaceUnderRoof, HandComputed) {
  // 2 GFLOP and 100 MB in 1 ms on an A100 40GB (fp16 Tensor 312 TFLOP/s, 1555 GB/s):
  // intensity 20 FLOP/B < ridge 312e12/1555e9 = 200.6: memory bound; roof 20 x 1555e9 =
  // 31.1 TFLOP/s; achieved 2 TFLOP/s = 6.4309% of it.
  RoofPoint p = place_under_roof(2e9, 1e8, 1e-3, 312e12, 1555e9);
  ASSERT_TRUE(p.has_roof);
  EXPECT_TRUE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.roof, 31.1e12);
  EXPECT_NEAR(p.percent, 100 * 2e12 / 31.1e12, 1e-9);
  EXPECT_NEAR(p.percent, 6.4309, 1e-4);
  // 1 TFLOP and 1 GB in 10 s: intensity 1000 > 200.6: compute bound, roof 312e12.
  p = place_under_roof(1e12, 1e9, 10, 312e12, 1555e9);
  EXPECT_FALSE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.roof, 312e12);
  EXPECT_NEAR(p.percent, 100 * 1e11 / 312e12, 1e-12);
  // No FLOPs (a copy): intensity 0, bandwidth share.
  p = place_under_roof(0, 1e9, 1, 312e12, 1e10);
  EXPECT_TRUE(p.has_roof);
  EXPECT_TRUE(p.memory_bound);
  EXPECT_EQ(p.roof, 0);
  EXPECT_DOUBLE_EQ(p.percent, 10);
  // No bytes: compute roof.
  p = place_under_roof(1e9, 0, 1, 4e9, 0);
  EXPECT_TRUE(p.has_roof);
  EXPECT_FALSE(p.memory_bound);
  EXPECT_DOUBLE_EQ(p.percent, 25);
  // FLOPs without a peak, bytes without a bandwidth: no roof.
  EXPECT_FALSE(place_under_roof(1e9, 1e6, 1, 0, 1e9).has_roof);
  EXPECT_FALSE(place_under_roof(1e9, 1e6, 1, 1e12, 0).has_roof);
  EXPECT_FALSE(place_under_roof(1e9, 1e6, 0, 1e12, 1e9).has_roof);
}

// A GPU profile on one A100 40GB: op "aten::mm" instance 1 (fp16, two Tensor Core kernels),
// instance 2 (fp16, one non-TC kernel), "aten::relu" instance 3 (float32), and a copy.
struct Fixture {
  ReadResult data;
  Fixture() {
    DevicePeak d;
    d.id = 0;
    d.name = "NVIDIA A100-SXM4-40GB";
    data.devices.push_back(d);
    auto add = [&](const char* op, int64_t instance, const char* dtype, int tc, int64_t ns,
                   double flops, double bytes, Kind kind = Kind::kKernel) {
      ProfRecord r;
      r.kind = kind;
      r.dir = Dir::kFprop;
      r.device = 0;
      r.instance = instance;
      r.tc = static_cast<int8_t>(tc);
      r.duration = ns;
      r.counted = r.modeled = true;
      r.flops = flops;
      r.bytes = bytes;
      r.op = data.strings.intern(op);
      r.dtype = data.strings.intern(dtype);
      r.module = data.strings.intern("Net.fc");
      r.shapes = data.strings.intern("[64,64],[64,64]");
      data.records.push_back(r);
    };
    add("aten::mm", 1, "float16", 1, 600000, 6e9, 1e8);  // 1 ms, 1e10 FLOP, 1.5e8 B in all
    add("aten::mm", 1, "float16", 1, 400000, 4e9, 0.5e8);
    add("aten::mm", 2, "float16", 0, 3000000, 1e10, 1e7);
    add("aten::relu", 3, "float32", 0, 500000, 1e6, 8e6);
    add("", 0, "", -1, 900000, 0, 1e9, Kind::kMemcpy);  // copies are not on the roofline
  }
};

TEST(RooflineReport, HandComputedRows) {
  Fixture f;
  std::vector<ReportTable> t = roofline_report(f.data, nullptr);
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(t[0].title, "roofline: op types");
  ASSERT_EQ(t[1].title, "roofline: op instances");
  ASSERT_EQ(t[0].headers.size(), 16u);
  EXPECT_EQ(t[0].headers[13], "Roof FLOP/s");

  // Instances, longest first: 2 (3 ms), 1 (1 ms), 3 (0.5 ms).
  ASSERT_EQ(t[1].rows.size(), 3u);
  const auto& i2 = t[1].rows[0];
  // 1e10 FLOP / 1e7 B = 1000 FLOP/B; fp16 on CUDA cores: the A100's fp32 peak 19.5e12 is the
  // roof (1000 x 1555e9 is higher); 1e10 / 3 ms = 3.333e12 FLOP/s = 17.09% of it.
  EXPECT_EQ(i2[0], "aten::mm");
  EXPECT_EQ(i2[2], "Net.fc");
  EXPECT_EQ(i2[3], "[64,64],[64,64]");
  EXPECT_EQ(i2[4], "float16");
  EXPECT_EQ(i2[5], "fp16");
  EXPECT_EQ(i2[6], "0");
  EXPECT_EQ(i2[7], "1");
  EXPECT_EQ(i2[8], "3000000");
  EXPECT_EQ(i2[9], "10000000000");
  EXPECT_EQ(i2[10], "10000000");
  EXPECT_EQ(i2[11], "1000");
  EXPECT_EQ(i2[12], "3.333333333e+12");  // 10 significant digits
  EXPECT_EQ(i2[13], "1.95e+13");
  EXPECT_EQ(i2[14], "17.09");  // 3.3333e12 / 19.5e12
  EXPECT_EQ(i2[15], "compute");

  const auto& i1 = t[1].rows[1];
  // 1e10 FLOP / 1.5e8 B = 66.67 FLOP/B < ridge 200.6: memory bound; roof 66.67 x 1555e9 =
  // 1.0367e14; achieved 1e10 / 1 ms = 1e13 = 9.65% (= 1.5e11 B/s / 1555e9).
  EXPECT_EQ(i1[5], "fp16_tc");
  EXPECT_EQ(i1[8], "1000000");
  EXPECT_EQ(i1[11], "66.66666667");
  EXPECT_EQ(i1[12], "1e+13");
  EXPECT_EQ(i1[13], "1.036666667e+14");
  EXPECT_EQ(i1[14], "9.65");
  EXPECT_EQ(i1[15], "memory");

  const auto& i3 = t[1].rows[2];
  EXPECT_EQ(i3[0], "aten::relu");
  EXPECT_EQ(i3[5], "fp32");
  // 8e6 B in 0.5 ms = 1.6e10 B/s = 1.03% of 1555e9.
  EXPECT_EQ(i3[14], "1.03");
  EXPECT_EQ(i3[15], "memory");

  // Op types: aten::mm holds both instances; its mode is the one with most time (fp16: 3 ms
  // against fp16_tc's 1 ms). 2e10 FLOP / 1.6e8 B = 125 FLOP/B; roof min(19.5e12, 125 x
  // 1555e9) = 19.5e12; 2e10 / 4 ms = 5e12 = 25.64%.
  ASSERT_EQ(t[0].rows.size(), 2u);
  const auto& mm = t[0].rows[0];
  EXPECT_EQ(mm[0], "aten::mm");
  EXPECT_EQ(mm[1], "fprop");
  EXPECT_EQ(mm[2], "-");
  EXPECT_EQ(mm[3], "-");
  EXPECT_EQ(mm[5], "fp16");
  EXPECT_EQ(mm[7], "2");
  EXPECT_EQ(mm[8], "4000000");
  EXPECT_EQ(mm[11], "125");
  EXPECT_EQ(mm[12], "5e+12");
  EXPECT_EQ(mm[13], "1.95e+13");
  EXPECT_EQ(mm[14], "25.64");
  EXPECT_EQ(mm[15], "compute");
}

TEST(RooflineReport, NoPeaksGiveNa) {
  Fixture f;
  f.data.devices[0].name = "Unknown Thing";
  std::vector<ReportTable> t = roofline_report(f.data, nullptr);
  for (const auto& row : t[1].rows) {
    EXPECT_EQ(row[13], "na");
    EXPECT_EQ(row[14], "na");
    EXPECT_EQ(row[15], "na");
  }
  ReportTable peaks = peaks_report(f.data, nullptr);
  ASSERT_EQ(peaks.rows.size(), 1u);
  EXPECT_EQ(peaks.rows[0][3],
            "unknown GPU 'Unknown Thing': no datasheet entry and no compute capability/clock to "
            "derive peaks");
  EXPECT_EQ(peaks.rows[0][4], "-");
}

TEST(PeaksReport, RowsPerModeWithRidge) {
  Fixture f;
  ReportTable t = peaks_report(f.data, nullptr);
  ASSERT_EQ(t.headers, (std::vector<std::string>{"Device", "Name", "Kind", "Source", "Mode",
                                                 "Peak FLOP/s", "Memory B/s", "Ridge FLOP/Byte"}));
  // A100: fp64, fp64_tc, fp32, tf32_tc, fp16_tc, bf16_tc, int8_tc.
  ASSERT_EQ(t.rows.size(), 7u);
  const auto& fp16 = t.rows[4];
  EXPECT_EQ(fp16[0], "0");
  EXPECT_EQ(fp16[1], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(fp16[2], "datasheet");
  EXPECT_EQ(fp16[3], "FLOP/s: N1,N6; B/s: N1,N17");
  EXPECT_EQ(fp16[4], "fp16_tc");
  EXPECT_EQ(fp16[5], "3.12e+14");
  EXPECT_EQ(fp16[6], "1.555e+12");
  EXPECT_EQ(fp16[7], "200.6430868");  // 312e12 / 1555e9
}

TEST(PeaksReport, EmptyProfile) {
  ReadResult empty;
  ReportTable t = peaks_report(empty, nullptr);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][3], "the profile is empty: no records and no GPU in its header");
  std::vector<ReportTable> r = roofline_report(empty, nullptr);
  EXPECT_TRUE(r[0].rows.empty());
  EXPECT_TRUE(r[1].rows.empty());
}

}  // namespace
}  // namespace pyprof::prof
