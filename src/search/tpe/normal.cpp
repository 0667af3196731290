// Normal-distribution maths of the Parzen estimator and TPE: CDF and its log, inverse CDF, truncated-normal
// draws, a ziggurat standard normal.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kubetune/search/parzen.hpp"

namespace kubetune::search {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kSqrt2Pi = 2.50662827463100050242;
}  // namespace

double normal_cdf(double x) noexcept { return 0.5 * std::erfc(-x * kSqrt1_2); }

double log_normal_cdf(double x) noexcept {
  if (x > 0.0) return std::log1p(-0.5 * std::erfc(x * kSqrt1_2));
  if (x > -30.0) return std::log(0.5 * std::erfc(-x * kSqrt1_2));
  if (x == -kInf) return -kInf;
  // Asymptotic (Mills ratio) series: Phi(x) ~ phi(x)/(-x) * (1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8).
  double r = 1.0 / (x * x);
  double s = 1.0 - r * (1.0 - r * (3.0 - r * (15.0 - r * 105.0)));
  return -0.5 * x * x - std::log(-x) - kLogSqrt2Pi + std::log(s);
}

double log_normal_cdf_diff(double a, double b) noexcept {
  if (!(a < b)) return -kInf;
  if (a >= 0.0) return log_normal_cdf_diff(-b, -a);  // Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
  if (b <= 0.0) {
    double lb = log_normal_cdf(b), la = log_normal_cdf(a);
    if (lb == -kInf) return -kInf;
    return lb + std::log1p(-std::exp(la - lb));
  }
  return std::log1p(-(normal_cdf(a) + normal_cdf(-b)));
}

double normal_quantile(double p) noexcept {
  if (!(p > 0.0)) return -kInf;
  if (!(p < 1.0)) return kInf;
  // P. J. Acklam's rational approximation (relative error 1.15e-9), then one Halley step.
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
    double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - plow) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  // Halley refinement; in the upper half use the complementary form so precision is kept.
  double e = x <= 0.0 ? normal_cdf(x) - p : (1.0 - p) - normal_cdf(-x);
  double u = e * kSqrt2Pi * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

double sample_truncated_normal(Rng& rng, double mu, double sigma, double low, double high) noexcept {
  double a = (low - mu) / sigma, b = (high - mu) / sigma;
  if (a < -8.5 && b > 8.5) {
    // Both bounds beyond 8.5 sigma (the truncation removes < 2e-17 of the mass): the exact truncated normal by
    // rejection -- a standard normal by inversion, redrawn when outside [a, b] (probability < 2e-17) -- which
    // saves the two bound CDFs. (Inversion below draws from the same distribution; the values agree with it
    // except when u is within ~1e-16 relative of the excluded tail mass.)
    for (;;) {
      const double z = normal_quantile(rng.uniform());
      if (z >= a && z <= b) return std::clamp(mu + sigma * z, low, high);
    }
  }
  bool flip = a > 0.0;  // both bounds in the upper tail: mirror so the CDF values stay accurate
  if (flip) {
    double t = a;
    a = -b;
    b = -t;
  }
  double pa = normal_cdf(a), pb = normal_cdf(b);
  double u = rng.uniform();
  double z;
  if (pb > pa) {
    z = normal_quantile(pa + (pb - pa) * u);
    if (!(z >= a)) z = a;
    if (!(z <= b)) z = b;
  } else {
    z = a + (b - a) * u;  // mass underflows (prior far outside the bounds): uniform on the support
  }
  if (flip) z = -z;
  return std::clamp(mu + sigma * z, low, high);
}

namespace {
// Ziggurat tables (G. Marsaglia & W. W. Tsang, "The Ziggurat Method for Generating Random Variables", J. Stat.
// Softw. 5(8), 2000): 128 layers of area v under f(x) = exp(-x^2 / 2); x[0] = v / f(r) is the base layer's
// width (rectangle plus tail), x[1] = r, x[128] = 0.
struct Ziggurat {
  static constexpr int kN = 128;
  static constexpr double kR = 3.442619855899, kV = 9.91256303526217e-3;
  double x[kN + 1], f[kN + 1];
  Ziggurat() {
    x[0] = kV / std::exp(-0.5 * kR * kR);
    x[1] = kR;
    for (int i = 2; i < kN; ++i)
      x[i] = std::sqrt(-2.0 * std::log(kV / x[i - 1] + std::exp(-0.5 * x[i - 1] * x[i - 1])));
    x[kN] = 0.0;
    for (int i = 0; i <= kN; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};
const Ziggurat kZig;
}  // namespace

double standard_normal(Rng& rng) noexcept {
  for (;;) {
    const std::uint64_t u = rng.next_u64();
    const int i = static_cast<int>(u & 127u);                        // layer
    const bool neg = (u >> 7) & 1u;                                  // sign
    const double z = static_cast<double>(u >> 11) * 0x1.0p-53 * kZig.x[i];  // bits 11..63: position
    if (z < kZig.x[i + 1]) return neg ? -z : z;  // inside the rectangle under the curve (~99 % of draws)
    if (i == 0) {                                // the tail beyond r (Marsaglia 1964)
      double a, b;
      do {
        a = -std::log1p(-rng.uniform()) / Ziggurat::kR;
        b = -std::log1p(-rng.uniform());
      } while (b + b < a * a);
      return neg ? -(Ziggurat::kR + a) : Ziggurat::kR + a;
    }
    if (kZig.f[i] + rng.uniform() * (kZig.f[i + 1] - kZig.f[i]) < std::exp(-0.5 * z * z)) return neg ? -z : z;
  }
}

double sample_truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept {
  if (mu >= low && mu <= high) {
    // Redraw a normal until it falls inside: with the centre in [low, high] at least about half the draws
    // are accepted (a ziggurat normal each; no bound CDFs or quantile).
    for (int t = 0; t < 32; ++t) {
      const double z = mu + sigma * standard_normal(rng);
      if (z >= low && z <= high) return z;
    }
  }
  return sample_truncated_normal(rng, mu, sigma, low, high);
}

}  // namespace kubetune::search
