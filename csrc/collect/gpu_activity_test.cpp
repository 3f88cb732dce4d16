// ActivityConverter and SqliteWriter::write_gpu_batch on synthetic CUPTI records built from the
// CUDA 13.0 header structs: what CUPTI hands over becomes the rows an nsys export would hold.
#include "gpu_activity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "common/nsys_schema.h"
#include "sqlite_writer.h"
#include "testing/test_db.h"

namespace pyprof::collect {
namespace {

using testing::as_int;
using testing::as_text;
using testing::is_null;
using testing::Row;
using testing::TempDir;
using testing::TestDb;

constexpr int64_t kSessionStart = 1'000'000'000;  // CUPTI (collector clock) ns at session start
constexpr uint32_t kPid = 4242;
// A real PyTorch kernel symbol and what nsys stores for it.
constexpr const char* kMangled =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
    "T1_";
constexpr const char* kDemangled =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";

const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
    return "cudaLaunchKernel_v7000";
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
    return "cuLaunchKernel";
  return nullptr;
}

struct Fixture {
  StringTable strings;
  ActivityConverter converter{strings, callback_name, kPid, CuptiLayout::kCuda13};
  ConversionWindow window{kSessionStart, INT64_MIN, INT64_MAX};
  GpuBatch batch;
  ConversionCounters counters;

  template <typename Record>
  void convert(const Record& record) {
    converter.convert(reinterpret_cast<const CUpti_Activity&>(record), window, batch, counters);
  }
  std::map<uint64_t, std::string> string_rows() {
    std::map<uint64_t, std::string> rows;
    for (const StringRow& row : strings.take_unwritten()) rows[row.id] = row.value;
    return rows;
  }
};

CUpti_ActivityKernel10 kernel_record(uint64_t start, uint64_t end, uint32_t correlation) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 120;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.localMemoryPerThread = 16;
  k.localMemoryTotal = 100;
  k.localMemoryTotal_v2 = uint64_t{5} << 32;  // over 32 bits: only _v2 can hold it
  k.correlationId = correlation;
  k.gridId = 99;
  k.name = kMangled;
  k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
  k.sharedMemoryExecuted = 8192;
  k.shmemLimitConfig = CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  k.cacheConfig.config.requested = 2;
  return k;
}

TEST(GpuActivity, KernelRecordBecomesAnNsysKernelRow) {
  Fixture f;
  f.convert(kernel_record(kSessionStart + 5000, kSessionStart + 7000, 11));
  ASSERT_EQ(f.batch.kernels.size(), 1u);
  const KernelRow& row = f.batch.kernels[0];
  EXPECT_EQ(row.start, 5000);  // relative to the session start, as nsys stores times
  EXPECT_EQ(row.end, 7000);
  EXPECT_EQ(row.correlation_id, 11u);
  EXPECT_EQ(row.stream_id, 7u);
  EXPECT_EQ(row.global_pid, nsys::global_pid(kPid));
  EXPECT_EQ(row.launch_type, 1);  // nsys REGULAR = CUPTI REGULAR (0) + 1
  EXPECT_EQ(row.cache_config, 2);
  EXPECT_EQ(row.shared_memory_limit_config, 1);
  EXPECT_EQ(row.grid[0], 120);
  EXPECT_EQ(row.grid[1], 2);
  EXPECT_EQ(row.block[0], 128);
  EXPECT_EQ(row.registers_per_thread, 32);
  EXPECT_EQ(row.local_memory_total, uint64_t{5} << 32);
  EXPECT_EQ(row.grid_id, 99);
  EXPECT_EQ(row.shared_memory_executed, 8192u);
  EXPECT_FALSE(row.graph_node_id.has_value());  // 0 = not a graph launch -> NULL
  EXPECT_FALSE(row.graph_id.has_value());

  std::map<uint64_t, std::string> strings = f.string_rows();
  EXPECT_EQ(strings[row.mangled_name], kMangled);
  EXPECT_EQ(strings[row.demangled_name], kDemangled);
  EXPECT_EQ(strings[row.short_name], "vectorized_elementwise_kernel");
}

TEST(GpuActivity, KernelNamesAreCopiedAndInternedOnce) {
  Fixture f;
  // CUPTI reuses its name memory after the callback: the converter must copy, not point.
  char name[256];
  std::strcpy(name, kMangled);
  CUpti_ActivityKernel10 k = kernel_record(kSessionStart + 1, kSessionStart + 2, 1);
  k.name = name;
  f.convert(k);
  std::memset(name, 'x', sizeof(name) - 1);
  k.name = kMangled;
  k.correlationId = 2;
  k.graphNodeId = 77;
  k.graphId = 3;
  f.convert(k);
  ASSERT_EQ(f.batch.kernels.size(), 2u);
  EXPECT_EQ(f.batch.kernels[0].demangled_name, f.batch.kernels[1].demangled_name);
  EXPECT_EQ(f.batch.kernels[1].graph_node_id, 77u);
  EXPECT_EQ(f.batch.kernels[1].graph_id, 3u);
  const std::map<uint64_t, std::string> strings = f.string_rows();
  EXPECT_EQ(strings.size(), 3u);  // mangled, demangled, short: each stored once
  EXPECT_EQ(strings.at(f.batch.kernels[0].mangled_name), kMangled);
}

TEST(GpuActivity, LaunchTypesAndMemoryKindsUseNsysNumbering) {
  // trace-formats.md §1.4: nsys launch type = CUPTI + 1; nsys memory kind = CUPTI - 1 (unknown 7).
  EXPECT_EQ(nsys::launch_type_from_cupti(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE), 2);
  EXPECT_EQ(nsys::launch_type_from_cupti(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE), 3);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), 0);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), 1);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE), 2);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), 4);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC), 6);
  EXPECT_EQ(nsys::mem_kind_from_cupti(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN), 7);
  // Memcpy kinds and sync types are the same numbers in both (checked against the headers).
  static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == 1 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == 2 &&
                CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == 8 && CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10);
  static_assert(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE == 3 &&
                CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE == 4);
}

TEST(GpuActivity, ApiRecordsPackGlobalTidAndNameTheCall) {
  Fixture f;
  CUpti_ActivityAPI runtime{};
  runtime.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  runtime.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  runtime.start = kSessionStart + 100;
  runtime.end = kSessionStart + 400;
  runtime.processId = kPid;
  runtime.threadId = 4250;  // an OS tid (cuptiSetThreadIdType SYSTEM)
  runtime.correlationId = 11;
  f.convert(runtime);
  CUpti_ActivityAPI driver = runtime;
  driver.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  driver.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  f.convert(driver);
  CUpti_ActivityAPI unknown = runtime;
  unknown.cbid = 999999;
  unknown.returnValue = 700;
  f.convert(unknown);

  ASSERT_EQ(f.batch.api_calls.size(), 3u);
  const ApiRow& r = f.batch.api_calls[0];
  EXPECT_EQ(r.start, 100);
  EXPECT_EQ(r.end, 400);
  EXPECT_EQ(r.event_class, 0);
  EXPECT_EQ(r.global_tid, (uint64_t{1} << 48) | (uint64_t{kPid} << 24) | 4250);
  EXPECT_EQ(nsys::pid_of_global_id(r.global_tid), kPid);
  EXPECT_EQ(nsys::tid_of_global_tid(r.global_tid), 4250u);
  EXPECT_EQ(f.batch.api_calls[1].event_class, 1);
  EXPECT_EQ(f.batch.api_calls[2].return_value, 700u);
  std::map<uint64_t, std::string> strings = f.string_rows();
  EXPECT_EQ(strings[r.name_id], "cudaLaunchKernel_v7000");
  EXPECT_EQ(strings[f.batch.api_calls[1].name_id], "cuLaunchKernel");
  // A cbid CUPTI cannot name still gets a row: its correlation id ties a kernel to a thread.
  EXPECT_EQ(strings[f.batch.api_calls[2].name_id], "cuda_runtime_cbid_999999");
}

TEST(GpuActivity, CopiesMemsetsAndSyncs) {
  Fixture f;
  CUpti_ActivityContext3 context{};
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1;
  context.deviceId = 3;
  f.convert(context);

  CUpti_ActivityMemcpy6 copy{};
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 1 << 20;
  copy.start = kSessionStart + 10;
  copy.end = kSessionStart + 20;
  copy.deviceId = 3;
  copy.contextId = 1;
  copy.streamId = 7;
  copy.correlationId = 5;
  f.convert(copy);

  CUpti_ActivityMemcpyPtoP4 peer{};
  peer.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  peer.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  peer.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  peer.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  peer.bytes = 64;
  peer.start = kSessionStart + 30;
  peer.end = kSessionStart + 40;
  peer.srcDeviceId = 0;
  peer.dstDeviceId = 1;
  peer.srcContextId = 1;
  peer.dstContextId = 2;
  f.convert(peer);

  CUpti_ActivityMemset4 set{};
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.value = 0;
  set.bytes = 4096;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.start = kSessionStart + 50;
  set.end = kSessionStart + 60;
  set.correlationId = 6;
  f.convert(set);

  CUpti_ActivitySynchronization2 sync{};
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
  sync.start = kSessionStart + 70;
  sync.end = kSessionStart + 90;
  sync.contextId = 1;
  sync.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  sync.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  f.convert(sync);
  CUpti_ActivitySynchronization2 unknown_context = sync;
  unknown_context.contextId = 9;
  f.convert(unknown_context);

  ASSERT_EQ(f.batch.memcpys.size(), 2u);
  EXPECT_EQ(f.batch.memcpys[0].copy_kind, 1);
  EXPECT_EQ(f.batch.memcpys[0].src_kind, 0);  // pageable
  EXPECT_EQ(f.batch.memcpys[0].dst_kind, 2);  // device
  EXPECT_EQ(f.batch.memcpys[0].bytes, 1u << 20);
  EXPECT_FALSE(f.batch.memcpys[0].dst_device_id.has_value());
  EXPECT_EQ(f.batch.memcpys[1].copy_kind, 10);
  EXPECT_EQ(f.batch.memcpys[1].dst_device_id, 1u);
  EXPECT_EQ(f.batch.memcpys[1].dst_context_id, 2u);
  ASSERT_EQ(f.batch.memsets.size(), 1u);
  EXPECT_EQ(f.batch.memsets[0].mem_kind, 2);
  EXPECT_EQ(f.batch.memsets[0].bytes, 4096u);
  ASSERT_EQ(f.batch.syncs.size(), 2u);
  EXPECT_EQ(f.batch.syncs[0].sync_type, 4);
  EXPECT_EQ(f.batch.syncs[0].device_id, 3u);  // from the CONTEXT record
  EXPECT_EQ(f.batch.syncs[0].stream_id, 4294967295u);
  EXPECT_FALSE(f.batch.syncs[1].device_id.has_value());  // context never described
  EXPECT_EQ(f.counters.records, 6u);                     // the CONTEXT record included
}

TEST(GpuActivity, DeviceRecordGivesTargetInfoInNsysUnits) {
  Fixture f;
  CUpti_ActivityDevice5 d{};
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.globalMemoryBandwidth = 3'352'320'000;  // KB/s
  d.globalMemorySize = 85'029'158'912;
  d.coreClockRate = 1'980'000;  // kHz
  d.numMultiprocessors = 132;
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.l2CacheSize = 52'428'800;
  d.numThreadsPerWarp = 32;
  d.maxSharedMemoryPerBlock = 49152;
  d.maxGridDimX = 2147483647;
  for (int i = 0; i < 16; ++i) d.uuid.bytes[i] = static_cast<char>(0x10 + i);
  f.convert(d);
  ASSERT_EQ(f.batch.gpus.size(), 1u);
  const GpuInfoRow& g = f.batch.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.memory_bandwidth, 3'352'320'000'000u);  // B/s
  EXPECT_EQ(g.clock_rate, 1'980'000'000u);            // Hz
  EXPECT_EQ(g.sm_count, 132u);
  EXPECT_EQ(g.compute_major, 9u);
  EXPECT_EQ(g.total_memory, 85'029'158'912u);
  EXPECT_EQ(g.max_grid_dim[0], 2147483647u);
  EXPECT_EQ(g.uuid, "10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(g.pid, kPid);
}

TEST(GpuActivity, WindowAndUntimedRecordsAreCountedNotWritten) {
  Fixture f;
  f.window.begin = f.window.device_begin = 1000;  // as after --delay 1 us
  f.window.end = f.window.device_end = 2000;
  f.convert(kernel_record(kSessionStart + 100, kSessionStart + 500, 1));    // before
  f.convert(kernel_record(kSessionStart + 900, kSessionStart + 1100, 2));   // overlaps begin
  f.convert(kernel_record(kSessionStart + 1500, kSessionStart + 1600, 3));  // inside
  f.convert(kernel_record(kSessionStart + 2000, kSessionStart + 2100, 4));  // at end: outside
  f.convert(kernel_record(0, 0, 5));  // CUPTI could not time it
  CUpti_ActivityOverhead3 overhead{};
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  f.convert(overhead);
  ASSERT_EQ(f.batch.kernels.size(), 2u);
  EXPECT_EQ(f.batch.kernels[0].correlation_id, 2u);
  EXPECT_EQ(f.batch.kernels[1].correlation_id, 3u);
  EXPECT_EQ(f.counters.records, 6u);
  EXPECT_EQ(f.counters.outside_window, 2u);
  EXPECT_EQ(f.counters.no_timestamp, 1u);
  EXPECT_EQ(f.counters.ignored, 1u);
  EXPECT_EQ(f.counters.records, f.batch.rows() + f.counters.outside_window +
                                    f.counters.no_timestamp + f.counters.ignored);
}

// Under --capture-range cudaProfilerApi the device kinds are on from cudaProfilerStart to
// cudaProfilerStop: that keeps the range by launch time. A kernel launched just before the stop
// runs after it, and is kept; API calls are still windowed by their own times.
TEST(GpuActivity, CaptureRangeKeepsKernelsThatRunAfterTheStop) {
  Fixture f;
  f.window.begin = 1000;  // cudaProfilerStart at 1 us, cudaProfilerStop at 2 us
  f.window.end = 2000;
  f.convert(kernel_record(kSessionStart + 1900, kSessionStart + 2500, 1));  // launched before
  f.convert(kernel_record(kSessionStart + 2100, kSessionStart + 2600, 2));  // queued behind it
  ASSERT_EQ(f.batch.kernels.size(), 2u);
  EXPECT_EQ(f.counters.outside_window, 0u);
}

TEST(GpuActivity, WriterCreatesNsysTablesOnlyWhenThereIsGpuData) {
  TempDir dir;
  const std::string path = dir.file("gpu.sqlite");
  std::string error;
  auto writer = SqliteWriter::open(path, &error);
  ASSERT_TRUE(writer) << error;
  {
    TestDb db(path);  // a CPU-only database has no GPU tables, as nsys writes them lazily
    EXPECT_EQ(db.scalar("SELECT count(*) FROM sqlite_master WHERE name LIKE 'CUPTI_%'"), 0);
  }

  Fixture f;
  f.convert(kernel_record(kSessionStart + 5000, kSessionStart + 7000, 11));
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  api.start = kSessionStart + 4000;
  api.end = kSessionStart + 4500;
  api.processId = kPid;
  api.threadId = kPid;
  api.correlationId = 11;
  f.convert(api);
  CUpti_ActivityDevice5 d{};
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.name = "NVIDIA H100";
  d.numMultiprocessors = 132;
  d.coreClockRate = 1'755'000;
  d.globalMemoryBandwidth = 1'000;
  f.convert(d);
  CUpti_ActivityExternalCorrelation external{};
  external.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  external.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  external.externalId = uint64_t{1} << 40;
  external.correlationId = 11;
  f.convert(external);

  const std::vector<StringRow> strings = f.strings.take_unwritten();
  ASSERT_TRUE(writer->begin() && writer->write_strings(strings) &&
              writer->write_gpu_batch(f.batch) && writer->commit())
      << writer->last_error();
  writer.reset();

  TestDb db(path);
  const Row k = db.query(
      "SELECT k.start, k.end, k.correlationId, k.globalPid, d.value, s.value, m.value, "
      "k.launchType, k.gridX, k.blockX, k.graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL k "
      "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName "
      "JOIN StringIds m ON m.id = k.mangledName")[0];
  EXPECT_EQ(as_int(k[0]), 5000);
  EXPECT_EQ(as_int(k[1]), 7000);
  EXPECT_EQ(as_int(k[2]), 11);
  EXPECT_EQ(as_int(k[3]), static_cast<int64_t>(nsys::global_pid(kPid)));
  EXPECT_EQ(as_text(k[4]), kDemangled);
  EXPECT_EQ(as_text(k[5]), "vectorized_elementwise_kernel");
  EXPECT_EQ(as_text(k[6]), kMangled);
  EXPECT_EQ(as_int(k[7]), 1);
  EXPECT_EQ(as_int(k[8]), 120);
  EXPECT_EQ(as_int(k[9]), 128);
  EXPECT_TRUE(is_null(k[10]));
  // The kernel's launch, found the way parse and NVIDIA's reports find it (§1.5).
  EXPECT_EQ(db.text("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                    "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND "
                    "k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000) JOIN StringIds s ON "
                    "s.id = r.nameId"),
            "cudaLaunchKernel_v7000");
  const Row g =
      db.query("SELECT name, smCount, clockRate, memoryBandwidth, vmId FROM TARGET_INFO_GPU")[0];
  EXPECT_EQ(as_text(g[0]), "NVIDIA H100");
  EXPECT_EQ(as_int(g[1]), 132);
  EXPECT_EQ(as_int(g[2]), 1'755'000'000);
  EXPECT_EQ(as_int(g[3]), 1'000'000);
  EXPECT_EQ(as_int(g[4]), int64_t{1} << 48);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM TARGET_INFO_CUDA_DEVICE WHERE gpuId = 0 AND "
                      "cudaId = 0 AND pid = " +
                      std::to_string(kPid)),
            1);
  EXPECT_EQ(db.scalar("SELECT externalId FROM CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION "
                      "WHERE correlationId = 11"),
            int64_t{1} << 40);
  // The enum tables carry nsys' numbering, so nsys-aware readers label the values right.
  EXPECT_EQ(db.text("SELECT label FROM ENUM_CUDA_MEM_KIND WHERE id = 0"), "Pageable");
  EXPECT_EQ(db.text("SELECT name FROM ENUM_CUDA_KERNEL_LAUNCH_TYPE WHERE id = 1"),
            "CUDA_KERNEL_LAUNCH_TYPE_REGULAR");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM ENUM_CUDA_MEMCPY_OPER"), 14);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM ENUM_CUPTI_SYNC_TYPE"), 5);
}

}  // namespace
}  // namespace pyprof::collect
