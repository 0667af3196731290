// Normal draws of the Parzen estimator and TPE: truncated normals, a ziggurat standard normal (the CDF, its log
// and the quantile are core's, kubetune/core/normal.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kubetune/search/parzen.hpp"
#include "normal_draws.hpp"

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

namespace draws {
// Outside the rectangle of layer i (u's bits as standard_normal drew them): the tail or the wedge under the curve,
// then fresh draws until one is accepted.
double standard_normal_slow(Rng& rng, std::uint64_t u) noexcept {
  for (;;) {
    const int i = static_cast<int>(u & 127u);
    const bool neg = (u >> 7) & 1u;
    const double z = static_cast<double>(u >> 11) * 0x1.0p-53 * kZig.x[i];
    if (z < kZig.x[i + 1]) return neg ? -z : z;
    if (i == 0) {  // the tail beyond r (Marsaglia 1964)
      double a, b;
      do {
        a = -std::log1p(-rng.uniform()) / Ziggurat::kR;
        b = -std::log1p(-rng.uniform());
      } while (b + b < a * a);
      return neg ? -(Ziggurat::kR + a) : Ziggurat::kR + a;
    }
    if (kZig.f[i] + rng.uniform() * (kZig.f[i + 1] - kZig.f[i]) < std::exp(-0.5 * z * z)) return neg ? -z : z;
    u = rng.next_u64();
  }
}
}  // namespace draws

double standard_normal(Rng& rng) noexcept { return draws::standard_normal(rng); }

double sample_truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept {
  return draws::truncated_normal_near(rng, mu, sigma, low, high);
}

}  // namespace kubetune::search
