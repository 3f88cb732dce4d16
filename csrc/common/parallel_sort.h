// parallel_sort: std::sort on two threads for the large arrays parse sorts (a million kernels
// give ~4M range and launch items, half a second on one core): each half sorted on a thread of
// its own, then the halves merged. `less` must be a strict weak order; for a total order the
// result is the one std::sort gives.
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
  std::thread lower([&] { std::sort(values.begin(), middle, less); });
  std::sort(middle, values.end(), less);
  lower.join();
  // Merges through a buffer of half the array when one can be had; in place otherwise.
  std::inplace_merge(values.begin(), middle, values.end(), less);
}

}  // namespace pyprof
