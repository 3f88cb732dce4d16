// Iteration detection on synthetic traces: each rule, their order, nesting, and the cases that
// must give no iterations.
#include "parse/iterations.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse/trace_builder_test_util.h"

namespace pyprof::parse {
namespace {

// A trace (parse/trace_builder_test_util.h) with ops of one name, then correlated and searched.
struct Builder : TraceBuilder {
  int32_t op(int64_t start, int64_t end, uint32_t tid = 1) {
    return range("aten::mm", start, end, MarkerKind::kOp, tid);
  }
  Iterations detect(std::string_view step_range = {}) {
    corr = correlate(trace);
    return detect_iterations(trace, corr, step_range);
  }
  // The step of every record, in output order.
  std::vector<int32_t> steps_of_records(const Iterations& it) const {
    std::vector<int32_t> out;
    for (size_t k = 0; k < corr.order.size(); ++k)
      out.push_back(it.step_at(record_time(trace, corr, k)));
    return out;
  }
  Correlation corr;
};

std::vector<std::pair<int64_t, int64_t>> spans(const Iterations& it) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const IterationStep& s : it.steps) out.emplace_back(s.start, s.end);
  return out;
}

using Spans = std::vector<std::pair<int64_t, int64_t>>;

TEST(NumberedName, FormsOfOneName) {
  EXPECT_TRUE(is_numbered_name("step", "step", false));
  EXPECT_TRUE(is_numbered_name("step 3", "step", false));
  EXPECT_TRUE(is_numbered_name("step#3", "step", false));
  EXPECT_TRUE(is_numbered_name("step_3", "step", false));
  EXPECT_TRUE(is_numbered_name("step12", "step", false));
  EXPECT_TRUE(is_numbered_name("Step 3", "step", true));
  EXPECT_FALSE(is_numbered_name("Step 3", "step", false));
  EXPECT_FALSE(is_numbered_name("step ", "step", false));
  EXPECT_FALSE(is_numbered_name("steps", "step", false));
  EXPECT_FALSE(is_numbered_name("step 3a", "step", false));
  EXPECT_FALSE(is_numbered_name("stepper", "step", false));
  EXPECT_FALSE(is_numbered_name("ste", "step", false));
  EXPECT_FALSE(is_numbered_name("Optimizer.step#SGD.step", "step", true));
}

TEST(Iterations, ProfilerStepRangesAndRecordsByLaunchTime) {
  Builder b;
  b.range("ProfilerStep#7", 100, 200);
  b.range("ProfilerStep#8", 200, 300);
  b.kernel(50, 60);    // launched before the first step
  b.kernel(150, 400);  // launched in step 0, runs long after it: step 0 all the same
  b.kernel(250, 260);
  b.kernel(300, 310);  // at the end of the last step: outside ([start, end))
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kProfilerStep);
  EXPECT_EQ(it.range, "ProfilerStep#N");
  EXPECT_EQ(spans(it), (Spans{{100, 200}, {200, 300}}));
  EXPECT_EQ(it.steps[0].name, "ProfilerStep#7");
  // Records are in GPU start order: 60, 260, 310, 400.
  EXPECT_EQ(b.steps_of_records(it), (std::vector<int32_t>{-1, 1, -1, 0}));
  EXPECT_EQ(iteration_summary(it, ""), "2 (ProfilerStep#N ranges)");
}

TEST(Iterations, OneProfilerStepIsEnough) {
  // torch.profiler says so itself: no loop needs to be seen.
  Builder b;
  b.range("ProfilerStep#551", 10, 90);
  b.op(20, 30);
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kProfilerStep);
  EXPECT_EQ(spans(it), (Spans{{10, 90}}));
}

TEST(Iterations, KinetoRoundingOverlapCutsThePreviousStep) {
  Builder b;
  b.range("ProfilerStep#1", 0, 1001);
  b.range("ProfilerStep#2", 1000, 2000);
  Iterations it = b.detect();
  EXPECT_EQ(spans(it), (Spans{{0, 1000}, {1000, 2000}}));
}

TEST(Iterations, ProfilerStepBeatsUserStepAndNestedOnesCollapse) {
  // A user `step` range around each ProfilerStep, and a second ProfilerStep nested in the first:
  // the ProfilerStep rule wins, outermost occurrences only.
  Builder b;
  b.range("step", 0, 100);
  b.range("ProfilerStep#1", 10, 90);
  b.range("ProfilerStep#1", 20, 80);
  b.range("step", 100, 200);
  b.range("ProfilerStep#2", 110, 190);
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kProfilerStep);
  EXPECT_EQ(spans(it), (Spans{{10, 90}, {110, 190}}));
}

TEST(Iterations, StepRangeOptionWinsOverEverything) {
  Builder b;
  b.range("ProfilerStep#1", 0, 100);
  b.range("batch_3", 10, 40);
  b.range("batch_4", 50, 90);
  b.range("batched", 91, 95);  // not "batch" followed by a number
  b.op(12, 13);
  b.op(60, 61);
  b.op(92, 93);
  Iterations it = b.detect("batch");
  EXPECT_EQ(it.rule, IterationRule::kStepRange);
  EXPECT_EQ(it.range, "batch");
  EXPECT_EQ(spans(it), (Spans{{10, 40}, {50, 90}}));
  EXPECT_EQ(b.steps_of_records(it), (std::vector<int32_t>{0, 1, -1}));
  EXPECT_EQ(iteration_summary(it, "batch"), "2 (--step-range ranges \"batch\")");
}

TEST(Iterations, StepRangeThatMatchesNothingGivesNone) {
  Builder b;
  b.range("ProfilerStep#1", 0, 100);
  b.range("ProfilerStep#2", 100, 200);
  Iterations it = b.detect("train");
  EXPECT_EQ(it.rule, IterationRule::kNone);
  EXPECT_TRUE(it.steps.empty());
  EXPECT_EQ(iteration_summary(it, "train"),
            "none detected (no range named \"train\" or \"train N\", from --step-range)");
}

TEST(Iterations, NumberedUserStepRanges) {
  Builder b;
  for (int i = 0; i < 3; ++i) b.range("step " + std::to_string(i), i * 100, i * 100 + 90);
  for (int i = 0; i < 3; ++i) b.op(i * 100 + 5, i * 100 + 10);
  b.op(95, 96);  // between steps
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kUserRange);
  EXPECT_EQ(it.range, "step N");
  EXPECT_EQ(spans(it), (Spans{{0, 90}, {100, 190}, {200, 290}}));
  EXPECT_EQ(it.steps[2].name, "step 2");
  EXPECT_EQ(b.steps_of_records(it), (std::vector<int32_t>{0, -1, 1, 2}));
}

TEST(Iterations, UnnumberedAndAnyCaseUserStepRanges) {
  Builder b;
  b.range("Iteration", 0, 10);
  b.range("Iteration", 20, 30);
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kUserRange);
  EXPECT_EQ(it.range, "Iteration");
  EXPECT_EQ(iteration_summary(it, ""), "2 (user ranges \"Iteration\")");
}

TEST(Iterations, OneUserStepRangeIsNotALoop) {
  Builder b;
  b.range("step", 0, 100);
  b.op(10, 20);
  EXPECT_EQ(b.detect().rule, IterationRule::kNone);
}

TEST(Iterations, UserStepsOnTwoThreadsCountPerThread) {
  // One `step` on each of two threads is not a loop on either.
  Builder b;
  b.range("step", 0, 100, MarkerKind::kUser, 1);
  b.range("step", 0, 100, MarkerKind::kUser, 2);
  EXPECT_EQ(b.detect().rule, IterationRule::kNone);
}

TEST(Iterations, NestedLoopsOfUserRangesTakeTheOuter) {
  Builder b;
  for (int i = 0; i < 2; ++i) {
    b.range("train_step " + std::to_string(i), i * 100, i * 100 + 100);
    for (int j = 0; j < 3; ++j) b.range("iter", i * 100 + j * 30, i * 100 + j * 30 + 20);
  }
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kUserRange);
  EXPECT_EQ(it.range, "train_step N");
  EXPECT_EQ(spans(it), (Spans{{0, 100}, {100, 200}}));
}

TEST(Iterations, OptimizerStepsEndIterations) {
  Builder b;
  b.op(5, 6);  // the first record: step 0 starts here
  b.range("Optimizer.step#SGD.step", 40, 50);
  b.op(45, 46);
  b.op(60, 61);
  b.range("Optimizer.step#SGD.step", 90, 100);
  b.op(120, 121);  // after the last optimizer step: outside
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kOptimizerStep);
  EXPECT_EQ(it.range, "Optimizer.step#SGD.step");
  EXPECT_EQ(spans(it), (Spans{{5, 50}, {50, 100}}));
  EXPECT_EQ(b.steps_of_records(it), (std::vector<int32_t>{0, 0, 1, -1}));
}

TEST(Iterations, OneOptimizerStepIsNotALoop) {
  Builder b;
  b.op(5, 6);
  b.range("Optimizer.step#SGD.step", 40, 50);
  EXPECT_EQ(b.detect().rule, IterationRule::kNone);
}

TEST(Iterations, RepeatingOutermostModuleForward) {
  Builder b;
  for (int i = 0; i < 3; ++i) {
    b.range("Net", i * 100, i * 100 + 50, MarkerKind::kModule);
    b.range("Net.fc", i * 100 + 10, i * 100 + 40, MarkerKind::kModule);
    b.op(i * 100 + 20, i * 100 + 30);
  }
  b.op(280, 290);  // after the last forward: in the last iteration, which ends with the trace
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kModuleForward);
  EXPECT_EQ(it.range, "Net");
  EXPECT_EQ(spans(it), (Spans{{0, 100}, {100, 200}, {200, 290}}));  // the last op's end
  EXPECT_EQ(b.steps_of_records(it), (std::vector<int32_t>{0, 1, 2, 2}));
}

TEST(Iterations, ModuleRuleUsesTheThreadThatRanMostOps) {
  Builder b;
  // Thread 2 runs a small module twice but few ops; thread 1 runs the model once and many ops.
  b.range("Helper", 0, 10, MarkerKind::kModule, 2);
  b.range("Helper", 20, 30, MarkerKind::kModule, 2);
  b.op(1, 2, 2);
  b.range("Net", 0, 100, MarkerKind::kModule, 1);
  for (int i = 0; i < 5; ++i) b.op(i * 10 + 1, i * 10 + 5, 1);
  EXPECT_EQ(b.detect().rule, IterationRule::kNone);
}

TEST(Iterations, InferenceWithOneOuterRangeHasNone) {
  Builder b;
  b.range("[param|pytorch.model.alex_net|0|0|0|measure|forward]", 0, 1000);
  b.range("AlexNet", 10, 900, MarkerKind::kModule);
  for (int i = 0; i < 325; ++i) b.kernel(20 + i, 2000 + i * 3);
  Iterations it = b.detect();
  EXPECT_EQ(it.rule, IterationRule::kNone);
  EXPECT_EQ(iteration_summary(it, ""),
            "none detected (no step, ProfilerStep, optimizer or repeating module ranges)");
}

TEST(Iterations, UnclosedLastStepEndsWithTheTrace) {
  Builder b;
  b.range("ProfilerStep#1", 0, 100);
  b.range("ProfilerStep#2", 100, kOpenEnd);
  b.op(150, 170);
  Iterations it = b.detect();
  EXPECT_EQ(spans(it), (Spans{{0, 100}, {100, 170}}));
  // The capture holds part of it: cut (docs/formats.md §3, header `iterations`).
  EXPECT_FALSE(it.steps[0].cut);
  EXPECT_TRUE(it.steps[1].cut);
  EXPECT_NE(iteration_summary(it, "").find("1 step cut by the capture"), std::string::npos);
}

// `pyprof profile --delay 50 --duration 200`: the collector keeps the ranges that overlap the
// window [50, 250) whole, and only the ops inside it: the steps across its edges are cut.
TEST(Iterations, StepsAcrossTheCaptureWindowAreCut) {
  Builder b;
  b.trace.capture_window_begin = 50;
  b.trace.capture_window_end = 250;
  for (int64_t start : {0, 100, 200}) b.range("step", start, start + 90);
  b.op(60, 80);
  b.op(110, 180);
  b.op(210, 240);
  Iterations it = b.detect();
  ASSERT_EQ(it.steps.size(), 3u);
  EXPECT_TRUE(it.steps[0].cut);  // began before the window
  EXPECT_FALSE(it.steps[1].cut);
  EXPECT_TRUE(it.steps[2].cut);  // ended after it
}

TEST(Iterations, EmptyTraceHasNone) {
  Builder b;
  EXPECT_EQ(b.detect().rule, IterationRule::kNone);
  EXPECT_EQ(b.detect("step").rule, IterationRule::kNone);
}

}  // namespace
}  // namespace pyprof::parse
