#include "diff/repeating_steps.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

namespace pyprof::prof {

namespace {

// Why these tolerances. A training or inference loop calls the same ops in the same order each
// iteration; what breaks the pattern is rare (an extra `.item()` for logging, a skipped
// optimizer step), so a stretch between two anchor calls may differ from the common one by a
// call or two (kSegmentTolerance of the period, at least one call), and no more: a stretch
// that differs by more is other work (an evaluation pass, a checkpoint), and cutting the
// profile there would compare unlike things. Every stretch must pass: one that does not makes
// the detector find nothing rather than guess.

// The CPU-side start of a record, as parse places records in steps (docs/formats.md §3,
// `step`): a GPU record's launch call, an op record's own start.
int64_t cpu_side_start(const ProfRecord& r) {
  return r.launch_start >= 0 ? r.launch_start : r.start;
}

struct TokenKey {
  uint32_t a = 0, b = 0, c = 0;
  uint8_t d = 0;
  bool operator==(const TokenKey&) const = default;
};
struct TokenKeyHash {
  size_t operator()(const TokenKey& k) const {
    size_t h = k.a;
    h = h * 1000003u ^ k.b;
    h = h * 1000003u ^ k.c;
    return h * 31u ^ k.d;
  }
};

// An op call: an op instance (GPU), a top-level op record (CPU), or a kernel launched outside
// every op.
struct Call {
  int64_t start = std::numeric_limits<int64_t>::max();  // CPU-side, of its first record
  int64_t tid = -1;
  uint32_t token = 0;
  size_t first_record = 0;
};

size_t tolerance(size_t period) {
  return std::max<size_t>(1, static_cast<size_t>(kSegmentTolerance * static_cast<double>(period)));
}

// How one anchor token cuts the sequence: valid when every stretch between two of its calls is
// within tolerance of the most common one.
struct Cut {
  bool valid = false;
  size_t period = 0, identical = 0, worst = 0;  // worst: the most calls a stretch differs by
  size_t uncovered = 0;  // calls outside the repetitions when they were too many
};

Cut cut_at(const std::vector<uint32_t>& seq, const std::vector<size_t>& positions) {
  Cut cut;
  const size_t segments = positions.size() - 1;
  auto segment_hash = [&](size_t j) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = positions[j]; i < positions[j + 1]; ++i) h = (h ^ seq[i]) * 1099511628211ull;
    return h ^ (positions[j + 1] - positions[j]);
  };
  auto same = [&](size_t j, size_t k) {
    return std::equal(seq.begin() + positions[j], seq.begin() + positions[j + 1],
                      seq.begin() + positions[k], seq.begin() + positions[k + 1]);
  };
  // The most common stretch: its representative and how many are exactly it.
  std::unordered_map<uint64_t, std::vector<std::pair<size_t, size_t>>> groups;
  size_t modal = 0, modal_count = 0;
  for (size_t j = 0; j < segments; ++j) {
    auto& group = groups[segment_hash(j)];
    bool placed = false;
    for (auto& [rep, count] : group) {
      if (same(rep, j)) {
        ++count;
        placed = true;
        if (count > modal_count) modal = rep, modal_count = count;
        break;
      }
    }
    if (!placed) {
      group.emplace_back(j, 1);
      if (modal_count == 0) modal = j, modal_count = 1;
    }
  }
  cut.period = positions[modal + 1] - positions[modal];
  cut.identical = modal_count;
  std::unordered_map<uint32_t, int64_t> modal_calls;
  for (size_t i = positions[modal]; i < positions[modal + 1]; ++i) ++modal_calls[seq[i]];
  const size_t allowed = tolerance(cut.period);
  for (size_t j = 0; j < segments; ++j) {
    std::unordered_map<uint32_t, int64_t> diff = modal_calls;
    for (size_t i = positions[j]; i < positions[j + 1]; ++i) --diff[seq[i]];
    size_t differ = 0;
    for (const auto& [token, d] : diff) differ += static_cast<size_t>(d < 0 ? -d : d);
    cut.worst = std::max(cut.worst, differ);
    if (differ > allowed) return cut;
  }
  cut.valid = 2 * modal_count >= segments;
  return cut;
}

}  // namespace

RepeatingSteps detect_repeating_steps(const ReadResult& data, std::string_view preferred_anchor) {
  RepeatingSteps out;
  const std::vector<ProfRecord>& records = data.records;
  // The op calls and their names (tokens).
  std::vector<Call> calls;
  std::unordered_map<int64_t, size_t> call_of_instance;
  std::unordered_map<TokenKey, uint32_t, TokenKeyHash> token_of;
  std::vector<size_t> token_record;  // a record of each token, for its name
  for (size_t i = 0; i < records.size(); ++i) {
    const ProfRecord& r = records[i];
    if (r.bad_time) continue;
    size_t index = calls.size();
    if (data.cpu_only) {
      if (r.kind != Kind::kOp || r.parent >= 0) continue;  // nested calls repeat with their root
      calls.emplace_back();
    } else if (r.instance != 0) {
      auto [it, inserted] = call_of_instance.try_emplace(r.instance, calls.size());
      index = it->second;
      if (inserted) calls.emplace_back();
    } else {
      calls.emplace_back();
    }
    Call& call = calls[index];
    int64_t start = cpu_side_start(r);
    if (start < call.start) call.start = start;
    if (call.tid != -1) continue;  // named by its first record
    call.tid = r.tid;
    call.first_record = i;
    TokenKey key = r.op != 0 ? TokenKey{r.op, r.module, r.shapes, static_cast<uint8_t>(r.dir)}
                             : TokenKey{r.name, 0, 0, static_cast<uint8_t>(16 + int(r.kind))};
    auto [it, inserted] = token_of.try_emplace(key, static_cast<uint32_t>(token_record.size()));
    if (inserted) token_record.push_back(i);
    call.token = it->second;
  }
  if (calls.empty()) {
    out.text = "no op calls to find a repeating sequence in";
    return out;
  }
  // The thread with the most calls, its calls in start order.
  std::unordered_map<int64_t, size_t> per_thread;
  for (const Call& c : calls) ++per_thread[c.tid];
  out.tid =
      std::max_element(per_thread.begin(), per_thread.end(), [](const auto& a, const auto& b) {
        return a.second < b.second || (a.second == b.second && a.first > b.first);
      })->first;
  std::vector<const Call*> thread_calls;
  for (const Call& c : calls) {
    if (c.tid == out.tid) thread_calls.push_back(&c);
  }
  std::stable_sort(thread_calls.begin(), thread_calls.end(), [](const Call* a, const Call* b) {
    return a->start < b->start || (a->start == b->start && a->first_record < b->first_record);
  });
  const size_t n = thread_calls.size();
  out.calls = n;
  std::vector<uint32_t> seq(n);
  std::vector<std::vector<size_t>> positions(token_record.size());
  for (size_t i = 0; i < n; ++i) {
    seq[i] = thread_calls[i]->token;
    positions[seq[i]].push_back(i);
  }
  auto token_text = [&](uint32_t token) {
    const ProfRecord& r = records[token_record[token]];
    if (r.op == 0) return std::string(data.strings.get(r.name));
    std::string text(data.strings.get(r.op));
    text += r.dir == Dir::kFprop ? " fprop" : r.dir == Dir::kBprop ? " bprop" : "";
    if (r.module != 0) fmt::format_to(std::back_inserter(text), " {}", data.strings.get(r.module));
    if (r.shapes != 0) fmt::format_to(std::back_inserter(text), " {}", data.strings.get(r.shapes));
    return text;
  };

  // Candidate anchors: tokens called at least kMinRepetitions + 1 times, evenly spaced (each gap
  // within tolerance of the median one), shortest period first, then first called first.
  struct Candidate {
    uint32_t token;
    size_t period;
  };
  std::vector<Candidate> candidates;
  for (uint32_t token = 0; token < positions.size(); ++token) {
    const std::vector<size_t>& pos = positions[token];
    if (pos.size() < kMinRepetitions + 1) continue;
    std::vector<size_t> gaps;
    for (size_t j = 1; j < pos.size(); ++j) gaps.push_back(pos[j] - pos[j - 1]);
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    const size_t median = gaps[gaps.size() / 2];
    const size_t allowed = tolerance(median);
    bool even = std::all_of(gaps.begin(), gaps.end(), [&](size_t g) {
      return (g > median ? g - median : median - g) <= allowed;
    });
    if (even) candidates.push_back({token, median});
  }
  if (candidates.empty()) {
    out.text = fmt::format(
        "no repeating op sequence: of the {} op calls on thread {}, none is called at least {} "
        "times at even spacing",
        n, out.tid, kMinRepetitions + 1);
    return out;
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     if (a.period != b.period) return a.period < b.period;
                     return positions[a.token][0] < positions[b.token][0];
                   });
  // At most kMaxCuts candidates are weighed, so that a long sequence without a period costs
  // little.
  constexpr size_t kMaxCuts = 200, kPerPeriod = 3, kMaxPairs = 4096;
  if (candidates.size() > kMaxCuts) candidates.resize(kMaxCuts);

  // The phase. Every op called once a period cuts the loop alike, at another phase, and the
  // phase matters: a repetition that starts inside a forward pass holds the backward of forward
  // calls made in the one before, and the first one the backward of calls made before the
  // window (unpaired: parse names it by its backward op), so it differs from the others. Of the
  // candidates of one period, those whose calls fall inside the fewest (forward call, its
  // backward) pairs come first: the forward's first op, the optimizer's; of equals, the op
  // BASE's detection anchored at, then the first called. The pairs are found by op id (a
  // backward record's op id is its forward op's); a sample of them is enough to tell.
  std::unordered_map<int64_t, int64_t> forward_start;  // op id -> its forward call's start
  for (const ProfRecord& r : records) {
    if (r.bad_time || r.dir != Dir::kFprop || r.op_id == 0) continue;
    auto [it, added] = forward_start.try_emplace(r.op_id, cpu_side_start(r));
    if (!added) it->second = std::min(it->second, cpu_side_start(r));
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (forward start, backward start)
  for (const ProfRecord& r : records) {
    if (r.bad_time || r.dir != Dir::kBprop || r.op_id == 0) continue;
    auto it = forward_start.find(r.op_id);
    if (it != forward_start.end()) pairs.emplace_back(it->second, cpu_side_start(r));
  }
  if (pairs.size() > kMaxPairs) {  // evenly spaced over the profile
    std::vector<std::pair<int64_t, int64_t>> sample;
    for (size_t i = 0; i < kMaxPairs; ++i) sample.push_back(pairs[i * pairs.size() / kMaxPairs]);
    pairs.swap(sample);
  }
  auto times_of = [&](uint32_t token) {
    std::vector<int64_t> times;
    for (size_t p : positions[token]) times.push_back(thread_calls[p]->start);
    return times;
  };
  std::unordered_map<uint32_t, size_t> crossed;
  for (const Candidate& c : candidates) {
    const std::vector<int64_t> at = times_of(c.token);
    size_t count = 0;
    for (const auto& [f, b] : pairs) {
      auto next = std::upper_bound(at.begin(), at.end(), f);
      count += next != at.end() && *next <= b ? 1 : 0;
    }
    crossed[c.token] = count;
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const Candidate& a, const Candidate& b) {
                     if (a.period != b.period) return a.period < b.period;
                     if (crossed[a.token] != crossed[b.token])
                       return crossed[a.token] < crossed[b.token];
                     const bool pa = token_text(a.token) == preferred_anchor;
                     const bool pb = token_text(b.token) == preferred_anchor;
                     return pa && !pb;
                   });

  // Evaluated in that order, a few anchors a period (they see the same irregularities): the
  // first that cuts the sequence into repetitions is the anchor.
  std::unordered_map<size_t, size_t> tried_at;
  Cut best_failure, chosen_cut;
  uint32_t failed_token = 0;
  std::optional<uint32_t> anchor;
  for (const Candidate& c : candidates) {
    if (++tried_at[c.period] > kPerPeriod) continue;
    Cut cut = cut_at(seq, positions[c.token]);
    // The repetitions must cover the sequence: a window holds whole ones and at most part of
    // one at each end. (A burst of one op repeated in the middle is no loop of the profile.)
    const std::vector<size_t>& at = positions[c.token];
    const size_t edge = cut.period + tolerance(cut.period);
    if (cut.valid && (at.front() > edge || n - at.back() > edge)) {
      cut.valid = false;
      cut.uncovered = at.front() + (n - at.back());
    }
    if (cut.valid) {
      anchor = c.token;
      chosen_cut = cut;
      break;
    }
    if (best_failure.period == 0) best_failure = cut, failed_token = c.token;
  }
  if (!anchor) {
    if (best_failure.uncovered > 0) {
      out.text = fmt::format(
          "no repeating op sequence: of the {} op calls on thread {}, the calls of {} repeat "
          "every {} calls, but only in a part of them ({} calls outside)",
          n, out.tid, token_text(failed_token), best_failure.period, best_failure.uncovered);
    } else {
      out.text = fmt::format(
          "no repeating op sequence: of the {} op calls on thread {}, the calls of {} (every {} "
          "calls) cut them into stretches that differ by up to {} calls added or removed (at "
          "most {} allowed)",
          n, out.tid, token_text(failed_token), best_failure.period, best_failure.worst,
          tolerance(best_failure.period));
    }
    return out;
  }

  const std::vector<size_t>& pos = positions[*anchor];
  out.found = true;
  out.period = chosen_cut.period;
  out.identical = chosen_cut.identical;
  out.repetitions = pos.size() - 1;
  out.anchor = token_text(*anchor);
  out.calls_before = pos.front();
  out.calls_after = n - pos.back();
  const std::vector<int64_t> bounds = times_of(*anchor);
  for (size_t j = 0; j + 1 < bounds.size(); ++j) out.spans.emplace_back(bounds[j], bounds[j + 1]);
  out.step_of_record.assign(records.size(), -1);
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].bad_time) {
      ++out.records_outside;
      continue;
    }
    int64_t t = cpu_side_start(records[i]);
    auto up = std::upper_bound(bounds.begin(), bounds.end(), t);
    size_t k = static_cast<size_t>(up - bounds.begin());
    if (k == 0 || k >= bounds.size()) {
      ++out.records_outside;
      continue;
    }
    out.step_of_record[i] = static_cast<int32_t>(k - 1);
  }
  out.text = fmt::format(
      "{} whole repetitions of a {}-call op sequence on thread {} ({} of them identical), each "
      "from a call of {}; {} calls before the first and {} from the last such call on left out "
      "({} records)",
      out.repetitions, out.period, out.tid, out.identical, out.anchor, out.calls_before,
      out.calls_after, out.records_outside);
  return out;
}

}  // namespace pyprof::prof
