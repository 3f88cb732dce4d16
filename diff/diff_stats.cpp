// Welch's t-test for pyprof diff (diff.h): Student's t distribution through the regularized
// incomplete beta function, checked against scipy's values in diff_test.cpp.
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "diff/diff.h"

namespace pyprof::prof {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

}  // namespace

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

}  // namespace pyprof::prof
