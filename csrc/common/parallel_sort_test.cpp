#include "common/parallel_sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace pyprof {
namespace {

struct Item {
  int64_t key;
  int32_t index;
};

// Sizes on both sides of the split threshold, keys with many ties: with the index as the last key
// the order is total and parallel_sort must give exactly std::sort's result.
TEST(ParallelSort, EqualsStdSortForATotalOrder) {
  std::mt19937_64 random(7);
  for (size_t size : {size_t{0}, size_t{1}, size_t{2}, size_t{1000}, size_t{65535}, size_t{65536},
                      size_t{65537}, size_t{300001}}) {
    std::vector<Item> values(size);
    for (size_t i = 0; i < size; ++i) {
      values[i] = {static_cast<int64_t>(random() % 997), static_cast<int32_t>(i)};
    }
    std::shuffle(values.begin(), values.end(), random);
    auto less = [](const Item& a, const Item& b) {
      return a.key != b.key ? a.key < b.key : a.index < b.index;
    };
    std::vector<Item> expected = values;
    std::sort(expected.begin(), expected.end(), less);
    parallel_sort(values, less);
    ASSERT_EQ(values.size(), expected.size());
    for (size_t i = 0; i < size; ++i) {
      ASSERT_EQ(values[i].index, expected[i].index) << "size " << size << ", at " << i;
    }
  }
}

// A weak order (ties left unordered): sorted by the key, and still a permutation of the input.
TEST(ParallelSort, SortsByAWeakOrderKeepingEveryValue) {
  std::mt19937_64 random(11);
  std::vector<Item> values(200000);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = {static_cast<int64_t>(random() % 5), static_cast<int32_t>(i)};
  }
  parallel_sort(values, [](const Item& a, const Item& b) { return a.key < b.key; });
  EXPECT_TRUE(std::is_sorted(values.begin(), values.end(),
                             [](const Item& a, const Item& b) { return a.key < b.key; }));
  std::vector<bool> seen(values.size(), false);
  for (const Item& v : values) seen[static_cast<size_t>(v.index)] = true;
  EXPECT_EQ(std::count(seen.begin(), seen.end(), false), 0);
}

}  // namespace
}  // namespace pyprof
