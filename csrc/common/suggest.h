// "Did you mean": the known name closest to a mistyped one, for the tools' usage errors
// (`--report sumary`, `-c flop`). Header-only: parse, prof and the launcher all may use it.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof {

// Levenshtein distance (insertions, deletions, substitutions), case-sensitive.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` when it is close enough to be a typo of it (at most a third
// of its letters wrong, at least one allowed), or a candidate that starts with `word` (a prefix
// of 3 letters or more); "" when none is.
inline std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best.empty() && word.size() >= 3) {
    for (const std::string& c : candidates) {
      if (c.starts_with(word)) return c;
    }
  }
  return best;
}

// " (did you mean 'NAME'?)" for a usage error, or "" when no candidate is close.
inline std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace pyprof
