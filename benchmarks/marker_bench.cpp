// How long building one op marker takes (the JSON string only: no RecordFunction, no NVTX), and
// how long an interned marker's handle takes to find when the call was seen before (the binary
// key of marker_key.h plus one hash-table lookup: the annotator's steady-state path).
//
//   cmake --build build --target marker_bench && ./build/benchmarks/marker_bench
//
// Prints ns per call (best of 5 rounds of 1M calls) for typical ops.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "marker_key.h"
#include "op_marker.h"

namespace {

using pyprof::OpInfo;
using pyprof::OpInstance;

const c10::FunctionSchema* schema_of(const char* name, const char* overload) {
  return &c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema();
}

template <class Fn>
double best_ns(const Fn& call) {
  double best = 1e30;
  constexpr int kCalls = 1000000;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls;
    if (ns < best) best = ns;
  }
  return best;
}

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return pyprof::MarkerKeyWriter::hash(text); }
};

void bench(const char* label, const OpInfo& info, const OpInstance& op,
           const std::vector<c10::IValue>& inputs) {
  const c10::ArrayRef<const c10::IValue> args(inputs.data(), inputs.size());
  std::string buffer;
  std::string_view message;
  const double text_ns =
      best_ns([&] { message = pyprof::build_op_message(buffer, info, op, args); });
  const size_t text_bytes = message.size();

  // The hit path: the same key as op_annotator.cpp builds, found among 2,000 other markers.
  std::string key_buffer;
  auto key_of = [&] {
    pyprof::MarkerKeyWriter key(key_buffer);
    pyprof::write_marker_key(key, info, op, args);
    return std::string(key.view());
  };
  std::unordered_map<std::string, uint64_t, Hash, std::equal_to<>> handles;
  for (uint64_t i = 0; i < 2000; ++i) handles.emplace("other marker " + std::to_string(i), i);
  const std::string stored = key_of();
  handles.emplace(stored, 42);
  uint64_t found = 0;
  const double key_ns = best_ns([&] {
    pyprof::MarkerKeyWriter key(key_buffer);
    pyprof::write_marker_key(key, info, op, args);
    found += handles.find(key.view())->second;
  });
  std::printf("%-28s text marker %6.1f ns %4zu bytes | interned hit %6.1f ns (key %zu bytes)\n",
              label, text_ns, text_bytes, key_ns, stored.size());
  if (found == 0) std::printf("(unreachable)\n");
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
