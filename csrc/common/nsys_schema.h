// Shared vocabulary of the Nsight Systems SQLite layout that pyprof writes (collect) and reads
// (parse, prof): NVTX event type numbering, ENUM_NSYS_EVENT_TYPE rows, global thread/process id
// packing and the NVTX payload type numbering. Header-only and dependency-free on purpose, so
// every stage can include it without pulling in NVTX, SQLite or CUDA.
//
// Facts: /work/shared/reference/trace-formats.md §1.1, §1.3, §1.4, §7.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace pyprof::nsys {

// ---------------------------------------------------------------------------------------------
// NVTX_EVENTS.eventType (nsys' own numbering, REFERENCES ENUM_NSYS_EVENT_TYPE(id)).
// Exports hold the paired forms: one row per push/pop range (59) or start/end range (60),
// written when the range ends. 35-38 exist in the enum but nsys does not emit them as rows.
// ---------------------------------------------------------------------------------------------
enum class NvtxEventType : int32_t {
  kCategory = 33,       // nvtxNameCategory: category = id, text = name
  kMark = 34,           // nvtxMark: end is NULL
  kPushRange = 35,      // enum only
  kPopRange = 36,       // enum only
  kStartRange = 37,     // enum only
  kEndRange = 38,       // enum only
  kThread = 39,         // nvtxNameOsThread: text = name, globalTid = the named thread
  kPushPopRange = 59,   // nvtxRangePush/Pop pair
  kStartEndRange = 60,  // nvtxRangeStart/End pair (may end on another thread)
  kDomainCreate = 75,   // text = domain name, domainId = the new domain
  kDomainDestroy = 76,  // domainId = the destroyed domain
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

// META_DATA_EXPORT values identifying a database written by pyprof (never pretend to be nsys).
inline constexpr std::string_view kPyprofProductName = "pyprof";
inline constexpr std::string_view kPyprofSchemaVersion = "1";

}  // namespace pyprof::nsys
