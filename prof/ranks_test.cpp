// prof/ranks.h: collective kinds, bus bandwidth factors, the per-step compute / communication /
// overlap / idle split on hand-built net.dicts (GPU and CPU) and the straggler rule.
#include "prof/ranks.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "prof/iterations.h"

namespace pyprof::prof {
namespace {

ReadResult read_text(const std::string& text) {
  std::FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  ReadResult out;
  std::string error;
  EXPECT_TRUE(read_dict(f, ReadOptions{}, out, error)) << error;
  std::fclose(f);
  assign_costs(out);
  return out;
}

TEST(CollectiveKind, OpsKernelsAndBackendScopes) {
  EXPECT_EQ(collective_kind("c10d::allreduce_"), "all_reduce");
  EXPECT_EQ(collective_kind("c10d::_allgather_base_"), "all_gather");
  EXPECT_EQ(collective_kind("c10d::allgather_into_tensor_coalesced_"), "all_gather");
  EXPECT_EQ(collective_kind("c10d::_reduce_scatter_base_"), "reduce_scatter");
  EXPECT_EQ(collective_kind("c10d::broadcast_"), "broadcast");
  EXPECT_EQ(collective_kind("c10d::reduce_"), "reduce");
  EXPECT_EQ(collective_kind("c10d::alltoall_base_"), "all_to_all");
  EXPECT_EQ(collective_kind("c10d::barrier"), "barrier");
  EXPECT_EQ(collective_kind("_c10d_functional::all_gather_into_tensor"), "all_gather");
  EXPECT_EQ(collective_kind("_c10d_functional::reduce_scatter_tensor"), "reduce_scatter");
  EXPECT_EQ(collective_kind("gloo:all_reduce"), "all_reduce");
  EXPECT_EQ(collective_kind("nccl:all_gather"), "all_gather");
  EXPECT_EQ(collective_kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage)"),
            "all_reduce");
  EXPECT_EQ(collective_kind("ncclKernel_ReduceScatter_RING_LL_Sum_float"), "reduce_scatter");
  EXPECT_EQ(collective_kind("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage)"), "send_recv");
  EXPECT_EQ(collective_kind("aten::add"), "");
  EXPECT_EQ(collective_kind("volta_sgemm_128x64_nn"), "");
  EXPECT_EQ(collective_kind("c10d::"), "");
}

TEST(BusFactor, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor("all_gather", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor("all_to_all", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("all_reduce", 1), 1.0);
}

// One step [0, 100): compute kernels [0,30) and [20,50), an NCCL all-reduce [40,80) attributed
// to c10d::allreduce_ of 1000 float32 (4000 B). By hand: compute = |[0,50)| = 50,
// communication = 40, overlapped = |[40,50)| = 10, exposed = 30, idle = 100 - 80 = 20.
std::string gpu_rank(int rank, int64_t comm_start) {
  return R"({"pyprof_dict":2,"records":"gpu","rank":)" + std::to_string(rank) +
         R"(,"world_size":4,"iterations":{"rule":"user_range","range":"step N","count":1,)"
         R"("steps":[{"index":0,"name":"step 0","start":0,"end":100}]}})"
         "\n"
         R"({"kind":"kernel","name":"gemm_a","start":0,"duration":30,"step":0,"instance":1,)"
         R"("op":"aten::mm","dir":"fprop"})"
         "\n"
         R"({"kind":"kernel","name":"gemm_b","start":20,"duration":30,"step":0,"instance":2,)"
         R"("op":"aten::mm","dir":"fprop"})"
         "\n"
         R"({"kind":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","start":)" +
         std::to_string(comm_start) +
         R"(,"duration":40,"step":0,"instance":3,"op":"c10d::allreduce_","dir":"fprop",)"
         R"("args":{"tensors":[{"shape":[1000],"dtype":"float32"}]}})"
         "\n";
}

TEST(SummarizeRank, GpuOverlapExposedIdleByHand) {
  ReadResult data = read_text(gpu_rank(2, 40));
  RankSummary s = summarize_rank(data);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.world_size, 4);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].wall, 100);
  EXPECT_EQ(s.steps[0].compute, 50);
  EXPECT_EQ(s.steps[0].comm, 40);
  EXPECT_EQ(s.steps[0].overlapped, 10);
  EXPECT_EQ(s.steps[0].exposed(), 30);
  EXPECT_EQ(s.steps[0].idle, 20);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].kind, "all_reduce");
  EXPECT_EQ(s.collectives[0].op, "c10d::allreduce_");
  EXPECT_EQ(s.collectives[0].payload_bytes, 4000);
  EXPECT_EQ(s.collectives[0].calls, 1);
  EXPECT_EQ(s.collectives[0].time, 40);

  // The collectives table: 4000 B in 40 ns = 100 GB/s; bus 2 * 3/4 of that over 4 ranks.
  std::vector<ReportTable> tables = ranks_report({s});
  ASSERT_EQ(tables.size(), 4u);
  const ReportTable& coll = tables[3];
  ASSERT_EQ(coll.rows.size(), 1u);
  EXPECT_EQ(coll.rows[0][4], "4000");     // size
  EXPECT_EQ(coll.rows[0][8], "100.000");  // algbw GB/s
  EXPECT_EQ(coll.rows[0][9], "150.000");  // busbw GB/s
  EXPECT_EQ(coll.rows[0][10], "4");
}

// Rank 1 starts its all-reduce 30 ns later than ranks 0 and 2 (it computed longer): the others
// wait (their NCCL kernel spins from 40). Rank 1's kernel [70,110) is clipped to the step.
TEST(RanksReport, NamesTheStragglerOnlyWhenItCosts) {
  std::vector<RankSummary> ranks;
  for (int r : {0, 1, 2}) ranks.push_back(summarize_rank(read_text(gpu_rank(r, 40))));
  std::vector<ReportTable> even = ranks_report(ranks);
  ASSERT_EQ(even[1].rows.size(), 1u);
  EXPECT_EQ(even[1].rows[0][4], "-");  // no straggler when all ranks look alike

  // Steps of 100 ns are below the 1 ms floor: use 10 ms steps for a named straggler.
  auto scaled = [](int rank, int64_t comm_start) {
    std::string text = gpu_rank(rank, comm_start);
    ReadResult d = read_text(text);
    RankSummary s = summarize_rank(d);
    for (RankStep& st : s.steps) {
      st.wall *= 100000;
      st.compute *= 100000;
      st.comm *= 100000;
      st.overlapped *= 100000;
      st.idle *= 100000;
    }
    return s;
  };
  ranks.clear();
  ranks.push_back(scaled(0, 40));  // working = 100 - 30 = 70 (x1e5 ns)
  RankSummary slow = scaled(1, 40);
  slow.steps[0].overlapped = 0;  // it computed through what the others waited in
  slow.steps[0].comm = 1000000;  // exposed 1 ms: working 9 ms
  ranks.push_back(slow);
  ranks.push_back(scaled(2, 40));
  std::vector<ReportTable> t = ranks_report(ranks);
  ASSERT_EQ(t[1].rows.size(), 1u);
  EXPECT_EQ(t[1].rows[0][4], "1");        // straggler rank
  EXPECT_EQ(t[1].rows[0][5], "2000000");  // 9 ms - median(7 ms, 7 ms)
  EXPECT_EQ(t[1].rows[0][7], "3000000");  // the others' exposed communication (median)
  EXPECT_EQ(t[0].rows[1][11], "1");       // rank 1: one straggler step
}

// The warm-up rule judges each rank's step 0 alone: when it leaves step 0 out on one rank only,
// the report leaves it out on every rank, so the per-step rows and each rank's totals cover the
// same steps (before, rank 1's step 0 was a detail row with no rank 0 beside it).
TEST(RanksReport, AStepOneRankLeftOutIsLeftOutOfAll) {
  std::vector<RankSummary> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    for (int s = 0; s < 3; ++s) {
      RankStep st;
      st.index = s;
      st.wall = 10;
      st.compute = 7;
      st.idle = 3;
      ranks[r].steps.push_back(st);
    }
  }
  ranks[0].steps[0].selected = false;  // rank 0's warm-up
  // One all-reduce a step; rank 0's summary already lacks its warm-up step's call, rank 1's
  // has it (40 ns in step 0, 10 ns after): its row counts steps 1 and 2 only.
  for (int r = 0; r < 2; ++r) {
    RankCollective c;
    c.kind = "all_reduce";
    c.op = "c10d::allreduce_";
    c.payload_bytes = 4000;
    for (int s = r == 0 ? 1 : 0; s < 3; ++s) {
      c.by_step[s] = {1, s == 0 ? 40 : 10};
      c.calls += 1;
      c.time += s == 0 ? 40 : 10;
    }
    ranks[r].collectives.push_back(c);
  }
  // A rank whose only call of a kind fell in the left-out step has no row of that kind.
  RankCollective warm_up_only;
  warm_up_only.kind = "broadcast";
  warm_up_only.op = "c10d::broadcast_";
  warm_up_only.by_step[0] = {1, 30};
  warm_up_only.calls = 1;
  warm_up_only.time = 30;
  ranks[1].collectives.push_back(warm_up_only);
  std::vector<ReportTable> t = ranks_report(ranks);
  ASSERT_EQ(t[0].rows.size(), 2u);
  for (const auto& row : t[0].rows) {
    EXPECT_EQ(row[1], "2");   // steps
    EXPECT_EQ(row[2], "20");  // wall over steps 1 and 2
  }
  ASSERT_EQ(t[1].rows.size(), 2u);  // step 0 compared on no rank: no row
  EXPECT_EQ(t[1].rows[0][0], "1");
  EXPECT_EQ(t[1].rows[0][1], "2");  // both ranks
  ASSERT_EQ(t[2].rows.size(), 4u);  // ranks x steps 1, 2
  for (const auto& row : t[2].rows) EXPECT_NE(row[1], "0");
  ASSERT_EQ(t[3].title, "collectives");
  ASSERT_EQ(t[3].rows.size(), 2u);  // an all-reduce row per rank, no broadcast row
  for (const auto& row : t[3].rows) {
    EXPECT_EQ(row[1], "all_reduce");
    EXPECT_EQ(row[5], "2");   // calls: steps 1 and 2
    EXPECT_EQ(row[6], "20");  // time
  }
}

// CPU profiles: outermost ops are compute, c10d ops and the backend's comm spans are
// communication, ops on the backend's own threads are neither compute nor double counted.
// torch.profiler's record_param_comms names its process group's size: a collective over a
// sub-group of 4 in a world of 8 gets the bus factor of 4 ranks, and its own row beside the same
// collective over the world. 1024 float32 elements: 4096 B; 40 ns: 102.4 GB/s algbw.
TEST(RanksReport, SubGroupSizeFromTheRecord) {
  auto kernel = [](int64_t start, int64_t instance, const std::string& args) {
    return R"({"kind":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","start":)" +
           std::to_string(start) + R"(,"duration":40,"step":0,"instance":)" +
           std::to_string(instance) + R"(,"op":"record_param_comms","dir":"fprop","args":)" + args +
           "}\n";
  };
  const std::string text =
      R"({"pyprof_dict":2,"records":"gpu","rank":5,"world_size":8,"iterations":{"rule":)"
      R"("user_range","range":"step N","count":1,"steps":[{"index":0,"name":"step 0",)"
      R"("start":0,"end":200}]}})"
      "\n" +
      kernel(0, 1,
             R"({"collective":"allreduce","in_nelems":1024,"out_nelems":1024,"group_size":4,)"
             R"("dtype":"float32","pg_name":"3"})") +
      kernel(100, 2,
             R"({"collective":"allreduce","in_nelems":1024,"out_nelems":1024,"group_size":8,)"
             R"("dtype":"float32","pg_name":"0"})");
  RankSummary s = summarize_rank(read_text(text));
  ASSERT_EQ(s.collectives.size(), 2u);
  std::vector<ReportTable> t = ranks_report({s});
  const ReportTable& coll = t[3];
  ASSERT_EQ(coll.rows.size(), 2u);
  for (const auto& row : coll.rows) {
    // Rank, Collective, Op, Payload, Size, Calls, Time, Avg, Algbw, Busbw, Group
    EXPECT_EQ(row[1], "all_reduce");
    EXPECT_EQ(row[3], "4096");
    EXPECT_DOUBLE_EQ(std::stod(row[8]), 102.4);
  }
  EXPECT_EQ(coll.rows[0][10], "4");
  EXPECT_DOUBLE_EQ(std::stod(coll.rows[0][9]), 102.4 * 2 * 3 / 4);
  EXPECT_EQ(coll.rows[1][10], "8");
  EXPECT_DOUBLE_EQ(std::stod(coll.rows[1][9]), 102.4 * 2 * 7 / 8);
}

TEST(SummarizeRank, CpuCommSpansAndBackendThreads) {
  ReadResult data = read_text(
      R"({"pyprof_dict":2,"records":"op","rank":0,"world_size":2,"iterations":)"
      R"({"rule":"user_range","range":"step N","count":1,"steps":[{"index":0,"name":"step 0",)"
      R"("start":0,"end":1000}]}})"
      "\n"
      R"({"kind":"op","name":"aten::mm","op":"aten::mm","start":0,"duration":200,"tid":1,)"
      R"("id":1,"step":0,"args":{"self":{"shape":[2,2],"dtype":"float32"},)"
      R"("mat2":{"shape":[2,2],"dtype":"float32"}}})"
      "\n"
      R"({"kind":"op","name":"c10d::allreduce_","op":"c10d::allreduce_","start":300,)"
      R"("duration":10,"tid":1,"id":2,"step":0,"args":{"tensors":[{"shape":[256],)"
      R"("dtype":"float32"}]}})"
      "\n"
      R"({"kind":"op","name":"aten::copy_","op":"aten::copy_","start":350,"duration":50,)"
      R"("tid":9,"id":3,"step":0})"
      "\n"
      R"({"kind":"comm","name":"gloo:all_reduce","start":320,"duration":400,"tid":9,"step":0})"
      "\n");
  ASSERT_EQ(data.comm.size(), 1u);
  RankSummary s = summarize_rank(data);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].compute, 200);  // aten::mm only (the copy is gloo's)
  EXPECT_EQ(s.steps[0].comm, 410);     // [300,310) and [320,720)
  EXPECT_EQ(s.steps[0].overlapped, 0);
  EXPECT_EQ(s.steps[0].idle, 1000 - 610);
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].payload_bytes, 1024);
  EXPECT_EQ(s.collectives[0].time, 400);  // the backend's span, not the 10 ns enqueue
}

}  // namespace
}  // namespace pyprof::prof
