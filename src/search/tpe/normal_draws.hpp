// The estimator's normal draws, inline for its sampling loops (normal.cpp gives the public names): a ziggurat
// standard normal and a truncated normal by redrawing.
#pragma once

#include <cmath>
#include <cstdint>

#include "kubetune/core/rng.hpp"
#include "kubetune/search/parzen.hpp"

namespace kubetune::search::draws {

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
inline const Ziggurat kZig;

// The rare draws outside the rectangles: the tail beyond r (Marsaglia 1964) or a wedge (normal.cpp).
double standard_normal_slow(Rng& rng, std::uint64_t u) noexcept;

inline double standard_normal(Rng& rng) noexcept {
  const std::uint64_t u = rng.next_u64();
  const int i = static_cast<int>(u & 127u);                               // layer
  const double z = static_cast<double>(u >> 11) * 0x1.0p-53 * kZig.x[i];  // bits 11..63: position
  if (z < kZig.x[i + 1]) return (u >> 7) & 1u ? -z : z;  // inside the rectangle under the curve (~99 % of draws)
  return standard_normal_slow(rng, u);
}

inline double truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept {
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

}  // namespace kubetune::search::draws
