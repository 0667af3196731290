// Normal draws of the Parzen estimator and TPE: truncated normals, a ziggurat standard normal (the CDF, its log
// and the quantile are core's, kubetune/core/normal.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kubetune/search/parzen.hpp"

namespace kubetune::search {
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
