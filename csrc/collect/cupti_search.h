// Where the libcupti that fits the profiled program is: what the process has already loaded
// tells which CUDA it runs, and the CUDA installations pip and NVIDIA's toolkits make say where
// that release's libcupti lies.
//
// In the order tried:
//   1. a libcupti the process already holds (torch's own libcupti.so.12/13, loaded with
//      libtorch_cuda): a second copy of CUPTI in one process would fight the first;
//   2. for the program's CUDA runtime major N (libcudart.so.N loaded; unknown when the runtime is
//      linked statically: then 13 and 12 as far as the driver supports them), libcupti.so.N:
//      beside the loaded runtime and the other loaded CUDA libraries (pip's nvidia/cu13/lib, a
//      toolkit's lib64), in pip's CUDA 12 layout (nvidia/cuda_runtime/lib ->
//      nvidia/cuda_cupti/lib), under $CUDA_HOME and $CUDA_PATH, by its soname
//      (LD_LIBRARY_PATH, ld.so.cache), then under /usr/local/cuda and /usr/local/cuda-N.*
//      (a toolkit's extras/CUPTI/lib64, lib64, lib, targets/<arch>/lib).
#pragma once

#include <string>
#include <vector>

namespace pyprof::collect {

struct ProcessCuda {
  std::string loaded_cupti;  // a libcupti the process already holds, else empty
  std::string cudart;        // the loaded libcudart.so.N, else empty (none, or linked in)
  int runtime_major = 0;     // N of libcudart.so.N (11 for libcudart.so.11.0); 0 unknown
  int driver_version = 0;    // cuDriverGetVersion(): 13000 = CUDA 13.0; 0 unknown
  std::vector<std::string> nvidia_lib_dirs;  // directories of loaded libraries under .../nvidia/
};

// What the calling process has loaded (dl_iterate_phdr) and what its driver supports.
ProcessCuda inspect_process_cuda();

// The CUDA majors whose libcupti may serve `process`, best first: its runtime's, or (runtime
// unknown) 13 and 12 as far as the driver supports them.
std::vector<int> wanted_cuda_majors(const ProcessCuda& process);

// The libcupti files to try for `process`, best first, without duplicates.
std::vector<std::string> cupti_candidates(const ProcessCuda& process);

// 12 for ".../libcudart.so.12", 11 for "libcudart.so.11.0", 0 when `file` is not a versioned
// "<stem>.so.N" name. The file name only, or a path.
int soname_major(const std::string& file, const std::string& stem);

}  // namespace pyprof::collect
