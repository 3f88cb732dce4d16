// Reads torch.profiler (Kineto) Chrome traces: `export_chrome_trace` and
// `tensorboard_trace_handler` files, plain JSON or gzip (told apart by content), streamed
// (json_stream.h) so that memory follows the events kept, not the file's size.
//
// What becomes what (docs/formats.md §4; ../shared/reference/trace-formats.md §6):
//   cpu_op                 op range (Dialect::kKineto): External id -> op_id, Sequence number,
//                          Fwd thread id; record_shapes' Input Dims / Input type / Input Strides /
//                          Concrete Inputs -> positional args in the pyprof value encoding
//                          ({"0":{"shape":..,"dtype":"float32","stride":..},"1":[1,1],"2":1});
//                          "...Backward0" names are backward nodes, the autograd engine's
//                          "evaluate_function:" wrappers user ranges (as pyprof's markers are)
//   user_annotation        user range (record_function, ProfilerStep#N)
//   python_function        "nn.Module: Linear_0" -> module range named by its nesting
//                          ("Net_0.Linear_0", type "Linear"); other frames are not used
//   cuda_runtime/_driver   API call (HIP calls on ROCm) with its correlation id
//   kernel, gpu_memcpy,    GPU activity (device, stream, correlation, grid, block, registers;
//   gpu_memset             copy kind and memory kinds from the name)
//   fwdbwd flows           which forward op created each backward node: they tell which thread
//                          ran the forward ops (Kineto writes the RecordFunction thread id only
//                          on backward nodes) and cross-check the pairing by sequence number
// deviceProperties -> Trace::devices, distributedInfo -> Trace::distributed.
//
// Times: `ts`/`dur` are microseconds with up to three decimals; they are read from the text
// (not through a double) so nanoseconds stay exact, and kept relative to baseTimeNanoseconds.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parse/json_stream.h"
#include "parse/trace.h"

namespace pyprof::parse {

class KinetoReader : public TraceReader {
 public:
  explicit KinetoReader(std::string path) : path_(std::move(path)) {}
  // Reads from `source` instead of a file (tests).
  explicit KinetoReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)) {}

  bool read(Trace& trace, std::string& error) override;
  // Op arguments are kept in the reader's own store (TextRef::kRow ids index it).
  std::string_view fetch_text(const Trace& trace, TextRef ref) override;

  // The args object parse writes for a cpu_op whose Kineto "args" object is `args_json` (the
  // parallel lists Input Dims, Input type, Input Strides, Concrete Inputs); empty when it has
  // none. For the tests: the reader does the same while it streams.
  static std::string positional_args(std::string_view args_json);

  // "float" -> "float32", "c10::BFloat16" -> "bfloat16", "long int" -> "int64", ...; "" when
  // `type` is not a tensor element type (Scalar, ScalarList, TensorList, "", ...).
  static std::string_view dtype_of_input_type(std::string_view type);
  // PyTorch's name of a c10::ScalarType as c10::toString spells it ("Float" -> "float32");
  // empty when unknown.
  static std::string_view dtype_of_scalar_type_name(std::string_view name);

  // "1695835535123456.789" (µs) -> ns, exact to the nanosecond; false when the text is not a
  // finite number or the result does not fit 64 bits.
  static bool microseconds_to_ns(std::string_view text, int64_t& ns);

 private:
  class EventReader;
  friend class EventReader;

  std::string path_;
  std::unique_ptr<ByteSource> source_;
  // Args text, in blocks that never move (TextRef id = block << 32 | offset).
  std::vector<std::string> args_blocks_;
};

}  // namespace pyprof::parse
