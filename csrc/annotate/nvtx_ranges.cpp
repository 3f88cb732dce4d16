#include "nvtx_ranges.h"

#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <unordered_map>

namespace pyprof {
namespace {

nvtxDomainHandle_t marker_domain() {
  // Created once; NVTX loads the injection library (if any) on this first call.
  static nvtxDomainHandle_t domain = nvtxDomainCreateA(kMarkerDomain);
  return domain;
}

// User domains by name. Domains live for the whole process, as in the nvtx package.
nvtxDomainHandle_t user_domain(const std::string& name) {
  if (name.empty()) return nullptr;
  if (name == kMarkerDomain) return marker_domain();
  static std::mutex mutex;
  static std::unordered_map<std::string, nvtxDomainHandle_t> domains;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = domains.try_emplace(name, nullptr);
  if (inserted) it->second = nvtxDomainCreateA(name.c_str());
  return it->second;
}

nvtxEventAttributes_t ascii_attributes(const char* message, uint32_t argb) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  if (argb != 0) {
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = argb;
  }
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = message;
  return attr;
}

}  // namespace

bool nvtx_tool_attached() { return marker_domain() != nullptr; }

void push_marker(const char* message) {
  const nvtxEventAttributes_t attr = ascii_attributes(message, 0);
  nvtxDomainRangePushEx(marker_domain(), &attr);
}

void pop_marker() { nvtxDomainRangePop(marker_domain()); }

uint64_t register_marker_string(const std::string& message) {
  return register_marker_string(message.c_str());
}

uint64_t register_marker_string(const char* message) {
  return reinterpret_cast<uint64_t>(nvtxDomainRegisterStringA(marker_domain(), message));
}

void push_interned_marker(uint64_t handle, uint64_t op_id, uint32_t category) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.category = category;
  attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  attr.payload.ullValue = op_id;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = reinterpret_cast<nvtxStringHandle_t>(handle);
  nvtxDomainRangePushEx(marker_domain(), &attr);
}

void push_registered_marker(uint64_t handle) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = reinterpret_cast<nvtxStringHandle_t>(handle);
  nvtxDomainRangePushEx(marker_domain(), &attr);
}

void push_user_range(const std::string& message, uint32_t argb, const std::string& domain) {
  const nvtxEventAttributes_t attr = ascii_attributes(message.c_str(), argb);
  if (domain.empty()) {
    nvtxRangePushEx(&attr);
  } else {
    nvtxDomainRangePushEx(user_domain(domain), &attr);
  }
}

void pop_user_range(const std::string& domain) {
  if (domain.empty()) {
    nvtxRangePop();
  } else {
    nvtxDomainRangePop(user_domain(domain));
  }
}

void mark(const std::string& message, uint32_t argb, const std::string& domain) {
  const nvtxEventAttributes_t attr = ascii_attributes(message.c_str(), argb);
  if (domain.empty()) {
    nvtxMarkEx(&attr);
  } else {
    nvtxDomainMarkEx(user_domain(domain), &attr);
  }
}

}  // namespace pyprof
