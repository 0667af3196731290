// The standard normal distribution: density, distribution function, their logarithms, the quantile and the
// Mills ratio. One implementation for every module (GP acquisitions, TPE's Parzen estimator, BOHB's KDE,
// queueing maths). pdf, cdf, sf and quantile (p >= 1e-300) are bit for bit the formulas the GP and TPE engines
// have always used, because saved studies replay them; the logarithms are the most accurate of the former
// copies (Mills-ratio continued fraction in the lower tail, log1p in the upper one).
#pragma once

namespace kubetune::normal {

inline constexpr double kInvSqrt2Pi = 0.3989422804014327;   ///< 1 / sqrt(2 pi)
inline constexpr double kLogSqrt2Pi = 0.91893853320467278;  ///< log(sqrt(2 pi))
inline constexpr double kSqrt2Pi = 2.5066282746310007;      ///< sqrt(2 pi)

/// phi(x) = exp(-x^2 / 2) / sqrt(2 pi). Relative error about (1 + x^2 / 2) ulp (the rounding of x^2,
/// magnified by exp): within 2 ulp for |x| <= 1.5, 1e-13 relative at |x| = 38. Tails: prefer log_pdf.
double pdf(double x) noexcept;
/// log phi(x) = -x^2 / 2 - log sqrt(2 pi), with x^2 split exactly (fma): within an ulp for every finite x.
double log_pdf(double x) noexcept;

/// Phi(x) = P(Z <= x) = erfc(-x / sqrt 2) / 2: no cancellation in either tail (never 1 - something), relative
/// error about (1 + x^2 / 2) ulp from the rounding of x / sqrt 2 (28 ulp at x = -8, 1e-13 relative at -37);
/// subnormal below about -37.5, 0 below -38.5. Tails: prefer log_cdf.
double cdf(double x) noexcept;
/// Survival function 1 - Phi(x) = erfc(x / sqrt 2) / 2 = cdf(-x), with cdf's relative accuracy for large x.
double sf(double x) noexcept;

/// log Phi(x), within 2 ulp of the exact value except where cdf/sf's own error shows (x > 0, see below):
/// log1p(-sf(x)) for x > 0 (so log_cdf(8) = -6.22e-16, not log(1 - 6e-16)); log(cdf(x)) down to -30; below,
/// the Mills-ratio form -x^2/2 - log sqrt(2 pi) - log(|x| + c(|x|)), finite down to -1e154 (-inf at -inf).
double log_cdf(double x) noexcept;
/// log(1 - Phi(x)) = log_cdf(-x).
double log_sf(double x) noexcept;
/// log(Phi(b) - Phi(a)) for a < b (-inf when a >= b), without cancellation in either tail.
double log_cdf_diff(double a, double b) noexcept;

/// Phi^-1(p): -inf for p <= 0, +inf for p >= 1, NaN for NaN. Acklam's rational approximation (relative error
/// 1.15e-9) refined by one Halley step on cdf (complementary form above the median): a few ulp in the
/// tails, up to about 1e-14 relative where x is near 0. Below p = 1e-300, where exp(x^2 / 2) of the Halley
/// step overflows, Newton steps on log_cdf instead (to the last ulp, down to the smallest subnormal). The
/// upper-tail quantile of a small survival probability q is -quantile(q) (1 - q would round).
double quantile(double p) noexcept;

/// c(t) in the Mills ratio (1 - Phi(t)) / phi(t) = 1 / (t + c(t)), for t >= 0: for t >= 3 the tail
/// 2/(t + 3/(t + 4/(t + ...))) of Laplace's continued fraction, evaluated bottom-up with a depth that
/// converges to double precision (within an ulp), accurate where 1 - Phi(t) underflows; below 3 from
/// pdf(t) / sf(t) - t (about 10 ulp near t = 2).
/// log sf(t) = log pdf(t) - log(t + c(t)), and phi(t) / (1 - Phi(t)) = t + c(t).
double mills_tail(double t) noexcept;

}  // namespace kubetune::normal
