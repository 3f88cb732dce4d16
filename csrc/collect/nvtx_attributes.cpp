#include "nvtx_attributes.h"

#include <cstddef>

namespace pyprof::collect {
namespace {

// True if a struct of `size` bytes contains the member at [offset, offset + member_size).
constexpr bool contains(uint16_t size, size_t offset, size_t member_size) {
  return size >= offset + member_size;
}

#define PYPROF_HAS_FIELD(attributes, field)                            \
  contains((attributes)->size, offsetof(nvtxEventAttributes_t, field), \
           sizeof(nvtxEventAttributes_t::field))

}  // namespace

DecodedAttributes decode_event_attributes(const nvtxEventAttributes_t* attributes) noexcept {
  DecodedAttributes decoded;
  if (attributes == nullptr || attributes->version == 0) return decoded;
  EventAttributes& attrs = decoded.attrs;

  if (PYPROF_HAS_FIELD(attributes, category)) attrs.category = attributes->category;

  if (PYPROF_HAS_FIELD(attributes, color) && attributes->colorType == NVTX_COLOR_ARGB) {
    attrs.color = attributes->color;
    attrs.has_color = true;
  }

  if (PYPROF_HAS_FIELD(attributes, payload)) {
    switch (attributes->payloadType) {
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        attrs.payload_type = PayloadType::kUint64;
        attrs.payload.u64 = attributes->payload.ullValue;
        break;
      case NVTX_PAYLOAD_TYPE_INT64:
        attrs.payload_type = PayloadType::kInt64;
        attrs.payload.i64 = attributes->payload.llValue;
        break;
      case NVTX_PAYLOAD_TYPE_DOUBLE:
        attrs.payload_type = PayloadType::kDouble;
        attrs.payload.f64 = attributes->payload.dValue;
        break;
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        attrs.payload_type = PayloadType::kUint32;
        attrs.payload.u32 = attributes->payload.uiValue;
        break;
      case NVTX_PAYLOAD_TYPE_INT32:
        attrs.payload_type = PayloadType::kInt32;
        attrs.payload.i32 = attributes->payload.iValue;
        break;
      case NVTX_PAYLOAD_TYPE_FLOAT:
        attrs.payload_type = PayloadType::kFloat;
        attrs.payload.f32 = attributes->payload.fValue;
        break;
      default:  // unknown, or the payload extension's NVTX_PAYLOAD_TYPE_EXT
        break;
    }
  }

  if (PYPROF_HAS_FIELD(attributes, message)) {
    DecodedMessage& message = decoded.message;
    switch (attributes->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII:
        if (attributes->message.ascii != nullptr) {
          message.kind = DecodedMessage::Kind::kAscii;
          message.ascii = attributes->message.ascii;
        }
        break;
      case NVTX_MESSAGE_TYPE_UNICODE:
        if (attributes->message.unicode != nullptr) {
          message.kind = DecodedMessage::Kind::kWide;
          message.wide = attributes->message.unicode;
        }
        break;
      case NVTX_MESSAGE_TYPE_REGISTERED:
        if (attributes->message.registered != nullptr) {
          message.kind = DecodedMessage::Kind::kRegistered;
          message.registered_id =
              static_cast<uint64_t>(reinterpret_cast<uintptr_t>(attributes->message.registered));
        }
        break;
      default:
        break;
    }
  }
  return decoded;
}

#undef PYPROF_HAS_FIELD

}  // namespace pyprof::collect
