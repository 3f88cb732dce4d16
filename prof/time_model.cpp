#include "prof/time_model.h"

#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

namespace pyprof::prof {

double FamilyFit::flops_per_second() const {
  return ns_per_flop > 0 ? 1e9 / ns_per_flop : std::numeric_limits<double>::infinity();
}
double FamilyFit::bytes_per_second() const {
  return ns_per_byte > 0 ? 1e9 / ns_per_byte : std::numeric_limits<double>::infinity();
}

bool is_model_point(const ProfRecord& r, bool cpu_only) {
  if (!r.counted || r.family == 0 || counted_time(r) <= 0) return false;
  return cpu_only ? r.kind == Kind::kOp : r.kind == Kind::kKernel;
}

std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& columns,
                                     const std::vector<double>& y, bool& rank_deficient) {
  rank_deficient = false;
  const size_t n = y.size(), k = columns.size();
  // Scale each column to a largest magnitude of 1: FLOPs (1e9), bytes (1e7) and the constant
  // differ by orders of magnitude, which would make the rank test meaningless.
  std::vector<double> scale(k, 0);
  for (size_t j = 0; j < k; ++j) {
    for (double v : columns[j]) scale[j] = std::max(scale[j], std::fabs(v));
  }
  std::vector<size_t> nonzero;
  for (size_t j = 0; j < k; ++j) {
    if (scale[j] > 0) nonzero.push_back(j);
  }
  Eigen::MatrixXd full(n, nonzero.size());
  Eigen::VectorXd target(n);
  for (size_t i = 0; i < n; ++i) {
    target(i) = y[i];
    for (size_t c = 0; c < nonzero.size(); ++c) {
      full(i, c) = columns[nonzero[c]][i] / scale[nonzero[c]];
    }
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> full_qr(full);
  full_qr.setThreshold(1e-9);
  if (full_qr.rank() < static_cast<Eigen::Index>(nonzero.size())) {
    rank_deficient = true;
    return {};
  }
  // Every subset of the non-zero columns: the least-squares solution of the best subset whose
  // coefficients are all >= 0 is the non-negative least-squares solution (the KKT conditions
  // hold on its support), exact for so few columns.
  std::vector<double> best(k, 0);
  double best_residual = target.squaredNorm();  // the empty subset: all coefficients 0
  const size_t subsets = size_t{1} << nonzero.size();
  for (size_t mask = 1; mask < subsets; ++mask) {
    std::vector<size_t> cols;
    for (size_t c = 0; c < nonzero.size(); ++c) {
      if (mask & (size_t{1} << c)) cols.push_back(c);
    }
    Eigen::MatrixXd a(n, cols.size());
    for (size_t c = 0; c < cols.size(); ++c) a.col(c) = full.col(cols[c]);
    Eigen::VectorXd x = a.colPivHouseholderQr().solve(target);
    if ((x.array() < 0).any()) continue;
    double residual = (a * x - target).squaredNorm();
    if (residual < best_residual) {
      best_residual = residual;
      std::fill(best.begin(), best.end(), 0);
      for (size_t c = 0; c < cols.size(); ++c) {
        size_t j = nonzero[cols[c]];
        best[j] = x(c) / scale[j];
      }
    }
  }
  return best;
}

std::optional<double> TimeModel::predict_ns(const ProfRecord& r) const {
  if (!is_model_point(r, cpu_only)) return std::nullopt;
  auto it = fits.find(r.family);
  if (it == fits.end() || !it->second.fitted) return std::nullopt;
  const FamilyFit& f = it->second;
  return f.ns_per_flop * r.flops + f.ns_per_byte * r.bytes + f.fixed_ns;
}

TimeModel fit_time_model(const ReadResult& data) {
  TimeModel model;
  model.cpu_only = data.cpu_only;
  std::map<uint32_t, std::vector<const ProfRecord*>> points;
  for (const ProfRecord& r : data.records) {
    if (is_model_point(r, data.cpu_only)) points[r.family].push_back(&r);
  }
  for (const auto& [family, recs] : points) {
    FamilyFit& f = model.fits[family];
    f.family = std::string(data.strings.get(family));
    f.points = static_cast<int64_t>(recs.size());
    std::vector<double> flops, bytes, ones, y;
    for (const ProfRecord* r : recs) {
      flops.push_back(r->flops);
      bytes.push_back(r->bytes);
      ones.push_back(1);
      y.push_back(static_cast<double>(counted_time(*r)));
      f.time_ns += y.back();
    }
    if (f.points < kMinFitPoints) {
      f.reason = fmt::format("too few points ({} < {})", f.points, kMinFitPoints);
      continue;
    }
    bool rank_deficient = false;
    std::vector<double> coef = fit_non_negative({flops, bytes, ones}, y, rank_deficient);
    if (rank_deficient) {
      f.reason =
          "degenerate design: FLOPs, bytes and the constant are linearly dependent over its "
          "points (e.g. every call the same size, or FLOPs proportional to bytes)";
      continue;
    }
    f.fitted = true;
    f.ns_per_flop = coef[0];
    f.ns_per_byte = coef[1];
    f.fixed_ns = coef[2];
    double mean = f.time_ns / static_cast<double>(f.points);
    double ss_res = 0, ss_tot = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      double predicted = coef[0] * flops[i] + coef[1] * bytes[i] + coef[2];
      ss_res += (y[i] - predicted) * (y[i] - predicted);
      ss_tot += (y[i] - mean) * (y[i] - mean);
    }
    f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : std::numeric_limits<double>::quiet_NaN();
  }
  return model;
}

namespace {

std::string number(double v) {
  if (std::isnan(v)) return "na";
  if (std::isinf(v)) return "inf";
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::vector<ReportTable> timemodel_report(const ReadResult& data, size_t top) {
  TimeModel model = fit_time_model(data);
  ReportTable fits;
  fits.title = data.cpu_only
                   ? "time model per op family (counted ops: time ≈ FLOPs/P + bytes/B + c)"
                   : "time model per op family (counted kernels: time ≈ FLOPs/P + bytes/B + c)";
  fits.id = "fits";
  column(fits, "Family", Unit::kText, Keep::kAlways);
  column(fits, "Points", Unit::kCount, Keep::kMore);
  column(fits, "Time(ns)", Unit::kTime, Keep::kMain);
  column(fits, "Effective FLOP/s", Unit::kFlopsPerSecond, Keep::kAlways);
  column(fits, "Effective B/s", Unit::kBytesPerSecond, Keep::kAlways);
  column(fits, "Fixed cost(ns)", Unit::kTime, Keep::kMain);
  column(fits, "R2", Unit::kRatio, Keep::kMain);
  column(fits, "Note", Unit::kText, Keep::kMore);
  std::vector<const FamilyFit*> order;
  for (const auto& [id, f] : model.fits) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(),
                   [](const FamilyFit* a, const FamilyFit* b) { return a->time_ns > b->time_ns; });
  for (const FamilyFit* f : order) {
    std::string note = f->reason;
    if (f->fitted && f->ns_per_flop == 0) note = "no FLOP term (time does not grow with FLOPs)";
    if (f->fitted && f->ns_per_byte == 0) {
      note +=
          std::string(note.empty() ? "" : "; ") + "no byte term (time does not grow with bytes)";
    }
    fits.rows.push_back({f->family, std::to_string(f->points), fmt::format("{:.0f}", f->time_ns),
                         // No term (a or b = 0): na, and the note says so (JSON has no inf).
                         f->fitted && f->ns_per_flop > 0 ? number(f->flops_per_second()) : "na",
                         f->fitted && f->ns_per_byte > 0 ? number(f->bytes_per_second()) : "na",
                         f->fitted ? fmt::format("{:.0f}", f->fixed_ns) : "na",
                         f->fitted ? number(f->r2) : "na", note});
  }

  ReportTable far;
  far.title = "model points far from their prediction (actual/predicted > 2 or < 0.5)";
  far.id = "far_points";
  column(far, "Family", Unit::kText, Keep::kMain);
  column(far, "Op", Unit::kText, Keep::kAlways);
  column(far, data.cpu_only ? "Record" : "Kernel", Unit::kText, Keep::kMore);
  column(far, "Shapes", Unit::kText, Keep::kDetail);
  column(far, "Time(ns)", Unit::kTime, Keep::kAlways);
  column(far, "Predicted(ns)", Unit::kTime, Keep::kAlways);
  column(far, "Actual/predicted", Unit::kRatio, Keep::kMain);
  column(far, "Excess(ns)", Unit::kTime, Keep::kMore);
  int64_t profile_time = 0;
  for (const ProfRecord& r : data.records) {
    profile_time += data.cpu_only ? r.self_duration : r.duration;
  }
  const double min_excess = kOutlierShare * static_cast<double>(profile_time);
  struct Far {
    const ProfRecord* r;
    double predicted;
  };
  std::vector<Far> rows;
  for (const ProfRecord& r : data.records) {
    std::optional<double> p = model.predict_ns(r);
    if (!p || *p <= 0) continue;
    double actual = static_cast<double>(counted_time(r));
    double ratio = actual / *p;
    if ((ratio > 2 || ratio < 0.5) && std::fabs(actual - *p) >= min_excess)
      rows.push_back({&r, *p});
  }
  auto excess = [](const Far& f) {
    return std::fabs(static_cast<double>(counted_time(*f.r)) - f.predicted);
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Far& a, const Far& b) { return excess(a) > excess(b); });
  if (top > 0 && rows.size() > top) rows.resize(top);
  for (const Far& f : rows) {
    double actual = static_cast<double>(counted_time(*f.r));
    far.rows.push_back(
        {std::string(data.strings.get(f.r->family)), std::string(data.strings.get(f.r->op)),
         std::string(data.strings.get(f.r->name)), std::string(data.strings.get(f.r->shapes)),
         fmt::format("{:.0f}", actual), fmt::format("{:.0f}", f.predicted),
         number(actual / f.predicted), fmt::format("{:.0f}", actual - f.predicted)});
  }
  return {fits, far};
}

}  // namespace pyprof::prof
