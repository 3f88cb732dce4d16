// The test double itself: libfake_cupti.so must behave like libcupti wherever
// cupti_capture_test relies on it, or a passing capture test proves nothing. In-process, with a
// minimal client (buffer callbacks that copy every record out).
#include "fake_cupti.h"

#include <cupti.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Record {
  CUpti_ActivityKind kind;
  std::vector<uint8_t> bytes;
  size_t offset = 0;  // within its buffer

  template <class T>
  T as() const {
    T value;
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
  }
};

// What the client saw. Guarded by `mutex` (completions may run on any thread).
struct Client {
  std::mutex mutex;
  size_t buffer_size = size_t{1} << 16;
  bool refuse = false;
  int requests = 0;
  std::vector<Record> records;
  std::vector<std::string> kernel_names;          // copied inside the completion callback
  std::vector<const char*> kernel_name_pointers;  // kept, to check what becomes of them
  std::vector<pid_t> completion_tids;
  std::vector<CUptiResult> walk_ends;
  size_t dropped = 0;
};

Client* client = nullptr;

void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard lock(client->mutex);
  ++client->requests;
  *max_records = 0;
  if (client->refuse) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, client->buffer_size));
  *size = client->buffer_size;
}

void CUPTIAPI complete(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                       size_t valid_size) {
  std::lock_guard lock(client->mutex);
  client->completion_tids.push_back(gettid());
  CUpti_Activity* record = nullptr;
  CUptiResult result;
  while ((result = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
    Record copy;
    copy.kind = record->kind;
    copy.offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(record) - buffer);
    size_t size = 0;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        size = sizeof(CUpti_ActivityKernel10);
        const char* name = reinterpret_cast<CUpti_ActivityKernel10*>(record)->name;
        client->kernel_names.emplace_back(name);
        client->kernel_name_pointers.push_back(name);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER:
        size = sizeof(CUpti_ActivityAPI);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        size = sizeof(CUpti_ActivityMemcpy6);
        break;
      case CUPTI_ACTIVITY_KIND_DEVICE:
        size = sizeof(CUpti_ActivityDevice5);
        break;
      case CUPTI_ACTIVITY_KIND_CONTEXT:
        size = sizeof(CUpti_ActivityContext3);
        break;
      default:
        size = sizeof(CUpti_Activity);
    }
    copy.bytes.assign(reinterpret_cast<uint8_t*>(record),
                      reinterpret_cast<uint8_t*>(record) + size);
    client->records.push_back(std::move(copy));
  }
  client->walk_ends.push_back(result);
  size_t dropped = 0;
  EXPECT_EQ(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped), CUPTI_SUCCESS);
  client->dropped += dropped;
  std::free(buffer);
}

std::vector<CUpti_ActivityKind> kinds_of(const std::vector<Record>& records) {
  std::vector<CUpti_ActivityKind> kinds;
  for (const Record& record : records) kinds.push_back(record.kind);
  return kinds;
}

class FakeCuptiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client = &client_;
    ASSERT_EQ(cuptiFinalize(), CUPTI_SUCCESS);  // forget earlier tests
    ASSERT_EQ(cuptiActivityRegisterCallbacks(request, complete), CUPTI_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(cuptiFinalize(), CUPTI_SUCCESS);
    fake_cupti_stats_t stats;
    fake_cupti_get_stats(&stats);
    EXPECT_EQ(stats.contract_violations, 0u);
    client = nullptr;
  }

  Client client_;
};

TEST_F(FakeCuptiTest, RecordsOnlyEnabledKinds) {
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
  fake_cupti_launch_kernel("k", 1, 1, 7, 1'000);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  ASSERT_EQ(client_.records.size(), 1u);
  const auto api = client_.records[0].as<CUpti_ActivityAPI>();
  EXPECT_EQ(api.kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  EXPECT_EQ(api.cbid, CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000});
  const char* name = nullptr;
  ASSERT_EQ(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, api.cbid, &name), CUPTI_SUCCESS);
  EXPECT_STREQ(name, "cudaLaunchKernel_v7000");
}

TEST_F(FakeCuptiTest, LaysRecordsBackToBackAlignedAndWalksThem) {
  for (const auto kind :
       {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY}) {
    ASSERT_EQ(cuptiActivityEnable(kind), CUPTI_SUCCESS);
  }
  const uint32_t launch = fake_cupti_launch_kernel("_Z1kv", 2, 64, 7, 5'000);
  const uint32_t copy = fake_cupti_memcpy(64, 1, 1, 3, 7, 1'000);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(kinds_of(client_.records),
            (std::vector<CUpti_ActivityKind>{
                CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT,
                CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MEMCPY}));
  size_t expected_offset = 0;
  for (const Record& record : client_.records) {
    EXPECT_EQ(record.offset, expected_offset);
    expected_offset += (record.bytes.size() + 7) & ~size_t{7};
  }
  EXPECT_EQ(client_.walk_ends, (std::vector<CUptiResult>{CUPTI_ERROR_MAX_LIMIT_REACHED}));
  const auto api = client_.records[2].as<CUpti_ActivityAPI>();
  const auto kernel = client_.records[3].as<CUpti_ActivityKernel10>();
  EXPECT_EQ(api.correlationId, launch);
  EXPECT_EQ(kernel.correlationId, launch);
  EXPECT_GT(kernel.start, api.end);
  EXPECT_EQ(kernel.end - kernel.start, 5'000u);
  EXPECT_EQ(kernel.gridX, 2);
  EXPECT_EQ(kernel.launchType, CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
  EXPECT_EQ(client_.kernel_names, (std::vector<std::string>{"_Z1kv"}));
  EXPECT_EQ(client_.records[5].as<CUpti_ActivityMemcpy6>().correlationId, copy);
  EXPECT_EQ(client_.records[0].as<CUpti_ActivityDevice5>().numMultiprocessors, 132u);
  EXPECT_EQ(client_.records[1].as<CUpti_ActivityContext3>().contextId, 1u);

  CUpti_Activity* record = nullptr;
  EXPECT_EQ(cuptiActivityGetNextRecord(nullptr, 8, &record), CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_F(FakeCuptiTest, RefusedBuffersDropRecordsAndTheCountResetsWhenRead) {
  client_.refuse = true;
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
  for (int i = 0; i < 3; ++i) fake_cupti_launch_kernel("k", 1, 1, 7, 1'000);
  fake_cupti_add_dropped(2);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_TRUE(client_.records.empty());
  EXPECT_EQ(client_.requests, 3);
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 5u);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
}

TEST_F(FakeCuptiTest, CompletesFullBuffersOnTheEmittingThread) {
  client_.buffer_size = 1'024;  // a few records per buffer
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  pid_t worker_tid = 0;
  std::thread worker([&worker_tid] {
    worker_tid = gettid();
    for (int i = 0; i < 20; ++i) fake_cupti_launch_kernel("_Z6workerv", 1, 1, 9, 100);
  });
  worker.join();
  {
    std::lock_guard lock(client_.mutex);
    ASSERT_FALSE(client_.completion_tids.empty());
    for (const pid_t tid : client_.completion_tids) EXPECT_EQ(tid, worker_tid);
  }
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  EXPECT_EQ(client_.records.size(), 40u);
  EXPECT_EQ(client_.kernel_names.size(), 20u);
}

TEST_F(FakeCuptiTest, KernelNamesDoNotOutliveTheCompletionCallback) {
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  fake_cupti_launch_kernel("_Z9ephemeralv", 1, 1, 7, 100);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  ASSERT_EQ(client_.kernel_names, (std::vector<std::string>{"_Z9ephemeralv"}));
  // The fake keeps the last buffers' names allocated, overwritten, so this read is defined.
  EXPECT_EQ(std::string(client_.kernel_name_pointers[0]),
            std::string(std::strlen("_Z9ephemeralv"), '#'));
}

uint64_t CUPTIAPI fixed_clock() {
  static std::atomic<uint64_t> now{1'000};
  return now.fetch_add(10);
}

TEST_F(FakeCuptiTest, UsesTheTimestampCallbackAndTheThreadIdType) {
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
  fake_cupti_launch_kernel("k", 1, 1, 7, 100);  // CLOCK_REALTIME, pthread_self()
  ASSERT_EQ(cuptiActivityRegisterTimestampCallback(fixed_clock), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), CUPTI_SUCCESS);
  fake_cupti_launch_kernel("k", 1, 1, 7, 100);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  ASSERT_EQ(client_.records.size(), 2u);
  const auto realtime = client_.records[0].as<CUpti_ActivityAPI>();
  const auto ours = client_.records[1].as<CUpti_ActivityAPI>();
  EXPECT_GT(realtime.start, uint64_t{1'600'000'000} * 1'000'000'000);  // after 2020
  EXPECT_EQ(realtime.threadId, static_cast<uint32_t>(pthread_self()));
  EXPECT_GE(ours.start, 1'000u);
  EXPECT_LT(ours.end, 1'000'000'000u);
  EXPECT_EQ(ours.threadId, static_cast<uint32_t>(gettid()));
  EXPECT_EQ(ours.processId, static_cast<uint32_t>(getpid()));
}

struct CallbackSeen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string function;
  uint32_t correlation;
};

void CUPTIAPI on_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  static_cast<std::vector<CallbackSeen>*>(user)->push_back(
      {domain, cbid, info->callbackSite, info->functionName, info->correlationId});
}

TEST_F(FakeCuptiTest, SubscriberSeesProfilerCallsAtEnterAndExit) {
  std::vector<CallbackSeen> seen;
  CUpti_SubscriberHandle subscriber = nullptr;
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "test";
  ASSERT_EQ(cuptiSubscribe_v2(&subscriber, on_callback, &seen, &params), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000),
            CUPTI_SUCCESS);
  const uint32_t start = fake_cupti_profiler_start(0);
  fake_cupti_profiler_stop(0);  // not enabled: no callback
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].site, CUPTI_API_ENTER);
  EXPECT_EQ(seen[1].site, CUPTI_API_EXIT);
  for (const CallbackSeen& call : seen) {
    EXPECT_EQ(call.domain, CUPTI_CB_DOMAIN_RUNTIME_API);
    EXPECT_EQ(call.cbid, CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000});
    EXPECT_EQ(call.function, "cudaProfilerStart");
    EXPECT_EQ(call.correlation, start);
  }
  // One subscriber at a time; the second learns the first one's name.
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  params.subscriberName = "second";
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle second = nullptr;
  EXPECT_EQ(cuptiSubscribe_v2(&second, on_callback, &seen, &params),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_STREQ(old_name, "test");
  EXPECT_EQ(cuptiUnsubscribe(subscriber), CUPTI_SUCCESS);
}

TEST_F(FakeCuptiTest, AnotherToolHoldingCuptiBlocksSubscription) {
  setenv("FAKE_CUPTI_OTHER_SUBSCRIBER", "nsys", 1);
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "pyprof";
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof(old_name);
  CUpti_SubscriberHandle subscriber = nullptr;
  EXPECT_EQ(cuptiSubscribe_v2(&subscriber, on_callback, nullptr, &params),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  EXPECT_STREQ(old_name, "nsys");
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME),
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  unsetenv("FAKE_CUPTI_OTHER_SUBSCRIBER");
  uint32_t version = 0;
  ASSERT_EQ(cuptiGetVersion(&version), CUPTI_SUCCESS);
  EXPECT_EQ(version, uint32_t{CUPTI_API_VERSION});
}

}  // namespace
