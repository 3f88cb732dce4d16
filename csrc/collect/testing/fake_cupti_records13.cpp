// The records of a CUDA 13 libcupti (fake_cupti_records.h), laid out by the CUDA 13 headers the
// collector is built with.
#include <cupti.h>

#include "fake_cupti_fill.h"

namespace fake_cupti::records::cuda13 {

void write_kernel(const KernelFacts& facts, Record* out) {
  fill_kernel<CUpti_ActivityKernel10>(facts, out);
}
void write_api(const ApiFacts& facts, Record* out) { fill_api<CUpti_ActivityAPI>(facts, out); }
void write_memcpy(const CopyFacts& facts, Record* out) {
  fill_memcpy<CUpti_ActivityMemcpy6>(facts, out);
}
void write_peer_copy(const CopyFacts& facts, Record* out) {
  fill_peer_copy<CUpti_ActivityMemcpyPtoP4>(facts, out);
}
void write_memset(const MemsetFacts& facts, Record* out) {
  fill_memset<CUpti_ActivityMemset4>(facts, out);
}
void write_sync(const SyncFacts& facts, Record* out) {
  fill_sync<CUpti_ActivitySynchronization2>(facts, out);
}
void write_external_correlation(const ExternalCorrelationFacts& facts, Record* out) {
  fill_external_correlation<CUpti_ActivityExternalCorrelation>(facts, out);
}
void write_device(const DeviceFacts& facts, Record* out) {
  fill_device<CUpti_ActivityDevice5>(facts, out);
}
void write_context(const ContextFacts& facts, Record* out) {
  fill_context<CUpti_ActivityContext3>(facts, out);
}

size_t record_size(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      return sizeof(CUpti_ActivityContext3);
    default:
      return 0;
  }
}

}  // namespace fake_cupti::records::cuda13
