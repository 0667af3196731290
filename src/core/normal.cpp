// Standard normal pdf, cdf, their logarithms and the quantile (see normal.hpp for the accuracy of each).
// pdf, cdf, sf and quantile (p >= 1e-300) are, bit for bit, the formulas the GP and TPE engines used, which
// saved studies pin; the logarithms add what those lacked in the tails.
#include "kubetune/core/normal.hpp"

#include <cmath>
#include <limits>

namespace kubetune::normal {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrt1_2 = 0.70710678118654752440;  // 1 / sqrt(2)
// From here down log_cdf uses the Mills-ratio form (log(cdf) is still exact to an ulp there, but Phi
// underflows below -37.5).
constexpr double kLogTail = -30.0;
}  // namespace

double pdf(double x) noexcept { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }

double log_pdf(double x) noexcept {
  if (std::isinf(x)) return -kInf;
  const double hi = x * x;
  const double lo = std::fma(x, x, -hi);  // x^2 = hi + lo exactly
  return -(0.5 * hi + (kLogSqrt2Pi + 0.5 * lo));
}

double cdf(double x) noexcept { return 0.5 * std::erfc(-x * kSqrt1_2); }

double sf(double x) noexcept { return 0.5 * std::erfc(x * kSqrt1_2); }

double mills_tail(double t) noexcept {
  if (t < 3.0) return pdf(t) / sf(t) - t;  // NaN stays NaN
  // Depths for full double precision of the continued fraction (slower convergence nearer 0).
  const int depth = t < 4 ? 240 : t < 6 ? 120 : t < 10 ? 60 : t < 30 ? 30 : 12;
  double a = 0.0;
  for (int k = depth; k >= 2; --k) a = static_cast<double>(k) / (t + a);
  return 1.0 / (t + a);
}

double log_cdf(double x) noexcept {
  if (x > 0.0) return std::log1p(-sf(x));
  if (x > kLogTail) return std::log(cdf(x));
  if (std::isnan(x)) return x;
  if (x == -kInf) return -kInf;
  // Phi(-t) = phi(t) / (t + c(t)); -t^2 / 2 split exactly so that nothing is lost for large t.
  const double t = -x;
  const double hi = t * t;
  const double lo = std::fma(t, t, -hi);
  return -(0.5 * hi + (kLogSqrt2Pi + 0.5 * lo + std::log(t + mills_tail(t))));
}

double log_sf(double x) noexcept { return log_cdf(-x); }

double log_cdf_diff(double a, double b) noexcept {
  if (!(a < b)) return -kInf;
  if (a >= 0.0) return log_cdf_diff(-b, -a);  // Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
  if (b <= 0.0) {
    const double lb = log_cdf(b), la = log_cdf(a);
    if (lb == -kInf) return -kInf;
    return lb + std::log1p(-std::exp(la - lb));
  }
  return std::log1p(-(cdf(a) + sf(b)));
}

double quantile(double p) noexcept {
  if (std::isnan(p)) return p;
  if (!(p > 0.0)) return -kInf;
  if (!(p < 1.0)) return kInf;
  // P. J. Acklam's rational approximation (relative error 1.15e-9).
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double plow = 0.02425;
  double x;
  if (p < plow) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - plow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    const double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  if (p < 1e-300) {
    // Deep lower tail (x < -37): Newton on log Phi(x) = log p, whose slope phi / Phi = t + c(t) comes from
    // the Mills ratio; quadratic convergence from Acklam's start, two steps reach double precision.
    const double lp = std::log(p);
    for (int i = 0; i < 2; ++i) x -= (log_cdf(x) - lp) / (-x + mills_tail(-x));
    return x;
  }
  // Halley refinement; in the upper half the complementary form keeps the precision.
  const double e = x <= 0.0 ? cdf(x) - p : (1.0 - p) - sf(x);
  const double u = e * kSqrt2Pi * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

}  // namespace kubetune::normal
