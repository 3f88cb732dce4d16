#include "prof/device_peaks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace pyprof::prof {
namespace {

const PeakEntry& by_name(const std::string& cuda_name) {
  const PeakEntry* e = PeakTable::builtin().find_by_name(cuda_name);
  if (!e) throw std::runtime_error("no table entry for " + cuda_name);
  return *e;
}

TEST(PeakTable, BuiltinHasEveryRequiredGpu) {
  for (const char* name : {"Tesla V100-SXM2-16GB",
                           "Tesla V100-SXM2-32GB",
                           "Tesla V100-PCIE-16GB",
                           "Tesla V100-PCIE-32GB",
                           "Tesla T4",
                           "NVIDIA A10",
                           "NVIDIA A100-SXM4-40GB",
                           "NVIDIA A100-SXM4-80GB",
                           "NVIDIA A100-PCIE-40GB",
                           "NVIDIA A100 80GB PCIe",
                           "NVIDIA A30",
                           "NVIDIA L4",
                           "NVIDIA L40S",
                           "NVIDIA H100 80GB HBM3",
                           "NVIDIA H100 PCIe",
                           "NVIDIA H100 NVL",
                           "NVIDIA H200",
                           "NVIDIA B200",
                           "NVIDIA GB200",
                           "NVIDIA RTX A6000",
                           "NVIDIA RTX 6000 Ada Generation",
                           "NVIDIA GeForce RTX 3090",
                           "NVIDIA GeForce RTX 4090",
                           "NVIDIA GeForce RTX 5090"}) {
    const PeakEntry* e = PeakTable::builtin().find_by_name(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->name, name);  // exact, not a normalised neighbour
    EXPECT_GT(e->memory_bandwidth, 0) << name;
    EXPECT_GT(e->peak(Mode::kFp32), 0) << name;
  }
}

// Values typed from the reference by hand (../shared/reference/gpu-peaks.md §1, §2).
TEST(PeakTable, HandCheckedValues) {
  const PeakEntry& h100 = by_name("NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(h100.peak(Mode::kFp16Tc), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak(Mode::kBf16Tc), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak(Mode::kTf32Tc), 494.7e12);
  EXPECT_DOUBLE_EQ(h100.peak(Mode::kFp64Tc), 66.9e12);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth, 3350e9);
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_DOUBLE_EQ(h100.clock_hz, 1980e6);
  EXPECT_EQ(h100.compute_sources, "N2");

  EXPECT_DOUBLE_EQ(by_name("NVIDIA A100 80GB PCIe").memory_bandwidth, 1935e9);
  EXPECT_DOUBLE_EQ(by_name("NVIDIA A100-SXM4-80GB").memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(by_name("NVIDIA A100-PCIE-40GB").peak(Mode::kFp16Tc), 312e12);

  const PeakEntry& t4 = by_name("Tesla T4");
  EXPECT_DOUBLE_EQ(t4.peak(Mode::kFp64), 0.25e12);
  EXPECT_EQ(t4.marks[static_cast<size_t>(Mode::kFp64)], "d");
  EXPECT_EQ(t4.peak(Mode::kBf16Tc), 0);  // Turing has no BF16 Tensor Cores
  EXPECT_EQ(by_name("Tesla V100-SXM2-16GB").peak(Mode::kBf16Tc), 0);
  EXPECT_DOUBLE_EQ(by_name("Tesla V100-SXM2-16GB").peak(Mode::kFp16Tc), 125e12);

  // GeForce: FP32-accumulate (half) rates.
  const PeakEntry& rtx4090 = by_name("NVIDIA GeForce RTX 4090");
  EXPECT_DOUBLE_EQ(rtx4090.peak(Mode::kFp16Tc), 165.2e12);
  EXPECT_DOUBLE_EQ(rtx4090.peak(Mode::kFp8Tc), 330.3e12);
  EXPECT_DOUBLE_EQ(by_name("NVIDIA GeForce RTX 5090").peak(Mode::kFp4Tc), 1676e12);

  const PeakEntry& l4 = by_name("NVIDIA L4");
  EXPECT_DOUBLE_EQ(l4.peak(Mode::kTf32Tc), 60e12);
  EXPECT_EQ(l4.marks[static_cast<size_t>(Mode::kTf32Tc)], "h");
  EXPECT_NE(l4.describe_source(Mode::kTf32Tc).find("sparse figure halved"), std::string::npos);
  EXPECT_EQ(by_name("NVIDIA A30").marks[static_cast<size_t>(Mode::kFp32)], "du");
}

// ---- the reference document as an independent oracle -------------------------------------

std::string reference_path() {
  return std::string(PYPROF_SOURCE_DIR) + "/../shared/reference/gpu-peaks.md";
}

// The number a cell starts with, in the reference's units (marks and notes after it ignored);
// 0 for "—".
double leading_number(const std::string& cell) {
  size_t i = 0;
  while (i < cell.size() && cell[i] == ' ') ++i;
  size_t start = i;
  while (i < cell.size() && (std::isdigit(static_cast<unsigned char>(cell[i])) || cell[i] == '.'))
    ++i;
  if (i == start) return 0;
  return std::stod(cell.substr(start, i - start));
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  std::getline(in, cell, '|');  // before the first '|'
  while (std::getline(in, cell, '|')) cells.push_back(cell);
  if (!cells.empty() && cells.back().find_first_not_of(' ') == std::string::npos) cells.pop_back();
  return cells;
}

// Rows of the markdown table whose header line contains `header_word`, by first cell.
std::vector<std::vector<std::string>> table_after(const std::string& text,
                                                  const std::string& header_start) {
  std::vector<std::vector<std::string>> rows;
  std::stringstream in(text);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.rfind(header_start, 0) == 0;
      continue;
    }
    if (line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') break;
    rows.push_back(cells_of(line));
  }
  return rows;
}

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = cell.find('`', pos)) != std::string::npos) {
    size_t end = cell.find('`', pos + 1);
    out.push_back(cell.substr(pos + 1, end - pos - 1));
    pos = end + 1;
  }
  return out;
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

TEST(PeakTable, MatchesReferenceDocument) {
  std::ifstream file(reference_path());
  if (!file) GTEST_SKIP() << "no " << reference_path();
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();

  // §1: GPU -> its CUDA names (and SMs, MHz, GB/s per name).
  auto identity = table_after(text, "| GPU | CUDA device name |");
  ASSERT_GE(identity.size(), 21u);
  std::map<std::string, std::vector<std::string>> names_of;  // §1 GPU -> CUDA names
  int checked = 0;
  for (const auto& row : identity) {
    ASSERT_GE(row.size(), 7u);
    std::string gpu = trimmed(row[0]);
    std::vector<std::string> names = backticked(row[1]);
    ASSERT_FALSE(names.empty()) << gpu;
    names_of[gpu] = names;
    // "1555 / 1935": one bandwidth per name.
    std::vector<double> bandwidths;
    std::stringstream bw(row[5]);
    std::string part;
    while (std::getline(bw, part, '/')) bandwidths.push_back(leading_number(part));
    for (size_t i = 0; i < names.size(); ++i) {
      const PeakEntry& e = by_name(names[i]);
      EXPECT_EQ(e.sm_count, static_cast<int64_t>(leading_number(row[2]))) << names[i];
      EXPECT_DOUBLE_EQ(e.clock_hz, leading_number(row[3]) * 1e6) << names[i];
      double gbs = bandwidths.size() == names.size() ? bandwidths[i] : bandwidths[0];
      EXPECT_DOUBLE_EQ(e.memory_bandwidth, gbs * 1e9) << names[i];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);

  // §2: dense peaks; its GPU column names §1's rows ("A100 (all four)": every A100).
  auto peaks = table_after(text, "| GPU | FP64 | FP64 TC |");
  ASSERT_GE(peaks.size(), 19u);
  const Mode columns[] = {Mode::kFp64,   Mode::kFp64Tc, Mode::kFp32,   Mode::kTf32Tc,
                          Mode::kFp16Tc, Mode::kFp8Tc,  Mode::kInt8Tc, Mode::kFp4Tc};
  int rows = 0;
  for (const auto& row : peaks) {
    ASSERT_GE(row.size(), 10u);
    std::string gpu = trimmed(row[0]);
    std::vector<std::string> names;
    if (gpu.rfind("A100", 0) == 0) {
      for (const auto& [g, n] : names_of)
        if (g.rfind("A100", 0) == 0) names.insert(names.end(), n.begin(), n.end());
    } else {
      for (const auto& [g, n] : names_of) {
        // "B200 (HGX)ᶠ" names §1's "B200 (HGX)"; "RTX 3090ᶜ" names "RTX 3090"; "H200 SXM".
        if (gpu.rfind(g, 0) == 0) names = n;
      }
    }
    ASSERT_FALSE(names.empty()) << gpu;
    for (const std::string& name : names) {
      const PeakEntry& e = by_name(name);
      for (size_t c = 0; c < std::size(columns); ++c) {
        double expected = leading_number(row[1 + c]) * 1e12;
        EXPECT_DOUBLE_EQ(e.peak(columns[c]), expected) << name << " " << mode_name(columns[c]);
      }
      // BF16 = FP16 where the table says FP16/BF16; none on Volta and Turing (sm_7x).
      double bf16 = e.cc_major >= 8 ? leading_number(row[5]) * 1e12 : 0;
      EXPECT_DOUBLE_EQ(e.peak(Mode::kBf16Tc), bf16) << name;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 19);
}

// ---- matching ------------------------------------------------------------------------------

TEST(PeakTable, NameMatchingKeepsH100AndA100VariantsApart) {
  const PeakTable& t = PeakTable::builtin();
  EXPECT_EQ(t.find_by_name("NVIDIA H100 PCIe")->gpu, "H100 PCIe");
  EXPECT_EQ(t.find_by_name("NVIDIA H100 NVL")->gpu, "H100 NVL");
  EXPECT_EQ(t.find_by_name("NVIDIA H100 80GB HBM3")->gpu, "H100 SXM5");
  EXPECT_EQ(t.find_by_name("nvidia h100 pcie")->gpu, "H100 PCIe");  // normalised
  EXPECT_EQ(t.find_by_name("H100-PCIe")->gpu, "H100 PCIe");
  EXPECT_EQ(t.find_by_name("NVIDIA H100"), nullptr);  // which one? not guessed by name
  EXPECT_EQ(t.find_by_name("NVIDIA H800"), nullptr);
  EXPECT_EQ(t.find_by_name("NVIDIA A10G"), nullptr);  // not the A10
  EXPECT_EQ(t.find_by_name("NVIDIA GH200 120GB"), nullptr);
  EXPECT_EQ(t.find_by_name("NVIDIA A100 80GB PCIe")->gpu, "A100 80GB PCIe");
  EXPECT_EQ(t.find_by_name("NVIDIA A100-SXM4-80GB")->gpu, "A100 80GB SXM");
  EXPECT_EQ(t.find_by_name("NVIDIA A100-PCIE-40GB")->gpu, "A100 40GB PCIe");
  EXPECT_EQ(t.find_by_name("V100-SXM2-32GB")->gpu, "V100 SXM2 32GB");  // no "Tesla"
  EXPECT_EQ(t.find_by_name("NVIDIA V100-PCIE-16GB")->gpu, "V100 PCIe 16GB");
  EXPECT_EQ(t.find_by_name(""), nullptr);
}

TEST(PeakTable, ModelMatchNeedsOneAnswer) {
  const PeakTable& t = PeakTable::builtin();
  const double gib = double(1 << 30);
  // The Kineto A100 trace's board name: an A100 with 108 SMs and 39.4 GiB is a 40 GB A100
  // (SXM and PCIe 40 GB hold the same peaks and bandwidth).
  const PeakEntry* a100 = t.find_by_model("NVIDIA A100-PG509-200", 8, 0, 108, 42297524224.0);
  ASSERT_NE(a100, nullptr);
  EXPECT_DOUBLE_EQ(a100->memory_bandwidth, 1555e9);
  // Without the memory size the A100s differ in bandwidth: no answer.
  EXPECT_EQ(t.find_by_model("NVIDIA A100-PG509-200", 8, 0, 108, 0), nullptr);
  // "NVIDIA H100" with 132 SMs is SXM or NVL: only the memory size tells.
  EXPECT_EQ(t.find_by_model("NVIDIA H100", 9, 0, 132, 0), nullptr);
  EXPECT_EQ(t.find_by_model("NVIDIA H100", 9, 0, 132, 81106 * 1048576.0)->gpu, "H100 SXM5");
  EXPECT_EQ(t.find_by_model("NVIDIA H100", 9, 0, 132, 95830 * 1048576.0)->gpu, "H100 NVL");
  EXPECT_EQ(t.find_by_model("NVIDIA H100", 9, 0, 114, 0)->gpu, "H100 PCIe");
  // A different SM count or architecture is not that GPU.
  EXPECT_EQ(t.find_by_model("NVIDIA H100", 9, 0, 120, 80 * gib), nullptr);
  EXPECT_EQ(t.find_by_model("NVIDIA A100-PG509-200", 9, 0, 108, 0), nullptr);
}

TEST(DerivePeaks, FromPerSmRates) {
  // H100 SXM's FP32: 132 SMs x 256 FLOP/clk x 1.98 GHz = 66.9 TFLOP/s (reference §3).
  auto h = derive_peaks(9, 0, 132, 1.98e9, 3.35e12, false);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->kind, "derived");
  EXPECT_DOUBLE_EQ(h->peak(Mode::kFp32), 132 * 256 * 1.98e9);
  EXPECT_DOUBLE_EQ(h->peak(Mode::kFp16Tc), 132 * 4096 * 1.98e9);
  EXPECT_DOUBLE_EQ(h->peak(Mode::kFp64Tc), 132 * 256 * 1.98e9);
  EXPECT_DOUBLE_EQ(h->memory_bandwidth, 3.35e12);
  EXPECT_EQ(h->peak(Mode::kFp4Tc), 0);
  // RTX 4090 (GeForce sm_89): FP16 Tensor at half rate, 128 x 512 x 2.52 GHz = 165.2 TFLOP/s.
  auto g = derive_peaks(8, 9, 128, 2.52e9, 0, true);
  ASSERT_TRUE(g);
  EXPECT_NEAR(g->peak(Mode::kFp16Tc), 165.2e12, 0.1e12);
  EXPECT_NEAR(g->peak(Mode::kFp8Tc), 330.3e12, 0.1e12);
  EXPECT_DOUBLE_EQ(g->peak(Mode::kInt8Tc), 128 * 2048 * 2.52e9);  // not halved
  // The pro part of the same architecture: full rate.
  EXPECT_DOUBLE_EQ(derive_peaks(8, 9, 128, 2.52e9, 0, false)->peak(Mode::kFp16Tc),
                   2 * g->peak(Mode::kFp16Tc));
  // Blackwell's Tensor rates are unconfirmed.
  auto b = derive_peaks(10, 0, 148, 1.965e9, 0, false);
  EXPECT_EQ(b->marks[static_cast<size_t>(Mode::kFp16Tc)], "du");
  EXPECT_EQ(b->marks[static_cast<size_t>(Mode::kFp32)], "d");
  EXPECT_FALSE(derive_peaks(8, 7, 16, 1.3e9, 0, false));  // Orin: not in the rate table
  EXPECT_FALSE(derive_peaks(9, 0, 132, 0, 0, false));     // no clock
}

ReadResult gpu_profile(std::vector<DevicePeak> devices) {
  ReadResult r;
  r.devices = std::move(devices);
  return r;
}

DevicePeak header_device(int64_t id, std::string name, int major, int minor, int64_t sms,
                         int64_t clock_hz, double bandwidth = 0) {
  DevicePeak d;
  d.id = id;
  d.name = std::move(name);
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = sms;
  d.clock_hz = clock_hz;
  d.memory_bandwidth = bandwidth;
  return d;
}

TEST(ResolveDeviceRoofs, TableDerivedAndUnknown) {
  ReadResult data = gpu_profile({
      header_device(0, "NVIDIA H100 PCIe", 9, 0, 114, 1755000000, 2.0e12),
      header_device(1, "Mystery GPU", 9, 0, 100, 1500000000, 1e12),
      header_device(2, "Unknown Thing", 0, 0, 0, 0),
      header_device(3, "NVIDIA A100-SXM4-40GB", 8, 0, 108, 1410000000, 1.2e12),
  });
  std::vector<DeviceRoofs> d = resolve_device_roofs(data, nullptr);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].roof->kind, "datasheet");
  EXPECT_DOUBLE_EQ(d[0].roof->peak(Mode::kFp32), 51e12);
  EXPECT_EQ(d[1].roof->kind, "derived");
  EXPECT_DOUBLE_EQ(d[1].roof->peak(Mode::kFp32), 100 * 256 * 1.5e9);
  EXPECT_DOUBLE_EQ(d[1].roof->memory_bandwidth, 1e12);
  EXPECT_FALSE(d[2].roof);
  EXPECT_EQ(d[2].reason,
            "unknown GPU 'Unknown Thing': no datasheet entry and no compute capability/clock "
            "to derive peaks");
  // The header's bandwidth differs from the datasheet's: the roof uses the datasheet's, the
  // source shows both.
  EXPECT_DOUBLE_EQ(d[3].roof->memory_bandwidth, 1555e9);
  EXPECT_DOUBLE_EQ(d[3].header_bandwidth, 1.2e12);
  EXPECT_NE(d[3].roof->describe_source(Mode::kFp32).find("1.2e+12"), std::string::npos);
}

TEST(ResolveDeviceRoofs, CpuNeedsAPeaksEntry) {
  ReadResult data;
  data.cpu_only = true;
  std::vector<DeviceRoofs> d = resolve_device_roofs(data, nullptr);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].device, "cpu");
  EXPECT_FALSE(d[0].roof);
  EXPECT_NE(d[0].reason.find("--peaks"), std::string::npos);

  PeaksFile file;
  std::string error;
  ASSERT_TRUE(parse_peaks_json(
      R"({"pyprof_peaks":1,"devices":[{"name":"cpu","kind":"measured","source":"stream",
          "memory_bandwidth":5e10,"flops":{"fp32":1e12}}]})",
      "p.json", file, error))
      << error;
  d = resolve_device_roofs(data, &file);
  ASSERT_TRUE(d[0].roof);  // measured roofs are the CPU's only roofs
  EXPECT_EQ(d[0].roof->kind, "measured");
  EXPECT_DOUBLE_EQ(d[0].roof->peak(Mode::kFp32), 1e12);
}

TEST(ResolveDeviceRoofs, PeaksFileOverridesAndAddsMeasured) {
  PeaksFile file;
  std::string error;
  ASSERT_TRUE(parse_peaks_json(R"({"pyprof_peaks": 1, "devices": [
      {"name": "NVIDIA H100 80GB HBM3", "kind": "datasheet", "source": "my sheet",
       "memory_bandwidth": 3e12, "flops": {"fp32": 60e12}},
      {"name": "*", "kind": "measured", "source": "pyprof peak 2025-01-01",
       "memory_bandwidth": 2.9e12, "flops": {"bf16_tc": 700e12, "fp16": 100e12}}]})",
                               "x.json", file, error))
      << error;
  ReadResult data = gpu_profile({header_device(0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 1980000000),
                                 header_device(1, "NVIDIA L4", 8, 9, 58, 2040000000)});
  std::vector<DeviceRoofs> d = resolve_device_roofs(data, &file);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].roof->kind, "override");
  EXPECT_DOUBLE_EQ(d[0].roof->peak(Mode::kFp32), 60e12);
  EXPECT_EQ(d[0].roof->peak(Mode::kFp16Tc), 0);  // the override replaces the whole entry
  EXPECT_NE(d[0].roof->source.find("my sheet"), std::string::npos);
  EXPECT_EQ(d[0].measured->kind, "measured");
  EXPECT_EQ(d[1].roof->kind, "datasheet");  // "*" measured does not replace the datasheet
  EXPECT_DOUBLE_EQ(d[1].measured->peak(Mode::kFp16), 100e12);
}

TEST(PeaksFile, BadFilesNameTheProblem) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"not json", "f.json: not a JSON document"},
      {"[1]", "f.json: not a peaks file (the top level is not a JSON object)"},
      {R"({"devices":[]})", "f.json: not a peaks file (no \"pyprof_peaks\": 1)"},
      {R"({"pyprof_peaks":2,"devices":[]})",
       "f.json: peaks file version 2 (this prof reads version 1)"},
      {R"({"pyprof_peaks":1})", "f.json: \"devices\" is missing or not an array"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"guess"}]})",
       "f.json: devices[0] (\"X\"): \"kind\" must be \"datasheet\" or \"measured\""},
      {R"({"pyprof_peaks":1,"devices":[{"kind":"measured"}]})",
       "f.json: devices[0]: no \"name\" (a CUDA device name, \"*\" or \"cpu\")"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","flops":{"fp32":-1}}]})",
       "f.json: devices[0] (\"X\"): flops.fp32 is -1, not a positive number"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","flops":{"fp32":0}}]})",
       "f.json: devices[0] (\"X\"): flops.fp32 is 0, not a positive number"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","flops":{"fp32":"1"}}]})",
       "f.json: devices[0] (\"X\"): flops.fp32 is not a number"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","flops":{"fp33":1}}]})",
       "f.json: devices[0] (\"X\"): unknown mode \"fp33\" in flops (modes: fp64, fp64_tc, fp32, "
       "tf32_tc, fp16_tc, bf16_tc, fp8_tc, int8_tc, fp4_tc, fp16, bf16)"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","memory_bandwith":1}]})",
       "f.json: devices[0] (\"X\"): unknown key \"memory_bandwith\""},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured","memory_bandwidth":-5}]})",
       "f.json: devices[0] (\"X\"): memory_bandwidth is -5, not a positive number"},
      {R"({"pyprof_peaks":1,"devices":[{"name":"X","kind":"measured"},{"name":"X","kind":"measured"}]})",
       "f.json: devices[1] (\"X\"): a second measured entry for this name"},
      {R"({"pyprof_peaks":1,"devices":[NaN]})", "f.json: not a JSON document"},
  };
  for (const Case& c : cases) {
    PeaksFile file;
    std::string error;
    EXPECT_FALSE(parse_peaks_json(c.text, "f.json", file, error)) << c.text;
    EXPECT_EQ(error.rfind(c.message, 0), 0u) << c.text << "\n  got: " << error;
  }
  PeaksFile file;
  std::string error;
  EXPECT_FALSE(read_peaks_file("/nonexistent/peaks.json", file, error));
  EXPECT_NE(error.find("cannot open peaks file /nonexistent/peaks.json"), std::string::npos);
}

}  // namespace
}  // namespace pyprof::prof
