#include "cupti_layout.h"

namespace pyprof::collect {

std::string cuda_release_of_api_version(uint32_t api_version) {
  if (api_version >= kFirstCuda13ApiVersion) {
    return "CUDA " + std::to_string(api_version / 10000) + "." +
           std::to_string(api_version / 100 % 100);
  }
  switch (api_version) {
    case 18:  // what the 12.0.146 and 12.1.105 libraries report (and 11.8's)
      return "CUDA 12.0 or 12.1";
    case 19:  // CUDA 12.0 in NVIDIA's table of versions
      return "CUDA 12.0";
    case 20:
      return "CUDA 12.2";
    case 21:
      return "CUDA 12.3";
    case 22:
      return "CUDA 12.4";
    case 23:
      return "CUDA 12.5";
    case 24:
    case 25:
      return "CUDA 12.6";
    case 26:
      return "CUDA 12.8";
    case 27:
    case 28:
      return "CUDA 12.9";
    default:
      break;
  }
  if (api_version > 28) return "CUDA 12 (a release after 12.9)";
  return "CUDA 11 or older";
}

const char* layout_name(CuptiLayout layout) {
  return layout == CuptiLayout::kCuda13 ? "CUDA 13" : "CUDA 12";
}

}  // namespace pyprof::collect
