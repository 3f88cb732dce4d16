// prof/iterations.h: --iterations parsing, the warm-up rule's edge cases, the selection applied
// to records, per-step figures, and the header/record keys read from net.dict text.
#include "prof/iterations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace pyprof::prof {
namespace {

IterationRequest parsed(const std::string& text) {
  IterationRequest r;
  std::string error;
  EXPECT_TRUE(parse_iteration_request(text, r, error)) << text << ": " << error;
  return r;
}

// [begin, end) the text selects among `count` steps; {-1, -1} when it selects none.
std::pair<int64_t, int64_t> range_of(const std::string& text, int64_t count) {
  int64_t begin = 0, end = 0;
  std::string error;
  if (!resolve_iteration_request(parsed(text), count, begin, end, error)) return {-1, -1};
  return {begin, end};
}

TEST(IterationRequest, PythonSliceForms) {
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(range_of("2:5", 6), P(2, 5));
  EXPECT_EQ(range_of("1:", 6), P(1, 6));
  EXPECT_EQ(range_of(":3", 6), P(0, 3));
  EXPECT_EQ(range_of(":", 6), P(0, 6));
  EXPECT_EQ(range_of("4", 6), P(4, 5));
  EXPECT_EQ(range_of("-1", 6), P(5, 6));     // the last step
  EXPECT_EQ(range_of("-2:", 6), P(4, 6));    // the last two
  EXPECT_EQ(range_of(":-1", 6), P(0, 5));    // all but the last
  EXPECT_EQ(range_of("2:100", 6), P(2, 6));  // a slice clamps, as Python's does
  EXPECT_EQ(range_of("-100:2", 6), P(0, 2));
  EXPECT_EQ(range_of("all", 6), P(0, 6));
  EXPECT_EQ(parsed("all").mode, IterationRequest::Mode::kAll);
}

TEST(IterationRequest, SelectingNothingIsAnError) {
  EXPECT_EQ(range_of("6", 6), std::make_pair(int64_t{-1}, int64_t{-1}));  // index out of range
  EXPECT_EQ(range_of("-7", 6), std::make_pair(int64_t{-1}, int64_t{-1}));
  EXPECT_EQ(range_of("4:2", 6), std::make_pair(int64_t{-1}, int64_t{-1}));  // empty slice
  EXPECT_EQ(range_of("6:", 6), std::make_pair(int64_t{-1}, int64_t{-1}));
  int64_t b = 0, e = 0;
  std::string error;
  EXPECT_FALSE(resolve_iteration_request(parsed("9"), 6, b, e, error));
  EXPECT_NE(error.find("6 iterations (0..5)"), std::string::npos) << error;
}

TEST(IterationRequest, MalformedTextIsRejected) {
  for (const char* text :
       {"", "a", "1:2:1", "1.5", "1:x", " 1", "1 ", "1-3", "ALL", "--1", "99999999999999999999"}) {
    IterationRequest r;
    std::string error;
    EXPECT_FALSE(parse_iteration_request(text, r, error)) << "'" << text << "'";
    EXPECT_NE(error.find("--iterations"), std::string::npos) << error;
  }
}

TEST(WarmUp, FirstStepWellAboveTheMedianOfTheOthers) {
  // 31.2 ms against a median of 12.1 ms.
  WarmUp w = detect_warm_up({31200000, 12000000, 12100000, 12300000, 12100000, 11900000});
  EXPECT_TRUE(w.detected);
  EXPECT_EQ(w.wall, 31200000);
  EXPECT_EQ(w.median, 12100000);
}

TEST(WarmUp, OneOrTwoStepsNeverHaveAWarmUp) {
  EXPECT_FALSE(detect_warm_up({}).detected);
  EXPECT_FALSE(detect_warm_up({100}).detected);
  EXPECT_FALSE(detect_warm_up({1000, 10}).detected);  // 100x, but no median to judge noise by
  EXPECT_TRUE(detect_warm_up({1000, 10, 10}).detected);
}

TEST(WarmUp, EqualTimesAndTheThreshold) {
  EXPECT_FALSE(detect_warm_up({10, 10, 10, 10}).detected);
  EXPECT_FALSE(detect_warm_up({125, 100, 100}).detected);  // exactly 1.25x: not above it
  EXPECT_TRUE(detect_warm_up({126, 100, 100}).detected);
  EXPECT_FALSE(detect_warm_up({0, 0, 0}).detected);  // no time: nothing to compare
  EXPECT_FALSE(detect_warm_up({5, 0, 0}).detected);
}

TEST(WarmUp, ASlowLastStepIsNoWarmUpAndDoesNotHideOne) {
  // The slow step is the last: step 0 is not above the others.
  EXPECT_FALSE(detect_warm_up({100, 100, 100, 100, 900}).detected);
  // A slow last step beside a warm-up: the median ignores it (a mean would be 260).
  WarmUp w = detect_warm_up({200, 100, 100, 100, 900});
  EXPECT_TRUE(w.detected);
  EXPECT_EQ(w.median, 100);
  // An even number of others: the mean of the middle two.
  EXPECT_EQ(detect_warm_up({200, 100, 120, 140, 900}).median, 130);
}

TEST(Spread, MedianQuartilesAsNumpy) {
  Spread s = spread_of({4, 1, 3, 2});  // numpy.percentile([1,2,3,4], [25,50,75]) = 1.75, 2.5, 3.25
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75);
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
  EXPECT_DOUBLE_EQ(s.iqr(), 1.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(spread_of({7}).median, 7);
  EXPECT_TRUE(std::isnan(spread_of({}).median));
}

// A GPU profile by hand: three steps of 100, 40, 40 ns; kernels launched in each step.
ReadResult gpu_profile() {
  ReadResult data;
  data.iterations.rule = "profiler_step";
  data.iterations.range = "ProfilerStep#*";
  data.iterations.steps = {{0, "ProfilerStep#5", 0, 100},
                           {1, "ProfilerStep#6", 100, 140},
                           {2, "ProfilerStep#7", 140, 180}};
  auto kernel = [&](int32_t step, int64_t start, int64_t duration, Dir dir, double flops) {
    ProfRecord r;
    r.kind = Kind::kKernel;
    r.step = step;
    r.start = start;
    r.duration = duration;
    r.dir = dir;
    r.flops = flops;
    r.counted = flops > 0;
    r.modeled = flops > 0;
    data.records.push_back(r);
  };
  kernel(-1, -10, 5, Dir::kNone, 0);  // before the first step
  kernel(0, 10, 50, Dir::kFprop, 1000);
  kernel(1, 100, 10, Dir::kFprop, 400);
  kernel(1, 105, 10, Dir::kBprop, 800);  // overlaps the one before: busy is their union, 15
  kernel(2, 140, 10, Dir::kFprop, 400);
  kernel(2, 170, 30, Dir::kBprop, 800);  // launched in step 2, runs past its end (GPU behind)
  return data;
}

TEST(StepStats, WallBusyPhasesAndFlops) {
  ReadResult data = gpu_profile();
  std::vector<StepStats> s = step_stats(data);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].wall, 100);
  EXPECT_EQ(s[0].gpu_busy, 50);
  EXPECT_EQ(s[1].wall, 40);
  EXPECT_EQ(s[1].gpu_busy, 15);
  EXPECT_EQ(s[1].forward, 10);
  EXPECT_EQ(s[1].backward, 10);
  EXPECT_EQ(s[1].kernels, 2);
  EXPECT_DOUBLE_EQ(s[1].flops, 1200);
  EXPECT_EQ(s[2].gpu_busy, 40);  // not clipped to the span: work launched in the step
}

TEST(StepStats, SeveralGpusBusyIsTheirMeanNotTheirUnion) {
  // Two GPUs, each busy half of a 100 ns step at different times (a pipeline's stages): their
  // union covers the whole step, but each GPU idles half of it. A third GPU works only outside
  // the steps: it idles through this one.
  ReadResult data;
  data.iterations.rule = "profiler_step";
  data.iterations.steps = {{0, "ProfilerStep#0", 0, 100}};
  auto kernel = [&](int32_t step, int32_t device, int64_t start, int64_t duration) {
    ProfRecord r;
    r.kind = Kind::kKernel;
    r.step = step;
    r.device = device;
    r.start = start;
    r.duration = duration;
    data.records.push_back(r);
  };
  kernel(0, 0, 0, 50);
  kernel(0, 1, 50, 50);
  kernel(0, 1, 60, 20);  // overlaps GPU 1's own kernel: its busy time is their union, 50
  std::vector<StepStats> two = step_stats(data);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].gpu_devices, 2);
  EXPECT_EQ(two[0].gpu_busy, 50);  // (50 + 50) / 2; the union over both would be 100
  kernel(-1, 2, 200, 10);
  std::vector<StepStats> three = step_stats(data);
  EXPECT_EQ(three[0].gpu_devices, 3);
  EXPECT_EQ(three[0].gpu_busy, 33);  // (50 + 50 + 0) / 3, in whole ns
  const ReportTable steps = iteration_report(data).front();
  EXPECT_EQ(steps.headers[5], "GPU busy, mean over 3 GPUs(ns)");
  EXPECT_EQ(steps.rows[0][5], "33");
}

TEST(SelectIterations, DefaultLeavesOutTheWarmUpAndRecordsOutsideSteps) {
  ReadResult data = gpu_profile();
  std::string error;
  ASSERT_TRUE(select_iterations(data, IterationRequest{}, error)) << error;
  const Iterations& it = data.iterations;
  EXPECT_TRUE(it.selection_active);
  EXPECT_EQ(it.state[0], StepState::kWarmUp);  // 100 > 1.25 * 40
  EXPECT_EQ(it.selection, "1:3");
  EXPECT_EQ(it.records_left_out, 2);  // step 0's kernel and the one before every step
  ASSERT_EQ(data.records.size(), 4u);
  for (const ProfRecord& r : data.records) EXPECT_GE(r.step, 1);
  EXPECT_EQ(per_step_time(data, [](const ProfRecord&) { return true; }),
            (std::vector<double>{20, 40}));
  EXPECT_EQ(per_step_samples(
                data, [](const ProfRecord& r) { return r.dir == Dir::kBprop; },
                [](const ProfRecord& r) { return r.flops; }),
            (std::vector<double>{800, 800}));
  std::string note = iteration_note(data);
  EXPECT_NE(note.find("reports cover 1:3 (step 0 left out as warm-up: 100 ns against a median "
                      "of 40 ns; --iterations all keeps it); 2 records outside them left out"),
            std::string::npos)
      << note;
}

TEST(SelectIterations, AllKeepsEveryRecordAndAnExplicitSliceWins) {
  ReadResult all = gpu_profile();
  std::string error;
  ASSERT_TRUE(select_iterations(all, parsed("all"), error));
  EXPECT_FALSE(all.iterations.selection_active);
  EXPECT_EQ(all.records.size(), 6u);
  EXPECT_EQ(iteration_note(all), "");
  EXPECT_EQ(per_step_time(all, [](const ProfRecord&) { return true; }).size(), 3u);

  ReadResult one = gpu_profile();
  ASSERT_TRUE(select_iterations(one, parsed("0"), error));  // the warm-up, asked for
  EXPECT_EQ(one.iterations.state[0], StepState::kSelected);
  EXPECT_EQ(one.iterations.state[1], StepState::kLeftOut);
  EXPECT_EQ(one.records.size(), 1u);
  EXPECT_EQ(one.records[0].start, 10);

  ReadResult none = gpu_profile();
  EXPECT_FALSE(select_iterations(none, parsed("3:"), error));
  EXPECT_NE(error.find("selects none"), std::string::npos) << error;
}

TEST(SelectIterations, CpuParentLinksFollowTheKeptRecords) {
  ReadResult data;
  data.cpu_only = true;
  data.iterations.rule = "user_range";
  data.iterations.steps = {{0, "step 0", 0, 10}, {1, "step 1", 10, 20}, {2, "step 2", 20, 30}};
  for (int32_t i = 0; i < 6; ++i) {
    ProfRecord r;
    r.kind = Kind::kOp;
    r.step = i / 2;
    r.start = i * 5;
    r.parent = i % 2 ? i - 1 : -1;  // each step: an op and its child
    data.records.push_back(r);
  }
  std::string error;
  ASSERT_TRUE(select_iterations(data, parsed("1:"), error));
  ASSERT_EQ(data.records.size(), 4u);
  EXPECT_EQ(data.records[0].parent, -1);
  EXPECT_EQ(data.records[1].parent, 0);
  EXPECT_EQ(data.records[3].parent, 2);
}

TEST(SelectIterations, NoIterationsBehavesAsBefore) {
  ReadResult data;
  data.records.resize(3);
  std::string error;
  ASSERT_TRUE(select_iterations(data, IterationRequest{}, error));
  EXPECT_EQ(data.records.size(), 3u);
  EXPECT_TRUE(data.warnings.empty());
  EXPECT_TRUE(iteration_summary_rows(data).empty());
  ASSERT_TRUE(select_iterations(data, parsed("1:"), error));  // asked for, not there: a warning
  EXPECT_EQ(data.records.size(), 3u);
  ASSERT_EQ(data.warnings.size(), 1u);
  EXPECT_NE(data.warnings[0].find("no iterations"), std::string::npos);
}

TEST(IterationReport, StepRowsAndSteadyState) {
  ReadResult data = gpu_profile();
  std::string error;
  ASSERT_TRUE(select_iterations(data, IterationRequest{}, error));
  std::vector<ReportTable> tables = iteration_report(data);
  ASSERT_EQ(tables.size(), 2u);
  const ReportTable& steps = tables[0];
  ASSERT_EQ(steps.rows.size(), 3u);  // every step, the warm-up too
  EXPECT_EQ(steps.headers[2], "Selected");
  EXPECT_EQ(steps.rows[0][2], "warm-up");
  EXPECT_EQ(steps.rows[1][2], "yes");
  EXPECT_EQ(steps.rows[0][4], "100");       // Wall
  EXPECT_EQ(steps.rows[0][5], "50");        // GPU busy: from before the selection
  EXPECT_EQ(steps.rows[0][6], "50");        // GPU idle
  EXPECT_EQ(steps.rows[2][6], "0");         // busy past the span: no idle
  EXPECT_EQ(steps.rows[1].back(), "0.03");  // 1200 FLOPs / 40 ns = 0.03 TFLOP/s
  const ReportTable& steady = tables[1];
  ASSERT_EQ(steady.rows.size(), 3u);
  EXPECT_EQ(steady.rows[0][0], "wall time (ns)");
  EXPECT_EQ(steady.rows[0][1], "40");  // median of the selected steps' walls (40, 40)
  EXPECT_EQ(steady.rows[1][0], "GPU busy %");
  EXPECT_EQ(steady.rows[1][2], "37.5");  // min: 15 / 40
  EXPECT_EQ(steady.rows[1][3], "100.0");

  std::vector<SummaryRow> rows = iteration_summary_rows(data);
  ASSERT_GE(rows.size(), 4u);
  EXPECT_EQ(rows[0].value, "3 by profiler_step (ProfilerStep#*)");
  EXPECT_EQ(rows[1].value,
            "1:3 (step 0 left out as warm-up: 100 ns against a median of 40 ns; --iterations "
            "all keeps it)");
  EXPECT_EQ(rows[2].value, "2");
  // What the selection left out and where: step 0's kernel (50 ns) and the one before every
  // step (5 ns), of 115 ns of GPU time; the steps follow each other, nothing between them.
  std::map<std::string, std::string> by_metric;
  for (const SummaryRow& r : rows) by_metric[r.metric] = r.value;
  EXPECT_EQ(by_metric["time left out (ns)"], "55");
  EXPECT_EQ(by_metric["time left out %"], "47.8");
  EXPECT_EQ(by_metric["left out: in steps not selected (ns)"], "50");
  EXPECT_EQ(by_metric["left out: between steps (ns)"], "0");
  EXPECT_EQ(by_metric["left out: before the first step (ns)"], "5");
  EXPECT_EQ(by_metric["left out: after the last step (ns)"], "0");
  EXPECT_EQ(by_metric.count("wall time between the selected steps (ns)"), 0u);
  EXPECT_EQ(by_metric["step time median (ns)"], "40");
}

// A loop that fetches its batches between the step ranges: the gaps before the selected steps,
// their records, and steps the capture cut or left empty.
TEST(SelectIterations, GapsBetweenStepsCutAndEmptySteps) {
  ReadResult data;
  data.cpu_only = true;
  data.iterations.rule = "user_range";
  data.iterations.range = "step";
  // step 0 [0,100) warm-up; 1 [120,160); 2 [170,210); 3 [230,270); 4 [280,290) empty;
  // 5 [300,400) cut (its range never closed).
  data.iterations.steps = {{0, "step", 0, 100},   {1, "step", 120, 160}, {2, "step", 170, 210},
                           {3, "step", 230, 270}, {4, "step", 280, 290}, {5, "step", 300, 400}};
  data.iterations.steps[5].cut = true;
  auto op = [&](int32_t step, int64_t start, int64_t self, std::string_view layer = "") {
    ProfRecord r;
    r.kind = Kind::kOp;
    r.step = step;
    r.start = start;
    r.duration = r.self_duration = self;
    r.dir = Dir::kFprop;
    r.op = r.name = data.strings.intern("aten::mm");
    r.layer = data.strings.intern(layer);
    data.records.push_back(r);
  };
  op(0, 10, 80);
  op(-1, 105, 4, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  op(1, 125, 30);
  op(-1, 162, 2, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  op(2, 175, 30);
  op(3, 235, 30);
  op(5, 310, 20);  // the cut step's partial work
  op(-1, 450, 1);  // after the last step
  std::string error;
  ASSERT_TRUE(select_iterations(data, IterationRequest{}, error)) << error;
  const Iterations& it = data.iterations;
  EXPECT_EQ(it.state[0], StepState::kWarmUp);  // 100 > 1.25 x 40, the median of 1, 2, 3 only
  EXPECT_EQ(it.state[4], StepState::kEmpty);
  EXPECT_EQ(it.state[5], StepState::kCut);
  EXPECT_EQ(it.selection, "1:4");
  EXPECT_EQ(data.records.size(), 3u);  // steps 1, 2, 3
  // The gaps before steps 1, 2, 3: 20 + 10 + 20 ns of wall time, next to 120 ns of steps.
  EXPECT_EQ(it.between.gaps, 3);
  EXPECT_EQ(it.between.wall, 50);
  EXPECT_EQ(it.between.steps_wall, 120);
  EXPECT_EQ(it.between.records.records, 2);
  EXPECT_EQ(it.between.dataloader.time, 6);
  EXPECT_EQ(it.left_in_steps.time, 100);  // the warm-up's 80 and the cut step's 20
  EXPECT_EQ(it.left_between.time, 6);
  EXPECT_EQ(it.left_after.time, 1);
  EXPECT_EQ(it.left_before.records, 0);
  std::string note = iteration_note(data);
  EXPECT_NE(note.find("step 5 cut by the capture"), std::string::npos) << note;
  EXPECT_NE(note.find("step 4 empty"), std::string::npos) << note;
  EXPECT_NE(note.find("5 records outside them left out, 107 ns of 197 ns op self time (54.3%): "
                      "2 in steps not selected (100 ns), 2 between steps (6 ns), 1 after the "
                      "last step (1 ns)"),
            std::string::npos)
      << note;
  // The steady state is over the whole selected steps: 40 ns each.
  std::vector<ReportTable> tables = iteration_report(data);
  EXPECT_EQ(tables[0].rows[4][2], "empty");
  EXPECT_EQ(tables[0].rows[5][2], "cut");
  EXPECT_EQ(tables[1].rows[0][3], "40");  // max wall
  // Naming the cut step alone selects no whole iteration.
  ReadResult again;
  again.iterations = data.iterations;
  IterationRequest five;
  ASSERT_TRUE(parse_iteration_request("5", five, error));
  EXPECT_FALSE(select_iterations(again, five, error));
  EXPECT_NE(error.find("no whole iteration"), std::string::npos) << error;
}

// read_dict on net.dict text.
ReadResult read_text(const std::string& text) {
  std::FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  ReadResult out;
  std::string error;
  EXPECT_TRUE(read_dict(f, ReadOptions{}, out, error)) << error;
  std::fclose(f);
  return out;
}

const char* const kTwoSteps =
    R"({"pyprof_dict":1,"records":"op","iterations":{"rule":"user_range","range":"step *",)"
    R"("count":2,"steps":[{"index":0,"name":"step 0","start":0,"end":10},)"
    R"({"index":1,"name":"step 1","start":10,"end":20}]}})"
    "\n";

TEST(ReadDict, ReadsIterationsAndSteps) {
  ReadResult r = read_text(std::string(kTwoSteps) +
                           R"({"kind":"op","name":"a","start":1,"duration":1,"step":0})"
                           "\n"
                           R"({"kind":"op","name":"b","start":11,"duration":1,"step":1})"
                           "\n"
                           R"({"kind":"op","name":"c","start":30,"duration":1})"
                           "\n");
  ASSERT_EQ(r.iterations.steps.size(), 2u);
  EXPECT_EQ(r.iterations.rule, "user_range");
  EXPECT_EQ(r.iterations.range, "step *");
  EXPECT_EQ(r.iterations.steps[1].name, "step 1");
  EXPECT_EQ(r.iterations.steps[1].start, 10);
  EXPECT_EQ(r.iterations.steps[1].end, 20);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].step, 0);
  EXPECT_EQ(r.records[1].step, 1);
  EXPECT_EQ(r.records[2].step, -1);
  EXPECT_TRUE(r.warnings.empty());
}

// Triton's autotuning (pyprof.autotune ranges, docs/compile.md): read from `user_ranges` and
// left out by select_iterations, with or without iterations, parents renumbered.
TEST(ReadDict, AutotuningRecordsAreLeftOutAndCounted) {
  const std::string header = R"({"pyprof_dict":1,"records":"kernel","devices":[]})"
                             "\n";
  ReadResult r = read_text(
      header +
      R"({"kind":"kernel","name":"triton_red_fused_0","start":0,"duration":7,"step":0})"
      "\n"
      R"({"kind":"kernel","name":"triton_red_fused_0","start":10,"duration":5,)"
      R"("user_ranges":["pyprof.autotune:triton_red_fused_0 XBLOCK: 1, num_warps: 2"]})"
      "\n"
      R"({"kind":"kernel","name":"triton_red_fused_0","start":20,"duration":3,)"
      R"("user_ranges":["train","pyprof.autotune:triton_red_fused_0 XBLOCK: 1, num_warps: 8"]})"
      "\n"
      R"({"kind":"memset","name":"[CUDA memset]","bytes":4,"start":30,"duration":2,)"
      R"("user_ranges":["pyprof.autotune:triton_red_fused_0 XBLOCK: 1, num_warps: 8"]})"
      "\n"
      R"({"kind":"kernel","name":"k","start":40,"duration":1,"user_ranges":["autotune"]})"
      "\n");
  ASSERT_EQ(r.records.size(), 5u);
  EXPECT_FALSE(r.records[0].autotune);
  EXPECT_TRUE(r.records[1].autotune);
  EXPECT_TRUE(r.records[2].autotune);  // an outer range first
  EXPECT_TRUE(r.records[3].autotune);
  EXPECT_FALSE(r.records[4].autotune);  // another range of that name is the program's
  EXPECT_EQ(autotuning_note(r), "");
  std::string error;
  ASSERT_TRUE(select_iterations(r, parsed("all"), error));  // no iterations: still left out
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].duration, 7);
  EXPECT_EQ(r.records[1].duration, 1);
  EXPECT_EQ(r.autotune_records, 3);
  EXPECT_EQ(r.autotune_gpu_time, 10);  // 5 + 3 + 2 ns
  EXPECT_EQ(autotuning_note(r),
            "3 records of Triton's autotuning (pyprof.autotune ranges; 10 ns of GPU time) left "
            "out: they time launch configurations, not the program's work");
}

TEST(LeaveOutAutotuning, CpuParentLinksFollowTheKeptRecords) {
  ReadResult data;
  data.cpu_only = true;
  for (int32_t i = 0; i < 4; ++i) {
    ProfRecord r;
    r.kind = Kind::kOp;
    r.duration = 1;
    r.parent = i - 1;  // a chain: 0 <- 1 <- 2 <- 3
    r.autotune = i == 1;
    r.bad_time = i == 3;
    data.records.push_back(r);
  }
  data.bad_time = 1;
  leave_out_autotuning(data);
  ASSERT_EQ(data.records.size(), 3u);
  EXPECT_EQ(data.records[0].parent, -1);
  EXPECT_EQ(data.records[1].parent, -1);  // its parent was left out: a root now
  EXPECT_EQ(data.records[2].parent, 1);
  EXPECT_EQ(data.autotune_records, 1);
  EXPECT_EQ(data.autotune_gpu_time, 0);  // CPU records: no GPU time
  EXPECT_EQ(data.bad_time, 1);
  EXPECT_EQ(autotuning_note(data),
            "1 record of Triton's autotuning (pyprof.autotune ranges) left out: they time "
            "launch configurations, not the program's work");
}

TEST(ReadDict, BadStepsAreCountedAndWarnedOnce) {
  ReadResult r = read_text(std::string(kTwoSteps) +
                           R"({"kind":"op","name":"a","start":1,"duration":1,"step":2})"
                           "\n"
                           R"({"kind":"op","name":"b","start":1,"duration":1,"step":"x"})"
                           "\n"
                           R"({"kind":"op","name":"c","start":1,"duration":1,"step":-1})"
                           "\n"
                           R"({"kind":"op","name":"d","start":1,"duration":1,"step":1.5})"
                           "\n");
  for (const ProfRecord& rec : r.records) EXPECT_EQ(rec.step, -1);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("4 records with a `step`"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("line 2, a: step 2"), std::string::npos) << r.warnings[0];
}

TEST(ReadDict, MalformedIterationsAreIgnoredWithOneWarning) {
  const char* const kBad[] = {
      R"("iterations":[1,2])",
      R"("iterations":{"rule":"user_range","steps":[]})",
      R"("iterations":{"rule":"user_range","steps":[{"index":1,"start":0,"end":5}]})",
      R"("iterations":{"rule":"user_range","steps":[{"index":0,"start":5,"end":1}]})",
      R"("iterations":{"rule":"user_range","steps":[{"index":0,"start":0,"end":5},)"
      R"({"index":1,"start":4,"end":9}]})",  // overlapping
      R"("iterations":{"rule":"user_range","count":3,"steps":[{"index":0,"start":0,"end":5}]})",
      R"("iterations":{"steps":[{"index":0,"start":0,"end":5}]})",  // no rule
      R"("iterations":{"rule":7,"steps":[{"index":0,"start":0,"end":5}]})",
  };
  for (const char* bad : kBad) {
    ReadResult r = read_text(std::string(R"({"pyprof_dict":1,"records":"op",)") + bad + "}\n" +
                             R"({"kind":"op","name":"a","start":1,"duration":1,"step":0})" + "\n");
    EXPECT_TRUE(r.iterations.steps.empty()) << bad;
    ASSERT_EQ(r.records.size(), 1u) << bad;
    EXPECT_EQ(r.records[0].step, -1) << bad;
    ASSERT_EQ(r.warnings.size(), 1u) << bad;  // the header's, not one per record
    EXPECT_NE(r.warnings[0].find("`iterations` is malformed"), std::string::npos) << r.warnings[0];
  }
}

TEST(ReadDict, StepsWithoutIterationsAreWarned) {
  ReadResult r = read_text(R"({"pyprof_dict":1,"records":"op"})"
                           "\n"
                           R"({"kind":"op","name":"a","start":1,"duration":1,"step":0})"
                           "\n");
  EXPECT_EQ(r.records[0].step, -1);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("header's 0 iterations"), std::string::npos) << r.warnings[0];
}

}  // namespace
}  // namespace pyprof::prof
