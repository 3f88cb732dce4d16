// The time model recovers known ceilings from synthetic points, refuses degenerate families,
// and fits a real GPU dict.
#include "prof/time_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pyprof::prof {
namespace {

ProfRecord point(ReadResult& d, std::string_view family, double flops, double bytes, int64_t ns) {
  ProfRecord r;
  r.kind = Kind::kKernel;
  r.counted = r.modeled = true;
  r.family = d.strings.intern(family);
  r.op = d.strings.intern("aten::mm");
  r.name = d.strings.intern("gemm");
  r.flops = flops;
  r.bytes = bytes;
  r.duration = ns;
  return r;
}

TEST(TimeModel, RecoversKnownCeilings) {
  // P = 100 TFLOP/s (1e-5 ns/FLOP), B = 1 TB/s (1e-3 ns/byte), c = 4000 ns.
  ReadResult d;
  for (int i = 1; i <= 20; ++i) {
    double flops = 1e8 * i * (i % 3 + 1), bytes = 1e6 * (21 - i);
    double ns = flops * 1e-5 + bytes * 1e-3 + 4000;
    d.records.push_back(point(d, "matmul", flops, bytes, static_cast<int64_t>(std::llround(ns))));
  }
  TimeModel m = fit_time_model(d);
  const FamilyFit& f = m.fits.at(d.strings.intern("matmul"));
  ASSERT_TRUE(f.fitted) << f.reason;
  EXPECT_EQ(f.points, 20);
  EXPECT_NEAR(f.flops_per_second(), 100e12, 100e12 * 1e-3);
  EXPECT_NEAR(f.bytes_per_second(), 1e12, 1e12 * 1e-3);
  EXPECT_NEAR(f.fixed_ns, 4000, 5);
  EXPECT_GT(f.r2, 0.999999);
  ASSERT_TRUE(m.predict_ns(d.records[0]).has_value());
  EXPECT_NEAR(*m.predict_ns(d.records[0]), static_cast<double>(d.records[0].duration), 1);
}

TEST(TimeModel, CoefficientsStayNonNegative) {
  // Time falls with bytes: unconstrained least squares gives b < 0; NNLS clamps it to 0 and
  // refits time = FLOPs/P + c.
  ReadResult d;
  for (int i = 1; i <= 10; ++i) {
    d.records.push_back(point(d, "conv", 1e6 * i, 1e6 * i * i, 1000 + 10 * i - i * i / 4));
  }
  TimeModel m = fit_time_model(d);
  const FamilyFit& f = m.fits.at(d.strings.intern("conv"));
  ASSERT_TRUE(f.fitted);
  EXPECT_GE(f.ns_per_flop, 0);
  EXPECT_EQ(f.ns_per_byte, 0);
  EXPECT_GE(f.fixed_ns, 0);
}

TEST(TimeModel, DegenerateAndSmallFamiliesHaveNoFit) {
  ReadResult d;
  // Every call the same size: FLOPs, bytes and the constant are dependent.
  for (int i = 0; i < 10; ++i) d.records.push_back(point(d, "pointwise", 1e6, 4e6, 1000 + i));
  for (int i = 0; i < 3; ++i) d.records.push_back(point(d, "norm", 1e6 * (i + 1), 4e6, 1000));
  TimeModel m = fit_time_model(d);
  const FamilyFit& same = m.fits.at(d.strings.intern("pointwise"));
  EXPECT_FALSE(same.fitted);
  EXPECT_NE(same.reason.find("degenerate"), std::string::npos) << same.reason;
  const FamilyFit& few = m.fits.at(d.strings.intern("norm"));
  EXPECT_FALSE(few.fitted);
  EXPECT_EQ(few.reason, "too few points (3 < 6)");
  EXPECT_FALSE(m.predict_ns(d.records[0]).has_value());
}

TEST(TimeModel, FlagsFarPoints) {
  ReadResult d;
  for (int i = 1; i <= 12; ++i) {
    double flops = 1e9 * i, bytes = 1e6 * ((i * 7) % 5 + 1);
    d.records.push_back(
        point(d, "matmul", flops, bytes, static_cast<int64_t>(flops * 1e-5 + bytes * 1e-3 + 2000)));
  }
  d.records[5].duration *= 10;  // one slow call
  auto tables = timemodel_report(d);
  ASSERT_EQ(tables.size(), 2u);
  ASSERT_GE(tables[1].rows.size(), 1u);
  // The slow call is the first row: the largest excess.
  EXPECT_EQ(tables[1].rows[0][4], std::to_string(d.records[5].duration));
}

}  // namespace
}  // namespace pyprof::prof
