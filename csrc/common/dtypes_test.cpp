// The dtype table against what it stands for: c10's own numbering and names, NVIDIA's Tensor
// Core rule (16 bytes a dimension), and the spellings parse and the models have read all along.
#include "common/dtypes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace pyprof {
namespace {

TEST(Dtypes, NamesAndSpellingsAreUnique) {
  std::set<std::string_view> names, inductor, aten;
  std::set<int> numbers;
  for (const DtypeInfo& d : kDtypes) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    if (!d.inductor.empty()) {
      EXPECT_TRUE(inductor.insert(d.inductor).second) << d.inductor;
    }
    if (!d.aten.empty()) {
      EXPECT_TRUE(aten.insert(d.aten).second) << d.aten;
    }
    if (d.scalar_type >= 0) {
      EXPECT_TRUE(numbers.insert(d.scalar_type).second) << d.name;
    }
  }
  // Every spelling names a dtype of the table.
  for (const DtypeSpelling& s : kCppTypeNames) EXPECT_NE(dtype_info(s.name), nullptr) << s.name;
  for (const DtypeSpelling& s : kLegacyDtypeNames) EXPECT_NE(dtype_info(s.name), nullptr) << s.name;
}

TEST(Dtypes, EverySourcesSpellingFindsItsDtype) {
  // c10::ScalarType (c10/core/ScalarType.h): Float is 6, BFloat16 15, Float8_e4m3fn 24.
  EXPECT_EQ(dtype_of_scalar_type_number(6), "float32");
  EXPECT_EQ(dtype_of_scalar_type_number(15), "bfloat16");
  EXPECT_EQ(dtype_of_scalar_type_number(24), "float8_e4m3fn");
  EXPECT_EQ(dtype_of_scalar_type_number(18), "");  // no dtype pyprof reads
  EXPECT_EQ(dtype_of_scalar_type_number(-1), "");
  // c10::toString(ScalarType), Kineto's record_param_comms "dtype".
  EXPECT_EQ(dtype_of_aten_name("BFloat16"), "bfloat16");
  EXPECT_EQ(dtype_of_aten_name("Long"), "int64");
  EXPECT_EQ(dtype_of_aten_name(""), "");
  // Kineto's "Input type": GCC's spellings and other compilers'.
  EXPECT_EQ(dtype_spelled(kCppTypeNames, "long int"), "int64");
  EXPECT_EQ(dtype_spelled(kCppTypeNames, "long long"), "int64");
  EXPECT_EQ(dtype_spelled(kCppTypeNames, "c10::BFloat16"), "bfloat16");
  EXPECT_EQ(dtype_spelled(kCppTypeNames, "c10::dummy_uint1_7_t<4>"), "uint4");
  EXPECT_EQ(dtype_spelled(kCppTypeNames, "Float"), "");
  // Legacy PyProf and older torch.
  EXPECT_EQ(canonical_dtype_name("half"), "float16");
  EXPECT_EQ(canonical_dtype_name("float16"), "float16");
  EXPECT_EQ(canonical_dtype_name("no such dtype"), "no such dtype");
  EXPECT_EQ(dtype_element_size("half"), 2);
  EXPECT_EQ(dtype_element_size("complex128"), 16);
  EXPECT_EQ(dtype_element_size("int4"), 0);  // sub-byte: not costed per element
}

TEST(Dtypes, TensorCoreAlignmentIsSixteenBytesADimension) {
  // NVIDIA's Matrix Multiplication Background guide, "Tensor Core Requirements": with cuBLAS
  // >= 11 and cuDNN >= 7.6.3 every dimension a multiple of 16 bytes: FP16 8, TF32 4, INT8 16.
  EXPECT_EQ(tensor_core_alignment("float16", true), 8);
  EXPECT_EQ(tensor_core_alignment("bfloat16", false), 8);
  EXPECT_EQ(tensor_core_alignment("float32", true), 4);   // TF32
  EXPECT_EQ(tensor_core_alignment("float32", false), 0);  // TF32 off: CUDA cores
  EXPECT_EQ(tensor_core_alignment("int8", true), 16);
  EXPECT_EQ(tensor_core_alignment("uint8", true), 16);
  EXPECT_EQ(tensor_core_alignment("float8_e4m3fn", true), 16);
  EXPECT_EQ(tensor_core_alignment("float64", true), 0);
  EXPECT_EQ(tensor_core_alignment("int64", true), 0);
  EXPECT_EQ(tensor_core_alignment("half", true), 0);  // a PyTorch name is asked for
  // FP4 (two values a byte): the models count K in values, and 16 bytes hold 32 of them.
  EXPECT_EQ(tensor_core_alignment("float4_e2m1fn_x2", true), 32);
  for (const DtypeInfo& d : kDtypes) {
    const int alignment = tensor_core_alignment(d.name, true);
    const int values_per_element = d.name == "float4_e2m1fn_x2" ? 2 : 1;
    if (alignment != 0) {
      EXPECT_EQ(alignment * d.size, 16 * values_per_element) << d.name;
    }
  }
}

}  // namespace
}  // namespace pyprof
