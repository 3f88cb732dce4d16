// CUPTI activity records -> rows of the Nsight Systems GPU tables (db_rows.h GpuBatch).
//
// Pure conversion, kept apart from CUPTI's lifecycle (cupti_tracer) so tests can feed it records
// built from the CUDA 13 header structs. Records are read in the layout of the libcupti that
// wrote them (cupti_layout.h): CUDA 13's header structs, or CUDA 12's (cupti12_records.h), one
// conversion written once for both. What it takes care of:
//   * times: CUPTI reports the collector's clock (a timestamp callback is registered), rows are
//     ns since the session start, and records outside the capture window are counted, not kept;
//   * ids: globalTid/globalPid packed as nsys does, from CUPTI's OS process and thread ids;
//   * enums: memory kinds and launch types renumbered CUPTI -> nsys (common/nsys_schema.h);
//   * strings: kernel names (mangled, demangled, short) and API names interned into StringIds,
//     copied out of CUPTI's buffers, which are reused once the callback returns.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cupti_layout.h"
#include "db_rows.h"
#include "registries.h"

namespace pyprof::collect {

struct ConversionWindow {
  int64_t session_start_ns = 0;  // subtracted from every CUPTI timestamp
  int64_t begin = INT64_MIN;     // keep records with start < end_ && end >= begin (relative ns)
  int64_t end = INT64_MAX;
  // The same for what ran on the device (kernels, copies, memsets). Under --capture-range
  // cudaProfilerApi this is only the --delay/--duration window: the range itself is kept by
  // turning the device kinds on at cudaProfilerStart and off at cudaProfilerStop, which is by
  // launch time. A kernel launched just before the stop runs after it; its device times would
  // put it outside a window of API-call times.
  int64_t device_begin = INT64_MIN;
  int64_t device_end = INT64_MAX;
  bool contains(int64_t start, int64_t stop) const { return start < end && stop >= begin; }
  bool contains_device(int64_t start, int64_t stop) const {
    return start < device_end && stop >= device_begin;
  }
};

struct ConversionCounters {
  uint64_t records = 0;         // every record seen
  uint64_t no_timestamp = 0;    // start = end = 0 (CUPTI could not time it)
  uint64_t outside_window = 0;  // timed, but outside the window
  uint64_t ignored = 0;         // kinds with no table (e.g. CUDA_EVENT, OVERHEAD)
};

class ActivityConverter {
 public:
  // "cudaLaunchKernel_v7000" for (domain, cbid), or null if unknown.
  using CallbackNameFn = std::function<const char*(CUpti_CallbackDomain, uint32_t)>;

  // `layout`: how the libcupti whose buffers this reads lays its records out.
  ActivityConverter(StringTable& strings, CallbackNameFn callback_name, uint32_t pid,
                    CuptiLayout layout)
      : strings_(strings), callback_name_(std::move(callback_name)), pid_(pid), layout_(layout) {}

  // Appends the row(s) `record` stands for to `batch`, or counts why there are none. Safe to
  // call from several threads (CUPTI may complete buffers on its own thread and in a flush).
  void convert(const CUpti_Activity& record, const ConversionWindow& window, GpuBatch& batch,
               ConversionCounters& counters);

 private:
  struct KernelNames {
    uint64_t demangled = 0;
    uint64_t short_name = 0;
    uint64_t mangled = 0;
  };
  // convert() for the record structs of one layout (Cupti12Records, Cupti13Records).
  template <class Records>
  void convert_as(const CUpti_Activity& record, const ConversionWindow& window, GpuBatch& batch,
                  ConversionCounters& counters);
  const KernelNames& kernel_names(const char* mangled);
  uint64_t api_name(CUpti_CallbackDomain domain, uint32_t cbid);
  std::optional<uint32_t> device_of_context(uint32_t context_id);

  StringTable& strings_;
  CallbackNameFn callback_name_;
  uint32_t pid_;
  CuptiLayout layout_;
  std::mutex mutex_;  // guards the three caches
  std::unordered_map<std::string, KernelNames> kernel_names_;
  std::unordered_map<uint64_t, uint64_t> api_names_;        // (domain << 32 | cbid) -> id
  std::unordered_map<uint32_t, uint32_t> context_devices_;  // from CONTEXT records
};

// "9f8075aa-e02a-0953-1955-32f638fb2993", the form nsys stores in TARGET_INFO_GPU.uuid, from
// the 16 bytes of a CUuuid.
std::string format_uuid(const char (&bytes)[16]);

}  // namespace pyprof::collect
