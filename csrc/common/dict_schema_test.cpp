// net.dict's schema (dict_schema.h): every key is found by its spelling and no other, and the
// schema and docs/formats.md §3 name the same keys, so that a key added to one and not the other
// fails here.
#include "common/dict_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace pyprof::dict {
namespace {

TEST(DictSchema, EveryKeyIsFoundByItsSpellingAndNoOther) {
  std::set<std::string_view> names;
  for (size_t k = 0; k < kKeyCount; ++k) {
    const std::optional<Key> found = find_key(kKeyNames[k]);
    ASSERT_TRUE(found.has_value()) << kKeyNames[k];
    EXPECT_EQ(static_cast<size_t>(*found), k) << kKeyNames[k];
    EXPECT_TRUE(names.insert(kKeyNames[k]).second) << "twice: " << kKeyNames[k];
  }
  for (std::string_view other :
       {"", "k", "kin", "kinds", "Kind", "unread", "pyprof_dic", "argsref", "names", "stepx",
        "range_kind", "launch.start", "compute_capability", "x_long_key_that_no_dict_has"}) {
    EXPECT_FALSE(find_key(other).has_value()) << other;
  }
  EXPECT_EQ(name_of(Key::long_name), "long_name");
  EXPECT_EQ(key::bwd_args_ref, "bwd_args_ref");
  EXPECT_EQ(value_of(Key::start), Value::kTime);
  EXPECT_EQ(value_of(Key::range), Value::kIntOrString);
}

TEST(DictSchema, LineKindsRoundTrip) {
  for (size_t i = 0; i < kLineKindNames.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(line_kind_of(kLineKindNames[i])), i);
  }
  EXPECT_EQ(line_kind_of(""), LineKind::kOther);
  EXPECT_EQ(line_kind_of("kernels"), LineKind::kOther);
  EXPECT_EQ(name_of(LineKind::kCompiledKernel), "compiled_kernel");
}

// docs/formats.md §3, up to §4.
std::string formats_section_3() {
  std::ifstream in(std::string(PYPROF_SOURCE_DIR) + "/docs/formats.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const size_t begin = all.find("\n## 3. ");
  const size_t end = all.find("\n## 4. ");
  if (begin == std::string::npos || end == std::string::npos) return {};
  return all.substr(begin, end - begin);
}

TEST(DictSchema, FormatsMdTablesNameOnlySchemaKeys) {
  const std::string section = formats_section_3();
  ASSERT_FALSE(section.empty()) << "docs/formats.md has no §3";
  // The first cell of each row of §3's key tables ("Record keys", §3.1's range keys).
  std::istringstream lines(section);
  std::string line;
  const std::regex code("`([^`]+)`");
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(first.begin(), first.end(), code), end; it != end; ++it) {
      ++rows;
      EXPECT_TRUE(find_key((*it)[1].str()).has_value())
          << "docs/formats.md §3 documents `" << (*it)[1] << "`, which dict_schema.h lacks";
    }
  }
  EXPECT_GT(rows, 60);
}

TEST(DictSchema, EverySchemaKeyIsDocumentedInFormatsMd) {
  const std::string section = formats_section_3();
  ASSERT_FALSE(section.empty());
  for (std::string_view name : kKeyNames) {
    // Built by appending: GCC 12 takes `"`" + std::string(name)` for an overlapping copy
    // (-Wrestrict, a false positive).
    std::string quoted(1, '`');
    quoted.append(name);
    quoted += '`';
    EXPECT_NE(section.find(quoted), std::string::npos)
        << "dict_schema.h has `" << name << "`, which docs/formats.md §3 does not document";
  }
}

}  // namespace
}  // namespace pyprof::dict
