// One-line messages on stderr, prefixed "pyprof-collect: ". Written with a single write(2) so
// lines from several processes do not interleave, and without iostreams (which may already be
// destroyed when the collector finalizes during exit).
#pragma once

namespace pyprof::collect {

void print_line(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

}  // namespace pyprof::collect
