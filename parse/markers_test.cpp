#include "parse/markers.h"

#include <gtest/gtest.h>

namespace pyprof::parse {
namespace {

TEST(Markers, PlainTextIsUserRange) {
  Marker m;
  decode_marker("hello", false, m);
  EXPECT_EQ(m.kind, MarkerKind::kUser);
  EXPECT_EQ(m.name, "hello");
}

}  // namespace
}  // namespace pyprof::parse
