// The fitted time model (docs/advice.md §time model): per op family, the profile's own counted
// kernels (GPU) or counted ops (CPU) fitted by non-negative least squares to
//   time_ns ≈ a·FLOPs + b·bytes + c,
// so that 1/a is the family's effective FLOP/s, 1/b its effective bytes/s and c its fixed cost
// per call (launch, dispatch). Reports `timemodel`; advice uses predict_ns().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "prof/records.h"
#include "prof/reports.h"

namespace pyprof::prof {

// A family needs at least this many points for a fit (3 coefficients, and some left over to
// judge them by R²).
inline constexpr int64_t kMinFitPoints = 6;

struct FamilyFit {
  std::string family;
  int64_t points = 0;      // the counted records fitted
  bool fitted = false;     // false: `reason` says why not
  std::string reason;      // why there is no fit ("" when fitted)
  double ns_per_flop = 0;  // a >= 0
  double ns_per_byte = 0;  // b >= 0
  double fixed_ns = 0;     // c >= 0
  double r2 = 0;           // 1 - SS_res/SS_tot on the points; NaN when all times are equal
  double time_ns = 0;      // the points' total time
  // 1/a, 1/b in per-second units; infinity when the term is 0 (time does not grow with it).
  double flops_per_second() const;
  double bytes_per_second() const;
};

// The records a model is fitted to and predicts: counted, with a time (counted_time() > 0),
// a family, and of the profile's kind (GPU: kernels; CPU: ops).
bool is_model_point(const ProfRecord& r, bool cpu_only);

struct TimeModel {
  bool cpu_only = false;
  std::map<uint32_t, FamilyFit> fits;  // by family string id (ReadResult::strings)
  // a·FLOPs + b·bytes + c of the record's family fit; nullopt when it is no model point or its
  // family has no fit.
  std::optional<double> predict_ns(const ProfRecord& r) const;
};

// Non-negative least squares of y ≈ X·coef over every subset of X's (at most 3) columns: the
// exact NNLS solution for so few columns. `rank_deficient` is set when the non-zero columns are
// linearly dependent (the fit would not tell them apart); the result is then empty.
std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& columns,
                                     const std::vector<double>& y, bool& rank_deficient);

TimeModel fit_time_model(const ReadResult& data);

// Report `timemodel`: the fits per family, and the model points far from their prediction
// (actual/predicted > 2 or < 0.5, with |actual − predicted| at least kOutlierShare of the
// profile's time), sorted by that excess; `top` rows of them (0: all).
inline constexpr double kOutlierShare = 0.001;
std::vector<ReportTable> timemodel_report(const ReadResult& data, size_t top = 0);

}  // namespace pyprof::prof
