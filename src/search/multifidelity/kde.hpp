// Internal: BOHB's multivariate product-kernel density (Gaussian + Aitchison-Aitken), fit and sampling.
#pragma once

#include <vector>

#include "kubetune/core/rng.hpp"

namespace kubetune::search::mf_detail {

/// Product-kernel KDE over rows of d values: levels[j] == 0 -> continuous in [0, 1] (Gaussian kernel),
/// levels[j] = c > 0 -> categorical index in [0, c) (Aitchison-Aitken kernel with lambda = bw[j]).
struct Kde {
  std::vector<std::vector<double>> data;
  std::vector<double> bw;
  std::vector<int> levels;
  /// statsmodels KDEMultivariate(bw='normal_reference'): bw_j = 1.06 * std_j * n^(-1/(4+d)), then clipped
  /// to >= min_bw (and lambda <= (c-1)/c for categorical dimensions).
  static Kde fit(std::vector<std::vector<double>> rows, const std::vector<int>& levels, double min_bw);
  double pdf(const std::vector<double>& u) const;
};

struct KdePair {
  Kde good, bad;
};

/// Truncated normal N(m, sd) on [0, 1] by rejection (clamped after 100 rejections).
double truncated_normal(Rng& rng, double m, double sd);

}  // namespace kubetune::search::mf_detail
