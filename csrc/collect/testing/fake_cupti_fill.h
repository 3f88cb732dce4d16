// How the fake fills a CUPTI record struct from its facts (fake_cupti_records.h), written once
// for every record version: CUPTI names a field alike in each version that has it. Included by
// fake_cupti_records13.cpp and fake_cupti_records12.cpp after their own <cupti.h>, so each
// instantiates these with its release's structs; the unnamed namespace keeps the two sets of
// instantiations apart (several struct names exist in both releases).
#pragma once

#include <cstddef>
#include <cstring>

#include "fake_cupti.h"
#include "fake_cupti_records.h"

namespace {

using fake_cupti::records::Record;

template <class Struct>
void store(const Struct& record, Record* out, size_t name_offset = fake_cupti::records::kNoName) {
  static_assert(sizeof(Struct) <= fake_cupti::records::kMaxRecordBytes);
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, &record, sizeof(Struct));
  out->size = sizeof(Struct);
  out->name_offset = name_offset;
}

template <class Kernel>
void fill_kernel(const fake_cupti::records::KernelFacts& f, Record* out) {
  Kernel r{};
  r.kind = static_cast<CUpti_ActivityKind>(f.kind);
  r.cacheConfig.both = f.cache_config;
  r.sharedMemoryConfig = 1;  // CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE
  r.registersPerThread = f.registers_per_thread;
  r.partitionedGlobalCacheRequested = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
  r.partitionedGlobalCacheExecuted = CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED;
  r.start = f.start;
  r.end = f.end;
  r.completed = f.end;
  r.deviceId = f.device_id;
  r.contextId = f.context_id;
  r.streamId = f.stream_id;
  r.gridX = f.grid[0];
  r.gridY = f.grid[1];
  r.gridZ = f.grid[2];
  r.blockX = f.block[0];
  r.blockY = f.block[1];
  r.blockZ = f.block[2];
  r.staticSharedMemory = f.static_shared_memory;
  r.dynamicSharedMemory = f.dynamic_shared_memory;
  r.localMemoryPerThread = f.local_memory_per_thread;
  r.localMemoryTotal = f.local_memory_total;
  r.correlationId = f.correlation_id;
  r.gridId = f.grid_id;
  r.name = nullptr;  // pointed at the buffer's copy of the name when emitted
  r.queued = CUPTI_TIMESTAMP_UNKNOWN;
  r.submitted = CUPTI_TIMESTAMP_UNKNOWN;
  r.launchType = f.launch_type;
  r.sharedMemoryExecuted = f.shared_memory_executed;
  r.graphNodeId = f.graph_node_id;
  r.shmemLimitConfig = static_cast<CUpti_FuncShmemLimitConfig>(f.shmem_limit_config);
  r.graphId = f.graph_id;
  r.channelID = 1;
  r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
  r.clusterX = 1;
  r.clusterY = 1;
  r.clusterZ = 1;
  r.localMemoryTotal_v2 = f.local_memory_total;
  store(r, out, offsetof(Kernel, name));
}

template <class Api>
void fill_api(const fake_cupti::records::ApiFacts& f, Record* out) {
  Api r{};
  r.kind = static_cast<CUpti_ActivityKind>(f.kind);
  r.cbid = f.cbid;
  r.start = f.start;
  r.end = f.end;
  r.processId = f.process_id;
  r.threadId = f.thread_id;
  r.correlationId = f.correlation_id;
  r.returnValue = f.return_value;
  store(r, out);
}

template <class Copy>
void fill_copy_common(const fake_cupti::records::CopyFacts& f, Copy& r) {
  r.copyKind = f.copy_kind;
  r.srcKind = f.src_kind;
  r.dstKind = f.dst_kind;
  r.flags = f.flags;
  r.bytes = f.bytes;
  r.start = f.start;
  r.end = f.end;
  r.deviceId = f.device_id;
  r.contextId = f.context_id;
  r.streamId = f.stream_id;
  r.correlationId = f.correlation_id;
  r.channelID = f.channel_id;
  r.channelType = static_cast<CUpti_ChannelType>(f.channel_type);
}

template <class Memcpy>
void fill_memcpy(const fake_cupti::records::CopyFacts& f, Record* out) {
  Memcpy r{};
  r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  fill_copy_common(f, r);
  r.runtimeCorrelationId = f.correlation_id;
  if constexpr (requires { r.copyCount; }) r.copyCount = 1;  // Memcpy6 (CUDA 12.8 on)
  store(r, out);
}

template <class PeerCopy>
void fill_peer_copy(const fake_cupti::records::CopyFacts& f, Record* out) {
  PeerCopy r{};
  r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  fill_copy_common(f, r);
  r.srcDeviceId = f.src_device_id;
  r.srcContextId = f.src_context_id;
  r.dstDeviceId = f.dst_device_id;
  r.dstContextId = f.dst_context_id;
  store(r, out);
}

template <class Memset>
void fill_memset(const fake_cupti::records::MemsetFacts& f, Record* out) {
  Memset r{};
  r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  r.value = f.value;
  r.bytes = f.bytes;
  r.start = f.start;
  r.end = f.end;
  r.deviceId = f.device_id;
  r.contextId = f.context_id;
  r.streamId = f.stream_id;
  r.correlationId = f.correlation_id;
  r.flags = f.flags;
  r.memoryKind = f.memory_kind;
  r.channelID = 1;
  r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
  store(r, out);
}

template <class Sync>
void fill_sync(const fake_cupti::records::SyncFacts& f, Record* out) {
  Sync r{};
  r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  r.type = static_cast<CUpti_ActivitySynchronizationType>(f.type);
  r.start = f.start;
  r.end = f.end;
  r.correlationId = f.correlation_id;
  r.contextId = f.context_id;
  r.streamId = f.stream_id;
  r.cudaEventId = f.cuda_event_id;
  if constexpr (requires { r.cudaEventSyncId; }) r.cudaEventSyncId = f.cuda_event_sync_id;
  store(r, out);
}

template <class External>
void fill_external_correlation(const fake_cupti::records::ExternalCorrelationFacts& f,
                               Record* out) {
  External r{};
  r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(f.external_kind);
  r.externalId = f.external_id;
  r.correlationId = f.correlation_id;
  store(r, out);
}

template <class Device>
void fill_device(const fake_cupti::records::DeviceFacts& f, Record* out) {
  Device r{};
  r.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  r.flags = CUPTI_ACTIVITY_FLAG_NONE;
  r.globalMemoryBandwidth = fake_cupti::kGlobalMemoryBandwidthKBs;
  r.globalMemorySize = fake_cupti::kGlobalMemorySize;
  r.constantMemorySize = fake_cupti::kConstantMemorySize;
  r.l2CacheSize = fake_cupti::kL2CacheSize;
  r.numThreadsPerWarp = fake_cupti::kThreadsPerWarp;
  r.coreClockRate = fake_cupti::kCoreClockRateKHz;
  r.numMemcpyEngines = fake_cupti::kNumMemcpyEngines;
  r.numMultiprocessors = fake_cupti::kNumMultiprocessors;
  r.maxIPC = fake_cupti::kMaxIpc;
  r.maxWarpsPerMultiprocessor = fake_cupti::kMaxWarpsPerSm;
  r.maxBlocksPerMultiprocessor = fake_cupti::kMaxBlocksPerSm;
  r.maxSharedMemoryPerMultiprocessor = fake_cupti::kMaxSharedMemoryPerSm;
  r.maxRegistersPerMultiprocessor = fake_cupti::kMaxRegistersPerSm;
  r.maxRegistersPerBlock = fake_cupti::kMaxRegistersPerBlock;
  r.maxSharedMemoryPerBlock = fake_cupti::kMaxSharedMemoryPerBlock;
  r.maxThreadsPerBlock = fake_cupti::kMaxThreadsPerBlock;
  r.maxBlockDimX = fake_cupti::kMaxBlockDim[0];
  r.maxBlockDimY = fake_cupti::kMaxBlockDim[1];
  r.maxBlockDimZ = fake_cupti::kMaxBlockDim[2];
  r.maxGridDimX = fake_cupti::kMaxGridDim[0];
  r.maxGridDimY = fake_cupti::kMaxGridDim[1];
  r.maxGridDimZ = fake_cupti::kMaxGridDim[2];
  r.computeCapabilityMajor = fake_cupti::kComputeMajor;
  r.computeCapabilityMinor = fake_cupti::kComputeMinor;
  r.id = f.device_id;
  r.eccEnabled = 1;
  std::memcpy(r.uuid.bytes, fake_cupti::kUuid, sizeof(r.uuid.bytes));
  r.uuid.bytes[15] = static_cast<char>(fake_cupti::kUuid[15] + f.device_id);
  // Device names live as long as CUPTI does (unlike kernel names in this fake).
  r.name = fake_cupti::kDeviceName;
  r.isCudaVisible = 1;
  r.isMigEnabled = 0;
  store(r, out);
}

template <class Context>
void fill_context(const fake_cupti::records::ContextFacts& f, Record* out) {
  Context r{};
  r.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  r.contextId = f.context_id;
  r.deviceId = f.device_id;
  r.computeApiKind = CUPTI_ACTIVITY_COMPUTE_API_CUDA;
  r.nullStreamId = f.null_stream_id;
  if constexpr (requires { r.numMultiprocessors; }) r.numMultiprocessors = f.multiprocessors;
  store(r, out);
}

}  // namespace
