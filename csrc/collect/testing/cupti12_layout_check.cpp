// The collector's CUDA 12 record layout (cupti12_records.h) against the real thing: compiled
// against a CUDA 12 CUPTI's headers (CMake's PYPROF_CUPTI12_INCLUDE_DIR, the
// nvidia-cuda-cupti-cu12 wheel that scripts/setup.sh installs), it asserts, for every field the
// collector reads, the same offset and size as in each record version a CUDA 12 release writes
// for that kind, and the shared enum values and callback offsets (cupti_abi_checks.h). A
// mismatch is a compile error. The newest 12.x headers define every older record version too, so
// one compilation against 12.9's covers 12.0-12.9; by hand it was also compiled against each of
// 12.0.146, 12.1.105, 12.2.142, 12.3.101, 12.4.127, 12.5.82, 12.6.80, 12.8.90 and 12.9.79
// (docs/install.md).
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "cupti12_records.h"
#include "cupti_abi_checks.h"
#include "cupti_layout.h"

static_assert(CUPTI_API_VERSION >= pyprof::collect::kFirstCuda12ApiVersion &&
                  CUPTI_API_VERSION < pyprof::collect::kFirstCuda13ApiVersion,
              "PYPROF_CUPTI12_INCLUDE_DIR must hold a CUDA 12 CUPTI's headers");

namespace {

namespace c12 = pyprof::collect::cupti12;

// Same offset and same size of `field` in the collector's struct and in CUPTI's.
#define PYPROF_SAME_FIELD(Ours, Theirs, field)                                         \
  static_assert(offsetof(Ours, field) == offsetof(Theirs, field), #Theirs "." #field); \
  static_assert(sizeof(Ours::field) == sizeof(Theirs::field), #Theirs "." #field " size")

// The version a release starts with: the same length.
#define PYPROF_SAME_SIZE(Ours, Theirs) static_assert(sizeof(Ours) == sizeof(Theirs), #Theirs)
// A later version: ours is its prefix.
#define PYPROF_PREFIX_OF(Ours, Theirs) static_assert(sizeof(Ours) <= sizeof(Theirs), #Theirs)

#define PYPROF_KERNEL_FIELDS(Theirs)                                     \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, kind);                 \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, cacheConfig);          \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, sharedMemoryConfig);   \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, registersPerThread);   \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, start);                \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, end);                  \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, completed);            \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, deviceId);             \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, contextId);            \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, streamId);             \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, gridX);                \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, gridY);                \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, gridZ);                \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, blockX);               \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, blockY);               \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, blockZ);               \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, staticSharedMemory);   \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, dynamicSharedMemory);  \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, localMemoryPerThread); \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, localMemoryTotal);     \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, correlationId);        \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, gridId);               \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, name);                 \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, launchType);           \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, sharedMemoryExecuted); \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, graphNodeId);          \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, shmemLimitConfig);     \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, graphId);              \
  PYPROF_SAME_FIELD(c12::ActivityKernel9, Theirs, localMemoryTotal_v2)

PYPROF_KERNEL_FIELDS(CUpti_ActivityKernel9);
PYPROF_SAME_SIZE(c12::ActivityKernel9, CUpti_ActivityKernel9);

PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, kind);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, cbid);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, start);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, end);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, processId);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, threadId);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, correlationId);
PYPROF_SAME_FIELD(c12::ActivityApi, CUpti_ActivityAPI, returnValue);
PYPROF_SAME_SIZE(c12::ActivityApi, CUpti_ActivityAPI);

#define PYPROF_MEMCPY_FIELDS(Theirs)                                     \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, kind);                 \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, copyKind);             \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, srcKind);              \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, dstKind);              \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, flags);                \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, bytes);                \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, start);                \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, end);                  \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, deviceId);             \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, contextId);            \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, streamId);             \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, correlationId);        \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, runtimeCorrelationId); \
  PYPROF_SAME_FIELD(c12::ActivityMemcpy5, Theirs, graphNodeId)

PYPROF_MEMCPY_FIELDS(CUpti_ActivityMemcpy5);
PYPROF_SAME_SIZE(c12::ActivityMemcpy5, CUpti_ActivityMemcpy5);
#if CUPTI_API_VERSION >= 26  // 12.8
PYPROF_MEMCPY_FIELDS(CUpti_ActivityMemcpy6);
PYPROF_PREFIX_OF(c12::ActivityMemcpy5, CUpti_ActivityMemcpy6);
#endif

PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, kind);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, copyKind);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, srcKind);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, dstKind);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, flags);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, bytes);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, start);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, end);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, deviceId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, contextId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, streamId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, srcDeviceId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, srcContextId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, dstDeviceId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, dstContextId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, correlationId);
PYPROF_SAME_FIELD(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4, graphNodeId);
PYPROF_SAME_SIZE(c12::ActivityMemcpyPtoP4, CUpti_ActivityMemcpyPtoP4);

PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, kind);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, value);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, bytes);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, start);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, end);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, deviceId);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, contextId);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, streamId);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, correlationId);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, flags);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, memoryKind);
PYPROF_SAME_FIELD(c12::ActivityMemset4, CUpti_ActivityMemset4, graphNodeId);
PYPROF_SAME_SIZE(c12::ActivityMemset4, CUpti_ActivityMemset4);

#define PYPROF_SYNC_FIELDS(Theirs)                                        \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, kind);          \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, type);          \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, start);         \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, end);           \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, correlationId); \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, contextId);     \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, streamId);      \
  PYPROF_SAME_FIELD(c12::ActivitySynchronization, Theirs, cudaEventId)

PYPROF_SYNC_FIELDS(CUpti_ActivitySynchronization);
PYPROF_SAME_SIZE(c12::ActivitySynchronization, CUpti_ActivitySynchronization);
#if CUPTI_API_VERSION >= 26  // 12.8
PYPROF_SYNC_FIELDS(CUpti_ActivitySynchronization2);
PYPROF_PREFIX_OF(c12::ActivitySynchronization, CUpti_ActivitySynchronization2);
#endif

PYPROF_SAME_FIELD(c12::ActivityExternalCorrelation, CUpti_ActivityExternalCorrelation, kind);
PYPROF_SAME_FIELD(c12::ActivityExternalCorrelation, CUpti_ActivityExternalCorrelation,
                  externalKind);
PYPROF_SAME_FIELD(c12::ActivityExternalCorrelation, CUpti_ActivityExternalCorrelation, externalId);
PYPROF_SAME_FIELD(c12::ActivityExternalCorrelation, CUpti_ActivityExternalCorrelation,
                  correlationId);
PYPROF_SAME_SIZE(c12::ActivityExternalCorrelation, CUpti_ActivityExternalCorrelation);

#define PYPROF_DEVICE_FIELDS(Theirs)                                                 \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, kind);                             \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, flags);                            \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, globalMemoryBandwidth);            \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, globalMemorySize);                 \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, constantMemorySize);               \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, l2CacheSize);                      \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, numThreadsPerWarp);                \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, coreClockRate);                    \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, numMemcpyEngines);                 \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, numMultiprocessors);               \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxIPC);                           \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxWarpsPerMultiprocessor);        \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxBlocksPerMultiprocessor);       \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxSharedMemoryPerMultiprocessor); \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxRegistersPerMultiprocessor);    \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxRegistersPerBlock);             \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxSharedMemoryPerBlock);          \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxThreadsPerBlock);               \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxBlockDimX);                     \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxBlockDimY);                     \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxBlockDimZ);                     \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxGridDimX);                      \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxGridDimY);                      \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, maxGridDimZ);                      \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, computeCapabilityMajor);           \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, computeCapabilityMinor);           \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, id);                               \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, eccEnabled);                       \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, uuid);                             \
  PYPROF_SAME_FIELD(c12::ActivityDevice4, Theirs, name)

PYPROF_DEVICE_FIELDS(CUpti_ActivityDevice4);
PYPROF_SAME_SIZE(c12::ActivityDevice4, CUpti_ActivityDevice4);
#if CUPTI_API_VERSION >= 20  // 12.2
PYPROF_DEVICE_FIELDS(CUpti_ActivityDevice5);
PYPROF_PREFIX_OF(c12::ActivityDevice4, CUpti_ActivityDevice5);
#endif

#define PYPROF_CONTEXT_FIELDS(Theirs)                              \
  PYPROF_SAME_FIELD(c12::ActivityContext, Theirs, kind);           \
  PYPROF_SAME_FIELD(c12::ActivityContext, Theirs, contextId);      \
  PYPROF_SAME_FIELD(c12::ActivityContext, Theirs, deviceId);       \
  PYPROF_SAME_FIELD(c12::ActivityContext, Theirs, computeApiKind); \
  PYPROF_SAME_FIELD(c12::ActivityContext, Theirs, nullStreamId)

PYPROF_CONTEXT_FIELDS(CUpti_ActivityContext);
PYPROF_SAME_SIZE(c12::ActivityContext, CUpti_ActivityContext);
#if CUPTI_API_VERSION >= 22  // 12.4
PYPROF_CONTEXT_FIELDS(CUpti_ActivityContext2);
PYPROF_PREFIX_OF(c12::ActivityContext, CUpti_ActivityContext2);
#endif
#if CUPTI_API_VERSION >= 23  // 12.5
PYPROF_CONTEXT_FIELDS(CUpti_ActivityContext3);
PYPROF_PREFIX_OF(c12::ActivityContext, CUpti_ActivityContext3);
#endif

// Every assertion above held when this compiled; the test records which headers it was.
TEST(Cupti12Layout, MatchesTheCuda12Headers) {
  EXPECT_GE(CUPTI_API_VERSION, 18);
  EXPECT_LT(CUPTI_API_VERSION, 130000);
  std::printf("collector's CUDA 12 layout checked against CUPTI headers of API version %d\n",
              CUPTI_API_VERSION);
}

}  // namespace
