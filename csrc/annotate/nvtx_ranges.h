// The NVTX side of the annotations: finding out whether a tool (our collector, Nsight
// Systems) is attached, and pushing/popping ranges in the "pyprof" domain and in user domains.
//
// NVTX3 is header-only: with no tool attached every call is a no-op, so the probe below is what
// lets the RecordFunction callback skip building strings entirely.
#pragma once

#include <cstdint>
#include <string>

namespace pyprof {

// The NVTX domain every pyprof marker (op, module) lives in.
inline constexpr const char* kMarkerDomain = "pyprof";

// Creates the "pyprof" domain. Returns false when no NVTX tool is attached (NVTX then returns a
// null handle), in which case nothing is ever recorded and callers should do no work.
bool nvtx_tool_attached();

// Push/pop in the "pyprof" domain. `message` must stay valid only for the call.
void push_marker(const char* message);
void pop_marker();

// Registered strings (NVTX_MESSAGE_TYPE_REGISTERED) for messages pushed many times, such as a
// module's range: the collector stores the text once and each range refers to it.
uint64_t register_marker_string(const std::string& message);
uint64_t register_marker_string(const char* message);  // NUL-terminated
void push_registered_marker(uint64_t handle);
// An interned op marker (marker_schema.h): the registered message, the op id as the uint64
// payload and `category` (seq + 1, or 0) as the NVTX category.
void push_interned_marker(uint64_t handle, uint64_t op_id, uint32_t category);

// User ranges, like the `nvtx` Python package: `domain` empty means the default NVTX domain;
// `argb` 0 means no color.
void push_user_range(const std::string& message, uint32_t argb, const std::string& domain);
void pop_user_range(const std::string& domain);
void mark(const std::string& message, uint32_t argb, const std::string& domain);

}  // namespace pyprof
