// The CUPTI functions the collector calls, resolved at run time from a dlopen'ed libcupti.
//
// Nothing links against CUDA: libpyprof_collect.so must load (and record NVTX) on machines
// without a GPU or a CUDA toolkit. The CUDA 13.0 headers only give the signatures and record
// layouts; load_cupti() refuses a libcupti older than those headers, because its records would
// be laid out differently (a newer one only appends fields, which we do not read).
#pragma once

#include <cupti.h>

#include <optional>
#include <string>

namespace pyprof::collect {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;      // the file dlopen() resolved, for messages and metadata
  uint32_t version = 0;  // cuptiGetVersion()

  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiSubscribe_v2) Subscribe_v2 = nullptr;  // optional (13.0+)
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
  decltype(&cuptiActivityEnableRuntimeApi) ActivityEnableRuntimeApi = nullptr;  // optional
  decltype(&cuptiActivityEnableDriverApi) ActivityEnableDriverApi = nullptr;    // optional
  decltype(&cuptiGetGraphNodeId) GetGraphNodeId = nullptr;                      // optional
  decltype(&cuptiGetGraphId) GetGraphId = nullptr;                              // optional

  // "CUPTI_ERROR_..." for a result code (never null).
  const char* result_name(CUptiResult result) const;
};

// Loads libcupti: `explicit_path` when given (PYPROF_CUPTI_LIBRARY), else the first of
// libcupti.so.13 by soname (already loaded by torch, LD_LIBRARY_PATH, ld.so.cache), next to a
// loaded libcudart (pip's nvidia/cu13/lib), and the CUDA toolkit under $CUDA_HOME, $CUDA_PATH
// and /usr/local/cuda. Returns nullopt and one sentence in *error when none is usable.
std::optional<CuptiApi> load_cupti(const std::optional<std::string>& explicit_path,
                                   std::string* error);

}  // namespace pyprof::collect
