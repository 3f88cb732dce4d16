#include "gpu_activity.h"

#include <cstdio>

#include "common/kernel_names.h"
#include "common/nsys_schema.h"
#include "cupti12_records.h"

namespace pyprof::collect {

// The record types a CUDA 13 libcupti writes, from the CUDA 13 headers the collector is built
// with (a newer 13.x appends to them).
struct Cupti13Records {
  using Kernel = CUpti_ActivityKernel10;
  using Api = CUpti_ActivityAPI;
  using Memcpy = CUpti_ActivityMemcpy6;
  using MemcpyPeer = CUpti_ActivityMemcpyPtoP4;
  using Memset = CUpti_ActivityMemset4;
  using Synchronization = CUpti_ActivitySynchronization2;
  using ExternalCorrelation = CUpti_ActivityExternalCorrelation;
  using Device = CUpti_ActivityDevice5;
  using Context = CUpti_ActivityContext3;
};

namespace {

std::optional<uint64_t> nonzero(uint64_t value) {
  return value != 0 ? std::optional<uint64_t>(value) : std::nullopt;
}
std::optional<uint32_t> nonzero32(uint32_t value) {
  return value != 0 ? std::optional<uint32_t>(value) : std::nullopt;
}

// Relative times of a timed record; false (and counted) when it is untimed or outside.
bool place(uint64_t start, uint64_t end, const ConversionWindow& window,
           ConversionCounters& counters, int64_t* rel_start, int64_t* rel_end,
           bool on_device = false) {
  if (start == 0 && end == 0) {
    ++counters.no_timestamp;
    return false;
  }
  *rel_start = static_cast<int64_t>(start) - window.session_start_ns;
  *rel_end = static_cast<int64_t>(end) - window.session_start_ns;
  if (on_device ? !window.contains_device(*rel_start, *rel_end)
                : !window.contains(*rel_start, *rel_end)) {
    ++counters.outside_window;
    return false;
  }
  return true;
}

// The fields kernel, copy and memset rows share; CUPTI names them alike in every record.
template <typename Row, typename Record>
Row& place_row(std::vector<Row>& rows, const Record& r, int64_t start, int64_t end,
               uint64_t global_pid) {
  Row& row = rows.emplace_back();
  row.start = start;
  row.end = end;
  row.device_id = r.deviceId;
  row.context_id = r.contextId;
  row.stream_id = r.streamId;
  row.correlation_id = r.correlationId;
  row.global_pid = global_pid;
  return row;
}

// Memcpy and MemcpyPtoP (peer copies) share everything but the peer ids.
template <typename Record>
MemcpyRow& copy_row(GpuBatch& batch, const Record& m, int64_t start, int64_t end,
                    uint64_t global_pid) {
  MemcpyRow& row = place_row(batch.memcpys, m, start, end, global_pid);
  row.bytes = m.bytes;
  row.copy_kind = m.copyKind;  // CUpti_ActivityMemcpyKind 0-10 = ENUM_CUDA_MEMCPY_OPER 0-10
  row.src_kind = nsys::mem_kind_from_cupti(m.srcKind);
  row.dst_kind = nsys::mem_kind_from_cupti(m.dstKind);
  row.graph_node_id = nonzero(m.graphNodeId);
  return row;
}

}  // namespace

std::string format_uuid(const char (&bytes)[16]) {
  char text[40];
  const auto* b = reinterpret_cast<const unsigned char*>(bytes);
  std::snprintf(text, sizeof(text),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return text;
}

const ActivityConverter::KernelNames& ActivityConverter::kernel_names(const char* mangled) {
  const std::string key = mangled != nullptr ? mangled : "";
  auto found = kernel_names_.find(key);
  if (found != kernel_names_.end()) return found->second;
  // nsys stores the demangled signature, the bare function name and the raw symbol.
  const std::string demangled = key.empty() ? "<unknown kernel>" : demangle(key);
  KernelNames names;
  names.demangled = strings_.intern(demangled);
  names.short_name = strings_.intern(short_kernel_name(demangled));
  names.mangled = strings_.intern(key.empty() ? demangled : key);
  return kernel_names_.emplace(key, names).first->second;
}

uint64_t ActivityConverter::api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  const uint64_t key = (uint64_t{static_cast<uint32_t>(domain)} << 32) | cbid;
  auto found = api_names_.find(key);
  if (found != api_names_.end()) return found->second;
  const char* name = callback_name_ ? callback_name_(domain, cbid) : nullptr;
  std::string text;
  if (name != nullptr && *name != '\0') {
    text = name;
  } else {  // keep the row: its correlation id still ties a kernel to its thread
    text = (domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuda_driver_cbid_" : "cuda_runtime_cbid_") +
           std::to_string(cbid);
  }
  const uint64_t id = strings_.intern(text);
  api_names_.emplace(key, id);
  return id;
}

std::optional<uint32_t> ActivityConverter::device_of_context(uint32_t context_id) {
  auto found = context_devices_.find(context_id);
  if (found == context_devices_.end()) return std::nullopt;
  return found->second;
}

void ActivityConverter::convert(const CUpti_Activity& record, const ConversionWindow& window,
                                GpuBatch& batch, ConversionCounters& counters) {
  if (layout_ == CuptiLayout::kCuda12) {
    convert_as<Cupti12Records>(record, window, batch, counters);
  } else {
    convert_as<Cupti13Records>(record, window, batch, counters);
  }
}

template <class Records>
void ActivityConverter::convert_as(const CUpti_Activity& record, const ConversionWindow& window,
                                   GpuBatch& batch, ConversionCounters& counters) {
  ++counters.records;
  const uint64_t global_pid = nsys::global_pid(pid_);
  int64_t start = 0;
  int64_t end = 0;
  std::lock_guard lock(mutex_);
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const typename Records::Kernel&>(record);
      if (!place(k.start, k.end, window, counters, &start, &end, true)) return;
      const KernelNames& names = kernel_names(k.name);
      KernelRow& row = place_row(batch.kernels, k, start, end, global_pid);
      row.demangled_name = names.demangled;
      row.short_name = names.short_name;
      row.mangled_name = names.mangled;
      row.launch_type = nsys::launch_type_from_cupti(k.launchType);
      row.cache_config = k.cacheConfig.config.requested;
      row.registers_per_thread = k.registersPerThread;
      row.grid[0] = k.gridX;
      row.grid[1] = k.gridY;
      row.grid[2] = k.gridZ;
      row.block[0] = k.blockX;
      row.block[1] = k.blockY;
      row.block[2] = k.blockZ;
      row.static_shared_memory = k.staticSharedMemory;
      row.dynamic_shared_memory = k.dynamicSharedMemory;
      row.local_memory_per_thread = k.localMemoryPerThread;
      // localMemoryTotal is a 32-bit field that overflows on big GPUs; _v2 replaces it.
      row.local_memory_total =
          k.localMemoryTotal_v2 != 0 ? k.localMemoryTotal_v2 : uint64_t{k.localMemoryTotal};
      row.grid_id = k.gridId;
      row.shared_memory_executed = k.sharedMemoryExecuted;
      row.graph_node_id = nonzero(k.graphNodeId);
      row.graph_id = nonzero32(k.graphId);
      row.shared_memory_limit_config = static_cast<int32_t>(k.shmemLimitConfig);
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = reinterpret_cast<const typename Records::Api&>(record);
      if (!place(a.start, a.end, window, counters, &start, &end)) return;
      const bool driver = record.kind == CUPTI_ACTIVITY_KIND_DRIVER;
      ApiRow& row = batch.api_calls.emplace_back();
      row.start = start;
      row.end = end;
      row.event_class = driver ? nsys::kEventClassCudaDriver : nsys::kEventClassCudaRuntime;
      row.global_tid = nsys::global_tid(a.processId, a.threadId);
      row.correlation_id = a.correlationId;
      row.name_id =
          api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a.cbid);
      row.return_value = a.returnValue;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const typename Records::Memcpy&>(record);
      if (!place(m.start, m.end, window, counters, &start, &end, true)) return;
      copy_row(batch, m, start, end, global_pid);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {  // peer-to-peer
      const auto& m = reinterpret_cast<const typename Records::MemcpyPeer&>(record);
      if (!place(m.start, m.end, window, counters, &start, &end, true)) return;
      MemcpyRow& row = copy_row(batch, m, start, end, global_pid);
      row.src_device_id = m.srcDeviceId;
      row.src_context_id = m.srcContextId;
      row.dst_device_id = m.dstDeviceId;
      row.dst_context_id = m.dstContextId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const typename Records::Memset&>(record);
      if (!place(m.start, m.end, window, counters, &start, &end, true)) return;
      MemsetRow& row = place_row(batch.memsets, m, start, end, global_pid);
      row.value = m.value;
      row.bytes = m.bytes;
      row.mem_kind = nsys::mem_kind_from_cupti(m.memoryKind);
      row.graph_node_id = nonzero(m.graphNodeId);
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& y = reinterpret_cast<const typename Records::Synchronization&>(record);
      if (!place(y.start, y.end, window, counters, &start, &end)) return;
      SyncRow& row = batch.syncs.emplace_back();
      row.start = start;
      row.end = end;
      row.device_id = device_of_context(y.contextId);
      row.context_id = y.contextId;
      row.stream_id = y.streamId;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE as nsys stores it
      row.correlation_id = y.correlationId;
      row.global_pid = global_pid;
      row.sync_type = static_cast<int32_t>(y.type);
      row.event_id = y.cudaEventId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const typename Records::ExternalCorrelation&>(record);
      batch.external_correlations.push_back(
          {static_cast<int32_t>(e.externalKind), e.externalId, e.correlationId});
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {  // device facts: never windowed
      const auto& d = reinterpret_cast<const typename Records::Device&>(record);
      GpuInfoRow& row = batch.gpus.emplace_back();
      row.id = d.id;
      row.name = d.name != nullptr ? d.name : "";
      row.uuid = format_uuid(d.uuid.bytes);
      row.total_memory = d.globalMemorySize;
      row.memory_bandwidth = d.globalMemoryBandwidth * 1000;  // KB/s -> B/s
      row.clock_rate = uint64_t{d.coreClockRate} * 1000;      // kHz -> Hz
      row.sm_count = d.numMultiprocessors;
      row.compute_major = d.computeCapabilityMajor;
      row.compute_minor = d.computeCapabilityMinor;
      row.l2_cache_size = d.l2CacheSize;
      row.threads_per_warp = d.numThreadsPerWarp;
      row.max_warps_per_sm = d.maxWarpsPerMultiprocessor;
      row.max_blocks_per_sm = d.maxBlocksPerMultiprocessor;
      row.max_threads_per_block = d.maxThreadsPerBlock;
      row.max_registers_per_sm = d.maxRegistersPerMultiprocessor;
      row.max_registers_per_block = d.maxRegistersPerBlock;
      row.max_shmem_per_sm = d.maxSharedMemoryPerMultiprocessor;
      row.max_shmem_per_block = d.maxSharedMemoryPerBlock;
      row.max_block_dim[0] = d.maxBlockDimX;
      row.max_block_dim[1] = d.maxBlockDimY;
      row.max_block_dim[2] = d.maxBlockDimZ;
      row.max_grid_dim[0] = d.maxGridDimX;
      row.max_grid_dim[1] = d.maxGridDimY;
      row.max_grid_dim[2] = d.maxGridDimZ;
      row.memcpy_engines = d.numMemcpyEngines;
      row.pid = pid_;
      return;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {  // only to give synchronization rows their device
      const auto& c = reinterpret_cast<const typename Records::Context&>(record);
      context_devices_[c.contextId] = c.deviceId;
      return;
    }
    default:
      ++counters.ignored;
      return;
  }
}

}  // namespace pyprof::collect
