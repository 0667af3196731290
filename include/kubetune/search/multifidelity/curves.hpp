// Synthetic multi-fidelity benchmark: learning curves whose final value is a known function of the config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kubetune/core/space.hpp"

namespace kubetune::search {

/// A family of learning-curve problems for testing multi-fidelity methods (minimise).
/// Configuration u in [0, 1]^dim. Final (noise-free) value, known in closed form, minimum 0 at `argmin()`:
///   f(u) = (1/dim) * sum_j [ w_j (u_j - c_j)^2 + 0.05 (1 - cos(6 pi (u_j - c_j))) ],
/// with weights w_j in [1, 4] and centre c_j in [0.2, 0.8] drawn from the seed. The curve at budget b in
/// [1, max_budget] is  y(u, b) = f(u) + A(u) h(b) + noise,  h(b) = (b^-k - R^-k) / (1 - R^-k) (1 at b = 1, 0 at
/// R), rate k(u) in [0.4, 1.6] varying with u; the amplitude A(u) = 0.3 + 0.5 * crossing * exp(-f(u) / 0.1)
/// is larger for good configurations, so curves cross: with crossing > 0 a good final configuration can look
/// worse than a mediocre one at small budgets. Noise is Gaussian with sd noise * (0.5 + h(b)), a pure function
/// of (seed, u, b): evaluating the same point at the same budget twice gives the same value.
class LearningCurves {
 public:
  struct Config {
    int dim = 4;
    double max_budget = 81.0;
    double noise = 0.01;
    double crossing = 0.3;
    std::uint64_t seed = 0;
  };
  LearningCurves();
  explicit LearningCurves(Config c);

  const Config& config() const noexcept { return cfg_; }
  /// Noise-free value at max_budget (the "true" objective of the configuration).
  double final_value(const std::vector<double>& u) const;
  /// Noisy value of the learning curve at `budget` (clamped to [1, max_budget]).
  double value(const std::vector<double>& u, double budget) const;
  /// value() at each budget (e.g. 1, 2, ..., R: what a training loop would report per epoch).
  std::vector<double> curve(const std::vector<double>& u, const std::vector<double>& budgets) const;
  /// Noise-free curve (for plots and tests).
  double mean_value(const std::vector<double>& u, double budget) const;
  double min_value() const noexcept { return 0.0; }
  std::vector<double> argmin() const { return centre_; }
  /// Space x0..x{dim-1} (Double [0, 1]) plus the resource `resource_name` (Int [1, max_budget]).
  SearchSpace space(const std::string& resource_name = "epochs") const;

 private:
  void check(const std::vector<double>& u) const;
  double rate(const std::vector<double>& u) const;
  double amplitude(double f) const;
  Config cfg_;
  std::vector<double> weights_, centre_;
  double phase_ = 0.0;
};

}  // namespace kubetune::search
