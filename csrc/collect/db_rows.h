// Plain rows for every table but NVTX_EVENTS, shared by the collector and SqliteWriter. The GPU
// rows hold values already in Nsight Systems' conventions (ns relative to the session start,
// nsys enum numbering, StringIds ids), so the writer only binds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pyprof::collect {

struct StringRow {  // StringIds
  uint64_t id = 0;
  std::string value;
};

struct ThreadNameRow {  // ThreadNames (nameId -> StringIds)
  uint64_t global_tid = 0;
  uint64_t name_id = 0;
  std::optional<int64_t> priority;
};

struct ProcessRow {  // PROCESSES
  uint64_t global_pid = 0;
  int64_t pid = 0;
  std::string name;
};

struct SessionStart {  // TARGET_INFO_SESSION_START_TIME
  int64_t utc_epoch_ns = 0;
  int64_t monotonic_ns = 0;  // -> systemClockNs (the clock every row is relative to)
};

struct MetadataRow {  // META_DATA_EXPORT / META_DATA_CAPTURE
  std::string name;
  std::string value;
};

struct StatRow {  // PYPROF_COLLECTOR_STATS
  std::string name;
  int64_t value = 0;
};

// PYPROF_MEMORY_DEVICES (docs/formats.md §2.2): what one device's memory and its PyTorch
// allocator said at one moment (pyprof.init(), stop(), exit), for how far a later report finds
// the batch could grow. Bytes; absent values are NULL.
struct MemoryDeviceRow {
  int64_t start = 0;  // collector clock
  std::optional<uint64_t> global_tid;
  int32_t device_type = 0;    // c10::DeviceType: 0 CPU, 1 CUDA
  int32_t device_index = -1;  // -1: the CPU
  std::string moment;         // "init", "stop", "exit"
  std::optional<int64_t> total_memory;
  std::optional<int64_t> free_memory;
  std::optional<int64_t> allocator_limit;
  std::optional<int64_t> allocated;
  std::optional<int64_t> reserved;
  std::optional<int64_t> peak_allocated;
  std::optional<int64_t> peak_reserved;
  std::optional<int64_t> alloc_retries;
  std::optional<int64_t> ooms;
};

// ---- GPU activity (CUPTI), one struct per CUPTI_ACTIVITY_KIND_* / TARGET_INFO_* table ----

struct KernelRow {  // CUPTI_ACTIVITY_KIND_KERNEL
  int64_t start = 0;
  int64_t end = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t global_pid = 0;
  uint64_t demangled_name = 0;  // StringIds ids
  uint64_t short_name = 0;
  uint64_t mangled_name = 0;
  int32_t launch_type = 0;  // nsys ENUM_CUDA_KERNEL_LAUNCH_TYPE
  int32_t cache_config = 0;
  int32_t registers_per_thread = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t static_shared_memory = 0;
  int32_t dynamic_shared_memory = 0;
  uint32_t local_memory_per_thread = 0;
  uint64_t local_memory_total = 0;
  int64_t grid_id = 0;
  uint32_t shared_memory_executed = 0;
  std::optional<uint64_t> graph_node_id;  // NULL unless launched from a CUDA graph
  std::optional<uint32_t> graph_id;
  int32_t shared_memory_limit_config = 0;
};

struct ApiRow {  // CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver calls)
  int64_t start = 0;
  int64_t end = 0;
  int32_t event_class = 0;  // 0 CUDA runtime, 1 CUDA driver (ENUM_NSYS_EVENT_CLASS)
  uint64_t global_tid = 0;
  uint32_t correlation_id = 0;
  uint64_t name_id = 0;  // StringIds: "cudaLaunchKernel_v7000"
  uint32_t return_value = 0;
};

struct MemcpyRow {  // CUPTI_ACTIVITY_KIND_MEMCPY (peer copies included)
  int64_t start = 0;
  int64_t end = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t global_pid = 0;
  uint64_t bytes = 0;
  int32_t copy_kind = 0;  // ENUM_CUDA_MEMCPY_OPER
  int32_t src_kind = 0;   // ENUM_CUDA_MEM_KIND (nsys numbering)
  int32_t dst_kind = 0;
  std::optional<uint32_t> src_device_id;  // peer copies only
  std::optional<uint32_t> src_context_id;
  std::optional<uint32_t> dst_device_id;
  std::optional<uint32_t> dst_context_id;
  std::optional<uint64_t> graph_node_id;
};

struct MemsetRow {  // CUPTI_ACTIVITY_KIND_MEMSET
  int64_t start = 0;
  int64_t end = 0;
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint64_t global_pid = 0;
  uint32_t value = 0;
  uint64_t bytes = 0;
  int32_t mem_kind = 0;  // ENUM_CUDA_MEM_KIND
  std::optional<uint64_t> graph_node_id;
};

struct SyncRow {  // CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
  int64_t start = 0;
  int64_t end = 0;
  std::optional<uint32_t> device_id;  // from the context's CONTEXT record, when seen
  uint32_t context_id = 0;
  uint32_t stream_id = 0;  // 4294967295 for context-wide syncs
  uint32_t correlation_id = 0;
  uint64_t global_pid = 0;
  int32_t sync_type = 0;  // ENUM_CUPTI_SYNC_TYPE
  uint32_t event_id = 0;  // 4294967295 when no event is involved
};

struct ExternalCorrelationRow {  // CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION (nvprof's columns)
  int32_t external_kind = 0;
  uint64_t external_id = 0;
  uint32_t correlation_id = 0;
};

struct GpuInfoRow {  // TARGET_INFO_GPU (one physical GPU) + TARGET_INFO_CUDA_DEVICE (its ordinal)
  uint32_t id = 0;   // CUDA device ordinal in this process (= kernel deviceId)
  std::string name;
  std::string uuid;               // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  uint64_t total_memory = 0;      // bytes
  uint64_t memory_bandwidth = 0;  // bytes/s
  uint64_t clock_rate = 0;        // Hz
  uint32_t sm_count = 0;
  uint32_t compute_major = 0;
  uint32_t compute_minor = 0;
  uint32_t l2_cache_size = 0;
  uint32_t threads_per_warp = 0;
  uint32_t max_warps_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t max_registers_per_sm = 0;
  uint32_t max_registers_per_block = 0;
  uint32_t max_shmem_per_sm = 0;
  uint32_t max_shmem_per_block = 0;
  uint32_t max_block_dim[3] = {0, 0, 0};
  uint32_t max_grid_dim[3] = {0, 0, 0};
  uint32_t memcpy_engines = 0;
  int64_t pid = 0;  // for TARGET_INFO_CUDA_DEVICE
};

// A CUDA graph node as CUPTI's resource callbacks announce it (PYPROF_CUDA_GRAPH_NODES,
// docs/formats.md §2.1): created on a thread (stream capture, cudaGraphAdd*Node), or cloned from
// another node when a graph is instantiated. Graph-launched kernels name the executable graph's
// node; following the clones back to the created node gives the thread and time it was made,
// and so the op that launched it at capture.
struct GraphNodeRow {
  uint64_t node_id = 0;
  std::optional<uint64_t> original_node_id;  // cloned from it; none: created
  uint32_t graph_id = 0;
  int64_t start = 0;  // collector clock
  uint64_t global_tid = 0;
};

// What one CUPTI buffer turned into. The collector queues it to the writer as one unit.
struct GpuBatch {
  std::vector<KernelRow> kernels;
  std::vector<ApiRow> api_calls;
  std::vector<MemcpyRow> memcpys;
  std::vector<MemsetRow> memsets;
  std::vector<SyncRow> syncs;
  std::vector<ExternalCorrelationRow> external_correlations;
  std::vector<GpuInfoRow> gpus;
  std::vector<GraphNodeRow> graph_nodes;

  size_t rows() const {
    return kernels.size() + api_calls.size() + memcpys.size() + memsets.size() + syncs.size() +
           external_correlations.size() + gpus.size() + graph_nodes.size();
  }
  // Memory held, for the collector's buffer limit.
  size_t bytes() const {
    return kernels.capacity() * sizeof(KernelRow) + api_calls.capacity() * sizeof(ApiRow) +
           memcpys.capacity() * sizeof(MemcpyRow) + memsets.capacity() * sizeof(MemsetRow) +
           syncs.capacity() * sizeof(SyncRow) +
           external_correlations.capacity() * sizeof(ExternalCorrelationRow) +
           gpus.capacity() * sizeof(GpuInfoRow) + graph_nodes.capacity() * sizeof(GraphNodeRow);
  }
};

}  // namespace pyprof::collect
