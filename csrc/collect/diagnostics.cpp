#include "diagnostics.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pyprof::collect {

void print_line(const char* format, ...) noexcept {
  char line[2048];
  static constexpr char kPrefix[] = "pyprof-collect: ";
  std::memcpy(line, kPrefix, sizeof(kPrefix) - 1);
  size_t length = sizeof(kPrefix) - 1;
  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(line + length, sizeof(line) - length - 1, format, args);
  va_end(args);
  if (written < 0) return;
  length += static_cast<size_t>(written) < sizeof(line) - length - 1 ? static_cast<size_t>(written)
                                                                     : sizeof(line) - length - 2;
  line[length++] = '\n';
  const char* cursor = line;
  while (length > 0) {
    const ssize_t n = ::write(STDERR_FILENO, cursor, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    cursor += n;
    length -= static_cast<size_t>(n);
  }
}

}  // namespace pyprof::collect
