// Each advice rule fires on a synthetic profile built to trigger it, with the time at stake
// computed by hand, and stays silent on a clean one.
#include "prof/advice.h"

#include <gtest/gtest.h>

namespace pyprof::prof {
namespace {

struct Builder {
  ReadResult d;
  int64_t clock = 0;
  ProfRecord& add(Kind kind, std::string_view op, int64_t ns, int64_t gap = 0) {
    ProfRecord r;
    r.kind = kind;
    r.op = d.strings.intern(op);
    r.name = d.strings.intern(kind == Kind::kMemcpy ? "[CUDA memcpy HtoD]" : "kernel");
    clock += gap;
    r.start = clock;
    r.duration = r.self_duration = ns;
    clock += ns;
    r.dir = Dir::kFprop;
    d.records.push_back(r);
    return d.records.back();
  }
  const Advice* find(const std::vector<Advice>& v, std::string_view rule) {
    for (const Advice& a : v)
      if (a.rule == rule) return &a;
    return nullptr;
  }
};

ProfRecord& gemm(Builder& b, std::string_view dtype, std::string_view shapes, int8_t tc,
                 int64_t ns) {
  ProfRecord& r = b.add(Kind::kKernel, "aten::mm", ns);
  r.tc_eligible = true;
  r.tc = tc;
  r.family = b.d.strings.intern("matmul");
  r.dtype = b.d.strings.intern(dtype);
  r.shapes = b.d.strings.intern(shapes);
  return r;
}

TEST(Advice, Fp32GemmFiresWithDefaultSpeedup) {
  Builder b;
  gemm(b, "float32", "[64,128],[128,256]", 0, 80'000);
  b.add(Kind::kKernel, "aten::relu", 20'000);
  auto v = advise(b.d);
  const Advice* a = b.find(v, "fp32-tensor-cores");
  ASSERT_NE(a, nullptr);
  // No device in the header: speed-up 8, so 80 µs x (1 - 1/8) = 70 µs at stake.
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 70'000);
  EXPECT_NE(a->evidence.find("aten::mm [64,128],[128,256]"), std::string::npos);
  EXPECT_NE(a->fix.find("allow_tf32 = True"), std::string::npos);
}

TEST(Advice, TensorCoreGemmIsClean) {
  Builder b;
  gemm(b, "float32", "[64,128],[128,256]", 1, 80'000);
  gemm(b, "float16", "[64,128],[128,256]", 1, 80'000);
  EXPECT_TRUE(advise(b.d).empty());
}

TEST(Advice, MisalignedHalfGemmBlamesTheShape) {
  Builder b;
  gemm(b, "float16", "[64,100],[100,256]", 0, 50'000);
  gemm(b, "float16", "[64,128],[128,256]", 0, 50'000);
  auto v = advise(b.d);
  const Advice* shape = b.find(v, "shapes-not-aligned");
  ASSERT_NE(shape, nullptr);
  EXPECT_DOUBLE_EQ(shape->at_stake_ns, 50'000 * (1 - 1.0 / 8));
  EXPECT_NE(shape->evidence.find("dim 100"), std::string::npos);
  const Advice* tc = b.find(v, "tc-not-used");
  ASSERT_NE(tc, nullptr);  // the aligned one
  EXPECT_NE(tc->evidence.find("[64,128]"), std::string::npos);
}

TEST(Advice, IdleAfterItemIsSynchronisation) {
  Builder b;
  b.add(Kind::kKernel, "aten::mm", 100'000);
  ProfRecord& copy = b.add(Kind::kMemcpy, "aten::_local_scalar_dense", 2'000);
  copy.name = b.d.strings.intern("[CUDA memcpy DtoH]");
  b.add(Kind::kKernel, "aten::mm", 100'000, 50'000);  // 50 µs idle after the copy
  auto v = advise(b.d);
  const Advice* a = b.find(v, "gpu-idle-sync");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 50'000);
  EXPECT_NE(a->evidence.find("after aten::_local_scalar_dense"), std::string::npos);
  EXPECT_EQ(b.find(v, "gpu-idle-cpu-bound"), nullptr);
}

TEST(Advice, IdleCausesLaunchBoundAndCpuBound) {
  Builder b;
  for (int i = 0; i < 20; ++i) b.add(Kind::kKernel, "aten::add", 3'000, 5'000);  // tiny kernels
  b.add(Kind::kKernel, "aten::mm", 100'000, 200'000);  // the CPU was late by 200 µs
  auto v = advise(b.d);
  const Advice* launch = b.find(v, "gpu-idle-launch-bound");
  ASSERT_NE(launch, nullptr);
  EXPECT_DOUBLE_EQ(launch->at_stake_ns, 19 * 5'000);  // the first gap is before the first kernel
  const Advice* cpu = b.find(v, "gpu-idle-cpu-bound");
  ASSERT_NE(cpu, nullptr);
  EXPECT_DOUBLE_EQ(cpu->at_stake_ns, 200'000);
  EXPECT_NE(cpu->evidence.find("before aten::mm"), std::string::npos);
}

// torch.cuda.synchronize() outside any op: the host waits in cudaDeviceSynchronize from 50 µs
// (the GPU still busy until 100 µs) to 300 µs, and the next kernel starts at 400 µs: the 300 µs
// gap is the synchronization's, whatever ran before it.
TEST(Advice, IdleAfterASynchronizeCallIsSynchronisation) {
  Builder b;
  b.add(Kind::kKernel, "aten::mm", 100'000);
  b.add(Kind::kKernel, "aten::mm", 100'000, 300'000);
  SyncCall c;
  c.start = 50'000;
  c.duration = 250'000;
  c.name = b.d.strings.intern("cudaDeviceSynchronize");
  b.d.syncs.push_back(c);
  auto v = advise(b.d);
  const Advice* a = b.find(v, "gpu-idle-sync");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 300'000);
  EXPECT_NE(a->evidence.find("after cudaDeviceSynchronize (no op"), std::string::npos)
      << a->evidence;
  EXPECT_EQ(b.find(v, "gpu-idle-cpu-bound"), nullptr);
  // A synchronize that began after the GPU ran dry did not keep it idle: CPU-bound.
  b.d.syncs[0].start = 150'000;
  b.d.syncs[0].duration = 10'000;
  v = advise(b.d);
  EXPECT_EQ(b.find(v, "gpu-idle-sync"), nullptr);
  EXPECT_NE(b.find(v, "gpu-idle-cpu-bound"), nullptr);
}

TEST(Advice, BusyGpuIsClean) {
  Builder b;
  for (int i = 0; i < 20; ++i) b.add(Kind::kKernel, "aten::mm", 50'000, 100);
  EXPECT_TRUE(advise(b.d).empty());
}

TEST(Advice, PageableCopies) {
  Builder b;
  b.add(Kind::kKernel, "aten::mm", 100'000);
  ProfRecord& c = b.add(Kind::kMemcpy, "aten::copy_", 40'000);
  c.src_memory = MemoryKind::kPageable;
  c.dst_memory = MemoryKind::kDevice;
  auto v = advise(b.d);
  const Advice* p = b.find(v, "pageable-copies");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(p->at_stake_ns, 20'000);
  const Advice* hd = b.find(v, "host-device-copies");
  ASSERT_NE(hd, nullptr);
  EXPECT_DOUBLE_EQ(hd->at_stake_ns, 40'000);
  c.src_memory = MemoryKind::kPinned;
  EXPECT_EQ(b.find(advise(b.d), "pageable-copies"), nullptr);
}

TEST(Advice, BackwardForwardRatio) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::conv2d", 10'000);
  ProfRecord& bw = b.add(Kind::kOp, "aten::conv2d", 50'000);
  bw.dir = Dir::kBprop;
  auto v = advise(b.d);
  const Advice* a = b.find(v, "backward-forward-ratio");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 50'000 - 2 * 10'000);
  EXPECT_NE(a->evidence.find("aten::conv2d"), std::string::npos);
  bw.duration = bw.self_duration = 20'000;  // 2x: clean
  EXPECT_EQ(b.find(advise(b.d), "backward-forward-ratio"), nullptr);
}

// Adam's step is fprop work inside Optimizer.step#: the phase report calls it optimizer, and so
// does the rule. Forward 10 µs, backward 20 µs (2x: silent), optimizer 30 µs: counting the
// optimizer as forward would read 20/40 = 0.5x.
TEST(Advice, BackwardForwardRatioUsesThePhases) {
  Builder b;
  b.d.cpu_only = true;
  ProfRecord& fw = b.add(Kind::kOp, "aten::conv2d", 10'000);
  fw.op_id = 1;
  fw.modeled = true;
  fw.family = b.d.strings.intern("conv");
  ProfRecord& bw = b.add(Kind::kOp, "aten::conv2d", 20'000);
  bw.dir = Dir::kBprop;
  bw.op_id = 1;  // a bprop record's op_id is its forward op's
  for (int i = 0; i < 3; ++i) {
    ProfRecord& adam = b.add(Kind::kOp, "aten::lerp_", 10'000);
    adam.layer = b.d.strings.intern("pyprof:Optimizer.step#Adam.step");
  }
  EXPECT_EQ(b.find(advise(b.d), "backward-forward-ratio"), nullptr);
  // A backward much quicker than a forward whose results it all used: nothing to fix.
  b.d.records[1].duration = b.d.records[1].self_duration = 5'000;
  EXPECT_EQ(b.find(advise(b.d), "backward-forward-ratio"), nullptr);
  // Forward work no backward used (a no_grad evaluation in the step): that is the finding.
  ProfRecord& eval = b.add(Kind::kOp, "aten::addmm", 40'000);
  eval.op_id = 2;
  eval.modeled = true;
  eval.family = b.d.strings.intern("matmul");
  b.add(Kind::kOp, "aten::copy_", 30'000);  // moving a batch: no backward, and none expected
  auto v = advise(b.d);
  const Advice* a = b.find(v, "backward-forward-ratio");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 40'000);
  EXPECT_NE(a->evidence.find("aten::addmm (40.0 µs without backward)"), std::string::npos)
      << a->evidence;
  EXPECT_EQ(a->evidence.find("lerp_"), std::string::npos);
  EXPECT_NE(a->finding.find("0.06x the forward time (5.00 µs vs 80.0 µs)"), std::string::npos)
      << a->finding;
  EXPECT_EQ(a->evidence.find("copy_"), std::string::npos);
}

// Adam's casts of its 0-dim step counters and any scalar's cast are no model data's casts.
TEST(Advice, OptimizerAndScalarCastsAreNotBlamed) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  for (int i = 0; i < 5; ++i) {
    ProfRecord& c = b.add(Kind::kOp, "aten::_to_copy", 6'000);
    c.shapes = b.d.strings.intern("[]");
    c.dtype = b.d.strings.intern("float32");
    ProfRecord& o = b.add(Kind::kOp, "aten::_to_copy", 6'000);
    o.shapes = b.d.strings.intern("[64,128]");
    o.layer = b.d.strings.intern("pyprof:Optimizer.step#Adam.step");
  }
  EXPECT_EQ(b.find(advise(b.d), "dtype-casts"), nullptr);
}

// A `for batch in loader: with pyprof.range("step"):` loop: the batches are fetched between
// the steps, where prof's selection (prof/iterations.h) accounts for the gaps.
TEST(Advice, WaitBetweenStepsIsTheDataLoaders) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  Iterations::Between& between = b.d.iterations.between;
  between.gaps = 3;
  between.wall = 60'000;
  between.steps_wall = 240'000;
  between.records = {3, 1'500};
  between.dataloader = {3, 1'500};
  between.time_by_op[b.d.strings.intern("aten::set_")] = 1'500;
  auto v = advise(b.d);
  const Advice* a = b.find(v, "dataloader-wait");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 60'000);
  EXPECT_DOUBLE_EQ(a->percent, 20);  // of the loop's wall time, 60 of 300 µs
  EXPECT_NE(a->finding.find("60.0 µs (20.0% of its wall time) between the selected steps"),
            std::string::npos)
      << a->finding;
  EXPECT_NE(a->evidence.find("aten::set_"), std::string::npos);
  between.wall = 3'000;  // 1%: the workers kept up
  EXPECT_EQ(b.find(advise(b.d), "dataloader-wait"), nullptr);
}

TEST(Advice, TimeBetweenStepsWithoutADataLoader) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  Iterations::Between& between = b.d.iterations.between;
  between.gaps = 2;
  between.wall = 50'000;
  between.steps_wall = 50'000;
  auto v = advise(b.d);
  EXPECT_EQ(b.find(v, "dataloader-wait"), nullptr);
  const Advice* a = b.find(v, "time-between-steps");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->percent, 50);
  EXPECT_NE(a->evidence.find("no op recorded between the steps"), std::string::npos);
}

TEST(Advice, GpuRulesSayNothingOnCpuProfiles) {
  Builder b;
  b.d.cpu_only = true;
  ProfRecord& r = gemm(b, "float32", "[64,100],[100,256]", -1, 80'000);
  r.kind = Kind::kOp;
  b.add(Kind::kOp, "aten::relu", 20'000, 500'000);
  for (const Advice& a : advise(b.d)) {
    EXPECT_EQ(a.rule.find("gpu-"), std::string::npos) << a.rule;
    EXPECT_NE(a.rule, "fp32-tensor-cores");
    EXPECT_NE(a.rule, "shapes-not-aligned");
  }
}

TEST(Advice, ContiguousAndRepeatedCasts) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  b.add(Kind::kOp, "aten::contiguous", 10'000);
  for (int i = 0; i < 3; ++i) {
    ProfRecord& c = b.add(Kind::kOp, "aten::_to_copy", 6'000);
    c.shapes = b.d.strings.intern("[64,128]");
  }
  auto v = advise(b.d);
  const Advice* layout = b.find(v, "contiguous-copies");
  ASSERT_NE(layout, nullptr);
  EXPECT_DOUBLE_EQ(layout->at_stake_ns, 10'000);
  const Advice* casts = b.find(v, "dtype-casts");
  ASSERT_NE(casts, nullptr);
  EXPECT_DOUBLE_EQ(casts->at_stake_ns, 18'000 - 6'000);  // all but one of the 3
  EXPECT_NE(casts->evidence.find("[64,128]  x3"), std::string::npos) << casts->evidence;
}

TEST(Advice, OptimizerWithoutForeach) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  for (int i = 0; i < 24; ++i) {
    ProfRecord& r = b.add(Kind::kOp, "aten::add_", 1'000);
    r.layer = b.d.strings.intern("Optimizer.step#SGD.step");
  }
  auto v = advise(b.d);
  const Advice* a = b.find(v, "optimizer-not-foreach");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 24'000);  // no bytes counted: all of it is per-call cost
  ProfRecord& f = b.add(Kind::kOp, "aten::_foreach_add_", 1'000);
  f.layer = b.d.strings.intern("Optimizer.step#SGD.step");
  EXPECT_EQ(b.find(advise(b.d), "optimizer-not-foreach"), nullptr);
}

TEST(Advice, SortedByTimeAtStake) {
  Builder b;
  b.d.cpu_only = true;
  b.add(Kind::kOp, "aten::mm", 100'000);
  b.add(Kind::kOp, "aten::contiguous", 10'000);
  b.add(Kind::kOp, "aten::clone", 30'000);
  ProfRecord& d = b.add(Kind::kOp, "aten::add", 40'000);
  d.layer = b.d.strings.intern("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  auto v = advise(b.d);
  ASSERT_GE(v.size(), 2u);
  // contiguous-copies (clone + contiguous) and dataloader-wait both hold 40 µs: a stable sort
  // keeps the rules in the order they run.
  EXPECT_EQ(v[0].rule, "contiguous-copies");
  for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i - 1].at_stake_ns, v[i].at_stake_ns);
  EXPECT_NE(b.find(v, "dataloader-wait"), nullptr);
}

ProfRecord& conv(Builder& b, double flops, int64_t ns) {
  ProfRecord& r = b.add(Kind::kKernel, "aten::cudnn_convolution", ns);
  r.family = b.d.strings.intern("conv");
  r.dtype = b.d.strings.intern("float16");
  r.shapes = b.d.strings.intern("[32,64,56,56],[64,64,3,3]");
  r.tc_eligible = true;
  r.tc = 1;
  r.counted = true;
  r.flops = flops;
  return r;
}

// Two convolutions of 1 GFLOP: one at 100 µs (10 TFLOP/s), one at 400 µs. Fewer points than a
// fit needs, so the best rate a convolution reached here (10 TFLOP/s) is the yardstick: the
// slow one could take 100 µs, 300 µs at stake.
TEST(Advice, CudnnBenchmarkOffFiresWithTheTimeAboveTheBestConvRate) {
  Builder b;
  conv(b, 1e9, 100'000);
  conv(b, 1e9, 400'000);
  b.add(Kind::kKernel, "aten::relu", 50'000);
  b.d.torch_settings = {{"cudnn.benchmark", "false"}, {"cudnn.enabled", "true"}};
  auto v = advise(b.d);
  const Advice* a = b.find(v, "cudnn-benchmark-off");
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 300'000);
  EXPECT_NE(a->finding.find("500 \xC2\xB5s of convolution kernels"), std::string::npos)
      << a->finding;
  EXPECT_NE(a->fix.find("cudnn.benchmark = True"), std::string::npos);
}

TEST(Advice, CudnnBenchmarkOnOrUnknownIsSilent) {
  for (int on = 0; on < 2; ++on) {
    Builder b;
    conv(b, 1e9, 100'000);
    conv(b, 1e9, 400'000);
    if (on) b.d.torch_settings = {{"cudnn.benchmark", "true"}};
    EXPECT_EQ(b.find(advise(b.d), "cudnn-benchmark-off"), nullptr) << on;
  }
}

TEST(Advice, Fp32FixSaysWhatTheSettingsAlreadyAllow) {
  Builder b;
  gemm(b, "float32", "[64,128],[128,256]", 0, 80'000);
  b.d.torch_settings = {{"cuda.matmul.allow_tf32", "false"},
                        {"cudnn.allow_tf32", "true"},
                        {"float32_matmul_precision", "\"highest\""}};
  std::vector<Advice> v = advise(b.d);  // find() points into it
  const Advice* a = b.find(v, "fp32-tensor-cores");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->fix.find("torch.backends.cuda.matmul.allow_tf32 = True"), std::string::npos)
      << a->fix;
  EXPECT_NE(a->fix.find("cudnn.allow_tf32 is on already"), std::string::npos) << a->fix;
  b.d.torch_settings["cuda.matmul.allow_tf32"] = "true";
  v = advise(b.d);
  a = b.find(v, "fp32-tensor-cores");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->fix.find("TF32 is already allowed"), std::string::npos) << a->fix;
}

}  // namespace
}  // namespace pyprof::prof
