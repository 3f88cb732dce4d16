// format_quantity's edge cases and the text report's human units against its raw numbers; the
// table's fixed-point cells against fmt.
#include "prof/reports.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "prof/table.h"

namespace pyprof::prof {
namespace {

TEST(FormatQuantity, TimesKeepThreeSignificantDigits) {
  EXPECT_EQ(format_quantity(0, Unit::kTime), "0 ns");
  EXPECT_EQ(format_quantity(5, Unit::kTime), "5 ns");
  EXPECT_EQ(format_quantity(845, Unit::kTime), "845 ns");
  EXPECT_EQ(format_quantity(999, Unit::kTime), "999 ns");
  // Rounding to a whole ns reaches 1000: the next unit, not "1000 ns".
  EXPECT_EQ(format_quantity(999.5, Unit::kTime), "1.00 µs");
  EXPECT_EQ(format_quantity(1000, Unit::kTime), "1.00 µs");
  EXPECT_EQ(format_quantity(12345, Unit::kTime), "12.3 µs");
  EXPECT_EQ(format_quantity(123456, Unit::kTime), "123 µs");
  // 999,500 ns is 999.5 µs: 3 digits round it to 1000 µs, so 1.00 ms.
  EXPECT_EQ(format_quantity(999500, Unit::kTime), "1.00 ms");
  EXPECT_EQ(format_quantity(999499, Unit::kTime), "999 µs");
  EXPECT_EQ(format_quantity(4.56e6, Unit::kTime), "4.56 ms");
  EXPECT_EQ(format_quantity(95.04e6, Unit::kTime), "95.0 ms");
  EXPECT_EQ(format_quantity(1.234e9, Unit::kTime), "1.23 s");
  EXPECT_EQ(format_quantity(99.95e9, Unit::kTime), "100 s");
  // Past the largest unit the number grows, with separators.
  EXPECT_EQ(format_quantity(1234.4e9, Unit::kTime), "1,234 s");
  EXPECT_EQ(format_quantity(std::pow(2.0, 62), Unit::kTime), "4,611,686,018 s");
}

TEST(FormatQuantity, FlopsBytesAndRates) {
  EXPECT_EQ(format_quantity(0, Unit::kFlops), "0 FLOP");
  EXPECT_EQ(format_quantity(72, Unit::kFlops), "72 FLOP");
  EXPECT_EQ(format_quantity(1320, Unit::kFlops), "1.32 kFLOP");
  EXPECT_EQ(format_quantity(17252352, Unit::kFlops), "17.3 MFLOP");
  EXPECT_EQ(format_quantity(2.1e9, Unit::kFlops), "2.10 GFLOP");
  EXPECT_EQ(format_quantity(1.5e12, Unit::kFlops), "1.50 TFLOP");
  EXPECT_EQ(format_quantity(3e15, Unit::kFlops), "3.00 PFLOP");
  EXPECT_EQ(format_quantity(4e18, Unit::kFlops), "4.00 EFLOP");
  EXPECT_EQ(format_quantity(1e300, Unit::kFlops).substr(0, 6), "1,000,");  // no exponent
  EXPECT_EQ(format_quantity(1.2e6, Unit::kBytes), "1.20 MB");              // decimal: 10^6
  EXPECT_EQ(format_quantity(3.4e9, Unit::kBytes), "3.40 GB");
  EXPECT_EQ(format_quantity(12, Unit::kBytes), "12 B");
  // Rates come in the raw cells' units: TFLOP/s and GB/s.
  EXPECT_EQ(format_quantity(12.345, Unit::kFlopRate), "12.3 TFLOP/s");
  EXPECT_EQ(format_quantity(0.00123, Unit::kFlopRate), "1.23 GFLOP/s");
  EXPECT_EQ(format_quantity(1374389.535, Unit::kFlopRate), "1.37 EFLOP/s");
  EXPECT_EQ(format_quantity(0, Unit::kFlopRate), "0 FLOP/s");
  EXPECT_EQ(format_quantity(850, Unit::kByteRate), "850 GB/s");
  EXPECT_EQ(format_quantity(0.0046, Unit::kByteRate), "4.60 MB/s");
}

TEST(FormatQuantity, CountsPercentsNegativesAndMissing) {
  EXPECT_EQ(format_quantity(0, Unit::kCount), "0");
  EXPECT_EQ(format_quantity(999, Unit::kCount), "999");
  EXPECT_EQ(format_quantity(1000, Unit::kCount), "1,000");
  EXPECT_EQ(format_quantity(1234567, Unit::kCount), "1,234,567");
  EXPECT_EQ(format_quantity(-1234, Unit::kCount), "-1,234");
  EXPECT_EQ(format_quantity(12.34, Unit::kPercent), "12.3");
  EXPECT_EQ(format_quantity(-1500, Unit::kTime), "-1.50 µs");
  EXPECT_EQ(format_quantity(-0.2, Unit::kTime), "0 ns");  // no "-0"
  EXPECT_EQ(format_quantity(std::nan(""), Unit::kTime), "na");
  EXPECT_EQ(format_quantity(std::numeric_limits<double>::infinity(), Unit::kFlopRate), "inf");
}

// Writes `tables` in `format` through an OutputFile and returns the text.
std::string written(const std::vector<ReportTable>& tables, ReportFormat format) {
  // ctest runs each test in its own process, several at once: the pid keeps their files apart.
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("reports_test_" + std::to_string(::getpid()) + "_" +
                                                std::to_string(static_cast<int>(format)) + ".txt");
  OutputFile out;
  std::string error;
  EXPECT_TRUE(out.open(path.string(), error)) << error;
  write_report(out, tables, format);
  EXPECT_TRUE(out.close(error)) << error;
  EXPECT_TRUE(out.commit(error)) << error;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

ReportTable sample() {
  ReportTable t;
  t.title = "t";
  t.headers = {"Op", "Total(ns)", "FLOPs(FMA=2)", "TFLOP/s", "Count"};
  t.numeric = {false, true, true, true, true};
  t.units = {Unit::kText, Unit::kTime, Unit::kFlops, Unit::kFlopRate, Unit::kCount};
  t.rows = {{"aten::conv2d", "90300000", "17252352", "0.000", "1234"},
            {"aten::relu", "845", "0", "na", "3"}};
  // The raw rate keeps 3 decimals of TFLOP/s; text prints the exact one.
  t.exact[{0, 3}] = 17252352 / 90300000.0 / 1e3;
  return t;
}

TEST(WriteReport, TextHasHumanUnitsRawTextAndCsvTheNumbers) {
  std::vector<ReportTable> tables = {sample()};
  EXPECT_EQ(written(tables, ReportFormat::kText),
            "t\n"
            "Op              Total  FLOPs(FMA=2)       FLOP/s  Count\n"
            "aten::conv2d  90.3 ms    17.3 MFLOP  191 MFLOP/s  1,234\n"
            "aten::relu     845 ns        0 FLOP           na      3\n"
            "\n");
  EXPECT_EQ(written(tables, ReportFormat::kRawText),
            "t\n"
            "Op            Total(ns)  FLOPs(FMA=2)  TFLOP/s  Count\n"
            "aten::conv2d   90300000      17252352    0.000   1234\n"
            "aten::relu          845             0       na      3\n"
            "\n");
  EXPECT_EQ(written(tables, ReportFormat::kCsv),
            "\"Op\",\"Total(ns)\",\"FLOPs(FMA=2)\",\"TFLOP/s\",\"Count\"\n"
            "\"aten::conv2d\",\"90300000\",\"17252352\",\"0.000\",\"1234\"\n"
            "\"aten::relu\",\"845\",\"0\",\"na\",\"3\"\n");
}

TEST(WriteReport, PerRowUnitsAndHumanOverrides) {
  ReportTable t;
  t.title = "summary";
  t.headers = {"Metric", "Value"};
  t.numeric = {false, false};
  t.units = {Unit::kText, Unit::kPerRow};
  t.rows = {{"wall time (ns)", "95040000"}, {"profile", "GPU"}, {"top op 1", "x 845 ns (1.0%)"}};
  t.row_units = {Unit::kTime, Unit::kText, Unit::kText};
  t.human[{2, 1}] = "x 845 ns! (1.0%)";
  EXPECT_EQ(written({t}, ReportFormat::kText),
            "summary\n"
            "Metric     Value           \n"
            "wall time  95.0 ms         \n"
            "profile    GPU             \n"
            "top op 1   x 845 ns! (1.0%)\n"
            "\n");
  EXPECT_EQ(written({t}, ReportFormat::kJson),
            "{\"report\":\"summary\",\"Metric\":\"wall time (ns)\",\"Value\":\"95040000\"}\n"
            "{\"report\":\"summary\",\"Metric\":\"profile\",\"Value\":\"GPU\"}\n"
            "{\"report\":\"summary\",\"Metric\":\"top op 1\",\"Value\":\"x 845 ns (1.0%)\"}\n");
}

TEST(WriteReport, TableWithoutUnitsPrintsItsCellsAsTheyAre) {
  ReportTable t = sample();
  t.units.clear();
  EXPECT_EQ(written({t}, ReportFormat::kText), written({t}, ReportFormat::kRawText));
}

}  // namespace
}  // namespace pyprof::prof

// The table's fixed-point cells (prof/table.h, append_fixed) are fmt's "{:.Nf}" byte for byte:
// on ties (0.5, 2.125), integers, shares of integers, huge and tiny values, and random ones.
TEST(AppendFixed, MatchesFmt) {
  std::vector<double> values = {0,       0.5,   1.5,    2.5,  2.125, 0.0005, 1e-300, 123.4565,
                                1e12,    1e15,  4.5e15, 9e15, 1e300, -0.0,   -1.5,   -0.0001,
                                2097152, 90624, 23.145, 0.05, 0.15,  0.25,   1.005,  999.9995};
  uint64_t state = 12345;
  for (int i = 0; i < 200000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double unit = static_cast<double>(state >> 11) / 9007199254740992.0;
    const int exponent = static_cast<int>(state % 40) - 10;
    values.push_back(unit * std::pow(10.0, exponent));
    values.push_back(std::round(unit * 1e6) / 1e3);  // decimals that sit on or near ties
    values.push_back(std::round(unit * 1e9) * (static_cast<double>(state % 7) / 7.0));
  }
  for (double v : values) {
    for (int decimals = 0; decimals <= 3; ++decimals) {
      std::string out;
      pyprof::prof::append_fixed(out, v, decimals);
      ASSERT_EQ(out, fmt::format("{:.{}f}", v, decimals)) << v << " " << decimals;
    }
  }
}

namespace pyprof::prof {
namespace {

TEST(InductorKernel, NamesInductorGives) {
  EXPECT_TRUE(is_inductor_kernel("graph_0_cpp_fused_gelu_native_layer_norm_0"));
  EXPECT_TRUE(is_inductor_kernel("graph_12_cpp_fused_sum_1"));
  EXPECT_TRUE(is_inductor_kernel("triton_poi_fused_add_mul_0"));
  EXPECT_TRUE(is_inductor_kernel("triton_red_fused_sum_3"));
  EXPECT_FALSE(is_inductor_kernel("graph_cpp_fused_0"));  // no graph number
  EXPECT_FALSE(is_inductor_kernel("graph_0_"));
  EXPECT_FALSE(is_inductor_kernel("graph_0_inductor_wrapper_call"));
  EXPECT_FALSE(is_inductor_kernel("aten::addmm"));
  EXPECT_FALSE(is_inductor_kernel("CompiledFunction"));
  EXPECT_FALSE(is_inductor_kernel("ampere_sgemm_128x64_nn"));
}

}  // namespace
}  // namespace pyprof::prof
