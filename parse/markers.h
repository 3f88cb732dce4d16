// Marker decoding: what one NVTX range's message says about the op, module or user range it
// stands for.
//
// parse meets four dialects of range messages, told apart by the range's NVTX domain and by
// the text itself:
//   kPyprof       our own markers (docs/formats.md §1): one JSON object, domain "pyprof".
//   kEmitNvtx     PyTorch's emit_nvtx strings (default domain), every era:
//                   "aten::addmm, seq = 10, op_id = 7, sizes = [[32, 128], []],
//                    input_op_ids = [(0,-1), (14,0)]"      (1.13 and later)
//                   "aten::conv2d, seq = 0"                 (1.1 - 1.12)
//                   "addmm, seq=10" / "AddmmBackward, stashed seq=10"   (1.0)
//                   "aten::relu"                            (an op with no seq)
//                   ", sizes = [[2, 3]]"                    (legacy: name dropped when seq < 0)
//   kLegacyPyprof apex/NVIDIA PyProf Python dict strings (default domain):
//                   "{'mod': 'torch.nn.functional', 'op': 'linear', 'args': [{...}, ...]}"
//                   "{'traceMarker': ['train.py:57', ...]}"
//                   "{'mod': 'LSTMCell', 'strRepr': '512, 1024'}"
//   kUser         anything else: kept whole as a user range (PyProf's "layer:" ranges too), and
//                 everything in a named domain other than "pyprof".
//
// Decoding never throws and never fails: a message that looks like a known dialect but is
// malformed (unbalanced JSON, absurd numbers, NUL bytes, ...) is decoded as far as possible,
// or demoted to a user range, and `error` says why so that the caller can count a warning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof::parse {

// kKineto: not an NVTX message but an op of a torch.profiler trace (kineto_reader.h), whose
// arguments are positional and in the pyprof value encoding.
enum class Dialect : uint8_t { kUser = 0, kPyprof, kEmitNvtx, kLegacyPyprof, kKineto };

enum class MarkerKind : uint8_t {
  kUser = 0,      // a user range: pyprof.range, record_function scopes, "layer:" ranges, others
  kOp,            // a forward op call (ATen op, emit_nvtx op string, legacy PyProf args marker)
  kBackwardNode,  // an autograd backward node (scope "backward", "AddmmBackward0, seq = 10")
  kModule,        // an nn.Module forward (pyprof module marker, legacy "strRepr" marker)
  kTrace,         // legacy PyProf "traceMarker": the Python call stack of the next marker
  // A pyprof settings mark (docs/formats.md §1.4): the torch flags the program ran with, from
  // pyprof.init() and again at exit; `args` holds the "settings" object. Not a range.
  kSettings,
  // A pyprof compiled-kernel mark (docs/formats.md §1.5): what one Inductor kernel computes,
  // from Inductor's compile-time metadata. `name` is the kernel's run-time name, `args` its
  // "kernel" object (nodes, reads, writes). Not a range.
  kCompiledKernel,
  // A pyprof compiled-call mark (docs/formats.md §1.5): one call of a graph compiled with
  // symbolic sizes. `name` is its compile id ("0/1"), `args` its "symbols" object ({"s77": 8}).
  // Not a range.
  kCompiledCall,
};

// What a compiled kernel's graph id is followed by, in the key records join it by, when its graph
// calls its name at several places (a compiled_kernel mark's `call_site` and `backward`,
// docs/formats.md §1.5): "#f0", "#b2", the forward or backward graph and the place.
inline std::string compiled_site_suffix(bool backward, int64_t site) {
  return (backward ? "#b" : "#f") + std::to_string(site);
}

// Everything one message says. Decoding resets every field first but keeps the capacity of
// the strings and vectors, so a caller that reuses one Marker allocates nothing per message.
struct Marker {
  MarkerKind kind = MarkerKind::kUser;
  Dialect dialect = Dialect::kUser;
  // kOp / kBackwardNode: the op or node name ("aten::addmm", "AddmmBackward0", legacy "linear").
  // kModule: the module path ("LeNet.conv1"; legacy: the class name "LSTMCell").
  // kUser: the whole message. kTrace: empty.
  std::string name;
  // pyprof: operator overload ("Tensor"); kCompiledKernel: its graph's compile id ("0/1").
  std::string overload;
  std::string module_type;  // pyprof module marker: class name ("Conv2d"); legacy: strRepr
  std::string legacy_mod;   // legacy args marker: its 'mod' ("torch.nn.functional", "Tensor")
  std::string stack;        // pyprof: "file:line" call site; else empty
  // The op's arguments as JSON text, empty when the message has none:
  //   kPyprof:       the marker's "args" object, byte for byte;
  //   kEmitNvtx:     the "sizes" list as {"0":{"shape":[32,128]},"1":{"shape":[]}} (emit_nvtx
  //                  writes [] for non-tensor arguments and 0-dim tensors alike);
  //   kLegacyPyprof: the 'args' list converted to a JSON array, one object per argument with
  //                  its keys (name, type, shape, dtype, value) kept; Python tuples become
  //                  arrays, None/True/False become null/true/false, quotes are re-escaped.
  std::string args;
  std::vector<std::string> trace;  // kTrace: the frames ("file.py:57"), outermost first
  int64_t op_id = 0;               // pyprof "id", emit_nvtx "op_id"; 0 = none
  int64_t seq = -1;                // autograd sequence number; -1 = none
  int64_t tid = -1;                // pyprof "tid" (RecordFunction thread id); -1 = unknown
  int64_t fwd_tid = -1;            // pyprof "fwd_tid" of a backward node; -1 = unknown
  int64_t args_dropped = 0;        // pyprof "args_dropped"
  // pyprof op marker of version >= 2 (marker_schema.h): a registered string shared by many
  // calls, whose op id and seq are the range's NVTX payload and category, not in the text.
  bool interned = false;
  // Non-empty when the message looked like a known dialect but was malformed. The fields
  // above then hold what could still be read (kind may have been demoted to kUser).
  std::string error;
};

// The NVTX domain a range was written to, which says which dialects it can hold: pyprof JSON
// only in the domain named "pyprof"; emit_nvtx and legacy PyProf strings only in the default
// domain (PyTorch and apex push them with nvtxRangePushA); a range in any other named domain
// (TensorRT's "onnx::Conv_239" in "TensorRT") is always a user range.
enum class MarkerDomain : uint8_t { kDefault = 0, kPyprof, kOther };

// Decodes one range message of `domain`. `text` may contain any bytes, including NULs, and may
// be megabytes long.
void decode_marker(std::string_view text, MarkerDomain domain, Marker& out);

// Where a version-1 pyprof op marker written as the annotator writes it,
// {"v":1,"op":"NAME","id":ID,"seq":SEQ,...}, holds its op id and seq. Such markers differ from one
// training step to the next only there, so two texts equal outside [id_begin, seq_end) decode
// alike but for op_id and seq (TextMarkerCache). nullopt for any other text: another layout, a
// NAME with an escape, or an ID or SEQ that is not a JSON integer of at most 18 digits.
struct PyprofIdDigits {
  size_t id_begin = 0;  // the id's first byte
  size_t seq_end = 0;   // one past the seq's last digit
  int64_t id = 0;
  int64_t seq = 0;
};
std::optional<PyprofIdDigits> find_pyprof_id_digits(std::string_view text);

// The emit_nvtx name of a backward node: "AddmmBackward0", "AddmmBackward",
// "CudnnConvolutionBackward", "torch::autograd::AccumulateGrad", "MulBackward1", and the
// 1.0-era "stashed seq" names. The pyprof and emit_nvtx decoders tell backward nodes from ops
// by it; public for its tests.
bool is_backward_node_name(std::string_view name);

}  // namespace pyprof::parse
