#include "diff/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "diff/repeating_steps.h"
#include "prof/iterations.h"

namespace pyprof::prof {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The typical change (typical_change): rows of at least this share of each profile's busy time,
// and at least this many of them (how far beyond the rows' scatter a row's own change must go:
// diff.h, kScatterSigmas).
constexpr double kScaleMinShare = 0.001;
constexpr size_t kScaleMinRows = 8;

const char* dir_text(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// ---- one side's aggregates ----------------------------------------------------------------

// Per-sample sums of one row of one profile.
struct Samples {
  std::vector<double> time, flops, calls;
  explicit Samples(size_t n = 0) : time(n, 0.0), flops(n, 0.0), calls(n, 0.0) {}
  void grow() {
    time.push_back(0);
    flops.push_back(0);
    calls.push_back(0);
  }
};

// How a profile's records map to iterations: parse's selected steps, the detector's whole
// repetitions (repeating_steps.h), or none (one sample: the per-call and whole-profile bases).
struct SampleMap {
  bool per_step = false;
  std::vector<int32_t> of_step;  // parse's steps: step index -> sample index, -1: not selected
  // The detector's: per record, its repetition (-1: outside every whole one); null otherwise.
  const std::vector<int32_t>* of_record = nullptr;
  const ProfRecord* first = nullptr;               // data.records.data(), for of_record
  std::vector<std::pair<int64_t, int64_t>> spans;  // per sample: its [start, end)
  size_t count = 1;
  int32_t sample_of(const ProfRecord& r) const {
    if (!per_step) return 0;
    if (of_record) return (*of_record)[static_cast<size_t>(&r - first)];
    if (r.step < 0 || static_cast<size_t>(r.step) >= of_step.size()) return -1;
    return of_step[r.step];
  }
};

SampleMap parse_steps_map(const ReadResult& data) {
  SampleMap m;
  m.per_step = true;
  const Iterations& it = data.iterations;
  m.of_step.assign(it.steps.size(), -1);
  m.count = 0;
  for (size_t i = 0; i < it.steps.size(); ++i) {
    if (i < it.state.size() && it.state[i] != StepState::kSelected) continue;
    m.of_step[i] = static_cast<int32_t>(m.count++);
    m.spans.emplace_back(it.steps[i].start, it.steps[i].end);
  }
  return m;
}

SampleMap detected_steps_map(const ReadResult& data, const RepeatingSteps& found) {
  SampleMap m;
  m.per_step = true;
  m.of_record = &found.step_of_record;
  m.first = data.records.data();
  m.spans = found.spans;
  m.count = found.spans.size();
  return m;
}

// How many of parse's iterations a profile's selection leaves to compare.
size_t selected_steps(const ReadResult& data) {
  const Iterations& it = data.iterations;
  size_t n = 0;
  for (size_t i = 0; i < it.steps.size(); ++i) {
    if (i >= it.state.size() || it.state[i] == StepState::kSelected) ++n;
  }
  return n;
}

// The step level's samples of one profile: wall time and busy time per sample, counted FLOPs.
struct StepSamples {
  std::vector<double> wall, busy, flops, records;
};

StepSamples step_samples(const ReadResult& data, const SampleMap& map) {
  StepSamples s;
  s.wall.assign(map.count, 0);
  s.busy.assign(map.count, 0);
  s.flops.assign(map.count, 0);
  s.records.assign(map.count, 0);
  std::vector<std::vector<std::pair<int64_t, int64_t>>> spans(map.count);
  std::vector<int64_t> first(map.count, std::numeric_limits<int64_t>::max());
  std::vector<int64_t> last(map.count, std::numeric_limits<int64_t>::min());
  for (const ProfRecord& r : data.records) {
    int32_t k = map.sample_of(r);
    if (k < 0 || r.bad_time) continue;
    s.records[k] += 1;
    if (r.counted) s.flops[k] += r.flops;
    if (data.cpu_only) {
      s.busy[k] += static_cast<double>(r.self_duration);
    } else {
      spans[k].emplace_back(r.start, r.start + r.duration);
    }
    first[k] = std::min(first[k], r.start);
    last[k] = std::max(last[k], r.start + r.duration);
  }
  for (size_t k = 0; k < map.count; ++k) {
    if (!data.cpu_only) s.busy[k] = static_cast<double>(union_length(spans[k]));
    // A step's wall time is its span, as the iteration report has it (the records' span would
    // miss the idle time at its ends); without steps, the records' span.
    if (map.per_step) {
      s.wall[k] = static_cast<double>(map.spans[k].second - map.spans[k].first);
    } else if (first[k] <= last[k]) {
      s.wall[k] = static_cast<double>(last[k] - first[k]);
    }
  }
  return s;
}

// A row key's text columns at one level, from a record (empty: the record has no row there).
class KeyMaker {
 public:
  KeyMaker(const ReadResult& data, int depth) : data_(data), depth_(depth) {}

  std::string_view text(uint32_t id, std::string_view none = "-") const {
    std::string_view s = data_.strings.get(id);
    return s.empty() ? none : s;
  }

  // The key columns of r at `level`, appended to `keys` (a module record may have several:
  // every ancestor up to depth).
  void keys(DiffLevel level, const ProfRecord& r,
            std::vector<std::vector<std::string>>& out) const {
    out.clear();
    switch (level) {
      case DiffLevel::kStep:
        return;
      case DiffLevel::kOp:
        out.push_back({std::string(text(r.op, "(no op)")), dir_text(r.dir),
                       std::string(text(r.module)), std::string(text(r.shapes))});
        return;
      case DiffLevel::kOpType:
        out.push_back({std::string(text(r.op, "(no op)")), dir_text(r.dir)});
        return;
      case DiffLevel::kModule: {
        std::string_view path = data_.strings.get(r.module);
        if (path.empty()) return;
        int lvl = 0;
        for (size_t pos = 0;; ++lvl) {
          size_t dot = path.find('.', pos);
          if (depth_ > 0 && lvl >= depth_) break;
          out.push_back({std::string(path.substr(0, dot))});
          if (dot == std::string_view::npos) break;
          pos = dot + 1;
        }
        return;
      }
      case DiffLevel::kKernel:
        if (r.kind == Kind::kOp) return;
        out.push_back(
            {std::string(text(r.name)), std::string(text(r.module)), std::string(text(r.shapes))});
        return;
    }
  }

 private:
  const ReadResult& data_;
  int depth_;
};

// Rows of one level of one profile: key text -> samples.
using SideRows = std::map<std::vector<std::string>, Samples>;

// The call a record belongs to, on the per-call basis: its op instance (the kernels and copies
// one op call launched; prof makes each CPU op record an instance of its own), or the record
// alone (a kernel launched outside every op, a copy; every record at the kernel level, where a
// call is a launch). Negative ids are records, so they never meet an instance's.
int64_t call_of(const ProfRecord& r, size_t index, DiffLevel level) {
  if (level != DiffLevel::kKernel && r.instance != 0) return r.instance;
  return -static_cast<int64_t>(index) - 1;
}

// `per_call`: a sample per call (call_of) instead of one per sample of `map`.
SideRows side_rows(const ReadResult& data, const SampleMap& map, DiffLevel level, int depth,
                   bool per_call) {
  // Aggregated by interned ids first (one small key per record), turned into text once per
  // distinct row: a million records make a few thousand rows.
  struct IdKey {
    uint32_t a = 0, b = 0, c = 0;
    uint8_t d = 0;
    bool operator==(const IdKey&) const = default;
  };
  struct IdKeyHash {
    size_t operator()(const IdKey& k) const {
      size_t h = k.a;
      h = h * 1000003u ^ k.b;
      h = h * 1000003u ^ k.c;
      return h * 31u ^ k.d;
    }
  };
  struct Entry {
    Samples samples;
    const ProfRecord* first;
    std::unordered_map<int64_t, size_t> slot_of_call;  // per_call: call -> its sample
  };
  std::unordered_map<IdKey, Entry, IdKeyHash> by_id;
  const bool cpu = data.cpu_only;
  for (size_t index = 0; index < data.records.size(); ++index) {
    const ProfRecord& r = data.records[index];
    int32_t k = map.sample_of(r);
    if (k < 0 || r.bad_time) continue;
    IdKey key;
    switch (level) {
      case DiffLevel::kOp:
        key = {r.op, r.module, r.shapes, static_cast<uint8_t>(r.dir)};
        break;
      case DiffLevel::kOpType:
        key = {r.op, 0, 0, static_cast<uint8_t>(r.dir)};
        break;
      case DiffLevel::kModule:
        if (r.module == 0) continue;
        key = {r.module, 0, 0, 0};
        break;
      case DiffLevel::kKernel:
        if (r.kind == Kind::kOp) continue;
        key = {r.name, r.module, r.shapes, 0};
        break;
      case DiffLevel::kStep:
        continue;
    }
    // Looked up first: a row's samples (three vectors of one value per iteration) are made
    // once per distinct row, not once per record.
    auto it = by_id.find(key);
    if (it == by_id.end()) {
      it = by_id.emplace(key, Entry{Samples(per_call ? 0 : map.count), &r, {}}).first;
    }
    Entry& e = it->second;
    size_t slot = static_cast<size_t>(k);
    if (per_call) {
      auto [call, added] =
          e.slot_of_call.try_emplace(call_of(r, index, level), e.samples.time.size());
      if (added) e.samples.grow();
      slot = call->second;
    }
    Samples& s = e.samples;
    s.time[slot] += static_cast<double>(report_time(r, cpu));
    if (r.counted) s.flops[slot] += r.flops;
    s.calls[slot] += 1;
  }
  SideRows rows;
  KeyMaker maker(data, depth);
  std::vector<std::vector<std::string>> keys;
  for (const auto& [id, entry] : by_id) {
    maker.keys(level, *entry.first, keys);
    for (const std::vector<std::string>& key : keys) {
      auto it = rows.find(key);
      if (it == rows.end()) it = rows.emplace(key, Samples(per_call ? 0 : map.count)).first;
      Samples& s = it->second;
      const Samples& add = entry.samples;
      if (per_call) {  // a module's calls are those of every path under it
        s.time.insert(s.time.end(), add.time.begin(), add.time.end());
        s.flops.insert(s.flops.end(), add.flops.begin(), add.flops.end());
        s.calls.insert(s.calls.end(), add.calls.begin(), add.calls.end());
        continue;
      }
      for (size_t i = 0; i < map.count; ++i) {
        s.time[i] += add.time[i];
        s.flops[i] += add.flops[i];
        s.calls[i] += add.calls[i];
      }
    }
  }
  return rows;
}

// What a row's figures are measured against. `per_call`: the samples are calls, so a row's
// time in all that was compared is its mean times its calls, and the busy times are those of
// everything compared; else the samples are iterations (or the one whole profile) and the busy
// times are per sample.
struct Frame {
  bool per_call = false;
  double base_busy = 0, next_busy = 0;
  double scale = 1;    // the typical change, NEW / BASE
  double scatter = 0;  // the rows' scatter about it (a sigma of ln(NEW / BASE))
  // How many of the row's samples make its share of the busy time: its calls, or 1.
  double base_units(const DiffRow& row) const {
    return per_call ? static_cast<double>(row.base_time.size()) : 1.0;
  }
  double new_units(const DiffRow& row) const {
    return per_call ? static_cast<double>(row.new_time.size()) : 1.0;
  }
};

// Means, change and p-value of a row (its verdict waits for the table's q-values). `scale` is
// the profiles' typical change (typical_scale): NEW's samples are divided by it before the test,
// so that a row is judged against how everything else changed, not against a machine that ran
// the whole second profile faster or slower.
void measure(DiffRow& row, double scale) {
  row.base_ns = mean_of(row.base_time);
  row.new_ns = mean_of(row.new_time);
  row.p_value = row.q_value = kNaN;
  row.delta_pct = row.adjusted_delta_pct = kNaN;
  if (!row.in_base || !row.in_new) return;
  std::vector<double> scaled = row.new_time;
  for (double& v : scaled) v /= scale;
  row.p_value = welch_p_value(row.base_time, scaled);
  auto change = [&](double next) {
    if (row.base_ns > 0) return 100.0 * (next - row.base_ns) / row.base_ns;
    return next > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  };
  row.delta_pct = change(row.new_ns);
  row.adjusted_delta_pct = change(row.new_ns / scale);
}

// Benjamini-Hochberg q-values over the rows of one table whose change counts (changed(): large
// enough and beyond the rows' scatter), the only rows a p-value can turn into a verdict: among
// them, q < alpha keeps the expected share of false findings under alpha. A table tests many
// rows at once, and adjusting over all of them (most of which no test could make changed)
// would take the power to see a doubled op among 170 rows on a noisy machine. The other rows
// keep q = NaN.
void adjust_q_values(std::vector<DiffRow>& rows, const std::vector<int>& direction) {
  std::vector<DiffRow*> tested;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].q_value = kNaN;
    if (!std::isnan(rows[i].p_value) && direction[i] != 0) tested.push_back(&rows[i]);
  }
  std::sort(tested.begin(), tested.end(),
            [](const DiffRow* a, const DiffRow* b) { return a->p_value < b->p_value; });
  const double m = static_cast<double>(tested.size());
  double running = 1;
  for (size_t i = tested.size(); i-- > 0;) {
    running = std::min(running, tested[i]->p_value * m / static_cast<double>(i + 1));
    tested[i]->q_value = running;
  }
}

// +1 when the row's own change (against the typical one) is at least --min-change upwards and
// beyond the scatter of the rows about the typical change, -1 likewise downwards, else 0: on a
// machine that ran NEW 35% faster in general, an op that ran 15% faster (a memory-bound op a
// busy machine slowed more) is no regression; an op whose calls doubled is far outside that
// scatter. New and gone rows: 0 (their verdict says what they are); rows whose time moved by
// less than kScaleMinShare of BASE's busy time (per iteration; per call: over BASE's calls): 0.
// The step rows pass a Frame without busy time: judged on their change alone.
int changed(const DiffRow& row, const DiffOptions& options, const Frame& frame) {
  if (!row.in_base || !row.in_new) return 0;
  // A change of less than kScaleMinShare of the busy time (a few µs of a ms step) is no
  // finding, whatever its percent: the smallest ops are the noisiest.
  if (frame.base_busy > 0 && std::fabs(row.new_ns - row.base_ns) * frame.base_units(row) <
                                 kScaleMinShare * frame.base_busy) {
    return 0;
  }
  const double m = options.min_change_pct;
  const double own = row.adjusted_delta_pct;
  const double beyond = kScatterSigmas * frame.scatter;
  const double own_log = row.base_ns > 0 && row.new_ns > 0 ? std::log(1 + own / 100)
                                                           : (own > 0   ? INFINITY
                                                              : own < 0 ? -INFINITY
                                                                        : 0.0);
  return own >= m && own_log > beyond ? 1 : own <= -m && own_log < -beyond ? -1 : 0;
}

// The verdict from the row's change and its q-value. A row in both profiles without a test
// (fewer than 2 samples a side: p NaN) gets none: kUntested.
void decide(DiffRow& row, const DiffOptions& options, int direction) {
  if (!row.in_base) {
    row.verdict = Verdict::kNew;
  } else if (!row.in_new) {
    row.verdict = Verdict::kGone;
  } else if (std::isnan(row.p_value)) {
    row.verdict = Verdict::kUntested;
  } else if (direction == 0 || !(row.q_value < options.alpha)) {
    row.verdict = Verdict::kSame;
  } else {
    row.verdict = direction > 0 ? Verdict::kSlower : Verdict::kFaster;
  }
}

// The CI gates. --fail-above (fail_above_pct), for every row but the step rows: a row fails
// when it is slower (decide(): against the typical change, beyond the rows' scatter,
// significant) by more than the limit and the time it added (at BASE's machine speed) is at
// least min_share_pct of BASE's busy time (per iteration; per call: over BASE's calls of it):
// a 60% slower op of 0.2% of the step is not worth a red build; a new row when its share of
// the busy time is over the limit (per iteration: of BASE's at BASE's speed; per call: of
// NEW's, the windows being of different lengths). --fail-step-above (fail_step_above_pct),
// for the step rows alone: slower by more than its limit, absolute (they cannot tell a slower
// machine from slower code, so it is asked for apart). An untested row fails on the size of
// its change alone (as `changed` judges it) only with --gate-without-test; else the gate skips
// it (gate_skipped).
void gate(DiffRow& row, int direction, bool step_row, const Frame& frame,
          const DiffOptions& options) {
  const bool untested = row.verdict == Verdict::kUntested;
  const bool slower = row.verdict == Verdict::kSlower || (untested && direction > 0);
  if (step_row) {
    row.base_share_pct = row.base_ns > 0 ? 100 : kNaN;  // of itself
    if (!options.fail_step_above_pct) return;
    if (untested && !options.gate_without_test) {
      row.gate_skipped = true;
      return;
    }
    row.fails_gate = slower && row.delta_pct > *options.fail_step_above_pct;
    return;
  }
  const double base_busy = frame.base_busy;
  row.base_share_pct =
      base_busy > 0 ? 100.0 * row.base_ns * frame.base_units(row) / base_busy : kNaN;
  if (!options.fail_above_pct || base_busy <= 0) return;
  if (untested && !options.gate_without_test) {
    row.gate_skipped = true;
    return;
  }
  const double limit = *options.fail_above_pct;
  if (slower) {
    double added_ns = (row.new_ns / frame.scale - row.base_ns) * frame.base_units(row);
    row.fails_gate =
        row.adjusted_delta_pct > limit && 100.0 * added_ns / base_busy >= options.min_share_pct;
  } else if (row.verdict == Verdict::kNew) {
    double new_share =
        frame.per_call
            ? (frame.next_busy > 0 ? 100.0 * row.new_ns * frame.new_units(row) / frame.next_busy
                                   : 0.0)
            : 100.0 * row.new_ns / frame.scale / base_busy;
    row.fails_gate = new_share >= options.min_share_pct && new_share > limit;
  }
}

// The typical change between the profiles: the median over the op rows both hold (each at
// least kScaleMinShare of its profile's busy time, so that the noisiest tiny rows stay out) of
// NEW's time over BASE's (per iteration, or per call). A machine that ran the second profile
// 15% slower throughout moves every row alike and the median with them; an op that regressed
// moves its own row only, and a median is not moved by a few rows, however large. 1 (no
// normalisation) with fewer than kScaleMinRows such rows. Rows also scatter about it, more on
// a busy, shared machine: ops differ in how load slows them (memory-bound ones more). A row's
// own change counts only beyond kScatterSigmas times that scatter (a robust sigma: the rows'
// median absolute deviation).

struct TypicalChange {
  double scale = 1;    // NEW / BASE, the median over the rows
  double scatter = 0;  // the rows' scatter about it: 1.4826 x MAD of ln(NEW / BASE), a sigma
  size_t rows = 0;     // the rows it is the median of (below kScaleMinRows: none, no scaling)
};

TypicalChange typical_change(const SideRows& base, const SideRows& next, const Frame& frame) {
  // A row's share of the busy time: per sample, or over all its calls.
  auto small = [&](const Samples& s, double busy) {
    double t = mean_of(s.time);
    if (frame.per_call) t *= static_cast<double>(s.time.size());
    return t < kScaleMinShare * busy;
  };
  std::vector<double> logs;
  for (const auto& [key, b] : base) {
    auto it = next.find(key);
    if (it == next.end()) continue;
    double bt = mean_of(b.time), nt = mean_of(it->second.time);
    if (bt <= 0 || nt <= 0 || small(b, frame.base_busy) || small(it->second, frame.next_busy)) {
      continue;
    }
    logs.push_back(std::log(nt / bt));
  }
  TypicalChange t;
  t.rows = logs.size();
  if (logs.size() < kScaleMinRows) return t;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  const double m = median(logs);
  std::vector<double> deviations;
  for (double l : logs) deviations.push_back(std::fabs(l - m));
  t.scale = std::exp(m);
  t.scatter = 1.4826 * median(deviations);  // the MAD of a normal sample, as its sigma
  return t;
}

// The op calls a profile's compared records make (call_of at the op level).
size_t count_calls(const ReadResult& data, const SampleMap& map) {
  std::unordered_set<int64_t> calls;
  for (size_t i = 0; i < data.records.size(); ++i) {
    const ProfRecord& r = data.records[i];
    if (r.bad_time || map.sample_of(r) < 0) continue;
    calls.insert(call_of(r, i, DiffLevel::kOp));
  }
  return calls.size();
}

// The summary's line on one profile's iterations: parse's, the detector's, or none.
std::string side_iterations_text(const ReadResult& data, const RepeatingSteps* detected,
                                 DiffBasis basis, DiffBasis requested) {
  const Iterations& it = data.iterations;
  if (it.steps.empty()) {
    std::string text = "none in the profile";
    if (detected) text += detected->found ? "; detected: " + detected->text : "; " + detected->text;
    return text;
  }
  std::string text = fmt::format("{} by {}{}", it.steps.size(), it.rule,
                                 it.range.empty() ? "" : " (" + it.range + ")");
  if (!it.selection.empty()) text += ", compared " + it.selection;
  if (it.warm_up_wall > 0) text += " (warm-up step 0 left out)";
  if (basis == DiffBasis::kCall) {
    text += requested == DiffBasis::kCall
                ? "; compared per call (--basis call)"
                : "; compared per call (fewer than 2 iterations on a side)";
  }
  if (basis == DiffBasis::kProfile) text += "; compared whole (--basis profile)";
  return text;
}

// "no iterations", "1 iteration", "7 iterations".
std::string count_text(size_t iterations) {
  if (iterations == 0) return "no iterations";
  return fmt::format("{} iteration{}", iterations, iterations == 1 ? "" : "s");
}

// What a level's samples are on a basis: the Basis column and the summary's words.
const char* level_basis(DiffLevel level, DiffBasis basis) {
  if (basis == DiffBasis::kIteration) return "per iteration";
  if (basis == DiffBasis::kProfile || level == DiffLevel::kStep) return "whole profile";
  if (level == DiffLevel::kKernel) return "per launch";
  if (level == DiffLevel::kModule) return "per op call";
  return "per call";
}

// The gates' outcome over all tables: the failing rows by kind, the untested rows a gate
// skipped, and the refusal: a gate asked for where none of the rows it applies to could be
// tested judges nothing, and passing it would tell CI that nothing regressed, so it refuses
// (unless --gate-without-test made it a gate on the size of a change alone).
void settle_gates(DiffResult& result, const DiffOptions& options) {
  size_t tested = 0, untested = 0;
  bool step_untested = false;
  for (const DiffTable& t : result.tables) {
    for (const DiffRow& row : t.rows) {
      if (!row.in_base || !row.in_new) continue;
      if (t.level == DiffLevel::kStep) {
        step_untested = step_untested || std::isnan(row.p_value);
      } else {
        ++(std::isnan(row.p_value) ? untested : tested);
      }
    }
  }
  if (!options.gate_without_test) {
    std::vector<std::string> refused;
    if (options.fail_above_pct && tested == 0 && untested > 0) {
      refused.push_back(fmt::format(
          "--fail-above: none of the {} rows in both profiles could be tested (fewer than 2 "
          "samples a side)",
          untested));
    }
    if (options.fail_step_above_pct && step_untested) {
      refused.push_back(
          "--fail-step-above: the step rows are untested (fewer than 2 iterations a side)");
    }
    if (!refused.empty()) {
      result.gate_refused = refused[0];
      if (refused.size() > 1) result.gate_refused += "; " + refused[1];
      result.gate_refused +=
          ": a gate without a test would judge the size of a change alone; "
          "--gate-without-test asks for that";
      for (DiffTable& t : result.tables) {
        for (DiffRow& row : t.rows) row.fails_gate = false;
      }
    }
  }
  for (const DiffTable& t : result.tables) {
    for (const DiffRow& row : t.rows) {
      result.gate_skipped += row.gate_skipped ? 1 : 0;
      if (!row.fails_gate) continue;
      ++result.failing_rows;
      if (row.verdict == Verdict::kNew) {
        ++result.failing_new;
      } else if (row.verdict == Verdict::kUntested) {
        ++result.failing_untested;
      } else {
        ++result.failing_slower;
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& diff_level_names() {
  static const std::vector<std::string> names = {"step", "op", "op_type", "module", "kernel"};
  return names;
}

bool diff_level_of(const std::string& name, DiffLevel& out) {
  static const std::map<std::string, DiffLevel> levels = {{"step", DiffLevel::kStep},
                                                          {"op", DiffLevel::kOp},
                                                          {"op_type", DiffLevel::kOpType},
                                                          {"module", DiffLevel::kModule},
                                                          {"kernel", DiffLevel::kKernel}};
  auto it = levels.find(name);
  if (it == levels.end()) return false;
  out = it->second;
  return true;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kSame:
      return "same";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kFaster:
      return "faster";
    case Verdict::kNew:
      return "new";
    case Verdict::kGone:
      return "gone";
    case Verdict::kUntested:
      return "untested";
  }
  return "?";
}

const char* diff_basis_name(DiffBasis b) {
  switch (b) {
    case DiffBasis::kAuto:
      return "auto";
    case DiffBasis::kIteration:
      return "iteration";
    case DiffBasis::kCall:
      return "call";
    case DiffBasis::kProfile:
      return "profile";
  }
  return "?";
}

bool diff_basis_of(const std::string& name, DiffBasis& out) {
  for (DiffBasis b :
       {DiffBasis::kAuto, DiffBasis::kIteration, DiffBasis::kCall, DiffBasis::kProfile}) {
    if (name == diff_basis_name(b)) {
      out = b;
      return true;
    }
  }
  return false;
}

DiffResult diff_profiles(const ReadResult& base, const ReadResult& next,
                         const std::vector<DiffLevel>& levels, const DiffOptions& options) {
  DiffResult result;
  // The basis: per iteration when both profiles have two or more, parse's or the detector's
  // (repeating_steps.h, tried on a profile parse found none in), else per call (auto).
  const bool base_parsed = !base.iterations.steps.empty();
  const bool next_parsed = !next.iterations.steps.empty();
  RepeatingSteps base_found, next_found;
  const bool detect = options.basis == DiffBasis::kAuto || options.basis == DiffBasis::kIteration;
  if (detect && !base_parsed) base_found = detect_repeating_steps(base);
  if (detect && !next_parsed) next_found = detect_repeating_steps(next, base_found.anchor);
  const size_t base_iterations = base_parsed ? selected_steps(base) : base_found.repetitions;
  const size_t next_iterations = next_parsed ? selected_steps(next) : next_found.repetitions;
  DiffBasis basis = options.basis;
  if (basis == DiffBasis::kAuto) {
    basis = base_iterations >= 2 && next_iterations >= 2 ? DiffBasis::kIteration : DiffBasis::kCall;
  } else if (basis == DiffBasis::kIteration && (base_iterations == 0 || next_iterations == 0)) {
    const bool base_none = base_iterations == 0;
    const RepeatingSteps& found = base_none ? base_found : next_found;
    result.error = fmt::format(
        "--basis iteration: {} has no iterations{}", base_none ? "BASE" : "NEW",
        (base_none ? base_parsed : next_parsed) ? " selected"
                                                : " (parse found none; " + found.text + ")");
    return result;
  }
  result.basis = basis;
  const bool per_call = basis == DiffBasis::kCall;
  SampleMap base_map, next_map;  // one sample: the per-call and whole-profile bases
  if (basis == DiffBasis::kIteration) {
    base_map = base_parsed ? parse_steps_map(base) : detected_steps_map(base, base_found);
    next_map = next_parsed ? parse_steps_map(next) : detected_steps_map(next, next_found);
  }
  if (basis == DiffBasis::kIteration && (base_map.count < 2 || next_map.count < 2)) {
    result.notes.push_back(fmt::format(
        "{} and {} iterations compared: the test needs 2 or more on each side, so no row is "
        "tested (verdict `untested`)",
        base_map.count, next_map.count));
  } else if (basis == DiffBasis::kIteration && base_parsed != next_parsed) {
    result.notes.push_back(fmt::format(
        "{}'s iterations are parse's and {}'s were detected in its repeating op sequence: a "
        "detected one runs from one anchor call to the next, the time between steps included",
        base_parsed ? "BASE" : "NEW", base_parsed ? "NEW" : "BASE"));
  } else if (per_call) {
    result.notes.push_back(fmt::format(
        "{}: compared per call (each call a sample: time per call, tested; calls shown side by "
        "side). A fixed-length capture's totals measure where it was cut, not the work",
        options.basis == DiffBasis::kCall
            ? "--basis call"
            : fmt::format("{} in BASE and {} in NEW (fewer than 2 on a side)",
                          count_text(base_iterations), count_text(next_iterations))));
  } else if (basis == DiffBasis::kProfile) {
    result.notes.push_back(
        "--basis profile: each profile is one sample, its whole span, so no row is tested; "
        "totals compare only when both profiles hold the same work (not fixed-length windows)");
  }
  if (base.cpu_only != next.cpu_only) {
    result.notes.push_back(fmt::format(
        "BASE is a {} profile and NEW a {} one: their times are of different things (GPU "
        "kernel time, CPU op time)",
        base.cpu_only ? "CPU-only" : "GPU", next.cpu_only ? "CPU-only" : "GPU"));
  }
  StepSamples base_steps = step_samples(base, base_map), next_steps = step_samples(next, next_map);
  auto describe = [&](const ReadResult& data, const SampleMap& map, const StepSamples& steps,
                      const RepeatingSteps& found, bool parsed) {
    DiffSide side;
    side.source = data.source;
    side.cpu_only = data.cpu_only;
    side.samples = map.count;
    const bool ran = detect && !parsed;
    side.iterations = side_iterations_text(data, ran ? &found : nullptr, basis, options.basis);
    side.steps_detected = basis == DiffBasis::kIteration && !parsed;
    side.busy_ns = mean_of(steps.busy);
    side.wall_ns = mean_of(steps.wall);
    side.calls = count_calls(data, map);
    return side;
  };
  result.base = describe(base, base_map, base_steps, base_found, base_parsed);
  result.next = describe(next, next_map, next_steps, next_found, next_parsed);
  Frame frame;
  frame.per_call = per_call;
  frame.base_busy = result.base.busy_ns;
  frame.next_busy = result.next.busy_ns;
  // The op level's rows serve the typical change and, when asked for, the op table: one pass
  // over each profile's records for both.
  SideRows base_ops = side_rows(base, base_map, DiffLevel::kOp, 0, per_call);
  SideRows next_ops = side_rows(next, next_map, DiffLevel::kOp, 0, per_call);
  const TypicalChange typical = typical_change(base_ops, next_ops, frame);
  bool ops_used = false;
  frame.scale = typical.scale;
  frame.scatter = typical.scatter;
  result.typical_change_pct = 100.0 * (typical.scale - 1);
  result.typical_rows = typical.rows;
  result.row_scatter_pct = 100.0 * (std::exp(typical.scatter) - 1);
  if (typical.rows < kScaleMinRows) {
    result.notes.push_back(fmt::format(
        "{} op rows in both profiles (at least {:g}% of the busy time each): too few to tell a "
        "machine's uniform change from the ops' own, so rows are judged on their raw change",
        typical.rows, 100 * kScaleMinShare));
  }

  for (DiffLevel level : levels) {
    DiffTable table;
    table.level = level;
    table.basis = level_basis(level, basis);
    if (level == DiffLevel::kStep) {
      table.title = basis == DiffBasis::kIteration ? "diff: per iteration" : "diff: whole profile";
      table.key_headers = {"Metric"};
      auto step_row = [&](const char* name, const std::vector<double>& b,
                          const std::vector<double>& n) {
        DiffRow row;
        row.key = {name};
        row.in_base = row.in_new = true;
        row.base_time = b;
        row.new_time = n;
        row.base_flops = mean_of(base_steps.flops);
        row.new_flops = mean_of(next_steps.flops);
        row.base_calls = mean_of(base_steps.records);
        row.new_calls = mean_of(next_steps.records);
        measure(row, 1);  // the step rows are absolute: what the run took
        table.rows.push_back(std::move(row));
      };
      step_row(basis == DiffBasis::kIteration ? "step time" : "wall time", base_steps.wall,
               next_steps.wall);
      step_row(base.cpu_only ? "CPU op time" : "GPU busy", base_steps.busy, next_steps.busy);
      // The step rows are the headline, each a test of its own: not adjusted for the others.
      for (DiffRow& row : table.rows) {
        row.q_value = row.p_value;
        int direction = changed(row, options, Frame{});
        decide(row, options, direction);
        gate(row, direction, true, frame, options);
      }
    } else {
      static const std::map<DiffLevel, std::pair<const char*, std::vector<std::string>>> info = {
          {DiffLevel::kOp,
           {"diff: ops (op, direction, module, shapes)", {"Op", "Direction", "Module", "Shapes"}}},
          {DiffLevel::kOpType, {"diff: op types", {"Op", "Direction"}}},
          {DiffLevel::kModule, {"diff: modules (rolled up)", {"Module"}}},
          {DiffLevel::kKernel,
           {"diff: kernels (kernel, module, shapes)", {"Kernel", "Module", "Shapes"}}},
      };
      table.title = info.at(level).first;
      if (level == DiffLevel::kModule && options.depth > 0) {
        table.title = fmt::format("diff: modules (rolled up, depth {})", options.depth);
      }
      table.key_headers = info.at(level).second;
      if (level == DiffLevel::kKernel && base.cpu_only && next.cpu_only) {
        result.notes.push_back("kernel level: both profiles are CPU-only (no kernels)");
      }
      SideRows b, n;
      if (level == DiffLevel::kOp && !ops_used) {
        b = std::move(base_ops);  // the table takes the samples over
        n = std::move(next_ops);
        ops_used = true;
      } else {
        b = side_rows(base, base_map, level, options.depth, per_call);
        n = side_rows(next, next_map, level, options.depth, per_call);
      }
      std::map<std::vector<std::string>, DiffRow> merged;
      auto absorb = [&](SideRows& side, bool is_base) {
        for (auto& [key, samples] : side) {
          DiffRow& row = merged[key];
          row.key = key;
          (is_base ? row.in_base : row.in_new) = true;
          (is_base ? row.base_flops : row.new_flops) = mean_of(samples.flops);
          (is_base ? row.base_calls : row.new_calls) =
              per_call ? static_cast<double>(samples.time.size()) : mean_of(samples.calls);
          (is_base ? row.base_time : row.new_time) = std::move(samples.time);
        }
      };
      absorb(b, true);
      absorb(n, false);
      for (auto& [key, row] : merged) {
        measure(row, frame.scale);
        table.rows.push_back(std::move(row));
      }
      std::vector<int> direction;
      for (const DiffRow& row : table.rows) direction.push_back(changed(row, options, frame));
      adjust_q_values(table.rows, direction);
      for (size_t i = 0; i < table.rows.size(); ++i) {
        DiffRow& row = table.rows[i];
        decide(row, options, direction[i]);
        gate(row, direction[i], false, frame, options);
      }
    }
    if (level != DiffLevel::kStep) {  // the step rows keep their order: step, then busy time
      // Largest time change first: per sample, or on the per-call basis over the row's calls
      // (the time at stake; a change per call of a frequent op weighs more).
      auto stake = [&](const DiffRow& r) {
        double units = !per_call   ? 1.0
                       : r.in_base ? static_cast<double>(r.base_time.size())
                                   : static_cast<double>(r.new_time.size());
        return std::fabs(r.new_ns - r.base_ns) * units;
      };
      std::stable_sort(table.rows.begin(), table.rows.end(),
                       [&](const DiffRow& a, const DiffRow& b) { return stake(a) > stake(b); });
    }
    result.tables.push_back(std::move(table));
  }
  settle_gates(result, options);
  return result;
}

}  // namespace pyprof::prof
