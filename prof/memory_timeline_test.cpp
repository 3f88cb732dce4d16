// The memory timeline (prof/memory_timeline.h): downsampling a hand-made series keeps its extremes
// exactly and stays bounded; the report on tests/data/memory_small.dict, numbers by hand (the
// running totals are prof/memory_events_test.cpp's), its peak the memory report's.
#include "prof/memory_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "prof/memory_report.h"

namespace pyprof::prof {
namespace {

std::vector<MemorySample> sawtooth(size_t n, size_t spike_at, int64_t spike, size_t dip_at) {
  std::vector<MemorySample> s(n);
  for (size_t i = 0; i < n; ++i) {
    s[i].time = static_cast<int64_t>(i) * 7 + (i % 3);  // uneven steps, in order
    s[i].allocated = 1000 + static_cast<int64_t>(i % 97) * 10;
    s[i].allocator_allocated = s[i].allocated + 5000;
    s[i].allocator_reserved = 8192;
  }
  s[spike_at].allocated = spike;
  s[dip_at].allocated = -5;
  s[spike_at + 1].allocator_reserved = 1 << 20;
  return s;
}

TEST(MemoryTimeline, DownsamplingKeepsTheExtremesExactlyAndIsBounded) {
  const std::vector<MemorySample> s = sawtooth(200000, 123457, 999999, 77);
  for (size_t max_points : {5000u, 1000u, 5u}) {
    const std::vector<size_t> keep = downsample_memory(s, max_points);
    EXPECT_LE(keep.size(), max_points);
    EXPECT_GE(keep.size(), max_points / 5);
    EXPECT_TRUE(std::is_sorted(keep.begin(), keep.end()));
    EXPECT_EQ(std::adjacent_find(keep.begin(), keep.end()), keep.end()) << "no index twice";
    EXPECT_NE(std::find(keep.begin(), keep.end(), 123457u), keep.end()) << "the peak";
    EXPECT_NE(std::find(keep.begin(), keep.end(), 77u), keep.end()) << "the lowest";
    EXPECT_NE(std::find(keep.begin(), keep.end(), 123458u), keep.end()) << "the reserved peak";
    EXPECT_EQ(keep.back(), s.size() - 1) << "the last sample";
    int64_t kept_max = INT64_MIN;
    for (size_t k : keep) kept_max = std::max(kept_max, s[k].allocated);
    EXPECT_EQ(kept_max, 999999);
  }
}

TEST(MemoryTimeline, DownsamplingKeepsEachBucketsExtremes) {
  // Two buckets of 5 points (max 10, 11 samples): every sample's time in the first or second
  // half; each half keeps its own lowest and highest.
  std::vector<MemorySample> s(11);
  const int64_t values[] = {5, 9, 1, 7, 3, 6, 2, 8, 4, 10, 0};
  for (size_t i = 0; i < s.size(); ++i) {
    s[i].time = static_cast<int64_t>(i) * 10;
    s[i].allocated = values[i];
  }
  // span 101 ns, 2 buckets: times 0..50 -> bucket 0 (i 0..5), 60..100 -> bucket 1 (i 6..10).
  // No allocator totals: their "highest" is each bucket's first sample (0, 6).
  const std::vector<size_t> keep = downsample_memory(s, 10);
  EXPECT_EQ(keep, (std::vector<size_t>{0, 1, 2, 5, 6, 9, 10}));
}

TEST(MemoryTimeline, ShortSeriesAreKeptWhole) {
  const std::vector<MemorySample> s = sawtooth(300, 10, 50000, 20);
  const std::vector<size_t> keep = downsample_memory(s, 300);
  ASSERT_EQ(keep.size(), 300u);
  for (size_t i = 0; i < keep.size(); ++i) EXPECT_EQ(keep[i], i);
  EXPECT_TRUE(downsample_memory({}, 5000).empty());
}

TEST(MemoryTimeline, EqualTimesKeepTheFirstOfEqualPeaks) {
  std::vector<MemorySample> s(20);
  for (size_t i = 0; i < s.size(); ++i) s[i].allocated = i == 4 || i == 9 ? 100 : 1;
  const std::vector<size_t> keep = downsample_memory(s, 5);  // one bucket: all at time 0
  EXPECT_NE(std::find(keep.begin(), keep.end(), 4u), keep.end());
  EXPECT_EQ(std::find(keep.begin(), keep.end(), 9u), keep.end());
}

ReadResult load(const std::string& iterations) {
  std::ifstream in(std::string(PYPROF_SOURCE_DIR) + "/tests/data/memory_small.dict");
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
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

TEST(MemoryTimeline, ReportPointsAreTheRunningTotalAndPeakIsTheMemoryReports) {
  const ReadResult data = load("all");
  const std::vector<ReportTable> tables = memory_timeline_report(data);
  ASSERT_EQ(tables.size(), 2u);
  const ReportTable& points = tables[0];
  EXPECT_EQ(points.id, "points");
  ASSERT_EQ(points.rows.size(), 10u);
  const char* allocated[] = {"1000", "1400", "1000", "1200", "200",
                             "500",  "1500", "1300", "300",  "250"};
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(cell(points, i, "Device"), "cuda:0");
    EXPECT_EQ(cell(points, i, "Allocated"), allocated[i]) << i;
  }
  EXPECT_EQ(cell(points, 0, "Time(ns)"), "110");
  EXPECT_EQ(cell(points, 6, "Allocator allocated"), "6500");
  EXPECT_EQ(cell(points, 6, "Allocator reserved"), "10000");
  EXPECT_EQ(cell(points, 6, "Op"), "aten::addmm");
  EXPECT_EQ(cell(points, 5, "Op"), "-");
  // The memory report's largest step peak and its op.
  const ReportTable steps = memory_report(data, 0)[0];
  EXPECT_EQ(cell(steps, 1, "Peak allocated"), "1500");
  EXPECT_EQ(cell(steps, 1, "Op at peak"), "aten::addmm");

  const ReportTable& modules = tables[1];
  EXPECT_EQ(modules.id, "modules");
  ASSERT_EQ(modules.rows.size(), 4u);
  const char* expected[][5] = {{"Net.fc1", "fprop", "110", "130", "3"},
                               {"Net.fc1", "bprop", "150", "160", "2"},
                               {"Net.fc1", "fprop", "210", "210", "1"},
                               {"Net.fc1", "bprop", "220", "230", "2"}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cell(modules, i, "Module"), expected[i][0]);
    EXPECT_EQ(cell(modules, i, "Direction"), expected[i][1]);
    EXPECT_EQ(cell(modules, i, "Start(ns)"), expected[i][2]);
    EXPECT_EQ(cell(modules, i, "End(ns)"), expected[i][3]);
    EXPECT_EQ(cell(modules, i, "Events"), expected[i][4]);
  }
}

TEST(MemoryTimeline, SelectionCountsFromTheSelectedStepsAsTheReportDoes) {
  const ReadResult data = load("1");
  const ReportTable points = memory_timeline_report(data)[0];
  ASSERT_EQ(points.rows.size(), 4u);
  EXPECT_EQ(cell(points, 0, "Allocated"), "1000");
  EXPECT_EQ(cell(points, 3, "Allocated"), "-250");
  EXPECT_EQ(cell(memory_report(data, 0)[0], 0, "Peak allocated"), "1000");
}

TEST(MemoryTimeline, NoTablesWithoutMemoryLines) {
  ReadResult empty;
  EXPECT_TRUE(memory_timeline_report(empty).empty());
}

TEST(MemoryTimeline, TopLevelModuleSpansKeepTheLongest) {
  ReadResult data;
  const uint32_t a = data.strings.intern("M.a.inner"), b = data.strings.intern("M.b");
  // a a a (0..20), b (30), a a (40..50), b b b b (60..90): four spans, 20, 0, 10 and 30 ns long.
  const uint32_t modules[] = {a, a, a, b, a, a, b, b, b, b};
  for (int i = 0; i < 10; ++i) {
    MemoryEvent e;
    e.start = i * 10;
    e.bytes = 8;
    e.addr = i;
    e.module = modules[i];
    e.dir = Dir::kFprop;
    data.memory.push_back(e);
  }
  const std::vector<MemorySeries> series = memory_series(data);
  ASSERT_EQ(series.size(), 1u);
  int64_t left_out = -1;
  const std::vector<ModuleSpan> all = memory_module_spans(data, series[0], 100, left_out);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(left_out, 0);
  EXPECT_EQ(all[0].module, "M.a");
  EXPECT_EQ(all[0].events, 3);
  EXPECT_EQ(all[3].module, "M.b");
  EXPECT_EQ(all[3].start, 60);
  EXPECT_EQ(all[3].end, 90);
  const std::vector<ModuleSpan> two = memory_module_spans(data, series[0], 2, left_out);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(left_out, 2);
  EXPECT_EQ(two[0].start, 0);  // the 20 ns span, then the 30 ns one, in time order
  EXPECT_EQ(two[1].start, 60);
}

}  // namespace
}  // namespace pyprof::prof
