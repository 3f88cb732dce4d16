// pyprof diff: the t distribution against reference values (scipy.stats 1.17: 2 * t.sf), and
// diff_profiles on synthetic profiles whose rows, verdicts and gate are worked out by hand:
// with iterations, windows without them (the loop found, per call), gates without a test.
#include "diff/diff.h"

#include <gtest/gtest.h>

#include <cmath>

namespace pyprof::prof {
namespace {

TEST(DiffStatistics, StudentTTwoSidedP) {
  EXPECT_NEAR(student_t_two_sided_p(2.0, 10), 0.07338803477074037, 1e-12);
  EXPECT_NEAR(student_t_two_sided_p(1.0, 1), 0.5, 1e-12);  // Cauchy
  EXPECT_NEAR(student_t_two_sided_p(12.706, 1), 0.05000080235813319, 1e-10);
  EXPECT_NEAR(student_t_two_sided_p(-3.5, 2.5), 0.052345546960320344, 1e-10);
  EXPECT_DOUBLE_EQ(student_t_two_sided_p(0, 7), 1.0);
  EXPECT_TRUE(std::isnan(student_t_two_sided_p(1, 0)));
}

TEST(DiffStatistics, WelchMatchesScipy) {
  // scipy.stats.ttest_ind(a, b, equal_var=False).pvalue
  EXPECT_NEAR(welch_p_value({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.0010528257933665399, 1e-12);
  EXPECT_NEAR(welch_p_value({10, 11, 10.5}, {10.2, 10.9, 10.4, 10.7}), 0.8880383890755995, 1e-10);
  EXPECT_TRUE(std::isnan(welch_p_value({1}, {2, 3})));
  EXPECT_DOUBLE_EQ(welch_p_value({4, 4}, {4, 4, 4}), 1.0);  // no spread, same mean
  EXPECT_DOUBLE_EQ(welch_p_value({4, 4}, {5, 5}), 0.0);     // no spread, different means
}

// A GPU profile of `steps` iterations of 1 ms, each with the given kernels (op, ns), the n-th
// step's times scaled by jitter[n].
struct Profile {
  ReadResult d;
  void step(const std::vector<std::pair<std::string, int64_t>>& kernels, int64_t start) {
    Step s;
    s.index = static_cast<int32_t>(d.iterations.steps.size());
    s.name = "step " + std::to_string(s.index);
    s.start = start;
    s.end = start + 1'000'000;
    d.iterations.steps.push_back(s);
    d.iterations.state.push_back(StepState::kSelected);
    int64_t clock = start;
    for (const auto& [op, ns] : kernels) {
      ProfRecord r;
      r.kind = Kind::kKernel;
      r.dir = Dir::kFprop;
      r.op = d.strings.intern(op);
      r.name = d.strings.intern(op + "_kernel");
      r.module = d.strings.intern("Net.layer");
      r.shapes = d.strings.intern("[8,8]");
      r.start = clock;
      r.duration = r.self_duration = ns;
      r.step = s.index;
      r.counted = true;
      r.flops = 1000;
      clock += ns;
      d.records.push_back(r);
    }
  }
};

Profile make(int steps, int64_t mm_ns, int64_t relu_ns, bool with_add = false) {
  Profile p;
  p.d.iterations.rule = "user_range";
  for (int i = 0; i < steps; ++i) {
    int64_t jitter = (i % 2 == 0 ? 1 : -1) * 1'000;  // +-1 µs: noise the test must see through
    std::vector<std::pair<std::string, int64_t>> k = {{"aten::mm", mm_ns + jitter},
                                                      {"aten::relu", relu_ns - jitter}};
    if (with_add) k.push_back({"aten::add", 50'000});
    p.step(k, 10'000'000 * i);
  }
  return p;
}

const DiffRow* find(const DiffResult& r, DiffLevel level, const std::string& first) {
  for (const DiffTable& t : r.tables) {
    if (t.level != level) continue;
    for (const DiffRow& row : t.rows)
      if (row.key[0] == first) return &row;
  }
  return nullptr;
}

TEST(Diff, SlowerOpIsFoundAndGatesCi) {
  Profile base = make(6, 400'000, 100'000), next = make(6, 520'000, 100'000, true);
  DiffOptions options;
  options.fail_above_pct = 8;
  DiffResult r = diff_profiles(base.d, next.d,
                               {DiffLevel::kStep, DiffLevel::kOpType, DiffLevel::kKernel}, options);
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_DOUBLE_EQ(mm->base_ns, 400'000);
  EXPECT_DOUBLE_EQ(mm->new_ns, 520'000);
  EXPECT_DOUBLE_EQ(mm->delta_pct, 30);
  EXPECT_LT(mm->p_value, 1e-6);
  EXPECT_EQ(mm->verdict, Verdict::kSlower);
  EXPECT_TRUE(mm->fails_gate);
  EXPECT_DOUBLE_EQ(mm->base_share_pct, 80);  // 400 of 500 µs busy per step
  const DiffRow* relu = find(r, DiffLevel::kOpType, "aten::relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->verdict, Verdict::kSame);
  EXPECT_FALSE(relu->fails_gate);
  const DiffRow* add = find(r, DiffLevel::kOpType, "aten::add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->verdict, Verdict::kNew);
  EXPECT_TRUE(add->fails_gate);  // 50 µs new is 10% of the base's 500 µs busy: over 8%
  // The largest change comes first.
  EXPECT_EQ(r.tables[1].rows[0].key[0], "aten::mm");
  const DiffRow* busy = find(r, DiffLevel::kStep, "GPU busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_DOUBLE_EQ(busy->base_ns, 500'000);
  EXPECT_DOUBLE_EQ(busy->new_ns, 670'000);
  EXPECT_EQ(busy->verdict, Verdict::kSlower);
  const DiffRow* kernel = find(r, DiffLevel::kKernel, "aten::mm_kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->key, (std::vector<std::string>{"aten::mm_kernel", "Net.layer", "[8,8]"}));
  EXPECT_GT(r.failing_rows, 0u);
}

TEST(Diff, SameProfileIsCleanAndPassesTheGate) {
  Profile base = make(5, 400'000, 100'000), next = make(5, 401'000, 99'500);
  DiffOptions options;
  options.fail_above_pct = 5;
  DiffResult r = diff_profiles(base.d, next.d,
                               {DiffLevel::kStep, DiffLevel::kOp, DiffLevel::kOpType,
                                DiffLevel::kModule, DiffLevel::kKernel},
                               options);
  for (const DiffTable& t : r.tables) {
    for (const DiffRow& row : t.rows) {
      EXPECT_EQ(row.verdict, Verdict::kSame) << t.title << " " << row.key[0];
    }
  }
  EXPECT_EQ(r.failing_rows, 0u);
  // Two ops are too few to estimate the typical change: said, and rows judged raw.
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("too few"), std::string::npos) << r.notes[0];
  EXPECT_EQ(r.typical_change_pct, 0);
}

// Ten ops; NEW ran on a machine 15% slower throughout, and its aten::op3 regressed to twice its
// time besides. Only aten::op3 is slower; the step rows show the absolute change.
TEST(Diff, UniformMachineChangeIsTheTypicalChangeNotARegression) {
  Profile base, next;
  base.d.iterations.rule = next.d.iterations.rule = "user_range";
  for (int i = 0; i < 6; ++i) {
    std::vector<std::pair<std::string, int64_t>> b, n;
    for (int op = 0; op < 10; ++op) {
      int64_t ns = 50'000 + 1'000 * op + (i % 3) * 500;  // a little noise per step
      b.push_back({"aten::op" + std::to_string(op), ns});
      int64_t slowed = static_cast<int64_t>(static_cast<double>(ns) * 1.15);
      n.push_back({"aten::op" + std::to_string(op), op == 3 ? 2 * slowed : slowed});
    }
    base.step(b, 10'000'000 * i);
    next.step(n, 10'000'000 * i);
  }
  DiffOptions options;
  options.fail_above_pct = 50;
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kStep, DiffLevel::kOpType}, options);
  EXPECT_NEAR(r.typical_change_pct, 15, 0.01);
  EXPECT_EQ(r.typical_rows, 10u);
  for (const DiffTable& t : r.tables) {
    if (t.level != DiffLevel::kOpType) continue;
    for (const DiffRow& row : t.rows) {
      if (row.key[0] == "aten::op3") {
        EXPECT_EQ(row.verdict, Verdict::kSlower);
        EXPECT_NEAR(row.delta_pct, 130, 0.1);           // 2 x 1.15
        EXPECT_NEAR(row.adjusted_delta_pct, 100, 0.1);  // its own change
        EXPECT_TRUE(row.fails_gate);  // +100% > 50%, and it added ~10% of the busy time
      } else {
        EXPECT_EQ(row.verdict, Verdict::kSame) << row.key[0];
        EXPECT_NEAR(row.adjusted_delta_pct, 0, 0.01) << row.key[0];
        EXPECT_FALSE(row.fails_gate);
      }
    }
  }
  const DiffRow* busy = find(r, DiffLevel::kStep, "GPU busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->verdict, Verdict::kSlower);  // absolute: the run did take longer
  EXPECT_FALSE(busy->fails_gate);              // --fail-above gates the other rows only
  options.fail_step_above_pct = 20;            // the step gate, asked for: +26% is over 20%
  r = diff_profiles(base.d, next.d, {DiffLevel::kStep}, options);
  busy = find(r, DiffLevel::kStep, "GPU busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_TRUE(busy->fails_gate);
}

TEST(Diff, NoiseAloneIsNotSignificant) {
  // 10% apart on average, but the samples spread far more than that: not significant.
  Profile base, next;
  base.d.iterations.rule = next.d.iterations.rule = "user_range";
  const int64_t a[] = {300'000, 700'000, 400'000, 600'000};
  const int64_t b[] = {350'000, 750'000, 450'000, 650'000};
  for (int i = 0; i < 4; ++i) {
    base.step({{"aten::mm", a[i]}}, 10'000'000 * i);
    next.step({{"aten::mm", b[i]}}, 10'000'000 * i);
  }
  DiffOptions options;
  options.fail_above_pct = 5;
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, options);
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_DOUBLE_EQ(mm->delta_pct, 10);
  EXPECT_GT(mm->p_value, 0.5);
  EXPECT_EQ(mm->verdict, Verdict::kSame);
  EXPECT_FALSE(mm->fails_gate);
}

// A busy machine does not slow every op alike: here NEW's twelve ops moved by factors from 0.8
// to 1.25 about a typical 1.0. aten::op5 (x1.3, just outside them) is within 3 sigmas of that
// scatter: same; aten::op11, whose calls doubled (x2.2), is far beyond: slower.
TEST(Diff, ARowCountsOnlyBeyondTheRowsScatter) {
  const double factor[12] = {0.8, 0.85, 0.9, 0.95, 1.0, 1.3, 1.0, 1.05, 1.1, 1.15, 1.25, 2.2};
  Profile base, next;
  base.d.iterations.rule = next.d.iterations.rule = "user_range";
  for (int i = 0; i < 6; ++i) {
    std::vector<std::pair<std::string, int64_t>> b, n;
    for (int op = 0; op < 12; ++op) {
      int64_t ns = 40'000 + (i % 3) * 200;
      b.push_back({"aten::op" + std::to_string(op), ns});
      n.push_back({"aten::op" + std::to_string(op),
                   static_cast<int64_t>(static_cast<double>(ns) * factor[op])});
    }
    base.step(b, 10'000'000 * i);
    next.step(n, 10'000'000 * i);
  }
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, DiffOptions{});
  // The median of the twelve factors, taken of their logarithms: between 1.0 and 1.05, their
  // geometric mean.
  EXPECT_NEAR(r.typical_change_pct, 100 * (std::sqrt(1.05) - 1), 1e-9);
  EXPECT_GT(r.row_scatter_pct, 10);
  const DiffRow* five = find(r, DiffLevel::kOpType, "aten::op5");
  const DiffRow* eleven = find(r, DiffLevel::kOpType, "aten::op11");
  ASSERT_TRUE(five && eleven);
  EXPECT_LT(five->p_value, 0.05);          // significant within the runs, yet inside the scatter:
  EXPECT_TRUE(std::isnan(five->q_value));  // not a candidate, so not adjusted
  EXPECT_EQ(five->verdict, Verdict::kSame);
  EXPECT_LT(eleven->q_value, 0.05);
  EXPECT_EQ(eleven->verdict, Verdict::kSlower);
}

// Fixed-length windows of one loop without iterations: BASE holds 5 of its steps, NEW 3. The
// detector finds the loop ([mm, relu]) in both: 4 and 2 whole repetitions (the records after
// the last mm left out), compared per iteration; the whole windows' totals would read -40%.
Profile window_of(int steps, int64_t mm_ns) {
  Profile p = make(steps, mm_ns, 100'000);
  p.d.iterations = Iterations{};
  for (ProfRecord& r : p.d.records) r.step = -1;
  return p;
}

TEST(Diff, WindowsWithoutIterationsAreComparedPerDetectedIteration) {
  Profile base = window_of(5, 400'000), next = window_of(3, 400'000);
  DiffOptions options;
  options.fail_above_pct = 5;
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kStep, DiffLevel::kOpType}, options);
  EXPECT_EQ(r.basis, DiffBasis::kIteration);
  EXPECT_TRUE(r.base.steps_detected && r.next.steps_detected);
  EXPECT_EQ(r.base.samples, 4u);
  EXPECT_EQ(r.next.samples, 2u);
  EXPECT_NE(r.base.iterations.find("detected: 4 whole repetitions of a 2-call op sequence"),
            std::string::npos)
      << r.base.iterations;
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_DOUBLE_EQ(mm->base_ns, 400'000);  // steps 0-3: +-1 µs of jitter cancel
  EXPECT_DOUBLE_EQ(mm->new_ns, 400'000);   // steps 0-1
  EXPECT_FALSE(std::isnan(mm->p_value));
  EXPECT_EQ(mm->verdict, Verdict::kSame);
  const DiffRow* step = find(r, DiffLevel::kStep, "step time");
  ASSERT_NE(step, nullptr);
  EXPECT_DOUBLE_EQ(step->base_ns, 10'000'000);  // from one mm's start to the next
  EXPECT_EQ(r.failing_rows, 0u);
  EXPECT_TRUE(r.gate_refused.empty());
}

// With the loop not sought (--basis call), each call is a sample: time per call, tested.
TEST(Diff, PerCallBasisTestsTheCalls) {
  Profile base = window_of(5, 400'000), same = window_of(3, 400'000), slow = window_of(3, 520'000);
  DiffOptions options;
  options.basis = DiffBasis::kCall;
  options.fail_above_pct = 5;
  const std::vector<DiffLevel> levels = {DiffLevel::kStep, DiffLevel::kOpType, DiffLevel::kKernel};
  DiffResult r = diff_profiles(base.d, same.d, levels, options);
  EXPECT_EQ(r.basis, DiffBasis::kCall);
  EXPECT_EQ(r.base.calls, 10u);
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->base_time.size(), 5u);  // its 5 calls
  EXPECT_DOUBLE_EQ(mm->base_calls, 5);  // the calls each window holds
  EXPECT_DOUBLE_EQ(mm->new_calls, 3);
  EXPECT_DOUBLE_EQ(mm->base_ns, 400'200);  // (3 x 401 + 2 x 399 µs) / 5
  EXPECT_NEAR(mm->new_ns, (2 * 401'000 + 399'000) / 3.0, 1e-6);
  EXPECT_EQ(mm->verdict, Verdict::kSame);
  EXPECT_NEAR(mm->base_share_pct, 80, 0.1);  // 2.001 of 2.5 ms busy in all
  for (const DiffTable& t : r.tables) {
    if (t.level == DiffLevel::kStep) {
      EXPECT_EQ(t.title, "diff: whole profile");
      for (const DiffRow& row : t.rows) EXPECT_EQ(row.verdict, Verdict::kUntested);
    }
    if (t.level == DiffLevel::kKernel) {
      EXPECT_EQ(t.basis, "per launch");
    }
  }
  EXPECT_EQ(r.failing_rows, 0u);
  r = diff_profiles(base.d, slow.d, levels, options);
  mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_LT(mm->p_value, 1e-4);
  EXPECT_EQ(mm->verdict, Verdict::kSlower);
  EXPECT_TRUE(mm->fails_gate);
  EXPECT_EQ(r.failing_slower, r.failing_rows);
  EXPECT_GT(r.failing_rows, 0u);
}

// One sample a side (the whole profiles): no test, so no verdict and no gate on significance:
// the gate refuses, unless asked to gate on size alone.
TEST(Diff, AGateWithoutATestRefusesUnlessAsked) {
  Profile base = window_of(4, 400'000), next = window_of(4, 600'000);
  DiffOptions options;
  options.basis = DiffBasis::kProfile;
  options.fail_above_pct = 5;
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, options);
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_DOUBLE_EQ(mm->base_ns, 1'600'000);  // the whole profile: 4 x 400 µs
  EXPECT_TRUE(std::isnan(mm->p_value));
  EXPECT_EQ(mm->verdict, Verdict::kUntested);
  EXPECT_FALSE(mm->fails_gate);
  EXPECT_EQ(r.failing_rows, 0u);
  EXPECT_NE(r.gate_refused.find("none of the 2 rows in both profiles could be tested"),
            std::string::npos)
      << r.gate_refused;
  options.gate_without_test = true;
  r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, options);
  EXPECT_TRUE(r.gate_refused.empty());
  mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(mm->fails_gate);  // +50% on size alone
  EXPECT_EQ(r.failing_untested, 1u);
  EXPECT_EQ(r.failing_slower, 0u);
  std::vector<ReportTable> tables = diff_tables(r, options, 0);
  bool size_only = false;
  for (const auto& row : tables[0].rows) {
    if (row[0] == "gate") {
      size_only =
          row[1].find("1 slower on size alone (untested: a size-only gate)") != std::string::npos;
      EXPECT_EQ(row[1].find("significantly"), std::string::npos) << row[1];
    }
  }
  EXPECT_TRUE(size_only);
}

// One iteration a side: auto compares per call; --basis iteration keeps the iterations, untested.
TEST(Diff, OneIterationASideIsComparedPerCall) {
  Profile base = make(1, 400'000, 100'000), next = make(1, 600'000, 100'000);
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, DiffOptions{});
  EXPECT_EQ(r.basis, DiffBasis::kCall);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("1 iteration in BASE and 1 iteration in NEW"), std::string::npos)
      << r.notes[0];
  DiffOptions options;
  options.basis = DiffBasis::kIteration;
  r = diff_profiles(base.d, next.d, {DiffLevel::kOpType}, options);
  EXPECT_EQ(r.basis, DiffBasis::kIteration);
  const DiffRow* mm = find(r, DiffLevel::kOpType, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->verdict, Verdict::kUntested);
}

TEST(Diff, GoneRowsAndTablesRender) {
  Profile base = make(4, 400'000, 100'000, true), next = make(4, 400'000, 100'000);
  DiffResult r = diff_profiles(base.d, next.d, {DiffLevel::kStep, DiffLevel::kOpType}, {});
  const DiffRow* add = find(r, DiffLevel::kOpType, "aten::add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->verdict, Verdict::kGone);
  std::vector<ReportTable> tables = diff_tables(r, {}, 0);
  ASSERT_EQ(tables.size(), 3u);  // summary, step, op types
  EXPECT_EQ(tables[0].title, "diff summary");
  const ReportTable& ops = tables[2];
  ASSERT_EQ(ops.rows.size(), 3u);
  size_t verdict_col = 0;
  for (size_t i = 0; i < ops.headers.size(); ++i)
    if (ops.headers[i] == "Verdict") verdict_col = i;
  bool saw_gone = false;
  for (const auto& row : ops.rows) saw_gone = saw_gone || row[verdict_col] == "gone";
  EXPECT_TRUE(saw_gone);
}

}  // namespace
}  // namespace pyprof::prof
