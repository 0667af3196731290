// kubetune::normal: closed forms, reference values (computed in 113-bit __float128 arithmetic: erfcq, expq, and
// Laplace's continued fraction to 20,000 terms for the Mills ratio), tails, symmetry and round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "kubetune/core/normal.hpp"

namespace normal = kubetune::normal;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// Distance in units in the last place (0 for equal values; works across subnormals).
std::int64_t ulps(double a, double b) {
  std::int64_t ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  if (ia < 0) ia = std::numeric_limits<std::int64_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<std::int64_t>::min() - ib;
  return ia > ib ? ia - ib : ib - ia;
}

struct Ref {
  double x, want;
};

#define EXPECT_ULPS(got, want, n) EXPECT_LE(ulps((got), (want)), (n)) << #got << " = " << (got) << ", want " << (want)
}  // namespace

TEST(Normal, ClosedForms) {
  EXPECT_EQ(normal::pdf(0.0), 1.0 / std::sqrt(2.0 * M_PI));
  EXPECT_EQ(normal::cdf(0.0), 0.5);
  EXPECT_EQ(normal::sf(0.0), 0.5);
  EXPECT_EQ(normal::log_cdf(0.0), -std::log(2.0));
  EXPECT_EQ(normal::quantile(0.5), 0.0);
  EXPECT_ULPS(normal::log_pdf(3.0), -4.5 - 0.5 * std::log(2.0 * M_PI), 1);
  EXPECT_EQ(normal::log_pdf(-1e10), -5e19);
  EXPECT_EQ(normal::pdf(41.0), 0.0);
  EXPECT_EQ(normal::pdf(-kInf), 0.0);
  EXPECT_EQ(normal::log_pdf(kInf), -kInf);
  EXPECT_EQ(normal::cdf(-kInf), 0.0);
  EXPECT_EQ(normal::cdf(kInf), 1.0);
  EXPECT_EQ(normal::sf(kInf), 0.0);
  EXPECT_EQ(normal::log_cdf(-kInf), -kInf);
  EXPECT_EQ(normal::log_cdf(kInf), 0.0);
  for (double (*f)(double) : {normal::pdf, normal::log_pdf, normal::cdf, normal::sf, normal::log_cdf, normal::log_sf,
                              normal::quantile, normal::mills_tail})
    EXPECT_TRUE(std::isnan(f(std::nan(""))));
}

// pdf and cdf keep the formulas saved studies replay; their documented error grows like x^2 / 2 ulp.
std::int64_t tail_ulps(double x) { return static_cast<std::int64_t>(3.0 * (2.0 + 0.5 * x * x)); }

TEST(Normal, PdfReferenceValues) {
  const Ref refs[] = {{1.0, 0.24197072451914334}, {-2.5, 0.017528300493568537}, {8.0, 5.0522710835368919e-15},
                      {-30.0, 1.4736461348785476e-196}, {37.0, 2.1200065515246056e-298}};
  for (const Ref& r : refs) EXPECT_ULPS(normal::pdf(r.x), r.want, tail_ulps(r.x));
  EXPECT_ULPS(normal::pdf(1.0), 0.24197072451914334, 1);
  EXPECT_NEAR(normal::pdf(38.0) / 1.0972210519949712e-314, 1.0, 1e-8);  // subnormal
}

TEST(Normal, CdfAndSurvivalReferenceValuesIntoTheTails) {
  const Ref cdf_refs[] = {{-1.0, 0.15865525393145705},    {1.5, 0.93319279873114191},
                          {-5.5, 1.8989562465887718e-08}, {-8.0, 6.2209605742717839e-16},
                          {-20.0, 2.7536241186062337e-89}, {-37.0, 5.7255712225245771e-300},
                          {-38.0, 2.8854283510039645e-316}, {8.0, 0.99999999999999933}};
  for (const Ref& r : cdf_refs) EXPECT_ULPS(normal::cdf(r.x), r.want, tail_ulps(r.x));
  EXPECT_ULPS(normal::cdf(-1.0), 0.15865525393145705, 1);
  EXPECT_ULPS(normal::cdf(8.0), 0.99999999999999933, 0);
  const Ref sf_refs[] = {{8.0, 6.2209605742717839e-16}, {20.0, 2.7536241186062337e-89}, {37.0, 5.7255712225245771e-300}};
  for (const Ref& r : sf_refs) EXPECT_ULPS(normal::sf(r.x), r.want, tail_ulps(r.x));
  EXPECT_LT(normal::sf(8.0), 1e-15);  // not 1 - cdf(8) (= 6.7e-16, 7 % off)
  for (double x = -39.0; x <= 39.0; x += 0.173) EXPECT_EQ(normal::cdf(x), normal::sf(-x)) << x;
}

TEST(Normal, LogCdfReferenceValues) {
  const Ref refs[] = {{-5.0, -15.064998393988725},     {-20.0, -203.91715537109727}, {-38.0, -726.5572160188201},
                      {-40.0, -804.6084420137538},     {-1000.0, -500007.82669481216},
                      {-100000.0, -5000000012.4318638}, {1.0, -0.17275377902344988},
                      {0.5, -0.3689464152886564}};
  for (const Ref& r : refs) EXPECT_ULPS(normal::log_cdf(r.x), r.want, 2);
  // Upper tail: log Phi(x) = log1p(-Q(x)) ~ -Q(x), as precise as the survival function (log(cdf(8)) would be
  // -6.66e-16, 7 % off).
  EXPECT_ULPS(normal::log_cdf(8.0), -6.2209605742717858e-16, tail_ulps(8.0));
  EXPECT_ULPS(normal::log_cdf(30.0), -4.9067139271481872e-198, tail_ulps(30.0));
  for (double x = -60.0; x <= 60.0; x += 0.37) EXPECT_EQ(normal::log_sf(x), normal::log_cdf(-x)) << x;
  // Finite, increasing, and continuous across the switch to the Mills-ratio form at x = -37.
  double prev = -kInf;
  for (double x = -1e150; x < 0; x = x < -100 ? x / 10 : x + 0.01) {
    const double l = normal::log_cdf(x);
    ASSERT_TRUE(std::isfinite(l)) << x;
    ASSERT_GT(l, prev) << x;
    prev = l;
  }
  const double below = normal::log_cdf(std::nextafter(-37.0, -kInf)), at = normal::log_cdf(-37.0);
  EXPECT_NEAR(below, at, 37.0 * 2.2e-16 * 4 + 1e-12);
}

TEST(Normal, AgreesWithLongDoubleErfc) {
  // In long double the rounding of x / sqrt 2 costs x^2 * 2^-64 relative: below a double ulp for |x| <= 8.
  for (double x = -8.0; x <= 8.0; x += 0.01) {
    const long double ref = 0.5L * std::erfc(-static_cast<long double>(x) / std::sqrt(2.0L));
    EXPECT_ULPS(normal::cdf(x), static_cast<double>(ref), tail_ulps(x)) << x;
    const long double lref = x > 0 ? std::log1p(-0.5L * std::erfc(static_cast<long double>(x) / std::sqrt(2.0L)))
                                   : std::log(ref);
    EXPECT_ULPS(normal::log_cdf(x), static_cast<double>(lref), x > 0 ? tail_ulps(x) : 3) << x;
    const long double pref = std::exp(-0.5L * x * x) / std::sqrt(2.0L * static_cast<long double>(M_PI));
    EXPECT_ULPS(normal::pdf(x), static_cast<double>(pref), tail_ulps(x)) << x;
    const long double lpref = -0.5L * x * x - 0.5L * std::log(2.0L * static_cast<long double>(M_PI));
    EXPECT_ULPS(normal::log_pdf(x), static_cast<double>(lpref), 1) << x;
  }
}

TEST(Normal, LogCdfDiff) {
  EXPECT_ULPS(normal::log_cdf_diff(-1.0, 1.0), -0.38171514630212605, 2);  // log 0.682689...
  EXPECT_ULPS(normal::log_cdf_diff(-0.5, 2.0), -0.40240131233857512, 2);
  EXPECT_ULPS(normal::log_cdf_diff(30.0, 31.0), -454.32124395634327, 2);  // mirrored to the lower tail
  EXPECT_ULPS(normal::log_cdf_diff(-40.0, -39.0), -765.08315656437753, 2);
  EXPECT_EQ(normal::log_cdf_diff(1.0, 1.0), -kInf);
  EXPECT_EQ(normal::log_cdf_diff(2.0, 1.0), -kInf);
  EXPECT_EQ(normal::log_cdf_diff(-kInf, kInf), 0.0);
}

TEST(Normal, QuantileReferenceValuesAndRoundTrip) {
  const Ref refs[] = {{0.975, 1.9599639845400538},        {0.025, -1.9599639845400543},
                      {0.8, 0.84162123357291441},         {1e-10, -6.3613409024040566},
                      {1e-300, -37.047096299361201},      {1e-310, -37.663060331949524},
                      {4.9406564584124654e-324, -38.467405617144344}, {0.9999999999, 6.3613408896974217}};
  for (const Ref& r : refs) EXPECT_ULPS(normal::quantile(r.x), r.want, 2);
  EXPECT_EQ(normal::quantile(0.0), -kInf);
  EXPECT_EQ(normal::quantile(-0.5), -kInf);
  EXPECT_EQ(normal::quantile(1.0), kInf);
  EXPECT_EQ(normal::quantile(2.0), kInf);
  // Near the median x ~ (p - 1/2) sqrt(2 pi); the residual cdf(x) - p limits it to about 1e-14 relative.
  const double p_mid = 0.5 + 1e-6, d_mid = p_mid - 0.5;  // d_mid is exact
  EXPECT_NEAR(normal::quantile(p_mid) / (d_mid * normal::kSqrt2Pi), 1.0, 1e-10);
  for (double lp = -744.0; lp < 0.0; lp += 0.77) {
    const double p = std::exp(lp);
    const double x = normal::quantile(p);
    if (p > 1e-300) {
      EXPECT_NEAR(normal::cdf(x) / p, 1.0, 1e-14 * (1.0 + std::fabs(x))) << p;
    } else {
      EXPECT_NEAR(normal::log_cdf(x), std::log(p), 1e-13 * std::fabs(std::log(p))) << p;
    }
    EXPECT_EQ(normal::quantile(p), x);  // deterministic
  }
}

TEST(Normal, MillsTail) {
  const Ref refs[] = {{3.0, 0.28309865493043651}, {10.0, 0.098093233962511961}, {40.0, 0.024968847207263722}};
  for (const Ref& r : refs) EXPECT_ULPS(normal::mills_tail(r.x), r.want, 2);
  // Below 3 it comes from sf / pdf; the two forms meet at 3.
  EXPECT_NEAR(normal::mills_tail(std::nextafter(3.0, 0.0)), normal::mills_tail(3.0), 1e-13);
  EXPECT_NEAR(normal::mills_tail(0.0), std::sqrt(2.0 / M_PI), 1e-15);  // phi(0) / Q(0) = 2 phi(0)
  // log sf(t) = log pdf(t) - log(t + c(t)).
  for (double t : {3.0, 5.0, 12.0, 36.0})
    EXPECT_NEAR(normal::log_sf(t), normal::log_pdf(t) - std::log(t + normal::mills_tail(t)), 1e-13 * t * t) << t;
}
