// The one dtype table: each tensor element type PyTorch names, its size, and how every source
// pyprof reads spells it. parse (Kineto's traces), models (costs) and prof's advice read these
// arrays and keep no copy; the Python front's pyprof/_dtypes.py is generated from
// `pyprof-prof --list-dtypes` (dtype_table_json_lines()), and tests/test_dtypes.py fails when
// the two differ. constexpr data and lookups over it; dtypes.cpp writes the JSON.
//
// Spellings per source:
//   name        PyTorch's Python name ("float32"): what net.dict and every report hold
//   scalar_type c10::ScalarType's number (torch.profiler gives dtype arguments as these)
//   aten        c10::toString(ScalarType) ("Float"): record_param_comms' "dtype" in Kineto traces
//   inductor    the prefix of Inductor's FX annotations ("f32[16, 128][128, 1]cpu"): torch.fx's
//               dtype_abbrs, which tests/test_compile_kernels.py checks this table against
//   short_name  as PyProf printed dtypes in its params ("fp32")
// and, many to one, kCppTypeNames (caffe2::TypeMeta names, Kineto's "Input type": "float",
// "long int", "c10::BFloat16") and kLegacyDtypeNames (older torch's and legacy PyProf's "half").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace pyprof {

struct DtypeInfo {
  std::string_view name;
  // Bytes per element; 0 where pyprof does not cost its elements (sub-byte and bit types: a
  // tensor of them counts as 4-byte elements, docs/ops.md).
  int size;
  int scalar_type;              // c10::ScalarType number; -1: none pyprof reads
  std::string_view aten;        // "" where no trace spells it
  std::string_view inductor;    // "" where Inductor has no prefix for it
  std::string_view short_name;  // "" where PyProf's spelling is the name itself
  // A Tensor Core input type. float32 is one only through TF32 (allow_tf32): see
  // tensor_core_alignment().
  bool tensor_cores;
};

// Sorted by nothing but reading order: floating point, integers, complex, quantized, sub-byte.
inline constexpr DtypeInfo kDtypes[] = {
    // name               size  ScalarType  aten                 inductor      short   TC
    {"float32", 4, 6, "Float", "f32", "fp32", true},
    {"float64", 8, 7, "Double", "f64", "fp64", false},
    {"float16", 2, 5, "Half", "f16", "fp16", true},
    {"bfloat16", 2, 15, "BFloat16", "bf16", "bf16", true},
    {"float8_e5m2", 1, 23, "Float8_e5m2", "f8e5m2", "fp8", true},
    {"float8_e4m3fn", 1, 24, "Float8_e4m3fn", "f8e4m3fn", "fp8", true},
    {"float8_e5m2fnuz", 1, 25, "Float8_e5m2fnuz", "f8e5m2fnuz", "fp8", true},
    {"float8_e4m3fnuz", 1, 26, "Float8_e4m3fnuz", "f8e4m3fnuz", "fp8", true},
    // A scale type of the MX formats rather than an MMA input; eligible as every float8 type has
    // been (models' rule before this table), so that no cost changes with it.
    {"float8_e8m0fnu", 1, 44, "Float8_e8m0fnu", "f8e8m0fnu", "", true},
    // Two FP4 values a byte; the models count a GEMM's K in values (models/matmul.cpp).
    {"float4_e2m1fn_x2", 1, 45, "Float4_e2m1fn_x2", "f4e2m1fnx2", "fp4", true},
    {"uint8", 1, 0, "Byte", "u8", "uint8", true},
    {"int8", 1, 1, "Char", "i8", "int8", true},
    {"int16", 2, 2, "Short", "i16", "", false},
    {"int32", 4, 3, "Int", "i32", "int32", false},
    {"int64", 8, 4, "Long", "i64", "int64", false},
    {"uint16", 2, 27, "UInt16", "u16", "", false},
    {"uint32", 4, 28, "UInt32", "u32", "", false},
    {"uint64", 8, 29, "UInt64", "u64", "", false},
    {"bool", 1, 11, "Bool", "b8", "bool", false},
    {"complex32", 4, 8, "ComplexHalf", "c32", "", false},
    {"complex64", 8, 9, "ComplexFloat", "c64", "c64", false},
    {"complex128", 16, 10, "ComplexDouble", "c128", "c128", false},
    {"qint8", 1, 12, "", "", "", false},
    {"quint8", 1, 13, "", "", "", false},
    {"qint32", 4, 14, "", "", "", false},
    {"quint4x2", 1, 16, "", "", "", false},
    {"quint2x4", 1, 17, "", "", "", false},
    {"bits1x8", 0, -1, "", "b1x8", "", false},
    {"bits2x4", 0, -1, "", "b2x4", "", false},
    {"bits4x2", 0, -1, "", "b4x2", "", false},
    {"bits8", 0, -1, "", "b8x1", "", false},
    {"bits16", 0, -1, "", "b16x1", "", false},
    {"int1", 0, -1, "", "", "", false},
    {"int2", 0, -1, "", "", "", false},
    {"int3", 0, -1, "", "", "", false},
    {"int4", 0, -1, "", "", "", false},
    {"int5", 0, -1, "", "", "", false},
    {"int6", 0, -1, "", "", "", false},
    {"int7", 0, -1, "", "", "", false},
    {"uint1", 0, -1, "", "", "", false},
    {"uint2", 0, -1, "", "", "", false},
    {"uint3", 0, -1, "", "", "", false},
    {"uint4", 0, -1, "", "", "", false},
    {"uint5", 0, -1, "", "", "", false},
    {"uint6", 0, -1, "", "", "", false},
    {"uint7", 0, -1, "", "", "", false},
};

// A spelling of another source and the dtype it names.
struct DtypeSpelling {
  std::string_view spelling;
  std::string_view name;
};

// caffe2::TypeMeta names as GCC spells them (Kineto's "Input type"), and other compilers'.
inline constexpr DtypeSpelling kCppTypeNames[] = {
    {"float", "float32"},
    {"double", "float64"},
    {"c10::Half", "float16"},
    {"c10::BFloat16", "bfloat16"},
    {"long int", "int64"},
    {"long", "int64"},
    {"long long", "int64"},
    {"int64_t", "int64"},
    {"int", "int32"},
    {"short int", "int16"},
    {"short", "int16"},
    {"signed char", "int8"},
    {"unsigned char", "uint8"},
    {"bool", "bool"},
    {"short unsigned int", "uint16"},
    {"unsigned short", "uint16"},
    {"unsigned int", "uint32"},
    {"long unsigned int", "uint64"},
    {"unsigned long", "uint64"},
    {"c10::complex<c10::Half>", "complex32"},
    {"c10::complex<float>", "complex64"},
    {"c10::complex<double>", "complex128"},
    {"c10::Float8_e5m2", "float8_e5m2"},
    {"c10::Float8_e4m3fn", "float8_e4m3fn"},
    {"c10::Float8_e5m2fnuz", "float8_e5m2fnuz"},
    {"c10::Float8_e4m3fnuz", "float8_e4m3fnuz"},
    {"c10::Float8_e8m0fnu", "float8_e8m0fnu"},
    {"c10::Float4_e2m1fn_x2", "float4_e2m1fn_x2"},
    {"c10::qint8", "qint8"},
    {"c10::quint8", "quint8"},
    {"c10::qint32", "qint32"},
    {"c10::quint4x2", "quint4x2"},
    {"c10::quint2x4", "quint2x4"},
    {"c10::bits1x8", "bits1x8"},
    {"c10::bits2x4", "bits2x4"},
    {"c10::bits4x2", "bits4x2"},
    {"c10::bits8", "bits8"},
    {"c10::bits16", "bits16"},
    // torch.int1..int7 and uint1..uint7 (sub-byte types; "c10::dummy_uint1_7_t<4>" is uint4)
    {"c10::dummy_int1_7_t<1>", "int1"},
    {"c10::dummy_int1_7_t<2>", "int2"},
    {"c10::dummy_int1_7_t<3>", "int3"},
    {"c10::dummy_int1_7_t<4>", "int4"},
    {"c10::dummy_int1_7_t<5>", "int5"},
    {"c10::dummy_int1_7_t<6>", "int6"},
    {"c10::dummy_int1_7_t<7>", "int7"},
    {"c10::dummy_uint1_7_t<1>", "uint1"},
    {"c10::dummy_uint1_7_t<2>", "uint2"},
    {"c10::dummy_uint1_7_t<3>", "uint3"},
    {"c10::dummy_uint1_7_t<4>", "uint4"},
    {"c10::dummy_uint1_7_t<5>", "uint5"},
    {"c10::dummy_uint1_7_t<6>", "uint6"},
    {"c10::dummy_uint1_7_t<7>", "uint7"},
};

// Spellings of older torch and legacy PyProf records ("half", the name of the Tensor method)
// (docs/formats.md §1.1).
inline constexpr DtypeSpelling kLegacyDtypeNames[] = {
    {"float", "float32"},    {"double", "float64"},     {"half", "float16"},    {"long", "int64"},
    {"int", "int32"},        {"short", "int16"},        {"byte", "uint8"},      {"char", "int8"},
    {"cfloat", "complex64"}, {"cdouble", "complex128"}, {"chalf", "complex32"},
};

// The entry of PyTorch name `name`; null for a name the table lacks.
constexpr const DtypeInfo* dtype_info(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// The name `spelling` maps to in `table`; "" when it holds no such spelling.
constexpr std::string_view dtype_spelled(std::span<const DtypeSpelling> table,
                                         std::string_view spelling) {
  for (const DtypeSpelling& s : table) {
    if (s.spelling == spelling) return s.name;
  }
  return {};
}

// PyTorch's name of a legacy spelling ("half" -> "float16"); any other name unchanged.
constexpr std::string_view canonical_dtype_name(std::string_view dtype) {
  std::string_view name = dtype_spelled(kLegacyDtypeNames, dtype);
  return name.empty() ? dtype : name;
}

// The dtype c10::ScalarType number `number` names; "" when it names none.
constexpr std::string_view dtype_of_scalar_type_number(int64_t number) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.scalar_type >= 0 && d.scalar_type == number) return d.name;
  }
  return {};
}

// The dtype c10::toString(ScalarType) names ("BFloat16" -> "bfloat16"); "" when none.
constexpr std::string_view dtype_of_aten_name(std::string_view aten) {
  if (aten.empty()) return {};
  for (const DtypeInfo& d : kDtypes) {
    if (d.aten == aten) return d.name;
  }
  return {};
}

// Bytes per element of `dtype` (PyTorch names or legacy spellings); 0 when unknown or not
// costed per element.
constexpr int dtype_element_size(std::string_view dtype) {
  const DtypeInfo* d = dtype_info(canonical_dtype_name(dtype));
  return d ? d->size : 0;
}

// The multiple, in elements, that a GEMM's dimensions must be of for Tensor Cores to take it,
// 0 when `dtype` runs on none. One rule for every dtype, NVIDIA's (Matrix Multiplication
// Background User's Guide, "Tensor Core Requirements"; cuBLAS >= 11, cuDNN >= 7.6.3): each
// dimension a multiple of 16 bytes: 8 float16/bfloat16 elements, 16 FP8 or INT8 ones, and 4
// float32 ones run as TF32 (only when `allow_tf32`), 32 FP4 values (16 bytes of float4_e2m1fn_x2).
// `dtype` is a PyTorch name: the models canonicalise legacy spellings before they ask.
constexpr int tensor_core_alignment(std::string_view dtype, bool allow_tf32) {
  const DtypeInfo* d = dtype_info(dtype);
  if (d == nullptr || !d->tensor_cores || d->size <= 0) return 0;
  if (dtype == "float32" && !allow_tf32) return 0;
  // MX/NV FP4 (block-scaled, blocks of 16 or 32 values along K): 16 bytes are 32 values.
  if (dtype == "float4_e2m1fn_x2") return 32;
  return 16 / d->size;
}

// The table as JSON Lines, one dtype a line with its spellings (`pyprof-prof --list-dtypes`):
// {"name":"float32","size":4,"scalar_type":6,"aten":"Float","inductor":"f32","short":"fp32",
//  "tensor_cores":true,"cpp_types":["float"],"legacy":["float"]}.
std::string dtype_table_json_lines();

}  // namespace pyprof
