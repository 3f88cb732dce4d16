#include "prof/diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "prof/iterations.h"

namespace pyprof::prof {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The typical change (typical_change): rows of at least this share of each profile's busy time,
// at least this many of them, and how far beyond the rows' scatter a row's own change must go.
constexpr double kScaleMinShare = 0.001;
constexpr size_t kScaleMinRows = 8;
constexpr double kScatterSigmas = 3;

const char* dir_text(Dir d) {
  return d == Dir::kFprop ? "fprop" : d == Dir::kBprop ? "bprop" : "-";
}

// ---- statistics ---------------------------------------------------------------------------

// The continued fraction of the regularized incomplete beta function I_x(a, b), by the
// modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxTerms = 300;
  constexpr double kEpsilon = 1e-15, kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxTerms; ++m) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));  // even step
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));  // odd step
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < kEpsilon) break;
  }
  return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  // The symmetry I_x(a, b) = 1 - I_{1-x}(b, a) keeps the fraction in its fast region.
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

struct Moments {
  double mean = 0, variance = 0;  // sample variance (n - 1)
};
Moments moments_of(const std::vector<double>& v) {
  Moments m;
  if (v.empty()) return m;
  m.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - m.mean) * (x - m.mean);
    m.variance = ss / static_cast<double>(v.size() - 1);
  }
  return m;
}

double mean_of(const std::vector<double>& v) { return moments_of(v).mean; }

// ---- one side's aggregates ----------------------------------------------------------------

// Per-sample sums of one row of one profile.
struct Samples {
  std::vector<double> time, flops, calls;
  explicit Samples(size_t n = 0) : time(n, 0.0), flops(n, 0.0), calls(n, 0.0) {}
};

// How a profile's records map to samples: per selected iteration, or one sample.
struct SampleMap {
  bool per_step = false;
  std::vector<int32_t> of_step;  // step index -> sample index, -1: not selected
  size_t count = 1;
  int32_t sample_of(const ProfRecord& r) const {
    if (!per_step) return 0;
    if (r.step < 0 || static_cast<size_t>(r.step) >= of_step.size()) return -1;
    return of_step[r.step];
  }
};

SampleMap sample_map(const ReadResult& data, bool per_step) {
  SampleMap m;
  m.per_step = per_step;
  if (!per_step) return m;
  const Iterations& it = data.iterations;
  m.of_step.assign(it.steps.size(), -1);
  m.count = 0;
  for (size_t i = 0; i < it.steps.size(); ++i) {
    if (i < it.state.size() && it.state[i] != StepState::kSelected) continue;
    m.of_step[i] = static_cast<int32_t>(m.count++);
  }
  return m;
}

// Whether a profile's selection leaves at least one iteration to compare per step.
bool has_selected_steps(const ReadResult& data) {
  const Iterations& it = data.iterations;
  if (it.steps.empty()) return false;
  for (size_t i = 0; i < it.steps.size(); ++i) {
    if (i >= it.state.size() || it.state[i] == StepState::kSelected) return true;
  }
  return false;
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
    if (first[k] <= last[k]) s.wall[k] = static_cast<double>(last[k] - first[k]);
  }
  if (map.per_step) {
    // A step's wall time is its span, as the iteration report has it (the records' span would
    // miss the idle time at its ends).
    const Iterations& it = data.iterations;
    for (size_t i = 0; i < map.of_step.size(); ++i) {
      if (map.of_step[i] >= 0) {
        s.wall[map.of_step[i]] = static_cast<double>(it.steps[i].end - it.steps[i].start);
      }
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

SideRows side_rows(const ReadResult& data, const SampleMap& map, DiffLevel level, int depth) {
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
  std::unordered_map<IdKey, std::pair<Samples, const ProfRecord*>, IdKeyHash> by_id;
  const bool cpu = data.cpu_only;
  for (const ProfRecord& r : data.records) {
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
    if (it == by_id.end()) it = by_id.emplace(key, std::make_pair(Samples(map.count), &r)).first;
    Samples& s = it->second.first;
    s.time[k] += static_cast<double>(report_time(r, cpu));
    if (r.counted) s.flops[k] += r.flops;
    s.calls[k] += 1;
  }
  SideRows rows;
  KeyMaker maker(data, depth);
  std::vector<std::vector<std::string>> keys;
  for (const auto& [id, entry] : by_id) {
    maker.keys(level, *entry.second, keys);
    for (const std::vector<std::string>& key : keys) {
      auto it = rows.find(key);
      if (it == rows.end()) it = rows.emplace(key, Samples(map.count)).first;
      Samples& s = it->second;
      for (size_t i = 0; i < map.count; ++i) {
        s.time[i] += entry.first.time[i];
        s.flops[i] += entry.first.flops[i];
        s.calls[i] += entry.first.calls[i];
      }
    }
  }
  return rows;
}

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
// less than kScaleMinShare of BASE's busy time per iteration: 0.
int changed(const DiffRow& row, const DiffOptions& options, double scatter, double base_busy) {
  if (!row.in_base || !row.in_new) return 0;
  // A change of less than kScaleMinShare of the busy time (a few µs of a ms step) is no
  // finding, whatever its percent: the smallest ops are the noisiest.
  if (base_busy > 0 && std::fabs(row.new_ns - row.base_ns) < kScaleMinShare * base_busy) return 0;
  const double m = options.min_change_pct;
  const double own = row.adjusted_delta_pct;
  const double beyond = kScatterSigmas * scatter;
  const double own_log = row.base_ns > 0 && row.new_ns > 0 ? std::log(1 + own / 100)
                                                           : (own > 0   ? INFINITY
                                                              : own < 0 ? -INFINITY
                                                                        : 0.0);
  return own >= m && own_log > beyond ? 1 : own <= -m && own_log < -beyond ? -1 : 0;
}

// The verdict from the row's change and its q-value. Untested rows (fewer than 2 samples a
// side: p and q NaN) are judged by the change alone.
void decide(DiffRow& row, const DiffOptions& options, int direction) {
  if (!row.in_base) {
    row.verdict = Verdict::kNew;
  } else if (!row.in_new) {
    row.verdict = Verdict::kGone;
  } else if (direction == 0 || (!std::isnan(row.p_value) && !(row.q_value < options.alpha))) {
    row.verdict = Verdict::kSame;
  } else {
    row.verdict = direction > 0 ? Verdict::kSlower : Verdict::kFaster;
  }
}

// The CI gates. --fail-above (fail_above_pct), for every row but the step rows: a row fails
// when it is slower (decide(): against the typical change, beyond the rows' scatter,
// significant) by more than the limit and the time it added (at BASE's machine speed) is at
// least min_share_pct of BASE's busy time per iteration (a 60% slower op of 0.2% of the step is
// not worth a red build); a new row when its time is over the limit's share of that busy time.
// --fail-step-above (fail_step_above_pct), for the step rows alone: slower by more than its
// limit, absolute (they cannot tell a slower machine from slower code, so it is asked for apart).
void gate(DiffRow& row, bool step_row, double base_busy_ns, double scale,
          const DiffOptions& options) {
  row.base_share_pct = base_busy_ns > 0 ? 100.0 * row.base_ns / base_busy_ns : kNaN;
  if (step_row) {
    row.fails_gate = options.fail_step_above_pct && row.verdict == Verdict::kSlower &&
                     row.delta_pct > *options.fail_step_above_pct;
    return;
  }
  if (!options.fail_above_pct || base_busy_ns <= 0) return;
  const double limit = *options.fail_above_pct;
  if (row.verdict == Verdict::kSlower) {
    double added_ns = row.new_ns / scale - row.base_ns;
    row.fails_gate =
        row.adjusted_delta_pct > limit && 100.0 * added_ns / base_busy_ns >= options.min_share_pct;
  } else if (row.verdict == Verdict::kNew) {
    double new_share = 100.0 * row.new_ns / scale / base_busy_ns;
    row.fails_gate = new_share >= options.min_share_pct && new_share > limit;
  }
}

// The typical change between the profiles: the median over the op rows both hold (each at
// least kScaleMinShare of its profile's busy time, so that the noisiest tiny rows stay out) of
// NEW's time over BASE's. A machine that ran the second profile 15% slower throughout moves
// every row alike and the median with them; an op that regressed moves its own row only, and
// a median is not moved by a few rows, however large. 1 (no normalisation) with fewer than
// kScaleMinRows such rows. Rows also scatter about it, more on a busy, shared machine: ops
// differ in how load slows them (memory-bound ones more). A row's own change counts only beyond
// kScatterSigmas times that scatter (a robust sigma: the rows' median absolute deviation).

struct TypicalChange {
  double scale = 1;    // NEW / BASE, the median over the rows
  double scatter = 0;  // the rows' scatter about it: 1.4826 x MAD of ln(NEW / BASE), a sigma
  size_t rows = 0;     // the rows it is the median of (below kScaleMinRows: none, no scaling)
};

TypicalChange typical_change(const SideRows& base, const SideRows& next, double base_busy,
                             double next_busy) {
  std::vector<double> logs;
  for (const auto& [key, b] : base) {
    auto it = next.find(key);
    if (it == next.end()) continue;
    double bt = mean_of(b.time), nt = mean_of(it->second.time);
    if (bt <= 0 || nt <= 0 || bt < kScaleMinShare * base_busy || nt < kScaleMinShare * next_busy) {
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

std::string side_iterations_text(const ReadResult& data, bool per_step) {
  const Iterations& it = data.iterations;
  if (it.steps.empty()) return "none detected: the whole profile is one sample";
  std::string text = fmt::format("{} by {}{}", it.steps.size(), it.rule,
                                 it.range.empty() ? "" : " (" + it.range + ")");
  if (!it.selection.empty()) text += ", compared " + it.selection;
  if (it.warm_up_wall > 0) text += " (warm-up step 0 left out)";
  if (!per_step) text += "; compared as one sample (the other profile has none)";
  return text;
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
  }
  return "?";
}

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return kNaN;
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double welch_p_value(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return kNaN;
  Moments ma = moments_of(a), mb = moments_of(b);
  double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  double va = ma.variance / na, vb = mb.variance / nb;
  if (va + vb <= 0) return ma.mean == mb.mean ? 1.0 : 0.0;
  double t = (mb.mean - ma.mean) / std::sqrt(va + vb);
  // Welch-Satterthwaite degrees of freedom.
  double df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  return student_t_two_sided_p(t, df);
}

DiffResult diff_profiles(const ReadResult& base, const ReadResult& next,
                         const std::vector<DiffLevel>& levels, const DiffOptions& options) {
  DiffResult result;
  const bool per_step = has_selected_steps(base) && has_selected_steps(next);
  SampleMap base_map = sample_map(base, per_step), next_map = sample_map(next, per_step);
  if (!per_step && (has_selected_steps(base) || has_selected_steps(next))) {
    result.notes.push_back(
        "only one profile has iterations: both are compared whole, as one sample each, so no "
        "row is tested for significance");
  } else if (!per_step) {
    result.notes.push_back(
        "neither profile has iterations: each is one sample, so no row is tested for "
        "significance (the size of a change alone decides its verdict)");
  } else if (base_map.count < 2 || next_map.count < 2) {
    result.notes.push_back(fmt::format(
        "{} and {} iterations compared: the test needs 2 or more on each side, so the size of a "
        "change alone decides its verdict",
        base_map.count, next_map.count));
  }
  if (base.cpu_only != next.cpu_only) {
    result.notes.push_back(fmt::format(
        "BASE is a {} profile and NEW a {} one: their times are of different things (GPU "
        "kernel time, CPU op time)",
        base.cpu_only ? "CPU-only" : "GPU", next.cpu_only ? "CPU-only" : "GPU"));
  }
  StepSamples base_steps = step_samples(base, base_map), next_steps = step_samples(next, next_map);
  auto describe = [&](const ReadResult& data, const SampleMap& map, const StepSamples& steps) {
    DiffSide side;
    side.source = data.source;
    side.cpu_only = data.cpu_only;
    side.samples = map.count;
    side.iterations = side_iterations_text(data, per_step);
    side.busy_ns = mean_of(steps.busy);
    return side;
  };
  result.base = describe(base, base_map, base_steps);
  result.next = describe(next, next_map, next_steps);
  const double base_busy = result.base.busy_ns;
  // The op level's rows serve the typical change and, when asked for, the op table: one pass
  // over each profile's records for both.
  SideRows base_ops = side_rows(base, base_map, DiffLevel::kOp, 0);
  SideRows next_ops = side_rows(next, next_map, DiffLevel::kOp, 0);
  const TypicalChange typical = typical_change(base_ops, next_ops, base_busy, result.next.busy_ns);
  bool ops_used = false;
  const double scale = typical.scale;
  const size_t scale_rows = typical.rows;
  result.typical_change_pct = 100.0 * (scale - 1);
  result.typical_rows = scale_rows;
  result.row_scatter_pct = 100.0 * (std::exp(typical.scatter) - 1);
  if (scale_rows < kScaleMinRows) {
    result.notes.push_back(fmt::format(
        "{} op rows in both profiles (at least {:g}% of the busy time each): too few to tell a "
        "machine's uniform change from the ops' own, so rows are judged on their raw change",
        scale_rows, 100 * kScaleMinShare));
  }

  for (DiffLevel level : levels) {
    DiffTable table;
    table.level = level;
    if (level == DiffLevel::kStep) {
      table.title = per_step ? "diff: per iteration" : "diff: whole profile";
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
      step_row(per_step ? "step time" : "wall time", base_steps.wall, next_steps.wall);
      step_row(base.cpu_only ? "CPU op time" : "GPU busy", base_steps.busy, next_steps.busy);
      // The step rows are the headline, each a test of its own: not adjusted for the others.
      for (DiffRow& row : table.rows) {
        row.q_value = row.p_value;
        decide(row, options, changed(row, options, 0, 0));
        gate(row, true, row.base_ns, 1, options);
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
        b = side_rows(base, base_map, level, options.depth);
        n = side_rows(next, next_map, level, options.depth);
      }
      std::map<std::vector<std::string>, DiffRow> merged;
      auto absorb = [&](SideRows& side, bool is_base) {
        for (auto& [key, samples] : side) {
          DiffRow& row = merged[key];
          row.key = key;
          (is_base ? row.in_base : row.in_new) = true;
          (is_base ? row.base_time : row.new_time) = std::move(samples.time);
          (is_base ? row.base_flops : row.new_flops) = mean_of(samples.flops);
          (is_base ? row.base_calls : row.new_calls) = mean_of(samples.calls);
        }
      };
      absorb(b, true);
      absorb(n, false);
      for (auto& [key, row] : merged) {
        measure(row, scale);
        table.rows.push_back(std::move(row));
      }
      std::vector<int> direction;
      for (const DiffRow& row : table.rows) {
        direction.push_back(changed(row, options, typical.scatter, base_busy));
      }
      adjust_q_values(table.rows, direction);
      for (size_t i = 0; i < table.rows.size(); ++i) {
        DiffRow& row = table.rows[i];
        decide(row, options, direction[i]);
        gate(row, false, base_busy, scale, options);
      }
    }
    if (level != DiffLevel::kStep) {  // the step rows keep their order: step, then busy time
      std::stable_sort(table.rows.begin(), table.rows.end(),
                       [](const DiffRow& a, const DiffRow& b) {
                         return std::fabs(a.new_ns - a.base_ns) > std::fabs(b.new_ns - b.base_ns);
                       });
    }
    for (const DiffRow& row : table.rows) result.failing_rows += row.fails_gate ? 1 : 0;
    result.tables.push_back(std::move(table));
  }
  return result;
}

std::vector<ReportTable> diff_tables(const DiffResult& result, const DiffOptions& options,
                                     size_t top) {
  std::vector<ReportTable> out;
  ReportTable summary;
  summary.title = "diff summary";
  column(summary, "Metric", Unit::kText);
  column(summary, "Value", Unit::kText);
  auto line = [&](std::string metric, std::string value) {
    summary.rows.push_back({std::move(metric), std::move(value)});
  };
  line("base", result.base.source);
  line("new", result.next.source);
  line("base iterations", result.base.iterations);
  line("new iterations", result.next.iterations);
  line("samples compared",
       fmt::format("{} base, {} new", result.base.samples, result.next.samples));
  line("typical change",
       fmt::format("{:+.1f}% (median of NEW / BASE over {} op rows), the rows scattering "
                   "{:.1f}% about it (a robust sigma): rows other than the step rows are judged "
                   "against it (column vs typical %), a change counting beyond {:g} sigmas",
                   result.typical_change_pct, result.typical_rows, result.row_scatter_pct,
                   kScatterSigmas));
  line("test", fmt::format("a row changed when |vs typical| >= {1:g}%, beyond the rows' scatter, "
                           "and q < {0:g}: Welch's t-test on the per-iteration samples (NEW's "
                           "over the typical change), p adjusted over those rows of the table "
                           "(Benjamini-Hochberg)",
                           options.alpha, options.min_change_pct));
  for (const DiffTable& t : result.tables) {
    if (t.level == DiffLevel::kStep) {
      for (const DiffRow& r : t.rows) {
        std::string p = std::isnan(r.p_value) ? "untested" : fmt::format("p = {:.3g}", r.p_value);
        line(r.key[0],
             fmt::format("{} -> {} ({:+.1f}%, {}): {}", format_quantity(r.base_ns, Unit::kTime),
                         format_quantity(r.new_ns, Unit::kTime), r.delta_pct, p,
                         verdict_name(r.verdict)));
      }
      continue;
    }
    size_t counts[5] = {0, 0, 0, 0, 0};
    for (const DiffRow& r : t.rows) ++counts[static_cast<size_t>(r.verdict)];
    line(t.title.substr(std::string("diff: ").size()),
         fmt::format("{} rows: {} slower, {} faster, {} new, {} gone, {} same", t.rows.size(),
                     counts[static_cast<size_t>(Verdict::kSlower)],
                     counts[static_cast<size_t>(Verdict::kFaster)],
                     counts[static_cast<size_t>(Verdict::kNew)],
                     counts[static_cast<size_t>(Verdict::kGone)],
                     counts[static_cast<size_t>(Verdict::kSame)]));
  }
  for (const std::string& note : result.notes) line("note", note);
  if (options.fail_above_pct || options.fail_step_above_pct) {
    std::string limits;
    if (options.fail_above_pct) limits = fmt::format("rows over {:g}%", *options.fail_above_pct);
    if (options.fail_step_above_pct) {
      limits += fmt::format("{}step rows over {:g}%", limits.empty() ? "" : ", ",
                            *options.fail_step_above_pct);
    }
    line("gate", result.failing_rows == 0
                     ? fmt::format("pass: nothing significantly slower ({})", limits)
                     : fmt::format("FAIL: {} rows significantly slower ({}; column Gate, "
                                   "docs/diff.md)",
                                   result.failing_rows, limits));
  }
  out.push_back(std::move(summary));

  for (const DiffTable& t : result.tables) {
    ReportTable r;
    r.title = t.title;
    for (const std::string& h : t.key_headers) column(r, h, Unit::kText);
    column(r, "Base(ns)", Unit::kTime);
    column(r, "New(ns)", Unit::kTime);
    column(r, "Delta(ns)", Unit::kTime);
    column(r, "Delta %", Unit::kPercent);
    column(r, "vs typical %", Unit::kPercent);
    column(r, "p", Unit::kRatio);
    column(r, "q", Unit::kRatio);
    column(r, "Verdict", Unit::kText);
    column(r, "Base share %", Unit::kPercent);
    column(r, "Base FLOPs", Unit::kFlops);
    column(r, "New FLOPs", Unit::kFlops);
    column(r, "Base calls", Unit::kRatio);
    column(r, "New calls", Unit::kRatio);
    column(r, "Gate", Unit::kText);
    size_t n = top > 0 ? std::min(top, t.rows.size()) : t.rows.size();
    auto decimal = [](double v, int places) {
      if (std::isnan(v)) return std::string("na");
      if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
      return fmt::format("{:.{}f}", v, places);
    };
    auto number = [&](double v) { return decimal(v, 0); };
    for (size_t i = 0; i < n; ++i) {
      const DiffRow& d = t.rows[i];
      std::vector<std::string> cells = d.key;
      cells.push_back(d.in_base ? number(d.base_ns) : "na");
      cells.push_back(d.in_new ? number(d.new_ns) : "na");
      cells.push_back(number(d.new_ns - d.base_ns));
      cells.push_back(decimal(d.delta_pct, 1));
      cells.push_back(decimal(d.adjusted_delta_pct, 1));
      cells.push_back(std::isnan(d.p_value) ? "na" : fmt::format("{:.3g}", d.p_value));
      cells.push_back(std::isnan(d.q_value) ? "na" : fmt::format("{:.3g}", d.q_value));
      cells.push_back(verdict_name(d.verdict));
      cells.push_back(decimal(d.base_share_pct, 1));
      cells.push_back(d.in_base ? number(d.base_flops) : "na");
      cells.push_back(d.in_new ? number(d.new_flops) : "na");
      cells.push_back(d.in_base ? decimal(d.base_calls, 2) : "na");
      cells.push_back(d.in_new ? decimal(d.new_calls, 2) : "na");
      const bool gated = t.level == DiffLevel::kStep ? options.fail_step_above_pct.has_value()
                                                     : options.fail_above_pct.has_value();
      cells.push_back(!gated ? "-" : d.fails_gate ? "FAIL" : "ok");
      r.rows.push_back(std::move(cells));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pyprof::prof
