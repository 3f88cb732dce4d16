// format_quantity's edge cases and the text report's human units against its raw numbers; the
// table's fixed-point cells against fmt.
#include "prof/reports.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
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
std::string written(const std::vector<ReportTable>& tables, ReportFormat format, size_t width = 0) {
  // ctest runs each test in its own process, several at once: the pid keeps their files apart.
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("reports_test_" + std::to_string(::getpid()) + "_" +
                                                std::to_string(static_cast<int>(format)) + ".txt");
  OutputFile out;
  std::string error;
  EXPECT_TRUE(out.open(path.string(), error)) << error;
  write_report(out, tables, format, width);
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
  t.report = t.id = "summary";
  EXPECT_EQ(written({t}, ReportFormat::kJson),
            "{\"report\":\"summary\",\"table\":\"summary\",\"title\":\"summary\",\"columns\":"
            "[{\"name\":\"Metric\",\"unit\":\"text\"},{\"name\":\"Value\",\"unit\":\"per-row\"}]}\n"
            "{\"report\":\"summary\",\"table\":\"summary\",\"unit\":\"ns\",\"Metric\":"
            "\"wall time (ns)\",\"Value\":95040000}\n"
            "{\"report\":\"summary\",\"table\":\"summary\",\"unit\":\"text\",\"Metric\":"
            "\"profile\",\"Value\":\"GPU\"}\n"
            "{\"report\":\"summary\",\"table\":\"summary\",\"unit\":\"text\",\"Metric\":"
            "\"top op 1\",\"Value\":\"x 845 ns (1.0%)\"}\n");
}

TEST(WriteReport, TableWithoutUnitsPrintsItsCellsAsTheyAre) {
  ReportTable t = sample();
  t.units.clear();
  EXPECT_EQ(written({t}, ReportFormat::kText), written({t}, ReportFormat::kRawText));
}

// format_quantity on the cases in tests/data/format_quantity.json, which pyprof/_units.py's
// format_quantity is held to as well (tests/test_report_json.py): the page and the text reports
// print a number the same way.
TEST(FormatQuantity, SharedCasesWithThePythonFormatter) {
  simdjson::dom::parser parser;
  simdjson::dom::array cases;
  ASSERT_EQ(parser.load(std::string(PYPROF_SOURCE_DIR) + "/tests/data/format_quantity.json")
                .get_array()
                .get(cases),
            simdjson::SUCCESS);
  size_t checked = 0;
  for (simdjson::dom::element c : cases) {
    std::string_view unit_text, want;
    ASSERT_EQ(c["unit"].get_string().get(unit_text), simdjson::SUCCESS);
    ASSERT_EQ(c["text"].get_string().get(want), simdjson::SUCCESS);
    Unit unit = Unit::kText;
    bool found = false;
    for (int u = 0; u <= static_cast<int>(Unit::kPerRow); ++u) {
      if (unit_name(static_cast<Unit>(u)) == unit_text) {
        unit = static_cast<Unit>(u);
        found = true;
      }
    }
    ASSERT_TRUE(found) << unit_text;
    double value = 0;
    std::string_view special;
    if (c["value"].is_null()) {
      value = std::nan("");
    } else if (c["value"].get_string().get(special) == simdjson::SUCCESS) {
      value = special == "inf" ? std::numeric_limits<double>::infinity() : std::nan("");
    } else {
      ASSERT_EQ(c["value"].get_double().get(value), simdjson::SUCCESS);
    }
    EXPECT_EQ(format_quantity(value, unit), want) << value << " " << unit_text;
    ++checked;
  }
  EXPECT_GT(checked, 50u);
}

TEST(WriteReport, JsonNamesItsTableColumnsAndUnitsAndWritesNoValueAsNull) {
  ReportTable t = sample();
  t.report = "op";
  t.id = "op";
  t.rows[1][0] = "-";
  EXPECT_EQ(written({t}, ReportFormat::kJson),
            "{\"report\":\"op\",\"table\":\"op\",\"title\":\"t\",\"columns\":["
            "{\"name\":\"Op\",\"unit\":\"text\"},{\"name\":\"Total(ns)\",\"unit\":\"ns\"},"
            "{\"name\":\"FLOPs(FMA=2)\",\"unit\":\"FLOPs\"},{\"name\":\"TFLOP/s\",\"unit\":"
            "\"TFLOP/s\"},{\"name\":\"Count\",\"unit\":\"count\"}]}\n"
            "{\"report\":\"op\",\"table\":\"op\",\"Op\":\"aten::conv2d\",\"Total(ns)\":90300000,"
            "\"FLOPs(FMA=2)\":17252352,\"TFLOP/s\":0.000,\"Count\":1234}\n"
            "{\"report\":\"op\",\"table\":\"op\",\"Op\":null,\"Total(ns)\":845,"
            "\"FLOPs(FMA=2)\":0,\"TFLOP/s\":null,\"Count\":3}\n");
}

TEST(WriteReport, JsonGivesAQuantityWithoutAJsonNumberAsText) {
  ReportTable t;
  t.report = t.id = "diff";
  column(t, "Delta %", Unit::kPercent);
  t.rows = {{"inf"}, {"+5"}, {"012"}, {"1e3"}, {"-0.5"}, {"nan"}};
  const std::string json = written({t}, ReportFormat::kJson);
  // NaN (a statistic of no samples: the summary's step times without steps) has no value:
  // null, where the JSON once held a bare nan no JSON reader takes.
  EXPECT_NE(json.find("\"Delta %\":null}"), std::string::npos) << json;
  EXPECT_EQ(json.find("nan"), std::string::npos) << json;
  EXPECT_NE(json.find("\"Delta %\":\"inf\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"Delta %\":\"+5\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"Delta %\":\"012\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"Delta %\":1e3}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"Delta %\":-0.5}"), std::string::npos) << json;
}

// Text reports fitted to a width: a long name wraps before any column goes; then the columns go
// in Keep order, rightmost first, and a line under the table names them; numbers never wrap.
ReportTable wide_table() {
  ReportTable t;
  t.title = "ops by total time";
  column(t, "Op", Unit::kText, Keep::kAlways);
  column(t, "Total(ns)", Unit::kTime, Keep::kAlways);
  column(t, "Min(ns)", Unit::kTime, Keep::kDetail);
  column(t, "Max(ns)", Unit::kTime, Keep::kDetail);
  column(t, "FLOPs(FMA=2)", Unit::kFlops, Keep::kMain);
  column(t, "Modeled", Unit::kText, Keep::kMore);
  t.rows = {{"aten::_scaled_dot_product_flash_attention_for_cpu", "90300000", "845", "9000000",
             "17252352", "yes"},
            {"aten::relu", "845", "845", "845", "0", "in caller"}};
  return t;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of `text` joined with spaces: a note wrapped over lines read as one.
std::string one_line(const std::string& text) {
  std::string joined;
  for (const std::string& line : lines_of(text)) joined += (joined.empty() ? "" : " ") + line;
  return joined;
}

size_t widest_line(const std::string& text) {
  size_t widest = 0;
  for (const std::string& line : lines_of(text)) widest = std::max(widest, text_width(line));
  return widest;
}

TEST(WriteReport, TextWiderThanItsWidthWrapsThenLeavesColumnsOut) {
  const std::vector<ReportTable> tables = {wide_table()};
  const std::string unlimited = written(tables, ReportFormat::kText, 0);
  EXPECT_EQ(lines_of(unlimited)[2].substr(0, 49),
            "aten::_scaled_dot_product_flash_attention_for_cpu");
  const size_t natural = widest_line(unlimited);
  // Wide enough: the same bytes as without a limit.
  EXPECT_EQ(written(tables, ReportFormat::kText, natural), unlimited);
  // 85: the name wraps (to 30 or more) and every column stays.
  const std::string w85 = written(tables, ReportFormat::kText, 85);
  EXPECT_LE(widest_line(w85), 85u) << w85;
  EXPECT_NE(w85.find("Min"), std::string::npos);
  EXPECT_EQ(w85.find("left out"), std::string::npos) << w85;
  EXPECT_NE(w85.find("aten::_scaled_dot_product_"), std::string::npos) << w85;
  // 60: with the name wrapped to 30, Max, then Min (kDetail, right to left) go, and still
  // 64 > 60, so Modeled (kMore) too; the name takes back the room (37 a line). By hand: 30 + 7
  // (Total) + 6 (Min) + 7 (Max) + 12 (FLOPs) + 9 (Modeled) + 5 * 2 = 81.
  const std::string w60 = written(tables, ReportFormat::kText, 60);
  EXPECT_LE(widest_line(w60), 60u) << w60;
  EXPECT_EQ(lines_of(w60)[1], "Op                                       Total  FLOPs(FMA=2)")
      << w60;
  EXPECT_EQ(lines_of(w60)[2].substr(0, 37), "aten::_scaled_dot_product_flash_atten") << w60;
  EXPECT_NE(one_line(w60).find("(left out to fit 60 characters: Min, Max, Modeled; -w 0 shows"),
            std::string::npos)
      << w60;
  EXPECT_NE(w60.find("90.3 ms"), std::string::npos);
  // 40: the kMain column goes too; Op and Total stay, the name wrapped narrower.
  const std::string w40 = written(tables, ReportFormat::kText, 40);
  EXPECT_LE(widest_line(w40), 40u) << w40;
  EXPECT_NE(one_line(w40).find("40 characters: Min, Max, FLOPs(FMA=2), Modeled;"),
            std::string::npos)
      << w40;
  EXPECT_NE(w40.find("90.3 ms"), std::string::npos) << w40;
  // Every character of the name is still there, over its lines.
  std::string joined;
  for (const std::string& line : lines_of(w40)) joined += line.substr(0, line.find("  "));
  EXPECT_NE(joined.find("aten::_scaled_dot_product_flash_attention_for_cpu"), std::string::npos)
      << w40;
}

TEST(WriteReport, TextWrapsLongValuesAtSpaces) {
  ReportTable t;
  t.title = "summary";
  column(t, "Metric", Unit::kText, Keep::kAlways);
  column(t, "Value", Unit::kPerRow, Keep::kAlways);
  t.rows = {{"torch settings",
             "cudnn.benchmark false; TF32: cuDNN true, matmul false "
             "(precision highest); deterministic false; torch 2.13.0"}};
  t.row_units = {Unit::kText};
  // Greedy, at spaces: each line as full as the Value column's 34 characters (50 - 16) allow.
  const std::string text = written({t}, ReportFormat::kText, 50);
  EXPECT_EQ(text,
            "summary\n"
            "Metric          Value                             \n"
            "torch settings  cudnn.benchmark false; TF32: cuDNN\n"
            "                true, matmul false (precision     \n"
            "                highest); deterministic false;    \n"
            "                torch 2.13.0                      \n"
            "\n");
}

TEST(ReportRegistry, EveryReportBuildsTheTablesItDeclares) {
  std::set<std::string_view> ids;
  for (const ReportSpec& spec : report_registry()) {
    EXPECT_TRUE(ids.insert(spec.id).second) << spec.id;
    EXPECT_FALSE(spec.about.empty()) << spec.id;
    ASSERT_NE(spec.build, nullptr) << spec.id;
    for (std::string_view table : spec.tables) {
      EXPECT_EQ(table.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string_view::npos)
          << spec.id << ": table id " << table;
    }
    for (std::string_view table : spec.optional_tables) {
      EXPECT_NE(std::find(spec.tables.begin(), spec.tables.end(), table), spec.tables.end())
          << spec.id << ": optional table " << table;
    }
  }
  for (bool cpu : {false, true}) {
    ReadResult data;
    data.cpu_only = cpu;
    // One allocation: the memory report writes its tables only for a profile with memory lines.
    std::vector<ReportTable> memory_tables;
    std::string memory_error;
    ASSERT_TRUE(build_report("memory", data, ReportOptions{}, memory_tables, memory_error));
    EXPECT_TRUE(memory_tables.empty());
    data.memory.push_back(MemoryEvent{});
    data.memory.back().bytes = 8;
    for (const ReportSpec& spec : report_registry()) {
      std::vector<ReportTable> tables;
      std::string error;
      ASSERT_TRUE(build_report(std::string(spec.id), data, ReportOptions{}, tables, error));
      // A profile without records (but one memory line): every declared table but an optional
      // one without rows. The builder itself makes every declared table, in order;
      // build_report leaves the empty optional ones out.
      const std::vector<ReportTable> built = spec.build(data, ReportOptions{});
      ASSERT_EQ(built.size(), spec.tables.size()) << spec.id;
      std::vector<std::string_view> declared;
      for (size_t i = 0; i < built.size(); ++i) {
        const bool optional = std::find(spec.optional_tables.begin(), spec.optional_tables.end(),
                                        spec.tables[i]) != spec.optional_tables.end();
        if (!optional || !built[i].rows.empty()) declared.push_back(spec.tables[i]);
      }
      ASSERT_EQ(tables.size(), declared.size()) << spec.id;
      for (size_t i = 0; i < tables.size(); ++i) {
        EXPECT_EQ(tables[i].report, spec.id);
        EXPECT_EQ(tables[i].id, declared[i]) << spec.id;
        EXPECT_EQ(tables[i].units.size(), tables[i].headers.size()) << spec.id;
        EXPECT_EQ(tables[i].numeric.size(), tables[i].headers.size()) << spec.id;
      }
    }
  }
  std::vector<ReportTable> none;
  std::string error;
  EXPECT_FALSE(build_report("no such report", ReadResult{}, ReportOptions{}, none, error));
  EXPECT_NE(error.find("reports: kernel, op,"), std::string::npos) << error;
}

TEST(ReportRegistry, ListsItselfAsJsonLines) {
  const std::string text = list_reports_text();
  size_t lines = 0;
  simdjson::dom::parser parser;
  for (const std::string& line : lines_of(text)) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
    std::string_view id;
    ASSERT_EQ(e["report"].get_string().get(id), simdjson::SUCCESS);
    EXPECT_EQ(id, report_registry()[lines].id);
    ++lines;
  }
  EXPECT_EQ(lines, report_registry().size());
  EXPECT_NE(text.find("{\"report\":\"iteration\",\"tables\":[\"steps\",\"steady_state\"],"
                      "\"optional_tables\":[],\"options\":[],\"one_profile\":true,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"report\":\"unmodelled\",\"tables\":[\"unmodelled\",\"uncosted\"],"
                      "\"optional_tables\":[\"unmodelled\",\"uncosted\"],"),
            std::string::npos)
      << text;
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
