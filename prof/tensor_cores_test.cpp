#include "prof/tensor_cores.h"

#include <cxxabi.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pyprof::prof {
namespace {

const TensorCoreRules& builtin() { return TensorCoreRules::builtin(); }

int tc(std::string_view long_name, std::string_view short_name) {
  return builtin().uses_tensor_cores(long_name, short_name);
}
int tc(std::string_view name) { return tc(name, name); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A trace file from tests/data (copies kept in the repository), else from ../shared/traces next
// to the checkout; "" when neither has it.
std::string find_data(const std::string& name) {
  for (const char* dir :
       {"/tests/data/", "/../shared/traces/real/", "/../shared/traces/pyprof-legacy/"}) {
    const std::string path = std::string(PYPROF_SOURCE_DIR) + dir + name;
    if (std::filesystem::is_regular_file(path)) return path;
  }
  return "";
}

// The short name the way nsys cuts a demangled name: no `void `, no template arguments or
// parameters, no namespaces.
std::string short_of(std::string_view name) {
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  name = name.substr(0, name.find_first_of("<("));
  const size_t colon = name.rfind("::");
  if (colon != std::string_view::npos) name.remove_prefix(colon + 2);
  return std::string(name);
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (out == nullptr) return mangled;
  std::string s(out);
  std::free(out);
  return s;
}

// One row per field; handles quoted fields with "" escapes (DLProf's and PyProf's CSVs).
std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back().push_back(c);
    }
  }
  return fields;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value of 'key' in one line of a PyProf .dict file (a Python dict literal).
std::string py_str(std::string_view line, std::string_view key) {
  std::string needle(1, '\'');
  needle.append(key).append("': ");
  size_t i = line.find(needle);
  if (i == std::string_view::npos) return "";
  i += needle.size();
  if (i >= line.size() || (line[i] != '\'' && line[i] != '"')) return "";
  const char quote = line[i++];
  std::string out;
  for (; i < line.size() && line[i] != quote; ++i) {
    if (line[i] == '\\' && i + 1 < line.size()) ++i;
    out.push_back(line[i]);
  }
  return out;
}

// Runs a query over a read-only SQLite file, calling `row` with the text columns of each row.
template <typename F>
void sqlite_rows(const std::string& path, const char* sql, F row) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << path;
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK)
      << path << ": " << sqlite3_errmsg(db);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::vector<std::string> cols;
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const unsigned char* v = sqlite3_column_text(stmt, c);
      cols.emplace_back(v == nullptr ? "" : reinterpret_cast<const char*>(v));
    }
    row(cols);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// ---------------------------------------------------------------------------------------------
// Every kernel name in the real (and PyProf-era synthetic) traces.

struct Corpus {
  // (long name, short name) -> files it occurs in
  std::map<std::pair<std::string, std::string>, std::set<std::string>> names;
  std::set<std::string> files;  // files read
  void add(const std::string& file, std::string long_name, std::string short_name) {
    if (short_name.empty()) short_name = short_of(long_name);
    names[{std::move(long_name), std::move(short_name)}].insert(file);
  }
};

enum class Reader { kNsys, kNvprof, kPyprofDict, kKineto, kPyprof2Readme };

const std::vector<std::pair<std::string, Reader>>& trace_files() {
  static const std::vector<std::pair<std::string, Reader>> files = {
      {"nsys-2020.3.4_beast-stream_report2.sqlite", Reader::kNsys},
      {"nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite", Reader::kNsys},
      {"nsys-2024.6.2_nvfuser-nvtx_report1.sqlite", Reader::kNsys},
      {"synthetic_mlp.nsys.sqlite", Reader::kNsys},
      {"synthetic_mlp_opid.nsys.sqlite", Reader::kNsys},
      {"synthetic_mlp_reordered.nsys.sqlite", Reader::kNsys},
      {"synthetic_mlp_x1000.nsys.sqlite", Reader::kNsys},
      {"nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql", Reader::kNvprof},
      {"synthetic_mlp.nvprof.sql", Reader::kNvprof},
      {"synthetic_mlp_x1000.nvprof.sql", Reader::kNvprof},
      {"nvprof-cuda10.1_pytorch-lm_apex-pyprof.parse-output.dict", Reader::kPyprofDict},
      {"synthetic_mlp.nsys.pyprof.dict", Reader::kPyprofDict},
      {"synthetic_mlp.nvprof.pyprof.dict", Reader::kPyprofDict},
      {"ops_coverage.dict", Reader::kPyprofDict},
      {"test_pyprof_data.dict", Reader::kPyprofDict},
      {"kineto_hta-alexnet-a100.json.gz", Reader::kKineto},
      {"kineto_hta-mi250-rocm6.2-minitoy.json.gz", Reader::kKineto},
      {"kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz", Reader::kKineto},
      {"kineto_tracelens-mi300x-sglang-qwen3-8b-prefilldecode.json.gz", Reader::kKineto},
      {"kineto_tracelens-mi300x-vllm-piecewise-graph-capture.json.gz", Reader::kKineto},
      {"kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz", Reader::kKineto},
      {"pyprof2_readme_sample_output.txt", Reader::kPyprof2Readme},
  };
  return files;
}

void read_trace(Corpus& corpus, const std::string& file, const std::string& path, Reader reader) {
  switch (reader) {
    case Reader::kNsys:
      sqlite_rows(path,
                  "SELECT DISTINCT l.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                  "JOIN StringIds l ON l.id = k.demangledName "
                  "LEFT JOIN StringIds s ON s.id = k.shortName",
                  [&](const std::vector<std::string>& c) { corpus.add(file, c[0], c[1]); });
      break;
    case Reader::kNvprof:  // names are mangled string ids
      sqlite_rows(path,
                  "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL k "
                  "JOIN StringTable s ON s._id_ = k.name",
                  [&](const std::vector<std::string>& c) { corpus.add(file, demangle(c[0]), ""); });
      break;
    case Reader::kPyprofDict:
      for (const std::string& line : lines_of(read_file(path))) {
        if (line.empty()) continue;
        corpus.add(file, py_str(line, "kLongName"), py_str(line, "kShortName"));
      }
      break;
    case Reader::kKineto: {
      const std::string command = "gzip -dc '" + path + "' 2>/dev/null";
      FILE* pipe = popen(command.c_str(), "r");
      ASSERT_NE(pipe, nullptr);
      std::string json;
      char buffer[1 << 16];
      for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) json.append(buffer, n);
      if (pclose(pipe) != 0 || json.empty()) {
        std::cout << "  (gzip could not read " << path << "; skipped)\n";
        return;
      }
      simdjson::dom::parser parser;
      simdjson::dom::element doc = parser.parse(json);
      for (simdjson::dom::element event : doc["traceEvents"].get_array()) {
        std::string_view cat;
        std::string_view name;
        if (event["cat"].get(cat) != simdjson::SUCCESS || cat != "kernel") continue;
        if (event["name"].get(name) != simdjson::SUCCESS) continue;
        corpus.add(file, std::string(name), "");
      }
      break;
    }
    case Reader::kPyprof2Readme: {  // "Kernel Op Sil(ns) TC ..." columns, names cut to 19 chars
      const std::vector<std::string> lines = lines_of(read_file(path));
      for (size_t i = 1; i < lines.size(); ++i) {
        std::istringstream fields(lines[i]);
        std::string kernel;
        if (fields >> kernel) corpus.add(file, kernel, kernel);
      }
      break;
    }
  }
  corpus.files.insert(file);
}

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus out;
    for (const auto& [file, reader] : trace_files()) {
      const std::string path = find_data(file);
      if (!path.empty()) read_trace(out, file, path, reader);
    }
    return out;
  }();
  return c;
}

// The hand-checked list of every real kernel name that used Tensor Cores. Everything else in the
// traces must come out 0.
struct ExpectedTc {
  const char* long_name;
  const char* file;  // where it occurs (checked when the file was read)
  const char* why;
  // > 0: `long_name` is a prefix that stands for this many distinct names of `file` (a family
  // of long generated names: Tensile, composable_kernel), every one of them tc=1.
  int prefix_names = 0;
};
const std::vector<ExpectedTc>& expected_tc_kernels() {
  static const std::vector<ExpectedTc> v = {
      // Volta cuBLAS HGEMM, HMMA m8n8k4 with fp16 accumulate (h884).
      {"volta_h884gemm_64x64_ldg8_nn", "synthetic_mlp.nsys.sqlite", "Volta HMMA.884"},
      {"volta_h884gemm_64x64_ldg8_nt", "synthetic_mlp.nsys.sqlite", "Volta HMMA.884"},
      {"volta_h884gemm_64x64_ldg8_tn", "synthetic_mlp.nsys.sqlite", "Volta HMMA.884"},
      {"volta_h884gemm_128x128_ldg8_nn", "ops_coverage.dict", "Volta HMMA.884"},
      {"volta_h884gemm_128x64_ldg8_tn", "ops_coverage.dict", "Volta HMMA.884"},
      // Volta cuDNN convolution, HMMA m8n8k4 with fp32 accumulate (s884).
      {"volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", "ops_coverage.dict",
       "Volta HMMA.884, fp32 accumulate"},
      // The pyprof2 README cuts names to 19 characters; s884 survives the cut.
      {"volta_fp16_s884cudn", "pyprof2_readme_sample_output.txt", "Volta HMMA.884"},
      // Ampere cuBLAS HGEMM, HMMA m16n8k16.
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "ops_coverage.dict",
       "Ampere HMMA.16816"},
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "ops_coverage.dict",
       "Ampere HMMA.16816"},
      {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nt", "ops_coverage.dict",
       "Ampere HMMA.16816"},
      // cuDNN xmma implicit-GEMM convolutions with Tensor Core types (fp16; TF32 with its
      // tensor16x8x8 instruction shape, from a real A100 Kineto trace).
      {"sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32",
       "ops_coverage.dict", "xmma, f16 math"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_"
       "stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel_cudnn",
       "kineto_hta-alexnet-a100.json.gz", "xmma, TF32 HMMA m16n8k8"},
      // cuBLAS Hopper GEMM (H200 nvFuser benchmark): nvjet.
      {"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite",
       "cuBLAS nvjet (Hopper)"},
      // AMD matrix cores. Tensile/hipBLASLt GEMMs with a MatrixInstruction (MI16x16x1 on MI250,
      // fp32 MFMA; bf16 on MI300X).
      {"Cijk_", "kineto_hta-mi250-rocm6.2-minitoy.json.gz", "Tensile MFMA (MI250)", 2},
      {"Cijk_", "kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz",
       "Tensile/hipBLASLt MFMA (MI300X)", 7},
      {"Cijk_", "kineto_tracelens-mi300x-sglang-qwen3-8b-prefilldecode.json.gz",
       "hipBLASLt MFMA (MI300X)", 4},
      {"Cijk_", "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz",
       "hipBLASLt MFMA (MI300X)", 4},
      // composable_kernel XDLOPS convolutions (mangled names) and MIOpen's XDLOPS igemm solvers.
      {"_ZN2ck16tensor_operation6device",
       "kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz", "CK xdl/xdlops", 5},
      {"igemm_", "kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz",
       "MIOpen igemm gtcx3 (XDLOPS)", 12},
      // ck_tile FMHA prefill (SGLang on MI300X).
      {"_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernel",
       "kineto_tracelens-mi300x-sglang-qwen3-8b-prefilldecode.json.gz", "ck_tile FMHA", 1},
      // Triton GEMMs and attention of vLLM's gpt-oss MoE on MI300X.
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1",
       "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz", "triton_kernels matmul_ogs"},
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu",
       "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz", "triton_kernels matmul_ogs"},
      {"kernel_unified_attention_2d", "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz",
       "vLLM Triton unified attention (tl.dot)"},
  };
  return v;
}

TEST(TensorCoresRealTraces, EveryKernelNameIsClassifiedAsHandChecked) {
  const Corpus& c = corpus();
  if (c.files.empty()) GTEST_SKIP() << "no trace files in tests/data or ../shared/traces";
  std::map<std::string, const ExpectedTc*> expected;
  for (const ExpectedTc& e : expected_tc_kernels()) {
    if (e.prefix_names == 0) expected[e.long_name] = &e;
  }
  // A name a prefix entry stands for: it starts with the prefix and occurs in the entry's file.
  auto prefix_entry_of = [](const std::string& name, const std::set<std::string>& files) {
    for (const ExpectedTc& e : expected_tc_kernels()) {
      if (e.prefix_names > 0 && name.starts_with(e.long_name) && files.count(e.file)) return &e;
    }
    return static_cast<const ExpectedTc*>(nullptr);
  };
  std::map<const ExpectedTc*, int> prefix_seen;

  std::set<std::string> seen_tc;
  std::map<std::string, int> per_file;
  for (const auto& [names, files] : c.names) {
    const auto& [long_name, short_name] = names;
    for (const std::string& f : files) ++per_file[f];
    const TensorCoreMatch m = builtin().match(long_name, short_name);
    ASSERT_TRUE(m.tc == 0 || m.tc == 1);
    const ExpectedTc* family = prefix_entry_of(long_name, files);
    if (family != nullptr && m.tc == 1) ++prefix_seen[family];
    const bool listed = expected.count(long_name) != 0 || family != nullptr;
    EXPECT_EQ(m.tc, listed ? 1 : 0) << long_name << " (short " << short_name << ", in "
                                    << *files.begin() << "): " << TensorCoreRules::explain(m);
    if (m.tc == 1) seen_tc.insert(long_name);
  }
  // Each hand-checked TC kernel was seen, where its file was read.
  for (const ExpectedTc& e : expected_tc_kernels()) {
    if (c.files.count(e.file) == 0) continue;
    if (e.prefix_names > 0) {
      EXPECT_EQ(prefix_seen[&e], e.prefix_names)
          << e.long_name << "... (" << e.why << ") in " << e.file;
      continue;
    }
    EXPECT_EQ(seen_tc.count(e.long_name), 1u)
        << e.long_name << " (" << e.why << ") not in " << e.file;
  }
  std::cout << "  " << c.names.size() << " distinct kernel names in " << c.files.size()
            << " files, " << seen_tc.size() << " with tc=1\n";
  for (const auto& [file, n] : per_file) std::cout << "    " << file << ": " << n << "\n";
}

// Real CUDA-core kernels that a rule names explicitly (so --explain has a reason), and the ones
// that just carry no evidence.
TEST(TensorCoresRealTraces, CudaCoreKernelsAndTheirReasons) {
  struct Case {
    const char* name;
    const char* rule;  // expected deciding rule ("" = none: no evidence)
  };
  const Case cases[] = {
      // DLProf LeNet (RTX 2070 SUPER, fp32): cuDNN SIMT convolutions and cuBLAS SGEMM.
      {"volta_sgemm_32x32_sliced1x4_tn", "no sgemm"},
      {"volta_scudnn_128x64_relu_interior_nn_v1", "no scudnn"},
      {"volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "no scudnn"},
      {"volta_cgemm_32x32_tn", "no cgemm"},
      {"volta_gcgemm_32x32_nt", "no cgemm"},
      {"void cudnn::detail::implicit_convolve_sgemm<float, float, (int)128, (int)5, (int)5, "
       "(int)3, (int)3, (int)3, (int)1, (bool)1, (bool)0, (bool)1>(int, int, int, const T1 *, "
       "int, T2 *, T1 *, kernel_conv_params, int, float, float, int, T2 *, T2 *, int, int)",
       "no sgemm"},
      {"void gemmSN_NN_kernel<float, (int)128, (int)2, (int)4, (int)8, (int)3, (int)4, "
       "cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<float>>("
       "cublasGemmSmallNParams<T8, T9, T1>)",
       "no gemmSN_"},
      {"void splitKreduce_kernel<float, float, float>(cublasSplitKParams<T3>, const T1 *, "
       "const T2 *, T2 *, const T3 *, const T3 *)",
       "no splitKreduce_kernel"},
      // A100 Kineto trace (fp32 AlexNet without TF32 convolutions in these layers).
      {"ampere_sgemm_32x32_sliced1x4_tn", "no sgemm"},
      {"cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "no scudnn"},
      {"ampere_gcgemm_64x64_nt", "no cgemm"},
      {"void cask_cudnn::computeOffsetsKernel<false, false>(cask_cudnn::ComputeOffsetsParams)",
       "no computeOffsetsKernel"},
      {"void epilogue::impl::globalKernel<float, float, float, true, true>(int, int, long, "
       "float*, cublasLtEpilogue_t, int, float*, long, void*, long, long, long, float*, long, "
       "int*)",
       ""},
      // H200 nvFuser trace: a generated kernel with TMA tensor maps and half inputs, probably a
      // Hopper matmul, but its name gives no evidence (a documented blind spot).
      {"<unnamed>::nvfuser_none_f0_c0_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)3, (int)3>, "
       "<unnamed>::Tensor<<unnamed>::__half, (int)3, (int)3>, <unnamed>::TensorMap, "
       "<unnamed>::TensorMap, <unnamed>::TensorMap, <unnamed>::Tensor<<unnamed>::__half, (int)2, "
       "(int)2>)",
       ""},
      // ops_coverage.dict: PyProf-era records keep only "cutlass::Kernel" (template cut away).
      {"cutlass::Kernel", ""},
      {"__omp_offloading_31_18a80bc__Z_1...", ""},
  };
  for (const Case& c : cases) {
    const TensorCoreMatch m = builtin().match(c.name, short_of(c.name));
    EXPECT_EQ(m.tc, 0) << c.name;
    const std::string rule =
        m.rule == nullptr ? "" : std::string(m.rule->keyword()) + " " + m.rule->pattern;
    EXPECT_EQ(rule, c.rule) << c.name << ": " << TensorCoreRules::explain(m);
  }
}

// ---------------------------------------------------------------------------------------------
// (2) DLProf's "Uses TC" column, for every kernel of its LeNet report.

TEST(TensorCoresOracles, AgreesWithDlprofUsesTc) {
  const std::string csv_path =
      find_data("nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.dlprof_kernel.csv");
  const std::string db_path = find_data("nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite");
  if (csv_path.empty() || db_path.empty()) GTEST_SKIP() << "DLProf LeNet files not found";

  // DLProf names kernels by their nsys short name; check every full name behind each.
  std::map<std::string, std::set<std::string>> long_names;
  sqlite_rows(db_path,
              "SELECT DISTINCT s.value, l.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
              "JOIN StringIds s ON s.id = k.shortName JOIN StringIds l ON l.id = k.demangledName",
              [&](const std::vector<std::string>& c) { long_names[c[0]].insert(c[1]); });

  const std::vector<std::string> lines = lines_of(read_file(csv_path));
  ASSERT_GE(lines.size(), 3u);
  const std::vector<std::string> header = csv_fields(lines[1]);  // lines[0] is "Kernel Report"
  size_t name_col = header.size();
  size_t tc_col = header.size();
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "Kernel Name") name_col = i;
    if (header[i] == "Uses TC") tc_col = i;
  }
  ASSERT_LT(name_col, header.size());
  ASSERT_LT(tc_col, header.size());
  int rows = 0;
  int agree = 0;
  for (size_t i = 2; i < lines.size(); ++i) {
    const std::vector<std::string> f = csv_fields(lines[i]);
    if (f.size() <= std::max(name_col, tc_col)) continue;
    ++rows;
    const int dlprof = f[tc_col] == "yes" ? 1 : 0;
    ASSERT_TRUE(f[tc_col] == "yes" || f[tc_col] == "no") << lines[i];
    const auto it = long_names.find(f[name_col]);
    ASSERT_NE(it, long_names.end()) << f[name_col] << " not in the DLProf database";
    bool all = true;
    for (const std::string& long_name : it->second) {
      const TensorCoreMatch m = builtin().match(long_name, f[name_col]);
      EXPECT_EQ(m.tc, dlprof) << long_name << ": " << TensorCoreRules::explain(m);
      all = all && m.tc == dlprof;
    }
    agree += all ? 1 : 0;
  }
  EXPECT_EQ(rows, 49);
  EXPECT_EQ(agree, rows);
  std::cout << "  DLProf LeNet: " << agree << "/" << rows << " kernel rows agree on Uses TC\n";
}

// ---------------------------------------------------------------------------------------------
// (3) Legacy PyProf's TC column. PyProf matched its whitelist against the SHORT name only, and
// only asked for some op classes: "1"/"0" are its verdicts, "-" means the op class does not ask
// (or, for convolutions, that no whitelist entry matched), "na" that the kernel had no marker.

// PyProf's whitelist (NVIDIA/PyProf prof/tc.py, commit 7239fb6), as a rule table.
const TensorCoreRules& pyprof_whitelist() {
  static const TensorCoreRules rules = [] {
    std::vector<std::string> errors;
    auto r = TensorCoreRules::parse(
        "yes h884\nyes s884\nyes h1688\nyes s1688\nyes hmma\nyes i8816\nyes 16816\n"
        "yes dgrad_1x1_stride_2x2\nyes first_layer_wgrad_kernel\nyes conv1x1\nyes conv2d_c1_k1\n"
        "yes direct_group\nyes xmma_implicit_gemm\nyes xmma_sparse_conv\n"
        "yes xmma_warp_specialized_implicit_gemm\nyes xmma_gemm\nyes xmma_sparse_gemm\n"
        "yes c1688\n",
        errors);
    EXPECT_TRUE(errors.empty());
    return std::move(*r);
  }();
  return rules;
}

// Rows where PyProf's column and ours differ, and why. Everywhere else they agree.
struct PyprofDisagreement {
  const char* kernel;
  const char* pyprof;
  int ours;
  const char* why;
};
const PyprofDisagreement kPyprofDisagreements[] = {
    // ops_coverage row 3 (conv2d, fp16, A100): PyProf's Conv class answers 1 only on a whitelist
    // hit, else "-"; its list has `xmma_implicit_gemm` but cuDNN 8 names the kernel
    // `xmma_fprop_implicit_gemm` (the same miss as pytorch/kineto#1041).
    {"sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32", "-", 1,
     "xmma_fprop is a Tensor Core convolution (f16 math)"},
};

// Checks one PyProf row; returns whether it was a documented disagreement.
bool check_pyprof_row(const std::string& long_name, const std::string& short_name,
                      const std::string& pyprof_tc, const std::string& where) {
  const TensorCoreMatch m = builtin().match(long_name, short_name);
  for (const PyprofDisagreement& d : kPyprofDisagreements) {
    if (short_name == d.kernel) {
      EXPECT_EQ(pyprof_tc, d.pyprof) << where;
      EXPECT_EQ(m.tc, d.ours) << where << ": " << d.why;
      return true;
    }
  }
  if (pyprof_tc == "1" || pyprof_tc == "0") {
    EXPECT_EQ(m.tc, pyprof_tc == "1" ? 1 : 0)
        << where << " " << long_name << ": " << TensorCoreRules::explain(m);
  } else {
    // PyProf did not judge ("-", "na"); none of these kernels has Tensor Core evidence.
    EXPECT_EQ(m.tc, 0) << where << " " << long_name << ": " << TensorCoreRules::explain(m);
    EXPECT_TRUE(pyprof_tc == "-" || pyprof_tc == "na") << where << ": TC=" << pyprof_tc;
  }
  // Wherever PyProf gave a verdict, its whitelist on the short name reproduces it.
  if (pyprof_tc == "1" || pyprof_tc == "0") {
    EXPECT_EQ(pyprof_whitelist().uses_tensor_cores(short_name, short_name),
              pyprof_tc == "1" ? 1 : 0)
        << where;
  }
  return false;
}

TEST(TensorCoresOracles, AgreesWithPyprofWherePyprofWasRight) {
  int checked = 0;
  int verdicts = 0;
  int disagreements = 0;
  // ops_coverage: 55 synthetic records with real Volta/Ampere kernel names (.dict) and PyProf's
  // prof output for them (.csv, same order). The CSV writes spaces as '_', so names come from
  // the .dict.
  const std::string dict = find_data("ops_coverage.dict");
  const std::string csv = find_data("ops_coverage.pyprof.csv");
  if (!dict.empty() && !csv.empty()) {
    const std::vector<std::string> records = lines_of(read_file(dict));
    const std::vector<std::string> rows = lines_of(read_file(csv));
    ASSERT_EQ(rows.size(), records.size() + 1);
    const std::vector<std::string> header = csv_fields(rows[0]);
    ASSERT_EQ(header[7], "TC");
    for (size_t i = 0; i < records.size(); ++i) {
      const std::vector<std::string> f = csv_fields(rows[i + 1]);
      const std::string where = "ops_coverage row " + f[0] + " (" + f[4] + ")";
      disagreements += check_pyprof_row(py_str(records[i], "kLongName"),
                                        py_str(records[i], "kShortName"), f[7], where);
      verdicts += f[7] == "1" || f[7] == "0";
      ++checked;
    }
  }
  // apex.pyprof prof on a real V100 nvprof run (fp32 word LM): 160 kernels, short names.
  const std::string lm = find_data("nvprof-cuda10.1_pytorch-lm_apex-pyprof.prof-output.csv");
  if (!lm.empty()) {
    const std::vector<std::string> rows = lines_of(read_file(lm));
    ASSERT_EQ(csv_fields(rows[0])[5], "TC");
    for (size_t i = 1; i < rows.size(); ++i) {
      const std::vector<std::string> f = csv_fields(rows[i]);
      disagreements += check_pyprof_row(f[0], f[0], f[5], "word-LM row " + std::to_string(i));
      verdicts += f[5] == "1" || f[5] == "0";
      ++checked;
    }
  }
  // pyprof2 README sample (Volta fp16 conv): "Kernel Op Sil(ns) TC ..." with cut names.
  const std::string readme = find_data("pyprof2_readme_sample_output.txt");
  if (!readme.empty()) {
    const std::vector<std::string> rows = lines_of(read_file(readme));
    for (size_t i = 1; i < rows.size(); ++i) {
      std::istringstream fields(rows[i]);
      std::string kernel, op, sil, tc_column;
      if (!(fields >> kernel >> op >> sil >> tc_column)) continue;
      disagreements += check_pyprof_row(kernel, kernel, tc_column, "pyprof2 README " + kernel);
      verdicts += tc_column == "1" || tc_column == "0";
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "PyProf outputs are only in ../shared/traces";
  std::cout << "  PyProf: " << checked << " rows (" << verdicts << " with a 1/0 verdict), "
            << disagreements << " documented disagreement(s)\n";
}

// Modern names that PyProf's whitelist (on the short name, as PyProf applied it) gets wrong.
TEST(TensorCoresOracles, PyprofWhitelistMissesModernNames) {
  struct Case {
    const char* long_name;
    int pyprof;  // the whitelist's verdict on the short name
    int ours;
  };
  const Case cases[] = {
      // Template argument cut away by the short name (legacy-pyprof.md §3).
      {"void cutlass::Kernel<cutlass_80_tensorop_s16816gemm_relu_f16_64x64_32x10_nn_align8>("
       "T1::Params)",
       0, 1},
      // Not in the 2020 list: nvjet (cuBLAS Hopper), xmma_fprop (kineto#1041), wgmma kernels,
      // flash attention.
      {"nvjet_tst_128x128_64x4_1x2_h_bz_coopA", 0, 1},
      {"sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
       "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
       0, 1},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
       "cga1x1x1_kernel0_0",
       0, 1},
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, "
       "(int)4, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, "
       "(int)64, (int)4, cutlass::bfloat16_t>>, (bool)0, (bool)1, (bool)0, (bool)0, (bool)0, "
       "(bool)1, (bool)0, (bool)0>(pytorch_flash::Flash_fwd_params)",
       0, 1},
      // And a false positive: `xmma_gemm` also names cuBLAS's FP32 SIMT SGEMM (ffma).
      {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
       "alignc4_execute_kernel__5x_cublas",
       1, 0},
  };
  for (const Case& c : cases) {
    const std::string s = short_of(c.long_name);
    EXPECT_EQ(pyprof_whitelist().uses_tensor_cores(s, s), c.pyprof) << c.long_name;
    EXPECT_EQ(tc(c.long_name, s), c.ours)
        << c.long_name << ": " << builtin().explain(c.long_name, s);
  }
}

// ---------------------------------------------------------------------------------------------
// (4) Modern kernel names from public sources: Ampere to Blackwell, CUTLASS 3, flash attention.

struct Named {
  const char* name;
  int expected;
};

void expect_all(const std::vector<Named>& cases) {
  for (const Named& c : cases) {
    const std::string s = short_of(c.name);
    EXPECT_EQ(tc(c.name, s), c.expected) << c.name << "\n  " << builtin().explain(c.name, s);
  }
}

TEST(TensorCoresModernNames, AmpereAndEarlier) {
  expect_all({
      // apex issue #530 (Turing, cuDNN fp16 conv that apex's "884" check missed).
      {"turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_filter1x1_stg8_interior_nchw_nn_v1", 1},
      {"turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", 1},
      {"cask_cudnn::computeOffsetsKernel", 0},
      {"nchwToNhwcKernel", 0},
      // cuBLAS/CUTLASS Ampere kernels as printed in public nsys/torch.profiler summaries.
      {"ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nn", 1},
      {"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
       "(T1::Params)",
       1},
      {"cutlass_80_tensorop_s1688gemm_tf32_256x128_16x3_nt_align4", 1},
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>(T1::Params)", 0},
      {"ampere_sgemm_128x64_nn", 0},
      {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", 1},
      {"cutlass_70_tensorop_f16_s884gemm_f16_128x256_32x2_nn_align8", 1},
      // TensorRT tactic names (public engine dumps): xmma with a TF32 instruction vs FFMA.
      {"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x64_stage3_warpsize2x1x2_tensor16x8x8",
       1},
      {"sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x16x8_stage3_"
       "warpsize4x1x1_g1_ffma_aligna4_alignc4",
       0},
      {"sm70_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x128x8", 0},
      // cuBLAS FP32 SGEMM without TF32 on A100/H100 (public nsys reports).
      {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
       "alignc4_execute_kernel__5x_cublas",
       0},
      // cuDNN FP32 conv with TF32 allowed (HTA A100 trace family) and on H100.
      {"sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32", 1},
      // Templated CUTLASS 2 kernels (PyTorch, xFormers) name the operator class.
      {"void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::"
       "MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, cutlass::half_t, "
       "cutlass::layout::RowMajor, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80>>>"
       "(T1::Params)",
       1},
      {"void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<"
       "cutlass::gemm::GemmShape<128, 128, 8>, float, cutlass::arch::OpClassSimt, "
       "cutlass::arch::Sm50>>>(T1::Params)",
       0},
      // c10::TensorOptions is not a TensorOp.
      {"void at::native::foo_kernel<float>(c10::TensorOptions, float*)", 0},
      // int8: IMMA in a llama.cpp-style kernel, CUTLASS 3 int8 tensorop.
      {"imp::<unnamed>::mmq_imma_kernel<(int)128, (bool)0, (bool)0, (bool)0>", 1},
      {"cutlass3x_sm90_tensorop_i64x128x32gemm_s8_s8_s32_bf16_bf16_128x128x128_2x1x1_0_tnt_align16_"
       "warpspecialized_pingpong_epi_tma",
       1},
  });
}

// xmma is a name prefix, not evidence: TensorRT builds non-MMA operations (pooling) as xmma
// kernels too, and names kernels for Maxwell/Pascal (sm50..sm62, no Tensor Cores) the same way.
// Names from public TensorRT nsys summaries (ResNet stems, FP16/INT8 engines).
TEST(TensorCoresModernNames, XmmaPoolingAndPreVoltaAreNotTensorCores) {
  expect_all({
      {"sm50_xmma_pooling_coalescedC_NHWC_kMAX_3_False_execute_kernel_trt", 0},
      {"sm50_xmma_pooling_coalescedC_NHWC_kMAX_2_False_execute_kernel_trt", 0},
      {"sm50_xmma_pooling_fw_4d_FP32FP32NHWC_Average_FastDiv_CAlign", 0},
      {"sm50_xmma_pooling_max", 0},
      // The arch prefix alone rules Tensor Cores out, whatever the operation (these two are the
      // sm80 names below with a Pascal prefix: no public sm6x xmma name was found).
      {"sm60_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32", 0},
      {"sm61_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32", 0},
      // The true positives beside them in the same traces stay.
      {"sm75_xmma_fprop_implicit_gemm_indexed_wo_smem_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x",
       1},
      {"sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x1", 1},
      {"trt_turing_h1688cudnn_256x64_ldg8_relu_exp_small_nhwc_tn_v1", 1},
  });
}

TEST(TensorCoresModernNames, Hopper) {
  expect_all({
      // pytorch/kineto#1041 (Conv3d, bf16, H100, PyTorch 2.6).
      {"sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
       "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
       1},
      // cuBLAS on H100 before nvjet (CUDA 12.1-12.3), bf16 and TF32.
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       1},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       1},
      // GindaChen/nsys-ai#575 and PR #582 (nvjet = cuBLAS Hopper GEMMs).
      {"nvjet_tst_128x128_64x4_1x2_h_bz_coopA", 1},
      {"nvjet_sm90_hss_320x128", 1},
      {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT", 1},
      {"nvjet_tss_256x128_64x4_1x2_h_bz_coopA_TNT", 1},
      // CUTLASS 3 kernels as nsys prints them (public profiling reports).
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
       "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
       "MainloopSm90TmaGmmaWarpSpecialized<9, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, "
       "cutlass::gemm::KernelTmaWarpSpecializedPingpong>, cute::tuple<cute::C<128>, cute::C<64>, "
       "cute::C<64>>, cutlass::bfloat16_t, cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::"
       "MMA_64x64x16_F32BF16BF16_SS>>, cute::SM90_TMA_LOAD>>>(T1::Params)",
       1},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
       "GroupProblemShape<cute::tuple<long, long, long>>, cutlass::gemm::collective::"
       "CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecialized<(int)12, ...",
       1},
      // CUTLASS profiler / library names (NVIDIA/cutlass media/docs, profiler naming).
      {"cutlass3x_sm90_tensorop_s64x256x16gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8_"
       "warpspecialized_cooperative_epi_tma",
       1},
      {"cutlass3x_sm90_sptensorop_s64x256x64spgemm_e4m3_e4m3_f32_bf16_bf16_128x256x128_2x1x1_0_tnt_"
       "align32_warpspecialized_cooperative_fp8_fastaccum_epi_tma",
       1},
      // DeepGEMM FP8 GEMM (public vLLM/SGLang traces).
      {"void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, 4096u, 1024u, 1u, 256u, "
       "128u, 128u, 128u, 128u, 128u, 3u, 128u, 256u, 2u, true, 132u, (deep_gemm::GemmType)0, "
       "deep_gemm::epilogue::transform::EpilogueIdentity>(float*, int*, unsigned int, "
       "CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)",
       1},
  });
}

TEST(TensorCoresModernNames, FlashAndFusedAttention) {
  expect_all({
      // FlashAttention-2 in PyTorch SDPA (aten/src/ATen/native/transformers/cuda/flash_attn/
      // flash_bwd_launch_template.h; kernel symbols also in Dao-AILab/flash-attention#420).
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, "
       "(int)4, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)128, "
       "(int)64, (int)4, cutlass::bfloat16_t>>, (bool)0, (bool)1, (bool)0, (bool)0, (bool)0, "
       "(bool)1, (bool)0, (bool)0>(pytorch_flash::Flash_fwd_params)",
       1},
      {"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<"
       "(int)128, (int)64, (int)128, (int)8, (int)2, (int)4, (int)2, (bool)0, (bool)0, "
       "cutlass::half_t, Flash_kernel_traits<(int)128, (int)64, (int)128, (int)8, "
       "cutlass::half_t>>, (bool)1, (bool)0, (bool)0, (bool)0, (bool)0, (bool)0>(Flash_bwd_params)",
       1},
      {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, "
       "(int)4, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, (int)64, "
       "(int)128, (int)4, cutlass::bfloat16_t>>, (bool)0>(Flash_fwd_params)",
       1},
      // ... and its helper kernels, which have no MMA.
      {"void pytorch_flash::flash_bwd_dot_do_o_kernel<(bool)1, Flash_bwd_kernel_traits<(int)128, "
       "(int)64, (int)64, (int)8, (int)4, (int)2, (int)2, (bool)1, (bool)0, cutlass::half_t, "
       "Flash_kernel_traits<(int)128, (int)64, (int)64, (int)8, cutlass::half_t>>>("
       "Flash_bwd_params)",
       0},
      {"void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<(int)128, (int)64, "
       "(int)128, (int)8, (int)2, (int)4, (int)2, (bool)0, (bool)0, cutlass::half_t, "
       "Flash_kernel_traits<(int)128, (int)64, (int)128, (int)8, cutlass::half_t>>>("
       "Flash_bwd_params, int)",
       0},
      {"void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, "
       "(int)128, (int)4, (bool)0, (bool)0, cutlass::bfloat16_t, Flash_kernel_traits<(int)128, "
       "(int)64, (int)128, (int)4, cutlass::bfloat16_t>>, (int)4, (int)1, (bool)1>("
       "Flash_fwd_params)",
       0},
      // FlashAttention-3 (Dao-AILab/flash-attention hopper/, as vLLM profiles show it).
      {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
       "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
       "cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, "
       "cutlass::arch::Sm90, false, false, false, false, false, false, false, false, true, true, "
       "false, false, false, cutlass::bfloat16_t>, ...",
       1},
      {"flash::prepare_varlen_num_blocks_kernel(int, int, int, const int *, const int *, const int "
       "*, const int *, const int *, const int *, int, int, int, int, int, "
       "cutlass::FastDivmod, cutlass::FastDivmod, int *, int *, bool)",
       0},
      {"void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128>"
       ">, 7, 256, 1, false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90>>(T1::Params)",
       0},
      // Constructed to pin precedence: a post-processing kernel whose template arguments name
      // a GMMA tiled MMA (FA3's FlashAttnBwdPostprocessConvertdQ takes one for its smem layout).
      {"void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<"
       "128>, cute::C<128>>, cutlass::bfloat16_t, float, cutlass::arch::Sm90, 256, "
       "cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<"
       "cute::SM90::GMMA::Major::K>>>, false, false>>(T1::Params)",
       0},
      // FlashAttention-4 (CuTe DSL) on B200, as it appears in public sglang/vLLM traces.
      {"kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100FlashAttentionForwardSm100_object_at__"
       "tensor0000o11101213_tensor0000o11101213_tensor0000o10111213_tensor0000o11101213_None_None_"
       "None_Non_0",
       1},
      // PyTorch memory-efficient attention (xFormers kernels; gemm_kernel_utils.h picks Tensor
      // Cores for f16 on sm70+, bf16 on sm80+, f32 on sm80+ via 3xTF32).
      {"fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
       "cutlass::half_t, cutlass::arch::Sm80, (bool)1, (int)64, (int)64, (int)64, (bool)1, "
       "(bool)1>::Params)",
       1},
      {"fmha_cutlassB_f16_aligned_64x64_k64_dropout_sm80", 1},
      {"fmha_cutlassF_bf16_aligned_64x128_rf_sm80", 1},
      {"fmha_cutlassB_bf16_aligned_128x128_k128_sm80", 1},
      {"fmha_cutlassB_f32_aligned_64x64_k128_sm80", 1},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm80", 1},
      {"fmha_cutlassB_f16_aligned_64x64_k64_sm70", 1},
      {"fmha_cutlassB_f16_aligned_64x64_k32_seqaligned_sm70", 1},
      {"fmha_cutlassB_f16_notaligned_64x64_k64_sm50", 0},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm75", 0},
      {"fmha_cutlassF_f32_notaligned_64x64_rf_sm50", 0},
      // cuDNN SDPA (PyTorch's cudnn backend, Transformer Engine), public profiles.
      {"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_3_64x64x128_4x1x1_"
       "kernel0_0",
       1},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
       "cga1x1x1_kernel0_0",
       1},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1_"
       "cga1x1x1",
       1},
      // vLLM paged attention decode runs on CUDA cores.
      {"void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
       "(vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*)",
       0},
  });
}

TEST(TensorCoresModernNames, Blackwell) {
  expect_all({
      // cuBLAS nvjet on B200/GB200 and on sm_120 (public traces).
      {"nvjet_sm100_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT", 1},
      {"nvjet_sm100_tst_16x64_64x16_4x1_v_bz_TNN", 1},
      {"nvjet_sm120_tst_mma_64x64x128_3_32x32x128_tmaAB_alignCD4_bz_TNNN", 1},
      // CUTLASS 4 block-scaled (NVFP4/MXFP8) GEMMs with UMMA (flashinfer, TensorRT-LLM).
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
       "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
       "MainloopSm100TmaUmmaWarpSpecializedBlockScaled<5, 2, 2, cute::tuple<int, int, "
       "cute::C<1>>, cutlass::arch::Sm100>, cute::tuple<cute::C<128>, cute::C<128>, "
       "cute::C<256>>, cute::tuple<cutlass::float_e2m1_t, cutlass::float_ue4m3_t>, ...",
       1},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
       "GroupProblemShape<cute::tuple<long, long, long>>, cutlass::gemm::collective::CollectiveMma<"
       "cutlass::gemm::MainloopSm120ArrayTmaWarpSpecializedBlockScaled<...>, ...>>>",
       1},
      {"void cutlass::device_kernel<X<cute::MMA_Atom<cute::SM100_MMA_F16BF16_SS<cutlass::half_t, "
       "cutlass::half_t, float, 128, 256, cute::UMMA::Major::K, cute::UMMA::Major::K>>>>",
       1},
      // cuDNN SDPA on Blackwell.
      {"cudnn_generated_fort_native_sdpa_sm100_flash_fprop_f16", 1},
      // A hand-written tcgen05 kernel.
      {"void gemm_tcgen05_kernel<128, 256>(const __nv_bfloat16*, const __nv_bfloat16*, float*)", 1},
      // trtllm-gen block-scaled MoE GEMMs (MXFP8 x MXFP4, BF16 x MXFP4, NVFP4) from real B200
      // vLLM/SGLang traces and TensorRT-LLM's sources, and its FP8/BF16 attention.
      {"bmm_MxE4m3_MxE2m1MxE4m3_Fp32_Ab32_Bb32_Cb32_t128x128x256_s4x4x4x4x1x4_et128x32_m256x128x32_"
       "c2x1x1_rM_TN_transOut_schPd2x1x2x3_biasFp32M_fCp_bN_ldgsts_ldgstsSf_rgTma_clmp_swiGlu_lbW4_"
       "lsfbW4_dynB_sm100f",
       1},
      {"bmm_MxE4m3_MxE2m1MxE4m3_Fp32_Ab32_Bb32_Cb32_t128x16x256u2_s6_et128x16_m256x16x32_c2x1x1_rM_"
       "TN_transOut_schedS_biasFp32M_bN_tma_ldgstsSf_rgTma_clmp_swiGlu_dynB_sm100f",
       1},
      {"bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x8x256_s4_et128x8_m128x8x32_c1x1x1_rM_TN_transOut_"
       "schedS_bN_tma_ldgstsSf_rgTma_clmp_dynB_sm100f",
       1},
      {"bmm_E2m1_E2m1E2m1_Fp32_t128x64x256_s6_et128x64_m128x64x64_cga1x1x1_16dp256b_TN_transOut_"
       "schedS_bN_ldgsts_tmaOpt_clmp_swiGlu_dynBatch_sm100a",
       1},
      {"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausalP16VarSeqQ128Kv128"
       "PersistentContext",
       1},
      {"fmhaSm100aKernel_QkvBfloat16OBfloat16HQk576HV512HVPerCta256PagedKvDenseP32VarSeqQ16Kv128"
       "StaticSwapsAbForGen",
       1},
      // The MX and FP4 type names alone are no evidence: quantization kernels carry them too.
      {"void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantization"
       "Type)1, __nv_bfloat16, 32, true>(int, int, int, __nv_bfloat16 const*, float const*, "
       "unsigned int*, unsigned int*, tensorrt_llm::QuantizationSFLayout)",
       0},
      {"bmm_helper_sm100_reduce", 0},
  });
}

TEST(TensorCoresModernNames, AmdMatrixCores) {
  expect_all({
      // hipBLASLt on MI300X (ISA942) and Tensile on MI250 (ISA90a), from the real traces.
      {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
       "AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1",
       1},
      {"Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1", 1},
      // Tensile's other tokens that start with MI are not a MatrixInstruction.
      {"Cijk_Ailk_Bljk_SB_MT64x64x8_SN_MIAV0_GRVW4_ISA906", 0},
      // composable_kernel: XDL convolutions and GEMMs (mangled, as ROCm traces show them).
      {"_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_"
       "v3INS_28GridwiseGemm_xdl_cshuffle_v3INS_13tensor_layout4gemm8RowMajorE",
       1},
      {"_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm_"
       "bk0mk1_bk0nk1_mn_xdlops_bwd_weightILi64EttftLNS_25InMemoryDataOperationEnumE1E",
       1},
      // MIOpen: the XDLOPS assembly igemm (gtcx3) is matrix-core work; its transposes are not.
      {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64_"
       "tb1x8x2x1_1x4x1x64_gkgs",
       1},
      {"igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x64x64_wt32x32x8_ws1x1_wr1x1_ta1x4x1x4_1x16x1x16_"
       "tb1x4x1x4_1x16x1x16_gkgs",
       1},
      {"batched_transpose_32x32_half", 0},
      {"transpose_NCHW2CNHW_V2_2D_WG_off64", 0},
      // ck_tile FMHA and its helpers.
      {"_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatch"
       "PrefillPipelineQRKSVSAsyncINS_36BlockFmhaBatchPrefillPipelineProblemIDF16bDF16bDF16bffDF1",
       1},
      {"ck_tile::kentry<1, ck_tile::FmhaFwdSplitKVCombineKernel<ck_tile::BlockFmhaFwdSplitKV"
       "CombinePipeline<...>>>",
       0},
      {"ck_tile::kentry<1, ck_tile::FmhaBwdOGradDotOKernel<ck_tile::BlockFmhaBwdOGradDotO<...>>>",
       0},
      {"_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassE", 0},
      // Triton GEMMs and attention (vLLM gpt-oss MoE on MI300X).
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu", 1},
      {"kernel_unified_attention_2d", 1},
      {"_finalize_matmul_scatter_bf16", 0},
      {"_topk_forward", 0},
  });
  const TensorCoreMatch m = builtin().match("Cijk_Alik_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN",
                                            "Cijk_Alik_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN");
  ASSERT_NE(m.rule, nullptr);
  EXPECT_EQ(m.rule->section, "AMD matrix cores (CDNA MFMA / XDLOPS; MI100, MI200, MI300)");
}

TEST(TensorCoresModernNames, TritonAndOtherBlindSpots) {
  // Inductor's pointwise/reduction kernels cannot contain tl.dot: explicit 0. A Triton matmul
  // template, a user Triton kernel, or an nvFuser matmul says nothing in its name: 0 by default
  // (prof's tc_eligible, computed from dtypes and shapes, is the other half of the story).
  const Named cases[] = {
      {"triton_poi_fused_add_mul_silu_23", 0},
      {"triton_red_fused__to_copy_mean_mul_pow_rsqrt_1", 0},
      {"triton_per_fused_native_layer_norm_0", 0},
      {"triton_tem_fused_mm_0", 0},
      {"_attn_fwd", 0},
      {"nvfuser_pointwise_f0_c1_r0_g0", 0},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
       0},
  };
  for (const Named& c : cases) EXPECT_EQ(tc(c.name), c.expected) << c.name;
  EXPECT_EQ(builtin().match("triton_tem_fused_mm_0", "triton_tem_fused_mm_0").rule, nullptr);
  EXPECT_NE(builtin().match("triton_poi_fused_add_0", "triton_poi_fused_add_0").rule, nullptr);
}

// ---------------------------------------------------------------------------------------------
// The built-in table, precedence, the cache.

TEST(TensorCoreRulesTable, BuiltinIsTheSourceFileAndParses) {
  const std::string source = read_file(PYPROF_TC_RULES_PATH);
  ASSERT_FALSE(source.empty()) << PYPROF_TC_RULES_PATH;
  EXPECT_EQ(TensorCoreRules::builtin_text(), source) << "the embedded table is stale: re-run CMake";
  std::vector<std::string> errors;
  const auto loaded = TensorCoreRules::load(PYPROF_TC_RULES_PATH, errors);
  ASSERT_TRUE(loaded.has_value()) << (errors.empty() ? "" : errors.front());
  EXPECT_EQ(loaded->rules().size(), builtin().rules().size());
  EXPECT_GE(builtin().rules().size(), 80u);

  int yes = 0;
  for (const TensorCoreRule& r : builtin().rules()) {
    yes += r.uses_tc ? 1 : 0;
    EXPECT_FALSE(r.section.empty()) << "line " << r.line << " has no `## ` section";
    // Every regex has a literal prefilter, so regexes run only on names that may match.
    if (r.kind == TensorCoreRule::Kind::kRegex) {
      EXPECT_GE(regex_required_literal(r.pattern).size(), 2u) << "line " << r.line;
    }
  }
  std::cout << "  " << builtin().rules().size() << " rules (" << yes << " yes, "
            << builtin().rules().size() - yes << " no)\n";
}

TEST(TensorCoreRulesTable, FirstMatchDecidesAndExplainNamesTheRule) {
  std::vector<std::string> errors;
  auto rules = TensorCoreRules::parse(
      "# comment\r\n"
      "\n"
      "## Helpers\n"
      "no foo_helper\r\n"
      "## Family\n"
      "  yes\tfoo_  \n"
      "re-no ^bar\\d+$\n"
      "yes bar\n"
      "yes {lambda(int)#1}\n",
      errors);
  ASSERT_TRUE(rules.has_value()) << errors.front();
  ASSERT_EQ(rules->rules().size(), 5u);
  EXPECT_EQ(rules->rules()[1].pattern, "foo_");
  EXPECT_EQ(rules->rules()[1].line, 6);
  EXPECT_EQ(rules->rules()[1].section, "Family");

  EXPECT_EQ(rules->uses_tensor_cores("void foo_helper<1>()", "foo_helper"), 0);
  EXPECT_EQ(rules->uses_tensor_cores("void foo_gemm<1>()", "foo_gemm"), 1);
  EXPECT_EQ(rules->uses_tensor_cores("bar12", "bar12"), 0);
  EXPECT_EQ(rules->uses_tensor_cores("bar12x", "bar12x"), 1);
  EXPECT_EQ(rules->uses_tensor_cores("k<{lambda(int)#1}>", ""), 1);
  // The short name is searched too (a rule anchored at its start, here).
  EXPECT_EQ(rules->uses_tensor_cores("void ns::bar7<int>(int)", "bar7"), 0);
  EXPECT_EQ(rules->uses_tensor_cores("", ""), 0);

  EXPECT_EQ(rules->explain("void foo_helper<1>()", "foo_helper"),
            "tc=0: line 4 `no foo_helper` [Helpers]");
  EXPECT_EQ(rules->explain("foo_gemm", "foo_gemm"), "tc=1: line 6 `yes foo_` [Family]");
  EXPECT_EQ(rules->explain("baz", "baz"),
            "tc=0: no rule matched (no Tensor Core evidence in the name)");
}

TEST(TensorCoreRulesTable, RequiredLiteralOfARegex) {
  EXPECT_EQ(regex_required_literal("xmma\\w*_(sp)?tensor\\d+x\\d+"), "tensor");
  EXPECT_EQ(regex_required_literal("(^|[^A-Za-z])imma"), "imma");
  EXPECT_EQ(regex_required_literal("SM\\d\\d\\d?_\\d+x\\d+x\\d+_"), "SM");
  EXPECT_EQ(regex_required_literal("fmha_cutlass[FB]_f32_\\w*_sm7[05]"), "fmha_cutlass");
  EXPECT_EQ(regex_required_literal("abcd?e"), "abc");     // d is optional
  EXPECT_EQ(regex_required_literal("abc{0,2}de"), "ab");  // so is c
  EXPECT_EQ(regex_required_literal("ab+c"), "ab");
  EXPECT_EQ(regex_required_literal("a\\.b\\[c"), "a.b[c");
  EXPECT_EQ(regex_required_literal("foo|barbaz"), "");  // either branch
  EXPECT_EQ(regex_required_literal("x(a|b)yz[)]w"), "yz");
  EXPECT_EQ(regex_required_literal(""), "");
}

TEST(TensorCoreRulesTable, CacheGivesTheSameAnswersFast) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& [n, files] : corpus().names) names.push_back(n);
  for (const ExpectedTc& e : expected_tc_kernels()) names.emplace_back(e.long_name, e.long_name);
  names.emplace_back(
      "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
      "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
      "MainloopSm90TmaGmmaWarpSpecialized<9, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>>>>>",
      "device_kernel");

  TensorCoreCache cache;
  for (const auto& [l, s] : names) EXPECT_EQ(cache.uses_tensor_cores(l, s), tc(l, s)) << l;
  EXPECT_LE(cache.size(), names.size());

  // Uncached cost per distinct name, and a 1M-kernel pass through the cache.
  auto t0 = std::chrono::steady_clock::now();
  int ones = 0;
  for (int rep = 0; rep < 20; ++rep) {
    for (const auto& [l, s] : names) ones += tc(l, s);
  }
  auto t1 = std::chrono::steady_clock::now();
  const double uncached_us =
      std::chrono::duration<double, std::micro>(t1 - t0).count() / (20.0 * names.size());
  constexpr int kKernels = 1'000'000;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kKernels; ++i) {
    const auto& [l, s] = names[static_cast<size_t>(i) % names.size()];
    ones += cache.uses_tensor_cores(l, s);
  }
  t1 = std::chrono::steady_clock::now();
  const double cached_s = std::chrono::duration<double>(t1 - t0).count();
  std::cout << "  " << names.size() << " distinct names: " << uncached_us
            << " us/name uncached; 1M kernels through the cache: " << cached_s << " s\n";
  EXPECT_GT(ones, 0);
  EXPECT_LT(cached_s, 5.0);  // generous: ~0.1 s expected in a Release build
}

// ---------------------------------------------------------------------------------------------
// (5) Malformed tables give clear errors.

std::vector<std::string> parse_errors(std::string_view text) {
  std::vector<std::string> errors;
  EXPECT_FALSE(TensorCoreRules::parse(text, errors).has_value()) << text;
  return errors;
}

TEST(TensorCoreRulesErrors, MalformedLinesAreReportedWithTheirLineNumbers) {
  auto e = parse_errors("yes ok\nmaybe foo\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rfind("line 2: unknown rule `maybe foo`: expected `yes`, `no`, `re-yes` or "
                       "`re-no`",
                       0),
            0u)
      << e[0];

  e = parse_errors("yes ok\nyes\nre-no   \t\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], "line 2: `yes` needs a pattern after it");
  EXPECT_EQ(e[1], "line 3: `re-no` needs a pattern after it");

  e = parse_errors("re-yes xmma(unclosed\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rfind("line 1: bad regular expression `xmma(unclosed`: ", 0), 0u) << e[0];

  e = parse_errors("yes a\nno b\nyes a\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0], "line 3: `yes a` repeats line 1");

  e = parse_errors("Yes a\n");  // keywords are lower case
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("unknown rule `Yes a`"), std::string::npos);

  e = parse_errors("yes-a\n");  // keyword and pattern need a blank between them
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("unknown rule `yes-a`"), std::string::npos);

  e = parse_errors("# only comments\n## a section\n\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("the table has no rules"), std::string::npos);

  // Every problem is reported, not just the first.
  e = parse_errors("frob x\nyes\nre-yes [\nyes fine\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].substr(0, 7), "line 1:");
  EXPECT_EQ(e[1].substr(0, 7), "line 2:");
  EXPECT_EQ(e[2].substr(0, 7), "line 3:");
}

TEST(TensorCoreRulesErrors, UnreadableAndMalformedFiles) {
  std::vector<std::string> errors;
  EXPECT_FALSE(TensorCoreRules::load("/nonexistent/tc_rules.txt", errors).has_value());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("/nonexistent/tc_rules.txt: cannot read: ", 0), 0u) << errors[0];

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("pyprof_tc_rules_test_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream out(path);
    out << "yes ok\nyes\n";
  }
  errors.clear();
  EXPECT_FALSE(TensorCoreRules::load(path.string(), errors).has_value());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], path.string() + ": line 2: `yes` needs a pattern after it");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pyprof::prof
