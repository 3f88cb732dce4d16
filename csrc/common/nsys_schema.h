// Shared vocabulary of the Nsight Systems SQLite layout that pyprof writes (collect) and reads
// (parse): NVTX event type numbering, ENUM_* rows, global thread/process id packing, the NVTX
// payload type numbering, the CUDA enums in nsys' numbering with their translation from CUPTI's,
// and table names. Header-only and dependency-free on purpose, so every stage can include it
// without pulling in NVTX, SQLite or CUDA.
//
// Facts: trace-formats.md §1.1, §1.3, §1.4, §7 (the shared format reference, kept outside the
// repository); what pyprof writes with them: docs/formats.md §2.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace pyprof::nsys {

// ---------------------------------------------------------------------------------------------
// NVTX_EVENTS.eventType (nsys' own numbering, REFERENCES ENUM_NSYS_EVENT_TYPE(id)).
// Exports hold the paired forms: one row per push/pop range (59) or start/end range (60),
// written when the range ends. 35-38 exist in the enum but nsys does not emit them as rows.
// 64-74 are the Nvtxt* types of events nsys imported from NVTXT text files; only their two range
// types are listed, because parse reads them as ranges (pyprof never writes any of them).
// ---------------------------------------------------------------------------------------------
enum class NvtxEventType : int32_t {
  kCategory = 33,            // nvtxNameCategory: category = id, text = name
  kMark = 34,                // nvtxMark: end is NULL
  kPushRange = 35,           // enum only
  kPopRange = 36,            // enum only
  kStartRange = 37,          // enum only
  kEndRange = 38,            // enum only
  kThread = 39,              // nvtxNameOsThread: text = name, globalTid = the named thread
  kPushPopRange = 59,        // nvtxRangePush/Pop pair
  kStartEndRange = 60,       // nvtxRangeStart/End pair (may end on another thread)
  kNvtxtPushPopRange = 70,   // a push/pop pair nsys imported from an NVTXT file
  kNvtxtStartEndRange = 71,  // a start/end pair nsys imported from an NVTXT file
  kDomainCreate = 75,        // text = domain name, domainId = the new domain
  kDomainDestroy = 76,       // domainId = the destroyed domain
};

constexpr int32_t to_int(NvtxEventType type) { return static_cast<int32_t>(type); }

// One row of an ENUM_* table: (id INTEGER PRIMARY KEY, name TEXT, label TEXT).
struct EnumRow {
  int32_t id;
  std::string_view name;
  std::string_view label;
};

// The NVTX rows of ENUM_NSYS_EVENT_TYPE exactly as nsys exports them (label == name in every
// observed export, 2023.1 to 2026.1).
inline constexpr std::array<EnumRow, 11> kNvtxEventTypeRows = {{
    {33, "NvtxCategory", "NvtxCategory"},
    {34, "NvtxMark", "NvtxMark"},
    {35, "NvtxPushRange", "NvtxPushRange"},
    {36, "NvtxPopRange", "NvtxPopRange"},
    {37, "NvtxStartRange", "NvtxStartRange"},
    {38, "NvtxEndRange", "NvtxEndRange"},
    {39, "NvtxThread", "NvtxThread"},
    {59, "NvtxPushPopRange", "NvtxPushPopRange"},
    {60, "NvtxStartEndRange", "NvtxStartEndRange"},
    {75, "NvtxDomainCreate", "NvtxDomainCreate"},
    {76, "NvtxDomainDestroy", "NvtxDomainDestroy"},
}};

// ---------------------------------------------------------------------------------------------
// Global ids. nsys serialises a thread as (hwId << 48) | (pid << 24) | tid and a process as the
// same value with tid bits 0. hwId was 1 in every observed export; pid and tid keep 24 bits.
// ---------------------------------------------------------------------------------------------
inline constexpr uint64_t kHardwareId = 1;
inline constexpr uint64_t kId24Mask = 0xFFFFFF;
// globalTid & kGlobalPidMask == globalPid (keeps hwId and pid bits).
inline constexpr uint64_t kGlobalPidMask = 0xFFFFFFFFFF000000ULL;

constexpr uint64_t global_tid(uint32_t pid, uint32_t tid) {
  return (kHardwareId << 48) | ((uint64_t{pid} & kId24Mask) << 24) | (uint64_t{tid} & kId24Mask);
}
constexpr uint64_t global_pid(uint32_t pid) { return global_tid(pid, 0); }

constexpr uint32_t pid_of_global_id(uint64_t global_id) {
  return static_cast<uint32_t>((global_id >> 24) & kId24Mask);
}
constexpr uint32_t tid_of_global_tid(uint64_t global_tid) {
  return static_cast<uint32_t>(global_tid & kId24Mask);
}
constexpr uint32_t hardware_id_of_global_id(uint64_t global_id) {
  return static_cast<uint32_t>(global_id >> 48);
}
constexpr uint64_t global_pid_of_global_tid(uint64_t global_tid) {
  return global_tid & kGlobalPidMask;
}

static_assert(global_tid(0x123456, 0x654321) == 0x0001123456654321ULL);
static_assert(global_pid(7) == (uint64_t{1} << 48 | uint64_t{7} << 24));
static_assert(pid_of_global_id(global_tid(4242, 17)) == 4242);
static_assert(tid_of_global_tid(global_tid(4242, 17)) == 17);
static_assert(global_pid_of_global_tid(global_tid(4242, 17)) == global_pid(4242));
static_assert(global_tid(0x1FFFFFF, 0x1000001) == global_tid(0xFFFFFF, 1));  // 24-bit masking

// ---------------------------------------------------------------------------------------------
// Scalar payloads. Numbering = nvtxPayloadType_t (nvToolsExt.h); each maps to one NVTX_EVENTS
// column. NVTX_PAYLOAD_TYPE_EXT (0xDFBD0009, payload extension) has no scalar column.
// ---------------------------------------------------------------------------------------------
enum class PayloadType : int32_t {
  kNone = 0,
  kUint64 = 1,
  kInt64 = 2,
  kDouble = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat = 6,
};

// NVTX_EVENTS column holding a payload of this type; empty for kNone/unknown.
constexpr std::string_view payload_column(PayloadType type) {
  switch (type) {
    case PayloadType::kUint64:
      return "uint64Value";
    case PayloadType::kInt64:
      return "int64Value";
    case PayloadType::kDouble:
      return "doubleValue";
    case PayloadType::kUint32:
      return "uint32Value";
    case PayloadType::kInt32:
      return "int32Value";
    case PayloadType::kFloat:
      return "floatValue";
    case PayloadType::kNone:
      break;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// CUDA enums in nsys' numbering (the ENUM_* rows below are copied from real exports; identical
// from 2023.1 to 2026.1). Two differ from raw CUPTI values and must be translated when CUPTI
// records are written: memory kinds (nsys = CUPTI - 1, CUPTI's 0 "unknown" becomes 7) and launch
// types (nsys = CUPTI + 1, 0 is "unknown"). Memcpy kinds, sync types, cache and shared-memory
// configs are the same numbers in both.
// ---------------------------------------------------------------------------------------------
inline constexpr int32_t kMemKindUnknown = 7;

// CUpti_ActivityMemoryKind -> ENUM_CUDA_MEM_KIND.
constexpr int32_t mem_kind_from_cupti(uint32_t cupti_kind) {
  return cupti_kind >= 1 && cupti_kind <= 7 ? static_cast<int32_t>(cupti_kind) - 1
                                            : kMemKindUnknown;
}
// CUpti_ActivityLaunchType -> ENUM_CUDA_KERNEL_LAUNCH_TYPE. CUPTI 3 (CBL command list) has no
// nsys value and becomes 0, unknown.
constexpr int32_t launch_type_from_cupti(uint32_t cupti_type) {
  return cupti_type <= 2 ? static_cast<int32_t>(cupti_type) + 1 : 0;
}
static_assert(mem_kind_from_cupti(1) == 0 && mem_kind_from_cupti(3) == 2);  // pageable, device
static_assert(mem_kind_from_cupti(0) == kMemKindUnknown && mem_kind_from_cupti(99) == 7);
static_assert(launch_type_from_cupti(0) == 1 && launch_type_from_cupti(3) == 0);

// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass.
inline constexpr int32_t kEventClassCudaRuntime = 0;
inline constexpr int32_t kEventClassCudaDriver = 1;

struct EnumTable {
  std::string_view name;
  const EnumRow* rows;
  size_t count;
};

inline constexpr EnumRow kCudaMemKindRows[] = {
    {0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"},
    {1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"},
    {2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"},
    {3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"},
    {4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"},
    {5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"},
    {6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"},
    {7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"},
};
inline constexpr EnumRow kCudaMemcpyOperRows[] = {
    {0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},
    {1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},
    {3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},
    {5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},
    {7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"},
    {9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"},
    {11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"},
    {12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"},
    {13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"},
};
inline constexpr EnumRow kCudaLaunchTypeRows[] = {
    {0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"},
    {1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"},
    {2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"},
    {3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"},
};
inline constexpr EnumRow kCuptiSyncTypeRows[] = {
    {0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"},
    {1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"},
    {2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"},
    {3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"},
    {4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"},
};
inline constexpr EnumRow kEventClassRows[] = {
    // the two classes pyprof writes
    {0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"},
    {1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"},
};
inline constexpr EnumRow kCudaFuncCacheConfigRows[] = {
    {0, "CU_FUNC_CACHE_PREFER_NONE", "None"},
    {1, "CU_FUNC_CACHE_PREFER_SHARED", "Shared"},
    {2, "CU_FUNC_CACHE_PREFER_L1", "L1"},
    {3, "CU_FUNC_CACHE_PREFER_EQUAL", "Equal"},
};
inline constexpr EnumRow kCudaSharedMemLimitRows[] = {
    {0, "CUDA_SHARED_MEM_LIMIT_DEFAULT", "Default"},
    {1, "CUDA_SHARED_MEM_LIMIT_OPTIN", "Opt in"},
};
// Every ENUM_* table besides ENUM_NSYS_EVENT_TYPE that a pyprof database carries.
inline constexpr EnumTable kCudaEnumTables[] = {
    {"ENUM_CUDA_MEM_KIND", kCudaMemKindRows, std::size(kCudaMemKindRows)},
    {"ENUM_CUDA_MEMCPY_OPER", kCudaMemcpyOperRows, std::size(kCudaMemcpyOperRows)},
    {"ENUM_CUDA_KERNEL_LAUNCH_TYPE", kCudaLaunchTypeRows, std::size(kCudaLaunchTypeRows)},
    {"ENUM_CUPTI_SYNC_TYPE", kCuptiSyncTypeRows, std::size(kCuptiSyncTypeRows)},
    {"ENUM_NSYS_EVENT_CLASS", kEventClassRows, std::size(kEventClassRows)},
    {"ENUM_CUDA_FUNC_CACHE_CONFIG", kCudaFuncCacheConfigRows, std::size(kCudaFuncCacheConfigRows)},
    {"ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG", kCudaSharedMemLimitRows,
     std::size(kCudaSharedMemLimitRows)},
};

// ---------------------------------------------------------------------------------------------
// Table names written by pyprof's collector (nsys names, plus our own extension table).
// ---------------------------------------------------------------------------------------------
inline constexpr std::string_view kStringIdsTable = "StringIds";
inline constexpr std::string_view kNvtxEventsTable = "NVTX_EVENTS";
inline constexpr std::string_view kThreadNamesTable = "ThreadNames";
inline constexpr std::string_view kProcessesTable = "PROCESSES";
inline constexpr std::string_view kSessionStartTable = "TARGET_INFO_SESSION_START_TIME";
inline constexpr std::string_view kMetaDataExportTable = "META_DATA_EXPORT";
inline constexpr std::string_view kMetaDataCaptureTable = "META_DATA_CAPTURE";
inline constexpr std::string_view kEventTypeEnumTable = "ENUM_NSYS_EVENT_TYPE";
inline constexpr std::string_view kCollectorStatsTable = "PYPROF_COLLECTOR_STATS";  // not nsys
inline constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
inline constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
inline constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
inline constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
inline constexpr std::string_view kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
// nvprof's name and columns; nsys has no table for external correlation records.
inline constexpr std::string_view kExternalCorrelationTable =
    "CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION";
inline constexpr std::string_view kGpuInfoTable = "TARGET_INFO_GPU";
inline constexpr std::string_view kCudaDeviceTable = "TARGET_INFO_CUDA_DEVICE";

// META_DATA_CAPTURE row saying whether CUDA activity was recorded, and if not, why.
inline constexpr std::string_view kCudaTraceMetadata = "PYPROF_CUDA_TRACE";

// META_DATA_EXPORT values identifying a database written by pyprof (never pretend to be nsys).
inline constexpr std::string_view kPyprofProductName = "pyprof";
inline constexpr std::string_view kPyprofSchemaVersion = "1";

}  // namespace pyprof::nsys
