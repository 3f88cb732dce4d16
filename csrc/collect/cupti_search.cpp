#include "cupti_search.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string_view>

namespace pyprof::collect {
namespace {

std::string_view file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view directory(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// cuDriverGetVersion of the driver cuInit is running in (libcuda.so.1 is loaded by then); 0
// when there is none or it fails.
int driver_version() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return 0;
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(driver, "cuDriverGetVersion"));
  int version = 0;
  if (get == nullptr || get(&version) != 0) version = 0;
  dlclose(driver);  // drops only the reference RTLD_NOLOAD took
  return version;
}

// The CUDA toolkits installed as /usr/local/cuda-<major>.<minor>, newest first.
std::vector<std::string> versioned_toolkits(int major) {
  std::vector<std::string> roots;
  const std::string pattern = "/usr/local/cuda-" + std::to_string(major) + ".*";
  glob_t found{};
  if (glob(pattern.c_str(), GLOB_ONLYDIR | GLOB_NOSORT, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) roots.emplace_back(found.gl_pathv[i]);
  }
  globfree(&found);
  // "cuda-12.10" after "cuda-12.9": by minor number, not by text.
  std::sort(roots.begin(), roots.end(), [](const std::string& a, const std::string& b) {
    return std::atoi(a.c_str() + a.rfind('.') + 1) > std::atoi(b.c_str() + b.rfind('.') + 1);
  });
  return roots;
}

}  // namespace

int soname_major(const std::string& file, const std::string& stem) {
  const std::string_view name = file_name(file);
  const std::string prefix = stem + ".so.";
  if (name.substr(0, prefix.size()) != prefix) return 0;
  const std::string_view rest = name.substr(prefix.size());
  int major = 0;
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && digits < 4) {
    major = major * 10 + (rest[digits] - '0');
    ++digits;
  }
  if (digits == 0 || (digits < rest.size() && rest[digits] != '.')) return 0;
  return major;
}

ProcessCuda inspect_process_cuda() {
  ProcessCuda process;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& out = *static_cast<ProcessCuda*>(data);
        const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const std::string_view name = file_name(path);
        if (out.loaded_cupti.empty() && name.substr(0, 12) == "libcupti.so.") {
          out.loaded_cupti = path;
        }
        if (out.cudart.empty()) {
          if (const int major = soname_major(path, "libcudart"); major > 0) {
            out.cudart = path;
            out.runtime_major = major;
          }
        }
        if (const size_t at = path.rfind("/nvidia/"); at != std::string::npos) {
          const std::string dir(directory(path));
          if (std::find(out.nvidia_lib_dirs.begin(), out.nvidia_lib_dirs.end(), dir) ==
              out.nvidia_lib_dirs.end()) {
            out.nvidia_lib_dirs.push_back(dir);
          }
        }
        return 0;
      },
      &process);
  process.driver_version = driver_version();
  return process;
}

std::vector<int> wanted_cuda_majors(const ProcessCuda& process) {
  if (process.runtime_major > 0) return {process.runtime_major};
  // The runtime is linked into the program (nvcc's default) or absent (driver API only): any
  // libcupti the driver supports can trace it, the newest first.
  const int driver_major = process.driver_version / 1000;
  std::vector<int> majors;
  for (const int major : {13, 12}) {
    if (driver_major == 0 || major <= driver_major) majors.push_back(major);
  }
  return majors;
}

std::vector<std::string> cupti_candidates(const ProcessCuda& process) {
  std::vector<std::string> paths;
  std::set<std::string> seen;
  const auto add = [&](std::string path) {
    if (seen.insert(path).second) paths.push_back(std::move(path));
  };
  if (!process.loaded_cupti.empty()) add(process.loaded_cupti);
  for (const int major : wanted_cuda_majors(process)) {
    const std::string soname = "libcupti.so." + std::to_string(major);
    // The runtime's own installation first: the same release as the program's CUDA.
    if (!process.cudart.empty()) add(std::string(directory(process.cudart)) + "/" + soname);
    for (const std::string& dir : process.nvidia_lib_dirs) {
      add(dir + "/" + soname);  // pip's CUDA 13 wheels: everything in nvidia/cu13/lib
      if (const size_t at = dir.rfind("/nvidia/"); at != std::string::npos) {
        // pip's CUDA 12 wheels: one folder per library, nvidia/<library>/lib
        add(dir.substr(0, at + 8) + "cuda_cupti/lib/" + soname);
      }
    }
    const auto add_toolkit = [&](const std::string& root) {
      for (const char* sub : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/",
                              "/targets/x86_64-linux/lib/", "/targets/sbsa-linux/lib/"}) {
        add(root + sub + soname);
      }
    };
    // The toolkit the user names before the loader's path, which may hold another install.
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* root = std::getenv(variable); root != nullptr && *root) add_toolkit(root);
    }
    add(soname);  // LD_LIBRARY_PATH, ld.so.cache
    add_toolkit("/usr/local/cuda");
    for (const std::string& root : versioned_toolkits(major)) add_toolkit(root);
  }
  return paths;
}

}  // namespace pyprof::collect
