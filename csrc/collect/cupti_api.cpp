#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "common/env_vars.h"
#include "cupti_search.h"

namespace pyprof::collect {
namespace {

template <typename F>
bool resolve(void* handle, const char* name, F& function, bool required, std::string* missing) {
  function = reinterpret_cast<F>(dlsym(handle, name));
  if (function == nullptr && required) {
    if (!missing->empty()) missing->append(", ");
    missing->append(name);
  }
  return function != nullptr || !required;
}

bool resolve_all(CuptiApi& api, std::string* missing) {
  void* h = api.handle;
  bool ok = true;
  ok &= resolve(h, "cuptiGetVersion", api.GetVersion, true, missing);
  ok &= resolve(h, "cuptiGetResultString", api.GetResultString, true, missing);
  ok &= resolve(h, "cuptiSubscribe", api.Subscribe, true, missing);
  ok &= resolve(h, "cuptiUnsubscribe", api.Unsubscribe, true, missing);
  ok &= resolve(h, "cuptiEnableCallback", api.EnableCallback, true, missing);
  ok &= resolve(h, "cuptiGetCallbackName", api.GetCallbackName, true, missing);
  ok &= resolve(h, "cuptiActivityRegisterCallbacks", api.ActivityRegisterCallbacks, true, missing);
  ok &= resolve(h, "cuptiActivityRegisterTimestampCallback", api.ActivityRegisterTimestampCallback,
                true, missing);
  ok &= resolve(h, "cuptiSetThreadIdType", api.SetThreadIdType, true, missing);
  ok &= resolve(h, "cuptiActivityEnable", api.ActivityEnable, true, missing);
  ok &= resolve(h, "cuptiActivityDisable", api.ActivityDisable, true, missing);
  ok &= resolve(h, "cuptiActivityFlushAll", api.ActivityFlushAll, true, missing);
  ok &= resolve(h, "cuptiActivityGetNextRecord", api.ActivityGetNextRecord, true, missing);
  ok &= resolve(h, "cuptiActivityGetNumDroppedRecords", api.ActivityGetNumDroppedRecords, true,
                missing);
  ok &= resolve(h, "cuptiGetGraphNodeId", api.GetGraphNodeId, false, missing);
  ok &= resolve(h, "cuptiGetGraphId", api.GetGraphId, false, missing);
  return ok;
}

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      *map->l_name != '\0') {
    return map->l_name;
  }
  return fallback;
}

// "CUDA 12.4" for 12040.
std::string cuda_of_driver(int driver_version) {
  return "CUDA " + std::to_string(driver_version / 1000) + "." +
         std::to_string(driver_version % 1000 / 10);
}

// What to install for a program whose CUDA runtime is `major`.
std::string what_to_install(int major) {
  if (major == 12) {
    return "install the libcupti of the program's CUDA 12 (pip install nvidia-cuda-cupti-cu12, "
           "which torch's CUDA 12 builds depend on, or a CUDA 12 toolkit)";
  }
  if (major >= 13) {
    return "install the libcupti of the program's CUDA " + std::to_string(major) +
           " (pip install nvidia-cuda-cupti, which torch's CUDA " + std::to_string(major) +
           " builds depend on, or a CUDA " + std::to_string(major) + " toolkit)";
  }
  return "install the libcupti of the program's CUDA (pip's nvidia-cuda-cupti-cu12 or "
         "nvidia-cuda-cupti, or a CUDA toolkit)";
}

// Why `api`, just loaded, cannot serve this process; empty when it can. Sets api.layout.
std::string refusal(CuptiApi& api, const ProcessCuda& process) {
  const std::string found = api.path + " (CUPTI API version " + std::to_string(api.version) + ", " +
                            cuda_release_of_api_version(api.version) + ")";
  const std::optional<CuptiLayout> layout = layout_for_api_version(api.version);
  const bool cuda11_file = soname_major(api.path, "libcupti") == 11;
  if (!layout || cuda11_file) {
    return found + " is CUDA 11's or older; pyprof reads the records of CUDA 12 and 13 " +
           "(docs/install.md): run a torch built for CUDA 12 or 13";
  }
  api.layout = *layout;
  const int cupti_major = cuda_major_of_api_version(api.version);
  if (process.runtime_major > cupti_major) {
    return found + " is older than the program's CUDA " + std::to_string(process.runtime_major) +
           " runtime (" + process.cudart + "); " + what_to_install(process.runtime_major) +
           ", or name it in " + env::kCuptiLibrary;
  }
  if (const int driver_major = process.driver_version / 1000;
      driver_major > 0 && cupti_major > driver_major) {
    return found + " needs a driver for CUDA " + std::to_string(cupti_major) +
           ", and this driver runs " + cuda_of_driver(process.driver_version) + ": " +
           (driver_major >= 12 ? what_to_install(driver_major) + ", or update the NVIDIA driver"
                               : std::string("update the NVIDIA driver (CUDA 12 needs r525 or "
                                             "newer, CUDA 13 r580 or newer)"));
  }
  return {};
}

}  // namespace

const char* CuptiApi::result_name(CUptiResult result) const {
  const char* name = nullptr;
  if (GetResultString == nullptr || GetResultString(result, &name) != CUPTI_SUCCESS || !name) {
    return "CUPTI error";
  }
  return name;
}

std::string CuptiApi::describe() const {
  return "CUPTI API version " + std::to_string(version) + ", " +
         cuda_release_of_api_version(version) + " (" + path + ")";
}

std::optional<CuptiApi> load_cupti(const std::optional<std::string>& explicit_path,
                                   std::string* error) {
  error->clear();
  const ProcessCuda process = inspect_process_cuda();
  if (!explicit_path && process.runtime_major > 0 && process.runtime_major < 12) {
    *error = "this program runs CUDA " + std::to_string(process.runtime_major) + " (" +
             process.cudart +
             "); pyprof records CUDA kernels with CUDA 12 and 13 only "
             "(docs/install.md): run a torch built for CUDA 12 or 13, or use Nsight Systems";
    return std::nullopt;
  }
  const std::vector<std::string> paths =
      explicit_path ? std::vector<std::string>{*explicit_path} : cupti_candidates(process);
  std::string first_error;
  for (const std::string& path : paths) {
    // RTLD_LOCAL: CUPTI's symbols stay out of the global namespace of the application.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      if (first_error.empty()) {
        const char* message = dlerror();
        first_error = message != nullptr ? message : path;
      }
      continue;
    }
    CuptiApi api;
    api.handle = handle;
    // The candidate as tried when it is a path (a link keeps the name that matched); the file
    // the loader found for a bare soname.
    api.path = path.find('/') != std::string::npos ? path : loaded_path(handle, path);
    api.driver_version = process.driver_version;
    std::string missing;
    if (!resolve_all(api, &missing)) {
      *error = api.path + " lacks " + missing + " (not a libcupti pyprof can use)";
    } else if (api.GetVersion(&api.version) != CUPTI_SUCCESS) {
      *error = api.path + ": cuptiGetVersion failed";
    } else {
      *error = refusal(api, process);
    }
    if (!error->empty()) {
      dlclose(handle);  // unused: only drops our reference when the program holds it too
      return std::nullopt;
    }
    // cuptiSubscribe_v2 appeared in CUDA 13; a CUDA 12 library has none to call.
    if (api.layout == CuptiLayout::kCuda13) {
      api.Subscribe_v2 =
          reinterpret_cast<decltype(api.Subscribe_v2)>(dlsym(handle, "cuptiSubscribe_v2"));
    }
    return api;
  }
  if (explicit_path) {
    *error = std::string("cannot load ") + env::kCuptiLibrary + "=" + *explicit_path + ": " +
             first_error;
    return std::nullopt;
  }
  std::string names;
  for (const int major : wanted_cuda_majors(process)) {
    names += (names.empty() ? "libcupti.so." : " or libcupti.so.") + std::to_string(major);
  }
  const int major = process.runtime_major;
  *error = "no " + names + " found" +
           (major > 0 ? " for the program's CUDA " + std::to_string(major) + " runtime (" +
                            process.cudart + ")"
                      : std::string()) +
           " (" + first_error + "): " + what_to_install(major) + ", or set " + env::kCuptiLibrary +
           " to its path";
  return std::nullopt;
}

}  // namespace pyprof::collect
