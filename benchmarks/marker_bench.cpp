// How long building one op marker takes (the JSON string only: no RecordFunction, no NVTX).
//
//   cmake --build build --target marker_bench && ./build/benchmarks/marker_bench
//
// Prints ns per marker (best of 5 rounds of 1M markers) for typical ops.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "op_marker.h"

namespace {

using pyprof::OpInfo;
using pyprof::OpInstance;

const c10::FunctionSchema* schema_of(const char* name, const char* overload) {
  return &c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema();
}

void bench(const char* label, const OpInfo& info, const OpInstance& op,
           const std::vector<c10::IValue>& inputs) {
  std::string buffer;
  std::string_view message;
  double best = 1e30;
  constexpr int kCalls = 1000000;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      message = pyprof::build_op_message(
          buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls;
    if (ns < best) best = ns;
  }
  std::printf("%-28s %6.1f ns/marker  %4zu bytes\n", label, best, message.size());
}

}  // namespace

int main() {
  OpInstance op;
  op.id = 123456;
  op.seq = 789;
  op.tid = 1;

  bench("aten::addmm (3 tensors)",
        pyprof::make_op_info("aten::addmm", "", schema_of("aten::addmm", "")), op,
        {at::zeros({16}), at::zeros({4, 16}), at::zeros({16, 16}).t(), c10::Scalar(1),
         c10::Scalar(1)});
  bench("aten::conv2d (7 args)",
        pyprof::make_op_info("aten::conv2d", "", schema_of("aten::conv2d", "")), op,
        {at::zeros({8, 3, 32, 32}), at::zeros({16, 3, 5, 5}), at::zeros({16}),
         c10::List<int64_t>({2, 2}), c10::List<int64_t>({1, 1}), c10::List<int64_t>({1, 1}),
         int64_t{1}});
  bench("aten::relu (1 tensor)",
        pyprof::make_op_info("aten::relu", "", schema_of("aten::relu", "")), op,
        {at::zeros({4, 16})});
  OpInstance backward = op;
  backward.scope = at::RecordScope::BACKWARD_FUNCTION;
  backward.fwd_tid = 1;
  bench("AddmmBackward0 (1 grad)", pyprof::make_op_info("AddmmBackward0", "", nullptr), backward,
        {at::zeros({4, 16})});
  return 0;
}
