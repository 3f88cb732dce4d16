#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/env_vars.h"

namespace pyprof::collect {
namespace {

constexpr const char* kSoname = "libcupti.so.13";

// Directories of loaded CUDA runtime libraries: pip's CUDA 13 wheels put libcupti beside them.
std::vector<std::string> loaded_cuda_library_dirs() {
  std::vector<std::string> dirs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string_view path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const size_t slash = path.rfind('/');
        if (slash == std::string_view::npos) return 0;
        const std::string_view file = path.substr(slash + 1);
        if (file.starts_with("libcudart.so") || file.starts_with("libcublas.so")) {
          static_cast<std::vector<std::string>*>(data)->emplace_back(path.substr(0, slash));
        }
        return 0;
      },
      &dirs);
  return dirs;
}

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths = {kSoname};
  for (const std::string& dir : loaded_cuda_library_dirs()) paths.push_back(dir + "/" + kSoname);
  std::vector<std::string> roots;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root != nullptr && *root) roots.push_back(root);
  }
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/local/cuda-13.0");
  for (const std::string& root : roots) {
    for (const char* sub : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/",
                            "/targets/x86_64-linux/lib/", "/targets/sbsa-linux/lib/"}) {
      paths.push_back(root + sub + kSoname);
    }
  }
  return paths;
}

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
  ok &= resolve(h, "cuptiSubscribe_v2", api.Subscribe_v2, false, missing);
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
  ok &= resolve(h, "cuptiActivityEnableRuntimeApi", api.ActivityEnableRuntimeApi, false, missing);
  ok &= resolve(h, "cuptiActivityEnableDriverApi", api.ActivityEnableDriverApi, false, missing);
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

}  // namespace

const char* CuptiApi::result_name(CUptiResult result) const {
  const char* name = nullptr;
  if (GetResultString == nullptr || GetResultString(result, &name) != CUPTI_SUCCESS || !name) {
    return "CUPTI error";
  }
  return name;
}

std::optional<CuptiApi> load_cupti(const std::optional<std::string>& explicit_path,
                                   std::string* error) {
  const std::vector<std::string> paths =
      explicit_path ? std::vector<std::string>{*explicit_path} : candidate_paths();
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
    api.path = loaded_path(handle, path);
    std::string missing;
    if (!resolve_all(api, &missing)) {
      *error = api.path + " lacks " + missing + " (not a CUDA 13 libcupti)";
      return std::nullopt;
    }
    if (api.GetVersion(&api.version) != CUPTI_SUCCESS) {
      *error = api.path + ": cuptiGetVersion failed";
      return std::nullopt;
    }
    if (api.version < CUPTI_API_VERSION) {
      *error = api.path + " has CUPTI API version " + std::to_string(api.version) +
               ", older than the " + std::to_string(CUPTI_API_VERSION) +
               " (CUDA 13.0) this collector was built for";
      return std::nullopt;
    }
    return api;
  }
  *error = explicit_path ? std::string("cannot load ") + env::kCuptiLibrary + "=" + *explicit_path +
                               ": " + first_error
                         : std::string("no libcupti.so.13 found (") + first_error + "); set " +
                               env::kCuptiLibrary + " to its path";
  return std::nullopt;
}

}  // namespace pyprof::collect
