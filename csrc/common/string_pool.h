// StringPool: interned strings with small integer ids, for the stages that hold millions of
// records whose names repeat (parse's ranges and kernels, prof's records). Id 0 is the empty
// string. Views returned by get() stay valid for the pool's lifetime (each string is
// heap-stable).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pyprof {

class StringPool {
 public:
  StringPool() { intern(""); }
  uint32_t intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    auto id = static_cast<uint32_t>(strings_.size());
    strings_.push_back(std::make_unique<std::string>(s));
    index_.emplace(*strings_.back(), id);
    return id;
  }
  std::string_view get(uint32_t id) const { return *strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::vector<std::unique_ptr<std::string>> strings_;
  std::unordered_map<std::string_view, uint32_t> index_;
};

}  // namespace pyprof
