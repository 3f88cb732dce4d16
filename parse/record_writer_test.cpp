// The net.dict lines parse writes (docs/formats.md §3) for traces built in memory: the header,
// GPU and CPU records in the full and the compact form (args lines written once, before their
// first use), backward records, rank, sync, comm and range lines, escaping, and a failed write.
// The expected lines are written out by hand from the trace each test builds.
#include "parse/record_writer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "parse/iterations.h"
#include "parse/trace_builder_test_util.h"

namespace pyprof::parse {
namespace {

struct WriteOptions {
  bool full = false;
  bool ranges = false;
  const Iterations* iterations = nullptr;
};

// Correlates `trace` and writes its net.dict; returns its lines.
std::vector<std::string> write_dict(Trace& trace, const WriteOptions& options = {}) {
  const Correlation corr = correlate(trace);
  PoolTextReader reader;
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  if (file == nullptr) return {};
  {
    RecordWriter writer(file, trace, corr, reader);
    writer.set_full_records(options.full);
    writer.set_write_ranges(options.ranges);
    writer.set_iterations(options.iterations);
    EXPECT_TRUE(writer.write("net.sqlite"));
    EXPECT_EQ(writer.args_unavailable(), 0);
  }
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  std::fclose(file);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "the last line has no newline";
    if (end == std::string::npos) break;
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The compact form with every reference replaced by its value and the args lines dropped:
// the full form's lines (docs/formats.md §3), header aside.
std::vector<std::string> expand_args(const std::vector<std::string>& compact) {
  std::vector<std::string> values;
  std::vector<std::string> out;
  const std::string definition = R"({"kind":"args","id":)";
  for (const std::string& line : compact) {
    if (line.starts_with(definition)) {
      const size_t comma = line.find(',', definition.size());
      EXPECT_EQ(std::stoul(line.substr(definition.size(), comma - definition.size())),
                values.size());  // ids count up from 0, each defined once
      const size_t value = line.find(R"("args":)", comma) + 7;
      values.push_back(line.substr(value, line.size() - 1 - value));
      continue;
    }
    std::string expanded = line;
    for (const char* key : {"bwd_args", "args"}) {
      const std::string ref = std::string("\"") + key + "_ref\":";
      size_t at = 0;
      while ((at = expanded.find(ref, at)) != std::string::npos) {
        size_t digits = at + ref.size();
        size_t end = digits;
        while (end < expanded.size() && std::isdigit(static_cast<unsigned char>(expanded[end]))) {
          ++end;
        }
        const size_t id = std::stoul(expanded.substr(digits, end - digits));
        EXPECT_LT(id, values.size()) << "a reference before its definition";
        if (id >= values.size()) return out;
        expanded.replace(at, end - at, std::string("\"") + key + "\":" + values[id]);
      }
    }
    out.push_back(expanded);
  }
  return out;
}

constexpr const char* kAddmm =
    R"({"v":1,"op":"aten::addmm","id":57,"seq":10,"tid":0,"scope":"function",)"
    R"("stack":"train.py:41","args":{"self":{"shape":[256]},"beta":1}})";

// An MLP layer's forward kernel in a module and a user range, as pyprof records it.
TraceBuilder forward_layer() {
  TraceBuilder b;
  b.trace.format = "pyprof";
  b.trace.version = "0.1.0";
  b.range("## forward ##", 0, 1000);
  b.marker(R"({"v":1,"module":"MLP.fc1","type":"Linear"})", 100, 500);
  b.marker(kAddmm, 110, 400);
  const int32_t k = b.kernel(120, 5120334, 1, "ampere_sgemm", 4128);
  GpuActivity& a = b.trace.activities[k];
  a.device = 0;
  a.context = 1;
  a.stream = 7;
  a.grid[0] = 4;
  a.grid[1] = a.grid[2] = 1;
  a.block[0] = 128;
  a.block[1] = a.block[2] = 1;
  a.registers = 86;
  a.static_shared = 16384;
  a.dynamic_shared = 0;
  return b;
}

TEST(RecordWriter, FullFormKernelRecord) {
  TraceBuilder b = forward_layer();
  const std::vector<std::string> lines = write_dict(b.trace, {.full = true});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            R"({"pyprof_dict":1,"source":"net.sqlite","format":"pyprof","version":"0.1.0",)"
            R"("records":"gpu"})");
  EXPECT_EQ(lines[1],
            R"({"kind":"kernel","name":"ampere_sgemm","long_name":"ampere_sgemm","device":0,)"
            R"("context":1,"stream":7,"grid":[4,1,1],"block":[128,1,1],"registers":86,)"
            R"("shared_static":16384,"shared_dynamic":0,"start":5120334,"duration":4128,)"
            R"("correlation":1,"pid":1,"tid":1,"launch":{"api":"cudaLaunchKernel","start":120,)"
            R"("duration":5},"op":"aten::addmm","dir":"fprop","op_id":57,"dialect":"pyprof",)"
            R"("seq":10,"sub":0,"instance":3,"args":{"self":{"shape":[256]},"beta":1},)"
            R"("stack":"train.py:41","module":"MLP.fc1","module_type":"Linear",)"
            R"("user_ranges":["## forward ##"]})");
}

TEST(RecordWriter, CompactFormDefinesArgsOnceBeforeTheirFirstUse) {
  TraceBuilder b = forward_layer();
  const std::vector<std::string> lines = write_dict(b.trace);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            R"({"pyprof_dict":2,"source":"net.sqlite","format":"pyprof","version":"0.1.0",)"
            R"("records":"gpu"})");
  EXPECT_EQ(lines[1], R"({"kind":"args","id":0,"args":{"self":{"shape":[256]},"beta":1}})");
  EXPECT_NE(lines[2].find(R"("instance":3,"args_ref":0,"stack":"train.py:41",)"), std::string::npos)
      << lines[2];
  EXPECT_EQ(lines[2].find(R"("args":)"), std::string::npos) << lines[2];
}

// Three ops, the first two with the same arguments, in a trace whose args are interned in the
// pool or, past the trace's budget, fetched again from the message (TraceReader::fetch_text).
TEST(RecordWriter, CompactFormSharesArgsAndExpandsToTheFullForm) {
  for (const bool interned : {true, false}) {
    SCOPED_TRACE(interned ? "args in the pool" : "args fetched from the message");
    auto build = [&] {
      TraceBuilder b;
      if (!interned) b.trace.interned_args_budget = 0;
      const char* a = R"({"v":1,"op":"aten::relu","id":1,"seq":-1,"tid":0,"args":{"self":[8]}})";
      const char* same = R"({"v":1,"op":"aten::relu","id":2,"seq":-1,"tid":0,"args":{"self":[8]}})";
      const char* other =
          R"({"v":1,"op":"aten::relu","id":3,"seq":-1,"tid":0,"args":{"self":[9]}})";
      b.marker(a, 0, 10);
      b.kernel(5, 100);
      b.marker(same, 20, 30);
      b.kernel(25, 200);
      b.marker(other, 40, 50);
      b.kernel(45, 300);
      return b;
    };
    TraceBuilder compact_trace = build();
    TraceBuilder full_trace = build();
    const std::vector<std::string> compact = write_dict(compact_trace.trace);
    const std::vector<std::string> full = write_dict(full_trace.trace, {.full = true});
    ASSERT_EQ(compact.size(), 6u);
    EXPECT_EQ(compact[1], R"({"kind":"args","id":0,"args":{"self":[8]}})");
    EXPECT_NE(compact[2].find(R"("op_id":1,)"), std::string::npos);
    EXPECT_NE(compact[2].find(R"("args_ref":0)"), std::string::npos);
    EXPECT_NE(compact[3].find(R"("op_id":2,)"), std::string::npos);
    EXPECT_NE(compact[3].find(R"("args_ref":0)"), std::string::npos);
    EXPECT_EQ(compact[4], R"({"kind":"args","id":1,"args":{"self":[9]}})");
    EXPECT_NE(compact[5].find(R"("args_ref":1)"), std::string::npos);
    ASSERT_EQ(full.size(), 4u);
    EXPECT_NE(full[1].find(R"("args":{"self":[8]})"), std::string::npos);
    std::vector<std::string> expanded = expand_args(compact);
    ASSERT_EQ(expanded.size(), full.size());
    EXPECT_EQ(expanded[0],
              R"({"pyprof_dict":2,"source":"net.sqlite","format":"pyprof","records":"gpu"})");
    EXPECT_EQ(full[0],
              R"({"pyprof_dict":1,"source":"net.sqlite","format":"pyprof","records":"gpu"})");
    for (size_t i = 1; i < full.size(); ++i) EXPECT_EQ(expanded[i], full[i]);
  }
}

// A forward op, its backward node on the autograd thread and the op run inside it, each with
// a kernel.
TraceBuilder forward_and_backward() {
  TraceBuilder b;
  b.marker(R"({"v":1,"module":"MLP.fc1","type":"Linear"})", 0, 100);
  b.marker(R"({"v":1,"op":"aten::addmm","id":57,"seq":10,"tid":0,"args":{"self":[32]}})", 10, 90);
  b.kernel(20, 1000);
  b.marker(R"({"v":1,"op":"AddmmBackward0","id":130,"seq":10,"tid":1,"fwd_tid":0,)"
           R"("scope":"backward","args":{"0":[32,256]}})",
           200, 300, /*tid=*/2);
  b.marker(R"({"v":1,"op":"aten::mm","id":131,"seq":-1,"tid":1,"args":{"self":[32,256]}})", 210,
           250, /*tid=*/2);
  b.kernel(220, 2000, /*tid=*/2, "sgemm_nn", 100);
  return b;
}

TEST(RecordWriter, BackwardRecordNamesItsNodeAndTheForwardOp) {
  TraceBuilder b = forward_and_backward();
  const std::vector<std::string> lines = write_dict(b.trace);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1], R"({"kind":"args","id":0,"args":{"self":[32]}})");
  EXPECT_EQ(lines[3], R"({"kind":"args","id":1,"args":{"self":[32,256]}})");
  // Ranks: thread 1 holds the module (1) and addmm (2); thread 2 the node (3) and mm (4).
  EXPECT_EQ(lines[4],
            R"({"kind":"kernel","name":"sgemm_nn","long_name":"sgemm_nn","device":-1,)"
            R"("context":-1,"stream":-1,"grid":[0,0,0],"block":[0,0,0],"registers":-1,)"
            R"("shared_static":-1,"shared_dynamic":-1,"start":2000,"duration":100,)"
            R"("correlation":2,"pid":1,"tid":2,"launch":{"api":"cudaLaunchKernel","start":220,)"
            R"("duration":5},"op":"aten::addmm","dir":"bprop","op_id":57,"dialect":"pyprof",)"
            R"("seq":10,"sub":0,"instance":3,"args_ref":0,"module":"MLP.fc1",)"
            R"("module_type":"Linear","bwd_node":"AddmmBackward0","bwd_node_id":130,)"
            R"("paired":true,"fwd_op_id":57,"fwd_instance":2,"bwd_op":"aten::mm",)"
            R"("bwd_op_id":131,"bwd_args_ref":1})");
}

TEST(RecordWriter, RangeLinesCarryParentsAndTheNodesForwardOp) {
  TraceBuilder b = forward_and_backward();
  const std::vector<std::string> lines = write_dict(b.trace, {.ranges = true});
  ASSERT_EQ(lines.size(), 10u);
  // In the trace's own order, after the records; an args value no record used is defined
  // before the first range line that refers to it.
  EXPECT_EQ(lines[5], R"({"kind":"range","range":"module","id":1,"name":"MLP.fc1","start":0,)"
                      R"("duration":100,"pid":1,"tid":1,"dialect":"pyprof","domain":"pyprof",)"
                      R"("detail":"Linear"})");
  EXPECT_EQ(lines[6],
            R"({"kind":"range","range":"op","id":2,"parent":1,"name":"aten::addmm","start":10,)"
            R"("duration":80,"pid":1,"tid":1,"dialect":"pyprof","domain":"pyprof","op_id":57,)"
            R"("seq":10,"rf_tid":0,"args_ref":0})");
  EXPECT_EQ(lines[7], R"({"kind":"args","id":2,"args":{"0":[32,256]}})");
  EXPECT_EQ(lines[8],
            R"({"kind":"range","range":"node","id":3,"name":"AddmmBackward0","start":200,)"
            R"("duration":100,"pid":1,"tid":2,"dialect":"pyprof","domain":"pyprof",)"
            R"("op_id":130,"seq":10,"rf_tid":1,"fwd_tid":0,"args_ref":2,"fwd":2})");
  EXPECT_EQ(lines[9],
            R"({"kind":"range","range":"op","id":4,"parent":3,"name":"aten::mm","start":210,)"
            R"("duration":40,"pid":1,"tid":2,"dialect":"pyprof","domain":"pyprof","op_id":131,)"
            R"("rf_tid":1,"args_ref":1})");
}

TEST(RecordWriter, CpuOnlyOpRecords) {
  TraceBuilder b;
  b.marker(R"({"v":1,"op":"aten::linear","id":5,"seq":3,"tid":0,"args":{"input":[2,4]}})", 0, 100);
  b.marker(R"({"v":1,"op":"aten::addmm","id":6,"seq":3,"tid":0,"args":{"self":[4]}})", 10, 60);
  const std::vector<std::string> lines = write_dict(b.trace, {.full = true, .ranges = true});
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0],
            R"({"pyprof_dict":1,"source":"net.sqlite","format":"pyprof","records":"op"})");
  EXPECT_EQ(lines[1],
            R"({"kind":"op","name":"aten::linear","start":0,"duration":100,"self_duration":50,)"
            R"("pid":1,"tid":1,"id":5,"range":1,"op":"aten::linear","dir":"fprop","op_id":5,)"
            R"("dialect":"pyprof","seq":3,"sub":0,"instance":1,"args":{"input":[2,4]}})");
  EXPECT_EQ(lines[2],
            R"({"kind":"op","name":"aten::addmm","start":10,"duration":50,"self_duration":50,)"
            R"("pid":1,"tid":1,"id":6,"range":2,"parent_id":5,"op":"aten::addmm",)"
            R"("dir":"fprop","op_id":6,"dialect":"pyprof","seq":3,"sub":0,"instance":2,)"
            R"("args":{"self":[4]}})");
}

TEST(RecordWriter, CopiesSetsAndTimesThatRunBackwards) {
  TraceBuilder b;
  const int32_t copy = b.kernel(10, 100);
  GpuActivity& c = b.trace.activities[copy];
  c.kind = ActivityKind::kMemcpy;
  c.copy_kind = 1;  // HtoD
  c.src_kind = 0;   // pageable
  c.dst_kind = 2;   // device
  c.bytes = 4096;
  const int32_t set = b.activity(-1, 200, 210);  // no launch recorded
  GpuActivity& s = b.trace.activities[set];
  s.kind = ActivityKind::kMemset;
  s.bytes = 64;
  s.memset_value = 255;
  s.dst_kind = 2;
  const int32_t reversed = b.kernel(20, 300);
  b.trace.activities[reversed].end = 290;
  b.trace.api_calls.back().end = 18;
  const std::vector<std::string> lines = write_dict(b.trace);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1],
            R"({"kind":"memcpy","name":"[CUDA memcpy HtoD]","bytes":4096,"copy_kind":"HtoD",)"
            R"("src_kind":"pageable","dst_kind":"device","device":-1,"context":-1,"stream":-1,)"
            R"("start":100,"duration":10,"correlation":1,"pid":1,"tid":1,"launch":)"
            R"({"api":"cudaLaunchKernel","start":10,"duration":5},"op":null,"dir":null})");
  EXPECT_EQ(lines[2], R"({"kind":"memset","name":"[CUDA memset]","bytes":64,"value":255,)"
                      R"("mem_kind":"device","device":-1,"context":-1,"stream":-1,"start":200,)"
                      R"("duration":10,"correlation":-1,"pid":1,"tid":null,"op":null,"dir":null})");
  EXPECT_NE(lines[3].find(R"("start":300,"duration":null,"negative_duration":-10,)"),
            std::string::npos)
      << lines[3];
  EXPECT_NE(lines[3].find(R"("launch":{"api":"cudaLaunchKernel","start":20,"duration":null,)"
                          R"("negative_duration":-2})"),
            std::string::npos)
      << lines[3];
}

TEST(RecordWriter, EveryLineOfARanksProfileCarriesItsRank) {
  for (const bool distributed : {true, false}) {
    TraceBuilder b;
    if (distributed) b.trace.distributed = Trace::Distributed{3, 8, "gloo"};
    b.op("aten::mm", 0, 100);
    b.kernel(10, 1000);
    b.call("cudaDeviceSynchronize", 150, 190);
    b.range("gloo:all_reduce", 200, 260, MarkerKind::kUser, /*tid=*/5);
    const std::vector<std::string> lines = write_dict(b.trace);
    ASSERT_EQ(lines.size(), 4u);
    const std::string rank = distributed ? R"("rank":3,)" : "";
    EXPECT_EQ(lines[0],
              R"({"pyprof_dict":2,"source":"net.sqlite","format":"pyprof","records":"gpu")" +
                  std::string(distributed ? R"(,"rank":3,"world_size":8,"backend":"gloo"})" : "}"));
    EXPECT_NE(lines[1].find(R"("pid":1,)" + rank + R"("tid":1,)"), std::string::npos) << lines[1];
    EXPECT_EQ(lines[2], R"({"kind":"sync","name":"cudaDeviceSynchronize","start":150,)"
                        R"("duration":40,"pid":1,)" +
                            rank + R"("tid":1,"op":null,"dir":null})");
    EXPECT_EQ(lines[3], R"({"kind":"comm","name":"gloo:all_reduce","start":200,"duration":60,)"
                        R"("pid":1,)" +
                            rank + R"("tid":5})");
    if (!distributed) {
      for (const std::string& line : lines) EXPECT_EQ(line.find("rank"), std::string::npos);
    }
  }
}

TEST(RecordWriter, UserRangesAreEscapedAndNamedByTheirDomain) {
  TraceBuilder b;
  b.range(std::string_view("a\"b\\c\nd\x01"
                           "e\xff",
                           10),
          0, 100);
  b.marker("phase 1", 10, 90, 1, "my.domain");
  b.marker("\xc3\xa9t\xc3\xa9", 20, 80, 1, "");  // valid UTF-8 stays as it is
  b.kernel(50, 500);
  const std::vector<std::string> lines = write_dict(b.trace);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find(R"("op":null,"dir":null,"user_ranges":["a\"b\\c\nd\u0001e\ufffd",)"
                          R"("my.domain:phase 1","été"]})"),
            std::string::npos)
      << lines[1];
}

TEST(RecordWriter, HeaderStatesTheIterationsAndRecordsTheirStep) {
  TraceBuilder b;
  b.range("ProfilerStep#1", 0, 100);
  b.range("ProfilerStep#2", 100, 200);
  b.kernel(50, 1000);
  b.kernel(150, 1100);
  b.kernel(250, 1200);  // launched after the last step: none
  Correlation corr = correlate(b.trace);
  const Iterations it = detect_iterations(b.trace, corr, "");
  const std::vector<std::string> lines = write_dict(b.trace, {.iterations = &it});
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], R"({"pyprof_dict":2,"source":"net.sqlite","format":"pyprof","records":"gpu",)"
                      R"("iterations":{"rule":"profiler_step","range":"ProfilerStep#N","count":2,)"
                      R"("steps":[{"index":0,"name":"ProfilerStep#1","start":0,"end":100},)"
                      R"({"index":1,"name":"ProfilerStep#2","start":100,"end":200}]}})");
  EXPECT_NE(lines[1].find(R"("duration":5},"step":0,"op":null)"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(R"("duration":5},"step":1,"op":null)"), std::string::npos) << lines[2];
  EXPECT_EQ(lines[3].find(R"("step")"), std::string::npos) << lines[3];
}

TEST(RecordWriter, AFailedWriteIsReportedWithItsErrno) {
  std::FILE* full = std::fopen("/dev/full", "w");
  if (full == nullptr) GTEST_SKIP() << "no /dev/full";
  TraceBuilder b = forward_layer();
  const Correlation corr = correlate(b.trace);
  PoolTextReader reader;
  bool ok = true;
  int error = 0;
  {
    RecordWriter writer(full, b.trace, corr, reader);
    ok = writer.write("net.sqlite");
    error = errno;
  }
  std::fclose(full);
  EXPECT_FALSE(ok);
  EXPECT_EQ(error, ENOSPC);
}

TEST(RecordWriter, KindNamesReadBackAsTheyAreWritten) {
  for (uint8_t kind = 0; kind < 14; ++kind) {
    EXPECT_EQ(copy_kind_of_name(copy_kind_name(kind)), kind);
  }
  EXPECT_EQ(copy_kind_name(8), "DtoD");
  EXPECT_EQ(copy_kind_name(200), "unknown");
  for (uint8_t kind = 0; kind < 8; ++kind) EXPECT_EQ(mem_kind_of_name(mem_kind_name(kind)), kind);
  EXPECT_EQ(mem_kind_name(1), "pinned");
  EXPECT_EQ(mem_kind_of_name("nope"), -1);
  for (Dialect d : {Dialect::kPyprof, Dialect::kEmitNvtx, Dialect::kLegacyPyprof, Dialect::kKineto,
                    Dialect::kUser}) {
    EXPECT_EQ(dialect_of_name(dialect_name(d)), d);
  }
  EXPECT_EQ(range_kind_name(MarkerKind::kBackwardNode), "node");
  EXPECT_EQ(range_kind_name(MarkerKind::kSettings), "user");
}

}  // namespace
}  // namespace pyprof::parse
