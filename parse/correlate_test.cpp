// Correlation on traces built in memory: each kernel's launch, the innermost op around it, its
// module, direction and backward pairing, CUDA graph replays, sync calls, CPU-only op records,
// and the counts of what could not be attributed. Every expected value is worked out by hand
// from the trace the test builds.
#include "parse/correlate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse/trace_builder_test_util.h"

namespace pyprof::parse {
namespace {

// The attribution of the activity `activity` (an index into trace.activities).
const Attribution& of_activity(const Correlation& c, int32_t activity) {
  for (size_t k = 0; k < c.order.size(); ++k) {
    if (c.order[k] == activity) return c.attributions[k];
  }
  ADD_FAILURE() << "activity " << activity << " is not in the output order";
  static const Attribution none;
  return none;
}

TEST(Correlate, KernelsGoToTheInnermostOpAroundTheirLaunch) {
  TraceBuilder b;
  const int32_t step = b.range("step 0", 0, 1000);
  const int32_t fc = b.module("Net.fc", 100, 400, "Linear");
  const int32_t linear = b.op("aten::linear", 110, 390, 3);
  const int32_t addmm = b.op("aten::addmm", 120, 300, 3);
  const int32_t in_addmm = b.kernel(130, 2000);
  const int32_t in_linear = b.kernel(350, 2100);         // after addmm ended, still in linear
  const int32_t in_step = b.kernel(500, 2200);           // in a user range only
  const int32_t outside = b.kernel(1500, 2300);          // in no range
  const int32_t no_launch = b.activity(99, 2400, 2410);  // no call has correlation id 99
  const Correlation c = correlate(b.trace);

  ASSERT_FALSE(c.cpu_only);
  EXPECT_EQ(c.order, (std::vector<int32_t>{in_addmm, in_linear, in_step, outside, no_launch}));
  const Attribution& a = of_activity(c, in_addmm);
  EXPECT_EQ(a.launch, 0);
  EXPECT_EQ(a.innermost, addmm);
  EXPECT_EQ(a.op, addmm);
  EXPECT_EQ(a.module, fc);
  EXPECT_EQ(a.dir, Direction::kForward);
  EXPECT_EQ(seq_of(b.trace, a), 3);
  EXPECT_EQ(a.node, -1);
  EXPECT_FALSE(a.paired);

  EXPECT_EQ(of_activity(c, in_linear).op, linear);
  EXPECT_EQ(of_activity(c, in_linear).innermost, linear);
  EXPECT_EQ(of_activity(c, in_step).innermost, step);
  EXPECT_EQ(of_activity(c, in_step).op, -1);
  EXPECT_EQ(of_activity(c, in_step).dir, Direction::kNone);
  EXPECT_EQ(of_activity(c, outside).innermost, -1);
  EXPECT_EQ(of_activity(c, no_launch).launch, -1);

  // Parents: the tightest enclosing range on the thread.
  EXPECT_EQ(b.trace.ranges[addmm].parent, linear);
  EXPECT_EQ(b.trace.ranges[linear].parent, fc);
  EXPECT_EQ(b.trace.ranges[fc].parent, step);
  EXPECT_EQ(b.trace.ranges[step].parent, -1);
  EXPECT_EQ(c.rank, (std::vector<int32_t>{1, 2, 3, 4}));

  EXPECT_EQ(c.stats.attributed, 2);
  EXPECT_EQ(c.stats.no_op, 1);
  EXPECT_EQ(c.stats.outside_ranges, 1);
  EXPECT_EQ(c.stats.without_launch, 1);
  EXPECT_EQ(c.stats.backward, 0);
}

TEST(Correlate, AnOpWithoutSeqTakesTheSeqOfTheOpAroundIt) {
  TraceBuilder b;
  const int32_t linear = b.op("aten::linear", 0, 100, 7);
  const int32_t t = b.op("aten::t", 10, 20);  // composite ops' inner calls carry no seq
  b.kernel(15, 500);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].op, t);
  EXPECT_EQ(c.attributions[0].seq_range, linear);
  EXPECT_EQ(seq_of(b.trace, c.attributions[0]), 7);
}

TEST(Correlate, CorrelationIdsAreMatchedWithinTheirProcess) {
  // Both processes use correlation id 7 (NVIDIA/PyProf#79).
  TraceBuilder b;
  b.pid = 10;
  const int32_t mm = b.op("aten::mm", 0, 100);
  b.call("cudaLaunchKernel", 10, 15, 7);
  b.pid = 20;
  const int32_t conv = b.op("aten::conv2d", 0, 100);
  b.call("cudaLaunchKernel", 20, 25, 7);
  const int32_t of_20 = b.activity(7, 1000, 1010);
  b.pid = 10;
  const int32_t of_10 = b.activity(7, 2000, 2010);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(of_activity(c, of_20).launch, 1);
  EXPECT_EQ(of_activity(c, of_20).op, conv);
  EXPECT_EQ(of_activity(c, of_10).launch, 0);
  EXPECT_EQ(of_activity(c, of_10).op, mm);
}

TEST(Correlate, RangesOfAnotherThreadDoNotEncloseALaunch) {
  TraceBuilder b;
  b.op("aten::mm", 0, 100, -1, /*tid=*/1);
  b.kernel(50, 500, /*tid=*/2);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].launch, 0);
  EXPECT_EQ(c.attributions[0].innermost, -1);
  EXPECT_EQ(c.stats.outside_ranges, 1);
}

// Which of two nested op ranges names the op (RangeContext::op): pyprof and Kineto markers over
// legacy PyProf's over emit_nvtx's; of one dialect the innermost, but the outermost of legacy
// PyProf's (PyProf reported op[0]).
TEST(Correlate, OpDialectsRankByStrength) {
  struct Case {
    Dialect outer, inner;
    bool inner_wins;
  };
  const Case cases[] = {
      {Dialect::kEmitNvtx, Dialect::kPyprof, true},
      {Dialect::kPyprof, Dialect::kEmitNvtx, false},
      {Dialect::kPyprof, Dialect::kPyprof, true},
      {Dialect::kEmitNvtx, Dialect::kEmitNvtx, true},
      {Dialect::kKineto, Dialect::kKineto, true},
      {Dialect::kLegacyPyprof, Dialect::kLegacyPyprof, false},
      {Dialect::kLegacyPyprof, Dialect::kPyprof, true},
      {Dialect::kPyprof, Dialect::kLegacyPyprof, false},
      {Dialect::kEmitNvtx, Dialect::kLegacyPyprof, true},
      {Dialect::kLegacyPyprof, Dialect::kEmitNvtx, false},
      {Dialect::kKineto, Dialect::kPyprof, true},
  };
  for (const Case& t : cases) {
    TraceBuilder b;
    const int32_t outer = b.op("outer", 0, 100);
    const int32_t inner = b.op("inner", 10, 90);
    b.trace.ranges[outer].dialect = t.outer;
    b.trace.ranges[inner].dialect = t.inner;
    b.kernel(50, 500);
    const Correlation c = correlate(b.trace);
    EXPECT_EQ(c.attributions[0].op, t.inner_wins ? inner : outer)
        << "outer " << static_cast<int>(t.outer) << ", inner " << static_cast<int>(t.inner);
    EXPECT_EQ(c.attributions[0].innermost, inner);
  }
}

TEST(Correlate, AUserRangeInsideAnOpIsNoOp) {
  TraceBuilder b;
  const int32_t op = b.op("aten::mm", 0, 100);
  const int32_t user = b.range("my block", 10, 90);
  b.kernel(50, 500);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].innermost, user);
  EXPECT_EQ(c.attributions[0].op, op);
}

TEST(Correlate, OpsWithOneSpanNestInPushOrder) {
  // A clock coarser than two nested pushes: the same start and end. Databases hold ranges in
  // pop order (the inner first); the smaller op id is the outer.
  TraceBuilder b;
  const int32_t inner = b.op("aten::addmm", 10, 20);
  const int32_t outer = b.op("aten::linear", 10, 20);
  b.trace.ranges[inner].op_id = 6;
  b.trace.ranges[outer].op_id = 5;
  b.kernel(15, 500);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].op, inner);
  EXPECT_EQ(b.trace.ranges[inner].parent, outer);
  EXPECT_EQ(c.rank[outer], 1);
  EXPECT_EQ(c.rank[inner], 2);

  // Without op ids, the database's order decides: the first row is the outer.
  TraceBuilder n;
  const int32_t first = n.op("first", 10, 20);
  const int32_t second = n.op("second", 10, 20);
  n.kernel(15, 500);
  const Correlation nc = correlate(n.trace);
  EXPECT_EQ(nc.attributions[0].op, second);
  EXPECT_EQ(n.trace.ranges[second].parent, first);
}

TEST(Correlate, OverlappingRangesAreCountedAndPlacedUnderWhatContainsThem) {
  TraceBuilder b;
  const int32_t a = b.range("A", 0, 100);
  const int32_t overlapping = b.range("B", 50, 150);  // start/end ranges may overlap
  const int32_t op = b.op("aten::relu", 120, 140);
  const int32_t touching = b.range("C", 150, 200);  // starts where B ends: not an overlap
  b.kernel(130, 500);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(b.trace.ranges[overlapping].parent, -1);
  EXPECT_EQ(b.trace.ranges[op].parent, overlapping);
  EXPECT_EQ(b.trace.ranges[touching].parent, -1);
  EXPECT_EQ(c.stats.ranges_improperly_nested, 1);
  EXPECT_EQ(c.attributions[0].op, op);
  EXPECT_EQ(b.trace.ranges[a].parent, -1);
}

TEST(Correlate, InstanceNumbersFollowThreadAndStartNotRowOrder) {
  TraceBuilder b;
  b.range("t2", 5, 6, MarkerKind::kUser, 2);
  b.range("t1 late", 30, 40, MarkerKind::kUser, 1);
  b.range("t1 early", 10, 20, MarkerKind::kUser, 1);
  b.pid = 0;  // a smaller pid comes first
  b.range("p0", 50, 60, MarkerKind::kUser, 9);
  b.kernel(1, 100);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.rank, (std::vector<int32_t>{4, 3, 2, 1}));
}

TEST(Correlate, SubNumbersAnInstancesKernelsInLaunchOrder) {
  TraceBuilder b;
  const int32_t op = b.op("aten::mm", 0, 100);
  const int32_t first = b.kernel(10, 2000);   // launched first, runs last
  const int32_t second = b.kernel(20, 1000);  // launched second, runs first
  const int32_t other = b.op("aten::relu", 200, 300);
  const int32_t third = b.kernel(210, 3000);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.order, (std::vector<int32_t>{second, first, third}));
  EXPECT_EQ(of_activity(c, first).sub, 0);
  EXPECT_EQ(of_activity(c, second).sub, 1);
  EXPECT_EQ(of_activity(c, third).sub, 0);
  EXPECT_EQ(of_activity(c, first).op, op);
  EXPECT_EQ(of_activity(c, third).op, other);
}

TEST(Correlate, BackwardKernelsPairWithTheForwardOpThatMadeTheirNode) {
  TraceBuilder b;
  const int32_t fc = b.module("Net.fc", 0, 100, "Linear");
  b.op("aten::linear", 10, 90, 5);
  // Both ops share seq 5; the node's creator is the one that started last before it.
  const int32_t addmm = b.op("aten::addmm", 20, 80, 5);
  const int32_t fwd_kernel = b.kernel(30, 1000);
  // The autograd engine's thread (2) runs the node; its RecordFunction thread id is 1.
  const int32_t node = b.node("AddmmBackward0", 200, 300, 5, /*fwd_tid=*/0, /*tid=*/2);
  b.trace.ranges[node].op_id = 130;
  const int32_t mm = b.op("aten::mm", 210, 250, -1, /*tid=*/2, /*rf_tid=*/1);
  const int32_t dgrad = b.kernel(220, 1100, 2);
  const int32_t in_node = b.kernel(260, 1200, 2);  // in the node, outside every op
  const Correlation c = correlate(b.trace);

  EXPECT_EQ(of_activity(c, fwd_kernel).dir, Direction::kForward);
  const Attribution& a = of_activity(c, dgrad);
  EXPECT_EQ(a.dir, Direction::kBackward);
  EXPECT_EQ(a.node, node);
  EXPECT_EQ(a.bwd_op, mm);
  EXPECT_EQ(a.op, addmm);  // the forward op, so its time lands on the forward op and module
  EXPECT_EQ(a.module, fc);
  EXPECT_TRUE(a.paired);
  EXPECT_EQ(a.seq_range, node);
  EXPECT_EQ(a.sub, 0);
  const Attribution& beside = of_activity(c, in_node);
  EXPECT_EQ(beside.dir, Direction::kBackward);
  EXPECT_EQ(beside.bwd_op, -1);
  EXPECT_EQ(beside.op, addmm);
  EXPECT_EQ(beside.sub, 1);  // numbered per backward node, in launch order
  EXPECT_EQ(c.stats.backward, 2);
  EXPECT_EQ(c.stats.backward_paired, 2);
  EXPECT_EQ(c.stats.attributed, 3);
}

TEST(Correlate, AnUnpairedNodeKeepsTheOpItRan) {
  TraceBuilder b;
  b.op("aten::addmm", 0, 50, 4);  // seq 4: not the node's
  const int32_t node = b.node("AddmmBackward0", 100, 200, 9);
  const int32_t mm = b.op("aten::mm", 110, 150, -1, 2, 1);
  b.kernel(120, 1000, 2);
  b.kernel(160, 1100, 2);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].dir, Direction::kBackward);
  EXPECT_FALSE(c.attributions[0].paired);
  EXPECT_EQ(c.attributions[0].node, node);
  EXPECT_EQ(c.attributions[0].op, mm);
  EXPECT_EQ(c.attributions[0].module, -1);
  EXPECT_EQ(c.attributions[1].op, -1);  // no op ran it
  EXPECT_EQ(c.stats.backward, 2);
  EXPECT_EQ(c.stats.backward_paired, 0);
}

TEST(Correlate, NodesPairByTheirForwardThread) {
  // Two forward threads each run an op with seq 5; each node names its creator's thread.
  TraceBuilder b;
  const int32_t on_rf0 = b.op("aten::mul", 0, 50, 5, /*tid=*/1, /*rf_tid=*/0);
  const int32_t on_rf1 = b.op("aten::add", 10, 60, 5, /*tid=*/3, /*rf_tid=*/1);
  b.node("MulBackward0", 100, 200, 5, /*fwd_tid=*/0);
  b.kernel(150, 1000, 2);
  b.node("AddBackward0", 300, 400, 5, /*fwd_tid=*/1);
  b.kernel(350, 1100, 2);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].op, on_rf0);
  EXPECT_EQ(c.attributions[1].op, on_rf1);
  EXPECT_TRUE(c.attributions[0].paired && c.attributions[1].paired);
}

TEST(Correlate, ARepeatedSeqPairsWithTheLastOpBeforeTheNode) {
  // Sequence numbers that restart every step (a synthetic trace repeated).
  TraceBuilder b;
  const int32_t step0 = b.op("aten::mm", 0, 10, 0);
  b.node("MmBackward0", 20, 30, 0);
  b.kernel(25, 1000, 2);
  const int32_t step1 = b.op("aten::mm", 40, 50, 0);
  b.node("MmBackward0", 60, 70, 0);
  b.kernel(65, 1100, 2);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.attributions[0].op, step0);
  EXPECT_EQ(c.attributions[1].op, step1);
}

TEST(Correlate, EmitNvtxNodesPairAcrossThreadsBySeqAlone) {
  // emit_nvtx strings carry no thread ids: the key's thread is -1 on both sides.
  TraceBuilder b;
  const int32_t op = b.op("aten::addmm", 0, 50, 12, /*tid=*/1, /*rf_tid=*/-1);
  const int32_t node = b.node("AddmmBackward0", 100, 200, 12, /*fwd_tid=*/-1, /*tid=*/2);
  b.trace.ranges[op].dialect = Dialect::kEmitNvtx;
  b.trace.ranges[node].dialect = Dialect::kEmitNvtx;
  b.kernel(150, 1000, 2);
  const Correlation c = correlate(b.trace);
  EXPECT_TRUE(c.attributions[0].paired);
  EXPECT_EQ(c.attributions[0].op, op);
}

TEST(Correlate, WorkBesideTheNodeInTheEnginesStepIsThatNodesBackward) {
  // The autograd engine's step for a node also accumulates gradients and reduces broadcast
  // ones (aten::sum for a Linear bias), outside the node's own range.
  TraceBuilder b;
  const int32_t fwd = b.op("aten::addmm", 0, 50, 4);
  const int32_t step = b.range("autograd::engine::evaluate_function: AddmmBackward0", 100, 400,
                               MarkerKind::kUser, 2);
  const int32_t node = b.node("AddmmBackward0", 110, 200, 4);
  b.kernel(120, 1000, 2);
  const int32_t sum = b.op("aten::sum", 250, 300, -1, 2, 1);
  b.kernel(260, 1100, 2);
  const Correlation c = correlate(b.trace);
  ASSERT_EQ(c.node_of_step.size(), b.trace.ranges.size());
  EXPECT_EQ(c.node_of_step[step], node);
  const Attribution& a = c.attributions[1];
  EXPECT_EQ(a.dir, Direction::kBackward);
  EXPECT_EQ(a.node, node);
  EXPECT_EQ(a.bwd_op, sum);
  EXPECT_EQ(a.op, fwd);
  EXPECT_TRUE(a.paired);
  EXPECT_EQ(c.attributions[0].node, node);
}

TEST(Correlate, AGraphReplaysKernelBelongsToTheOpThatCapturedItsNode) {
  TraceBuilder b;
  const int32_t mm = b.op("aten::mm", 0, 100);  // captured its kernel as node 7, at 50
  b.trace.graph_nodes.push_back({7, -1, 50, 1, 1});
  // Instantiation: node 70 of the executable graph, announced created and then cloned from 7.
  b.trace.graph_nodes.push_back({70, -1, 400, 1, 1});
  b.trace.graph_nodes.push_back({70, 7, 400, 1, 1});
  const int32_t replay = b.range("replay", 900, 1100);
  const int32_t launch = b.call("cudaGraphLaunch", 1000, 1010, 5);
  const int32_t captured = b.activity(5, 2000, 2010);
  b.trace.activities[captured].graph_node_id = 70;
  const int32_t unknown_node = b.activity(5, 2100, 2110);  // node 71 has no row
  b.trace.activities[unknown_node].graph_node_id = 71;
  const Correlation c = correlate(b.trace);

  const Attribution& a = of_activity(c, captured);
  EXPECT_EQ(a.launch, launch);  // the replay's call stays its launch
  EXPECT_EQ(a.innermost, mm);
  EXPECT_EQ(a.op, mm);
  EXPECT_EQ(a.dir, Direction::kForward);
  const Attribution& at_replay = of_activity(c, unknown_node);
  EXPECT_EQ(at_replay.launch, launch);
  EXPECT_EQ(at_replay.innermost, replay);
  EXPECT_EQ(at_replay.op, -1);
  EXPECT_EQ(c.stats.graph_launched, 2);
  EXPECT_EQ(c.stats.graph_captured, 1);
}

TEST(Correlate, SynchronizingCallsAreListedInStartOrderWithTheOpTheyRanIn) {
  TraceBuilder b;
  const int32_t item = b.op("aten::_local_scalar_dense", 100, 200);
  const int32_t in_item = b.call("cudaStreamSynchronize", 150, 190);
  const int32_t outside = b.call("cudaDeviceSynchronize", 50, 60);
  b.call("cudaMemcpyAsync", 120, 130);  // waits for nothing
  b.kernel(10, 1000);
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.sync_calls, (std::vector<int32_t>{outside, in_item}));
  ASSERT_EQ(c.sync_attributions.size(), 2u);
  EXPECT_EQ(c.sync_attributions[0].launch, outside);
  EXPECT_EQ(c.sync_attributions[0].innermost, -1);
  EXPECT_EQ(c.sync_attributions[0].dir, Direction::kNone);
  EXPECT_EQ(c.sync_attributions[1].launch, in_item);
  EXPECT_EQ(c.sync_attributions[1].op, item);
  EXPECT_EQ(c.sync_attributions[1].dir, Direction::kForward);
  // Sync calls are no records: the one kernel is.
  EXPECT_EQ(c.order.size(), 1u);
}

TEST(Correlate, SynchronizingApiNames) {
  for (const char* name : {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                           "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
                           "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize"}) {
    EXPECT_TRUE(is_synchronizing_api(name)) << name;
  }
  for (const char* name : {"cudaLaunchKernel", "cudaStreamWaitEvent", "cudaMemcpyAsync",
                           "cudaDeviceSynchronize_v3020", "cudadevicesynchronize", ""}) {
    EXPECT_FALSE(is_synchronizing_api(name)) << name;
  }
}

TEST(Correlate, CpuOnlyRecordsAreOpInstancesWithSelfTime) {
  TraceBuilder b;
  b.range("step", 0, 500);  // a user range: no record
  const int32_t linear = b.op("aten::linear", 0, 100, 3);
  const int32_t addmm = b.op("aten::addmm", 10, 60, 3);
  const int32_t t = b.op("aten::t", 70, 80);
  const int32_t node = b.node("AddmmBackward0", 200, 300, 3);
  const int32_t mm = b.op("aten::mm", 210, 260, -1, 2, 1);
  const Correlation c = correlate(b.trace);

  ASSERT_TRUE(c.cpu_only);
  EXPECT_EQ(c.order, (std::vector<int32_t>{linear, addmm, t, node, mm}));
  EXPECT_EQ(c.self_time[linear], 100 - 50 - 10);
  EXPECT_EQ(c.self_time[addmm], 50);
  EXPECT_EQ(c.self_time[t], 10);
  EXPECT_EQ(c.self_time[node], 100 - 50);
  EXPECT_EQ(c.self_time[mm], 50);
  const auto& at = c.attributions;
  EXPECT_EQ(at[0].op, linear);
  EXPECT_EQ(at[0].innermost, linear);
  EXPECT_EQ(at[2].op, t);
  EXPECT_EQ(at[2].seq_range, t);  // an op record's own seq, even when it has none
  EXPECT_EQ(at[3].dir, Direction::kBackward);
  EXPECT_EQ(at[3].node, node);
  EXPECT_EQ(at[3].op, addmm);
  EXPECT_EQ(at[3].bwd_op, -1);
  EXPECT_EQ(at[4].dir, Direction::kBackward);
  EXPECT_EQ(at[4].op, addmm);
  EXPECT_EQ(at[4].bwd_op, mm);
  EXPECT_EQ(c.stats.attributed, 5);
  EXPECT_EQ(c.stats.backward_paired, 2);
}

TEST(Correlate, CpuOnlyUnpairedNodeRecordHasNoOp) {
  TraceBuilder b;
  const int32_t node = b.node("AddmmBackward0", 200, 300, 3);
  const Correlation c = correlate(b.trace);
  ASSERT_EQ(c.order, (std::vector<int32_t>{node}));
  EXPECT_EQ(c.attributions[0].dir, Direction::kBackward);
  EXPECT_EQ(c.attributions[0].op, -1);
  EXPECT_FALSE(c.attributions[0].paired);
}

TEST(Correlate, DeclaredPairsAreCheckedAgainstTheSeqPairing) {
  TraceBuilder b;
  const int32_t earlier = b.op("aten::linear", 0, 50, 5);
  const int32_t creator = b.op("aten::addmm", 10, 40, 5);
  const int32_t node = b.node("AddmmBackward0", 100, 200, 5);
  b.trace.declared_pairs = {{creator, node}, {earlier, node}};
  const Correlation c = correlate(b.trace);
  EXPECT_EQ(c.stats.declared_pairs, 2);
  EXPECT_EQ(c.stats.declared_pairs_disagree, 1);
  ASSERT_EQ(b.trace.warnings.size(), 1u);
  EXPECT_EQ(b.trace.warnings[0].category, "backward pairing differs from the trace's fwdbwd flows");
  EXPECT_EQ(b.trace.warnings[0].examples[0],
            "AddmmBackward0 (seq 5): the flow names aten::linear, sequence numbers aten::addmm");
}

TEST(Correlate, ContextOfARangeSummarisesItsChain) {
  TraceBuilder b;
  const int32_t module = b.module("Net", 0, 100);
  const int32_t user = b.range("block", 10, 90);
  const int32_t op = b.op("aten::conv2d", 20, 80, 2);
  const int32_t inner = b.range("inner", 30, 40);
  b.kernel(35, 500);
  const Correlation c = correlate(b.trace);
  const RangeContext ctx = context_of(b.trace, c, inner);
  EXPECT_EQ(ctx.op, op);
  EXPECT_EQ(ctx.seq_op, op);
  EXPECT_EQ(ctx.module, module);
  EXPECT_EQ(ctx.op_or_node, op);
  EXPECT_EQ(ctx.node, -1);
  EXPECT_EQ(ctx.depth, 4);
  EXPECT_EQ(module_of(b.trace, inner), module);
  EXPECT_EQ(op_or_node_of(b.trace, inner), op);
  EXPECT_EQ(op_or_node_of(b.trace, user), -1);
}

}  // namespace
}  // namespace pyprof::parse
