// The time of ops without a FLOP model (prof/unmodelled_ops.h), the summary's rows and the
// `unmodelled` report that list them and the advice rule `unmodelled-ops`, on profiles built record
// by record with every share counted by hand.
#include "prof/unmodelled_ops.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "prof/advice.h"
#include "prof/reports.h"

namespace pyprof::prof {
namespace {

// A record as read_dict leaves it: its op and cost_op (the op looked up, bprop: the backward op)
// interned, `modeled` as the models said.
ProfRecord& add(ReadResult& d, Kind kind, std::string_view op, int64_t ns, bool modeled,
                int32_t parent = -1) {
  ProfRecord r;
  r.kind = kind;
  r.dir = Dir::kFprop;
  r.op = r.cost_op = d.strings.intern(op);
  r.name = d.strings.intern(kind == Kind::kOp ? op : "kernel");
  r.start = d.records.empty() ? 0 : d.records.back().start + d.records.back().duration;
  r.duration = r.self_duration = ns;
  r.modeled = r.counted = modeled;
  r.parent = parent;
  d.records.push_back(r);
  return d.records.back();
}

// GPU: vllm::moe_forward 2 kernels of 30 µs, mylib::gate one of 10 µs (no model anywhere);
// aten::addmm 5 µs unmodelled (pyprof models it: its call was not costed); aten::view 5 µs
// modelled at 0 FLOPs; aten::mm 40 µs modelled; a kernel outside every op 10 µs. Total 130 µs.
ReadResult gpu_profile() {
  ReadResult d;
  add(d, Kind::kKernel, "vllm::moe_forward", 30'000, false);
  add(d, Kind::kKernel, "mylib::gate", 10'000, false);
  add(d, Kind::kKernel, "vllm::moe_forward", 30'000, false);
  add(d, Kind::kKernel, "aten::addmm", 5'000, false);
  add(d, Kind::kKernel, "aten::view", 5'000, true);
  add(d, Kind::kKernel, "aten::mm", 40'000, true);
  add(d, Kind::kKernel, "", 10'000, false);
  return d;
}

TEST(UnmodelledOps, GpuRanksTheOpsWithoutAModel) {
  const UnmodelledTime u = unmodelled_time(gpu_profile());
  EXPECT_EQ(u.total, 130'000);
  ASSERT_EQ(u.ops.size(), 2u);
  EXPECT_EQ(u.ops[0].op, "vllm::moe_forward");
  EXPECT_EQ(u.ops[0].time, 60'000);
  EXPECT_EQ(u.ops[0].records, 2);
  EXPECT_EQ(u.ops[1].op, "mylib::gate");
  EXPECT_EQ(u.ops[1].time, 10'000);
  EXPECT_EQ(u.unmodelled, 70'000);
  EXPECT_EQ(u.no_op_time, 10'000);
  EXPECT_EQ(u.no_op_records, 1);
  // aten::addmm has a model; its one call was not costed: listed apart.
  ASSERT_EQ(u.uncosted.size(), 1u);
  EXPECT_EQ(u.uncosted[0].op, "aten::addmm");
  EXPECT_EQ(u.uncosted[0].time, 5'000);
  EXPECT_EQ(u.uncosted[0].records, 1);
  EXPECT_EQ(u.uncosted_time, 5'000);
}

TEST(UnmodelledOps, SummaryRowsAndTable) {
  std::vector<ReportTable> tables;
  std::string error;
  ASSERT_TRUE(build_report("summary", gpu_profile(), ReportOptions{}, tables, error)) << error;
  ASSERT_TRUE(build_report("unmodelled", gpu_profile(), ReportOptions{}, tables, error)) << error;
  ASSERT_EQ(tables.size(), 3u);
  auto value = [&](std::string_view metric) -> std::string {
    for (const auto& row : tables[0].rows) {
      if (row[0] == metric) return row[1];
    }
    return "(none)";
  };
  // 70 of 130 µs: 53.8%; moe 60/130 = 46.2%, gate 10/130 = 7.7%; no op 10/130 = 7.7%.
  EXPECT_EQ(value("time in ops without a FLOP model %"), "53.8");
  EXPECT_EQ(value("ops without a FLOP model"), "2");
  EXPECT_EQ(value("unmodelled op 1"), "vllm::moe_forward 46.2% (60000 ns, 2 records)");
  EXPECT_EQ(value("unmodelled op 2"), "mylib::gate 7.7% (10000 ns, 1 record)");
  EXPECT_EQ(value("unmodelled op 3"), "(none)");
  EXPECT_EQ(value("time with no op to model %"), "7.7");
  // aten::addmm's uncosted call: 5 of 130 µs.
  EXPECT_EQ(value("time in calls a FLOP model could not cost %"), "3.8");
  EXPECT_EQ(value("uncosted op 1"), "aten::addmm 3.8% (5000 ns, 1 record)");
  EXPECT_EQ(value("uncosted op 2"), "(none)");
  const ReportTable& t = tables[1];
  EXPECT_EQ(t.report, "unmodelled");
  EXPECT_EQ(t.id, "unmodelled");
  ASSERT_EQ(t.headers,
            (std::vector<std::string>{"Rank", "Op", "Records", "Time(ns)", "% of time"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"1", "vllm::moe_forward", "2", "60000", "46.2"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"2", "mylib::gate", "1", "10000", "7.7"}));
  const ReportTable& uncosted = tables[2];
  EXPECT_EQ(uncosted.report, "unmodelled");
  EXPECT_EQ(uncosted.id, "uncosted");
  EXPECT_EQ(uncosted.headers, t.headers);
  ASSERT_EQ(uncosted.rows.size(), 1u);
  EXPECT_EQ(uncosted.rows[0], (std::vector<std::string>{"1", "aten::addmm", "1", "5000", "3.8"}));
}

TEST(UnmodelledOps, FullyModelledSummaryIsUnchanged) {
  ReadResult d;
  add(d, Kind::kKernel, "aten::mm", 40'000, true);
  add(d, Kind::kKernel, "aten::view", 5'000, true);
  std::vector<ReportTable> tables;
  std::string error;
  ASSERT_TRUE(build_report("summary", d, ReportOptions{}, tables, error)) << error;
  ASSERT_TRUE(build_report("unmodelled", d, ReportOptions{}, tables, error)) << error;
  ASSERT_EQ(tables.size(), 1u);  // no `unmodelled` or `uncosted` table
  for (const auto& row : tables[0].rows) {
    EXPECT_EQ(row[0].find("unmodelled"), std::string::npos) << row[0];
    EXPECT_EQ(row[0].find("uncosted"), std::string::npos) << row[0];
    EXPECT_EQ(row[0].find("could not cost"), std::string::npos) << row[0];
    EXPECT_EQ(row[0].find("without a FLOP model"), std::string::npos) << row[0];
    EXPECT_EQ(row[0].find("no op to model"), std::string::npos) << row[0];
  }
}

// CPU: mylib::fused_gate (no model) 10 µs self holds aten::mm, counted, 20 µs self; mylib::other
// (no model) 4 µs self runs inside aten::conv2d, counted, 16 µs self: covered by conv2d's
// model; a backward node's own record (no op to cost) 6 µs; aten::addmm unmodelled 4 µs.
// Total 60 µs.
TEST(UnmodelledOps, CpuCountsOnlyTheSelfTimeNoModelCovers) {
  ReadResult d;
  d.cpu_only = true;
  add(d, Kind::kOp, "mylib::fused_gate", 30'000, false).self_duration = 10'000;
  add(d, Kind::kOp, "aten::mm", 20'000, true, 0);
  add(d, Kind::kOp, "aten::conv2d", 20'000, true).self_duration = 16'000;
  add(d, Kind::kOp, "mylib::other", 4'000, false, 2);
  ProfRecord& node = add(d, Kind::kOp, "aten::mul", 6'000, false);
  node.dir = Dir::kBprop;
  node.cost_op = 0;
  add(d, Kind::kOp, "aten::addmm", 4'000, false);
  const UnmodelledTime u = unmodelled_time(d);
  EXPECT_EQ(u.total, 60'000);
  ASSERT_EQ(u.ops.size(), 1u);
  EXPECT_EQ(u.ops[0].op, "mylib::fused_gate");
  EXPECT_EQ(u.ops[0].time, 10'000);
  EXPECT_EQ(u.no_op_time, 6'000);
  ASSERT_EQ(u.uncosted.size(), 1u);  // aten::addmm, outside every counted op
  EXPECT_EQ(u.uncosted[0].op, "aten::addmm");
  EXPECT_EQ(u.uncosted[0].time, 4'000);
}

TEST(UnmodelledOps, AdviceNamesTheOpsAndTheFix) {
  const std::vector<Advice> advice = advise(gpu_profile());
  const Advice* a = nullptr;
  for (const Advice& it : advice) {
    if (it.rule == "unmodelled-ops") a = &it;
  }
  ASSERT_NE(a, nullptr);
  EXPECT_DOUBLE_EQ(a->at_stake_ns, 70'000);
  EXPECT_EQ(a->finding,
            "2 ops without a FLOP model hold 70.0 µs (53.8% of GPU time): the achieved FLOP/s, "
            "the roofline and the time model leave that time out.");
  EXPECT_EQ(a->evidence,
            "vllm::moe_forward 46.2% (60.0 µs, 2 records); mylib::gate 7.7% (10.0 µs, 1 record)");
  EXPECT_NE(a->fix.find("--op-models FILE"), std::string::npos) << a->fix;
  EXPECT_NE(a->fix.find("--flop-registry MODULE"), std::string::npos) << a->fix;
  EXPECT_NE(a->fix.find("docs/ops.md"), std::string::npos) << a->fix;
}

// The threshold, 5% of the time: 5 µs of 100 fires, 4.9 µs does not.
TEST(UnmodelledOps, AdviceFiresFromFivePercent) {
  for (int64_t gate : {5'000, 4'900}) {
    ReadResult d;
    add(d, Kind::kKernel, "mylib::gate", gate, false);
    add(d, Kind::kKernel, "aten::mm", 100'000 - gate, true);
    bool fired = false;
    for (const Advice& it : advise(d)) fired |= it.rule == "unmodelled-ops";
    EXPECT_EQ(fired, gate == 5'000) << gate;
  }
}

}  // namespace
}  // namespace pyprof::prof
