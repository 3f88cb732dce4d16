// Memory lines read (prof/memory_events.h) and added up, on tests/data/memory_small.dict: two
// steps on one CUDA device, every number below computed by hand from its ten lines.
#include "prof/memory_events.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "prof/load_profile.h"

namespace pyprof::prof {
namespace {

std::string small_dict_text() {
  std::ifstream in(std::string(PYPROF_SOURCE_DIR) + "/tests/data/memory_small.dict");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool read_text(const std::string& text, ReadResult& out, std::string& error) {
  std::FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  const bool ok = read_dict(f, ReadOptions{}, out, error);
  std::fclose(f);
  return ok;
}

// The dict read and its iterations selected as `--iterations TEXT` would.
ReadResult load(const std::string& text, const std::string& iterations) {
  ReadResult out;
  std::string error;
  EXPECT_TRUE(read_text(text, out, error)) << error;
  IterationRequest request;
  EXPECT_TRUE(parse_iteration_request(iterations, request, error)) << error;
  EXPECT_TRUE(select_iterations(out, request, error)) << error;
  return out;
}

const MemoryGroup& group(const ReadResult& data, const std::vector<MemoryGroup>& groups,
                         std::string_view name, Dir dir) {
  for (const MemoryGroup& g : groups) {
    if (data.strings.get(g.name) == name && g.dir == dir) return g;
  }
  ADD_FAILURE() << "no group " << name;
  return groups.front();
}

TEST(MemoryLines, AreReadAsEventsNotRecords) {
  ReadResult data;
  std::string error;
  ASSERT_TRUE(read_text(small_dict_text(), data, error)) << error;
  EXPECT_EQ(data.records.size(), 2u);
  ASSERT_EQ(data.memory.size(), 10u);
  const MemoryEvent& e = data.memory[4];  // the activation freed in backward
  EXPECT_EQ(e.start, 160);
  EXPECT_EQ(e.bytes, -1000);
  EXPECT_EQ(e.addr, 1);
  EXPECT_EQ(e.device, 0);
  EXPECT_EQ(e.total_allocated, 5200);
  EXPECT_EQ(e.total_reserved, 8000);
  EXPECT_EQ(e.tid, 2);
  EXPECT_EQ(data.strings.get(e.op), "aten::mm");
  EXPECT_EQ(e.dir, Dir::kBprop);
  EXPECT_EQ(data.strings.get(e.module), "Net.fc1");
  EXPECT_EQ(e.step, 0);
  EXPECT_EQ(data.memory[5].op, 0u);  // "op": null
  EXPECT_EQ(data.memory[5].dir, Dir::kNone);
  EXPECT_EQ(data.memory_lines_skipped, 0);
  EXPECT_TRUE(data.warnings.empty());
}

TEST(MemoryLines, BadLinesAreCountedAndNamedNeverFatal) {
  std::string text = small_dict_text();
  text += R"({"kind":"memory","start":250,"addr":7,"device":0,"step":1})"
          "\n";  // no bytes
  text += R"({"kind":"memory","start":"soon","bytes":8,"addr":7,"device":0,"step":1})"
          "\n";  // no time
  text += R"({"kind":"memory","start":260,"bytes":8,"addr":8,"device":0,"total_allocated":-5,)"
          R"("step":1})"
          "\n";  // kept, its total not
  text += R"({"kind":"memory","start":255,"bytes":4,"addr":9,"device":0,"step":7})"
          "\n";  // a step the header has not: outside every step
  text += R"({"kind":"memory","start":256,"bytes":-9223372036854775808,"addr":9,"device":0})"
          "\n";  // no allocation is this large
  ReadResult data;
  std::string error;
  ASSERT_TRUE(read_text(text, data, error)) << error;
  EXPECT_EQ(data.memory_lines_skipped, 3);
  EXPECT_EQ(data.memory_totals_ignored, 1);
  ASSERT_EQ(data.memory.size(), 12u);
  // Out of order in the file, in time order once read.
  EXPECT_EQ(data.memory[10].start, 255);
  EXPECT_EQ(data.memory[10].step, -1);
  EXPECT_EQ(data.memory[11].total_allocated, -1);
  ASSERT_EQ(data.warnings.size(), 2u);
  EXPECT_NE(data.warnings[0].find("3 memory lines skipped (first: line 14: no integer `bytes`)"),
            std::string::npos)
      << data.warnings[0];
  EXPECT_NE(data.warnings[1].find("negative allocator total (first: line 16)"), std::string::npos)
      << data.warnings[1];
}

TEST(MemoryAnalysis, StepsPeaksAndTheOpAtThePeak) {
  const ReadResult data = load(small_dict_text(), "all");
  const MemoryAnalysis m = analyse_memory(data);
  EXPECT_EQ(m.events, 10);
  ASSERT_EQ(m.steps.size(), 2u);
  // Step 0: running total 1000, 1400, 1000, 1200, 200, 500.
  const MemoryStepFacts& s0 = m.steps[0];
  EXPECT_EQ(s0.step, 0);
  EXPECT_EQ(s0.peak, 1400);
  EXPECT_EQ(data.strings.get(data.memory[s0.peak_event].op), "aten::relu");
  EXPECT_EQ(s0.allocated, 1900);
  EXPECT_EQ(s0.freed, 1400);
  EXPECT_EQ(s0.live_at_start, 0);
  EXPECT_EQ(s0.live_at_end, 500);
  EXPECT_EQ(s0.allocator_at_start, 5000);
  EXPECT_EQ(s0.allocator_peak, 6400);
  EXPECT_EQ(s0.reserved_peak, 10000);
  EXPECT_EQ(s0.unknown_frees, 0);
  // Step 1 from 500: 1500, 1300, 300, 250; a free of address 99, never allocated.
  const MemoryStepFacts& s1 = m.steps[1];
  EXPECT_EQ(s1.peak, 1500);
  EXPECT_EQ(data.strings.get(data.memory[s1.peak_event].op), "aten::addmm");
  EXPECT_EQ(s1.allocated, 1000);
  EXPECT_EQ(s1.freed, 1250);
  EXPECT_EQ(s1.live_at_start, 500);
  EXPECT_EQ(s1.live_at_end, 250);
  EXPECT_EQ(s1.allocator_at_start, 5500);
  EXPECT_EQ(s1.allocator_peak, 6500);
  EXPECT_EQ(s1.unknown_frees, 1);
  EXPECT_EQ(s1.unknown_free_bytes, 50);
}

TEST(MemoryAnalysis, ActivationsShowAsForwardAllocationsFreedInBackward) {
  const ReadResult data = load(small_dict_text(), "all");
  const MemoryAnalysis m = analyse_memory(data);
  const MemoryGroup& addmm = group(data, m.ops, "aten::addmm", Dir::kFprop);
  EXPECT_EQ(addmm.allocations, 2);
  EXPECT_EQ(addmm.allocated, 2000);
  EXPECT_EQ(addmm.freed, 0);
  EXPECT_EQ(addmm.freed_in_backward, 2000);
  EXPECT_EQ(addmm.live_at_step_end, 0);
  const MemoryGroup& relu = group(data, m.ops, "aten::relu", Dir::kFprop);
  EXPECT_EQ(relu.allocated, 400);
  EXPECT_EQ(relu.freed, 400);  // a temporary, freed in forward
  EXPECT_EQ(relu.freed_in_backward, 0);
  // mm's gradient of step 0 lives into step 1; mm freed both activations and it.
  const MemoryGroup& mm = group(data, m.ops, "aten::mm", Dir::kBprop);
  EXPECT_EQ(mm.allocated, 200);
  EXPECT_EQ(mm.frees, 3);
  EXPECT_EQ(mm.freed, 2200);
  EXPECT_EQ(mm.live_at_step_end, 200);
  const MemoryGroup& none = group(data, m.ops, "", Dir::kNone);
  EXPECT_EQ(none.allocated, 300);
  EXPECT_EQ(none.live_at_step_end, 300);  // never freed
  EXPECT_EQ(none.freed, 50);
  // By module: Net.fc1's forward holds addmm and relu.
  const MemoryGroup& fc1 = group(data, m.modules, "Net.fc1", Dir::kFprop);
  EXPECT_EQ(fc1.allocated, 2400);
  EXPECT_EQ(fc1.freed, 400);
  EXPECT_EQ(fc1.freed_in_backward, 2000);
  // Largest allocator first.
  EXPECT_EQ(data.strings.get(m.ops.front().name), "aten::addmm");
}

TEST(MemoryAnalysis, ASelectionCountsFromItsOwnStart) {
  // --iterations 1: the running total starts at step 1; step 0's gradient is a block allocated
  // before, so its free is one of the unknown ones.
  const ReadResult data = load(small_dict_text(), "1");
  const MemoryAnalysis m = analyse_memory(data);
  EXPECT_EQ(m.events, 4);
  ASSERT_EQ(m.steps.size(), 1u);
  EXPECT_EQ(m.steps[0].step, 1);
  EXPECT_EQ(m.steps[0].peak, 1000);
  EXPECT_EQ(m.steps[0].live_at_end, -250);
  EXPECT_EQ(m.steps[0].unknown_frees, 2);
  EXPECT_EQ(m.steps[0].unknown_free_bytes, 250);
  EXPECT_EQ(m.steps[0].allocator_peak, 6500);
  EXPECT_EQ(group(data, m.ops, "aten::addmm", Dir::kFprop).allocated, 1000);
}

TEST(MemoryAnalysis, DevicesCountApart) {
  std::string text = small_dict_text();
  text += R"({"kind":"memory","start":215,"bytes":64,"addr":1,"device":-1,"total_allocated":64,)"
          R"("total_reserved":0,"step":1})"
          "\n";
  const ReadResult data = load(text, "all");
  const MemoryAnalysis m = analyse_memory(data);
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_EQ(m.steps[0].device, -1);
  EXPECT_EQ(m.steps[0].peak, 64);
  EXPECT_EQ(m.steps[0].allocator_peak, 64);
  // torch's CPU allocator reports a reserved total of 0: no peak of its own.
  EXPECT_EQ(m.steps[0].reserved_peak, -1);
  // The CPU block at address 1 is not cuda:0's address 1.
  EXPECT_EQ(m.steps[2].peak, 1500);
  EXPECT_EQ(memory_device_name(-1), "cpu");
  EXPECT_EQ(memory_device_name(3), "cuda:3");
}

}  // namespace
}  // namespace pyprof::prof
