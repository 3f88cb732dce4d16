// parallel_sort: std::sort on two threads for the large arrays parse sorts (a million kernels
// give ~4M range and launch items, half a second on one core). std::nth_element first splits the
// array in place at its middle (every value of the lower half before every value of the upper
// one), then each half is sorted on a thread of its own: no merge, so no temporary buffer (a
// merge took one of half the array, 33 MB at 1M kernels, at parse's memory peak). `less` must
// be a strict weak order; for a total order the result is the one std::sort gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace pyprof {

template <class T, class Less>
void parallel_sort(std::vector<T>& values, Less less) {
  // Below this, or on one core, a thread costs more than it saves.
  constexpr size_t kMinToSplit = size_t{1} << 16;
  if (values.size() < kMinToSplit || std::thread::hardware_concurrency() < 2) {
    std::sort(values.begin(), values.end(), less);
    return;
  }
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end(), less);
  std::thread lower([&] { std::sort(values.begin(), middle, less); });
  std::sort(middle + 1, values.end(), less);
  lower.join();
}

}  // namespace pyprof
