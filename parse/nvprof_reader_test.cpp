#include "parse/nvprof_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace pyprof::parse {
namespace {

namespace fs = std::filesystem;

// A test input by file name: the repository's copy in tests/data, else the shared data beside
// the checkout (../shared/traces, or PYPROF_TRACES_DIR), which also holds the large files.
// Empty when neither has it (the test then skips).
fs::path data_file(const std::string& name) {
  const fs::path repo = fs::path(__FILE__).parent_path().parent_path();
  fs::path shared = repo.parent_path() / "shared" / "traces";
  if (const char* env = std::getenv("PYPROF_TRACES_DIR"); env && *env) shared = env;
  for (const fs::path& dir : {repo / "tests" / "data", shared / "real", shared / "pyprof-legacy"}) {
    if (fs::exists(dir / name)) return dir / name;
  }
  return {};
}

fs::path real_nvprof() { return data_file("nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql"); }
fs::path real_dict() {
  return data_file("nvprof-cuda10.1_pytorch-lm_apex-pyprof.parse-output.dict");
}
fs::path synthetic(const char* name) { return data_file(name); }

bool read_db(const fs::path& path, Trace& trace, std::string& error) {
  SqliteDb db;
  if (!db.open(path.string(), error)) return false;
  NvprofReader reader(db);
  return reader.read(trace, error);
}

std::string_view text_of(const Trace& trace, const RangeRecord& r) {
  return trace.pool.get(static_cast<uint32_t>(r.text.id));
}

int64_t warnings_of(const Trace& trace, std::string_view category) {
  for (const auto& group : trace.warnings) {
    if (group.category == category) return group.count;
  }
  return 0;
}

std::vector<const GpuActivity*> of_kind(const Trace& trace, ActivityKind kind) {
  std::vector<const GpuActivity*> out;
  for (const auto& a : trace.activities) {
    if (a.kind == kind) out.push_back(&a);
  }
  return out;
}

// One legacy PyProf .dict line (a Python dict repr): a string value, or the text of any other
// value up to the next ", '" (numbers, tuples).
std::string dict_value(const std::string& line, const std::string& key) {
  std::string head = "'" + key + "': ";
  size_t at = line.find(head);
  if (at == std::string::npos) return {};
  size_t begin = at + head.size();
  if (line[begin] == '\'' || line[begin] == '"') {
    size_t end = line.find(line[begin], begin + 1);
    return line.substr(begin + 1, end - begin - 1);
  }
  size_t end = line.find(", '", begin);
  if (end == std::string::npos) end = line.rfind('}');
  return line.substr(begin, end - begin);
}

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string tuple_text(const int32_t (&v)[3]) {
  std::string out = "(";
  for (int i = 0; i < 3; ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(v[i]);
  }
  return out += ")";
}

#define REQUIRE_FILE(path) \
  if ((path).empty()) GTEST_SKIP() << "no test data: " #path

// ---------------------------------------------------------------------------------------------
// The real profile: apex.pyprof on a PyTorch word-LM, nvprof from CUDA 10.1.

TEST(NvprofReader, RealProfileCounts) {
  REQUIRE_FILE(real_nvprof());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  EXPECT_EQ(trace.format, "nvprof");
  EXPECT_EQ(trace.version, "12");
  EXPECT_EQ(trace.stats.kernels, 160);
  EXPECT_EQ(trace.stats.memcpys, 21);
  EXPECT_EQ(trace.stats.memsets, 8);
  EXPECT_EQ(trace.stats.api_calls, 1968);  // RUNTIME only: the DRIVER table is empty
  EXPECT_EQ(trace.stats.ranges, 683);      // 1366 MARKER rows: 683 START + 683 END
  EXPECT_EQ(trace.stats.marks, 0);
  EXPECT_EQ(trace.stats.ranges_unclosed, 0);
  EXPECT_EQ(trace.stats.rows_skipped, 0);
  EXPECT_EQ(trace.stats.ranges_end_before_start, 0);
  EXPECT_EQ(trace.activities.size(), 189u);
  EXPECT_EQ(trace.api_calls.size(), 1968u);
  EXPECT_EQ(trace.ranges.size(), 683u);
  for (const auto& w : trace.warnings) {
    if (w.category != "malformed marker") ADD_FAILURE() << w.category << ": " << w.examples[0];
  }
}

// The DEVICE table's V100 in the header's units: CUPTI stores its clock in kHz (1530000) and
// its bandwidth in KB/s (898048000 = 877 MHz HBM2 x 4096 bits x 2 / 8, in KB/s).
TEST(NvprofReader, RealProfileDescribesItsGpu) {
  REQUIRE_FILE(real_nvprof());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  ASSERT_EQ(trace.devices.size(), 1u);
  const Trace::Device& v100 = trace.devices[0];
  EXPECT_EQ(v100.id, 0);
  EXPECT_EQ(v100.name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(v100.sm_count, 80);
  EXPECT_EQ(v100.clock_hz, 1'530'000'000);
  EXPECT_EQ(v100.memory_bandwidth, 898'048'000'000);
  EXPECT_EQ(v100.total_memory, 16'914'055'168);
  EXPECT_EQ(v100.compute_major, 7);
  EXPECT_EQ(v100.compute_minor, 0);
  for (const GpuActivity& a : trace.activities) EXPECT_EQ(a.device, v100.id);
}

TEST(NvprofReader, RealProfileKernelsAreLegacyPyprofKernels) {
  REQUIRE_FILE(real_nvprof());
  REQUIRE_FILE(real_dict());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  auto kernels = of_kind(trace, ActivityKind::kKernel);
  std::vector<std::string> lines = read_lines(real_dict());
  ASSERT_EQ(kernels.size(), lines.size());
  std::map<int64_t, const ApiCall*> launch;
  for (const auto& call : trace.api_calls) launch[call.correlation_id] = &call;
  int long_name_differences = 0;
  std::set<std::string> differing;
  // PyProf printed kernels in table order, as we read them.
  for (size_t i = 0; i < kernels.size(); ++i) {
    const GpuActivity& k = *kernels[i];
    const std::string& line = lines[i];
    SCOPED_TRACE("kernel " + std::to_string(i));
    std::string pyprof_long = dict_value(line, "kLongName");
    std::string_view ours = trace.pool.get(k.long_name);
    if (ours != pyprof_long) {
      // The 2020 demangler behind PyProf's cxxfilt resolved some template parameters used
      // inside lambda scopes wrongly; today's libstdc++ (and c++filt) get them right.
      ++long_name_differences;
      differing.insert(pyprof_long);
      EXPECT_NE(ours.find("{lambda("), std::string_view::npos) << ours;
    }
    EXPECT_EQ(trace.pool.get(k.short_name), dict_value(line, "kShortName"));
    EXPECT_EQ(std::to_string(k.end - k.start), dict_value(line, "kDuration"));
    EXPECT_EQ(std::to_string(k.device), dict_value(line, "device"));
    EXPECT_EQ(std::to_string(k.stream), dict_value(line, "stream"));
    EXPECT_EQ(tuple_text(k.grid), dict_value(line, "grid"));
    EXPECT_EQ(tuple_text(k.block), dict_value(line, "block"));
    ASSERT_TRUE(launch.count(k.correlation_id));
    EXPECT_EQ(std::to_string(launch[k.correlation_id]->tid), dict_value(line, "tid"));
    EXPECT_GT(k.registers, 0);
    EXPECT_GE(k.static_shared, 0);
    EXPECT_GE(k.dynamic_shared, 0);
    EXPECT_EQ(k.graph_node_id, -1);
  }
  EXPECT_EQ(long_name_differences, 25);  // 3 distinct names
  EXPECT_EQ(differing.size(), 3u);
  // One of them, plainly: PyProf's text is not even well-formed C++.
  for (const auto* k : kernels) {
    std::string_view name = trace.pool.get(k->long_name);
    if (name.find("kernelPointwiseApply3<at::native::") == std::string_view::npos) continue;
    EXPECT_NE(name.find("TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<unsigned "
                        "char, unsigned int>, unsigned int, "),
              std::string_view::npos);
  }
  bool found_bad_pyprof_name = false;
  for (const auto& name : differing) {
    found_bad_pyprof_name |= name.find(
                                 "at::cuda::detail<unsigned char, "
                                 "at::cuda::detail::TensorInfo>") != std::string::npos;
  }
  EXPECT_TRUE(found_bad_pyprof_name);
}

TEST(NvprofReader, RealProfileGpuWorkHasItsLaunchInTheSameProcess) {
  REQUIRE_FILE(real_nvprof());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  std::map<std::pair<uint32_t, int64_t>, std::string_view> launch;  // (pid, correlation) -> API
  std::set<uint32_t> tids;
  for (const auto& call : trace.api_calls) {
    EXPECT_EQ(call.pid, 15938u);
    EXPECT_LE(call.start, call.end);
    launch[{call.pid, call.correlation_id}] = trace.pool.get(call.name);
    tids.insert(call.tid);
  }
  // threadId -354666688 in the file is pthread_self() 0xEADC3740 truncated to 32 bits.
  EXPECT_EQ(tids, (std::set<uint32_t>{452974336u, 3940300608u}));
  const std::map<ActivityKind, std::string_view> expected_api = {
      {ActivityKind::kKernel, "cudaLaunchKernel"},
      {ActivityKind::kMemcpy, "cudaMemcpyAsync"},
      {ActivityKind::kMemset, "cudaMemsetAsync"}};
  for (const auto& a : trace.activities) {
    EXPECT_EQ(a.pid, 15938u);
    auto it = launch.find({a.pid, a.correlation_id});
    ASSERT_NE(it, launch.end()) << "correlation id " << a.correlation_id;
    EXPECT_EQ(it->second, expected_api.at(a.kind));
  }
}

// The marker objectId decodes to the (pid, tid) the API calls carry: every kernel's launch lies
// inside at least one range of its own thread, which is what correlation relies on.
TEST(NvprofReader, RealProfileRangesEncloseEveryLaunch) {
  REQUIRE_FILE(real_nvprof());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  std::map<int64_t, const ApiCall*> launch;
  std::set<std::pair<uint32_t, uint32_t>> api_threads;
  for (const auto& call : trace.api_calls) {
    launch[call.correlation_id] = &call;
    api_threads.insert({call.pid, call.tid});
  }
  int on_api_threads = 0;
  for (const auto& r : trace.ranges) {
    EXPECT_EQ(r.shape, RangeShape::kPushPop);
    EXPECT_EQ(r.domain, 0u);
    EXPECT_LT(r.start, r.end);
    EXPECT_EQ(r.pid, 15938u);
    on_api_threads += api_threads.count({r.pid, r.tid}) ? 1 : 0;
  }
  // One range sits on a third thread (tid 0x1B7FE700) that made no CUDA call.
  EXPECT_EQ(on_api_threads, 682);
  for (const auto* k : of_kind(trace, ActivityKind::kKernel)) {
    const ApiCall& call = *launch.at(k->correlation_id);
    int enclosing = 0;
    for (const auto& r : trace.ranges) {
      if (r.pid == call.pid && r.tid == call.tid && r.start <= call.start && r.end >= call.end) {
        ++enclosing;
      }
    }
    EXPECT_GT(enclosing, 0) << trace.pool.get(k->short_name);
  }
}

TEST(NvprofReader, RealProfileRangeTexts) {
  REQUIRE_FILE(real_nvprof());
  SqliteDb db;
  std::string error;
  ASSERT_TRUE(db.open(real_nvprof().string(), error)) << error;
  NvprofReader reader(db);
  Trace trace;
  ASSERT_TRUE(reader.read(trace, error)) << error;
  ASSERT_EQ(trace.ranges.size(), 683u);
  std::string_view first = reader.fetch_text(trace, trace.ranges[0].text);
  EXPECT_EQ(first.substr(0, 36), "{'traceMarker': ['language-model.py:");
  EXPECT_EQ(reader.fetch_text(trace, trace.ranges[1].text).substr(0, 45),
            "{'mod': 'torch.nn.functional', 'op': 'embeddi");
  int seq_markers = 0;
  for (const auto& r : trace.ranges) {
    ASSERT_EQ(r.text.where, TextRef::Where::kPool);
    std::string_view text = reader.fetch_text(trace, r.text);
    EXPECT_FALSE(text.empty());
    if (text.find(", seq = ") != std::string_view::npos) ++seq_markers;
  }
  EXPECT_GT(seq_markers, 0);
  EXPECT_EQ(reader.fetch_text(trace, TextRef{}), "");
  EXPECT_EQ(reader.fetch_text(trace, TextRef{TextRef::Where::kPool, -1}), "");
  EXPECT_EQ(reader.fetch_text(trace, TextRef{TextRef::Where::kPool, 1 << 30}), "");
  EXPECT_EQ(reader.fetch_text(trace, TextRef{TextRef::Where::kRow, 1}), "");
}

// The messages decode as what they are (marker decoding itself is tested in markers_test).
TEST(NvprofReader, RealProfileMarkerKinds) {
  REQUIRE_FILE(real_nvprof());
  SqliteDb db;
  std::string error;
  ASSERT_TRUE(db.open(real_nvprof().string(), error)) << error;
  NvprofReader reader(db);
  Trace trace;
  ASSERT_TRUE(reader.read(trace, error)) << error;
  EXPECT_EQ(trace.stats.malformed_markers, 0);
  const std::regex backward_node("[A-Z][A-Za-z]*Backward[0-9]*");
  const std::regex op_name("[a-z_][a-z0-9_]*");
  int traces = 0, legacy_ops = 0, ops = 0, nodes = 0, autograd = 0;
  for (const auto& r : trace.ranges) {
    std::string text(reader.fetch_text(trace, r.text));
    SCOPED_TRACE(text.substr(0, 80));
    if (text.rfind("{'traceMarker'", 0) == 0) {
      ++traces;
      EXPECT_EQ(r.kind, MarkerKind::kTrace);
      EXPECT_EQ(r.dialect, Dialect::kLegacyPyprof);
      continue;
    }
    if (text.rfind("{'mod'", 0) == 0) {
      ++legacy_ops;
      EXPECT_EQ(r.kind, MarkerKind::kOp);
      EXPECT_EQ(r.dialect, Dialect::kLegacyPyprof);
      EXPECT_NE(text.find("'op': '" + std::string(trace.pool.get(r.name)) + "'"),
                std::string::npos);
      continue;
    }
    EXPECT_EQ(r.dialect, Dialect::kEmitNvtx);
    size_t comma = text.find(", seq = ");
    std::string name = text.substr(0, comma);
    if (comma != std::string::npos) {
      EXPECT_EQ(std::to_string(r.seq), text.substr(comma + 8));
    }
    if (std::regex_match(name, backward_node)) {
      ++nodes;
      EXPECT_EQ(r.kind, MarkerKind::kBackwardNode);
    } else if (std::regex_match(name, op_name)) {
      ++ops;
      EXPECT_EQ(r.kind, MarkerKind::kOp);
      EXPECT_EQ(trace.pool.get(r.name), name);
    } else {
      ++autograd;  // torch::autograd::AccumulateGrad, CopyBackwards, GraphRoot
      EXPECT_EQ(name.rfind("torch::autograd::", 0), 0u);
    }
  }
  EXPECT_EQ(traces, 140);
  EXPECT_EQ(legacy_ops, 140);
  EXPECT_EQ(ops, 325);
  EXPECT_EQ(nodes, 58);
  EXPECT_EQ(autograd, 20);
}

// nvprof stores raw CUPTI enums; the trace holds nsys numbering (CUPTI DEVICE 3 -> nsys 2,
// PAGEABLE 1 -> 0).
TEST(NvprofReader, RealProfileCopiesUseNsysEnums) {
  REQUIRE_FILE(real_nvprof());
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(real_nvprof(), trace, error)) << error;
  auto copies = of_kind(trace, ActivityKind::kMemcpy);
  ASSERT_EQ(copies.size(), 21u);
  EXPECT_EQ(copies[0]->copy_kind, 2);  // DtoH
  EXPECT_EQ(copies[0]->src_kind, 2);   // device
  EXPECT_EQ(copies[0]->dst_kind, 0);   // pageable
  EXPECT_EQ(copies[0]->bytes, 8);
  EXPECT_EQ(copies[0]->stream, 7);
  auto sets = of_kind(trace, ActivityKind::kMemset);
  ASSERT_EQ(sets.size(), 8u);
  EXPECT_EQ(sets[0]->bytes, 93178400);
  EXPECT_EQ(sets[0]->memset_value, 0);
  EXPECT_EQ(sets[0]->dst_kind, 2);  // device
}

TEST(NvprofReader, DetectsNvprofDatabases) {
  REQUIRE_FILE(real_nvprof());
  SqliteDb nvprof, nsys;
  std::string error;
  ASSERT_TRUE(nvprof.open(real_nvprof().string(), error)) << error;
  EXPECT_TRUE(NvprofReader::detect(nvprof));
  fs::path nsys_file = synthetic("synthetic_mlp.nsys.sqlite");
  if (!nsys_file.empty()) {
    ASSERT_TRUE(nsys.open(nsys_file.string(), error)) << error;
    EXPECT_FALSE(NvprofReader::detect(nsys));
  }
}

// ---------------------------------------------------------------------------------------------
// Synthetic nvprof-layout databases (hand-built; no MEMCPY/MEMSET/Version tables).

TEST(NvprofReader, SyntheticMlp) {
  fs::path file = synthetic("synthetic_mlp.nvprof.sql");
  REQUIRE_FILE(file);
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(file, trace, error)) << error;
  EXPECT_EQ(trace.version, "");
  EXPECT_EQ(trace.stats.kernels, 7);
  EXPECT_EQ(trace.stats.api_calls, 7);
  EXPECT_EQ(trace.stats.ranges, 17);
  EXPECT_EQ(trace.stats.ranges_unclosed, 0);
  EXPECT_EQ(trace.stats.rows_skipped, 0);
  std::vector<std::string> lines = read_lines(synthetic("synthetic_mlp.nvprof.pyprof.dict"));
  auto kernels = of_kind(trace, ActivityKind::kKernel);
  ASSERT_EQ(kernels.size(), lines.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(trace.pool.get(kernels[i]->long_name), dict_value(lines[i], "kLongName"));
    EXPECT_EQ(trace.pool.get(kernels[i]->short_name), dict_value(lines[i], "kShortName"));
    EXPECT_EQ(kernels[i]->pid, 4242u);
  }
  for (const auto& r : trace.ranges) {
    EXPECT_EQ(r.pid, 4242u);
    EXPECT_EQ(r.tid, 4242u);
  }
  EXPECT_EQ(trace.pool.get(trace.api_calls[0].name), "cudaLaunchKernel");
}

TEST(NvprofReader, SyntheticX1000ReadsQuickly) {
  fs::path file = synthetic("synthetic_mlp_x1000.nvprof.sql");
  REQUIRE_FILE(file);
  auto begin = std::chrono::steady_clock::now();
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(file, trace, error)) << error;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::printf("[   INFO   ] synthetic_mlp_x1000.nvprof.sql read in %.1f ms\n", ms);
  EXPECT_EQ(trace.stats.kernels, 7000);
  EXPECT_EQ(trace.stats.api_calls, 7000);
  EXPECT_EQ(trace.stats.ranges, 17000);
  EXPECT_EQ(trace.stats.rows_skipped, 0);
  EXPECT_LT(ms, 2000.0);  // ~100x headroom: sanitizer and debug builds run this too
}

// ---------------------------------------------------------------------------------------------
// Hostile and unusual databases, built here.

class TempDb {
 public:
  explicit TempDb(const std::string& sql) {
    static int counter = 0;
    path_ = fs::temp_directory_path() / ("pyprof_nvprof_test_" + std::to_string(getpid()) + "_" +
                                         std::to_string(++counter) + ".sql");
    fs::remove(path_);
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      ADD_FAILURE() << "test database: " << (message ? message : "?");
    }
    sqlite3_free(message);
    sqlite3_close(db);
  }
  ~TempDb() { fs::remove(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// An objectId blob: CUpti_ActivityObjectKindId.pt {uint32 pid, uint32 tid} + 4 pad bytes.
std::string object_id(uint32_t pid, uint32_t tid) {
  char hex[40];
  auto le = [](uint32_t v) {
    return ((v & 0xFF) << 24) | ((v >> 8 & 0xFF) << 16) | ((v >> 16 & 0xFF) << 8) | (v >> 24);
  };
  std::snprintf(hex, sizeof hex, "X'%08X%08X00000000'", le(pid), le(tid));
  return hex;
}

const char* kStrings =
    "CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL);"
    "INSERT INTO StringTable VALUES (0, '-- null --'), (1, 'outer'), (2, 'inner'), "
    "(3, 'mark'), (4, 'my domain'), (5, '_ZN2at6native13reduce_kernelILi512ELi1EEEvi');";
const char* kMarkerTable =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, flags INT, "
    "timestamp INT, id INT, objectKind INT, objectId BLOB, name INT, domain INT);";

std::string marker_row(int flags, int64_t time, int64_t id, const std::string& object,
                       const char* name, int domain = 0) {
  return "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, "
         "name, domain) VALUES (" +
         std::to_string(flags) + ", " + std::to_string(time) + ", " + std::to_string(id) + ", 2, " +
         object + ", " + name + ", " + std::to_string(domain) + ");";
}

TEST(NvprofReader, PairsStartAndEndInAnyRowOrder) {
  std::string obj = object_id(77, 0xDEADBEEF);
  TempDb db(std::string(kStrings) + kMarkerTable +
            marker_row(4, 500, 11, obj, "0") +     // END before its START
            marker_row(2, 100, 10, obj, "1") +     // outer START
            marker_row(2, 200, 11, obj, "2", 4) +  // inner START, domain "my domain"
            marker_row(1, 300, 12, obj, "3") +     // a mark
            marker_row(4, 900, 10, obj, "0"));
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  EXPECT_EQ(trace.stats.ranges, 2);
  EXPECT_EQ(trace.stats.marks, 1);
  EXPECT_EQ(trace.stats.rows_skipped, 0);
  ASSERT_EQ(trace.ranges.size(), 3u);
  std::map<std::string, const RangeRecord*> by_text;
  for (const auto& r : trace.ranges) by_text[std::string(text_of(trace, r))] = &r;
  const RangeRecord& outer = *by_text.at("outer");
  const RangeRecord& inner = *by_text.at("inner");
  const RangeRecord& mark = *by_text.at("mark");
  EXPECT_EQ(outer.start, 100);
  EXPECT_EQ(outer.end, 900);
  EXPECT_EQ(outer.shape, RangeShape::kPushPop);
  EXPECT_EQ(outer.domain, 0u);
  EXPECT_EQ(outer.pid, 77u);
  EXPECT_EQ(outer.tid, 0xDEADBEEFu);
  EXPECT_EQ(inner.start, 200);
  EXPECT_EQ(inner.end, 500);
  EXPECT_EQ(trace.pool.get(inner.domain), "my domain");
  EXPECT_EQ(mark.shape, RangeShape::kMark);
  EXPECT_EQ(mark.start, 300);
  EXPECT_EQ(mark.end, 300);
}

TEST(NvprofReader, StartWithoutEndStaysOpen) {
  std::string obj = object_id(1, 2);
  TempDb db(std::string(kStrings) + kMarkerTable + marker_row(2, 100, 10, obj, "1") +
            marker_row(2, 150, 11, obj, "2") + marker_row(4, 160, 11, obj, "0"));
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  ASSERT_EQ(trace.ranges.size(), 2u);
  EXPECT_EQ(trace.ranges[0].end, kOpenEnd);
  EXPECT_EQ(trace.ranges[1].end, 160);
  EXPECT_EQ(trace.stats.ranges_unclosed, 1);
  EXPECT_EQ(trace.stats.rows_skipped, 0);
}

TEST(NvprofReader, EndWithoutStartIsSkippedAndCounted) {
  std::string obj = object_id(1, 2);
  TempDb db(std::string(kStrings) + kMarkerTable + marker_row(4, 100, 10, obj, "0") +
            marker_row(2, 150, 11, obj, "2") + marker_row(4, 160, 11, obj, "0") +
            marker_row(4, 170, 11, obj, "0"));  // a second END for id 11
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  ASSERT_EQ(trace.ranges.size(), 1u);
  EXPECT_EQ(trace.ranges[0].end, 160);
  EXPECT_EQ(trace.stats.rows_skipped, 2);
  EXPECT_EQ(warnings_of(trace, "marker END without START"), 2);
}

TEST(NvprofReader, NullsInMarkerRows) {
  std::string obj = object_id(1, 2);
  TempDb db(std::string(kStrings) + kMarkerTable +
            marker_row(2, 100, 10, obj, "NULL") +  // no message: an empty range
            marker_row(4, 110, 10, obj, "0") +
            marker_row(2, 120, 11, obj, "99") +  // message id not in StringTable
            marker_row(4, 130, 11, obj, "0") +
            "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id) VALUES (2, NULL, 12);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id) VALUES (NULL, 1, 13);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id) VALUES (4, 1, NULL);" +
            marker_row(8, 140, 14, obj, "0") +  // NVTX sync marker: not a range
            "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, "
            "name, domain) VALUES (2, 150, 15, NULL, " +
            obj + ", 1, NULL);" + marker_row(4, 160, 15, obj, "0"));
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  ASSERT_EQ(trace.ranges.size(), 3u);
  EXPECT_EQ(text_of(trace, trace.ranges[0]), "");
  EXPECT_EQ(trace.ranges[0].end, 110);
  EXPECT_EQ(text_of(trace, trace.ranges[1]), "");
  EXPECT_EQ(warnings_of(trace, "missing string"), 1);
  EXPECT_EQ(text_of(trace, trace.ranges[2]), "outer");
  EXPECT_EQ(trace.ranges[2].pid, 1u);  // NULL objectKind: read as a thread
  EXPECT_EQ(trace.ranges[2].domain, 0u);
  EXPECT_EQ(trace.stats.rows_skipped, 3);
  EXPECT_EQ(warnings_of(trace, "marker without flags/time/id"), 3);
  EXPECT_EQ(warnings_of(trace, "unsupported marker rows"), 1);
}

TEST(NvprofReader, MalformedObjectIdIsSkippedAndCounted) {
  std::string obj = object_id(1, 2);
  TempDb db(std::string(kStrings) + kMarkerTable + marker_row(2, 100, 10, "X'01020304'", "1") +
            marker_row(4, 110, 10, obj, "0") + marker_row(2, 120, 11, "X''", "1") +
            marker_row(4, 130, 11, obj, "0") + marker_row(2, 140, 12, "NULL", "1") +
            marker_row(4, 150, 12, obj, "0") +
            marker_row(2, 160, 13, "X'" + std::string(200, 'A') + "'", "1") +
            marker_row(1, 170, 14, "'text'", "3") +  // a mark with a text objectId
            marker_row(2, 180, 15, obj, "2") + marker_row(4, 190, 15, "X'00'", "0"));
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  // Only the last range is good (an END's objectId is not used).
  ASSERT_EQ(trace.ranges.size(), 1u);
  EXPECT_EQ(text_of(trace, trace.ranges[0]), "inner");
  EXPECT_EQ(trace.ranges[0].end, 190);
  // Each bad row counts once; the ENDs of skipped STARTs are not counted again.
  EXPECT_EQ(trace.stats.rows_skipped, 5);
  EXPECT_EQ(warnings_of(trace, "marker with malformed objectId"), 5);
  EXPECT_EQ(warnings_of(trace, "marker END without START"), 0);
}

TEST(NvprofReader, MissingTablesReadAsEmpty) {
  {
    TempDb db(kStrings);
    Trace trace;
    std::string error;
    ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
    EXPECT_EQ(trace.format, "nvprof");
    EXPECT_TRUE(trace.activities.empty());
    EXPECT_TRUE(trace.api_calls.empty());
    EXPECT_TRUE(trace.ranges.empty());
    EXPECT_EQ(warnings_of(trace, "no kernel table"), 1);
  }
  {
    // Not even a StringTable: markers and kernels whose strings are missing.
    TempDb db(std::string(kMarkerTable) + marker_row(2, 1, 1, object_id(1, 1), "1") +
              marker_row(4, 2, 1, object_id(1, 1), "0") +
              "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INT, end INT, name INT);"
              "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5, 6, 3);");
    Trace trace;
    std::string error;
    ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
    ASSERT_EQ(trace.ranges.size(), 1u);
    ASSERT_EQ(trace.activities.size(), 1u);
    EXPECT_EQ(trace.activities[0].long_name, 0u);
    EXPECT_EQ(trace.activities[0].correlation_id, -1);
    EXPECT_EQ(trace.activities[0].pid, 0u);
    EXPECT_EQ(warnings_of(trace, "missing string"), 2);
    EXPECT_EQ(warnings_of(trace, "no kernel table"), 0);
  }
}

TEST(NvprofReader, MissingEssentialColumnFails) {
  const std::pair<const char*, const char*> cases[] = {
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start INT, name INT);",
       "nvprof table CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL has no column 'end'"},
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(cbid INT, start INT, correlationId INT);",
       "nvprof table CUPTI_ACTIVITY_KIND_RUNTIME has no column 'end'"},
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(\"end\" INT);",
       "nvprof table CUPTI_ACTIVITY_KIND_MEMCPY has no column 'start'"},
      {"CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(flags INT, id INT);",
       "nvprof table CUPTI_ACTIVITY_KIND_MARKER has no column 'timestamp'"},
      {"CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, text TEXT);",
       "nvprof table StringTable has no column 'value'"},
  };
  for (const auto& [sql, message] : cases) {
    TempDb db(sql);
    Trace trace;
    std::string error;
    EXPECT_FALSE(read_db(db.path(), trace, error)) << sql;
    EXPECT_EQ(error, message);
  }
}

TEST(NvprofReader, KernelsApiCallsAndCopiesFromEveryTable) {
  TempDb db(std::string(kStrings) +
            "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT, "
            "start INT, end INT, processId INT, threadId INT, correlationId INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 10, 20, 100, -354666688, 1),"
            "(2, 9999, 30, 40, 100, 5, 0), (3, NULL, NULL, 50, 100, 5, 7);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER(_id_ INTEGER PRIMARY KEY, cbid INT, "
            "start INT, end INT, processId INT, threadId INT, correlationId INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (1, 307, 11, 19, 200, 6, 2),"
            "(2, 8888, 12, 13, 200, 6, 3), (3, 45, 14, 15, 200, 6, 4);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start INT, end INT, deviceId INT, "
            "streamId INT, correlationId INT, name INT, gridX INT, blockX INT, "
            "registersPerThread INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (100, 200, 0, 7, 1, 5, 4, "
            "128, 32), (300, NULL, 0, 7, 1, 5, 4, 128, 32), (400, 500, NULL, NULL, NULL, NULL, "
            "NULL, NULL, NULL);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INT, end INT, correlationId INT, "
            "name INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (600, 700, 2, 5);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(copyKind INT, srcKind INT, dstKind INT, "
            "bytes INT, start INT, end INT, correlationId INT, runtimeCorrelationId INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1, 1, 3, 64, 800, 900, 55, 4),"
            "(10, 0, 99, NULL, 901, 902, NULL, NULL);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(value INT, bytes INT, start INT, end INT, "
            "correlationId INT, memoryKind INT);"
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (255, 32, 1000, 1001, 3, 2), "
            "(0, 8, 1002, NULL, 4, 2);");
  Trace trace;
  std::string error;
  ASSERT_TRUE(read_db(db.path(), trace, error)) << error;
  ASSERT_EQ(trace.api_calls.size(), 5u);
  EXPECT_EQ(trace.pool.get(trace.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(trace.api_calls[0].tid, 3940300608u);
  EXPECT_EQ(trace.pool.get(trace.api_calls[1].name), "cbid:9999");
  EXPECT_EQ(trace.pool.get(trace.api_calls[2].name), "cuLaunchKernel");
  EXPECT_EQ(trace.pool.get(trace.api_calls[3].name), "driver cbid:8888");
  EXPECT_EQ(trace.pool.get(trace.api_calls[4].name), "cuMemcpyDtoH");
  EXPECT_EQ(warnings_of(trace, "API call without start/end"), 1);
  EXPECT_EQ(warnings_of(trace, "memset without start/end"), 1);

  auto kernels = of_kind(trace, ActivityKind::kKernel);
  ASSERT_EQ(kernels.size(), 3u);  // one CONCURRENT_KERNEL row has no end
  EXPECT_EQ(trace.stats.kernels, 3);
  EXPECT_EQ(trace.pool.get(kernels[0]->long_name), "void at::native::reduce_kernel<512, 1>(int)");
  EXPECT_EQ(trace.pool.get(kernels[0]->short_name), "reduce_kernel");
  EXPECT_EQ(kernels[0]->pid, 100u);
  EXPECT_EQ(kernels[0]->grid[0], 4);
  EXPECT_EQ(kernels[0]->grid[1], 0);
  EXPECT_EQ(kernels[0]->block[0], 128);
  EXPECT_EQ(kernels[0]->registers, 32);
  EXPECT_EQ(kernels[0]->static_shared, -1);
  // A row of NULLs beyond start/end: defaults, kept.
  EXPECT_EQ(kernels[1]->device, -1);
  EXPECT_EQ(kernels[1]->stream, -1);
  EXPECT_EQ(kernels[1]->correlation_id, -1);
  EXPECT_EQ(kernels[1]->long_name, 0u);
  EXPECT_EQ(warnings_of(trace, "kernel without name"), 1);
  // The KERNEL table's row, launched by a driver call of another process.
  EXPECT_EQ(kernels[2]->start, 600);
  EXPECT_EQ(kernels[2]->pid, 200u);
  EXPECT_EQ(trace.stats.rows_skipped, 3);  // a kernel, an API call and a memset without an end

  auto copies = of_kind(trace, ActivityKind::kMemcpy);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]->copy_kind, 1);
  EXPECT_EQ(copies[0]->src_kind, 0);        // CUPTI PAGEABLE 1 -> nsys 0
  EXPECT_EQ(copies[0]->dst_kind, 2);        // CUPTI DEVICE 3 -> nsys 2
  EXPECT_EQ(copies[0]->correlation_id, 4);  // 55 has no API call; runtimeCorrelationId does
  EXPECT_EQ(copies[0]->pid, 200u);
  EXPECT_EQ(copies[1]->copy_kind, 10);
  EXPECT_EQ(copies[1]->src_kind, 7);  // CUPTI UNKNOWN 0 -> nsys 7
  EXPECT_EQ(copies[1]->dst_kind, 7);  // out of range
  EXPECT_EQ(copies[1]->bytes, -1);
  auto sets = of_kind(trace, ActivityKind::kMemset);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0]->memset_value, 255);
  EXPECT_EQ(sets[0]->bytes, 32);
  EXPECT_EQ(sets[0]->dst_kind, 1);  // CUPTI PINNED 2 -> nsys 1
  EXPECT_EQ(sets[0]->pid, 200u);
}

// A damaged file either reads or fails with SQLite's reason; it never crashes. Damage in the
// schema pages fails at open, damage in table pages while reading.
TEST(NvprofReader, CorruptFileFailsCleanly) {
  REQUIRE_FILE(real_nvprof());
  std::ifstream in(real_nvprof(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 500000u);
  fs::path path =
      fs::temp_directory_path() / ("pyprof_nvprof_corrupt_" + std::to_string(getpid()) + ".sql");
  int read_failures = 0;
  for (size_t offset : {size_t{64 * 1024}, bytes.size() / 3, bytes.size() / 2, size_t{0}}) {
    std::string damaged = bytes;
    if (offset == 0) {
      damaged.resize(bytes.size() / 2);  // truncated
    } else {
      for (size_t i = offset; i < offset + 64 * 1024; ++i) {
        damaged[i] = static_cast<char>(i * 131 % 251);
      }
    }
    std::ofstream(path, std::ios::binary) << damaged;
    SqliteDb db;
    std::string error;
    if (!db.open(path.string(), error)) {
      EXPECT_NE(error.find("malformed"), std::string::npos) << error;
      continue;
    }
    NvprofReader reader(db);
    Trace trace;
    if (!reader.read(trace, error)) {
      ++read_failures;
      EXPECT_EQ(error.rfind("error reading nvprof table ", 0), 0u) << error;
      EXPECT_NE(error.find("malformed"), std::string::npos) << error;
    }
  }
  fs::remove(path);
  EXPECT_GT(read_failures, 0);
}

}  // namespace
}  // namespace pyprof::parse
