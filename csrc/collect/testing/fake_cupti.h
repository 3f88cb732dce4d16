// Control interface of libfake_cupti.so, a stand-in for libcupti used to test the collector's
// CUPTI backend on machines without a GPU (CI). The library exports the real CUPTI entry points
// the collector dlsyms (cuptiSubscribe_v2, cuptiActivityEnable, cuptiActivityGetNextRecord, ...)
// with the CUDA 13.0 signatures (CUDA 12's are the same), plus the fake_cupti_* functions below,
// which a test program calls instead of CUDA: each one plays what CUDA + CUPTI would do for one API
// call (an API activity record on the calling thread, the GPU record with the same correlation id),
// so the records reach the collector through its own buffer callbacks exactly as real ones would.
//
// Environment read by the library:
//   FAKE_CUPTI_OTHER_SUBSCRIBER=<name>  another tool owns CUPTI: cuptiSubscribe(_v2) fails with
//                                       CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and
//                                       reports <name> in oldSubscriberName
//   FAKE_CUPTI_VERSION=<n>              what cuptiGetVersion returns (default CUPTI_API_VERSION of
//                                       the CUDA 13 headers), and so the release it plays: the
//                                       records it writes are that release's (18-28: CUDA 12.0-
//                                       12.9, fake_cupti_records.h), and a CUDA 12 release has no
//                                       cuptiSubscribe_v2 (calling it is a contract violation)
//
// Breaches of the CUPTI rules that a collector must follow (misaligned buffers, FlushAll from
// inside the completion callback, ...) are printed as "fake_cupti: contract violation: ..." on
// stderr and counted in fake_cupti_stats_t::contract_violations.
//
// Kinds and enums are CUPTI's numbers (cupti_activity.h); this header needs no CUDA header.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_CUPTI_API __attribute__((visibility("default")))

typedef struct {
  const char* mangled_name;  // copied; the record's name pointer dies after the completion
  int32_t grid_x, grid_y, grid_z;
  int32_t block_x, block_y, block_z;
  uint32_t context_id;  // 0: the primary context of device 0 (id 1)
  uint32_t stream_id;
  uint64_t duration_ns;
  uint16_t registers_per_thread;
  int32_t static_shared_memory;
  int32_t dynamic_shared_memory;
  uint32_t local_memory_per_thread;
  uint32_t local_memory_total;
  uint32_t shared_memory_executed;
  uint8_t cache_config;         // CUpti_ActivityKernel10.cacheConfig.both
  uint8_t launch_type;          // CUpti_ActivityLaunchType (0 regular)
  uint32_t shmem_limit_config;  // CUpti_FuncShmemLimitConfig
  uint64_t graph_node_id;       // 0: not launched by a graph
  uint32_t graph_id;
  int driver_api;    // non-zero: launched with cuLaunchKernel (a DRIVER record) instead of
                     // cudaLaunchKernel (a RUNTIME record)
  int no_timestamp;  // non-zero: the kernel record has start = end = 0 (CUPTI could not time it)
} fake_cupti_kernel_t;

// A kernel with plain defaults: grid (grid_x,1,1), block (block_x,1,1), 32 registers, context
// 1, no shared memory, regular launch through cudaLaunchKernel.
FAKE_CUPTI_API fake_cupti_kernel_t fake_cupti_kernel(const char* mangled_name, int32_t grid_x,
                                                     int32_t block_x, uint32_t stream_id,
                                                     uint64_t duration_ns);

// Each call below returns the correlation id of its API record (the GPU record shares it).

// API record (cudaLaunchKernel_v7000 or cuLaunchKernel) + CONCURRENT_KERNEL record.
FAKE_CUPTI_API uint32_t fake_cupti_launch(const fake_cupti_kernel_t* kernel);
// Shorthand for fake_cupti_launch(fake_cupti_kernel(...)).
FAKE_CUPTI_API uint32_t fake_cupti_launch_kernel(const char* mangled_name, int32_t grid_x,
                                                 int32_t block_x, uint32_t stream_id,
                                                 uint64_t duration_ns);
// cudaMemcpyAsync_v3020 + MEMCPY record (CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind).
FAKE_CUPTI_API uint32_t fake_cupti_memcpy(uint64_t bytes, uint8_t copy_kind, uint8_t src_kind,
                                          uint8_t dst_kind, uint32_t stream_id,
                                          uint64_t duration_ns);
// cudaMemcpyPeerAsync_v4000 + MEMCPY2 (peer-to-peer) record, device to device; the record's
// context is the source device's.
FAKE_CUPTI_API uint32_t fake_cupti_memcpy_peer(uint64_t bytes, uint32_t src_device,
                                               uint32_t dst_device, uint32_t stream_id,
                                               uint64_t duration_ns);
// cudaMemsetAsync_v3020 + MEMSET record.
FAKE_CUPTI_API uint32_t fake_cupti_memset(uint64_t bytes, uint32_t value, uint16_t memory_kind,
                                          uint32_t stream_id, uint64_t duration_ns);
// A synchronisation (CUpti_ActivitySynchronizationType): stream sync ->
// cudaStreamSynchronize_v3020, event sync -> cudaEventSynchronize_v3020, context sync ->
// cudaDeviceSynchronize_v3020; + SYNCHRONIZATION record on that context (its device comes only
// from the CONTEXT record).
FAKE_CUPTI_API uint32_t fake_cupti_synchronize(uint32_t sync_type, uint32_t context_id,
                                               uint32_t stream_id, uint32_t cuda_event_id,
                                               uint64_t duration_ns);
// Like cuptiActivityPushExternalCorrelationId/Pop: while pushed, every API call of this thread
// also produces an EXTERNAL_CORRELATION record (before its API record, same correlation id).
FAKE_CUPTI_API void fake_cupti_push_external_id(uint32_t external_kind, uint64_t external_id);
FAKE_CUPTI_API void fake_cupti_pop_external_id(void);

// Device `device_id` (H100 SXM facts below, the uuid varying with the id) appears: a DEVICE
// record and a CONTEXT record (context id device_id + 1), each if its kind is enabled. Device 0
// appears by itself when DEVICE is enabled, and its context at the first API call.
FAKE_CUPTI_API void fake_cupti_emit_device(uint32_t device_id);

// cudaProfilerStart/Stop (driver: cuProfilerStart/Stop): the subscriber's callbacks at API
// enter and exit when enabled with cuptiEnableCallback, and the API record.
FAKE_CUPTI_API uint32_t fake_cupti_profiler_start(int driver_api);
FAKE_CUPTI_API uint32_t fake_cupti_profiler_stop(int driver_api);

// A CUDA graph node appears, as CUPTI's resource callbacks tell a subscriber that enabled them:
// original_node_id 0 -> CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED (stream capture or cudaGraphAdd*
// on this thread), else CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED (cudaGraphInstantiate copying node
// original_node_id into executable graph graph_id). cuptiGetGraphNodeId and cuptiGetGraphId read
// the ids back from the handles the callback passes. A kernel that node runs is launched with
// fake_cupti_launch and graph_node_id set.
FAKE_CUPTI_API void fake_cupti_graph_node(uint64_t node_id, uint64_t original_node_id,
                                          uint32_t graph_id);

// Counts `n` records as dropped (reported by the next cuptiActivityGetNumDroppedRecords).
FAKE_CUPTI_API void fake_cupti_add_dropped(uint64_t n);

// Hands the partially filled buffer to the client now, as CUPTI's own background delivery
// would (same as cuptiActivityFlushAll(0), without the application calling CUPTI).
FAKE_CUPTI_API void fake_cupti_deliver_now(void);

// Now, on the clock CUPTI uses: the registered timestamp callback, else CLOCK_REALTIME.
FAKE_CUPTI_API uint64_t fake_cupti_timestamp(void);

typedef struct {
  uint64_t records_emitted;    // placed in a client buffer
  uint64_t records_dropped;    // no buffer from the request callback, plus fake_cupti_add_dropped
  uint64_t records_disabled;   // not produced: their kind (or API cbid) was not enabled
  uint64_t dropped_reported;   // sum of what cuptiActivityGetNumDroppedRecords returned
  uint64_t buffers_requested;  // request callback calls
  uint64_t buffers_refused;    // ... that returned no buffer (or one too small)
  uint64_t buffers_completed;  // completion callback calls
  uint64_t buffers_completed_full;  // ... for a full buffer, on the emitting thread
  uint64_t flushes;                 // cuptiActivityFlushAll calls
  uint64_t subscribe_calls;         // cuptiSubscribe + cuptiSubscribe_v2
  uint64_t subscriber_callbacks;    // subscriber callback invocations
  uint64_t contract_violations;
  uint32_t thread_id_type;   // last cuptiSetThreadIdType
  int subscribed;            // a subscriber is registered now
  int timestamp_callback;    // one was registered
  char subscriber_name[64];  // CUpti_SubscriberParams.subscriberName of the subscription
} fake_cupti_stats_t;

FAKE_CUPTI_API void fake_cupti_get_stats(fake_cupti_stats_t* stats);

#ifdef __cplusplus
}  // extern "C"

// The device record of device 0 (an H100 SXM5 80GB), in CUpti_ActivityDevice5 units, so tests
// can check what the collector made of it. Device n has id n, uuid byte 15 = kUuid[15] + n and
// the same other facts.
namespace fake_cupti {
inline constexpr char kDeviceName[] = "NVIDIA H100 80GB HBM3";
inline constexpr uint64_t kGlobalMemoryBandwidthKBs = 3'352'320'000;  // 2619 MHz x 5120 bit x 2
inline constexpr uint64_t kGlobalMemorySize = 85'029'158'912;
inline constexpr uint32_t kConstantMemorySize = 65'536;
inline constexpr uint32_t kL2CacheSize = 52'428'800;
inline constexpr uint32_t kThreadsPerWarp = 32;
inline constexpr uint32_t kCoreClockRateKHz = 1'980'000;
inline constexpr uint32_t kNumMemcpyEngines = 5;
inline constexpr uint32_t kNumMultiprocessors = 132;
inline constexpr uint32_t kMaxIpc = 4;
inline constexpr uint32_t kMaxWarpsPerSm = 64;
inline constexpr uint32_t kMaxBlocksPerSm = 32;
inline constexpr uint32_t kMaxSharedMemoryPerSm = 233'472;
inline constexpr uint32_t kMaxRegistersPerSm = 65'536;
inline constexpr uint32_t kMaxRegistersPerBlock = 65'536;
inline constexpr uint32_t kMaxSharedMemoryPerBlock = 49'152;
inline constexpr uint32_t kMaxThreadsPerBlock = 1'024;
inline constexpr uint32_t kMaxBlockDim[3] = {1'024, 1'024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {2'147'483'647, 65'535, 65'535};
inline constexpr uint32_t kComputeMajor = 9;
inline constexpr uint32_t kComputeMinor = 0;
inline constexpr unsigned char kUuid[16] = {0x5d, 0x1c, 0x9e, 0x0b, 0x7a, 0x42, 0x4f, 0x13,
                                            0x8c, 0x2e, 0x61, 0xd4, 0x90, 0x3b, 0xa7, 0x10};
}  // namespace fake_cupti
#endif
