#include "models/op_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

namespace pyprof::models {
namespace {

TEST(OpArgs, PyprofNamedArguments) {
  OpArgs a = OpArgs::from_json(
      R"({"self":{"shape":[256],"dtype":"float16","stride":[1],"device":"cuda:0"},)"
      R"("mat1":{"shape":[32,128],"dtype":"float16"},"mat2":{"shape":[128,256],"dtype":"float16"},)"
      R"("beta":1,"alpha":2.5,"flag":true,"dims":[0,2],"none":null,"s":"mean"})");
  ASSERT_EQ(a.size(), 9u);
  EXPECT_EQ(a.tensor("mat1", 1)->shape, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(a.tensor("self", 0)->dtype, "float16");
  EXPECT_EQ(a.tensor("self", 0)->stride, (std::vector<int64_t>{1}));
  EXPECT_EQ(a.int_or("beta", 3, 0), 1);
  EXPECT_DOUBLE_EQ(a.double_or("alpha", 4, 0), 2.5);
  EXPECT_TRUE(a.bool_or("flag", 5, false));
  EXPECT_EQ(a.ints_or("dims", 6, {}), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(a.get("none")->kind, Value::Kind::kNone);
  EXPECT_EQ(a.get("s")->s, "mean");
  // Named records are not read by position.
  EXPECT_EQ(a.tensor("input", 1), nullptr);
  EXPECT_EQ(a.tensors().size(), 3u);
}

// Counts past int64 saturate instead of wrapping, and the op becomes unmodelled (prof's "na");
// 3037000500^2 is the first square past 2^63.
TEST(CheckedCounts, OverflowIsAProblemNotAWrappedCost) {
  EXPECT_EQ(count_mul(3037000499, 3037000499), 9223372030926249001);
  EXPECT_EQ(count_mul(3037000500, 3037000500), INT64_MAX);
  EXPECT_EQ(count_add(INT64_MAX, 1), INT64_MAX);
  OpArgs relu =
      OpArgs::from_json(R"({"self":{"shape":[3037000500,3037000500],"dtype":"float32"}})");
  EXPECT_EQ(relu.tensor("self", 0)->numel(), INT64_MAX);
  OpCost c = op_cost("aten::relu", relu);
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kOverflow);
  EXPECT_EQ((std::pair{c.flops, c.bytes}), (std::pair{0.0, 0.0}));
  // The next step of the same thread is costed normally: the overflow mark does not linger.
  c = op_cost("aten::relu", OpArgs::from_json(R"({"self":{"shape":[4,8],"dtype":"float32"}})"));
  EXPECT_TRUE(c.modeled);
  EXPECT_EQ(c.flops, 32);
  // Integer arithmetic on shapes inside a formula: conv's output size.
  c = op_cost("aten::convolution",
              OpArgs::from_json(R"({"input":{"shape":[1,1,8],"dtype":"float32"},)"
                                R"("weight":{"shape":[1,1,3],"dtype":"float32"},"bias":null,)"
                                R"("stride":[1],"padding":[4611686018427387904],"dilation":[1],)"
                                R"("transposed":false,"output_padding":[0],"groups":1})"));
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kOverflow);
}

TEST(CheckedCounts, NegativeDimensionsAreRejected) {
  OpCost c =
      op_cost("aten::mm", OpArgs::from_json(R"({"self":{"shape":[-32,64],"dtype":"float32"},)"
                                            R"("mat2":{"shape":[64,-128],"dtype":"float32"}})"));
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kNegativeDimension);
  EXPECT_EQ(c.params, "negative dimension -32 in shape [-32,64]");
}

TEST(OpArgs, EmitNvtxPositionalShapes) {
  OpArgs a = OpArgs::from_json(R"({"0":{"shape":[5,3]},"1":{"shape":[3,64]},"2":{"shape":[]}})");
  EXPECT_EQ(a.tensor("self", 0)->shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(a.tensor("mat2", 1)->dtype, "");
  EXPECT_EQ(a.tensor("x", 2)->numel(), 1);
  EXPECT_DOUBLE_EQ(tensor_bytes(*a.tensor("self", 0)), 5 * 3 * 4);  // unknown dtype: 4 bytes
}

TEST(OpArgs, LegacyPyprofList) {
  OpArgs a = OpArgs::from_json(
      R"([{"name":"","type":"tensor","shape":[32,128],"dtype":"float16"},)"
      R"({"name":"","type":"tensor","shape":[256,128],"dtype":"float16"},)"
      R"({"name":"stride","type":"tuple","value":[2,2]},{"name":"","type":"float","value":2.0}])");
  EXPECT_EQ(a.tensor("input", 0)->shape, (std::vector<int64_t>{32, 128}));
  EXPECT_EQ(a.ints_or("stride", 99, {}), (std::vector<int64_t>{2, 2}));
  EXPECT_DOUBLE_EQ(a.double_or("p", 3, 0), 2.0);
}

TEST(OpArgs, GarbageIsHarmless) {
  for (const char* json : {"", "{", "[1,2", "nope", "{\"a\":{\"shape\":\"x\"}}", "[1,{}]"}) {
    OpArgs a = OpArgs::from_json(json);
    EXPECT_EQ(a.tensors().size(), 0u) << json;
  }
}

TEST(Dtypes, SizesAndTensorCoreAlignment) {
  EXPECT_EQ(dtype_size("bfloat16"), 2);
  EXPECT_EQ(dtype_size("float8_e4m3fn"), 1);
  EXPECT_EQ(dtype_size("complex64"), 8);
  EXPECT_EQ(dtype_size("bool"), 1);
  EXPECT_EQ(dtype_size("weird"), 0);
  EXPECT_TRUE(tc_eligible("float16", 64, 128, 256, false));
  EXPECT_FALSE(tc_eligible("float16", 64, 127, 256, false));
  EXPECT_FALSE(tc_eligible("float32", 64, 128, 256, false));
  EXPECT_TRUE(tc_eligible("float32", 64, 128, 256, true));
  EXPECT_FALSE(tc_eligible("float8_e4m3fn", 64, 8, 256, false));
  EXPECT_TRUE(tc_eligible("float8_e4m3fn", 64, 16, 256, false));
}

// tc_eligible is the one table's rule (common/dtypes.h), which prof's advice reads too: every
// dtype's alignment, and no Tensor Cores for the dtypes without one.
TEST(Dtypes, TensorCoreEligibilityIsTheTablesAlignment) {
  for (const DtypeInfo& d : kDtypes) {
    SCOPED_TRACE(std::string(d.name));
    const int64_t a = tensor_core_alignment(d.name, /*allow_tf32=*/true);
    if (a == 0) {
      EXPECT_FALSE(tc_eligible(d.name, 64, 64, 64, true));
      continue;
    }
    EXPECT_TRUE(tc_eligible(d.name, a, 2 * a, 3 * a, true));
    EXPECT_FALSE(tc_eligible(d.name, a, a + a / 2, a, true));
  }
  EXPECT_TRUE(tc_eligible("float32", 4, 4, 12, true));  // TF32: 16 bytes are 4 elements
  EXPECT_FALSE(tc_eligible("float32", 4, 4, 12, false));
  EXPECT_EQ(short_dtype("float8_e4m3fn"), "fp8");
  EXPECT_EQ(short_dtype("int16"), "int16");  // PyProf's spelling is the name itself
}

TEST(Dtypes, LegacyAliasesCostAsTheirPythonNames) {
  ASSERT_FALSE(dtype_aliases().empty());
  for (const DtypeAlias& alias : dtype_aliases()) {
    SCOPED_TRACE(std::string(alias.spelling) + " -> " + std::string(alias.name));
    EXPECT_NE(alias.spelling, alias.name);
    EXPECT_GT(dtype_size(alias.name), 0);  // an alias names a dtype this table knows
    EXPECT_EQ(dtype_size(alias.spelling), dtype_size(alias.name));
    EXPECT_EQ(canonical_dtype(alias.spelling), alias.name);
    EXPECT_EQ(canonical_dtype(alias.name), alias.name);
  }
  EXPECT_EQ(canonical_dtype("half"), "float16");
  EXPECT_EQ(canonical_dtype("long"), "int64");
  EXPECT_EQ(canonical_dtype("weird"), "weird");
  EXPECT_EQ(canonical_dtype(""), "");
  EXPECT_EQ(dtype_size("half"), 2);
  EXPECT_EQ(dtype_size("cdouble"), 16);

  // A legacy record with legacy spellings costs what the same record with Python names does.
  auto add_cost = [](const char* dtype) {
    std::string t =
        std::string(R"({"name":"","type":"tensor","shape":[8,64],"dtype":")") + dtype + R"("})";
    return op_cost("add", OpArgs::from_json("[" + t + "," + t + "]"));
  };
  EXPECT_EQ(add_cost("half").bytes, add_cost("float16").bytes);
  EXPECT_EQ(add_cost("half").dtype, "float16");
  // Tensor.half() converts by its method name: a copy of a float32 tensor, nothing for fp16.
  auto half_of = [](const char* dtype) {
    return op_cost("half", OpArgs::from_json(std::string(R"([{"name":"","type":"tensor",)") +
                                             R"("shape":[100],"dtype":")" + dtype + R"("}])"));
  };
  EXPECT_EQ(half_of("float32").bytes, 100 * 4 + 100 * 2);
  EXPECT_EQ(half_of("float16").bytes, 0);
  EXPECT_EQ(half_of("half").bytes, 0);
}

TEST(Registry, UnknownOpIsUnmodeled) {
  OpCost c = op_cost("aten::definitely_not_an_op", OpArgs{});
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.flops, 0);
}

}  // namespace
}  // namespace pyprof::models

namespace pyprof::models {
namespace {

TEST(Registry, LegacyDeprecatedScalarFirstOverloads) {
  // Tensor.add_(-20, grad), as legacy PyProf recorded it: [self, alpha, other].
  OpCost legacy = op_cost(
      "add_",
      OpArgs::from_json(R"([{"name":"","type":"tensor","shape":[600,200],"dtype":"float32"},)"
                        R"({"name":"","type":"int","value":-20},)"
                        R"({"name":"","type":"tensor","shape":[600,200],"dtype":"float32"}])"));
  // The same call by schema names: self += alpha * other.
  OpCost named =
      op_cost("aten::add_",
              OpArgs::from_json(
                  R"({"self":{"shape":[600,200],"dtype":"float32"},"other":{"shape":[600,200],)"
                  R"("dtype":"float32"},"alpha":-20})"));
  ASSERT_TRUE(legacy.modeled);
  EXPECT_EQ(legacy.flops, named.flops);
  EXPECT_EQ(legacy.bytes, named.bytes);
  EXPECT_EQ(legacy.bytes, 3 * 600 * 200 * 4);  // read self and other, write self
  EXPECT_EQ(legacy.flops, 2 * 600 * 200);      // a multiply (alpha != 1) and an add
}

// docs/ops.md "compiled kernels": the nodes' FLOPs summed, the buffers' bytes, and "na" unless
// every node has a model and every buffer a size.
TEST(CompiledKernel, SumOfNodesAndItsOwnBuffers) {
  const std::string x = R"({"shape":[4,8],"dtype":"float16","stride":[8,1],"device":"cuda:0"})";
  const std::string mean = R"({"shape":[4,1],"dtype":"float32","stride":[1,1],"device":"cuda:0"})";
  const std::string kernel = R"({"nodes":[{"op":"aten::mul","overload":"Tensor","args":{"self":)" +
                             x + R"(,"other":)" + x +
                             R"(}},{"op":"aten::mean","overload":"dim","args":{"self":)" + x +
                             R"(,"dim":[1],"keepdim":true}}],"reads":[)" + x + "," + x +
                             R"(],"writes":[)" + mean + R"(],"missing":0})";
  CompiledKernelNodes nodes;
  OpCost c = compiled_kernel_cost(kernel, &nodes);
  ASSERT_TRUE(c.modeled);
  // mul: 32; mean: E + O = 32 + 4.
  EXPECT_EQ(c.flops, 68);
  EXPECT_EQ(c.bytes, 64 + 64 + 16);  // two fp16 [4,8] reads, one fp32 [4,1] write
  EXPECT_EQ(nodes.count, 2);
  EXPECT_EQ(nodes.modeled, 2);
  // Unfused: mul reads 2 x 64 and writes 64; mean reads 64 and writes [4,1] fp16 (8).
  EXPECT_EQ(nodes.unfused_bytes, 64 * 3 + 64 + 8);
  EXPECT_EQ(c.family, "compiled");
  EXPECT_EQ(c.params, "nodes=2,fp32,unfused_bytes=264");

  std::string unknown = kernel;
  unknown.replace(unknown.find("aten::mul"), 9, "aten::frob");
  c = compiled_kernel_cost(unknown, &nodes);
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(nodes.unmodeled, std::vector<std::string>{"aten::frob"});

  std::string missing = kernel;
  missing.replace(missing.find("\"missing\":0"), 11, "\"missing\":2");
  EXPECT_FALSE(compiled_kernel_cost(missing).modeled);

  const std::string symbolic = R"({"symbolic":true,"dtype":"float16","device":"cuda:0"})";
  std::string dynamic = kernel;
  dynamic.replace(dynamic.find(R"("writes":[)") + 10, mean.size(), symbolic);
  EXPECT_FALSE(compiled_kernel_cost(dynamic).modeled);

  EXPECT_FALSE(compiled_kernel_cost("{not json").modeled);

  // pyprof's form since dynamic shapes are bound: sizes as expressions, "symbolic":true. Not
  // modelled until bound to one call's sizes, then exactly the static kernel's cost.
  std::string sized = kernel;
  for (size_t at = sized.find(R"("shape":[4,)"); at != std::string::npos;
       at = sized.find(R"("shape":[4,)", at)) {
    sized.replace(at, 11, R"("shape":["s0",)");
  }
  for (size_t at = sized.find(R"("device":"cuda:0"})"); at != std::string::npos;
       at = sized.find(R"("device":"cuda:0"})", at + 1)) {
    sized.replace(at, 18, R"("device":"cuda:0","symbolic":true})");
  }
  EXPECT_FALSE(compiled_kernel_cost(sized).modeled);
  const OpCost bound = compiled_kernel_cost(bind_symbols(sized, R"({"s0":4})"));
  ASSERT_TRUE(bound.modeled);
  EXPECT_EQ(bound.flops, 68);
  EXPECT_EQ(bound.bytes, 64 + 64 + 16);
  EXPECT_EQ(bind_symbols(sized, R"({"s0":4})").find("symbolic"), std::string::npos);
  const OpCost half = compiled_kernel_cost(bind_symbols(sized, R"({"s0":2})"));
  EXPECT_EQ(half.flops, 34);                          // mul 16, mean 16 + 2
  EXPECT_EQ(bind_symbols(sized, R"({"s1":4})"), "");  // s0 not given: stays na
  EXPECT_EQ(bind_symbols(sized, "{not json"), "");
  // A kernel of no ATen node (a layout copy Inductor inserted): no FLOPs, its buffers' bytes.
  c = compiled_kernel_cost(R"({"nodes":[],"reads":[)" + x + R"(],"writes":[)" + x + "]}");
  EXPECT_TRUE(c.modeled);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes, 128);
}

// Sizes as sympy prints them under dynamic shapes (Inductor's FX annotations).
TEST(CompiledKernel, SizeExpressions) {
  const std::vector<std::pair<std::string, int64_t>> s = {{"s0", 8}, {"s77", 5}, {"u1", -3}};
  EXPECT_EQ(eval_size_expr("s77", s), 5);
  EXPECT_EQ(eval_size_expr("128*s77", s), 640);
  EXPECT_EQ(eval_size_expr("s0 + s77 - 1", s), 12);
  EXPECT_EQ(eval_size_expr("((s0 + 7)//8)", s), 1);
  EXPECT_EQ(eval_size_expr("u1//2", s), -2);  // floor division, as Python's
  EXPECT_EQ(eval_size_expr("u1 % 2", s), 1);
  EXPECT_EQ(eval_size_expr("s0**2*s77", s), 320);
  EXPECT_EQ(eval_size_expr("-s0 + 2*s77", s), 2);
  EXPECT_EQ(eval_size_expr("Max(1, s0 - 10)", s), 1);
  EXPECT_EQ(eval_size_expr("Min(s0, s77, 7)", s), 5);
  EXPECT_EQ(eval_size_expr("FloorDiv(s77, 2)", s), 2);
  EXPECT_EQ(eval_size_expr("CeilDiv(s77, 2)", s), 3);
  EXPECT_EQ(eval_size_expr("ModularIndexing(s0*s77, 3, 4)", s), 1);  // (40 // 3) % 4
  EXPECT_EQ(eval_size_expr("s0/2", s), 4);
  EXPECT_EQ(eval_size_expr("s77/2", s), std::nullopt);  // not whole
  EXPECT_EQ(eval_size_expr("s1", s), std::nullopt);     // unknown symbol
  EXPECT_EQ(eval_size_expr("float32", s), std::nullopt);
  EXPECT_EQ(eval_size_expr("s0 +", s), std::nullopt);
  EXPECT_EQ(eval_size_expr("Frob(s0)", s), std::nullopt);
  EXPECT_EQ(eval_size_expr("s0//0", s), std::nullopt);
  EXPECT_EQ(eval_size_expr("4611686018427387904*s0", s), std::nullopt);  // overflow
  EXPECT_EQ(eval_size_expr("2**63", s), std::nullopt);
}

}  // namespace
}  // namespace pyprof::models
