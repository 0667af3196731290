// ParzenEstimator::log_pdf and sampling. log_pdf adds every kernel's log term (simd.hpp) and takes the
// log-sum-exp; a discrete dimension enters that pass through a bound of its bin mass, made exact afterwards
// for the kernels that can matter.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/search/parzen.hpp"
#include "simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kubetune::search {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
using simd::kCut;
// Below this much work (points x kernels x dimensions) log_pdf stays on one thread.
constexpr std::size_t kParallelWork = std::size_t{1} << 18;

// A draw on a Discrete dimension's padded support, snapped to its grid.
double snap_to_grid(const ParzenDim& pd, double t) {
  const double last = std::round((pd.high - pd.low) / pd.step);
  return pd.low + std::clamp(std::round((t - pd.low) / pd.step), 0.0, last) * pd.step;
}
}  // namespace

// ------------------------------------------------------------------------------------------ log_pdf
// m points; terms: m x stride_ scratch, pts: m x n_dims() scratch (a copy of the points when a categorical
// coordinate must be replaced by the choice it lies in, its floor; outside [0, n_choices) the point has no mass).
void ParzenEstimator::points_log_pdf(const double* x, std::size_t m, double* terms, double* pts, double* out) const {
  const std::size_t D = dims_.size();
  bool outside[kBlock] = {};
  if (std::find(kind_.begin(), kind_.end(), simd::kCategorical) != kind_.end()) {
    std::copy(x, x + m * D, pts);
    x = pts;
  }
  for (std::size_t d = 0; d < D; ++d) {
    if (kind_[d] != simd::kCategorical) continue;
    const double C = static_cast<double>(dims_[d].n_choices);
    for (std::size_t r = 0; r < m; ++r) {
      double& v = pts[r * D + d];
      v = std::floor(v);
      outside[r] = outside[r] || !(v >= 0.0 && v < C);
    }
  }
  const simd::Kernels& kern = simd::kernels();
  kern.joint_terms({x, m, D, kind_.data(), half_.data(), mu_.data(), coef_.data(), base_.data(), stride_, terms, out});
  for (std::size_t r = 0; r < m; ++r) {
    double* t = terms + r * stride_;
    const double top = has_discrete_ ? exact_discrete_terms(x + r * D, t) : out[r];
    out[r] = outside[r] ? -kInf : kern.log_sum_exp(t, stride_, top);
  }
}

// The terms hold, for each discrete dimension, log(step * the kernel's density at the bin's nearest edge), an
// upper bound of the bin's log mass. The exact term of the kernel with the largest bound is a lower bound of
// the largest exact term; every kernel whose term is within kCut of it is made exact (vectorised, dimension by
// dimension: an exact mass only lowers a term), the others (bounded more than kCut below a term that is there)
// are dropped, which changes the sum by less than k_ * 4e-18 relative. Returns the largest exact term.
double ParzenEstimator::exact_discrete_terms(const double* x, double* t) const {
  const std::size_t top = static_cast<std::size_t>(std::max_element(t, t + k_) - t);
  if (!(t[top] > -kInf)) return t[top];
  const double floor = exact_discrete_term(x, top, t[top]) - kCut;
  double best = -kInf;
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    if (kind_[d] != simd::kDiscrete) continue;
    const std::size_t at = d * stride_;
    best = simd::kernels().discrete_exact({x[d], half_[d], std::log(2.0 * half_[d]), mu_.data() + at,
                                           sigma_.data() + at, coef_.data() + at, stride_, floor, t});
  }
  return best;
}

// Kernel k's term with each discrete dimension's bound replaced by the bin's log mass
// log(Phi(b) - Phi(a)) - log Z (the - log Z part is in the bound already).
double ParzenEstimator::exact_discrete_term(const double* x, std::size_t k, double bound) const {
  double t = bound;
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    if (dims_[d].kind != ParzenDim::Kind::Discrete) continue;
    const std::size_t i = d * stride_ + k;
    const double h = half_[d], mu = mu_[i], sig = sigma_[i];
    const double dist = std::max(std::abs(x[d] - mu) - h, 0.0);
    const double edge = -coef_[i] * dist * dist + std::log(2.0 * h) - std::log(sig) - kLogSqrt2Pi;
    t += log_normal_cdf_diff((x[d] - h - mu) / sig, (x[d] + h - mu) / sig) - edge;
  }
  return t;
}

void ParzenEstimator::log_pdf(const double* x, std::size_t m, double* out, int n_threads) const {
  KT_CHECK(k_ > 0, StateError, "parzen: log_pdf() before fit()");
  const std::size_t D = dims_.size();
  int nt = 1;
#ifdef _OPENMP
  if (m > 1 && m * k_ * D >= kParallelWork)
    nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(core::resolve_threads(n_threads)), m));
#endif
  // Blocks of points (the vectorised loop takes up to eight at a time), split over the threads.
  const long long blocks = static_cast<long long>((m + kBlock - 1) / kBlock);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
    std::vector<double> terms(kBlock * stride_), pts(kBlock * D);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (long long b = 0; b < blocks; ++b) {
      const std::size_t r0 = static_cast<std::size_t>(b) * kBlock;
      points_log_pdf(x + r0 * D, std::min(kBlock, m - r0), terms.data(), pts.data(), out + r0);
    }
  }
}

double ParzenEstimator::log_pdf(const double* x) const {
  double out;
  log_pdf(x, 1, &out, 1);
  return out;
}

// ------------------------------------------------------------------------------------------ sample
void ParzenEstimator::sample(Rng& rng, std::size_t m, double* out, std::size_t* kernels) const {
  KT_CHECK(k_ > 0, StateError, "parzen: sample() before fit()");
  const std::size_t D = dims_.size();
  const std::size_t n = k_ - 1;
  for (std::size_t r = 0; r < m; ++r) {
    const double u = rng.uniform();
    std::size_t k = static_cast<std::size_t>(std::upper_bound(cum_w_.begin(), cum_w_.end(), u) - cum_w_.begin());
    k = std::min(k, k_ - 1);
    if (kernels) kernels[r] = k;
    for (std::size_t d = 0; d < D; ++d) {
      const ParzenDim& pd = dims_[d];
      const double mu = mu_[d * stride_ + k], sg = sigma_[d * stride_ + k];
      double v;
      if (pd.kind == ParzenDim::Kind::Continuous) {
        v = sample_truncated_normal_near(rng, mu, sg, pd.low, pd.high);
      } else if (pd.kind == ParzenDim::Kind::Discrete) {
        v = snap_to_grid(pd, sample_truncated_normal_near(rng, mu, sg, pd.low - 0.5 * pd.step,
                                                          pd.high + 0.5 * pd.step));
      } else if (k == n) {
        v = static_cast<double>(rng.below(pd.n_choices));
      } else {  // the smoothed indicator: 1 on the observed choice, a = prior_weight / n_kernels on each
        const double C = static_cast<double>(pd.n_choices);
        const double a = prior_weight_ / static_cast<double>(k_);
        const double t = rng.uniform() * (a * C + 1.0);
        v = t < 1.0 ? mu : std::min(std::floor((t - 1.0) / a), C - 1.0);
      }
      out[r * D + d] = v;
    }
  }
}

void ParzenEstimator::sample_near(Rng& rng, const double* centre, std::size_t kernel, double scale, std::size_t m,
                                  double* out) const {
  KT_CHECK(k_ > 0, StateError, "parzen: sample_near() before fit()");
  KT_CHECK(kernel < k_, InvalidArgument, "parzen: kernel ", kernel, " out of range (", k_, " kernels)");
  KT_CHECK(std::isfinite(scale) && scale > 0.0, InvalidArgument, "parzen: scale = ", scale, " must be > 0");
  const std::size_t D = dims_.size();
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t d = 0; d < D; ++d) {
      const ParzenDim& pd = dims_[d];
      const double c = centre[d], sg = scale * sigma_[d * stride_ + kernel];
      double v = c;
      if (pd.kind == ParzenDim::Kind::Continuous) {
        v = sample_truncated_normal_near(rng, c, sg, pd.low, pd.high);
      } else if (pd.kind == ParzenDim::Kind::Discrete) {
        v = snap_to_grid(pd, sample_truncated_normal_near(rng, c, sg, pd.low - 0.5 * pd.step, pd.high + 0.5 * pd.step));
      }
      out[r * D + d] = v;
    }
  }
}

}  // namespace kubetune::search
