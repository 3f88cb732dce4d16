// Tests of the libraries' ops (vLLM, SGLang, aiter, flash-attn, xformers, apex, Liger; the
// symmetric-memory collectives; FP4 GEMMs): one table of hand-computed values per family, from
// args JSON as parse writes it: pyprof markers keyed by the schema's names, and torch.profiler
// (Kineto) records by position with the shapes, dtypes and scalars the real traces in
// ../shared/traces/real carry (the SGLang MI300X trace for aiter::*, sgl_kernel::* and
// sglang::store_cache; the vLLM MI300X capture trace for _C::rotary_embedding,
// _C_cache_ops::reshape_and_cache_flash, aiter::rms_norm and vllm::rocm_*). Each number is worked
// out in the comment above it from the formula in docs/ops.md "Library and serving ops".
#include <gtest/gtest.h>

#include <string>

#include "models/op_model.h"

namespace pyprof::models {
namespace {

struct Case {
  const char* op;
  const char* args;
  double flops;  // executed (causal attention: the kept pairs)
  double bytes;
  bool tc;
  const char* params;  // a substring of the params column ("" = not checked)
  double masked = 0;   // OpCost::masked_flops
};

void check(const Case& c, const char* family) {
  SCOPED_TRACE(std::string(c.op) + " " + c.args);
  OpCost cost = op_cost(c.op, OpArgs::from_json(c.args));
  ASSERT_TRUE(cost.modeled) << cost.params;
  EXPECT_DOUBLE_EQ(cost.flops, c.flops);
  EXPECT_DOUBLE_EQ(cost.masked_flops, c.masked);
  EXPECT_DOUBLE_EQ(cost.bytes, c.bytes);
  EXPECT_EQ(cost.tc_eligible, c.tc);
  EXPECT_EQ(cost.family, family);
  EXPECT_NE(cost.params.find(c.params), std::string::npos) << cost.params;
}

// Tensors as the args JSON writes them.
#define T(shape, dtype) "{\"shape\":" shape ",\"dtype\":\"" dtype "\"}"

// ---- norm ------------------------------------------------------------------------------------
// rms: E elements, R rows: E*(3 + [w] + [gemma] + [residual] + quant) + R*(2 + 1 rsqrt).
const Case kNorm[] = {
    // _C::rms_norm(result, input, weight, epsilon), [4,8] bf16: E 32, R 4: 32*4 + 4*3 = 140;
    // input 64 + result 64 + weight 16 = 144 (no rstd: the kernel keeps it in registers).
    {"_C::rms_norm",
     "{\"result\":" T("[4,8]", "bfloat16") ",\"input\":" T("[4,8]", "bfloat16") ",\"weight\":" T(
         "[8]", "bfloat16") ",\"epsilon\":1e-06}",
     140, 144, false, "D=8"},
    // The same call by position (torch.profiler).
    {"_C::rms_norm",
     "{\"0\":" T("[4,8]", "bfloat16") ",\"1\":" T("[4,8]", "bfloat16") ",\"2\":" T(
         "[8]", "bfloat16") ",\"3\":1e-06}",
     140, 144, false, "D=8"},
    // _C::fused_add_rms_norm(input!, residual!, weight, eps): 32*5 + 12 = 172; input and residual
    // read and written 4*64 + weight 16 = 272.
    {"_C::fused_add_rms_norm",
     "{\"input\":" T("[4,8]", "bfloat16") ",\"residual\":" T("[4,8]", "bfloat16") ",\"weight\":" T(
         "[8]", "bfloat16") ",\"epsilon\":1e-06}",
     172, 272, false, "+residual"},
    // rms_norm_static_fp8_quant(result fp8, input, weight, scale [1] f32, eps): 32*(4+3) + 12 =
    // 236; input 64 + weight 16 + result 32 + scale 4 = 116.
    {"_C::rms_norm_static_fp8_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]",
         "bfloat16") ",\"weight\":" T("[8]",
                                      "bfloat16") ",\"scale\":" T("[1]",
                                                                  "float32") ",\"epsilon\":1e-06}",
     236, 116, false, "quant=fp8"},
    // fused_add_rms_norm_static_fp8_quant(result, input, residual!, weight, scale, eps):
    // 32*(5+3) + 12 = 268; input 64 + weight 16 + result 32 + residual 128 + scale 4 = 244.
    {"_C::fused_add_rms_norm_static_fp8_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]",
         "bfloat16") ",\"residual\":" T("[4,8]",
                                        "bfloat16") ",\"weight\":" T("[8]",
                                                                     "bfloat16") ",\"scale\""
                                                                                 ":" T(
                                                                                     "[1]",
                                                                                     "floa"
                                                                                     "t32") ",\"eps"
                                                                                            "ilon\""
                                                                                            ":1e-"
                                                                                            "06}",
     268, 244, false, "+residual"},
    // rms_norm_dynamic_per_token_quant(result, input, weight, scale! [4,1], eps, scale_ub None,
    // residual): 32*(4+1+5) + 4*(3+1) = 336; 64 + 16 + 32 + residual 128 + scale 16 = 256.
    {"_C::rms_norm_dynamic_per_token_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]",
         "bfloat16") ",\"weight\":" T("[8]",
                                      "bfloat16") ",\"scale\":" T("[4,1]",
                                                                  "float32") ",\"epsilon\":1e-06,"
                                                                             "\"scale_ub\":"
                                                                             "null,\"residual\":" T(
                                                                                 "[4,8]",
                                                                                 "bfloat16") "}",
     336, 256, false, "+residual"},
    // Without the residual: 32*9 + 16 = 304; 64 + 16 + 32 + 16 = 128.
    {"_C::rms_norm_dynamic_per_token_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]",
         "bfloat16") ",\"weight\":" T("[8]",
                                      "bfloat16") ",\"scale\":" T("[4,1]",
                                                                  "float32") ",\"epsilon\":1e-06,"
                                                                             "\"scale_ub\":"
                                                                             "null,\"residual\":"
                                                                             "null}",
     304, 128, false, ""},
    // sgl_kernel::rmsnorm(output, input, weight, eps, enable_pdl): as _C::rms_norm.
    {"sgl_kernel::rmsnorm",
     "{\"output\":" T("[4,8]", "bfloat16") ",\"input\":" T("[4,8]", "bfloat16") ",\"weight\":" T(
         "[8]", "bfloat16") ",\"eps\":1e-06,\"enable_pdl\":false}",
     140, 144, false, ""},
    // sgl_kernel::gemma_fused_add_rmsnorm: * (1 + w): 32*6 + 12 = 204; 272.
    {"sgl_kernel::gemma_fused_add_rmsnorm",
     "{\"input\":" T("[4,8]", "bfloat16") ",\"residual\":" T("[4,8]", "bfloat16") ",\"weight\":" T(
         "[8]", "bfloat16") ",\"eps\":1e-06,\"enable_pdl\":false}",
     204, 272, false, "gemma"},
    // The SGLang trace's aiter::rmsnorm(out, input, weight, eps), [15360,4096] bf16:
    // E 62914560, R 15360: E*4 + R*3 = 251658240 + 46080 = 251704320; 2*E*2 + 4096*2 =
    // 251666432.
    {"aiter::rmsnorm",
     "{\"0\":" T("[15360,4096]", "bfloat16") ",\"1\":" T("[15360,4096]", "bfloat16") ",\"2\":" T(
         "[4096]", "bfloat16") ",\"3\":1e-06}",
     251704320, 251666432, false, "D=4096"},
    // aiter::add_rmsnorm(out, input, residual_in, residual_out, weight, eps): E*5 + R*3 =
    // 314618880; four [15360,4096] tensors 4*E*2 + 8192 = 503324672.
    {"aiter::add_rmsnorm",
     "{\"0\":" T("[15360,4096]", "bfloat16") ",\"1\":" T("[15360,4096]", "bfloat16") ",\"2\":" T(
         "[15360,4096]",
         "bfloat16") ",\"3\":" T("[15360,4096]",
                                 "bfloat16") ",\"4\":" T("[4096]", "bfloat16") ",\"5\":1e-06}",
     314618880, 503324672, false, "+residual"},
    // The vLLM trace's aiter::rms_norm(input, weight, eps, use_model_sensitive_rmsnorm) -> out,
    // [8192,2880] bf16: E 23592960, R 8192: E*4 + R*3 = 94396416; 2*E*2 + 5760 = 94377600.
    {"aiter::rms_norm",
     "{\"0\":" T("[8192,2880]", "bfloat16") ",\"1\":" T("[2880]",
                                                        "bfloat16") ",\"2\":1e-05,\"3\":0}",
     94396416, 94377600, false, ""},
    // aiter::rmsnorm2d_fwd_with_add_ck(out, input, residual_in, residual_out, weight, eps, 0):
    // E*5 + R*3 = 117989376; 4*E*2 + 5760 = 188749440.
    {"aiter::rmsnorm2d_fwd_with_add_ck",
     "{\"0\":" T("[8192,2880]", "bfloat16") ",\"1\":" T("[8192,2880]", "bfloat16") ",\"2\":" T(
         "[8192,2880]",
         "bfloat16") ",\"3\":" T("[8192,2880]",
                                 "bfloat16") ",\"4\":" T("[2880]",
                                                         "bfloat16") ",\"5\":1e-05,\"6\":0}",
     117989376, 188749440, false, ""},
    // vllm::rocm_aiter_rmsnorm2d_fwd_with_add(x, residual, weight, eps) -> (out, residual_out):
    // the same work and traffic as the aiter op it calls.
    {"vllm::rocm_aiter_rmsnorm2d_fwd_with_add",
     "{\"0\":" T("[8192,2880]", "bfloat16") ",\"1\":" T("[8192,2880]", "bfloat16") ",\"2\":" T(
         "[2880]", "bfloat16") ",\"3\":1e-05}",
     117989376, 188749440, false, ""},
    // apex::fused_layer_norm_affine_fwd(input [4,8] f32, weight, bias, normalized_shape, eps,
    // memory_efficient): native_layer_norm's formula: 32*(6+2) + 4*(3+1) = 272; 2*128 + 32 + 32
    // + mean and rstd 2*4*4 = 352.
    {"apex::fused_layer_norm_affine_fwd",
     "{\"input\":" T("[4,8]", "float32") ",\"weight\":" T("[8]", "float32") ",\"bias\":" T(
         "[8]", "float32") ",\"normalized_shape\":[8],\"eps\":1e-05,\"memory_efficient\":false}",
     272, 352, false, "D=8"},
    // The autograd Function of older apex releases, by position (torch.profiler writes the
    // normalized_shape tuple as nothing): the same cost.
    {"FusedLayerNormAffineFunction",
     "{\"0\":" T("[4,8]", "float32") ",\"1\":" T("[8]", "float32") ",\"2\":" T(
         "[8]", "float32") ",\"3\":null,\"4\":1e-05,\"5\":false}",
     272, 352, false, ""},
    // apex::fused_rms_norm_affine_fwd(input, weight, normalized_shape, eps, memory_efficient):
    // rms_norm's: 32*4 + 12 = 140; 2*128 + 32 + rstd 16 = 304.
    {"apex::fused_rms_norm_affine_fwd",
     "{\"input\":" T("[4,8]", "float32") ",\"weight\":" T(
         "[8]", "float32") ",\"normalized_shape\":[8],\"eps\":1e-05,\"memory_efficient\":false}",
     140, 304, false, ""},
    // apex::fused_layer_norm_affine_bwd(grad_output, mean, invvar, input_or_output,
    // normalized_shape, weight, bias, eps, memory_efficient): native_layer_norm_backward's, every
    // gradient: per element 2 + (1+1+2+4) + 2 + 1 = 13, per row 2: 32*13 + 8 = 424; dy 128 + x 128
    // + mean 16 + rstd 16 + w 32 + dx 128 + dw 32 + db 32 = 512.
    {"apex::fused_layer_norm_affine_bwd",
     "{\"grad_output\":" T("[4,8]", "float32") ",\"mean\":" T("[4]", "float32") ",\"invvar\":" T(
         "[4]", "float32") ",\"input_or_output\":" T("[4,8]",
                                                     "float32") ",\"normalized_shape\":[8],"
                                                                "\"weight\":" T("[8]", "float32") ",\"bias\":" T(
                                                                    "[8]",
                                                                    "float32") ",\"eps\":1e-05,"
                                                                               "\"memory_"
                                                                               "efficient\":false}",
     424, 512, false, ""},
    // apex::fused_rms_norm_affine_bwd(grad_output, invvar, input_or_output, normalized_shape,
    // weight, eps, memory_efficient): per element 1 + (1+2+3) + 2 = 9, per row 1: 292; dy 128 +
    // x 128 + rstd 16 + w 32 + dx 128 + dw 32 = 464.
    {"apex::fused_rms_norm_affine_bwd",
     "{\"grad_output\":" T("[4,8]", "float32") ",\"invvar\":" T(
         "[4]",
         "float32") ",\"input_or_output\":" T("[4,8]",
                                              "float32") ",\"normalized_shape\":[8],"
                                                         "\"weight\":" T(
                                                             "[8]",
                                                             "float32") ",\"eps\":1e-05,\"memory_"
                                                                        "efficient\":false}",
     292, 464, false, ""},
    // LigerRMSNormFunction(X, W, eps, offset, casting_mode, in_place) by position: rms_norm's,
    // bf16: 140; 2*64 + 16 + rstd 16 = 160.
    {"LigerRMSNormFunction",
     "{\"0\":" T("[4,8]", "bfloat16") ",\"1\":" T("[8]", "bfloat16") ",\"2\":1e-06,\"3\":0.0,"
                                                                     "\"4\":null,\"5\":true}",
     140, 160, false, ""},
};

TEST(LibraryNormModels, Table) {
  for (const Case& c : kNorm) check(c, "norm");
}

// A library op whose bare name is also an ATen op's: the qualified model wins. ATen's rms_norm
// (input, normalized_shape, weight, eps) writes rstd (4 rows * 4 bytes more); read by ATen's
// model, vLLM's positional call (result first) was costed 160 bytes.
TEST(LibraryNormModels, QualifiedNameWinsOverAtens) {
  const char* positional = "{\"0\":" T("[4,8]", "bfloat16") ",\"1\":" T(
      "[4,8]", "bfloat16") ",\"2\":" T("[8]", "bfloat16") ",\"3\":1e-06}";
  EXPECT_DOUBLE_EQ(op_cost("_C::rms_norm", OpArgs::from_json(positional)).bytes, 144);
  const char* aten = "{\"input\":" T("[4,8]", "bfloat16") ",\"normalized_shape\":[8],\"weight\":" T(
      "[8]", "bfloat16") ",\"eps\":1e-06}";
  EXPECT_DOUBLE_EQ(op_cost("aten::rms_norm", OpArgs::from_json(aten)).bytes, 160);
  // Another library's rms_norm without a model of its own keeps ATen's.
  EXPECT_DOUBLE_EQ(op_cost("mylib::rms_norm", OpArgs::from_json(aten)).bytes, 160);
}

TEST(LibraryNormModels, Unfit) {
  // The weight is not the rows' size.
  OpCost c = op_cost("_C::rms_norm",
                     OpArgs::from_json("{\"0\":" T("[4,8]", "bfloat16") ",\"1\":" T(
                         "[4,8]", "bfloat16") ",\"2\":" T("[6]", "bfloat16") ",\"3\":1e-06}"));
  EXPECT_FALSE(c.modeled);
  EXPECT_NE(c.params.find("weight"), std::string::npos) << c.params;
  EXPECT_FALSE(op_cost("_C::fused_add_rms_norm", OpArgs::from_json("{}")).modeled);
}

// ---- pointwise ---------------------------------------------------------------------------------
const Case kPointwise[] = {
    // _C::silu_and_mul(out [4,8], input [4,16]) bf16: O 32: silu 4+1, * 1: 32*6 = 192; input 128
    // + out 64 = 192.
    {"_C::silu_and_mul",
     "{\"out\":" T("[4,8]", "bfloat16") ",\"input\":" T("[4,16]", "bfloat16") "}", 192, 192, false,
     "d=8"},
    // The SGLang trace's sgl_kernel::silu_and_mul(out [15360,12288], input [15360,24576]):
    // O 188743680: O*6 = 1132462080; input 4*O + out 2*O = 1132462080.
    {"sgl_kernel::silu_and_mul",
     "{\"0\":" T("[15360,12288]", "bfloat16") ",\"1\":" T("[15360,24576]", "bfloat16") "}",
     1132462080, 1132462080, false, ""},
    // gelu (tanh) 8+1, * 1: 32*10 = 320; 192.
    {"_C::gelu_tanh_and_mul",
     "{\"out\":" T("[4,8]", "bfloat16") ",\"input\":" T("[4,16]", "bfloat16") "}", 320, 192, false,
     ""},
    // The SGLang trace's sgl_kernel::rotary_embedding(positions [15360] int64, query
    // [15360,4096], key [15360,1024], head_size 128, cos_sin_cache [41216,128], is_neox):
    // Hq 32, Hkv 8, rot 128: 15360*40*128 = 78643200 rotated elements, 3 each = 235929600;
    // positions 122880 + query/key rotated parts read and written 4*78643200 + 15360 cache rows
    // 15360*128*2 = 3932160: 318627840.
    {"sgl_kernel::rotary_embedding",
     "{\"0\":" T("[15360]", "int64") ",\"1\":" T("[15360,4096]", "bfloat16") ",\"2\":" T(
         "[15360,1024]", "bfloat16") ",\"3\":128,\"4\":" T("[41216,128]",
                                                           "bfloat16") ",\"5\":true}",
     235929600, 318627840, false, "T=15360,Hq=32,Hkv=8,D=128"},
    // The vLLM trace's _C::rotary_embedding: positions [8192], query [8192,4096], key
    // [8192,512], head 64, cache [131072,64]: Hq 64, Hkv 8: 8192*72*64 = 37748736 elements:
    // 113246208; 65536 + 4*37748736 + 8192*64*2 = 152109056.
    {"_C::rotary_embedding",
     "{\"0\":" T("[8192]", "int64") ",\"1\":" T("[8192,4096]", "bfloat16") ",\"2\":" T(
         "[8192,512]", "bfloat16") ",\"3\":64,\"4\":" T("[131072,64]", "bfloat16") ",\"5\":true}",
     113246208, 152109056, false, "Hq=64,Hkv=8"},
    // Partial rotary, no key: head 128, rot 64, query [2,256] (Hq 2): 2*2*64 = 256 elements:
    // 768; positions 16 + 4*256 + 2 cache rows * 64 * 2 = 1296.
    {"_C::rotary_embedding",
     "{\"positions\":" T("[2]", "int64") ",\"query\":" T(
         "[2,256]", "bfloat16") ",\"key\":null,\"head_size\":128,\"cos_sin_"
                                "cache\":" T("[100,64]", "bfloat16") ",\"is_neox\":true}",
     768, 1296, false, "rot=64"},
    // static_scaled_fp8_quant(result fp8 [4,8], input bf16, scale [1] f32): 32*3 = 96;
    // 64 + 32 + 4 = 100.
    {"_C::static_scaled_fp8_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]", "bfloat16") ",\"scale\":" T("[1]", "float32") "}",
     96, 100, false, "static"},
    // dynamic_scaled_fp8_quant (per tensor): 32*5 + 1 = 161; 100.
    {"_C::dynamic_scaled_fp8_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]", "bfloat16") ",\"scale\":" T("[1]", "float32") "}",
     161, 100, false, "per-tensor"},
    // dynamic_per_token_scaled_fp8_quant(result, input, scale [4,1], scale_ub None): 32*5 + 4 =
    // 164; 64 + 32 + 16 = 112.
    {"_C::dynamic_per_token_scaled_fp8_quant",
     "{\"result\":" T("[4,8]", "float8_e4m3fn") ",\"input\":" T(
         "[4,8]", "bfloat16") ",\"scale\":" T("[4,1]", "float32") ",\"scale_ub\":null}",
     164, 112, false, "per-token"},
    // static_scaled_int8_quant(result int8, input, scale, azp None): rounds: 32*4 = 128; 100.
    {"_C::static_scaled_int8_quant",
     "{\"result\":" T("[4,8]", "int8") ",\"input\":" T("[4,8]", "bfloat16") ",\"scale\":" T(
         "[1]", "float32") ",\"azp\":null}",
     128, 100, false, "int8"},
    // LigerSiLUMulFunction(a, b) by position, [4,8] bf16: 32*6 = 192; a, b read, out written: 192.
    {"LigerSiLUMulFunction", "{\"0\":" T("[4,8]", "bfloat16") ",\"1\":" T("[4,8]", "bfloat16") "}",
     192, 192, false, ""},
};

TEST(LibraryPointwiseModels, Table) {
  for (const Case& c : kPointwise) check(c, "pointwise");
}

TEST(LibraryPointwiseModels, Unfit) {
  // The input is not twice the output.
  EXPECT_FALSE(op_cost("_C::silu_and_mul",
                       OpArgs::from_json("{\"out\":" T("[4,8]", "bfloat16") ",\"input\":" T(
                           "[4,8]", "bfloat16") "}"))
                   .modeled);
  // A rotary dim larger than the head.
  EXPECT_FALSE(
      op_cost("_C::rotary_embedding",
              OpArgs::from_json("{\"0\":" T("[2]", "int64") ",\"1\":" T(
                  "[2,64]", "bfloat16") ",\"2\":null,\"3\":32,\"4\":" T("[100,64]",
                                                                        "bfloat16") ",\"5\":true}"))
          .modeled);
}

// ---- KV-cache writes (movement) ----------------------------------------------------------------
const Case kKvCache[] = {
    // The vLLM trace's reshape_and_cache_flash(key [8192,8,64], value, key_cache
    // [224304,32,8,64], value_cache, slot_mapping [8192] int64, kv_cache_dtype, k_scale,
    // v_scale) bf16: 4194304 elements a stream: slots 65536 + 2 streams * (read 2 + write 2
    // bytes) * 4194304 = 33554432 + the two 0-dim float scales 8 = 33619976; a copy: 0 FLOPs.
    {"_C_cache_ops::reshape_and_cache_flash",
     "{\"0\":" T("[8192,8,64]", "bfloat16") ",\"1\":" T("[8192,8,64]", "bfloat16") ",\"2\":" T(
         "[224304,32,8,64]",
         "bfloat16") ",\"3\":" T("[224304,32,8,64]",
                                 "bfloat16") ",\"4\":" T("[8192]",
                                                         "int64") ",\"5\":null,\"6\":" T("[]",
                                                                                         "float3"
                                                                                         "2") ","
                                                                                              "\"7"
                                                                                              "\""
                                                                                              ":" T(
                                                                                                  "[]",
                                                                                                  "float32") "}",
     0, 33619976, false, "T=8192"},
    // An FP8 cache (stored as uint8): each element quantized, 3 FLOPs: 2*3*4194304 = 25165824;
    // 65536 + 2*(2+1)*4194304 + 8 = 25231368.
    {"_C_cache_ops::reshape_and_cache_flash",
     "{\"0\":" T("[8192,8,64]", "bfloat16") ",\"1\":" T("[8192,8,64]", "bfloat16") ",\"2\":" T(
         "[224304,32,8,64]",
         "uint8") ",\"3\":" T("[224304,32,8,64]",
                              "uint8") ",\"4\":" T("[8192]",
                                                   "int64") ",\"5\":null,\"6\":" T("[]",
                                                                                   "float32") ",\"7"
                                                                                              "\""
                                                                                              ":" T(
                                                                                                  "[]",
                                                                                                  "float32") "}",
     25165824, 25231368, false, "cache=uint8"},
    // The SGLang trace's sglang::store_cache(k [15360,1024], v, k_cache [835874,1024], v_cache,
    // indices [15360] int64, 2048, 0): 15728640 elements a stream: 122880 + 2*4*15728640 =
    // 125952000.
    {"sglang::store_cache",
     "{\"0\":" T("[15360,1024]", "bfloat16") ",\"1\":" T("[15360,1024]", "bfloat16") ",\"2\":" T(
         "[835874,1024]",
         "bfloat16") ",\"3\":" T("[835874,1024]",
                                 "bfloat16") ",\"4\":" T("[15360]", "int64") ",\"5\":2048,\"6\":0}",
     0, 125952000, false, ""},
};

TEST(LibraryKvCacheModels, Table) {
  for (const Case& c : kKvCache) check(c, "movement");
}

// ---- moe ---------------------------------------------------------------------------------------
const Case
    kMoe[] =
        {
            // vllm::outplace_fused_experts(hidden [4,16] bf16, w1 [8,64,16], w2 [8,16,32],
            // topk_weights
            // [4,2] f32, topk_ids [4,2] i32): T 4, k 2 -> 8 pairs, H 16, I 32 (N1 64: gated):
            // 2*8*16*64 + 2*8*32*16 + 8*32*6 + 8*16 + (8-4)*16 = 16384 + 8192 + 1536 + 128 + 64 =
            // 26304;
            // experts reached min(8, 8) = 8 of 8: hidden 128 + out 128 + 32 + 32 + w1 16384 + w2
            // 8192 =
            // 24896.
            {
                "vllm::outplace_fused_experts",
                "{\"hidden_states\":" T("[4,16]", "bfloat16") ",\"w1\":" T("[8,64,16]", "bfloat16") ",\"w2\":" T(
                    "[8,16,32]",
                    "bfloat16") ",\"topk_weights\":" T("[4,2]",
                                                       "float32") ",\"topk_ids\":" T("[4,2]",
                                                                                     "int32") ",\"a"
                                                                                              "ctiv"
                                                                                              "atio"
                                                                                              "n\":"
                                                                                              "\"si"
                                                                                              "lu\""
                                                                                              "}",
                26304, 24896, true, "T=4,topk=2,E=8,H=16,I=32,bf16,experts<=8"},
            // One token (decode): 2 pairs reach at most 2 of the 8 experts: 2*2*16*64 + 2*2*32*16 +
            // 2*32*6 + 2*16 + 16 = 6576; 32 + 32 + 8 + 8 + (16384 + 8192)/4 = 6224.
            {"vllm::inplace_fused_experts",
             "{\"0\":" T("[1,16]", "bfloat16") ",\"1\":" T("[8,64,16]", "bfloat16") ",\"2\":" T(
                 "[8,16,32]", "bfloat16") ",\"3\":" T("[1,2]", "float32") ",\"4\":" T("[1,2]",
                                                                                      "int32") "}",
             6576, 6224, true, "experts<=2"},
};

TEST(LibraryMoeModels, Table) {
  for (const Case& c : kMoe) check(c, "moe");
}

TEST(LibraryMoeModels, Unfit) {
  // int4 weights packed two to a byte: w1 [E, N1, H/2].
  OpCost c =
      op_cost("vllm::outplace_fused_experts",
              OpArgs::from_json(
                  "{\"0\":" T("[4,16]", "bfloat16") ",\"1\":" T("[8,64,8]", "uint8") ",\"2\":" T(
                      "[8,16,16]",
                      "uint8") ",\"3\":" T("[4,2]", "float32") ",\"4\":" T("[4,2]", "int32") "}"));
  EXPECT_FALSE(c.modeled);
  EXPECT_NE(c.params.find("packed"), std::string::npos) << c.params;
}

// ---- matmul ------------------------------------------------------------------------------------
const Case kMatmul[] = {
    // The SGLang trace's aiter::gemm_a16w16(A [15360,4096], B [6144,4096], None, otype 15
    // (bf16),
    // ...): A.B^T: 2*15360*6144*4096 = 773094113280; (62914560 + 25165824 + 94371840)*2 =
    // 364904448.
    {"aiter::gemm_a16w16",
     "{\"0\":" T("[15360,4096]", "bfloat16") ",\"1\":" T(
         "[6144,4096]", "bfloat16") ",\"2\":null,\"3\":15,\"4\":null,\"5\":null,\"6\":null}",
     773094113280.0, 364904448, true, "M=15360,N=6144,K=4096,bf16"},
    // otype float32: the output at 4 bytes: 176160768 + 94371840*4 = 553648128.
    {"aiter::gemm_a16w16",
     "{\"A\":" T("[15360,4096]", "bfloat16") ",\"B\":" T(
         "[6144,4096]", "bfloat16") ",\"bias\":null,\"otype\":\"float32\"}",
     773094113280.0, 553648128, true, ""},
    // The vLLM trace's vllm::rocm_unquantized_gemm(x [8192,2880], weight [5120,2880], bias
    // [5120]): 2*8192*5120*2880 = 241591910400; (23592960 + 14745600 + 5120 + 41943040)*2 =
    // 160573440.
    {"vllm::rocm_unquantized_gemm",
     "{\"0\":" T("[8192,2880]", "bfloat16") ",\"1\":" T("[5120,2880]", "bfloat16") ",\"2\":" T(
         "[5120]", "bfloat16") "}",
     241591910400.0, 160573440, true, "M=8192,N=5120,K=2880"},
    // An MX FP4 _scaled_mm: self [128,64] and mat2 [64,256] float4_e2m1fn_x2 hold K = 128
    // values
    // (two a byte): 2*128*256*128 = 8388608; 8192 + 16384 + the e8m0 scales 512 + 1024 + a
    // bf16
    // out 65536 = 91648; FP4 with M, N, K multiples of 32: Tensor Core eligible.
    {"aten::_scaled_mm",
     "{\"self\":" T("[128,64]", "float4_e2m1fn_x2") ",\"mat2\":" T(
         "[64,256]",
         "float4_e2m1fn_x2") ",\"scale_a\":" T("[512]",
                                               "float8_e8m0fnu") ",\"scale_b\":" T("[1024]",
                                                                                   "float8_"
                                                                                   "e8m0fn"
                                                                                   "u") ","
                                                                                        "\""
                                                                                        "bi"
                                                                                        "as"
                                                                                        "\""
                                                                                        ":n"
                                                                                        "ul"
                                                                                        "l,"
                                                                                        "\""
                                                                                        "sc"
                                                                                        "al"
                                                                                        "e_"
                                                                                        "re"
                                                                                        "su"
                                                                                        "lt"
                                                                                        "\""
                                                                                        ":n"
                                                                                        "ul"
                                                                                        "l,"
                                                                                        "\""
                                                                                        "ou"
                                                                                        "t_"
                                                                                        "dt"
                                                                                        "yp"
                                                                                        "e"
                                                                                        "\""
                                                                                        ":1"
                                                                                        "5,"
                                                                                        "\""
                                                                                        "us"
                                                                                        "e_"
                                                                                        "fa"
                                                                                        "st"
                                                                                        "_a"
                                                                                        "cc"
                                                                                        "um"
                                                                                        "\""
                                                                                        ":f"
                                                                                        "al"
                                                                                        "se"
                                                                                        "}",
     8388608, 91648, true, "K=128,fp4"},
};

TEST(LibraryMatmulModels, Table) {
  for (const Case& c : kMatmul) check(c, "matmul");
}

// ---- collectives -------------------------------------------------------------------------------
const Case kCollectives[] = {
    // symm_mem::multimem_all_reduce_(input [1024,4096] bf16, reduce_op, group_name): the payload,
    // 8388608 bytes, no FLOPs.
    {"symm_mem::multimem_all_reduce_",
     "{\"input\":" T("[1024,4096]", "bfloat16") ",\"reduce_op\":\"sum\",\"group_name\":\"0\"}", 0,
     8388608, false, "allreduce,bytes=8388608,sum"},
    // vLLM's custom all-reduce by position: all_reduce(fa, inp [8,4096] bf16, out, reg_buffer,
    // reg_buffer_sz_bytes): 65536.
    {"_C_custom_ar::all_reduce",
     "{\"0\":140000000,\"1\":" T("[8,4096]", "bfloat16") ",\"2\":" T(
         "[8,4096]", "bfloat16") ",\"3\":0,\"4\":0}",
     0, 65536, false, "allreduce"},
    // vllm::all_gather(tensor [8,4096] bf16, dim, world_size 4, group_name): this rank's 65536.
    {"vllm::all_gather",
     "{\"tensor\":" T("[8,4096]",
                      "bfloat16") ",\"dim\":0,\"world_size\":4,\"group_name\":\"tp:0\"}",
     0, 65536, false, "allgather,bytes=65536,group=4"},
};

TEST(LibraryCollectiveModels, Table) {
  for (const Case& c : kCollectives) check(c, "collectives");
  // The world size goes to the ranks report's bus bandwidth.
  OpCost c = op_cost("vllm::all_gather", OpArgs::from_json(kCollectives[2].args));
  EXPECT_EQ(c.group, 4);
}

// ---- attention ---------------------------------------------------------------------------------
// Forward 2·BH·pairs·(D + Dv), backward 2·BH·pairs·(3·D + 2·Dv); FlashAttention-2's causal and
// local masks are bottom-right aligned.
const Case kAttention[] = {
    // flash_attn::_flash_attn_forward(q, k, v [2,128,8,64] fp16, dropout_p, softmax_scale,
    // causal false, -1, -1, softcap, alibi, return_softmax): BH 16, pairs 16384: 16*16384*256 =
    // 67108864; q, k, v 3*262144 + out 262144 + logsumexp 2048*4 = 1056768.
    {"flash_attn::_flash_attn_forward",
     "{\"q\":" T("[2,128,8,64]", "float16") ",\"k\":" T("[2,128,8,64]", "float16") ",\"v\":" T(
         "[2,128,8,64]", "float16") ",\"dropout_p\":0.0,\"softmax_scale\":0.125,\"causal\":false,"
                                    "\"window_size_left\":-1,\"window_size_right\":-1,\"softcap\":"
                                    "0.0,\"alibi_slopes\":null,\"return_softmax\":false}",
     67108864, 1056768, true, "B=2,H=8,Sq=128,Sk=128,D=64,fp16"},
    // Causal: 128*129/2 = 8256 pairs: 16*8256*256 = 33816576 executed, 33292288 masked.
    {"flashattn::_flash_attn_forward",
     "{\"q\":" T("[2,128,8,64]", "float16") ",\"k\":" T("[2,128,8,64]", "float16") ",\"v\":" T(
         "[2,128,8,64]", "float16") ",\"dropout_p\":0.0,\"softmax_scale\":0.125,\"causal\":true,"
                                    "\"window_size_left\":-1,\"window_size_right\":-1,\"softcap\":"
                                    "0.0,\"alibi_slopes\":null,\"return_softmax\":false}",
     33816576, 1056768, true, "causal", 33292288},
    // Causal with a left window of 31: row i keeps min(i+1, 32): 528 + 96*32 = 3600 pairs:
    // 16*3600*256 = 14745600; masked 67108864 - 14745600 = 52363264.
    {"flash_attn::_flash_attn_forward",
     "{\"0\":" T("[2,128,8,64]", "float16") ",\"1\":" T("[2,128,8,64]", "float16") ",\"2\":" T(
         "[2,128,8,64]", "float16") ",\"3\":0.0,\"4\":0.125,\"5\":true,\"6\":31,\"7\":-1,\"8\":0.0,"
                                    "\"9\":null,\"10\":false}",
     14745600, 1056768, true, "window=31:0", 52363264},
    // A non-causal window 16:16: rows keep 17..33..17 keys: 392 + 96*33 + 392 = 3952 pairs:
    // 16*3952*256 = 16187392; masked 50921472.
    {"flash_attn::_flash_attn_forward",
     "{\"0\":" T("[2,128,8,64]", "float16") ",\"1\":" T("[2,128,8,64]", "float16") ",\"2\":" T(
         "[2,128,8,64]",
         "float16") ",\"3\":0.0,\"4\":0.125,\"5\":false,\"6\":16,\"7\":16,\"8\":0.0,"
                    "\"9\":null,\"10\":false}",
     16187392, 1056768, true, "window=16:16", 50921472},
    // _flash_attn_varlen_forward(q, k, v [256,8,64] fp16, cu_seqlens [3] i32 (2 sequences),
    // max 128, 128, ..., causal): dense bound min(256*128, 128*256) = 32768 pairs, BH 8:
    // 67108864; causal 256*129/2 = 16512 pairs: 33816576 (masked 33292288); q, k, v 786432 +
    // cu 24 + out 262144 + lse 8*256*4 = 1056792.
    {"flash_attn::_flash_attn_varlen_forward",
     "{\"q\":" T("[256,8,64]", "float16") ",\"k\":" T("[256,8,64]", "float16") ",\"v\":" T(
         "[256,8,64]",
         "float16") ",\"cu_seqlens_q\":" T("[3]",
                                           "int32") ",\"cu_seqlens_k\":" T("[3]",
                                                                           "int32") ",\"max_seqlen_"
                                                                                    "q\":128,\"max_"
                                                                                    "seqlen_k\":"
                                                                                    "128,\"dropout_"
                                                                                    "p\":0.0,"
                                                                                    "\"softmax_"
                                                                                    "scale\":0.125,"
                                                                                    "\"causal\":"
                                                                                    "true,\"window_"
                                                                                    "size_left\":-"
                                                                                    "1,"
                                                                                    "\"window_size_"
                                                                                    "right\":-1,"
                                                                                    "\"softcap\":0."
                                                                                    "0,\"alibi_"
                                                                                    "slopes\":null,"
                                                                                    "\"return_"
                                                                                    "softmax\":"
                                                                                    "false,\"block_"
                                                                                    "table\":null}",
     33816576, 1056792, true, "varlen,seqs=2,H=8", 33292288},
    // xformers_flash::flash_fwd(query, key, value, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
    // max_seqlen_k, p, softmax_scale, is_causal, return_softmax) by position: the same call.
    {"xformers_flash::flash_fwd",
     "{\"0\":" T("[256,8,64]", "float16") ",\"1\":" T("[256,8,64]", "float16") ",\"2\":" T(
         "[256,8,64]",
         "float16") ",\"3\":" T("[3]", "int32") ",\"4\":" T("[3]",
                                                            "int32") ",\"5\":128,\"6\":128,\"7\":0."
                                                                     "0,\"8\":0.125,\"9\":true,"
                                                                     "\"10\":false}",
     33816576, 1056792, true, "causal", 33292288},
    // _flash_attn_backward(dout, q, k, v, out [2,128,8,64] fp16, softmax_lse [2,8,128] f32,
    // dq, dk, dv, ..., causal false, ..., rng_state [2] i64): 16*16384*2*(3*64 + 2*64) =
    // 167772160; read dout, q, k, v, out 5*262144 + lse 8192 + rng 16, write dq, dk, dv
    // 3*262144 (the buffers passed in are not read): 2105360.
    {"flash_attn::_flash_attn_backward",
     "{\"dout\":" T("[2,128,8,64]", "float16") ",\"q\":" T("[2,128,8,64]", "float16") ",\"k\":" T(
         "[2,128,8,64]",
         "float16") ",\"v\":" T("[2,128,8,64]",
                                "float16") ",\"out\":" T("[2,128,8,64]",
                                                         "float16") ",\"softmax_"
                                                                    "lse\":" T(
                                                                        "[2,"
                                                                        "8,"
                                                                        "128"
                                                                        "]",
                                                                        "flo"
                                                                        "at3"
                                                                        "2") ",\"dq\":" T("[2,128,"
                                                                                          "8,64]",
                                                                                          "float16") ",\"dk\":" T("[2,128,8,64]",
                                                                                                                  "float16") ",\"dv\":" T("[2,128,8,64]",
                                                                                                                                          "float16") ",\"dropout_p\":0.0,\"softmax_scale\":0.125,\"causal\":false,"
                                                                                                                                                     "\"window_size_left\":-1,\"window_size_right\":-1,\"softcap\":"
                                                                                                                                                     "0.0,\"alibi_slopes\":null,\"deterministic\":false,"
                                                                                                                                                     "\"rng_state\":" T(
                                                                                                                                                         "[2]",
                                                                                                                                                         "int64") "}",
     167772160, 2105360, true, "B=2,H=8"},
    // vLLM's paged decode: _vllm_fa2_C::varlen_fwd(q [4,32,128] bf16, k/v the cache
    // [1000,16,8,128], out, cu_seqlens_q [5], cu_seqlens_k None, seqused_k [4], leftpad_k None,
    // block_table [4,64], alibi None, max_seqlen_q 1, max_seqlen_k 1000, ..., is_causal, -1, -1,
    // ...): keys read <= min(4*64*16, 4*1000) = 4000; pairs min(4*1000, 1*4000) = 4000 (causal,
    // bottom-right, 1 query a sequence: all kept); BH 32: 32*4000*512 = 65536000. Bytes: q 32768
    // + cu 20 + seqused 16 + block_table 1024 + the keys and values read 4000*8*(256+256) =
    // 16384000 + out 32768 + lse 128*4 = 16451108 (the cache itself, 65 MB, is not read).
    {"_vllm_fa2_C::varlen_fwd",
     "{\"q\":" T("[4,32,128]", "bfloat16") ",\"k\":" T("[1000,16,8,128]", "bfloat16") ",\"v\":" T(
         "[1000,16,8,128]",
         "bfloat16") ",\"out\":" T("[4,32,128]",
                                   "bfloat16") ",\"cu_seqlens_q\":" T("[5]",
                                                                      "int32") ",\"cu_seqlens_k\":"
                                                                               "null,\"seqused_"
                                                                               "k\":" T(
                                                                                   "[4]",
                                                                                   "int32") ","
                                                                                            "\"left"
                                                                                            "pad_"
                                                                                            "k\":"
                                                                                            "null,"
                                                                                            "\"bloc"
                                                                                            "k_"
                                                                                            "table"
                                                                                            "\":" T(
                                                                                                "[4"
                                                                                                ",6"
                                                                                                "4"
                                                                                                "]",
                                                                                                "in"
                                                                                                "t3"
                                                                                                "2") ",\"alibi_slopes\":null,\"max_seqlen_q\":1,\"max_seqlen_k\":1000,"
                                                                                                     "\"p_dropout\":0.0,\"softmax_scale\":0.088,\"zero_tensors\":false,"
                                                                                                     "\"is_causal\":true,\"window_size_left\":-1,\"window_size_right\":-1,"
                                                                                                     "\"softcap\":0.0,\"return_softmax\":false,\"gen\":null}",
     65536000, 16451108, true, "paged"},
    // The SGLang trace's aiter::mha_batch_prefill(q [15360,32,128], k/v the pool [835874,8,128],
    // cu_seqlens_q [16] (15 sequences), kv_indptr [16], kv_page_indices [15616] (page size 1),
    // 1024, 1024, 0., scale, 0., False, True, -1, -1, 0, False, False, ...): Tk <= 15616; dense
    // bound min(15360*1024, 1024*15616) = 15728640 pairs; causal, bottom-right, Tq <= Tk:
    // 15728640 - (15360^2/15 - 15360)/2 = 7872000 (15 triangles of 1024); BH 32, D 128:
    // 32*7872000*512 = 128974848000 executed of 257698037760 dense. Bytes: q 125829120 + cu 64
    // + indptr 64 + page indices 62464 + keys and values 15616*8*512 = 63963136 + out 125829120
    // = 315683968.
    {"aiter::mha_batch_prefill",
     "{\"0\":" T("[15360,32,128]", "bfloat16") ",\"1\":" T(
         "[835874,8,128]",
         "bfloat16") ",\"2\":" T("[835874,8,128]",
                                 "bfloat16") ",\"3\":" T("[16]",
                                                         "int32") ",\"4\":" T("[16]",
                                                                              "int32") ",\"5\""
                                                                                       ":" T(
                                                                                           "[1"
                                                                                           "56"
                                                                                           "16"
                                                                                           "]",
                                                                                           "in"
                                                                                           "t3"
                                                                                           "2") ","
                                                                                                "\""
                                                                                                "6"
                                                                                                "\""
                                                                                                ":1"
                                                                                                "02"
                                                                                                "4,"
                                                                                                "\""
                                                                                                "7"
                                                                                                "\""
                                                                                                ":1"
                                                                                                "02"
                                                                                                "4,"
                                                                                                "\""
                                                                                                "8"
                                                                                                "\""
                                                                                                ":0"
                                                                                                ".0"
                                                                                                ","
                                                                                                "\""
                                                                                                "9"
                                                                                                "\""
                                                                                                ":"
                                                                                                "0."
                                                                                                "08"
                                                                                                "83"
                                                                                                "88"
                                                                                                "34"
                                                                                                "76"
                                                                                                "48"
                                                                                                "31"
                                                                                                "84"
                                                                                                "5,"
                                                                                                "\""
                                                                                                "10"
                                                                                                "\""
                                                                                                ":0"
                                                                                                ".0"
                                                                                                ","
                                                                                                "\""
                                                                                                "11"
                                                                                                "\""
                                                                                                ":"
                                                                                                "fa"
                                                                                                "ls"
                                                                                                "e,"
                                                                                                "\""
                                                                                                "12"
                                                                                                "\""
                                                                                                ":t"
                                                                                                "ru"
                                                                                                "e,"
                                                                                                "\""
                                                                                                "13"
                                                                                                "\""
                                                                                                ":-"
                                                                                                "1,"
                                                                                                "\""
                                                                                                "14"
                                                                                                "\""
                                                                                                ":-"
                                                                                                "1,"
                                                                                                "\""
                                                                                                "15"
                                                                                                "\""
                                                                                                ":0"
                                                                                                ","
                                                                                                "\""
                                                                                                "16"
                                                                                                "\""
                                                                                                ":f"
                                                                                                "al"
                                                                                                "se"
                                                                                                ","
                                                                                                "\""
                                                                                                "17"
                                                                                                "\""
                                                                                                ":f"
                                                                                                "al"
                                                                                                "se"
                                                                                                "}",
     128974848000.0, 315683968, true, "varlen,seqs=15,H=32,Hkv=8,Tq=15360,Tk=15616",
     128723189760.0},
};

TEST(LibraryAttentionModels, Table) {
  for (const Case& c : kAttention) check(c, "attention");
}

}  // namespace
}  // namespace pyprof::models
