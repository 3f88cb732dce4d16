#include "thread_buffer.h"

namespace pyprof::collect {

bool ThreadBuffer::has_open_ranges() const {
  for (const RangeStack& stack : stacks_) {
    if (!stack.ranges.empty()) return true;
  }
  return false;
}

}  // namespace pyprof::collect
