// Tests of the torch.profiler (Kineto) reader: its text helpers (times, dtypes, positional args)
// and KinetoReader::read on small in-memory traces. Events are copied from real traces (torch
// 2.13 CPU record_shapes / with_stack runs, HTA's A100 sample traces) and trimmed; the expected
// values are worked out by hand from them.
#include "parse/kineto_reader.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof::parse {
namespace {

using namespace std::literals;

// ---- microseconds_to_ns -----------------------------------------------------------------------

int64_t ns_of(std::string_view us) {
  int64_t ns = -777;
  EXPECT_TRUE(KinetoReader::microseconds_to_ns(us, ns)) << "\"" << us << "\"";
  return ns;
}

bool converts(std::string_view us) {
  int64_t ns = 0;
  return KinetoReader::microseconds_to_ns(us, ns);
}

TEST(KinetoTimes, IntegersAndUpToThreeDecimalsAreExact) {
  EXPECT_EQ(ns_of("0"), 0);
  EXPECT_EQ(ns_of("1"), 1000);
  EXPECT_EQ(ns_of("43425283"), 43425283000);
  EXPECT_EQ(ns_of("1695835542514261"), 1695835542514261000);  // HTA's absolute µs
  EXPECT_EQ(ns_of("1.5"), 1500);
  EXPECT_EQ(ns_of("12.25"), 12250);
  EXPECT_EQ(ns_of("0.001"), 1);
  EXPECT_EQ(ns_of("4724979519807.007"), 4724979519807007);  // torch 2.13: 3 decimals
  // Through a double this one would come out 1695835535123456768.
  EXPECT_EQ(ns_of("1695835535123456.789"), 1695835535123456789);
  EXPECT_EQ(ns_of(" 7.5 \n"), 7500);
}

TEST(KinetoTimes, MoreDecimalsRoundHalfUpOnTheFourth) {
  EXPECT_EQ(ns_of("1.0004"), 1000);
  EXPECT_EQ(ns_of("1.0005"), 1001);
  EXPECT_EQ(ns_of("1.00049999999"), 1000);
  EXPECT_EQ(ns_of("0.9995"), 1000);
  EXPECT_EQ(ns_of("0.0009999"), 1);
  EXPECT_EQ(ns_of("2.0000000000000000000001"), 2000);
  EXPECT_EQ(ns_of("-1.0005"), -1001);  // half away from zero, as the magnitude rounds
}

TEST(KinetoTimes, ShortFormsAndSigns) {
  EXPECT_EQ(ns_of("0."), 0);
  EXPECT_EQ(ns_of("5."), 5000);
  EXPECT_EQ(ns_of(".5"), 500);
  EXPECT_EQ(ns_of("-1.5"), -1500);
  EXPECT_EQ(ns_of("-.25"), -250);
  EXPECT_EQ(ns_of("-0"), 0);
  EXPECT_EQ(ns_of("000012"), 12000);
}

TEST(KinetoTimes, ExponentForms) {
  EXPECT_EQ(ns_of("1e3"), 1000000);
  EXPECT_EQ(ns_of("1E+2"), 100000);
  EXPECT_EQ(ns_of("1.5e2"), 150000);
  EXPECT_EQ(ns_of("-2e3"), -2000000);
  EXPECT_EQ(ns_of("1e-3"), 1);
  EXPECT_EQ(ns_of("4e-4"), 0);  // 0.4 ns
  EXPECT_EQ(ns_of("6e-4"), 1);  // 0.6 ns
  EXPECT_EQ(ns_of("0e0"), 0);
  EXPECT_EQ(ns_of("1.695835535e15"), 1695835535000000000);
}

TEST(KinetoTimes, TooLargeForInt64Nanoseconds) {
  EXPECT_EQ(ns_of("9223372036854775.807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ns_of("-9223372036854775.807"), -std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(converts("9223372036854775.808"));
  EXPECT_FALSE(converts("9223372036854776"));
  EXPECT_FALSE(converts("99999999999999999999999999"));
  EXPECT_FALSE(converts("-99999999999999999999999999.5"));
  EXPECT_FALSE(converts("1e16"));  // 1e19 ns
  EXPECT_FALSE(converts("-1e16"));
  EXPECT_FALSE(converts("1e300"));
  EXPECT_FALSE(converts("1e400"));  // not even a double
  EXPECT_FALSE(converts("-1e400"));
}

TEST(KinetoTimes, GarbageAndNonFiniteText) {
  const std::string_view kGarbage[] = {
      "",         " ",    "-",        ".",     "-.",    "+",    "e3",   ".e3",
      "abc",      "1a",   "1.2.3",    "0x10",  "1e",    "1e+",  "+1",   "--1",
      "1 2",      "1,5",  "NaN",      "nan",   "-nan",  "inf",  "-inf", "+inf",
      "Infinity", "1e5x", "\xd9\xa1", "1\0"sv, "\"1\"", "null", "true", "[1]"};
  for (std::string_view text : kGarbage) {
    int64_t ns = 12345;
    EXPECT_FALSE(KinetoReader::microseconds_to_ns(text, ns)) << "\"" << text << "\" -> " << ns;
  }
}

// ---- dtype_of_input_type ----------------------------------------------------------------------

TEST(KinetoDtypes, EveryTypeTorch213Writes) {
  // "Input type" of aten::clone on a 2-element tensor of each torch dtype, recorded with torch
  // 2.13.0+cpu (GCC build), and the dtype's Python name (what pyprof's annotator writes).
  const std::pair<std::string_view, std::string_view> kTorch213[] = {
      {"c10::BFloat16", "bfloat16"},
      {"c10::bits16", "bits16"},
      {"c10::bits1x8", "bits1x8"},
      {"c10::bits2x4", "bits2x4"},
      {"c10::bits4x2", "bits4x2"},
      {"c10::bits8", "bits8"},
      {"bool", "bool"},
      {"c10::complex<double>", "complex128"},
      {"c10::complex<c10::Half>", "complex32"},
      {"c10::complex<float>", "complex64"},
      {"c10::Half", "float16"},
      {"float", "float32"},
      {"c10::Float4_e2m1fn_x2", "float4_e2m1fn_x2"},
      {"double", "float64"},
      {"c10::Float8_e4m3fn", "float8_e4m3fn"},
      {"c10::Float8_e4m3fnuz", "float8_e4m3fnuz"},
      {"c10::Float8_e5m2", "float8_e5m2"},
      {"c10::Float8_e5m2fnuz", "float8_e5m2fnuz"},
      {"c10::Float8_e8m0fnu", "float8_e8m0fnu"},
      {"c10::dummy_int1_7_t<1>", "int1"},
      {"short int", "int16"},
      {"c10::dummy_int1_7_t<2>", "int2"},
      {"c10::dummy_int1_7_t<3>", "int3"},
      {"int", "int32"},
      {"c10::dummy_int1_7_t<4>", "int4"},
      {"c10::dummy_int1_7_t<5>", "int5"},
      {"c10::dummy_int1_7_t<6>", "int6"},
      {"long int", "int64"},
      {"c10::dummy_int1_7_t<7>", "int7"},
      {"signed char", "int8"},
      {"c10::qint32", "qint32"},
      {"c10::qint8", "qint8"},
      {"c10::quint2x4", "quint2x4"},
      {"c10::quint4x2", "quint4x2"},
      {"c10::quint8", "quint8"},
      {"c10::dummy_uint1_7_t<1>", "uint1"},
      {"short unsigned int", "uint16"},
      {"c10::dummy_uint1_7_t<2>", "uint2"},
      {"c10::dummy_uint1_7_t<3>", "uint3"},
      {"unsigned int", "uint32"},
      {"c10::dummy_uint1_7_t<4>", "uint4"},
      {"c10::dummy_uint1_7_t<5>", "uint5"},
      {"c10::dummy_uint1_7_t<6>", "uint6"},
      {"long unsigned int", "uint64"},
      {"c10::dummy_uint1_7_t<7>", "uint7"},
      {"unsigned char", "uint8"},
  };
  for (const auto& [type, dtype] : kTorch213) {
    EXPECT_EQ(KinetoReader::dtype_of_input_type(type), dtype) << type;
  }
}

TEST(KinetoDtypes, NonTensorTypesHaveNone) {
  // The other "Input type" values torch 2.13 writes, and near misses.
  for (std::string_view type :
       {"", "Scalar", "ScalarList", "TensorList", "GenericList", "Float", "float32",
        "torch.float32", " float", "float ", "c10::Half ", "c10::dummy_int1_7_t<8>", "c10::bits"}) {
    EXPECT_EQ(KinetoReader::dtype_of_input_type(type), "") << "\"" << type << "\"";
  }
}

// ---- positional_args --------------------------------------------------------------------------

// Parses `json` with simdjson's DOM parser: the args text must always be valid JSON.
bool valid_json(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element element;
  return parser.parse(json).get(element) == simdjson::SUCCESS;
}

// positional_args, checked to be a valid JSON object whose keys are "0", "1", ... in order.
std::string args_of(std::string_view kineto_args) {
  std::string out = KinetoReader::positional_args(kineto_args);
  if (out.empty()) return out;
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  EXPECT_EQ(parser.parse(out).get(object), simdjson::SUCCESS) << out;
  size_t i = 0;
  for (auto [key, value] : object) {
    EXPECT_EQ(key, std::to_string(i)) << out;
    ++i;
  }
  return out;
}

TEST(KinetoArgs, TensorsWithShapeDtypeAndStride) {
  // aten::addmm of a Linear(4, 3) on a (2, 4) input, torch 2.13.
  EXPECT_EQ(
      args_of(
          R"({"External id": 5, "Sequence number": 1, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", "", "", "1", "1"], "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Input Strides": [[1], [4, 1], [1, 4], [], []], "Input Dims": [[3], [2, 4], [4, 3], [], []], "Ev Idx": 4})"),
      R"({"0":{"shape":[3],"dtype":"float32","stride":[1]},"1":{"shape":[2,4],"dtype":"float32","stride":[4,1]},"2":{"shape":[4,3],"dtype":"float32","stride":[1,4]},"3":1,"4":1})");
}

TEST(KinetoArgs, ZeroDimTensors) {
  // x.add(2) with x = torch.zeros(()): the Scalar became a 0-dim long tensor ("wrapped number").
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["", "", "1"], "Input type": ["float", "long int", "Scalar"], "Input Strides": [[], [], []], "Input Dims": [[], [], []]})"),
      R"({"0":{"shape":[],"dtype":"float32","stride":[]},"1":{"shape":[],"dtype":"int64","stride":[]},"2":1})");
}

TEST(KinetoArgs, ScalarsAndScalarLists) {
  // aten::layer_norm(x, [3], None, None, 1e-05, True), torch 2.13.
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["", "[3]", "", "", "1.0000000000000001e-05", "True"], "Input type": ["float", "ScalarList", "", "", "Scalar", "Scalar"], "Input Strides": [[3, 1], [], [], [], [], []], "Input Dims": [[2, 3], [], [], [], [], []]})"),
      R"({"0":{"shape":[2,3],"dtype":"float32","stride":[3,1]},"1":[3],"2":null,"3":null,"4":1e-05,"5":true})");
  // aten::sum(x, [], False, None); aten::as_strided(x, [1, 1], [0, 0], None).
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["", "[]", "False", ""], "Input type": ["float", "ScalarList", "Scalar", ""], "Input Strides": [[3, 1], [], [], []], "Input Dims": [[2, 3], [], [], []]})"),
      R"({"0":{"shape":[2,3],"dtype":"float32","stride":[3,1]},"1":[],"2":false,"3":null})");
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["", "[1, 1]", "[0, 0]", ""], "Input type": ["float", "ScalarList", "ScalarList", ""], "Input Strides": [[], [], [], []], "Input Dims": [[], [], [], []]})"),
      R"({"0":{"shape":[],"dtype":"float32","stride":[]},"1":[1,1],"2":[0,0],"3":null})");
  // aten::fill_(x, 0.) and torch.clamp(x, max=inf): a float, and one JSON cannot hold.
  std::string fill = args_of(
      R"({"Concrete Inputs": ["", "0."], "Input type": ["float", "Scalar"], "Input Strides": [[0, 0], []], "Input Dims": [[1, 1], []]})");
  simdjson::dom::parser parser;
  double zero = -1;
  ASSERT_EQ(parser.parse(fill)["1"].get_double().get(zero), simdjson::SUCCESS) << fill;
  EXPECT_EQ(zero, 0.0);
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["", "", "inf"], "Input type": ["float", "", "Scalar"], "Input Strides": [[3, 1], [], []], "Input Dims": [[2, 3], [], []]})"),
      R"({"0":{"shape":[2,3],"dtype":"float32","stride":[3,1]},"1":null,"2":"inf"})");
  // Scalars that are neither numbers nor booleans stay text; list items likewise.
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["cpu", " -3 ", "nan", "[1.5, x, True]", "a\"b\\c\u0001 "], "Input type": ["Scalar", "Scalar", "Scalar", "ScalarList", "Scalar"], "Input Dims": [[], [], [], [], []]})"),
      R"({"0":"cpu","1":-3,"2":"nan","3":[1.5,"x",true],"4":"a\"b\\c\u0001"})");
  // Numbers past 64-bit integers: simdjson refuses a bare 18446744073709551616, so they keep
  // an exponent.
  EXPECT_EQ(
      args_of(
          R"({"Concrete Inputs": ["18446744073709551615", "-1e19", "1.8446744073709552e+19", "9223372036854775807", "[18446744073709551616]"], "Input type": ["Scalar", "Scalar", "Scalar", "Scalar", "ScalarList"], "Input Dims": [[], [], [], [], []]})"),
      R"({"0":1.8446744073709552e+19,"1":-1e+19,"2":1.8446744073709552e+19,"3":9223372036854775807,"4":[1.8446744073709552e+19]})");
  // A ScalarList whose text is not a bracketed list is kept as text.
  EXPECT_EQ(
      args_of(R"({"Concrete Inputs": ["1, 2"], "Input type": ["ScalarList"], "Input Dims": [[]]})"),
      R"({"0":"1, 2"})");
}

TEST(KinetoArgs, TensorLists) {
  // torch.cat([a, a.t().contiguous().t()], 0), torch 2.13: shapes and strides per tensor.
  EXPECT_EQ(
      args_of(
          R"({"External id": 240, "Concrete Inputs": ["", "0"], "Input type": ["TensorList", "Scalar"], "Input Strides": [[[3, 1], [1, 2]], []], "Input Dims": [[[2, 3], [2, 3]], []]})"),
      R"({"0":[{"shape":[2,3],"stride":[3,1]},{"shape":[2,3],"stride":[1,2]}],"1":0})");
  // Strides missing for the second tensor, or for all.
  EXPECT_EQ(
      args_of(
          R"({"Input type": ["TensorList"], "Input Strides": [[[1]]], "Input Dims": [[[4], [5, 6]]]})"),
      R"({"0":[{"shape":[4],"stride":[1]},{"shape":[5,6]}]})");
  EXPECT_EQ(args_of(R"({"Input type": ["TensorList"], "Input Dims": [[[4], []]]})"),
            R"({"0":[{"shape":[4]},{"shape":[]}]})");
  // An empty list, and a TensorList without its shapes.
  EXPECT_EQ(args_of(R"({"Input type": ["TensorList"], "Input Dims": [[]]})"), R"({"0":[]})");
  EXPECT_EQ(args_of(R"({"Input type": ["TensorList", "GenericList"], "Input Dims": [7, []]})"),
            R"({"0":"<TensorList>","1":"<GenericList>"})");
}

TEST(KinetoArgs, OlderTraces) {
  // Before Concrete Inputs (torch < 2.1) a Scalar's value is not in the trace.
  EXPECT_EQ(
      args_of(R"({"Input type": ["float", "Scalar", "ScalarList"], "Input Dims": [[2], [], []]})"),
      R"({"0":{"shape":[2],"dtype":"float32"},"1":"<Scalar>","2":"<ScalarList>"})");
  // Before Input type (torch 1.x record_shapes): a non-empty shape is a tensor; else unknown.
  EXPECT_EQ(args_of(R"({"Input Dims": [[2, 3], [], [3]]})"),
            R"({"0":{"shape":[2,3]},"1":null,"2":{"shape":[3]}})");
  // Neither list: no args at all.
  EXPECT_EQ(KinetoReader::positional_args(R"({"External id": 3, "Ev Idx": 2})"), "");
  EXPECT_EQ(KinetoReader::positional_args(R"({"Concrete Inputs": ["1"]})"), "");
  EXPECT_EQ(KinetoReader::positional_args("{}"), "");
}

TEST(KinetoArgs, ListsOfUnequalLength) {
  // One entry per input, as many as the longest of Input type and Input Dims.
  std::string out = args_of(
      R"({"Input type": ["float", "Scalar", "float"], "Input Dims": [[4]], "Concrete Inputs": ["", "2"], "Input Strides": [[1], [], [], [], []]})");
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  ASSERT_EQ(parser.parse(out).get(object), simdjson::SUCCESS) << out;
  EXPECT_EQ(object.size(), 3u) << out;
  simdjson::dom::element first, second;
  ASSERT_EQ(object["0"].get(first), simdjson::SUCCESS) << out;
  ASSERT_EQ(object["1"].get(second), simdjson::SUCCESS) << out;
  EXPECT_EQ(simdjson::to_string(first), R"({"shape":[4],"dtype":"float32","stride":[1]})");
  EXPECT_EQ(simdjson::to_string(second), "2");
  std::string_view dtype;
  EXPECT_EQ(object["2"]["dtype"].get(dtype), simdjson::SUCCESS) << out;
  EXPECT_EQ(dtype, "float32");

  out = args_of(R"({"Input type": ["float"], "Input Dims": [[1], [2, 2], [3]]})");
  ASSERT_EQ(parser.parse(out).get(object), simdjson::SUCCESS) << out;
  EXPECT_EQ(object.size(), 3u) << out;
  // Strides longer or shorter than the shape are left out.
  EXPECT_EQ(
      args_of(
          R"({"Input type": ["float", "float"], "Input Dims": [[2, 3], [4]], "Input Strides": [[1], [1, 1]]})"),
      R"({"0":{"shape":[2,3],"dtype":"float32"},"1":{"shape":[4],"dtype":"float32"}})");
}

// Values of the wrong kind anywhere: never throws, output is always valid JSON (or empty).
TEST(KinetoArgs, WrongKindsNeverBreakTheOutput) {
  const std::string_view cases[] = {
      R"({"Input Dims": 5, "Input type": "float"})",
      R"({"Input Dims": [5, "x", null, {"a": 1}], "Input type": [1, null, true, {}]})",
      R"({"Input Dims": [[1.5, -2, 1e400, 99999999999999999999, "3", null, {}]], "Input type": ["float"]})",
      R"({"Input Dims": [[[[[1]]]], [[1, [2]], [3]]], "Input type": ["TensorList", "TensorList"]})",
      R"({"Input Dims": [[1, [2]]], "Input type": ["float"], "Input Strides": [[[1], 2]]})",
      R"({"Input Dims": [[2]], "Input type": ["float"], "Input Strides": 7, "Concrete Inputs": 7})",
      R"({"Input Dims": [[2]], "Input type": ["Scalar"], "Concrete Inputs": [[1], {"x": 2}]})",
      R"({"Input Dims": [[]], "Input type": ["ScalarList"], "Concrete Inputs": ["[[1], [2, [3]]]"]})",
      R"({"Input Dims": [[]], "Input type": ["ScalarList"], "Concrete Inputs": ["[,,]"]})",
      R"({"Input Dims": [[]], "Input type": ["ScalarList"], "Concrete Inputs": ["[1e999, -1e999, nan]"]})",
      R"({"Input Dims": [[]], "Input type": ["ScalarList"], "Concrete Inputs": ["[\"]"]})",
      R"({"Input Dims": [[]], "Input type": ["Scalar"], "Concrete Inputs": ["\u0000\u001f\ud83d\ude00"]})",
      R"({"Input Dims": [[]], "Input type": ["\"quoted\" \\ type"], "Concrete Inputs": [""]})",
      R"({"Input Dims": [[]], "Input type": ["float"], "Input Dims": [[1], [2]]})",
      R"({"Input Dims": [], "Input type": []})",
      R"({"Input Dims": null, "Input type": null, "Input Strides": null, "Concrete Inputs": null})",
      R"({"Input Dims": [[2]], "Input type": ["float"])",
      R"({"Input Dims": [[2]], "Input type": ["float"]} trailing)",
      R"({"Input Dims": [[2]], "Input type": ["float"],})",
      R"({"Input Dims": [[2)",
      R"([1, 2])",
      R"("Input Dims")",
      "",
      "{\"Input type\": [\"\xff\xfe\"], \"Input Dims\": [[1]]}",
  };
  for (std::string_view c : cases) {
    std::string out;
    EXPECT_NO_THROW(out = KinetoReader::positional_args(c)) << c;
    if (!out.empty()) {
      EXPECT_TRUE(valid_json(out)) << c << "\n-> " << out;
    }
  }
  // A list of many inputs keeps every one.
  std::string many = R"({"Input type": [)";
  for (int i = 0; i < 1000; ++i) many += (i ? ",\"Scalar\"" : "\"Scalar\"");
  many += "]}";
  std::string out = KinetoReader::positional_args(many);
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  ASSERT_EQ(parser.parse(out).get(object), simdjson::SUCCESS);
  EXPECT_EQ(object.size(), 1000u);
}

// ---- KinetoReader::read ----------------------------------------------------------------------

struct Read {
  bool ok = false;
  std::string error;
  Trace trace;
  std::unique_ptr<KinetoReader> reader;
};

std::unique_ptr<Read> read_trace(std::string_view json) {
  auto r = std::make_unique<Read>();
  r->reader = std::make_unique<KinetoReader>(memory_source(json));
  r->ok = r->reader->read(r->trace, r->error);
  return r;
}

std::string_view name_of(const Trace& t, uint32_t id) { return t.pool.get(id); }

int index_of(const Trace& t, std::string_view name, int64_t start_ns = -1) {
  for (size_t i = 0; i < t.ranges.size(); ++i) {
    if (name_of(t, t.ranges[i].name) == name && (start_ns < 0 || t.ranges[i].start == start_ns)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

const Trace::WarningGroup* warning(const Trace& t, std::string_view category) {
  for (const auto& w : t.warnings) {
    if (w.category == category) return &w;
  }
  return nullptr;
}

// Two processes launch GPU work; Kineto writes the GPU rows on pid = device, tid = stream.
constexpr std::string_view kGpuTrace = R"json({
  "schemaVersion": 1,
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224, "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024, "warpSize": 32, "numSms": 108, "sharedMemPerBlockOptin": 166912},
    {"id": 1, "name": "AMD Instinct MI250X", "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0, "multiProcessorCount": 110, "clockRate": 1700000}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 2},
  "baseTimeNanoseconds": 1695835535000000000,
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 111, "tid": 111, "ts": 90, "dur": 100, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 111, "tid": 111, "ts": 95, "dur": 2, "args": {"External id": 2, "cbid": 41, "correlation": 5}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 222, "tid": 223, "ts": 100.5, "dur": 20, "args": {"External id": 7, "Sequence number": 4, "Fwd thread id": 0, "Concrete Inputs": ["", "", "1"], "Input type": ["float", "float", "Scalar"], "Input Strides": [[1], [1], []], "Input Dims": [[1024], [1024], []]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 222, "tid": 223, "ts": 105, "dur": 5.25, "args": {"External id": 7, "cbid": 211, "correlation": 42}},
  {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 112.001, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", "pid": 0, "tid": 7, "ts": 112.001, "dur": 3.999, "args": {"External id": 7, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 42, "registers per thread": 16, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2, "grid": [54, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 3}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 96, "dur": 12, "args": {"External id": 2, "device": 0, "context": 1, "stream": 7, "correlation": 5, "bytes": 92928, "memory bandwidth (GB/s)": 7.744}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 1, "tid": "stream 20", "ts": 130, "dur": 4, "args": {"External id": 1473, "device": 1, "context": 1, "correlation": 1473, "bytes": 20736}},
  {"name": "process_name", "ph": "M", "ts": 90, "pid": 111, "tid": 0, "args": {"name": "python3.10"}},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 90}
  ],
  "traceName": "benchmark_result_2869224_1695835535_trace.json"
})json";

TEST(KinetoRead, KernelsJoinTheirLaunchProcess) {
  auto r = read_trace(kGpuTrace);
  ASSERT_TRUE(r->ok) << r->error;
  const Trace& t = r->trace;
  EXPECT_EQ(t.format, "kineto");
  EXPECT_EQ(t.version, "schema 1");
  EXPECT_EQ(t.base_time_ns, 1695835535000000000);
  EXPECT_EQ(t.trace_events, 10);
  EXPECT_FALSE(t.truncated_input);
  EXPECT_EQ(t.stats.kernels, 1);
  EXPECT_EQ(t.stats.memcpys, 1);
  EXPECT_EQ(t.stats.memsets, 1);
  EXPECT_EQ(t.stats.api_calls, 2);
  EXPECT_EQ(t.stats.rows_skipped, 0);
  ASSERT_EQ(t.activities.size(), 3u);

  const GpuActivity& kernel = t.activities[0];
  EXPECT_EQ(kernel.kind, ActivityKind::kKernel);
  EXPECT_EQ(kernel.pid, 222u);  // the launching process, not the first one (111)
  EXPECT_EQ(kernel.device, 0);
  EXPECT_EQ(kernel.context, 1);
  EXPECT_EQ(kernel.stream, 7);
  EXPECT_EQ(kernel.correlation_id, 42);
  EXPECT_EQ(kernel.start, 112001);
  EXPECT_EQ(kernel.end, 116000);
  EXPECT_EQ(kernel.grid[0], 54);
  EXPECT_EQ(kernel.grid[1], 1);
  EXPECT_EQ(kernel.block[0], 128);
  EXPECT_EQ(kernel.registers, 16);
  EXPECT_TRUE(name_of(t, kernel.long_name)
                  .starts_with("void at::native::vectorized_elementwise_kernel<4,"));
  EXPECT_EQ(name_of(t, kernel.short_name), "vectorized_elementwise_kernel");

  const GpuActivity& copy = t.activities[1];
  EXPECT_EQ(copy.kind, ActivityKind::kMemcpy);
  EXPECT_EQ(copy.pid, 111u);
  EXPECT_EQ(copy.copy_kind, 1);  // HtoD
  EXPECT_EQ(copy.src_kind, 0);   // Pageable
  EXPECT_EQ(copy.dst_kind, 2);   // Device
  EXPECT_EQ(copy.bytes, 92928);
  EXPECT_EQ(copy.start, 96000);
  EXPECT_EQ(copy.end, 108000);

  const GpuActivity& memset = t.activities[2];
  EXPECT_EQ(memset.kind, ActivityKind::kMemset);
  EXPECT_EQ(memset.device, 1);
  EXPECT_EQ(memset.stream, 20);  // from "stream 20"
  EXPECT_EQ(memset.dst_kind, 2);
  EXPECT_EQ(memset.bytes, 20736);
  EXPECT_EQ(memset.pid, 111u);  // no launch in the trace: the first API call's process

  ASSERT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(name_of(t, t.api_calls[1].name), "cudaLaunchKernel");
  EXPECT_EQ(t.api_calls[1].pid, 222u);
  EXPECT_EQ(t.api_calls[1].tid, 223u);
  EXPECT_EQ(t.api_calls[1].start, 105000);
  EXPECT_EQ(t.api_calls[1].end, 110250);

  // The op and the step range; the op's args are kept for fetch_text.
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.ranges[0].kind, MarkerKind::kUser);
  EXPECT_EQ(t.ranges[0].seq, -1);
  const RangeRecord& op = t.ranges[1];
  EXPECT_EQ(name_of(t, op.name), "aten::add");
  EXPECT_EQ(op.kind, MarkerKind::kOp);
  EXPECT_EQ(op.dialect, Dialect::kKineto);
  EXPECT_EQ(op.op_id, 7);
  EXPECT_EQ(op.seq, 4);
  EXPECT_EQ(op.start, 100500);
  EXPECT_EQ(op.end, 120500);
  ASSERT_TRUE(op.has_args);
  EXPECT_EQ(
      r->reader->fetch_text(t, op.text).substr(op.args_offset, op.args_length),
      R"({"0":{"shape":[1024],"dtype":"float32","stride":[1]},"1":{"shape":[1024],"dtype":"float32","stride":[1]},"2":1})");

  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].id, 0);
  EXPECT_EQ(t.devices[0].name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(t.devices[0].sm_count, 108);
  EXPECT_EQ(t.devices[0].total_memory, 42297524224);
  EXPECT_EQ(t.devices[0].compute_major, 8);
  EXPECT_EQ(t.devices[0].compute_minor, 0);
  EXPECT_EQ(t.devices[1].sm_count, 110);
  EXPECT_EQ(t.devices[1].clock_hz, 1700000000);
  ASSERT_TRUE(t.distributed.has_value());
  EXPECT_EQ(t.distributed->rank, 3);
  EXPECT_EQ(t.distributed->world_size, 8);
  EXPECT_EQ(t.distributed->backend, "nccl");

  // Every event is counted by what it is.
  std::vector<std::pair<std::string, int64_t>> want = {
      {"ac2g flow", 1},  {"cpu_op", 1},       {"cuda_runtime", 2},
      {"gpu_memcpy", 1}, {"gpu_memset", 1},   {"instant (i)", 1},
      {"kernel", 1},     {"metadata (M)", 1}, {"user_annotation", 1}};
  EXPECT_EQ(t.event_counts, want);
}

// torch 2.13, Linear + ReLU forward and backward on the CPU (record_shapes): the forward ops
// carry "Fwd thread id": 0, the backward nodes the real RecordFunction thread id (1), and the
// fwdbwd flows join each forward op to its node. The backward nodes are moved to another OS
// thread here (as the autograd engine's device threads run them on a GPU).
constexpr std::string_view kFwdBwdTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 10124, "tid": 10124, "ts": 4724979519807.007, "dur": 12395.72, "args": {"External id": 1, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", "", ""], "Input type": ["float", "float", "float"], "Input Strides": [[4, 1], [4, 1], [1]], "Input Dims": [[2, 4], [3, 4], [3]], "Ev Idx": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 10124, "tid": 10124, "ts": 4724979519835.879, "dur": 341.468, "args": {"External id": 2, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[4, 1]], "Input Dims": [[3, 4]], "Ev Idx": 1}},
  {"ph": "s", "id": 4, "pid": 10124, "tid": 10124, "ts": 4724979519835.879, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::transpose", "pid": 10124, "tid": 10124, "ts": 4724979520081.845, "dur": 74.551, "args": {"External id": 3, "Record function id": 0, "Concrete Inputs": ["", "0", "1"], "Input type": ["float", "Scalar", "Scalar"], "Input Strides": [[4, 1], [], []], "Input Dims": [[3, 4], [], []], "Ev Idx": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 10124, "tid": 10124, "ts": 4724979520199.31, "dur": 11999.842, "args": {"External id": 5, "Sequence number": 1, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", "", "", "1", "1"], "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Input Strides": [[1], [4, 1], [1, 4], [], []], "Input Dims": [[3], [2, 4], [4, 3], [], []], "Ev Idx": 4}},
  {"ph": "s", "id": 3, "pid": 10124, "tid": 10124, "ts": 4724979520199.31, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 10124, "tid": 10124, "ts": 4724979532359.671, "dur": 131.876, "args": {"External id": 11, "Sequence number": 2, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[3, 1]], "Input Dims": [[2, 3]], "Ev Idx": 10}},
  {"ph": "s", "id": 2, "pid": 10124, "tid": 10124, "ts": 4724979532359.671, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 10124, "tid": 10124, "ts": 4724979532553.278, "dur": 102.182, "args": {"External id": 13, "Sequence number": 3, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", ""], "Input type": ["float", ""], "Input Strides": [[3, 1], []], "Input Dims": [[2, 3], []], "Ev Idx": 12}},
  {"ph": "s", "id": 1, "pid": 10124, "tid": 10124, "ts": 4724979532553.278, "cat": "fwdbwd", "name": "fwdbwd"},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: SumBackward0", "pid": 10124, "tid": 10200, "ts": 4724979533181.672, "dur": 48.152, "args": {"External id": 21, "Record function id": 0, "Sequence number": 3, "Fwd thread id": 1, "Ev Idx": 20}},
  {"ph": "X", "cat": "cpu_op", "name": "SumBackward0", "pid": 10124, "tid": 10200, "ts": 4724979533183.575, "dur": 40.55, "args": {"External id": 22, "Sequence number": 3, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[]], "Input Dims": [[]], "Ev Idx": 21}},
  {"ph": "f", "id": 1, "pid": 10124, "tid": 10200, "ts": 4724979533183.575, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "ReluBackward0", "pid": 10124, "tid": 10200, "ts": 4724979533235.472, "dur": 46.139, "args": {"External id": 26, "Sequence number": 2, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[0, 0]], "Input Dims": [[2, 3]], "Ev Idx": 25}},
  {"ph": "f", "id": 2, "pid": 10124, "tid": 10200, "ts": 4724979533235.472, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 10124, "tid": 10200, "ts": 4724979533291.175, "dur": 78.537, "args": {"External id": 29, "Sequence number": 1, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[3, 1]], "Input Dims": [[2, 3]], "Ev Idx": 28}},
  {"ph": "f", "id": 3, "pid": 10124, "tid": 10200, "ts": 4724979533291.175, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 10124, "tid": 10200, "ts": 4724979533434.648, "dur": 4.637, "args": {"External id": 47, "Sequence number": 0, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[1, 4]], "Input Dims": [[4, 3]], "Ev Idx": 46}},
  {"ph": "f", "id": 4, "pid": 10124, "tid": 10200, "ts": 4724979533434.648, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 10124, "tid": 10200, "ts": 4724979533443.862, "dur": 1.712, "args": {"External id": 52, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[4, 1]], "Input Dims": [[3, 4]], "Ev Idx": 51}}
]})json";

TEST(KinetoRead, FwdBwdFlowsNameTheForwardThread) {
  auto r = read_trace(kFwdBwdTrace);
  ASSERT_TRUE(r->ok) << r->error;
  const Trace& t = r->trace;
  EXPECT_TRUE(t.warnings.empty()) << t.warnings[0].category;
  // Forward ops with a sequence number get the backward nodes' RecordFunction thread id.
  for (std::string_view op :
       {"aten::linear", "aten::t", "aten::addmm", "aten::relu", "aten::sum"}) {
    const int i = index_of(t, op);
    ASSERT_GE(i, 0) << op;
    EXPECT_EQ(t.ranges[i].kind, MarkerKind::kOp) << op;
    EXPECT_EQ(t.ranges[i].rf_tid, 1) << op;
    EXPECT_EQ(t.ranges[i].fwd_tid, -1) << op;
  }
  // An op without a sequence number is not paired and keeps -1.
  EXPECT_EQ(t.ranges[index_of(t, "aten::transpose")].rf_tid, -1);
  for (std::string_view node : {"SumBackward0", "ReluBackward0", "AddmmBackward0", "TBackward0"}) {
    const int i = index_of(t, node);
    ASSERT_GE(i, 0) << node;
    EXPECT_EQ(t.ranges[i].kind, MarkerKind::kBackwardNode) << node;
    EXPECT_EQ(t.ranges[i].fwd_tid, 1) << node;
    EXPECT_EQ(t.ranges[i].tid, 10200u) << node;
  }
  const int wrapper = index_of(t, "autograd::engine::evaluate_function: SumBackward0");
  EXPECT_EQ(t.ranges[wrapper].kind, MarkerKind::kUser);
  EXPECT_EQ(t.ranges[wrapper].seq, -1);
  // The flows' pairs, forward op -> backward node (flow 4 starts at aten::t, inside
  // aten::linear: the op that starts at the flow's time, not the one around it).
  std::vector<std::pair<int32_t, int32_t>> pairs = t.declared_pairs;
  std::sort(pairs.begin(), pairs.end());
  std::vector<std::pair<int32_t, int32_t>> want = {
      {index_of(t, "aten::t"), index_of(t, "TBackward0")},
      {index_of(t, "aten::addmm"), index_of(t, "AddmmBackward0")},
      {index_of(t, "aten::relu"), index_of(t, "ReluBackward0")},
      {index_of(t, "aten::sum"), index_of(t, "SumBackward0")}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(pairs, want);
  EXPECT_EQ(t.event_counts.front(), std::make_pair("cpu_op"s, int64_t{12}));
}

TEST(KinetoRead, WithoutFlowsTheBusiestThreadIsTheForwardThread) {
  // The same trace without its flows, plus a second thread running one op with a sequence
  // number: the thread with the most such ops is taken as the forward thread.
  std::string trace;
  std::string_view text = kFwdBwdTrace;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at + (end < text.size() ? 1 : 0));
    if (line.find("\"fwdbwd\"") == std::string_view::npos) trace += line;
    at = end + 1;
  }
  const std::string other =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 10124, "tid": 10300, "ts": 4724979519000, "dur": 1, "args": {"Sequence number": 9, "Fwd thread id": 0}},)";
  trace.insert(trace.find('\n') + 1, other + "\n");
  auto r = read_trace(trace);
  ASSERT_TRUE(r->ok) << r->error;
  const Trace& t = r->trace;
  EXPECT_TRUE(t.declared_pairs.empty());
  EXPECT_EQ(t.ranges[index_of(t, "aten::addmm")].rf_tid, 1);
  EXPECT_EQ(t.ranges[index_of(t, "aten::mul")].rf_tid, -1);
}

// torch 2.13 with_stack: "nn.Module: X_N" frames nest through _call_impl and forward frames
// (Python parent id); Net(fc=Linear, act=ReLU).
constexpr std::string_view kModuleTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "python_function", "name": "train.py(14): <module>", "pid": 10124, "tid": 10124, "ts": 4724979519500.000, "dur": 14000, "args": {"Python parent id": 0, "Python id": 1, "Ev Idx": 74}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: Net_0", "pid": 10124, "tid": 10124, "ts": 4724979519569.714, "dur": 12929.825, "args": {"Python parent id": 1, "Python id": 22, "Python module id": 0, "Ev Idx": 75}},
  {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1782): _call_impl", "pid": 10124, "tid": 10124, "ts": 4724979519579.338, "dur": 12919.259, "args": {"Python parent id": 22, "Python id": 23, "Ev Idx": 76}},
  {"ph": "X", "cat": "python_function", "name": "train.py(9): forward", "pid": 10124, "tid": 10124, "ts": 4724979519594.17, "dur": 12904.117, "args": {"Python parent id": 23, "Python id": 25, "Ev Idx": 78}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 10124, "tid": 10124, "ts": 4724979519636.243, "dur": 12583.8, "args": {"Python parent id": 25, "Python id": 28, "Python module id": 0, "Ev Idx": 81}},
  {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1782): _call_impl", "pid": 10124, "tid": 10124, "ts": 4724979519638.306, "dur": 12579.284, "args": {"Python parent id": 28, "Python id": 29, "Ev Idx": 82}},
  {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(130): forward", "pid": 10124, "tid": 10124, "ts": 4724979519643.263, "dur": 12570.721, "args": {"Python parent id": 29, "Python id": 31, "Ev Idx": 84}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: ReLU_0", "pid": 10124, "tid": 10124, "ts": 4724979532247.664, "dur": 247.378, "args": {"Python parent id": 25, "Python id": 35, "Python module id": 0, "Ev Idx": 88}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: ReLU_1", "pid": 10124, "tid": 10124, "ts": 4724979533000, "dur": 1, "args": {"Python parent id": 99999, "Python id": 36}},
  {"ph": "X", "cat": "python_function", "name": "nn.Module: Block_", "pid": 10124, "tid": 10124, "ts": 4724979533100, "dur": 1, "args": {"Python id": 37}}
]})json";

TEST(KinetoRead, ModuleRangesGetTheirDottedPath) {
  auto r = read_trace(kModuleTrace);
  ASSERT_TRUE(r->ok) << r->error;
  const Trace& t = r->trace;
  ASSERT_EQ(t.ranges.size(), 5u);  // the module frames only
  struct Want {
    std::string_view path, type;
    int64_t start, end;
  };
  const Want want[] = {
      {"Net_0", "Net", 4724979519569714, 4724979532499539},
      {"Net_0.Linear_0", "Linear", 4724979519636243, 4724979532220043},
      {"Net_0.ReLU_0", "ReLU", 4724979532247664, 4724979532495042},
      {"ReLU_1", "ReLU", 4724979533000000, 4724979533001000},  // parent not in the trace
      {"Block_", "Block_", 4724979533100000, 4724979533101000},
  };
  for (size_t i = 0; i < std::size(want); ++i) {
    const RangeRecord& m = t.ranges[i];
    EXPECT_EQ(m.kind, MarkerKind::kModule) << i;
    EXPECT_EQ(m.dialect, Dialect::kKineto) << i;
    EXPECT_EQ(name_of(t, m.name), want[i].path) << i;
    EXPECT_EQ(name_of(t, m.detail), want[i].type) << i;
    EXPECT_EQ(m.start, want[i].start) << i;
    EXPECT_EQ(m.end, want[i].end) << i;
    EXPECT_FALSE(m.has_args) << i;
  }
  EXPECT_EQ(t.stats.ranges, 5);
}

// Events that cannot be read are counted and warned about; the others are kept.
TEST(KinetoRead, BadEventsAreCountedAndTheRestKept) {
  constexpr std::string_view kTrace = R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "good_1", "pid": 1, "tid": 1, "ts": 10, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "text ts", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "huge ts", "pid": 1, "tid": 1, "ts": 1e999, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "bad dur", "pid": 1, "tid": 1, "ts": 10, "dur": [1]},
    {"ph": "X", "cat": "cpu_op", "name": "overflow", "pid": 1, "tid": 1, "ts": 9223372036854775, "dur": 1},
    42,
    "an event",
    [{"ph": "X"}],
    {"ph": "X", "cat": "cpu_op", "name": "invalid", "ts": 10, "dur": },
    {"ph": "X", "cat": "cpu_op", "name": "good_2", "pid": "host 7", "tid": -5, "ts": "12.5", "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "negative dur", "pid": 1, "tid": 1, "ts": 20, "dur": -3},
    {"ph": "X", "cat": "cpu_op", "name": 17, "pid": 1, "tid": 1, "ts": 30}
  ]})json";
  auto r = read_trace(kTrace);
  ASSERT_TRUE(r->ok) << r->error;
  const Trace& t = r->trace;
  EXPECT_EQ(t.trace_events, 13);
  EXPECT_EQ(t.stats.rows_skipped, 9);
  const Trace::WarningGroup* skipped = warning(t, "trace events skipped");
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->count, 9);
  ASSERT_EQ(t.ranges.size(), 4u);
  EXPECT_EQ(name_of(t, t.ranges[0].name), "good_1");
  EXPECT_EQ(t.ranges[0].start, 10000);
  EXPECT_EQ(t.ranges[0].end, 11000);
  EXPECT_EQ(name_of(t, t.ranges[1].name), "good_2");
  EXPECT_EQ(t.ranges[1].start, 12500);  // a quoted time
  EXPECT_EQ(t.ranges[1].end, 14500);
  EXPECT_NE(t.ranges[1].pid, t.ranges[0].pid);  // string and negative ids are folded apart
  EXPECT_NE(t.ranges[1].tid, t.ranges[0].tid);
  EXPECT_EQ(name_of(t, t.ranges[2].name), "negative dur");
  EXPECT_EQ(t.ranges[2].end, t.ranges[2].start);
  EXPECT_EQ(t.stats.ranges_end_before_start, 1);
  EXPECT_EQ(name_of(t, t.ranges[3].name), "");    // a name that is not a string
  EXPECT_EQ(t.ranges[3].end, t.ranges[3].start);  // no dur: an instant
}

TEST(KinetoRead, CutShortDocumentsKeepTheirEvents) {
  const std::string whole(kGpuTrace);
  // Cut inside the kernel event: the events before it are kept, with a warning.
  const size_t cut = whole.find("\"cat\": \"kernel\"");
  auto r = read_trace(std::string_view(whole).substr(0, cut));
  ASSERT_TRUE(r->ok) << r->error;
  EXPECT_TRUE(r->trace.truncated_input);
  EXPECT_NE(warning(r->trace, "trace cut short"), nullptr);
  EXPECT_EQ(r->trace.stats.api_calls, 2);
  EXPECT_EQ(r->trace.stats.kernels, 0);
  EXPECT_EQ(r->trace.devices.size(), 2u);
  // Cut before traceEvents holds an event: an error.
  r = read_trace(std::string_view(whole).substr(0, whole.find("ProfilerStep#2")));
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->error.find("truncated"), std::string::npos) << r->error;
}

TEST(KinetoRead, NotAChromeTrace) {
  auto r = read_trace(R"({"schemaVersion": 1, "deviceProperties": []})");
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->error.find("no \"traceEvents\" array"), std::string::npos) << r->error;
  r = read_trace("SQLite format 3");
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->error.find("not JSON"), std::string::npos) << r->error;
  r = read_trace("");
  EXPECT_FALSE(r->ok);
  // The JSON Array Format is a trace.
  r = read_trace(
      R"([{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 1, "dur": 1}])");
  ASSERT_TRUE(r->ok) << r->error;
  EXPECT_EQ(r->trace.ranges.size(), 1u);
  // Odd top-level values are warned about, not fatal.
  r = read_trace(R"({"deviceProperties": {"id": 0}, "distributedInfo": [1], "traceEvents": []} x)");
  ASSERT_TRUE(r->ok) << r->error;
  EXPECT_NE(warning(r->trace, "deviceProperties not understood"), nullptr);
  EXPECT_NE(warning(r->trace, "distributedInfo not understood"), nullptr);
  EXPECT_NE(warning(r->trace, "bytes after the JSON document"), nullptr);
}

}  // namespace
}  // namespace pyprof::parse
