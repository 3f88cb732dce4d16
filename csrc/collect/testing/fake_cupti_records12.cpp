// The records of a CUDA 12 libcupti (fake_cupti_records.h), laid out by a CUDA 12 release's
// CUPTI headers (PYPROF_CUPTI12_INCLUDE_DIR; 12.9's define every record version 12.0-12.9
// wrote). Which version a release writes for a kind is what its cupti_activity.h names for it:
// checked in the headers of every nvidia-cuda-cupti-cu12 wheel from 12.0.146 to 12.9.79.
#include <cupti.h>

#include "fake_cupti_fill.h"

static_assert(CUPTI_API_VERSION >= 26 && CUPTI_API_VERSION < 130000,
              "the CUDA 12 fake records need the headers of CUDA 12.8 or a later 12.x, which "
              "define every record version a 12.x release writes");

namespace fake_cupti::records::cuda12 {
namespace {

// The CUPTI API versions at which a kind's record changed within CUDA 12.
constexpr uint32_t kDevice5 = 20;          // 12.2
constexpr uint32_t kContext2 = 22;         // 12.4
constexpr uint32_t kContext3 = 23;         // 12.5
constexpr uint32_t kMemcpy6AndSync2 = 26;  // 12.8

}  // namespace

void write_kernel(const KernelFacts& facts, Record* out) {
  fill_kernel<CUpti_ActivityKernel9>(facts, out);
}
void write_api(const ApiFacts& facts, Record* out) { fill_api<CUpti_ActivityAPI>(facts, out); }
void write_memcpy(uint32_t version, const CopyFacts& facts, Record* out) {
  version >= kMemcpy6AndSync2 ? fill_memcpy<CUpti_ActivityMemcpy6>(facts, out)
                              : fill_memcpy<CUpti_ActivityMemcpy5>(facts, out);
}
void write_peer_copy(const CopyFacts& facts, Record* out) {
  fill_peer_copy<CUpti_ActivityMemcpyPtoP4>(facts, out);
}
void write_memset(const MemsetFacts& facts, Record* out) {
  fill_memset<CUpti_ActivityMemset4>(facts, out);
}
void write_sync(uint32_t version, const SyncFacts& facts, Record* out) {
  version >= kMemcpy6AndSync2 ? fill_sync<CUpti_ActivitySynchronization2>(facts, out)
                              : fill_sync<CUpti_ActivitySynchronization>(facts, out);
}
void write_external_correlation(const ExternalCorrelationFacts& facts, Record* out) {
  fill_external_correlation<CUpti_ActivityExternalCorrelation>(facts, out);
}
void write_device(uint32_t version, const DeviceFacts& facts, Record* out) {
  version >= kDevice5 ? fill_device<CUpti_ActivityDevice5>(facts, out)
                      : fill_device<CUpti_ActivityDevice4>(facts, out);
}
void write_context(uint32_t version, const ContextFacts& facts, Record* out) {
  if (version >= kContext3) return fill_context<CUpti_ActivityContext3>(facts, out);
  if (version >= kContext2) return fill_context<CUpti_ActivityContext2>(facts, out);
  fill_context<CUpti_ActivityContext>(facts, out);
}

size_t record_size(uint32_t version, uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel9);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return version >= kMemcpy6AndSync2 ? sizeof(CUpti_ActivityMemcpy6)
                                         : sizeof(CUpti_ActivityMemcpy5);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return version >= kMemcpy6AndSync2 ? sizeof(CUpti_ActivitySynchronization2)
                                         : sizeof(CUpti_ActivitySynchronization);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return version >= kDevice5 ? sizeof(CUpti_ActivityDevice5) : sizeof(CUpti_ActivityDevice4);
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return version >= kContext3   ? sizeof(CUpti_ActivityContext3)
             : version >= kContext2 ? sizeof(CUpti_ActivityContext2)
                                    : sizeof(CUpti_ActivityContext);
    default:
      return 0;
  }
}

}  // namespace fake_cupti::records::cuda12
