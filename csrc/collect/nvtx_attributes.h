// Defensive decoding of nvtxEventAttributes_t. Applications fill the struct by hand, so a field
// is read only if `size` says the caller's struct contains it, and unknown enum values are
// ignored rather than trusted.
#pragma once

#include <cstdint>

#include "event_types.h"
#include "nvtx_tool_headers.h"

namespace pyprof::collect {

struct DecodedMessage {
  enum class Kind { kNone, kAscii, kWide, kRegistered };
  Kind kind = Kind::kNone;
  const char* ascii = nullptr;
  const wchar_t* wide = nullptr;
  uint64_t registered_id = 0;  // the handle value; the caller checks it is one of ours
};

struct DecodedAttributes {
  EventAttributes attrs;  // has_text and text_id are left for the caller to resolve
  DecodedMessage message;
};

// NULL, version 0, or a size too small for a field all read as "field absent"; the event itself
// is still recorded so push/pop pairing stays right.
DecodedAttributes decode_event_attributes(const nvtxEventAttributes_t* attributes) noexcept;

}  // namespace pyprof::collect
