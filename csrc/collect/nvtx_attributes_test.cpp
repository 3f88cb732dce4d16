// Defensive decoding of nvtxEventAttributes_t.
#include "nvtx_attributes.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace pyprof::collect {
namespace {

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

TEST(DecodeEventAttributes, ReadsEveryField) {
  nvtxEventAttributes_t a = attributes();
  a.category = 5;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFF00FF00u;
  a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
  a.payload.iValue = -3;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "hello";
  const DecodedAttributes d = decode_event_attributes(&a);
  EXPECT_EQ(d.attrs.category, 5u);
  EXPECT_TRUE(d.attrs.has_color);
  EXPECT_EQ(d.attrs.color, 0xFF00FF00u);
  EXPECT_EQ(d.attrs.payload_type, PayloadType::kInt32);
  EXPECT_EQ(d.attrs.payload.i32, -3);
  EXPECT_EQ(d.message.kind, DecodedMessage::Kind::kAscii);
  EXPECT_STREQ(d.message.ascii, "hello");

  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = L"wide";
  EXPECT_EQ(decode_event_attributes(&a).message.kind, DecodedMessage::Kind::kWide);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reinterpret_cast<nvtxStringHandle_t>(uintptr_t{12});
  EXPECT_EQ(decode_event_attributes(&a).message.registered_id, 12u);
}

TEST(DecodeEventAttributes, IgnoresWhatTheStructDoesNotContain) {
  EXPECT_EQ(decode_event_attributes(nullptr).message.kind, DecodedMessage::Kind::kNone);

  nvtxEventAttributes_t a = attributes();
  a.category = 5;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 1;
  a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
  a.payload.dValue = 1.0;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "x";

  nvtxEventAttributes_t zero_version = a;
  zero_version.version = 0;
  EXPECT_FALSE(decode_event_attributes(&zero_version).attrs.has_color);

  nvtxEventAttributes_t short_struct = a;  // ends before `message`
  short_struct.size = static_cast<uint16_t>(offsetof(nvtxEventAttributes_t, message));
  DecodedAttributes d = decode_event_attributes(&short_struct);
  EXPECT_EQ(d.message.kind, DecodedMessage::Kind::kNone);
  EXPECT_EQ(d.attrs.payload_type, PayloadType::kDouble);
  EXPECT_EQ(d.attrs.category, 5u);

  nvtxEventAttributes_t tiny = a;  // only version and size
  tiny.size = 4;
  d = decode_event_attributes(&tiny);
  EXPECT_EQ(d.attrs.category, 0u);
  EXPECT_FALSE(d.attrs.has_color);
  EXPECT_EQ(d.attrs.payload_type, PayloadType::kNone);

  nvtxEventAttributes_t unknown = a;
  unknown.colorType = 7;
  unknown.payloadType = static_cast<int32_t>(0xDFBD0009);  // payload extension: no scalar
  unknown.messageType = 9;
  d = decode_event_attributes(&unknown);
  EXPECT_FALSE(d.attrs.has_color);
  EXPECT_EQ(d.attrs.payload_type, PayloadType::kNone);
  EXPECT_EQ(d.message.kind, DecodedMessage::Kind::kNone);

  nvtxEventAttributes_t null_message = a;
  null_message.message.ascii = nullptr;
  EXPECT_EQ(decode_event_attributes(&null_message).message.kind, DecodedMessage::Kind::kNone);
}

}  // namespace
}  // namespace pyprof::collect
