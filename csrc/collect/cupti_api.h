// The CUPTI functions the collector calls, resolved at run time from a dlopen'ed libcupti.
//
// Nothing links against CUDA: libpyprof_collect.so must load (and record NVTX) on machines
// without a GPU or a CUDA toolkit. The CUDA 13 headers give the signatures, which CUDA 12's
// libcupti shares (cupti_abi_checks.h); the record layout is the loaded library's own, told
// from its cuptiGetVersion() (cupti_layout.h).
//
// Which libcupti: the one that matches the program's CUDA runtime (cupti_search.h). One that
// cannot serve (CUDA 11's, one older than the program's runtime, one newer than the driver) is
// refused with a sentence saying what was found and what to install.
#pragma once

#include <cupti.h>

#include <optional>
#include <string>

#include "cupti_layout.h"

namespace pyprof::collect {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;      // the file dlopen() resolved, for messages and metadata
  uint32_t version = 0;  // cuptiGetVersion()
  CuptiLayout layout = CuptiLayout::kCuda13;
  int driver_version = 0;  // cuDriverGetVersion() (12040: CUDA 12.4); 0 when unknown

  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) Subscribe_v2 = nullptr;  // CUDA 13 only: null for CUDA 12
  decltype(&cuptiUnsubscribe) Unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) EnableCallback = nullptr;
  decltype(&cuptiGetCallbackName) GetCallbackName = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback = nullptr;
  decltype(&cuptiSetThreadIdType) SetThreadIdType = nullptr;
  decltype(&cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&cuptiActivityDisable) ActivityDisable = nullptr;
  decltype(&cuptiActivityFlushAll) ActivityFlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) ActivityGetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords = nullptr;
  decltype(&cuptiGetGraphNodeId) GetGraphNodeId = nullptr;  // optional
  decltype(&cuptiGetGraphId) GetGraphId = nullptr;          // optional

  // "CUPTI_ERROR_..." for a result code (never null).
  const char* result_name(CUptiResult result) const;
  // "CUPTI API version 28, CUDA 12.9 (/path/libcupti.so.12)", for the status and messages.
  std::string describe() const;
};

// Loads libcupti: `explicit_path` when given (PYPROF_CUPTI_LIBRARY), else the one that matches
// the program's CUDA runtime (cupti_search.h). Returns nullopt and one sentence in *error, which
// names what was found and what to install, when none can serve.
std::optional<CuptiApi> load_cupti(const std::optional<std::string>& explicit_path,
                                   std::string* error);

}  // namespace pyprof::collect
