// Tensor Core use of one GPU kernel, judged from its name: prof's `tc` column (1 = used Tensor
// Cores, 0 = no evidence that it did).
//
// The evidence is a table of name patterns, prof/tensor_core_kernels.txt (its header documents
// the format and the precedence): rules are tried top to bottom against the kernel's full
// demangled name (net.dict `long_name`: the Tensor Core evidence of templated kernels sits in
// their template arguments, e.g. `cutlass::Kernel<cutlass_80_tensorop_s16816gemm_...>`) and its
// short name (`name`); the first rule that matches decides; no match is 0. The table is compiled
// into the library (TensorCoreRules::builtin()), so nothing is read at run time; tests and
// experiments can load another copy from a path.
//
// Whether an op *could* have used Tensor Cores (dtype, alignment) is models/op_model.h's
// `tc_eligible`, not this.
//
// Speed: a name costs one substring search per rule until the first match, and a regex rule is
// run only when its longest literal occurs in the name. Kernel names repeat (a 1M-kernel trace
// has a few thousand distinct names), so classify through a TensorCoreCache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pyprof::prof {

// One line of the rule table.
struct TensorCoreRule {
  enum class Kind : uint8_t { kSubstring, kRegex };
  bool uses_tc = false;  // `yes` / `re-yes`
  Kind kind = Kind::kSubstring;
  std::string pattern;
  int line = 0;         // 1-based line in the rule text
  std::string section;  // the `## ` title above the rule, "" when none

  // "yes", "no", "re-yes" or "re-no".
  std::string_view keyword() const;
};

// The verdict for one kernel.
struct TensorCoreMatch {
  int tc = 0;                            // 1: used Tensor Cores; 0: no evidence (or a `no` rule)
  const TensorCoreRule* rule = nullptr;  // the deciding rule; nullptr when none matched
};

class TensorCoreRules {
 public:
  // The table compiled into the binary from prof/tensor_core_kernels.txt (parsed on first use;
  // prof_tests checks that it parses and equals the source file).
  static const TensorCoreRules& builtin();
  static std::string_view builtin_text();

  // Parses a rule table. On any malformed line returns nullopt and appends one message per
  // problem to `errors`, each starting "line N: ".
  static std::optional<TensorCoreRules> parse(std::string_view text,
                                              std::vector<std::string>& errors);
  // parse() of a file's contents; a file that cannot be read is an error too.
  static std::optional<TensorCoreRules> load(const std::string& path,
                                             std::vector<std::string>& errors);

  TensorCoreMatch match(std::string_view long_name, std::string_view short_name) const;
  int uses_tensor_cores(std::string_view long_name, std::string_view short_name) const {
    return match(long_name, short_name).tc;
  }
  // One line for --explain, e.g.
  //   tc=1: line 103 `yes 16816` [Ampere/Ada (sm_80..89): HMMA m16n8k16, ...]
  //   tc=0: no rule matched (no Tensor Core evidence in the name)
  std::string explain(std::string_view long_name, std::string_view short_name) const;
  static std::string explain(const TensorCoreMatch& m);

  const std::vector<TensorCoreRule>& rules() const { return rules_; }

  TensorCoreRules(TensorCoreRules&&) noexcept = default;
  TensorCoreRules& operator=(TensorCoreRules&&) noexcept = default;
  // Not copyable: TensorCoreMatch::rule points into the table.
  TensorCoreRules(const TensorCoreRules&) = delete;
  TensorCoreRules& operator=(const TensorCoreRules&) = delete;

 private:
  TensorCoreRules() = default;
  bool rule_matches(size_t i, std::string_view name) const;

  struct Compiled {
    std::regex re;     // kRegex only
    std::string hint;  // kRegex: a literal every match contains ("" = none known)
  };
  std::vector<TensorCoreRule> rules_;
  std::vector<Compiled> compiled_;  // parallel to rules_
};

// The longest literal that every match of an ECMAScript regex contains ("" when none can be
// proved, e.g. with a top-level `|`). Exposed for tests.
std::string regex_required_literal(std::string_view regex);

// Memoizes TensorCoreRules::match by (long name, short name). Not thread-safe: one per thread.
// The rules must outlive the cache.
class TensorCoreCache {
 public:
  explicit TensorCoreCache(const TensorCoreRules& rules = TensorCoreRules::builtin())
      : rules_(&rules) {}
  TensorCoreMatch match(std::string_view long_name, std::string_view short_name);
  int uses_tensor_cores(std::string_view long_name, std::string_view short_name) {
    return match(long_name, short_name).tc;
  }
  size_t size() const { return cache_.size(); }  // distinct names seen
  const TensorCoreRules& rules() const { return *rules_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  const TensorCoreRules* rules_;
  std::string key_;  // reused: long name, '\0', short name
  std::unordered_map<std::string, TensorCoreMatch, Hash, std::equal_to<>> cache_;
};

}  // namespace pyprof::prof
