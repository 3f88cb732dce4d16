#include "marker_key.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pyprof {
namespace {

// The key of `inputs`, or nullopt when the writer gives up on them.
std::optional<std::string> key_of(const std::vector<c10::IValue>& inputs) {
  std::string buffer;
  MarkerKeyWriter key(buffer);
  if (!key.inputs(c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()))) {
    return std::nullopt;
  }
  return std::string(key.view());
}

TEST(MarkerKey, ValuesThatPrintAlikeKeepDistinctKeys) {
  // Each of these differs from every other in something a marker may show; the JSON of some
  // pairs is even identical (1 and 1.0), which is harmless, but the key must not merge any
  // pair whose JSON differs, so all keys are simply required to be distinct.
  const std::vector<std::vector<c10::IValue>> cases = {
      {int64_t{1}},
      {true},
      {1.0},
      {c10::complex<double>(1.0, 0.0)},
      {c10::IValue()},
      {at::Tensor()},
      {std::string("1")},
      {c10::List<int64_t>({1, 2})},
      {c10::ivalue::Tuple::create({int64_t{1}, int64_t{2}})},
      {c10::List<int64_t>({1}), int64_t{2}},
      {int64_t{1}, int64_t{2}},
      {std::string("ab"), std::string("c")},
      {std::string("a"), std::string("bc")},
      {at::zeros({2, 3})},
      {at::zeros({3, 2})},
      {at::zeros({3, 2}).t()},  // same shape as {2, 3}, other strides
      {at::zeros({2, 3}, at::kDouble)},
      {at::zeros({6})},
      {at::zeros({})},
      {c10::Device("cpu")},
      {c10::Device("cuda:1")},
  };
  std::vector<std::string> keys;
  for (const auto& inputs : cases) {
    auto key = key_of(inputs);
    ASSERT_TRUE(key.has_value());
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_NE(*key, keys[i]) << "case " << keys.size() << " collides with case " << i;
    }
    keys.push_back(*key);
  }
}

TEST(MarkerKey, SameValuesSameKey) {
  EXPECT_EQ(key_of({at::ones({4, 5}), int64_t{3}, c10::List<int64_t>({1, 1})}),
            key_of({at::zeros({4, 5}), int64_t{3}, c10::List<int64_t>({1, 1})}));
}

TEST(MarkerKey, GivesUpOnWhatItCannotCaptureExactly) {
  EXPECT_FALSE(key_of({at::zeros({2, 2}).to_sparse()}));  // non-strided layout
  c10::impl::GenericDict dict(c10::StringType::get(), c10::IntType::get());
  dict.insert(std::string("k"), int64_t{1});
  EXPECT_FALSE(key_of({dict}));
  std::vector<int64_t> long_list(2000, 1);
  EXPECT_FALSE(key_of({c10::List<int64_t>(long_list)}));
  EXPECT_FALSE(
      key_of({at::zeros(std::vector<int64_t>(13, 1))}));  // more dims than the JSON's fast path
}

}  // namespace
}  // namespace pyprof

namespace pyprof {
namespace {

// The handle table against std::unordered_map as the oracle: thousands of keys, including keys
// that share prefixes, differ only in length, are empty or hold NUL bytes, found after every
// growth of the table; keys never inserted are not found.
TEST(KeyHandleTable, FindsWhatWasInsertedThroughGrowth) {
  KeyHandleTable table;
  std::unordered_map<std::string, uint64_t> oracle;
  EXPECT_EQ(table.find("anything"), 0u);
  std::vector<std::string> keys = {"", std::string(1, '\0'), std::string(2, '\0'), "a", "ab"};
  for (int i = 0; i < 5000; ++i) {
    std::string key = "aten::op" + std::to_string(i % 97) + std::string(i % 13, 'x');
    key += std::string(reinterpret_cast<const char*>(&i), sizeof i);
    keys.push_back(key);
  }
  uint64_t next_handle = 1;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (oracle.count(keys[k])) continue;
    table.insert(keys[k], next_handle);
    oracle[keys[k]] = next_handle++;
    // Every key so far is still found after each insert (and so after each growth).
    if (k % 500 == 0 || k < 10) {
      for (size_t j = 0; j <= k; ++j) ASSERT_EQ(table.find(keys[j]), oracle[keys[j]]) << j;
    }
  }
  EXPECT_EQ(table.size(), oracle.size());
  for (const auto& [key, handle] : oracle) EXPECT_EQ(table.find(key), handle);
  EXPECT_EQ(table.find("aten::op1"), 0u);  // a prefix of inserted keys
  EXPECT_EQ(table.find("never inserted"), 0u);
  EXPECT_EQ(table.find(std::string(3, '\0')), 0u);
}

}  // namespace
}  // namespace pyprof
