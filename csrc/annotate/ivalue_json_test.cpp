#include "ivalue_json.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <limits>
#include <string>

namespace pyprof {
namespace {

std::string encode(const c10::IValue& v, ArgKind kind = ArgKind::kGeneric,
                   const EncodeLimits& limits = {}) {
  std::string out;
  JsonWriter w(out);
  encode_ivalue(w, v, kind, limits);
  w.finish();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << "invalid JSON: " << out;
  return out;
}

TEST(IValueJson, ContiguousTensor) {
  EXPECT_EQ(encode(at::zeros({2, 3})),
            R"({"shape":[2,3],"dtype":"float32","stride":[3,1],"device":"cpu"})");
}

TEST(IValueJson, TransposedTensorKeepsItsStrides) {
  EXPECT_EQ(encode(at::zeros({2, 3}, at::kDouble).t()),
            R"({"shape":[3,2],"dtype":"float64","stride":[1,3],"device":"cpu"})");
}

TEST(IValueJson, ZeroDimAndEmptyTensors) {
  EXPECT_EQ(encode(at::scalar_tensor(1.0, at::kLong)),
            R"({"shape":[],"dtype":"int64","stride":[],"device":"cpu"})");
  EXPECT_EQ(encode(at::empty({0, 4}, at::kBool)),
            R"({"shape":[0,4],"dtype":"bool","stride":[4,1],"device":"cpu"})");
}

TEST(IValueJson, DtypeNamesFollowPython) {
  const std::pair<at::ScalarType, const char*> cases[] = {
      {at::kHalf, "float16"},
      {at::kBFloat16, "bfloat16"},
      {at::kComplexFloat, "complex64"},
      {at::kComplexDouble, "complex128"},
      {at::kByte, "uint8"},
      {at::kChar, "int8"},
      {at::kShort, "int16"},
      {at::kInt, "int32"},
      {at::kFloat8_e4m3fn, "float8_e4m3fn"},
      {at::kFloat8_e5m2, "float8_e5m2"},
      {at::kFloat, "float32"},
      {at::kDouble, "float64"},
      {at::kLong, "int64"},
      {at::kBool, "bool"},
      {at::kComplexHalf, "complex32"},
      {at::kUInt16, "uint16"},
      {at::kFloat8_e8m0fnu, "float8_e8m0fnu"},
  };
  for (const auto& [type, name] : cases) {
    EXPECT_EQ(dtype_name(type), name);
    const std::string json = encode(at::empty({1}, type));
    EXPECT_NE(json.find(std::string("\"dtype\":\"") + name + "\""), std::string::npos) << json;
  }
}

// Types a tensor cannot be made of here, named as Python names them (str(torch.X)).
TEST(IValueJson, DtypeNamesOfUnusualTypesFollowPython) {
  EXPECT_EQ(dtype_name(at::ScalarType::Float4_e2m1fn_x2), "float4_e2m1fn_x2");
  EXPECT_EQ(dtype_name(at::ScalarType::QUInt2x4), "quint2x4");
  EXPECT_EQ(dtype_name(at::ScalarType::Bits8), "bits8");
  for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i) {
    const std::string_view name = dtype_name(static_cast<at::ScalarType>(i));
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_EQ(name.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string_view::npos) << name;
  }
}

TEST(IValueJson, UndefinedTensorAndNoneAreNull) {
  EXPECT_EQ(encode(at::Tensor()), "null");
  EXPECT_EQ(encode(c10::IValue()), "null");
}

TEST(IValueJson, SparseTensorHasLayoutInsteadOfStrides) {
  const at::Tensor sparse = at::eye(3).to_sparse();
  EXPECT_EQ(encode(sparse),
            R"({"shape":[3,3],"dtype":"float32","layout":"sparse_coo","device":"cpu"})");
}

TEST(IValueJson, Scalars) {
  EXPECT_EQ(encode(true), "true");
  EXPECT_EQ(encode(false), "false");
  EXPECT_EQ(encode(int64_t{-42}), "-42");
  EXPECT_EQ(encode(std::numeric_limits<int64_t>::max()), "9223372036854775807");
  EXPECT_EQ(encode(0.5), "0.5");
  EXPECT_EQ(encode(std::numeric_limits<double>::infinity()), R"("inf")");
  EXPECT_EQ(encode(std::numeric_limits<double>::quiet_NaN()), R"("nan")");
  EXPECT_EQ(encode(c10::complex<double>(1.5, -2.0)), R"({"real":1.5,"imag":-2})");
  EXPECT_EQ(encode(c10::SymInt(7)), "7");
}

TEST(IValueJson, StringsAreEscaped) {
  EXPECT_EQ(encode(std::string("ij,jk->ik")), R"("ij,jk->ik")");
  EXPECT_EQ(encode(std::string("q\"\n\\")), R"("q\"\n\\")");
}

TEST(IValueJson, EnumArgumentsBoxedAsIntsAreNamedByTheirSchemaKind) {
  EXPECT_EQ(encode(static_cast<int64_t>(at::kHalf), ArgKind::kScalarType), R"("float16")");
  EXPECT_EQ(encode(static_cast<int64_t>(at::kBFloat16), ArgKind::kScalarType), R"("bfloat16")");
  EXPECT_EQ(encode(static_cast<int64_t>(at::kStrided), ArgKind::kLayout), R"("strided")");
  EXPECT_EQ(encode(static_cast<int64_t>(at::MemoryFormat::ChannelsLast), ArgKind::kMemoryFormat),
            R"("channels_last")");
  // Out of range: the raw number, never a wrong name.
  EXPECT_EQ(encode(int64_t{999}, ArgKind::kScalarType), "999");
  EXPECT_EQ(encode(int64_t{-1}, ArgKind::kLayout), "-1");
  // The same int without a schema kind stays an int.
  EXPECT_EQ(encode(static_cast<int64_t>(at::kHalf)), "5");
}

TEST(IValueJson, ArgKindFromSchemaTypes) {
  EXPECT_EQ(arg_kind_of(c10::ScalarTypeType::get()), ArgKind::kScalarType);
  EXPECT_EQ(arg_kind_of(c10::OptionalType::create(c10::ScalarTypeType::get())),
            ArgKind::kScalarType);
  EXPECT_EQ(arg_kind_of(c10::OptionalType::create(c10::LayoutType::get())), ArgKind::kLayout);
  EXPECT_EQ(arg_kind_of(c10::MemoryFormatType::get()), ArgKind::kMemoryFormat);
  EXPECT_EQ(arg_kind_of(c10::IntType::get()), ArgKind::kGeneric);
}

TEST(IValueJson, Lists) {
  EXPECT_EQ(encode(c10::List<int64_t>({2, 2})), "[2,2]");
  EXPECT_EQ(encode(c10::List<double>({0.5, 1.0})), "[0.5,1]");
  EXPECT_EQ(encode(c10::List<bool>({true, false, true})), "[true,false,true]");
  EXPECT_EQ(encode(c10::List<int64_t>()), "[]");
  c10::List<at::Tensor> tensors({at::zeros({1}), at::zeros({2, 2}, at::kHalf)});
  EXPECT_EQ(encode(tensors), R"([{"shape":[1],"dtype":"float32","stride":[1],"device":"cpu"},)"
                             R"({"shape":[2,2],"dtype":"float16","stride":[2,1],"device":"cpu"}])");
  // List[Optional[Tensor]], as aten::index takes it.
  c10::List<std::optional<at::Tensor>> optionals;
  optionals.push_back(std::nullopt);
  optionals.push_back(at::zeros({3}, at::kLong));
  EXPECT_EQ(encode(optionals),
            R"([null,{"shape":[3],"dtype":"int64","stride":[1],"device":"cpu"}])");
}

TEST(IValueJson, HugeIntListIsTruncatedWithACount) {
  std::vector<int64_t> values(1000, 1);
  const std::string json = encode(c10::List<int64_t>(values));
  std::string expected = "[";
  for (int i = 0; i < 64; ++i) expected += "1,";
  expected += "\"...+936\"]";
  EXPECT_EQ(json, expected);
}

TEST(IValueJson, TensorListHasItsOwnLimit) {
  std::vector<at::Tensor> many(300, at::zeros({1}));
  EncodeLimits limits;
  const std::string json = encode(c10::List<at::Tensor>(many), ArgKind::kGeneric, limits);
  EXPECT_NE(json.find("\"...+44\"]"), std::string::npos);
  size_t tensors = 0;
  for (size_t pos = 0; (pos = json.find("\"shape\"", pos)) != std::string::npos; ++pos) ++tensors;
  EXPECT_EQ(tensors, 256u);
}

TEST(IValueJson, TensorWithMoreDimsThanTheListLimit) {
  std::vector<int64_t> shape(70, 1);
  const std::string json = encode(at::zeros(shape));
  EXPECT_NE(json.find("\"shape\":[1,1,"), std::string::npos);
  EXPECT_NE(json.find("\"...+6\"],\"dtype\""), std::string::npos) << json;
}

TEST(IValueJson, TuplesDictsAndDevices) {
  EXPECT_EQ(encode(c10::ivalue::Tuple::create({c10::IValue(int64_t{1}), c10::IValue("a")})),
            R"([1,"a"])");
  c10::Dict<std::string, int64_t> dict;
  dict.insert("k", 3);
  EXPECT_EQ(encode(dict), R"({"dict":[["k",3]]})");
  EXPECT_EQ(encode(c10::Device(c10::DeviceType::CUDA, 1)), R"("cuda:1")");
  EXPECT_EQ(encode(c10::Device(c10::DeviceType::CPU)), R"("cpu")");
  EXPECT_EQ(encode(at::empty({2}, at::TensorOptions().device(at::kMeta))),
            R"({"shape":[2],"dtype":"float32","stride":[1],"device":"meta"})");
}

TEST(IValueJson, DeepNestingIsCut) {
  c10::IValue v(int64_t{1});
  for (int i = 0; i < 10; ++i) v = c10::ivalue::Tuple::create({v});
  const std::string json = encode(v);
  EXPECT_NE(json.find(R"("<Tuple>")"), std::string::npos) << json;
}

TEST(IValueJson, OpaqueKindsAreNamed) {
  EXPECT_EQ(encode(c10::IValue(at::detail::getDefaultCPUGenerator())), R"("<Generator>")");
  EXPECT_EQ(encode(c10::IValue(c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::kCPU)))),
            R"("<Stream>")");
}

}  // namespace
}  // namespace pyprof
