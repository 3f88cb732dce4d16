// Which layout of activity records a libcupti writes, told from its cuptiGetVersion().
//
// CUPTI numbers its API in two schemes: CUDA 11.x-12.x count up (11.8, 12.0 and 12.1 all report
// 18; 12.2 20, 12.3 21, 12.4 22, 12.5 23, 12.6 24, 12.8 26, 12.9 27 and 28), and from CUDA 13.0
// on the number is xxyyzz (CUDA 13.0's libcupti reports 130001). These are what each release's
// libcupti returns (checked by loading the libcupti.so of every nvidia-cuda-cupti-cu12 wheel from
// 12.0.146 to 12.9.79 and CUDA 13.0's; docs/install.md).
//
// Each layout has its own record structs: kCuda12 reads cupti12_records.h (the collector's own
// definitions, checked against CUDA 12's headers in testing/cupti12_layout_check.cpp), kCuda13
// the CUDA 13 headers the collector is built with. A change to one cannot move the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pyprof::collect {

enum class CuptiLayout { kCuda12, kCuda13 };

// CUDA 12.0's libcupti (the oldest pyprof reads) reports 18; so does CUDA 11.8's, whose records
// pyprof does not claim to read (docs/install.md: why CUDA 11.8 got no layout of its own).
inline constexpr uint32_t kFirstCuda12ApiVersion = 18;
inline constexpr uint32_t kFirstCuda13ApiVersion = 130000;

// The layout a libcupti reporting `api_version` writes; nullopt when it is older than CUDA 12.0.
// A version above every known one is read with its major release's layout: CUPTI appends fields
// to a record or adds a new record version that keeps the old fields where they were.
constexpr std::optional<CuptiLayout> layout_for_api_version(uint32_t api_version) {
  if (api_version >= kFirstCuda13ApiVersion) return CuptiLayout::kCuda13;
  if (api_version >= kFirstCuda12ApiVersion) return CuptiLayout::kCuda12;
  return std::nullopt;
}

// The CUDA major release whose libcupti reports `api_version`: 13 for 130001, 12 for 18-28,
// 11 below 18 (CUDA 11.0 reported 13).
constexpr int cuda_major_of_api_version(uint32_t api_version) {
  if (api_version >= kFirstCuda13ApiVersion) return static_cast<int>(api_version / 10000);
  return api_version >= kFirstCuda12ApiVersion ? 12 : 11;
}

// "CUDA 12.9" for 28, "CUDA 12.0 or 12.1" for 18, "CUDA 13.0" for 130001: for messages and the
// PYPROF_CUDA_TRACE status.
std::string cuda_release_of_api_version(uint32_t api_version);

// "CUDA 12" / "CUDA 13".
const char* layout_name(CuptiLayout layout);

}  // namespace pyprof::collect
