// Encoding of ATen operator arguments (boxed c10::IValues) as JSON, for the op markers.
//
// The marker format is documented in docs/formats.md ("Op markers"). In short:
//   tensor            {"shape":[...],"dtype":"float32","stride":[...],"device":"cpu"}
//   undefined tensor  null
//   None              null
//   bool / int        true / 3
//   double            1.5 (non-finite: "inf", "-inf", "nan")
//   complex           {"real":1.0,"imag":2.0}
//   string            "..."
//   dtype / layout / memory-format arguments (boxed as ints): "float16", "strided",
//                     "channels_last"
//   lists and tuples  [...]; a list longer than its limit ends with the string "...+N"
//                     where N elements were left out
//   device            "cuda:0"
//   anything else     "<Kind>", e.g. "<Generator>"
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <string_view>

#include "common/json_writer.h"

namespace pyprof {

// How a schema argument's boxed value must be read: dtype, layout and memory-format
// arguments travel as plain ints in the boxed calling convention.
enum class ArgKind : uint8_t { kGeneric, kScalarType, kLayout, kMemoryFormat };

struct EncodeLimits {
  size_t max_list = 64;          // ints, floats, bools, generic lists
  size_t max_tensor_list = 256;  // TensorList (e.g. _foreach_* optimizer ops)
  int max_depth = 6;             // nesting of lists/tuples/dicts
};

// PyTorch's Python spelling of a dtype: "float32", "bfloat16", "float8_e4m3fn", ...
std::string_view dtype_name(c10::ScalarType type);
std::string_view layout_name(c10::Layout layout);
std::string_view memory_format_name(c10::MemoryFormat format);

// The ArgKind of a schema argument type (Optional[ScalarType] counts as kScalarType).
ArgKind arg_kind_of(const c10::TypePtr& type);

void encode_tensor(JsonWriter& w, const at::Tensor& t, const EncodeLimits& limits = {});
void encode_ivalue(JsonWriter& w, const c10::IValue& v, ArgKind kind = ArgKind::kGeneric,
                   const EncodeLimits& limits = {}, int depth = 0);

}  // namespace pyprof
