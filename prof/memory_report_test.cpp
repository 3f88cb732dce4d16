// The memory report, the summary's memory rows and the batch-size advice (prof/memory_report.h)
// on tests/data/memory_small.dict, numbers computed by hand (prof/memory_events_test.cpp shows
// the running totals they come from).
#include "prof/memory_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "prof/advice.h"

namespace pyprof::prof {
namespace {

ReadResult load(const std::string& iterations, const std::string& extra = "", bool memory = true) {
  std::ifstream in(std::string(PYPROF_SOURCE_DIR) + "/tests/data/memory_small.dict");
  std::stringstream s;
  std::string line;
  while (std::getline(in, line)) {
    if (!memory && line.find("\"kind\":\"memory\"") != std::string::npos) continue;
    s << line << "\n";
  }
  std::string text = s.str() + extra;
  ReadResult out;
  std::string error;
  std::FILE* f = fmemopen(text.data(), text.size(), "r");
  EXPECT_TRUE(read_dict(f, ReadOptions{}, out, error)) << error;
  std::fclose(f);
  IterationRequest request;
  EXPECT_TRUE(parse_iteration_request(iterations, request, error)) << error;
  EXPECT_TRUE(select_iterations(out, request, error)) << error;
  return out;
}

std::string cell(const ReportTable& t, size_t row, std::string_view header) {
  for (size_t c = 0; c < t.headers.size(); ++c) {
    if (t.headers[c] == header) return t.rows.at(row).at(c);
  }
  ADD_FAILURE() << "no column " << header;
  return "";
}

TEST(MemoryReport, StepsOpsAndModulesTables) {
  const std::vector<ReportTable> tables = memory_report(load("all"), 0);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].id, "steps");
  EXPECT_EQ(tables[1].id, "ops");
  EXPECT_EQ(tables[2].id, "modules");
  const ReportTable& steps = tables[0];
  ASSERT_EQ(steps.rows.size(), 2u);
  EXPECT_EQ(cell(steps, 0, "Device"), "cuda:0");
  EXPECT_EQ(cell(steps, 0, "Peak allocated"), "1400");
  EXPECT_EQ(cell(steps, 0, "Op at peak"), "aten::relu");
  EXPECT_EQ(cell(steps, 0, "Module at peak"), "Net.fc1");
  EXPECT_EQ(cell(steps, 1, "Peak allocated"), "1500");
  EXPECT_EQ(cell(steps, 1, "Allocator peak allocated"), "6500");
  EXPECT_EQ(cell(steps, 1, "Allocator peak reserved"), "10000");
  EXPECT_EQ(cell(steps, 1, "Frees of earlier blocks"), "1");
  const ReportTable& ops = tables[1];
  ASSERT_EQ(ops.rows.size(), 4u);
  EXPECT_EQ(cell(ops, 0, "Op"), "aten::addmm");
  EXPECT_EQ(cell(ops, 0, "Direction"), "fprop");
  EXPECT_EQ(cell(ops, 0, "Allocated"), "2000");
  EXPECT_EQ(cell(ops, 0, "Freed in backward"), "2000");
  EXPECT_EQ(cell(ops, 0, "Live at step end"), "0");
  // --top 2: the two ops that allocated the most.
  const std::vector<ReportTable> top = memory_report(load("all"), 2);
  ASSERT_EQ(top[1].rows.size(), 2u);
  EXPECT_NE(top[1].title.find("top 2 of 4"), std::string::npos) << top[1].title;
}

TEST(MemoryReport, NoMemoryLinesNoTablesNoSummaryRows) {
  const ReadResult data = load("all", "", false);
  EXPECT_TRUE(memory_report(data, 0).empty());
  EXPECT_TRUE(memory_summary_rows(data).empty());
  EXPECT_FALSE(batch_headroom(data));
}

TEST(MemorySummary, PeakSinceTheCaptureOrTheSelectionBegan) {
  std::vector<SummaryRow> rows = memory_summary_rows(load("all"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].metric, "memory allocated peak (bytes)");
  EXPECT_EQ(rows[0].value, "1500");
  EXPECT_EQ(rows[0].unit, Unit::kBytes);
  EXPECT_EQ(rows[1].metric, "memory allocator's total allocated peak (bytes)");
  EXPECT_EQ(rows[1].value, "6500");
  EXPECT_EQ(rows[2].metric, "memory allocator's total reserved peak (bytes)");
  EXPECT_EQ(rows[2].value, "10000");
  // Step 0 alone: its peak is 1400, and the allocator's 6400, reserved 10000.
  rows = memory_summary_rows(load("0"));
  EXPECT_EQ(rows[0].value, "1400");
  EXPECT_EQ(rows[1].value, "6400");
}

TEST(BatchHeadroom, FromTheStepWithTheLargestPeak) {
  const std::optional<BatchHeadroom> h = batch_headroom(load("all"));
  ASSERT_TRUE(h);
  // Step 1: the allocator's total went from 5500 to 6500 of the device's 20000:
  // (20000 - 5500) / (6500 - 5500) = 14.5.
  EXPECT_EQ(h->device, 0);
  EXPECT_EQ(h->step, 1);
  EXPECT_TRUE(h->allocator_totals);
  EXPECT_EQ(h->peak, 6500);
  EXPECT_EQ(h->at_start, 5500);
  EXPECT_DOUBLE_EQ(h->factor, 14.5);
  bool fired = false;
  for (const Advice& a : advise(load("all"))) {
    if (a.rule != "batch-size-headroom") continue;
    fired = true;
    EXPECT_NE(a.finding.find("about 14.5x"), std::string::npos) << a.finding;
    EXPECT_NE(a.evidence.find("= 14.50"), std::string::npos) << a.evidence;
    EXPECT_NE(a.evidence.find("Assumed"), std::string::npos) << a.evidence;
  }
  EXPECT_TRUE(fired);
}

TEST(BatchHeadroom, NeedsTheDevicesMemoryAndFiresOnlyFromTwiceTheBatch) {
  // A device 16000 bytes large: (16000 - 5500) / 1000 = 10.5; 7000: 1.5, under kBatchGrowthMin.
  std::string text;
  {
    std::ifstream in(std::string(PYPROF_SOURCE_DIR) + "/tests/data/memory_small.dict");
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  auto with_memory = [&](const std::string& size) {
    std::string t = text;
    t.replace(t.find("\"total_memory\":20000"), 20, "\"total_memory\":" + size);
    ReadResult out;
    std::string error;
    std::FILE* f = fmemopen(t.data(), t.size(), "r");
    EXPECT_TRUE(read_dict(f, ReadOptions{}, out, error)) << error;
    std::fclose(f);
    EXPECT_TRUE(select_iterations(out, IterationRequest{}, error)) << error;
    return out;
  };
  EXPECT_DOUBLE_EQ(batch_headroom(with_memory("16000"))->factor, 10.5);
  const ReadResult small = with_memory("7000");
  EXPECT_DOUBLE_EQ(batch_headroom(small)->factor, 1.5);
  for (const Advice& a : advise(small)) EXPECT_NE(a.rule, "batch-size-headroom");
  // No size given (total_memory 0): no estimate.
  EXPECT_FALSE(batch_headroom(with_memory("0")));
}

}  // namespace
}  // namespace pyprof::prof
