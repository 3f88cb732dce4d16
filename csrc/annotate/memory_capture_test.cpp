// Memory capture against torch's real allocator and thread-local debug info: what reaches the
// sink, when the reporter goes into a thread's profiler slot and when it stays out.
#include "memory_capture.h"

#include <ATen/ATen.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <gtest/gtest.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace pyprof {
namespace {

struct Event {
  uint64_t address;
  int64_t bytes;
  uint64_t total_allocated;
  uint64_t total_reserved;
  int32_t device_type;
  int32_t device_index;
};

std::mutex g_events_mutex;
std::vector<Event> g_events;

void sink(uint64_t address, int64_t bytes, uint64_t total_allocated, uint64_t total_reserved,
          int32_t device_type, int32_t device_index) {
  std::lock_guard<std::mutex> lock(g_events_mutex);
  g_events.push_back({address, bytes, total_allocated, total_reserved, device_type, device_index});
}

std::vector<Event> take_events() {
  std::lock_guard<std::mutex> lock(g_events_mutex);
  return std::exchange(g_events, {});
}

const c10::DebugInfoBase* slot() {
  return c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
}

// Another memory-reporting profiler, as torch.profiler's state is one.
struct OtherProfiler : c10::MemoryReportingInfoBase {
  int reports = 0;
  void reportMemoryUsage(void*, int64_t, size_t, size_t, c10::Device) override { ++reports; }
  bool memoryProfilingEnabled() const override { return true; }
};

class MemoryCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    install_memory_capture(&sink);
    memory_step_aside();  // each test starts with an empty slot on this thread
    take_events();
  }
  void TearDown() override { memory_step_aside(); }
};

TEST_F(MemoryCaptureTest, EachAllocationAndFreeOfTheCpuAllocator) {
  memory_capture_on_op();  // the op annotator's call at an op's start
  ASSERT_NE(slot(), nullptr);
  { at::Tensor out = at::empty({4, 8}, at::kFloat); }  // 4 * 8 floats: 128 bytes
  const std::vector<Event> events = take_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].bytes, 128);
  EXPECT_EQ(events[1].bytes, -128);
  EXPECT_EQ(events[0].address, events[1].address);
  EXPECT_NE(events[0].address, 0u);
  EXPECT_EQ(events[0].total_allocated - events[1].total_allocated, 128u);
  for (const Event& event : events) {
    EXPECT_EQ(event.device_type, 0);  // c10::DeviceType::CPU
    EXPECT_EQ(event.device_index, -1);
    EXPECT_EQ(event.total_reserved, 0u);  // the CPU allocator keeps no reserve
  }
}

TEST_F(MemoryCaptureTest, TorchSeesNoProfilerInTheSlot) {
  memory_capture_on_op();
  ASSERT_NE(slot(), nullptr);
  EXPECT_FALSE(torch::profiler::impl::profilerEnabled());
  EXPECT_EQ(torch::profiler::impl::profilerType(), torch::profiler::impl::ActiveProfilerType::NONE);
  EXPECT_TRUE(torch::profiler::impl::getProfilerConfig().disabled());
}

TEST_F(MemoryCaptureTest, StepsAsideAndComesBackAtTheNextOp) {
  memory_capture_on_op();
  EXPECT_EQ(memory_step_aside(), 1);
  EXPECT_EQ(slot(), nullptr);
  EXPECT_EQ(memory_step_aside(), 0);  // not there any more
  { at::Tensor unseen = at::empty({16}, at::kFloat); }
  EXPECT_TRUE(take_events().empty());
  memory_capture_on_op();
  { at::Tensor seen = at::empty({16}, at::kFloat); }
  EXPECT_EQ(take_events().size(), 2u);
}

TEST_F(MemoryCaptureTest, AnotherProfilerAboveItTakesTheEventsAndTheOpsAreCounted) {
  memory_capture_on_op();
  const uint64_t unseen_before = memory_capture_stats().ops_unseen;
  auto other = std::make_shared<OtherProfiler>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, other);
    memory_capture_on_op();  // an op while the other profiler runs
    { at::Tensor theirs = at::empty({16}, at::kFloat); }
  }
  EXPECT_EQ(other->reports, 2);
  EXPECT_TRUE(take_events().empty());
  EXPECT_EQ(memory_capture_stats().ops_unseen, unseen_before + 1);
  // Below it all along: back when the other profiler's scope ends.
  { at::Tensor ours = at::empty({16}, at::kFloat); }
  EXPECT_EQ(take_events().size(), 2u);
}

TEST_F(MemoryCaptureTest, NeverPushedAboveOtherThreadLocalDebugInfo) {
  const uint64_t blocked_before = memory_capture_stats().ops_blocked;
  {
    // Code that pushes its own debug info and pops it by kind later would find the reporter on
    // top and fail: the reporter only goes into an empty chain.
    c10::DebugInfoGuard guard(c10::DebugInfoKind::TEST_INFO, std::make_shared<OtherProfiler>());
    memory_capture_on_op();
    EXPECT_EQ(slot(), nullptr);
  }
  EXPECT_EQ(memory_capture_stats().ops_blocked, blocked_before + 1);
  memory_capture_on_op();
  EXPECT_NE(slot(), nullptr);
}

TEST_F(MemoryCaptureTest, ANewThreadReportsFromItsFirstOp) {
  size_t before_op = 0;
  size_t after_op = 0;
  std::thread worker([&] {
    { at::Tensor before = at::empty({16}, at::kFloat); }
    before_op = take_events().size();
    memory_capture_on_op();
    { at::Tensor after = at::empty({16}, at::kFloat); }
    after_op = take_events().size();
  });
  worker.join();
  EXPECT_EQ(before_op, 0u);
  EXPECT_EQ(after_op, 2u);
}

TEST_F(MemoryCaptureTest, UninstalledItReportsNothingAndAsksForNothing) {
  memory_capture_on_op();
  std::promise<void> holding;
  std::promise<void> uninstalled;
  bool still_held = false;
  bool asked = true;
  std::thread worker([&] {
    memory_capture_on_op();  // a second thread holding the reporter
    holding.set_value();
    uninstalled.get_future().wait();
    still_held = slot() != nullptr;
    asked = c10::memoryProfilingEnabled();  // what the CPU allocator asks before keeping sizes
    { at::Tensor t = at::empty({16}, at::kFloat); }
  });
  holding.get_future().wait();
  uninstall_memory_capture();
  uninstalled.set_value();
  worker.join();
  EXPECT_TRUE(still_held);  // left in place, inert
  EXPECT_FALSE(asked);
  EXPECT_EQ(slot(), nullptr);  // the uninstalling thread's slot is freed
  memory_capture_on_op();      // off: puts nothing back
  EXPECT_EQ(slot(), nullptr);
  { at::Tensor t = at::empty({16}, at::kFloat); }
  EXPECT_TRUE(take_events().empty());
}

}  // namespace
}  // namespace pyprof
