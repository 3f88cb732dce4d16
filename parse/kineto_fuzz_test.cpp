// Randomized property test of the torch.profiler (Kineto) reader: real traces trimmed to a few
// events of every category (torch 2.13 CPU with record_shapes and with_stack; HTA's A100 and
// MI250 sample traces), mutated at random (flipped bytes, cuts, repeated and swapped ranges, huge
// numbers, deep nesting, NULs, random bytes in strings), read through memory_source handed over
// in random small pieces. Properties: read never crashes, hangs or throws; reading in pieces
// gives the same trace as reading at once; a failed read says why in one line; every op's stored
// args text is one valid JSON object; ranges never end before they start; declared pairs name a
// forward op and a backward node. Runs for a fixed time;
// PYPROF_FUZZ_SECONDS changes it and PYPROF_FUZZ_SEED replays or varies the random stream (the
// seed is printed on failure).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "parse/fuzz_test_util.h"
#include "parse/json_stream.h"
#include "parse/kineto_reader.h"

namespace pyprof::parse {
namespace {

using namespace std::string_literals;

constexpr uint64_t kDefaultSeed = 0x6b1e'70f0'2213'cafeULL;

uint64_t fuzz_seed() { return parse::fuzz_seed(kDefaultSeed); }

std::string escaped(std::string_view s) { return parse::escaped(s, 4000); }

// torch 2.13.0+cpu, Net(Linear(4, 3), ReLU) forward and backward, record_shapes and with_stack:
// ops with shapes, dtypes, strides and concrete inputs, backward nodes, fwdbwd flows, module
// frames, metadata and instant events (a selection of the trace's 157 events).
constexpr std::string_view kTorch213Cpu = R"json(
{"schemaVersion": 1, "deviceProperties": [], "with_stack": 1, "record_shapes": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1790857026000000000, "traceEvents": [
{"ph": "M", "name": "process_name", "ts": 4724979518750.948, "pid": 10124, "tid": 0, "args": {"name": "python3"}},
{"ph": "M", "name": "process_sort_index", "ts": 4724979518750.948, "pid": 10124, "tid": 0, "args": {"sort_index": 10124}},
{"ph": "M", "name": "thread_name", "ts": 4724979518750.948, "pid": 10124, "tid": 10124, "args": {"name": "thread 10124 (python3)"}},
{"ph": "M", "name": "thread_name", "ts": 4724979518750.948, "pid": 10124, "tid": 10124, "args": {"name": "thread 10124 (python3)"}},
{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 10124, "tid": 10124, "ts": 4724979519807.007, "dur": 12395.72, "args": {"External id": 1, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", "", ""], "Input type": ["float", "float", "float"], "Input Strides": [[4, 1], [4, 1], [1]], "Input Dims": [[2, 4], [3, 4], [3]], "Ev Idx": 0}},
{"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 10124, "tid": 10124, "ts": 4724979519835.879, "dur": 341.468, "args": {"External id": 2, "Sequence number": 0, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[4, 1]], "Input Dims": [[3, 4]], "Ev Idx": 1}},
{"ph": "s", "id": 4, "pid": 10124, "tid": 10124, "ts": 4724979519835.879, "cat": "fwdbwd", "name": "fwdbwd"},
{"ph": "X", "cat": "cpu_op", "name": "aten::as_strided", "pid": 10124, "tid": 10124, "ts": 4724979520140.292, "dur": 15.072, "args": {"External id": 4, "Record function id": 0, "Concrete Inputs": ["", "[4, 3]", "[1, 4]", ""], "Input type": ["float", "ScalarList", "ScalarList", ""], "Input Strides": [[4, 1], [], [], []], "Input Dims": [[3, 4], [], [], []], "Ev Idx": 3}},
{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 10124, "tid": 10124, "ts": 4724979520199.31, "dur": 11999.842, "args": {"External id": 5, "Sequence number": 1, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", "", "", "1", "1"], "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Input Strides": [[1], [4, 1], [1, 4], [], []], "Input Dims": [[3], [2, 4], [4, 3], [], []], "Ev Idx": 4}},
{"ph": "s", "id": 3, "pid": 10124, "tid": 10124, "ts": 4724979520199.31, "cat": "fwdbwd", "name": "fwdbwd"},
{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 10124, "tid": 10124, "ts": 4724979532359.671, "dur": 131.876, "args": {"External id": 11, "Sequence number": 2, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[3, 1]], "Input Dims": [[2, 3]], "Ev Idx": 10}},
{"ph": "s", "id": 2, "pid": 10124, "tid": 10124, "ts": 4724979532359.671, "cat": "fwdbwd", "name": "fwdbwd"},
{"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 10124, "tid": 10124, "ts": 4724979532553.278, "dur": 102.182, "args": {"External id": 13, "Sequence number": 3, "Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", ""], "Input type": ["float", ""], "Input Strides": [[3, 1], []], "Input Dims": [[2, 3], []], "Ev Idx": 12}},
{"ph": "s", "id": 1, "pid": 10124, "tid": 10124, "ts": 4724979532553.278, "cat": "fwdbwd", "name": "fwdbwd"},
{"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 10124, "tid": 10124, "ts": 4724979532582.542, "dur": 64.816, "args": {"External id": 14, "Record function id": 0, "Concrete Inputs": ["", "[]", "False", ""], "Input type": ["float", "ScalarList", "Scalar", ""], "Input Strides": [[3, 1], [], [], []], "Input Dims": [[2, 3], [], [], []], "Ev Idx": 13}},
{"ph": "X", "cat": "cpu_op", "name": "aten::fill_", "pid": 10124, "tid": 10124, "ts": 4724979532634.559, "dur": 8.132, "args": {"External id": 16, "Record function id": 0, "Concrete Inputs": ["", "0."], "Input type": ["float", "Scalar"], "Input Strides": [[0, 0], []], "Input Dims": [[1, 1], []], "Ev Idx": 15}},
{"ph": "X", "cat": "cpu_op", "name": "aten::empty_strided", "pid": 10124, "tid": 10124, "ts": 4724979532840.065, "dur": 6.239, "args": {"External id": 19, "Record function id": 0, "Concrete Inputs": ["[]", "[]", "6", "0", "", "False"], "Input type": ["ScalarList", "ScalarList", "Scalar", "Scalar", "", "Scalar"], "Input Strides": [[], [], [], [], [], []], "Input Dims": [[], [], [], [], [], []], "Ev Idx": 18}},
{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: SumBackward0", "pid": 10124, "tid": 10124, "ts": 4724979533181.672, "dur": 48.152, "args": {"External id": 21, "Record function id": 0, "Sequence number": 3, "Fwd thread id": 1, "Ev Idx": 20}},
{"ph": "X", "cat": "cpu_op", "name": "SumBackward0", "pid": 10124, "tid": 10124, "ts": 4724979533183.575, "dur": 40.55, "args": {"External id": 22, "Sequence number": 3, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[]], "Input Dims": [[]], "Ev Idx": 21}},
{"ph": "f", "id": 1, "pid": 10124, "tid": 10124, "ts": 4724979533183.575, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
{"ph": "X", "cat": "cpu_op", "name": "ReluBackward0", "pid": 10124, "tid": 10124, "ts": 4724979533235.472, "dur": 46.139, "args": {"External id": 26, "Sequence number": 2, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[0, 0]], "Input Dims": [[2, 3]], "Ev Idx": 25}},
{"ph": "f", "id": 2, "pid": 10124, "tid": 10124, "ts": 4724979533235.472, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
{"ph": "X", "cat": "cpu_op", "name": "AddmmBackward0", "pid": 10124, "tid": 10124, "ts": 4724979533291.175, "dur": 78.537, "args": {"External id": 29, "Sequence number": 1, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[3, 1]], "Input Dims": [[2, 3]], "Ev Idx": 28}},
{"ph": "f", "id": 3, "pid": 10124, "tid": 10124, "ts": 4724979533291.175, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
{"ph": "X", "cat": "cpu_op", "name": "aten::sum", "pid": 10124, "tid": 10124, "ts": 4724979533372.376, "dur": 16.835, "args": {"External id": 39, "Record function id": 0, "Concrete Inputs": ["", "[0]", "True", ""], "Input type": ["float", "ScalarList", "Scalar", ""], "Input Strides": [[3, 1], [], [], []], "Input Dims": [[2, 3], [], [], []], "Ev Idx": 38}},
{"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 10124, "tid": 10124, "ts": 4724979533421.338, "dur": 9.585, "args": {"External id": 43, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[1]], "Input Dims": [[3]], "Ev Idx": 42}},
{"ph": "X", "cat": "cpu_op", "name": "TBackward0", "pid": 10124, "tid": 10124, "ts": 4724979533434.648, "dur": 4.637, "args": {"External id": 47, "Sequence number": 0, "Fwd thread id": 1, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[1, 4]], "Input Dims": [[4, 3]], "Ev Idx": 46}},
{"ph": "f", "id": 4, "pid": 10124, "tid": 10124, "ts": 4724979533434.648, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
{"ph": "X", "cat": "python_function", "name": "nn.Module: Net_0", "pid": 10124, "tid": 10124, "ts": 4724979519569.714, "dur": 12929.825, "args": {"Python parent id": 1, "Python id": 22, "Python module id": 0, "Ev Idx": 75}},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1782): _call_impl", "pid": 10124, "tid": 10124, "ts": 4724979519579.338, "dur": 12919.259, "args": {"Python parent id": 22, "Python id": 23, "Ev Idx": 76}},
{"ph": "X", "cat": "python_function", "name": "train.py(9): forward", "pid": 10124, "tid": 10124, "ts": 4724979519594.17, "dur": 12904.117, "args": {"Python parent id": 23, "Python id": 25, "Ev Idx": 78}},
{"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 10124, "tid": 10124, "ts": 4724979519636.243, "dur": 12583.8, "args": {"Python parent id": 25, "Python id": 28, "Python module id": 0, "Ev Idx": 81}},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1782): _call_impl", "pid": 10124, "tid": 10124, "ts": 4724979519638.306, "dur": 12579.284, "args": {"Python parent id": 28, "Python id": 29, "Ev Idx": 82}},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(130): forward", "pid": 10124, "tid": 10124, "ts": 4724979519643.263, "dur": 12570.721, "args": {"Python parent id": 29, "Python id": 31, "Ev Idx": 84}},
{"ph": "X", "cat": "python_function", "name": "nn.Module: ReLU_0", "pid": 10124, "tid": 10124, "ts": 4724979532247.664, "dur": 247.378, "args": {"Python parent id": 25, "Python id": 35, "Python module id": 0, "Ev Idx": 88}},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1782): _call_impl", "pid": 10124, "tid": 10124, "ts": 4724979532251.75, "dur": 242.531, "args": {"Python parent id": 35, "Python id": 36, "Ev Idx": 89}},
{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/activation.py(139): forward", "pid": 10124, "tid": 10124, "ts": 4724979532269.787, "dur": 224.023, "args": {"Python parent id": 36, "Python id": 38, "Ev Idx": 91}},
{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 4724979518521.126, "dur": 15049.335, "args": {"Op count": 0}},
{"ph": "M", "name": "process_sort_index", "ts": 4724979518521.126, "pid": "Spans", "tid": 0, "args": {"sort_index": 536870912}},
{"ph": "i", "s": "g", "name": "Iteration Start: PyTorch Profiler", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 4724979518521.126},
{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 4724979534251.232}], "traceName": "train.json"})json";

// HTA's A100 and MI250 sample traces (trimmed): every GPU category, launches from two processes,
// string ids, ROCm's quoted args, device properties and distributedInfo.
constexpr std::string_view kGpu = R"json({
  "schemaVersion": 1,
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224, "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024, "warpSize": 32, "numSms": 108, "sharedMemPerBlockOptin": 166912},
    {"id": 2, "name": "AMD Radeon Graphics", "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0, "warpSize": 64, "numSms": 104, "clockRate": 1700000}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}], "nccl_version": "2.17.1"},
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 597913, "tid": 597913, "ts": 4203669603187.439, "dur": 9288.291, "args": {"External id": 1, "Record function id": 1, "Ev Idx": 34}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 597913, "tid": 597913, "ts": 4203669603430.1, "dur": 80.5, "args": {"External id": 8, "Record function id": 0, "Sequence number": 3, "Fwd thread id": 0, "Concrete Inputs": ["", "", "False"], "Input type": ["float", "float", "Scalar"], "Input Strides": [[10, 1], [10, 1], []], "Input Dims": [[64, 10], [64, 10], []], "Ev Idx": 35}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 597913, "tid": 597913, "ts": 4203669603438.301, "dur": 60.204, "args": {"External id": 8, "stream": "0x0", "cid": 153, "correlation": 117, "src": "0x55674ecd4180", "dst": "0x7fda0e810200", "size": "2560", "kind": "1"}},
  {"ph": "s", "id": 117, "pid": 597913, "tid": 597913, "ts": 4203669603438.301, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "pid": 2, "tid": 0, "ts": 4203669603454.206, "dur": 22.441, "args": {"External id": 8, "device": 2, "stream": 0, "correlation": 117, "kind": "HtoD"}},
  {"ph": "f", "id": 117, "pid": 2, "tid": 0, "ts": 4203669603454.206, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "Optimizer.step#SGD.step", "pid": 2, "tid": 0, "ts": 4203669612357.611, "dur": 8.483, "args": {"External id": 35}},
  {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 2910249, "tid": 2919752, "ts": 4458676524670.502, "dur": 92.804, "args": {"External id": 2100, "Record function id": 1960, "Ev Idx": 51}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2910249, "tid": 2919752, "ts": 4458676983526.767, "dur": 9.1, "args": {"External id": 12353, "cbid": 211, "correlation": 57541}},
  {"ph": "s", "id": 57541, "pid": 2910249, "tid": 2919752, "ts": 4458676983526.767, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32, true, 1>(float, float, float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*, cudnnTensorStruct, float*, float const*, float*, float*, float const*, float const*, float)", "pid": 0, "tid": 7, "ts": 4458676983543.183, "dur": 41.407, "args": {"External id": 12353, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 57541, "registers per thread": 64, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2, "grid": [54, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 3}},
  {"ph": "f", "id": 57541, "pid": 0, "tid": 7, "ts": 4458676983543.183, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 4458676984451.267, "dur": 4.96, "args": {"External id": 12373, "device": 0, "context": 1, "stream": 7, "correlation": 57609, "bytes": 6291456, "memory bandwidth (GB/s)": 1268.4387096774194}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 4458677052061.431, "dur": 5.088, "args": {"External id": 13889, "device": 0, "context": 1, "stream": 7, "correlation": 64014, "bytes": 4000, "memory bandwidth (GB/s)": 0.7861635220125787}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 2910249, "tid": 2919752, "ts": 4458677052000, "dur": 3, "args": {"External id": 13890, "cbid": 307, "correlation": 64015}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 1695835572943623, "dur": 9, "args": {"External id": 15, "cuda_sync_kind": "Stream Sync", "stream": 7, "correlation": 15, "device": 0, "context": 1}},
  {"name": "process_name", "ph": "M", "ts": 4203669603069.091, "pid": 597913, "tid": 0, "args": {"name": "python3"}},
  {"ph": "X", "cat": "Trace", "ts": 4203669603018.756, "dur": 9761.878, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 4203669603018.756}
  ],
  "traceName": "/tmp/tmpu3g3sevh.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1711964646000000000
})json";

// The JSON Array Format, with HTA's cpu-only gloo trace's older args (no Input Strides).
constexpr std::string_view kArrayFormat = R"json([
{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1074, "tid": 3553, "ts": 1212075548353.304, "dur": 173209.713, "args": {"External id": 1025, "Record function id": 0, "Concrete Inputs": [""], "Input type": ["float"], "Input Dims": [[321271]], "Ev Idx": 0}},
{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1074, "tid": 1074, "ts": 1212076812889.31, "dur": 2.503, "args": {"External id": 8490, "Record function id": 0, "Concrete Inputs": ["", "", "", "", "False", ""], "Input type": ["", "", "", "", "Scalar", ""], "Input Dims": [[], [], [], [], [], []], "Ev Idx": 7470}},
{"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1074, "tid": 1074, "ts": 1212076812892, "dur": 5, "args": {"External id": 8491, "Concrete Inputs": ["", "0"], "Input type": ["TensorList", "Scalar"], "Input Strides": [[[3, 1], [1, 2]], []], "Input Dims": [[[2, 3], [2, 3]], []]}},
{"name": "process_name", "ph": "M", "ts": 1212075528731.11, "pid": 1074, "tid": 0, "args": {"name": "pyper:trainer:8:2"}}
]
)json";

const std::vector<std::string_view>& seeds() {
  static const std::vector<std::string_view> kSeeds = {kTorch213Cpu, kGpu, kArrayFormat};
  return kSeeds;
}

// Fragments that steer mutations into the reader's corners.
const std::vector<std::string>& tokens() {
  static const std::vector<std::string> kTokens = {
      "\"",
      "\\",
      "{",
      "}",
      "[",
      "]",
      ",",
      ":",
      "\0"s,
      "\"\"",
      "{}",
      "[]",
      "null",
      "true",
      "-",
      ".",
      "e",
      "0",
      "1e999",
      "-1e999",
      "99999999999999999999999",
      "-9223372036854775808",
      "9223372036854775807",
      "18446744073709551616",
      "1.7976931348623157e308",
      "4e-324",
      "9223372036854775.807",
      "-0.0005",
      "\"ts\": ",
      "\"dur\": ",
      "\"ph\": \"X\", ",
      "\"cat\": \"cpu_op\", ",
      "\"cat\": \"kernel\", ",
      "\"cat\": \"python_function\", ",
      "\"name\": \"nn.Module: A_0\", ",
      "\"Python parent id\": ",
      "\"Python id\": ",
      "\"Input Dims\": ",
      "\"Input type\": ",
      "\"Input Strides\": ",
      "\"Concrete Inputs\": ",
      "\"TensorList\"",
      "\"ScalarList\"",
      "\"Scalar\"",
      "\"GenericList\"",
      "\"[1, 2]\"",
      "\"[\"",
      "\"True\"",
      "\"inf\"",
      "\"nan\"",
      "\"1.0000000000000001e-05\"",
      "[[1, [2]], 3]",
      "[[[1]]]",
      "\"Sequence number\": ",
      "\"Fwd thread id\": ",
      "\"External id\": ",
      "\"correlation\": ",
      "\"id\": ",
      "{\"ph\": \"s\", \"cat\": \"fwdbwd\", ",
      "{\"ph\": \"f\", \"cat\": \"fwdbwd\", ",
      "\"traceEvents\": [",
      "\"deviceProperties\": ",
      "\"distributedInfo\": ",
      "\"baseTimeNanoseconds\": ",
      "\\u0000",
      "\\ud800",
      "\\\"",
      "\xEF\xBB\xBF",
      "\xff\xfe",
      "\xc3\xa9",
      "\xf0\x9f\x98\x80",
      "\x1f\x8b",
  };
  return kTokens;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  std::string next() {
    std::string s(seeds()[below(seeds().size())]);
    const size_t rounds = 1 + below(4);
    for (size_t r = 0; r < rounds; ++r) mutate(s);
    return s;
  }

  // How many bytes each read() hands over, at most: one value per input.
  size_t piece() {
    static constexpr size_t kPieces[] = {1, 2, 3, 5, 7, 16, 64, 333, 4096, size_t{1} << 30};
    return kPieces[below(std::size(kPieces))];
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  // The offset just inside a random string (after a '"'), or a random offset.
  size_t in_a_string(const std::string& s) {
    size_t at = s.find('"', below(s.size() + 1));
    return at == std::string::npos ? below(s.size() + 1) : at + 1;
  }

  void mutate(std::string& s) {
    const size_t n = s.size();
    switch (below(12)) {
      case 0:  // flip bytes
        for (size_t k = 0, m = 1 + below(8); k < m && n > 0; ++k) {
          s[below(n)] ^= static_cast<char>(1u << below(8));
        }
        break;
      case 1:  // cut
        s.resize(below(n + 1));
        break;
      case 2: {  // repeat a range
        const size_t at = below(n + 1), len = below(std::min<size_t>(n - at, 2000) + 1);
        const std::string range = s.substr(at, len);
        for (size_t k = 0, m = 1 + below(3); k < m; ++k) s.insert(below(s.size() + 1), range);
        break;
      }
      case 3: {  // a huge or odd number in place of one
        static const char* const kNumbers[] = {"1e999",
                                               "-1e999",
                                               "99999999999999999999999",
                                               "-9223372036854775808",
                                               "9223372036854775807",
                                               "18446744073709551615",
                                               "1e-400",
                                               "-0",
                                               "0.0000000001",
                                               "9223372036854775.808",
                                               "4294967296",
                                               "2147483648",
                                               "-1",
                                               "1.5"};
        size_t at = s.find_first_of("0123456789", below(n + 1));
        if (at == std::string::npos) at = below(n + 1);
        size_t end = at;
        while (end < s.size() &&
               (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.'))
          ++end;
        s.replace(at, end - at, kNumbers[below(std::size(kNumbers))]);
        break;
      }
      case 4: {  // deep nesting
        const size_t depth = 1 + below(below(2) ? 64 : 5000);
        const char open = below(2) ? '[' : '{';
        std::string nest(depth, open);
        if (open == '{') {
          nest.clear();
          for (size_t k = 0; k < depth; ++k) nest += "{\"a\":";
        }
        if (below(2)) {
          nest += "1";
          for (size_t k = 0; k < depth; ++k) nest += open == '[' ? ']' : '}';
        }
        s.insert(below(n + 1), nest);
        break;
      }
      case 5:  // NULs
        s.insert(below(n + 1), std::string(1 + below(4), '\0'));
        break;
      case 6: {  // random bytes in a string
        std::string junk;
        for (size_t k = 0, m = 1 + below(12); k < m; ++k) junk += static_cast<char>(below(256));
        s.insert(std::min(in_a_string(s), s.size()), junk);
        break;
      }
      case 7: {  // swap two chunks
        if (n < 4) break;
        size_t a = below(n), b = below(n);
        if (a > b) std::swap(a, b);
        const size_t la = below(std::min(b - a, size_t{500}) + 1);
        const size_t lb = below(std::min(n - b, size_t{500}) + 1);
        const std::string first = s.substr(a, la), second = s.substr(b, lb);
        s.replace(b, lb, first);
        s.replace(a, la, second);
        break;
      }
      case 8:  // a token
        s.insert(below(n + 1), tokens()[below(tokens().size())]);
        break;
      case 9: {  // delete a range
        const size_t at = below(n + 1);
        s.erase(at, below(std::min<size_t>(n - at, 300) + 1));
        break;
      }
      case 10: {  // splice a range of another seed
        const std::string_view other = seeds()[below(seeds().size())];
        const size_t from = below(other.size() + 1);
        const size_t len = below(std::min<size_t>(other.size() - from, 1500) + 1);
        const size_t at = below(n + 1);
        s.replace(at, below(std::min<size_t>(n - at, 300) + 1), other.substr(from, len));
        break;
      }
      case 11: {  // a long string in a string
        s.insert(std::min(in_a_string(s), s.size()), std::string(below(2) ? 5000 : 70000, 'x'));
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

// Bytes from memory, at most `piece` at a time (the scanner asks for 4 MiB).
class PieceSource : public ByteSource {
 public:
  PieceSource(std::string_view bytes, size_t piece) : inner_(memory_source(bytes)), piece_(piece) {}
  size_t read(char* buffer, size_t capacity) override {
    return inner_->read(buffer, std::min(capacity, piece_));
  }
  const std::string& error() const override { return inner_->error(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  size_t piece_;
};

// What a read gave, in one string: two reads of the same bytes must give the same.
std::string summary(bool ok, const std::string& error, const Trace& t, KinetoReader& reader) {
  std::string out = (ok ? "ok " : "failed ") + error + "\n";
  out += "events " + std::to_string(t.trace_events) + " skipped " +
         std::to_string(t.stats.rows_skipped) + " truncated " + std::to_string(t.truncated_input) +
         " activities " + std::to_string(t.activities.size()) + " calls " +
         std::to_string(t.api_calls.size()) + " devices " + std::to_string(t.devices.size()) +
         " pairs " + std::to_string(t.declared_pairs.size()) + "\n";
  for (const RangeRecord& r : t.ranges) {
    out += std::to_string(r.start) + " " + std::to_string(r.end) + " " +
           std::string(t.pool.get(r.name)) + " " + std::to_string(r.rf_tid) + " ";
    if (r.has_args) {
      out += std::string(reader.fetch_text(t, r.text).substr(r.args_offset, r.args_length));
    }
    out += "\n";
  }
  for (const auto& w : t.warnings) out += w.category + " " + std::to_string(w.count) + "\n";
  return out;
}

// Checks one read; returns what is wrong, or "". `whole`: the summary of a read of the same
// bytes at once, to compare with (empty: not compared).
std::string check(const std::string& input, size_t piece, simdjson::dom::parser& parser,
                  bool& read_ok, std::string* summary_out = nullptr,
                  const std::string& whole = {}) {
  KinetoReader reader(std::make_unique<PieceSource>(input, piece));
  Trace trace;
  std::string error;
  try {
    read_ok = reader.read(trace, error);
  } catch (const std::exception& e) {
    return "read threw: "s + e.what();
  } catch (...) {
    return "read threw";
  }
  const std::string got = summary(read_ok, error, trace, reader);
  if (summary_out) *summary_out = got;
  if (!whole.empty() && got != whole) {
    return "read in pieces, the trace differs from the one read at once:\n" + got + "\nvs\n" +
           whole;
  }
  if (!read_ok) {
    if (error.empty()) return "a failed read without a reason";
    if (error.find('\n') != std::string::npos) return "a reason of several lines: " + error;
    return "";
  }
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const RangeRecord& r = trace.ranges[i];
    if (r.end < r.start) return "range " + std::to_string(i) + " ends before it starts";
    if (!r.has_args) continue;
    const std::string_view text = reader.fetch_text(trace, r.text);
    if (size_t{r.args_offset} + r.args_length > text.size()) {
      return "range " + std::to_string(i) + ": args past the stored text";
    }
    const std::string_view args = text.substr(r.args_offset, r.args_length);
    simdjson::dom::element element;
    if (parser.parse(args.data(), args.size()).get(element) != simdjson::SUCCESS ||
        !element.is_object()) {
      return "range " + std::to_string(i) + ": args are not a JSON object: " + std::string(args);
    }
  }
  for (const auto& [op, node] : trace.declared_pairs) {
    if (op < 0 || node < 0 || static_cast<size_t>(op) >= trace.ranges.size() ||
        static_cast<size_t>(node) >= trace.ranges.size()) {
      return "a declared pair outside the ranges";
    }
    if (trace.ranges[op].kind != MarkerKind::kOp ||
        trace.ranges[node].kind != MarkerKind::kBackwardNode) {
      return "a declared pair that is not (op, backward node)";
    }
  }
  if (trace.stats.rows_skipped > trace.trace_events) return "more rows skipped than events";
  return "";
}

TEST(KinetoFuzz, MutatedTracesNeverBreakTheReader) {
  // The seeds themselves read cleanly, whole and a byte at a time.
  simdjson::dom::parser parser;
  for (std::string_view seed : seeds()) {
    bool ok = false;
    std::string whole;
    std::string problem = check(std::string(seed), size_t{1} << 30, parser, ok, &whole);
    EXPECT_TRUE(problem.empty()) << problem;
    EXPECT_TRUE(ok);
    EXPECT_EQ(whole.find("trace events skipped"), std::string::npos) << whole;
    problem = check(std::string(seed), 1, parser, ok, nullptr, whole);
    EXPECT_TRUE(problem.empty()) << problem;
  }
  const uint64_t seed = fuzz_seed();
  Mutator mutator(seed);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(fuzz_seconds()));
  size_t iterations = 0, read_ok = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string input = mutator.next();
    // Tiny pieces on a large input would spend the budget moving the partial event (each
    // refill keeps it): at most ~8k reads per input.
    const size_t piece = std::max(mutator.piece(), input.size() / 8192);
    bool ok = false;
    std::string whole;
    std::string problem = check(input, size_t{1} << 30, parser, ok, &whole);
    if (problem.empty()) problem = check(input, piece, parser, ok, nullptr, whole);
    ASSERT_TRUE(problem.empty()) << problem << "\nseed " << seed << ", iteration " << iterations
                                 << ", pieces of " << piece << " bytes\ninput: " << escaped(input);
    read_ok += ok;
    ++iterations;
  }
  std::printf("[ fuzz     ] %zu traces (seed %llu), %zu read, %zu refused\n", iterations,
              static_cast<unsigned long long>(seed), read_ok, iterations - read_ok);
  EXPECT_GT(iterations, 0u);
}

}  // namespace
}  // namespace pyprof::parse
