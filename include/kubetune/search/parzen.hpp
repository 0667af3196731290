// Parzen (kernel mixture) density estimator over mixed continuous / discrete / categorical dimensions (TPE, BOHB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "kubetune/core/rng.hpp"

namespace kubetune::search {

/// One dimension of a Parzen estimator, in the model's coordinates (already log-transformed where the
/// parameter is log-scaled; the index for ordered lists and categories).
struct ParzenDim {
  enum class Kind { Continuous, Discrete, Categorical };
  Kind kind = Kind::Continuous;
  double low = 0.0;             ///< Continuous: lower bound of the support; Discrete: first grid value
  double high = 1.0;            ///< Continuous: upper bound; Discrete: last grid value
  double step = 0.0;            ///< Discrete: grid spacing (> 0)
  std::size_t n_choices = 0;    ///< Categorical: number of choices
  /// Prior kernel: centre (NaN = middle of the range) and width (<= 0 = the range's width, as in Optuna).
  double prior_mu = std::numeric_limits<double>::quiet_NaN();
  double prior_sigma = 0.0;

  static ParzenDim continuous(double low, double high);
  static ParzenDim discrete(double low, double high, double step);
  static ParzenDim categorical(std::size_t n_choices);
};

/// Estimator settings. Defaults follow Optuna 4.x `_ParzenEstimatorParameters` as used by TPESampler.
struct ParzenOptions {
  double prior_weight = 1.0;        ///< weight of the prior kernel (before normalisation); must be > 0
  bool magic_clip = true;           ///< lower-bound bandwidths by range / min(100, 1 + n_kernels) (hyperopt)
  bool consider_endpoints = false;  ///< let the outermost kernels' widths reach the bounds
  /// Kernel widths per dimension. Neighbour: distance to the farther neighbouring centre in sorted order,
  /// the bounds acting as outer neighbours (Bergstra et al. 2011; Optuna 5.x uses it for univariate and
  /// multivariate TPE alike). Scott: one width 0.2 * n^(-1/(d+4)) * range (Optuna 4.x multivariate TPE).
  enum class Bandwidth { Neighbour, Scott };
  Bandwidth bandwidth = Bandwidth::Neighbour;
};

/// Mixture of product kernels: one kernel per observation plus one prior kernel. Continuous dimensions use
/// truncated normals on [low, high]; Discrete ones the mass of a truncated normal on the step's bin
/// (bounds padded by half a step); Categorical ones the smoothed indicator (prior_weight / n_kernels added
/// to every choice, then normalised; Optuna 4.x). Weights are the caller's observation weights plus
/// prior_weight, normalised. References: Bergstra et al., "Algorithms for Hyper-Parameter Optimization",
/// NeurIPS 2011; Watanabe, "Tree-Structured Parzen Estimator: Understanding Its Algorithm Components and
/// Their Roles for Better Empirical Performance", 2023.
///
/// fit() reuses its buffers, so refitting an estimator of the same or smaller size does not allocate.
/// log_pdf() and sample() use internal scratch / lazily built tables: one object must not be evaluated or
/// sampled from several threads at once.
class ParzenEstimator {
 public:
  /// Fit on `n` observations stored row-major (n x dims.size()); `weights` may be null (all ones).
  /// `order` (optional, neighbour bandwidths): the observations' stable argsort (ascending value, ties by row,
  /// -0 == +0), e.g. kept incrementally by the caller; it saves the sort and gives identical results. With
  /// several dimensions: one argsort per dimension, dimension-major (d * n + j; categorical ones unused).
  /// Throws InvalidArgument on inconsistent dimensions or options.
  void fit(const std::vector<ParzenDim>& dims, const double* observations, std::size_t n, const double* weights,
           const ParzenOptions& options, const std::size_t* order = nullptr);

  /// Joint estimators with at least this many observations (first dimension not categorical) keep their kernels
  /// sorted by dimension 0 and evaluate only the window of kernels near each point.
  static constexpr std::size_t kWindowRows = 64;
  /// fit() for a caller that already holds its rows in that sorted order, column-major (obs[d * n + j]): row j
  /// (and weights[j]) is input row perm[j] of the equivalent fit() call, rows ascending in dimension 0 (values
  /// clamped to the support, ties by input row); `order` holds, dimension-major (d * n + j), each dimension's stable argsort
  /// over these rows (ties by input row; dimension 0 and categorical ones unused). Gives exactly
  /// fit(dims, rows in input order, ...) and falls back to it when the rows are not as described (n below
  /// kWindowRows, one dimension, categorical dimension 0, unsorted rows). perm must be a permutation of 0..n-1.
  void fit_presorted(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n, const double* weights,
                     const ParzenOptions& options, const std::size_t* order, const std::size_t* perm);

  std::size_t n_dims() const noexcept { return dims_.size(); }
  /// Observations + the prior kernel.
  std::size_t n_kernels() const noexcept { return k_; }
  const std::vector<ParzenDim>& dims() const noexcept { return dims_; }
  /// Normalised mixture weights (prior last).
  const std::vector<double>& weights() const noexcept { return w_; }
  /// Kernel centres / widths of dimension `d` (n_kernels() values each; categorical: observed index, -1 prior).
  /// One-dimensional non-categorical estimators, and joint ones with >= 64 observations whose first dimension
  /// is not categorical, store their observation kernels sorted by (first) centre, ties in input order; the
  /// prior kernel is always last.
  const double* mus(std::size_t d) const noexcept { return mu_.data() + d * k_; }
  const double* sigmas(std::size_t d) const noexcept { return sigma_.data() + d * k_; }

  /// Draw m points (row-major m x n_dims()) from the mixture; `kernels` (optional, m entries) receives the
  /// kernel each point was drawn from (an index for mus() / sigmas()).
  void sample(Rng& rng, std::size_t m, double* out, std::size_t* kernels = nullptr) const;
  /// Draw m points (row-major) around `centre`: each non-categorical dimension from a normal centred there
  /// with `scale` times kernel `kernel`'s width, truncated to the support (discrete ones snapped to the grid as
  /// in sample()); categorical dimensions keep the centre's choice. TPE's candidate refinement.
  void sample_near(Rng& rng, const double* centre, std::size_t kernel, double scale, std::size_t m,
                   double* out) const;
  /// Log density (Continuous dimensions) / log mass (Discrete, Categorical) of m row-major points.
  /// Work is split over up to n_threads threads when large (<= 0: all hardware threads), except for the
  /// windowed evaluation of joint estimators with >= 64 observations (one thread); results do not depend on
  /// the thread count.
  void log_pdf(const double* x, std::size_t m, double* out, int n_threads = 1) const;
  double log_pdf(const double* x) const;

 private:
  bool approx_range(const double* x, std::size_t k0, std::size_t k1, double* acc, double* slo, double* shi) const;
  void window_bounds();
  void build_cum_weights() const;
  double log_pdf_window(const double* x) const;
  double log_pdf_prefiltered(const double* x, std::size_t lo, std::size_t hi, double t_prior) const;
  double window_sum(const double* x, const std::size_t* idx, std::size_t lo, std::size_t m, double* acc,
                    const double* slo, const double* shi, double t_prior) const;
  double exact_term(const double* x, std::size_t k, double approx) const;
  void fit_sorted1d(const double* obs, std::size_t n, const ParzenOptions& opt, const std::size_t* order);
  void update_lzsum(std::size_t k) const;
  void resolve_log_z(std::size_t k) const;
  double log_pdf_1d(double x) const;
  void argsort(const double* v, std::size_t n);

  std::vector<ParzenDim> dims_;
  std::size_t k_ = 0;
  double prior_weight_ = 1.0;
  bool has_discrete_ = false;
  std::vector<double> w_, lw_;
  mutable std::vector<double> cum_w_;  // built lazily by sample()
  mutable bool cum_valid_ = false;
  // Per dimension, n_kernels() entries each (index d * k_ + k).
  // cst: -log sigma - log sqrt(2 pi) (+ log step). log Z (lz) is computed lazily; ub bounds -log Z (its value
  // once known); lzsum is a kernel's sum of log Z over dimensions once all are known. known: 0 unknown,
  // 1 log Z = 0 (both bounds beyond 8.5 sigma; joint estimators do not store it), 2 stored in lz.
  std::vector<double> mu_, sigma_, inv_sigma_, half_, cst_;
  mutable std::vector<double> lz_, ub_, lzsum_;
  mutable std::vector<char> known_, kernel_known_;
  bool any_unknown_ = false;
  // Categorical: log probability of the observed choice / of any other choice, per dimension.
  std::vector<double> cat_hit_, cat_miss_, cat_prior_;
  // Scratch.
  std::vector<std::pair<double, std::size_t>> pairs_;
  std::vector<std::size_t> order_, idx_;
  std::vector<char> seen_;
  std::vector<std::uint64_t> keys_;
  std::vector<double> sorted_w_;  // scratch (widths: centres in sorted order; categorical masses)
  bool sorted1d_ = false;
  // Previous one-dimensional fit's sorted kernels and truncation masses (lz is a pure function of bounds,
  // centre and width; reused for identical kernels, never changing a result). prev_kn_ marks resolved ones.
  bool prev1d_ok_ = false;
  std::size_t prev1d_n_ = 0;
  double prev1d_lo_ = 0.0, prev1d_hi_ = 0.0;
  std::vector<double> prev_mu_, prev_sg_, prev_lz_;
  std::vector<char> prev_kn_;
  // Joint estimators with many kernels: observation kernels sorted by dimension 0 (win_perm_: input index
  // of each), sample_pos_ maps an input index to its position; tmax_ / sig_max_ bound the window.
  bool win_ = false;
  bool window_input_ = false;  // fit() is running on the reordered rows
  bool colmajor_input_ = false;  // ... given column-major (fit_presorted)
  std::vector<std::size_t> win_perm_, sample_pos_, win_order_;
  std::vector<double> win_obs_, win_w_, win_col_;
  bool cat1d_ = false;            // one categorical dimension: log masses per choice in cat1d_lp_
  std::vector<double> cat1d_lp_;
  double tmax_ = 0.0, sig_max_ = 0.0;
  std::vector<double> wb_;             // windowed: per observation kernel, its log term with distances dropped
  std::vector<std::size_t> pre_dims_;  // windowed: continuous dimensions of the pre-filter
  mutable std::vector<double> pre_g_;
  std::vector<double> sig_tmp_;  // fit scratch: interior widths in sorted order
  mutable std::vector<std::size_t> pre_idx_;
  mutable std::vector<double> terms_;
  mutable std::vector<double> acc_, slo_, shi_, thr_;
};

/// Standard normal CDF and its logarithm (accurate far into the lower tail).
double normal_cdf(double x) noexcept;
double log_normal_cdf(double x) noexcept;
/// log(Phi(b) - Phi(a)) for a < b, accurate in both tails.
double log_normal_cdf_diff(double a, double b) noexcept;
/// Inverse standard normal CDF (Acklam's rational approximation refined by one Halley step).
double normal_quantile(double p) noexcept;
/// Draw from N(mu, sigma^2) truncated to [low, high] by inversion.
double sample_truncated_normal(Rng& rng, double mu, double sigma, double low, double high) noexcept;
/// A standard normal by the ziggurat method (Marsaglia & Tsang 2000; 128 layers): about one 64-bit draw each.
double standard_normal(Rng& rng) noexcept;
/// The same distribution, cheaper when mu lies in [low, high] (kernel centres, TPE's draws): normal draws
/// redrawn until inside (at most 32, then inversion). Its own random stream.
double sample_truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept;

}  // namespace kubetune::search
