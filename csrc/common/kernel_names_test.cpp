#include "common/kernel_names.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pyprof {
namespace {

namespace fs = std::filesystem;

// A test input by file name: the repository's copy in tests/data, else the shared data beside
// the checkout (../shared/traces, or PYPROF_TRACES_DIR). Empty when neither has it.
fs::path data_file(const std::string& name) {
  const fs::path repo = fs::path(__FILE__).parent_path().parent_path().parent_path();
  fs::path shared = repo.parent_path() / "shared" / "traces";
  if (const char* env = std::getenv("PYPROF_TRACES_DIR"); env && *env) shared = env;
  for (const fs::path& dir : {repo / "tests" / "data", shared / "real"}) {
    if (fs::exists(dir / name)) return dir / name;
  }
  return {};
}

// Every real Nsight Systems export we have (each has CUPTI_ACTIVITY_KIND_KERNEL).
const char* const kNsysExports[] = {"nsys-2020.3.4_beast-stream_report2.sqlite",
                                    "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
                                    "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite"};

// One result row, every column as text; NULL reads as nullopt.
using Row = std::vector<std::optional<std::string>>;

// The rows `sql` selects from the database at `path`. SQLite is called directly: pyprof_common
// depends on nothing, and parse's reader sits a stage above it.
std::vector<Row> query(const fs::path& path, const std::string& sql) {
  std::vector<Row> rows;
  sqlite3* db = nullptr;
  // immutable: the shared test data may be read-only, where SQLite could not take a lock.
  const std::string uri = "file:" + path.string() + "?immutable=1";
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    ADD_FAILURE() << path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
      Row& row = rows.emplace_back();
      for (int i = 0; i < sqlite3_column_count(statement); ++i) {
        if (sqlite3_column_type(statement, i) == SQLITE_NULL) {
          row.emplace_back();
        } else {
          row.emplace_back(
              std::string(reinterpret_cast<const char*>(sqlite3_column_text(statement, i)),
                          static_cast<size_t>(sqlite3_column_bytes(statement, i))));
        }
      }
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return rows;
}

// The value of `'key': '...'` in one line of a legacy PyProf .dict file (a Python dict repr).
std::string dict_string(const std::string& line, const std::string& key) {
  std::string head = "'" + key + "': ";
  size_t at = line.find(head);
  if (at == std::string::npos || at + head.size() >= line.size()) return {};
  char quote = line[at + head.size()];
  size_t begin = at + head.size() + 1;
  size_t end = line.find(quote, begin);
  return end == std::string::npos ? std::string() : line.substr(begin, end - begin);
}

TEST(KernelNames, DemangleItaniumNames) {
  EXPECT_EQ(demangle("_Z3fooPf"), "foo(float*)");
  EXPECT_EQ(demangle("_ZN2at6native13reduce_kernelILi512ELi1EEEvi"),
            "void at::native::reduce_kernel<512, 1>(int)");
  EXPECT_EQ(demangle("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
  EXPECT_EQ(demangle("_Znot a name"), "_Znot a name");  // fails to demangle: unchanged
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle(""), "");
  EXPECT_EQ(demangle(std::string_view("_Z3foo\0v", 8)), std::string("_Z3foo\0v", 8));
}

TEST(KernelNames, ShortNameOfModernAndOldNames) {
  const std::pair<const char*, const char*> cases[] = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
       "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
       "vectorized_elementwise_kernel"},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas",
       "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
       "segment_k_off_kernel__5x_cublas"},
      {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_nn_align4>(cutlass_80_"
       "tensorop_s1688gemm_128x128_16x5_nn_align4::Params)",
       "Kernel2"},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 6, false>(float*, "
       "float const*, int, int, int)",
       "softmax_warp_forward"},
      {"(anonymous namespace)::nvfuser_none_f0_c0_r0_g0((anonymous namespace)::Tensor<(anonymous "
       "namespace)::__half, 3, 3>)",
       "nvfuser_none_f0_c0_r0_g0"},
      {"<unnamed>::nvfuser_none_f0_c0_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)3, (int)3>)",
       "nvfuser_none_f0_c0_r0_g0"},
      {"cudnn::gemm::computeOffsetsKernel(cudnn::gemm::ComputeOffsetsParams)",
       "computeOffsetsKernel"},
      {"void kernelReduceAllPass2<long, ReduceMin<long> >(int, long, ReduceMin<long>, long*, "
       "long*)",
       "kernelReduceAllPass2"},
      // Template arguments holding lambdas, function types and comparisons.
      {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::"
       "add_kernel_cuda(at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() "
       "const::{lambda(float, float)#1}>(at::TensorIterator&)::{lambda(int)#1}>(int, "
       "at::native::gpu_kernel_impl<>(at::TensorIterator&)::{lambda(int)#1})",
       "elementwise_kernel"},
      {"void at::native::vectorized_elementwise_kernel<(int)4, at::native::<unnamed>::clamp_min_"
       "kernel(at::TensorIterator &)::[lambda() (instance 1)]::operator ()() const, "
       "at::detail::Array<char *, (int)2>>(int, T2, T3)",
       "vectorized_elementwise_kernel"},
      {"void k<(1 > 2), (3 < 4)>(int)", "k"},
      {"void k<&S::operator<, &S::operator->>(int)", "k"},
      {"void foo<int>(int)::{lambda()#1}::operator()() const", "operator()"},
      // Names cut short (nsys ends long names with "..."; our own bound) and no-parameter names.
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ...", "reduce_kernel"},
      {"__omp_offloading_31_18a80bc__Z_1...", "__omp_offloading_31_18a80bc__Z_1..."},
      {"volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn"},
      {"ns::Class<int>::member", "member"},
      {"void ", "void "},
      {"", ""},
  };
  for (const auto& [name, expected] : cases) {
    EXPECT_EQ(short_kernel_name(name), expected) << name;
  }
}

TEST(KernelNames, ShortNameNeverLeavesItsInput) {
  // Any bytes: the result is a non-empty view into the input (unbalanced brackets, stray
  // operators and truncation included).
  std::mt19937 rng(12345);
  const std::string alphabet = "<>()[]{}:: ,-ab_operator";
  for (int round = 0; round < 20000; ++round) {
    std::string s(rng() % 40, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    std::string_view out = short_kernel_name(s);
    ASSERT_EQ(out.empty(), s.empty()) << s;
    if (!s.empty()) {
      ASSERT_GE(out.data(), s.data()) << s;
      ASSERT_LE(out.data() + out.size(), s.data() + s.size()) << s;
    }
  }
  // Deep or unbalanced nesting stays linear (these would take minutes if it were not).
  const size_t n = 1000000;
  auto join = [](std::initializer_list<std::string> parts) {
    std::string out;
    for (const auto& part : parts) out += part;
    return out;
  };
  const std::string opens(n, '<'), closes(n, ')'), parens(n, '('), greaters(n, '>');
  EXPECT_EQ(short_kernel_name(join({"k", opens})), "k");
  EXPECT_EQ(short_kernel_name(join({"k", opens, closes})), "k");
  EXPECT_EQ(short_kernel_name(join({"k(", opens, closes})), "k");
  EXPECT_EQ(short_kernel_name(join({"k", parens, greaters})), "k");
}

TEST(KernelNames, LegacyPyprofRule) {
  EXPECT_EQ(legacy_short_kernel_name("void at::native::(anonymous namespace)::"
                                     "embedding_backward_feature_kernel<float, float>(long*)"),
            "embedding_backward_feature_kernel");
  EXPECT_EQ(legacy_short_kernel_name("cudnn::gemm::computeOffsetsKernel(cudnn::gemm::Params)"),
            "cudnn::gemm::computeOffsetsKernel");
  EXPECT_EQ(legacy_short_kernel_name("<unnamed>::nvfuser_none_f0_c0_r0_g0(int)"), "");
  EXPECT_EQ(legacy_short_kernel_name("void format::k(int)"), "formk");  // "at::" anywhere
  EXPECT_EQ(legacy_short_kernel_name("volta_sgemm_128x64_nn"), "volta_sgemm_128x64_nn");
}

// Nsight Systems stores its own short name beside the demangled one: the rule must agree on
// every kernel of every real nsys export we have.
TEST(KernelNames, MatchesNsysShortNameOnRealExports) {
  int names = 0, mangled = 0;
  for (const char* name : kNsysExports) {
    fs::path path = data_file(name);
    if (path.empty()) GTEST_SKIP() << "no test data: " << name;
    const bool has_mangled = !query(path,
                                    "SELECT 1 FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL') "
                                    "WHERE name = 'mangledName'")
                                  .empty();
    const std::string sql =
        std::string("SELECT DISTINCT d.value, s.value, ") + (has_mangled ? "m.value" : "NULL") +
        " FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName "
        "JOIN StringIds s ON s.id = k.shortName " +
        (has_mangled ? "LEFT JOIN StringIds m ON m.id = k.mangledName" : "");
    for (const Row& row : query(path, sql)) {
      const std::string demangled = row[0].value_or(""), nsys_short = row[1].value_or("");
      ++names;
      EXPECT_EQ(short_kernel_name(demangled), nsys_short) << name;
      // Our own demangling (GNU style) must lead to the same short name.
      if (row[2]) {
        ++mangled;
        EXPECT_EQ(short_kernel_name(demangle(*row[2])), nsys_short) << *row[2];
      }
    }
  }
  EXPECT_EQ(names, 51);    // distinct (demangled, short) pairs: 2 + 34 + 15
  EXPECT_EQ(mangled, 49);  // the 2020.3 export has no mangledName column
}

// Legacy PyProf's kShortName for the one real nvprof profile: the nsys rule and PyProf's rule
// agree on all of its 160 kernels (PyTorch 1.4 era names: only at::, native::, cuda:: and
// anonymous namespaces), and the demangled names are PyProf's kLongName.
TEST(KernelNames, MatchesPyprofShortNameOnRealNvprofProfile) {
  fs::path dict = data_file("nvprof-cuda10.1_pytorch-lm_apex-pyprof.parse-output.dict");
  if (dict.empty()) GTEST_SKIP() << "no test data: the nvprof LM .dict";
  std::ifstream in(dict);
  int lines = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lines;
    std::string long_name = dict_string(line, "kLongName");
    std::string pyprof_short = dict_string(line, "kShortName");
    ASSERT_FALSE(long_name.empty()) << line;
    EXPECT_EQ(short_kernel_name(long_name), pyprof_short) << long_name;
    EXPECT_EQ(legacy_short_kernel_name(long_name), pyprof_short) << long_name;
  }
  EXPECT_EQ(lines, 160);
}

// Where PyProf's rule and the nsys rule part ways on real names: PyProf keeps namespaces other
// than at::, native::, cuda:: and (anonymous namespace)::, and loses names that begin with
// NVIDIA's "<unnamed>::" (it cuts at the first '<').
TEST(KernelNames, LegacyRuleDiffersFromNsysOnlyByNamespacesAndUnnamed) {
  std::set<std::pair<std::string, std::string>> differences;  // (legacy, nsys)
  for (const char* name : kNsysExports) {
    fs::path path = data_file(name);
    if (path.empty()) GTEST_SKIP() << "no test data: " << name;
    const char* const sql =
        "SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName";
    for (const Row& row : query(path, sql)) {
      const std::string demangled = row[0].value_or("");
      std::string legacy = legacy_short_kernel_name(demangled);
      std::string nsys_short = row[1].value_or("");
      if (legacy == nsys_short) continue;
      differences.emplace(legacy, nsys_short);
      bool keeps_namespace = legacy.size() > nsys_short.size() + 2 &&
                             legacy.compare(legacy.size() - nsys_short.size() - 2,
                                            std::string::npos, "::" + nsys_short) == 0;
      bool unnamed = legacy.empty() && demangled.find("<unnamed>::") != std::string::npos;
      EXPECT_TRUE(keeps_namespace || unnamed) << legacy << " vs " << nsys_short;
    }
  }
  EXPECT_EQ(differences.size(), 13u);
  EXPECT_TRUE(
      differences.count({"cudnn::detail::implicit_convolve_sgemm", "implicit_convolve_sgemm"}));
  EXPECT_TRUE(differences.count({"", "max_pool_forward_nchw"}));
}

}  // namespace
}  // namespace pyprof
