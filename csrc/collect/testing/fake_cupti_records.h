// The activity records libfake_cupti.so writes, in the layout of the CUPTI release it plays
// (its cuptiGetVersion(), FAKE_CUPTI_VERSION): what each record says is given here as plain
// facts, without CUDA headers, and written out by one of two translation units, each compiled
// against that release's own CUPTI headers:
//   fake_cupti_records13.cpp  the CUDA 13 headers the collector is built with (version >= 130000)
//   fake_cupti_records12.cpp  a CUDA 12 release's (PYPROF_CUPTI12_INCLUDE_DIR), the record
//                             version each 12.x release writes (Device5 from 12.2, Context2 in
//                             12.4, Context3 from 12.5, Memcpy6 and Synchronization2 from 12.8)
// So the records the collector reads in a test are laid out by NVIDIA's headers, not by the
// collector's own definitions of them (cupti12_records.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fake_cupti::records {

inline constexpr size_t kMaxRecordBytes = 256;
inline constexpr size_t kNoName = SIZE_MAX;

// One record as CUPTI would place it in a buffer: `size` bytes, and where its kernel name
// pointer is (kNoName: none).
struct Record {
  alignas(8) unsigned char bytes[kMaxRecordBytes] = {};
  size_t size = 0;
  size_t name_offset = kNoName;
};

struct KernelFacts {
  uint32_t kind = 0;  // CONCURRENT_KERNEL or KERNEL
  uint8_t cache_config = 0;
  uint16_t registers_per_thread = 0;
  uint64_t start = 0, end = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0;
  int32_t grid[3] = {}, block[3] = {};
  int32_t static_shared_memory = 0, dynamic_shared_memory = 0;
  uint32_t local_memory_per_thread = 0, local_memory_total = 0;
  uint32_t correlation_id = 0;
  int64_t grid_id = 0;
  uint8_t launch_type = 0;
  uint32_t shared_memory_executed = 0;
  uint64_t graph_node_id = 0;
  uint32_t shmem_limit_config = 0;
  uint32_t graph_id = 0;
};

struct ApiFacts {
  uint32_t kind = 0;  // RUNTIME or DRIVER
  uint32_t cbid = 0;
  uint64_t start = 0, end = 0;
  uint32_t process_id = 0, thread_id = 0, correlation_id = 0, return_value = 0;
};

struct CopyFacts {  // MEMCPY, or MEMCPY2 (peer) with the peer ids
  uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0, flags = 0;
  uint64_t bytes = 0, start = 0, end = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  uint32_t channel_id = 0, channel_type = 0;
  uint32_t src_device_id = 0, src_context_id = 0, dst_device_id = 0, dst_context_id = 0;
};

struct MemsetFacts {
  uint32_t value = 0;
  uint64_t bytes = 0, start = 0, end = 0;
  uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  uint16_t flags = 0, memory_kind = 0;
};

struct SyncFacts {
  uint32_t type = 0;
  uint64_t start = 0, end = 0;
  uint32_t correlation_id = 0, context_id = 0, stream_id = 0, cuda_event_id = 0;
  uint32_t cuda_event_sync_id = 0;  // only in Synchronization2 (CUDA 12.8 on)
};

struct ExternalCorrelationFacts {
  uint32_t external_kind = 0;
  uint64_t external_id = 0;
  uint32_t correlation_id = 0;
};

// Device `device_id`: fake_cupti.h's H100 facts, its uuid varying with the id.
struct DeviceFacts {
  uint32_t device_id = 0;
};

struct ContextFacts {
  uint32_t context_id = 0, device_id = 0;
  uint16_t null_stream_id = 0, multiprocessors = 0;
};

// Per layout: each writes the record its release's libcupti writes for the facts (kernel
// records with name_offset set), and record_size is how long a record of `kind` is in that
// release's buffers (the stride of cuptiActivityGetNextRecord; 0 for a kind this fake never
// writes). The functions after these pick the layout from the API version.
namespace cuda13 {
void write_kernel(const KernelFacts& facts, Record* out);
void write_api(const ApiFacts& facts, Record* out);
void write_memcpy(const CopyFacts& facts, Record* out);
void write_peer_copy(const CopyFacts& facts, Record* out);
void write_memset(const MemsetFacts& facts, Record* out);
void write_sync(const SyncFacts& facts, Record* out);
void write_external_correlation(const ExternalCorrelationFacts& facts, Record* out);
void write_device(const DeviceFacts& facts, Record* out);
void write_context(const ContextFacts& facts, Record* out);
size_t record_size(uint32_t kind);
}  // namespace cuda13

namespace cuda12 {
void write_kernel(const KernelFacts& facts, Record* out);
void write_api(const ApiFacts& facts, Record* out);
void write_memcpy(uint32_t version, const CopyFacts& facts, Record* out);
void write_peer_copy(const CopyFacts& facts, Record* out);
void write_memset(const MemsetFacts& facts, Record* out);
void write_sync(uint32_t version, const SyncFacts& facts, Record* out);
void write_external_correlation(const ExternalCorrelationFacts& facts, Record* out);
void write_device(uint32_t version, const DeviceFacts& facts, Record* out);
void write_context(uint32_t version, const ContextFacts& facts, Record* out);
size_t record_size(uint32_t version, uint32_t kind);
}  // namespace cuda12

inline bool is_cuda13(uint32_t version) { return version >= 130000; }

inline void write_kernel(uint32_t version, const KernelFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_kernel(facts, out) : cuda12::write_kernel(facts, out);
}
inline void write_api(uint32_t version, const ApiFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_api(facts, out) : cuda12::write_api(facts, out);
}
inline void write_memcpy(uint32_t version, const CopyFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_memcpy(facts, out) : cuda12::write_memcpy(version, facts, out);
}
inline void write_peer_copy(uint32_t version, const CopyFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_peer_copy(facts, out) : cuda12::write_peer_copy(facts, out);
}
inline void write_memset(uint32_t version, const MemsetFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_memset(facts, out) : cuda12::write_memset(facts, out);
}
inline void write_sync(uint32_t version, const SyncFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_sync(facts, out) : cuda12::write_sync(version, facts, out);
}
inline void write_external_correlation(uint32_t version, const ExternalCorrelationFacts& facts,
                                       Record* out) {
  is_cuda13(version) ? cuda13::write_external_correlation(facts, out)
                     : cuda12::write_external_correlation(facts, out);
}
inline void write_device(uint32_t version, const DeviceFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_device(facts, out) : cuda12::write_device(version, facts, out);
}
inline void write_context(uint32_t version, const ContextFacts& facts, Record* out) {
  is_cuda13(version) ? cuda13::write_context(facts, out)
                     : cuda12::write_context(version, facts, out);
}
inline size_t record_size(uint32_t version, uint32_t kind) {
  return is_cuda13(version) ? cuda13::record_size(kind) : cuda12::record_size(version, kind);
}

}  // namespace fake_cupti::records
