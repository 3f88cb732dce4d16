// The activity records of CUDA 12's libcupti (12.0 through 12.9), as the collector reads them.
//
// The collector is built with CUDA 13's headers, and a translation unit cannot include two
// CUPTI versions, so the CUDA 12 records are defined here, by the collector, from CUDA 12's
// cupti_activity.h: the fields it reads, at the offsets and with the sizes CUPTI gives them,
// everything else as reserved bytes. testing/cupti12_layout_check.cpp, compiled against a CUDA
// 12 CUPTI's headers, checks every field and size below against each record version a 12.x
// release writes; a mismatch fails the build of the tests.
//
// Each struct is the first version a CUDA 12 release wrote for its kind. Later 12.x releases
// write longer versions (DEVICE: ActivityDevice5 from 12.2; CONTEXT: ActivityContext2 in 12.4,
// ActivityContext3 from 12.5; MEMCPY: ActivityMemcpy6 and SYNCHRONIZATION:
// ActivitySynchronization2 from 12.8) that keep these fields where they are and append others;
// CUPTI's cuptiActivityGetNextRecord steps over each record's true length.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pyprof::collect::cupti12 {

// CUpti_ActivityKernel9 (CONCURRENT_KERNEL and KERNEL in every 12.x release), 208 bytes.
struct alignas(8) ActivityKernel9 {
  uint32_t kind;
  union {
    uint8_t both;
    struct {
      uint8_t requested : 4;
      uint8_t executed : 4;
    } config;
  } cacheConfig;
  uint8_t sharedMemoryConfig;
  uint16_t registersPerThread;
  uint8_t reserved_8[8];  // partitionedGlobalCacheRequested, partitionedGlobalCacheExecuted
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  int32_t gridX;
  int32_t gridY;
  int32_t gridZ;
  int32_t blockX;
  int32_t blockY;
  int32_t blockZ;
  int32_t staticSharedMemory;
  int32_t dynamicSharedMemory;
  uint32_t localMemoryPerThread;
  uint32_t localMemoryTotal;
  uint32_t correlationId;
  int64_t gridId;
  const char* name;
  uint8_t reserved_112[24];  // reserved0, queued, submitted
  uint8_t launchType;
  uint8_t reserved_137[3];  // sharedMemoryCarveout fields, padding
  uint32_t sharedMemoryExecuted;
  uint64_t graphNodeId;
  uint32_t shmemLimitConfig;  // CUpti_FuncShmemLimitConfig
  uint32_t graphId;
  uint8_t reserved_160[32];  // pAccessPolicyWindow, channelID, channelType, cluster fields
  uint64_t localMemoryTotal_v2;
  uint8_t reserved_200[8];  // maxPotentialClusterSize, maxActiveClusters
};
static_assert(sizeof(ActivityKernel9) == 208);

// CUpti_ActivityAPI (RUNTIME and DRIVER), 40 bytes.
struct alignas(8) ActivityApi {
  uint32_t kind;
  uint32_t cbid;
  uint64_t start;
  uint64_t end;
  uint32_t processId;
  uint32_t threadId;
  uint32_t correlationId;
  uint32_t returnValue;
};
static_assert(sizeof(ActivityApi) == 40);

// CUpti_ActivityMemcpy5 (MEMCPY up to 12.6; 12.8's Memcpy6 appends), 88 bytes.
struct alignas(8) ActivityMemcpy5 {
  uint32_t kind;
  uint8_t copyKind;
  uint8_t srcKind;
  uint8_t dstKind;
  uint8_t flags;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint32_t runtimeCorrelationId;
  uint8_t reserved_52[12];  // pad, reserved0
  uint64_t graphNodeId;
  uint8_t reserved_72[16];  // graphId, channelID, channelType, pad2
};
static_assert(sizeof(ActivityMemcpy5) == 88);

// CUpti_ActivityMemcpyPtoP4 (MEMCPY2, peer to peer), 96 bytes.
struct alignas(8) ActivityMemcpyPtoP4 {
  uint32_t kind;
  uint8_t copyKind;
  uint8_t srcKind;
  uint8_t dstKind;
  uint8_t flags;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t srcDeviceId;
  uint32_t srcContextId;
  uint32_t dstDeviceId;
  uint32_t dstContextId;
  uint32_t correlationId;
  uint8_t reserved_64[8];  // reserved0
  uint64_t graphNodeId;
  uint8_t reserved_80[16];  // graphId, channelID, channelType
};
static_assert(sizeof(ActivityMemcpyPtoP4) == 96);

// CUpti_ActivityMemset4 (MEMSET), 88 bytes.
struct alignas(8) ActivityMemset4 {
  uint32_t kind;
  uint32_t value;
  uint64_t bytes;
  uint64_t start;
  uint64_t end;
  uint32_t deviceId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t correlationId;
  uint16_t flags;
  uint16_t memoryKind;
  uint8_t reserved_52[12];  // pad, reserved0
  uint64_t graphNodeId;
  uint8_t reserved_72[16];  // graphId, channelID, channelType, pad2
};
static_assert(sizeof(ActivityMemset4) == 88);

// CUpti_ActivitySynchronization (SYNCHRONIZATION up to 12.6; 12.8's Synchronization2
// appends), 40 bytes.
struct alignas(8) ActivitySynchronization {
  uint32_t kind;
  uint32_t type;  // CUpti_ActivitySynchronizationType
  uint64_t start;
  uint64_t end;
  uint32_t correlationId;
  uint32_t contextId;
  uint32_t streamId;
  uint32_t cudaEventId;
};
static_assert(sizeof(ActivitySynchronization) == 40);

// CUpti_ActivityExternalCorrelation (EXTERNAL_CORRELATION), 24 bytes.
struct alignas(8) ActivityExternalCorrelation {
  uint32_t kind;
  uint32_t externalKind;  // CUpti_ExternalCorrelationKind
  uint64_t externalId;
  uint32_t correlationId;
  uint32_t reserved;
};
static_assert(sizeof(ActivityExternalCorrelation) == 24);

struct Uuid {  // CUuuid
  char bytes[16];
};

// CUpti_ActivityDevice4 (DEVICE in 12.0 and 12.1; Device5 from 12.2 appends), 176 bytes.
struct alignas(8) ActivityDevice4 {
  uint32_t kind;
  uint32_t flags;
  uint64_t globalMemoryBandwidth;  // KB/s
  uint64_t globalMemorySize;
  uint32_t constantMemorySize;
  uint32_t l2CacheSize;
  uint32_t numThreadsPerWarp;
  uint32_t coreClockRate;  // kHz
  uint32_t numMemcpyEngines;
  uint32_t numMultiprocessors;
  uint32_t maxIPC;
  uint32_t maxWarpsPerMultiprocessor;
  uint32_t maxBlocksPerMultiprocessor;
  uint32_t maxSharedMemoryPerMultiprocessor;
  uint32_t maxRegistersPerMultiprocessor;
  uint32_t maxRegistersPerBlock;
  uint32_t maxSharedMemoryPerBlock;
  uint32_t maxThreadsPerBlock;
  uint32_t maxBlockDimX;
  uint32_t maxBlockDimY;
  uint32_t maxBlockDimZ;
  uint32_t maxGridDimX;
  uint32_t maxGridDimY;
  uint32_t maxGridDimZ;
  uint32_t computeCapabilityMajor;
  uint32_t computeCapabilityMinor;
  uint32_t id;
  uint32_t eccEnabled;
  Uuid uuid;
  const char* name;
  uint8_t reserved_144[32];  // isCudaVisible, isMigEnabled, reserved, MIG instance ids, migUuid
};
static_assert(sizeof(ActivityDevice4) == 176);

// CUpti_ActivityContext (CONTEXT up to 12.3; Context2 in 12.4 and Context3 from 12.5
// append), 16 bytes.
struct alignas(8) ActivityContext {
  uint32_t kind;
  uint32_t contextId;
  uint32_t deviceId;
  uint16_t computeApiKind;
  uint16_t nullStreamId;
};
static_assert(sizeof(ActivityContext) == 16);

}  // namespace pyprof::collect::cupti12

namespace pyprof::collect {

// The record types ActivityConverter reads a CUDA 12 libcupti's buffers with.
struct Cupti12Records {
  using Kernel = cupti12::ActivityKernel9;
  using Api = cupti12::ActivityApi;
  using Memcpy = cupti12::ActivityMemcpy5;
  using MemcpyPeer = cupti12::ActivityMemcpyPtoP4;
  using Memset = cupti12::ActivityMemset4;
  using Synchronization = cupti12::ActivitySynchronization;
  using ExternalCorrelation = cupti12::ActivityExternalCorrelation;
  using Device = cupti12::ActivityDevice4;
  using Context = cupti12::ActivityContext;
};

}  // namespace pyprof::collect
