// Triton launches without compile metadata (models/triton_launch.cpp, docs/ops.md): the bytes
// estimated from the launcher record's arguments, as parse writes them from torch.profiler's
// `Input Dims` / `Input type` / `Concrete Inputs`. The first three argument lists are copied
// from the vLLM MI300X trace (../shared/traces/real/kineto_tracelens-mi300x-vllm-piecewise-
// graph-capture.json.gz, the net.dict's "args" lines); the counts are worked by hand.
#include <gtest/gtest.h>

#include <string>

#include "models/op_model.h"

namespace pyprof::models {
namespace {

OpCost launch(const char* name, const char* args) { return op_cost(name, OpArgs::from_json(args)); }

TEST(TritonLaunch, KindFromInductorsName) {
  EXPECT_EQ(triton_kernel_kind("triton_poi_fused__to_copy_1"), TritonKernelKind::kPointwise);
  EXPECT_EQ(triton_kernel_kind("triton_red_fused_sum_3"), TritonKernelKind::kReduction);
  EXPECT_EQ(triton_kernel_kind("triton_per_fused_native_layer_norm_0"),
            TritonKernelKind::kPersistentReduction);
  EXPECT_EQ(triton_kernel_kind("triton_tem_fused_mm_0"), TritonKernelKind::kTemplate);
  EXPECT_EQ(triton_kernel_kind("triton_for_fused_0"), TritonKernelKind::kForeach);
  // Users' Triton kernels and other names are no Inductor kind.
  EXPECT_EQ(triton_kernel_kind("create_flashinfer_kv_indices_triton"), TritonKernelKind::kNone);
  EXPECT_EQ(triton_kernel_kind("triton_"), TritonKernelKind::kNone);
  EXPECT_EQ(triton_kernel_kind("triton_poi"), TritonKernelKind::kNone);
  EXPECT_EQ(triton_kernel_kind("triton_pointwise_kernel"), TritonKernelKind::kNone);
  EXPECT_EQ(triton_kernel_kind("triton_abc_fused_0"), TritonKernelKind::kNone);
}

// The MoE layer's padding: [8192,2880] bf16 in, [8192,3072] bf16 out, xnumel 8192*3072.
// N = 25165824; in 8192*2880*2 = 47185920 (under N*2), out 8192*3072*2 = 50331648:
// 97517568 bytes, no FLOPs.
TEST(TritonLaunch, PointwiseFromTheRealLauncherArguments) {
  OpCost c = launch("triton_poi_fused_constant_pad_nd_moe_forward_0",
                    R"({"0":{"shape":[8192,2880],"dtype":"bfloat16","stride":[2880,1]},)"
                    R"("1":{"shape":[8192,3072],"dtype":"bfloat16","stride":[3072,1]},)"
                    R"("2":25165824})");
  EXPECT_FALSE(c.modeled);  // no FLOP model: prof keeps it out of the totals
  EXPECT_TRUE(c.bytes_estimate);
  EXPECT_DOUBLE_EQ(c.bytes, 97517568);
  EXPECT_DOUBLE_EQ(c.flops, 0);
  EXPECT_EQ(c.family, "triton");
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(c.params, "triton=poi,N=25165824,tensors=2,flops=na,bytes=est");
  EXPECT_EQ(c.problem, CostProblem::kNone);

  // The rotary cache's cast: [131072,64] float32 in, bf16 out, xnumel 8388608:
  // 33554432 + 16777216 = 50331648.
  OpCost copy = launch("triton_poi_fused__to_copy_1",
                       R"({"0":{"shape":[131072,64],"dtype":"float32","stride":[64,1]},)"
                       R"("1":{"shape":[131072,64],"dtype":"bfloat16","stride":[64,1]},)"
                       R"("2":8388608})");
  EXPECT_TRUE(copy.bytes_estimate);
  EXPECT_DOUBLE_EQ(copy.bytes, 50331648);
}

// The same trace's `triton_poi_fused_0` (an embedding gather from the [201088,2880] table and the
// rotary cache's cast in one kernel) has no integer after its tensors: Inductor specialised its
// index space, so nothing bounds what it reads of the table. Not charged the table's 1.16 GB:
// no estimate at all.
TEST(TritonLaunch, NoIndexSpaceNoEstimate) {
  OpCost c = launch("triton_poi_fused_0",
                    R"({"0":{"shape":[8192],"dtype":"int32","stride":[1]},)"
                    R"("1":{"shape":[201088,2880],"dtype":"bfloat16","stride":[2880,1]},)"
                    R"("2":{"shape":[131072,64],"dtype":"float32","stride":[64,1]},)"
                    R"("3":{"shape":[8192,2880],"dtype":"bfloat16","stride":[2880,1]},)"
                    R"("4":{"shape":[131072,64],"dtype":"bfloat16","stride":[64,1]}})");
  EXPECT_FALSE(c.modeled);
  EXPECT_FALSE(c.bytes_estimate);
  EXPECT_DOUBLE_EQ(c.bytes, 0);
  EXPECT_EQ(c.params, "triton=poi,index space not recorded");
}

// A gather with its xnumel recorded: indices [8192] int64, table [201088,2880] bf16, out
// [8192,2880] bf16, N = 8192*2880 = 23592960. The table is charged N*2 = 47185920, not its
// 1158266880 bytes; indices 65536 (under N*8); out 47185920: 94437376.
TEST(TritonLaunch, GatherChargedTheElementsItsIndexSpaceTouches) {
  OpCost c = launch("triton_poi_fused_embedding_0",
                    R"({"0":{"shape":[8192],"dtype":"int64"},)"
                    R"("1":{"shape":[201088,2880],"dtype":"bfloat16"},)"
                    R"("2":{"shape":[8192,2880],"dtype":"bfloat16"},"3":23592960})");
  EXPECT_TRUE(c.bytes_estimate);
  EXPECT_DOUBLE_EQ(c.bytes, 94437376);
  EXPECT_EQ(c.params, "triton=poi,N=23592960,tensors=3,capped=1,flops=na,bytes=est");
}

// A reduction: in [64,4096] f32, out [64] f32, xnumel 64, r0_numel 4096: N = 262144 points;
// in 1048576 (= N*4), out 256: 1048832. Size variables before the numels (dynamic shapes: ks0)
// multiply in: N is then at least the numels' product, so the cap only loosens.
TEST(TritonLaunch, ReductionAndSizeVariables) {
  OpCost red =
      launch("triton_red_fused_sum_0", R"({"0":{"shape":[64,4096],"dtype":"float32"},)"
                                       R"("1":{"shape":[64],"dtype":"float32"},"2":64,"3":4096})");
  EXPECT_TRUE(red.bytes_estimate);
  EXPECT_DOUBLE_EQ(red.bytes, 1048832);
  EXPECT_EQ(red.params, "triton=red,N=262144,tensors=2,flops=na,bytes=est");
  // ks0 = 8, xnumel = 64: N = 512 bounds nothing here: 2*64*2 = 256 bytes.
  OpCost dyn =
      launch("triton_poi_fused_add_0", R"({"0":{"shape":[8,8],"dtype":"float16"},)"
                                       R"("1":{"shape":[8,8],"dtype":"float16"},"2":8,"3":64})");
  EXPECT_DOUBLE_EQ(dyn.bytes, 256);
  // An integer between tensors is no numel: only those after the last tensor count.
  OpCost mid = launch("triton_per_fused_mean_0", R"({"0":{"shape":[1000],"dtype":"float32"},"1":3,)"
                                                 R"("2":{"shape":[10],"dtype":"float32"},"3":10})");
  // N = 10: 40 + 40 = 80.
  EXPECT_DOUBLE_EQ(mid.bytes, 80);
  // A trailing value that is no count (a float) leaves the index space unknown.
  OpCost other =
      launch("triton_poi_fused_mul_0", R"({"0":{"shape":[10],"dtype":"float32"},"1":0.5,"2":10})");
  EXPECT_FALSE(other.bytes_estimate);
}

// A name listing a windowed op: Inductor's pointwise max-pool loads 4 input elements per output
// point, so the input is not capped at N. in [8,16,32,32] f16 262144 + out [8,16,16,16] f16
// 65536 + int8 offsets 32768 = 360448 (capped at N = 32768 it would be 163840).
TEST(TritonLaunch, WindowedOpsCountTheirTensorsWhole) {
  OpCost pool = launch("triton_poi_fused_max_pool2d_with_indices_0",
                       R"({"0":{"shape":[8,16,32,32],"dtype":"float16"},)"
                       R"("1":{"shape":[8,16,16,16],"dtype":"float16"},)"
                       R"("2":{"shape":[8,16,16,16],"dtype":"int8"},"3":32768})");
  EXPECT_TRUE(pool.bytes_estimate);
  EXPECT_DOUBLE_EQ(pool.bytes, 360448);
  EXPECT_EQ(pool.params, "triton=poi,windowed,tensors=3,flops=na,bytes=est");
}

// Templates (GEMM, convolution) and foreach kernels read and write their tensors whole:
// A [128,64] f16 16384 + B [64,256] f16 32768 + C [128,256] f16 65536 = 114688.
TEST(TritonLaunch, TemplateAndForeachTensorsWhole) {
  OpCost mm = launch("triton_tem_fused_mm_0", R"({"0":{"shape":[128,64],"dtype":"float16"},)"
                                              R"("1":{"shape":[64,256],"dtype":"float16"},)"
                                              R"("2":{"shape":[128,256],"dtype":"float16"}})");
  EXPECT_TRUE(mm.bytes_estimate);
  EXPECT_FALSE(mm.modeled);
  EXPECT_DOUBLE_EQ(mm.bytes, 114688);
  EXPECT_DOUBLE_EQ(mm.flops, 0);  // the name says mm; the FLOPs are not derived from it
  EXPECT_EQ(mm.params, "triton=tem,tensors=3,flops=na,bytes=est");
  OpCost each = launch("triton_for_fused_0", R"({"0":{"shape":[100],"dtype":"float32"},)"
                                             R"("1":{"shape":[100],"dtype":"float32"},"2":7})");
  EXPECT_DOUBLE_EQ(each.bytes, 800);
}

TEST(TritonLaunch, WhatIsNotEstimated) {
  // A user's Triton kernel (SGLang's) is no launcher Inductor named: nothing.
  OpCost user = launch("create_flashinfer_kv_indices_triton",
                       R"({"0":{"shape":[16],"dtype":"int32"},"1":16})");
  EXPECT_FALSE(user.modeled);
  EXPECT_FALSE(user.bytes_estimate);
  EXPECT_EQ(user.family, "");
  // No tensors recorded (torch.profiler without record_shapes).
  OpCost bare = launch("triton_poi_fused_add_0", "{}");
  EXPECT_FALSE(bare.bytes_estimate);
  EXPECT_EQ(bare.params, "triton=poi,no tensor arguments recorded");
  // A negative dimension is no shape; an index space past 2^63 no count.
  OpCost negative = launch("triton_poi_fused_add_0", R"({"0":{"shape":[-4]},"1":4})");
  EXPECT_FALSE(negative.bytes_estimate);
  EXPECT_EQ(negative.problem, CostProblem::kNegativeDimension);
  OpCost huge = launch("triton_red_fused_sum_0",
                       R"({"0":{"shape":[4],"dtype":"float32"},"1":4294967296,"2":4294967296})");
  EXPECT_FALSE(huge.bytes_estimate);
  EXPECT_EQ(huge.problem, CostProblem::kOverflow);
  // Unknown dtype: 4 bytes an element, as every model.
  OpCost untyped = launch("triton_poi_fused_add_0", R"({"0":{"shape":[4]},"1":4})");
  EXPECT_DOUBLE_EQ(untyped.bytes, 16);
}

}  // namespace
}  // namespace pyprof::models
