// Finite-difference helpers shared by the nas gradient tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kubetune/nas/ops.hpp"

namespace kt_test {

// One thread: CI runs suites side by side on 2 cores, where OpenMP teams wait on descheduled threads.
inline const bool kSingleThread = [] {
  kubetune::nas::set_num_threads(1);
  return true;
}();

using kubetune::nas::Tensor;

inline Tensor randn(std::vector<int> shape, std::mt19937_64& rng, float scale = 1.0f) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> nd(0.0f, scale);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = nd(rng);
  return t;
}

/// <r, y> accumulated in double.
inline double project(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) s += static_cast<double>(y.data()[i]) * r.data()[i];
  return s;
}

/// Relative error ||a - b|| / max(||a||, ||b||, floor).
inline double rel_err(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-6) {
  double d = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return std::sqrt(d) / std::max({std::sqrt(na), std::sqrt(nb), floor});
}

/// Central differences of loss() with respect to every entry of `t` (modified in place and restored).
inline std::vector<double> numeric_grad(Tensor& t, const std::function<double()>& loss, double h = 1e-2) {
  std::vector<double> g(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const float orig = t.data()[i];
    t.data()[i] = static_cast<float>(orig + h);
    const double lp = loss();
    t.data()[i] = static_cast<float>(orig - h);
    const double lm = loss();
    t.data()[i] = orig;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

/// Directional check: analytic <g, v> against (L(t + h v) - L(t - h v)) / 2h for `dirs` random v.
/// Robust to the few ReLU / max-pool kinks a deep composite crosses. Returns the worst relative error.
inline double directional_err(Tensor& t, const Tensor& g, const std::function<double()>& loss, int dirs,
                              std::uint64_t seed, double h = 1e-3) {
  std::mt19937_64 rng(seed);
  double worst = 0;
  for (int d = 0; d < dirs; ++d) {
    Tensor v = randn(t.shape(), rng);
    Tensor orig = t.clone();
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(orig.data()[i] + h * v.data()[i]);
    const double lp = loss();
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(orig.data()[i] - h * v.data()[i]);
    const double lm = loss();
    t.copy_from(orig);
    const double num = (lp - lm) / (2 * h), ana = project(g, v);
    worst = std::max(worst, std::abs(num - ana) / std::max({std::abs(num), std::abs(ana), 1e-6}));
  }
  return worst;
}

inline std::vector<double> to_double(const Tensor& t) {
  return std::vector<double>(t.data(), t.data() + t.numel());
}

}  // namespace kt_test
