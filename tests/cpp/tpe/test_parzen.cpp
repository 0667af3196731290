// Parzen estimator: normalisation (continuous, log, discrete, categorical, mixed), bandwidths, sampling, maths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/search/parzen.hpp"

using kubetune::Rng;
using namespace kubetune::search;

namespace {
std::vector<double> uniform_obs(Rng& rng, std::size_t n, double lo, double hi) {
  std::vector<double> v(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}

// Composite Simpson rule of exp(log_pdf) over [a, b] for a 1-d estimator.
double integrate(const ParzenEstimator& e, double a, double b, int n = 20000) {
  double h = (b - a) / n, s = 0.0;
  for (int i = 0; i <= n; ++i) {
    double x = a + h * i;
    double w = (i == 0 || i == n) ? 1.0 : (i % 2 ? 4.0 : 2.0);
    s += w * std::exp(e.log_pdf(&x));
  }
  return s * h / 3.0;
}
}  // namespace

TEST(Parzen, ContinuousIntegratesToOne) {
  Rng rng(1);
  for (bool mv : {false, true}) {
    for (bool clip : {true, false}) {
      for (std::size_t n : {0, 1, 3, 40, 300}) {
        if (!clip && n == 300) continue;  // unclipped widths get tiny: needs a very fine grid
        std::vector<double> obs = uniform_obs(rng, n, -2.0, 5.0);
        std::vector<double> w = uniform_obs(rng, n, 0.1, 2.0);
        ParzenOptions o;
        o.bandwidth = mv ? ParzenOptions::Bandwidth::Scott : ParzenOptions::Bandwidth::Neighbour;
        o.magic_clip = clip;
        ParzenEstimator e;
        e.fit({ParzenDim::continuous(-2.0, 5.0)}, obs.data(), n, w.data(), o);
        // Without the magic clip, widths may be tiny: integrate finely enough.
        double integral = integrate(e, -2.0, 5.0, clip ? 4000 : 100000);
        EXPECT_NEAR(integral, 1.0, clip ? 1e-5 : 1e-3) << "n=" << n << " mv=" << mv << " clip=" << clip;
      }
    }
  }
}

TEST(Parzen, LogScaleIntegratesToOneInOriginalUnits) {
  // A log-uniform parameter on [1e-4, 10] is modelled in log space; the density in original units is
  // p(v) = p_t(log v) / v and must integrate to 1 over [1e-4, 10] (substitution v = e^t, checked numerically).
  Rng rng(2);
  const double lo = std::log(1e-4), hi = std::log(10.0);
  std::vector<double> obs = uniform_obs(rng, 25, lo, hi);
  ParzenEstimator e;
  e.fit({ParzenDim::continuous(lo, hi)}, obs.data(), obs.size(), nullptr, {});
  // Integrate in v on a geometric grid with the trapezoid rule.
  const int n = 200000;
  double s = 0.0, prev_v = 1e-4, prev_f = 0.0;
  for (int i = 0; i <= n; ++i) {
    double t = lo + (hi - lo) * i / n;
    double v = std::exp(t);
    double f = std::exp(e.log_pdf(&t)) / v;
    if (i > 0) s += 0.5 * (f + prev_f) * (v - prev_v);
    prev_v = v;
    prev_f = f;
  }
  EXPECT_NEAR(s, 1.0, 1e-6);
}

TEST(Parzen, DiscreteMassesSumToOneAndMatchBruteForce) {
  Rng rng(3);
  for (double step : {1.0, 0.25, 5.0}) {
    const double lo = -3.0, hi = lo + 40 * step;
    std::vector<double> obs(60);
    for (auto& v : obs) v = lo + step * static_cast<double>(rng.below(41));
    for (bool mv : {false, true}) {
      ParzenOptions o;
      o.bandwidth = mv ? ParzenOptions::Bandwidth::Scott : ParzenOptions::Bandwidth::Neighbour;
      ParzenEstimator e;
      e.fit({ParzenDim::discrete(lo, hi, step)}, obs.data(), obs.size(), nullptr, o);
      double total = 0.0;
      for (int k = 0; k <= 40; ++k) {
        double v = lo + step * k;
        double lp = e.log_pdf(&v);
        total += std::exp(lp);
        // Independent reference: every kernel's bin mass from the normal CDF, no shortcuts.
        double ref = 0.0;
        for (std::size_t j = 0; j < e.n_kernels(); ++j) {
          double mu = e.mus(0)[j], sg = e.sigmas(0)[j];
          double z = normal_cdf((hi + step / 2 - mu) / sg) - normal_cdf((lo - step / 2 - mu) / sg);
          double m = normal_cdf((v + step / 2 - mu) / sg) - normal_cdf((v - step / 2 - mu) / sg);
          ref += e.weights()[j] * m / z;
        }
        EXPECT_NEAR(std::exp(lp), ref, 1e-12 + 1e-9 * ref) << "step=" << step << " v=" << v;
      }
      EXPECT_NEAR(total, 1.0, 1e-12) << "step=" << step;
    }
  }
}

TEST(Parzen, TinyBinMassesAreSummedInLogSpace) {
  // Twenty discrete dimensions on [0, 1e6] and a prior that weighs little (prior_weight 1e-200): at values far
  // from every observation, the observations' bin masses underflow to 0 and the prior's term times its product
  // of masses is about e^-755 of the largest term, below the smallest double. A weighted sum in linear space would give -inf; the
  // estimator redoes such a point in log space. Reference: each kernel's term plus its log bin masses
  // (log_normal_cdf_diff, accurate in the far tails), summed in long double.
  constexpr int kDiscrete = 20;
  constexpr double kHigh = 1e6;
  std::vector<ParzenDim> dims = {ParzenDim::continuous(0.0, 1.0)};
  for (int d = 0; d < kDiscrete; ++d) dims.push_back(ParzenDim::discrete(0.0, kHigh, 1.0));
  std::vector<double> obs;
  for (double x : {0.50, 0.52, 0.48, 0.51}) {
    obs.push_back(x);
    for (int d = 0; d < kDiscrete; ++d) obs.push_back(static_cast<double>(d % 3));
  }
  ParzenOptions o;
  o.prior_weight = 1e-200;
  o.magic_clip = false;
  ParzenEstimator e;
  e.fit(dims, obs.data(), 4, nullptr, o);
  for (double v : {1e3, 5e5, 1e6}) {
    std::vector<double> pt(1 + kDiscrete, v);
    pt[0] = 0.5;
    std::vector<double> terms;
    for (std::size_t j = 0; j < e.n_kernels(); ++j) {
      const double mx = e.mus(0)[j], sx = e.sigmas(0)[j];
      double t = std::log(e.weights()[j]) - 0.5 * std::pow((pt[0] - mx) / sx, 2) - std::log(sx) -
                 0.91893853320467274178 - log_normal_cdf_diff((0.0 - mx) / sx, (1.0 - mx) / sx);
      for (int d = 1; d <= kDiscrete; ++d) {
        const double mk = e.mus(d)[j], sk = e.sigmas(d)[j];
        t += log_normal_cdf_diff((v - 0.5 - mk) / sk, (v + 0.5 - mk) / sk) -
             log_normal_cdf_diff((-0.5 - mk) / sk, (kHigh + 0.5 - mk) / sk);
      }
      terms.push_back(t);
    }
    const double top = *std::max_element(terms.begin(), terms.end());
    long double sum = 0.0L;
    for (double t : terms) sum += std::exp(static_cast<long double>(t - top));
    const double expect = top + static_cast<double>(std::log(sum));
    const double got = e.log_pdf(pt.data());
    ASSERT_TRUE(std::isfinite(expect)) << "v=" << v;
    EXPECT_NEAR(got, expect, 1e-9 * std::fabs(expect)) << "v=" << v;
  }
}

TEST(Parzen, CategoricalMassesSumToOneWithSmoothing) {
  std::vector<double> obs = {0, 0, 2, 0, 3};
  ParzenOptions o;
  o.prior_weight = 1.0;
  ParzenEstimator e;
  e.fit({ParzenDim::categorical(4)}, obs.data(), obs.size(), nullptr, o);
  double total = 0.0;
  std::vector<double> p(4);
  for (int c = 0; c < 4; ++c) {
    double v = c;
    p[c] = std::exp(e.log_pdf(&v));
    total += p[c];
  }
  EXPECT_NEAR(total, 1.0, 1e-12);
  // Hand computation: 6 kernels, weight 1/6 each; a = 1/6 smoothing; observed row (a+1)/(4a+1), other a/(4a+1).
  double a = 1.0 / 6.0, hit = (a + 1) / (4 * a + 1), miss = a / (4 * a + 1);
  double p0 = (3 * hit + 2 * miss + 0.25) / 6.0;
  double p1 = (5 * miss + 0.25) / 6.0;
  EXPECT_NEAR(p[0], p0, 1e-14);
  EXPECT_NEAR(p[1], p1, 1e-14);
  EXPECT_GT(p[1], 0.0);  // smoothing: unseen choices keep mass
}

TEST(Parzen, MixedJointDensityIntegratesToOne) {
  Rng rng(4);
  const std::size_t n = 30;
  std::vector<double> obs;
  for (std::size_t i = 0; i < n; ++i) {
    obs.push_back(rng.uniform(0.0, 1.0));
    obs.push_back(static_cast<double>(rng.below(3)));
    obs.push_back(static_cast<double>(rng.below(5)) * 2.0);
  }
  std::vector<ParzenDim> dims = {ParzenDim::continuous(0.0, 1.0), ParzenDim::categorical(3),
                                 ParzenDim::discrete(0.0, 8.0, 2.0)};
  for (bool mv : {true, false}) {
    ParzenOptions o;
    o.bandwidth = mv ? ParzenOptions::Bandwidth::Scott : ParzenOptions::Bandwidth::Neighbour;
    ParzenEstimator e;
    e.fit(dims, obs.data(), n, nullptr, o);
    double total = 0.0;
    const int m = 4000;
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 5; ++k) {
        double s = 0.0;
        for (int i = 0; i <= m; ++i) {
          double x[3] = {static_cast<double>(i) / m, static_cast<double>(c), 2.0 * k};
          double w = (i == 0 || i == m) ? 1.0 : (i % 2 ? 4.0 : 2.0);
          s += w * std::exp(e.log_pdf(x));
        }
        total += s / (3.0 * m);
      }
    EXPECT_NEAR(total, 1.0, 1e-6) << "multivariate=" << mv;
  }
}

TEST(Parzen, UnivariateBandwidthsByHand) {
  // Observations 0.9, 0.2, 0.5 on [0, 1]. Sorted centres with the bounds: 0 | 0.2 0.5 0.9 | 1.
  // Widths: 0.2 -> its right gap 0.3 (outermost: endpoints ignored), 0.5 -> max(0.3, 0.4) = 0.4,
  // 0.9 -> its left gap 0.4; magic clip floor 1 / min(100, 1 + 4) = 0.2, cap 1.
  std::vector<double> obs = {0.9, 0.2, 0.5};
  ParzenEstimator e;
  e.fit({ParzenDim::continuous(0.0, 1.0)}, obs.data(), 3, nullptr, {});
  ASSERT_EQ(e.n_kernels(), 4u);
  // Kernels are stored in input order, the prior last.
  EXPECT_EQ(e.mus(0)[0], 0.9);
  EXPECT_EQ(e.mus(0)[1], 0.2);
  EXPECT_EQ(e.mus(0)[2], 0.5);
  EXPECT_NEAR(e.sigmas(0)[0], 0.4, 1e-15);
  EXPECT_NEAR(e.sigmas(0)[1], 0.3, 1e-15);
  EXPECT_NEAR(e.sigmas(0)[2], 0.4, 1e-15);
  EXPECT_NEAR(e.sigmas(0)[3], 1.0, 1e-15);  // prior: the range
  EXPECT_NEAR(e.mus(0)[3], 0.5, 1e-15);
  for (double w : e.weights()) EXPECT_NEAR(w, 0.25, 1e-15);
  // With endpoints considered, the outer kernels see the bounds: 0.2 -> max(0.2, 0.3), 0.9 -> max(0.4, 0.1).
  ParzenOptions o;
  o.consider_endpoints = true;
  o.magic_clip = false;
  std::vector<double> obs2 = {0.05, 0.5, 0.9};
  e.fit({ParzenDim::continuous(0.0, 1.0)}, obs2.data(), 3, nullptr, o);
  EXPECT_NEAR(e.sigmas(0)[0], 0.45, 1e-15);  // max(0.05, 0.45)
  EXPECT_NEAR(e.sigmas(0)[2], 0.4, 1e-15);   // max(0.4, 0.1)
  o.consider_endpoints = false;
  e.fit({ParzenDim::continuous(0.0, 1.0)}, obs2.data(), 3, nullptr, o);
  EXPECT_NEAR(e.sigmas(0)[0], 0.45, 1e-15);  // right gap only
  EXPECT_NEAR(e.sigmas(0)[2], 0.4, 1e-15);
  // The same rule per dimension of a joint estimator.
  std::vector<double> obs3 = {0.9, 5.0, 0.2, 1.0, 0.5, 3.0};
  e.fit({ParzenDim::continuous(0.0, 1.0), ParzenDim::continuous(0.0, 10.0)}, obs3.data(), 3, nullptr, {});
  EXPECT_NEAR(e.sigmas(0)[0], 0.4, 1e-15);
  EXPECT_NEAR(e.sigmas(0)[1], 0.3, 1e-15);
  EXPECT_NEAR(e.sigmas(0)[2], 0.4, 1e-15);
  EXPECT_NEAR(e.sigmas(1)[0], 2.0, 1e-15);  // 1 | 3 | 5: 5 -> left gap 2 (outermost)
  EXPECT_NEAR(e.sigmas(1)[1], 2.0, 1e-15);  // 1 -> right gap 2 (outermost; clip floor 10 / 5 = 2)
  // Scott's rule: 0.2 * 3^(-1/6) * range for every observation (two dimensions), no clip.
  o.bandwidth = ParzenOptions::Bandwidth::Scott;
  e.fit({ParzenDim::continuous(0.0, 1.0), ParzenDim::continuous(0.0, 10.0)}, obs3.data(), 3, nullptr, o);
  EXPECT_NEAR(e.sigmas(0)[1], 0.2 * std::pow(3.0, -1.0 / 6.0), 1e-15);
  EXPECT_NEAR(e.sigmas(1)[1], 2.0 * std::pow(3.0, -1.0 / 6.0), 1e-15);
}

TEST(Parzen, SamplesFollowTheDensity) {
  Rng rng(5);
  std::vector<double> obs = {1, 1, 2, 7, 9, 9, 9};
  ParzenEstimator e;
  e.fit({ParzenDim::discrete(0.0, 10.0, 1.0)}, obs.data(), obs.size(), nullptr, {});
  const std::size_t m = 200000;
  std::vector<double> xs(m);
  e.sample(rng, m, xs.data());
  std::vector<double> cnt(11, 0.0);
  for (double x : xs) {
    ASSERT_EQ(x, std::round(x));
    ASSERT_GE(x, 0.0);
    ASSERT_LE(x, 10.0);
    cnt[static_cast<std::size_t>(x)] += 1.0;
  }
  for (int k = 0; k <= 10; ++k) {
    double v = k;
    double p = std::exp(e.log_pdf(&v));
    double sd = std::sqrt(p * (1 - p) / m);
    EXPECT_NEAR(cnt[k] / m, p, 5 * sd + 1e-4) << "value " << k;
  }
  // Categorical sampling frequencies.
  std::vector<double> cobs = {0, 0, 2};
  e.fit({ParzenDim::categorical(3)}, cobs.data(), 3, nullptr, {});
  e.sample(rng, m, xs.data());
  std::vector<double> cc(3, 0.0);
  for (double x : xs) cc[static_cast<std::size_t>(x)] += 1.0;
  for (int c = 0; c < 3; ++c) {
    double v = c;
    double p = std::exp(e.log_pdf(&v));
    EXPECT_NEAR(cc[c] / m, p, 5 * std::sqrt(p * (1 - p) / m));
  }
}

TEST(Parzen, SampleReportsKernelsAndSampleNearDrawsAroundACentre) {
  // Joint continuous x discrete x categorical estimator on 6 observations.
  const std::vector<ParzenDim> dims = {ParzenDim::continuous(0.0, 10.0), ParzenDim::discrete(0.0, 20.0, 2.0),
                                       ParzenDim::categorical(3)};
  std::vector<double> obs = {1, 0, 0, 2.5, 4, 1, 5, 10, 2, 6, 12, 1, 8.5, 18, 0, 9, 20, 2};
  std::vector<double> w = {1, 2, 1, 3, 1, 1};
  ParzenEstimator e;
  e.fit(dims, obs.data(), 6, w.data(), {});
  const std::size_t m = 60000, K = e.n_kernels();
  // The kernel indices: same stream as sample() without them, frequencies follow the weights.
  std::vector<double> xs(m * 3), ys(m * 3);
  std::vector<std::size_t> ks(m);
  Rng r1(11), r2(11);
  e.sample(r1, m, xs.data(), ks.data());
  e.sample(r2, m, ys.data());
  ASSERT_EQ(xs, ys);
  std::vector<double> cnt(K, 0.0);
  for (std::size_t k : ks) {
    ASSERT_LT(k, K);
    cnt[k] += 1.0;
  }
  for (std::size_t k = 0; k < K; ++k) {
    const double p = e.weights()[k];  // kernels of a joint estimator this small stay in input order
    EXPECT_NEAR(cnt[k] / m, p, 5 * std::sqrt(p * (1 - p) / m)) << "kernel " << k;
  }
  // A categorical value drawn from an observation kernel is mostly that kernel's centre.
  std::size_t hit = 0, n0 = 0;
  for (std::size_t r = 0; r < m; ++r)
    if (ks[r] == 3) ++n0, hit += xs[r * 3 + 2] == e.mus(2)[3];
  EXPECT_NEAR(static_cast<double>(hit) / n0, 0.8, 0.03);  // (1 + a) / (1 + 3 a), a = 1 / 7 (smoothing)

  // sample_near: normal around the centre with scale x the kernel's widths, truncated / snapped as sample().
  const double centre[3] = {5.0, 10.0, 1.0};
  const std::size_t k = 2;
  const double scale = 0.4, sd0 = scale * e.sigmas(0)[k], sd1 = scale * e.sigmas(1)[k];
  ASSERT_LT(4 * sd0, 5.0);  // far from the bounds: the truncation is negligible
  Rng r3(12);
  e.sample_near(r3, centre, k, scale, m, xs.data());
  double s0 = 0, q0 = 0, s1 = 0;
  for (std::size_t r = 0; r < m; ++r) {
    const double a = xs[r * 3], b = xs[r * 3 + 1];
    ASSERT_GE(a, 0.0);
    ASSERT_LE(a, 10.0);
    ASSERT_GE(b, 0.0);
    ASSERT_LE(b, 20.0);
    ASSERT_EQ(b, 2.0 * std::round(b / 2.0));  // on the grid
    ASSERT_EQ(xs[r * 3 + 2], 1.0);            // categorical kept
    s0 += a, q0 += (a - 5.0) * (a - 5.0), s1 += b;
  }
  EXPECT_NEAR(s0 / m, 5.0, 5 * sd0 / std::sqrt(m));
  EXPECT_NEAR(std::sqrt(q0 / m), sd0, 0.02 * sd0);
  EXPECT_NEAR(s1 / m, 10.0, 5 * std::sqrt(sd1 * sd1 + 1.0) / std::sqrt(m));
  // Bad kernel index / scale.
  EXPECT_THROW(e.sample_near(r3, centre, K, scale, 1, xs.data()), kubetune::InvalidArgument);
  EXPECT_THROW(e.sample_near(r3, centre, k, 0.0, 1, xs.data()), kubetune::InvalidArgument);
  EXPECT_THROW(e.sample_near(r3, centre, k, std::nan(""), 1, xs.data()), kubetune::InvalidArgument);
}

TEST(Parzen, TruncatedNormalSamplingMean) {
  Rng rng(6);
  auto phi = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  struct Case {
    double mu, sg, lo, hi;
  };
  for (Case c : {Case{0, 1, 1, 3}, Case{0, 1, 5, 6}, Case{2, 0.5, -1, 1.5}, Case{0, 2, -1, 1}}) {
    const int m = 100000;
    double s = 0.0;
    for (int i = 0; i < m; ++i) {
      double v = sample_truncated_normal(rng, c.mu, c.sg, c.lo, c.hi);
      ASSERT_GE(v, c.lo);
      ASSERT_LE(v, c.hi);
      s += v;
    }
    double a = (c.lo - c.mu) / c.sg, b = (c.hi - c.mu) / c.sg;
    double z = std::exp(log_normal_cdf_diff(a, b));
    double mean = c.mu + c.sg * (phi(a) - phi(b)) / z;  // closed form of the truncated normal's mean
    EXPECT_NEAR(s / m, mean, 0.01 * c.sg) << c.lo << " " << c.hi;
  }
}

TEST(Parzen, NormalMathsAccurate) {
  for (double p : {1e-300, 1e-20, 1e-5, 0.01, 0.3, 0.5, 0.77, 0.999, 1 - 1e-12}) {
    double x = normal_quantile(p);
    double back = x <= 0 ? normal_cdf(x) : 1.0 - normal_cdf(-x);
    EXPECT_NEAR(back / p, 1.0, 1e-12) << p;
  }
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-13);
  // log Phi continuous across the switch to the asymptotic series, and right at known points.
  EXPECT_NEAR(log_normal_cdf(-30.0 + 1e-9), log_normal_cdf(-30.0 - 1e-9), 1e-6);
  EXPECT_NEAR(log_normal_cdf(0.0), std::log(0.5), 1e-15);
  EXPECT_NEAR(log_normal_cdf(-40.0), -804.6084420137538, 1e-9);  // checked by quadrature of the tail
  EXPECT_NEAR(log_normal_cdf_diff(-1.0, 1.0), std::log(0.6826894921370859), 1e-14);
  EXPECT_NEAR(log_normal_cdf_diff(8.0, 9.0), log_normal_cdf_diff(-9.0, -8.0), 1e-12);
  EXPECT_EQ(log_normal_cdf_diff(1.0, 1.0), -INFINITY);
}

TEST(Parzen, BadInputNamesTheField) {
  ParzenEstimator e;
  double o = 0.5;
  ParzenOptions bad;
  bad.prior_weight = 0.0;
  EXPECT_THROW(e.fit({ParzenDim::continuous(0, 1)}, &o, 1, nullptr, bad), kubetune::InvalidArgument);
  EXPECT_THROW(e.fit({ParzenDim::continuous(1, 1)}, &o, 1, nullptr, {}), kubetune::InvalidArgument);
  EXPECT_THROW(e.fit({ParzenDim::discrete(0, 1, 0)}, &o, 1, nullptr, {}), kubetune::InvalidArgument);
  double c = 3;
  EXPECT_THROW(e.fit({ParzenDim::categorical(3)}, &c, 1, nullptr, {}), kubetune::InvalidArgument);
  try {
    e.fit({ParzenDim::continuous(0, 1)}, &o, 1, nullptr, bad);
  } catch (const kubetune::InvalidArgument& ex) {
    EXPECT_NE(std::string(ex.what()).find("prior_weight"), std::string::npos);
  }
}

TEST(Parzen, LogSumExpMatchesDirectSum) {
  // Independent reference for the vectorised evaluation (and its skipped far-away terms): the plain weighted
  // sum of kernel densities, each from the normal pdf and CDF, for a large 1-D estimator and a 2-D one.
  Rng rng(12);
  const std::size_t n = 400;
  std::vector<double> obs = uniform_obs(rng, n, -1.0, 3.0);
  std::vector<double> w = uniform_obs(rng, n, 0.01, 1.0);
  ParzenEstimator e;
  e.fit({ParzenDim::continuous(-1.0, 3.0)}, obs.data(), n, w.data(), {});
  auto pdf = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  for (int i = 0; i <= 200; ++i) {
    double x = -1.0 + 4.0 * i / 200;
    double ref = 0.0;
    for (std::size_t k = 0; k < e.n_kernels(); ++k) {
      double mu = e.mus(0)[k], sg = e.sigmas(0)[k];
      double z = normal_cdf((3.0 - mu) / sg) - normal_cdf((-1.0 - mu) / sg);
      ref += e.weights()[k] * pdf((x - mu) / sg) / sg / z;
    }
    EXPECT_NEAR(e.log_pdf(&x), std::log(ref), 1e-12) << "x=" << x;
  }
  std::vector<double> obs2 = uniform_obs(rng, 2 * n, 0.0, 1.0);
  ParzenOptions o;
  e.fit({ParzenDim::continuous(0.0, 1.0), ParzenDim::continuous(0.0, 1.0)}, obs2.data(), n, nullptr, o);
  std::vector<double> pts = uniform_obs(rng, 60, 0.0, 1.0), out(30);
  e.log_pdf(pts.data(), 30, out.data(), 2);
  for (int r = 0; r < 30; ++r) {
    double ref = 0.0;
    for (std::size_t k = 0; k < e.n_kernels(); ++k) {
      double term = e.weights()[k];
      for (int d = 0; d < 2; ++d) {
        double mu = e.mus(d)[k], sg = e.sigmas(d)[k];
        term *= pdf((pts[2 * r + d] - mu) / sg) / sg / (normal_cdf((1.0 - mu) / sg) - normal_cdf(-mu / sg));
      }
      ref += term;
    }
    EXPECT_NEAR(out[r], std::log(ref), 1e-12);
  }
}

TEST(Parzen, OneCategoricalDimensionMatchesKernelSum) {
  // The closed-form per-choice masses against the kernel-by-kernel sum (weighted, many kernels).
  Rng rng(21);
  const std::size_t n = 300, C = 5;
  std::vector<double> obs(n), w = uniform_obs(rng, n, 0.05, 1.0);
  for (auto& o : obs) o = static_cast<double>(rng.below(C - 1));  // choice 4 never observed
  ParzenOptions opt;
  opt.prior_weight = 2.0;
  ParzenEstimator e;
  e.fit({ParzenDim::categorical(C)}, obs.data(), n, w.data(), opt);
  const double a = opt.prior_weight / static_cast<double>(n + 1), norm = a * C + 1.0;
  double total = 0.0;
  for (std::size_t c = 0; c < C; ++c) {
    double ref = e.weights()[n] / static_cast<double>(C);
    for (std::size_t k = 0; k < n; ++k) ref += e.weights()[k] * (obs[k] == c ? (a + 1.0) / norm : a / norm);
    double x = static_cast<double>(c) + 0.25;  // any point in the choice's cell
    EXPECT_NEAR(e.log_pdf(&x), std::log(ref), 1e-13) << "c=" << c;
    total += ref;
  }
  EXPECT_NEAR(total, 1.0, 1e-13);
  double out_of_range[2] = {-0.5, static_cast<double>(C)}, lp[2];
  e.log_pdf(out_of_range, 2, lp, 1);
  EXPECT_EQ(lp[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(lp[1], -std::numeric_limits<double>::infinity());
}

TEST(Parzen, OneDimensionalFitWithCallerOrderIsIdentical) {
  // The caller's argsort (as TPE passes it) gives bit-identical kernels and densities, with and without
  // endpoints, for sizes around the vector width; an order that does not sort is ignored (the same model).
  Rng rng(5);
  for (std::size_t n : {2u, 3u, 9u, 17u, 64u, 1000u, 2001u}) {
    for (bool endpoints : {false, true}) {
      std::vector<double> obs = uniform_obs(rng, n, -2.0, 2.0), w = uniform_obs(rng, n, 0.1, 1.0);
      if (n > 8) obs[3] = obs[5];  // a tie
      std::vector<std::size_t> ord(n);
      for (std::size_t i = 0; i < n; ++i) ord[i] = i;
      std::stable_sort(ord.begin(), ord.end(), [&](std::size_t a, std::size_t b) { return obs[a] < obs[b]; });
      ParzenOptions o;
      o.consider_endpoints = endpoints;
      ParzenEstimator e1, e2;
      e1.fit({ParzenDim::continuous(-2.0, 2.0)}, obs.data(), n, w.data(), o);
      e2.fit({ParzenDim::continuous(-2.0, 2.0)}, obs.data(), n, w.data(), o, ord.data());
      for (std::size_t k = 0; k < e1.n_kernels(); ++k) {
        ASSERT_EQ(e1.mus(0)[k], e2.mus(0)[k]);
        ASSERT_EQ(e1.sigmas(0)[k], e2.sigmas(0)[k]);
        ASSERT_EQ(e1.weights()[k], e2.weights()[k]);
      }
      for (int i = 0; i <= 100; ++i) {
        double x = -2.0 + 0.04 * i;
        ASSERT_EQ(e1.log_pdf(&x), e2.log_pdf(&x)) << "n=" << n << " x=" << x;
      }
      if (n > 2) {
        std::swap(ord[0], ord[n - 1]);
        e2.fit({ParzenDim::continuous(-2.0, 2.0)}, obs.data(), n, w.data(), o, ord.data());
        for (std::size_t k = 0; k < e1.n_kernels(); ++k) ASSERT_EQ(e1.sigmas(0)[k], e2.sigmas(0)[k]);
        ord[0] = n;  // out of range
        e2.fit({ParzenDim::continuous(-2.0, 2.0)}, obs.data(), n, w.data(), o, ord.data());
        for (std::size_t k = 0; k < e1.n_kernels(); ++k) ASSERT_EQ(e1.sigmas(0)[k], e2.sigmas(0)[k]);
      }
    }
  }
}

TEST(Parzen, WideWindowMatchesDirectSumNearTheBounds) {
  // 3,000 kernels of one width (magic clip), many of them far from each point (skipped blocks of terms),
  // including points at and next to the bounds where truncation masses matter.
  Rng rng(8);
  const std::size_t n = 3000;
  std::vector<double> obs = uniform_obs(rng, n, 0.0, 10.0);
  ParzenEstimator e;
  e.fit({ParzenDim::continuous(0.0, 10.0)}, obs.data(), n, nullptr, {});
  auto pdf = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  for (double x : {0.0, 1e-9, 0.013, 0.5, 3.3333, 5.0, 9.9, 10.0 - 1e-12, 10.0}) {
    double ref = 0.0;
    for (std::size_t k = 0; k < e.n_kernels(); ++k) {
      double mu = e.mus(0)[k], sg = e.sigmas(0)[k];
      double z = normal_cdf((10.0 - mu) / sg) - normal_cdf((0.0 - mu) / sg);
      ref += e.weights()[k] * pdf((x - mu) / sg) / sg / z;
    }
    EXPECT_NEAR(e.log_pdf(&x), std::log(ref), 1e-12) << "x=" << x;
  }
}

TEST(Parzen, RefitReusesNothingThatChangesResults) {
  // A refitted estimator (whose previous fit resolved truncation masses near the bounds) and a fresh one give
  // bit-identical densities on the next, overlapping history.
  Rng rng(17);
  std::vector<double> obs = uniform_obs(rng, 1500, 0.0, 1.0);
  std::vector<double> xs = uniform_obs(rng, 200, 0.0, 1.0);
  xs.push_back(0.0);
  xs.push_back(1.0);
  ParzenEstimator reused;
  reused.fit({ParzenDim::continuous(0.0, 1.0)}, obs.data(), 1000, nullptr, {});
  for (double x : xs) (void)reused.log_pdf(&x);  // resolves masses near the bounds
  for (std::size_t n : {1001u, 1200u, 999u}) {
    std::vector<double> w = uniform_obs(rng, n, 0.2, 1.0);
    ParzenEstimator fresh;
    fresh.fit({ParzenDim::continuous(0.0, 1.0)}, obs.data() + 3, n, w.data(), {});
    reused.fit({ParzenDim::continuous(0.0, 1.0)}, obs.data() + 3, n, w.data(), {});
    for (double x : xs) ASSERT_EQ(fresh.log_pdf(&x), reused.log_pdf(&x)) << "n=" << n << " x=" << x;
  }
}

TEST(Parzen, MixedJointModelMatchesDirectSum) {
  // Reference: the plain weighted sum over all kernels of the continuous densities, discrete bin masses (the
  // estimator bounds them first and makes the survivors exact) and smoothed categorical masses, with
  // recency-like weights.
  auto pdf = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  for (int first_discrete = 0; first_discrete < 2; ++first_discrete) {
    Rng rng(40 + first_discrete);
    const std::size_t n = 300;
    std::vector<ParzenDim> dims = {ParzenDim::continuous(-2.0, 5.0), ParzenDim::discrete(0.0, 20.0, 1.0),
                                   ParzenDim::categorical(3)};
    if (first_discrete) std::swap(dims[0], dims[1]);
    std::vector<double> obs(3 * n), w(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (int d = 0; d < 3; ++d) {
        const ParzenDim& p = dims[d];
        obs[3 * i + d] = p.kind == ParzenDim::Kind::Continuous ? rng.uniform(-2.0, 5.0)
                         : p.kind == ParzenDim::Kind::Discrete ? static_cast<double>(rng.below(21))
                                                                : static_cast<double>(rng.below(3));
      }
      w[i] = 0.05 + static_cast<double>(i) / n;
    }
    ParzenEstimator e;
    e.fit(dims, obs.data(), n, w.data(), {});
    // Stored order: the observations' (clamped) centres in input order, prior last.
    for (std::size_t k = 0; k + 1 < e.n_kernels(); ++k) ASSERT_EQ(e.mus(0)[k], obs[3 * k]);
    const double C = 3.0, a = 1.0 / static_cast<double>(e.n_kernels());
    for (int r = 0; r < 60; ++r) {
      double x[3];
      std::vector<double> tmp(3);
      e.sample(rng, 1, tmp.data());  // points where the density matters, plus uniform ones
      for (int d = 0; d < 3; ++d) x[d] = tmp[d];
      if (r % 2) x[first_discrete ? 1 : 0] = rng.uniform(-2.0, 5.0);
      double ref = 0.0;
      for (std::size_t k = 0; k < e.n_kernels(); ++k) {
        const bool prior = k + 1 == e.n_kernels();
        double term = e.weights()[k];
        for (int d = 0; d < 3; ++d) {
          const ParzenDim& p = dims[d];
          const double mu = e.mus(d)[k], sg = e.sigmas(d)[k];
          if (p.kind == ParzenDim::Kind::Categorical) {
            term *= prior ? 1.0 / C : (x[d] == mu ? (a + 1.0) : a) / (a * C + 1.0);
          } else if (p.kind == ParzenDim::Kind::Continuous) {
            term *= pdf((x[d] - mu) / sg) / sg / (normal_cdf((5.0 - mu) / sg) - normal_cdf((-2.0 - mu) / sg));
          } else {
            term *= (normal_cdf((x[d] + 0.5 - mu) / sg) - normal_cdf((x[d] - 0.5 - mu) / sg)) /
                    (normal_cdf((20.5 - mu) / sg) - normal_cdf((-0.5 - mu) / sg));
          }
        }
        ref += term;
      }
      EXPECT_NEAR(e.log_pdf(x), std::log(ref), 1e-10) << "first_discrete=" << first_discrete << " r=" << r;
    }
  }
}

TEST(Parzen, ZigguratNormalMatchesTheNormalDistribution) {
  // 2,000,000 draws: Kolmogorov-Smirnov against Phi (alpha = 0.001), mean, variance, and both tails beyond
  // r = 3.44 (the ziggurat's tail algorithm) and 2 sigma, against the exact probabilities.
  auto Phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  Rng rng(77);
  const std::size_t m = 2000000;
  std::vector<double> v(m);
  double s = 0, q = 0;
  for (auto& z : v) {
    z = standard_normal(rng);
    s += z, q += z * z;
  }
  EXPECT_NEAR(s / m, 0.0, 5.0 / std::sqrt(m));
  EXPECT_NEAR(q / m, 1.0, 5.0 * std::sqrt(2.0 / m));
  for (double t : {2.0, 3.6, 4.5}) {
    const double p = Phi(-t);
    const double sd = std::sqrt(p * (1 - p) / m);
    const double up = static_cast<double>(std::count_if(v.begin(), v.end(), [t](double z) { return z > t; })) / m;
    const double dn = static_cast<double>(std::count_if(v.begin(), v.end(), [t](double z) { return z < -t; })) / m;
    EXPECT_NEAR(up, p, 5 * sd) << "P(z > " << t << ")";
    EXPECT_NEAR(dn, p, 5 * sd) << "P(z < -" << t << ")";
  }
  std::sort(v.begin(), v.end());
  double dmax = 0.0;
  for (std::size_t i = 0; i < m; i += 7) {
    const double f = Phi(v[i]);
    dmax = std::max({dmax, std::abs(f - static_cast<double>(i) / m), std::abs(f - static_cast<double>(i + 1) / m)});
  }
  EXPECT_LT(dmax, 1.95 / std::sqrt(static_cast<double>(m)));
}

TEST(Parzen, TruncatedNormalDrawsPassKolmogorovSmirnov) {
  // Kolmogorov-Smirnov test of sample_truncated_normal (inversion) and sample_truncated_normal_near (redrawn
  // normals, inversion when the centre is outside) against the exact truncated normal CDF
  // F(x) = (Phi((x - mu) / s) - Phi(a)) / (Phi(b) - Phi(a)) (Phi from std::erfc), fixed seeds: bounds far away
  // (the rejection path), one bound near, both near, one tail only (mirrored inversion path).
  auto Phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  struct Case {
    double mu, sg, lo, hi;
  };
  const Case cases[] = {{0.0, 1.0, -20.0, 20.0}, {0.3, 0.1, -5.0, 5.0},  {4.6, 0.1, -5.0, 5.0},
                        {0.0, 1.0, -0.5, 1.5},   {0.0, 1.0, 2.0, 4.0},   {-1.0, 0.05, -1.02, 3.0}};
  const std::size_t m = 100000;
  const double crit = 1.95 / std::sqrt(static_cast<double>(m));  // alpha = 0.001 (a 5% scale error fails)
  int seed = 0;
  for (auto* draw : {&sample_truncated_normal, &sample_truncated_normal_near}) {
    for (const Case& c : cases) {
      Rng rng(900 + seed++);
      std::vector<double> v(m);
      for (auto& x : v) {
        x = draw(rng, c.mu, c.sg, c.lo, c.hi);
        ASSERT_GE(x, c.lo);
        ASSERT_LE(x, c.hi);
      }
      std::sort(v.begin(), v.end());
      const double pa = Phi((c.lo - c.mu) / c.sg), pb = Phi((c.hi - c.mu) / c.sg);
      // Upper-tail cases lose precision in Phi: use the mirrored form there.
      const bool upper = (c.lo - c.mu) / c.sg > 0.0;
      double dmax = 0.0;
      for (std::size_t i = 0; i < m; ++i) {
        double f;
        if (upper) {
          const double qa = Phi(-(c.lo - c.mu) / c.sg), qb = Phi(-(c.hi - c.mu) / c.sg);
          f = (qa - Phi(-(v[i] - c.mu) / c.sg)) / (qa - qb);
        } else {
          f = (Phi((v[i] - c.mu) / c.sg) - pa) / (pb - pa);
        }
        dmax = std::max({dmax, std::abs(f - static_cast<double>(i) / m), std::abs(f - static_cast<double>(i + 1) / m)});
      }
      EXPECT_LT(dmax, crit) << "mu=" << c.mu << " sigma=" << c.sg << " [" << c.lo << ", " << c.hi << "]"
                            << (draw == &sample_truncated_normal ? " inversion" : " near");
    }
  }
}

TEST(Parzen, IntegerGridMassesEqualTheEdgeTails) {
  // On an integer grid the bin masses come from a table by width and distance in steps; a batch holding one
  // value off the grid takes the bins' edge tails instead. Both must give the same numbers, bit for bit, on
  // several widths (clipped, gaps of 1..), a step of 2, both discrete dimensions of a joint model, the prior.
  for (double step : {1.0, 2.0}) {
    Rng rng(static_cast<std::uint64_t>(40 + step));
    const std::vector<ParzenDim> dims = {ParzenDim::discrete(1.0, 1.0 + 40.0 * step, step),
                                         ParzenDim::continuous(0.0, 1.0), ParzenDim::discrete(-3.0, 9.0, 1.0)};
    const std::size_t n = 150;
    std::vector<double> obs;
    for (std::size_t i = 0; i < n; ++i) {
      const double u = rng.uniform();  // clustered values: repeated centres and a few isolated ones
      obs.push_back(1.0 + step * std::floor(u < 0.8 ? 18.0 + 6.0 * rng.uniform() : 41.0 * rng.uniform()));
      obs.push_back(rng.uniform());
      obs.push_back(-3.0 + static_cast<double>(rng.below(13)));
    }
    ParzenEstimator e;
    e.fit(dims, obs.data(), n, nullptr, ParzenOptions{});
    std::vector<double> pts;
    for (std::size_t r = 0; r < 24; ++r)
      pts.insert(pts.end(), {1.0 + step * static_cast<double>(rng.below(41)), rng.uniform(),
                             -3.0 + static_cast<double>(rng.below(13))});
    std::vector<double> on(24), off(25);
    e.log_pdf(pts.data(), 24, on.data());
    std::vector<double> mixed = pts;
    mixed.insert(mixed.end(), {1.5 * step + 0.25, 0.5, 0.5});  // off both grids: every row from the edge tails
    e.log_pdf(mixed.data(), 25, off.data());
    for (std::size_t r = 0; r < 24; ++r) {
      EXPECT_EQ(std::memcmp(&on[r], &off[r], sizeof(double)), 0) << "step " << step << " point " << r << ": " << on[r]
                                                                    << " vs " << off[r];
      EXPECT_TRUE(std::isfinite(on[r]));
    }
  }
  // A grid of 10^9 values keeps the edge tails (no table of that size).
  Rng rng(47);
  std::vector<double> wide;
  for (int i = 0; i < 200; ++i) wide.push_back(static_cast<double>(rng.below(1000000000)));
  ParzenEstimator e;
  e.fit({ParzenDim::discrete(0.0, 1e9, 1.0)}, wide.data(), wide.size(), nullptr, ParzenOptions{});
  std::vector<double> lp(wide.size());
  e.log_pdf(wide.data(), wide.size(), lp.data());
  for (double v : lp) EXPECT_TRUE(std::isfinite(v));
}
