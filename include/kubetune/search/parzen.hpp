// Parzen (kernel mixture) density estimator over mixed continuous / discrete / categorical dimensions (TPE, BOHB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "kubetune/core/aligned.hpp"
#include "kubetune/core/normal.hpp"
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
/// prior_weight, normalised. This is Optuna's `_ParzenEstimator` (checked against it in
/// tests/python/test_tpe_optuna.py). References: Bergstra et al., "Algorithms for Hyper-Parameter
/// Optimization", NeurIPS 2011; Watanabe, "Tree-Structured Parzen Estimator: Understanding Its Algorithm
/// Components and Their Roles for Better Empirical Performance", 2023.
///
/// Kernels are stored in input order, the prior last. log_pdf() evaluates every kernel (vectorised; see
/// src/search/tpe/simd.hpp), so its cost is points x kernels x dimensions whatever the history looks like.
/// fit() reuses its buffers. log_pdf() and sample() only read the estimator: they may run on several threads.
class ParzenEstimator {
 public:
  /// Fit on `n` observations stored row-major (n x dims.size()); `weights` may be null (all ones).
  /// `order` (optional, neighbour bandwidths): per dimension, the observations' stable argsort (ascending
  /// value, ties by row), dimension-major (d * n + j; categorical dimensions unused), e.g. kept incrementally
  /// by the caller. It saves the sorts and gives identical results; an order that is not sorted is refused.
  /// Throws InvalidArgument on inconsistent dimensions, observations or options.
  void fit(const std::vector<ParzenDim>& dims, const double* observations, std::size_t n, const double* weights,
           const ParzenOptions& options, const std::size_t* order = nullptr);

  /// fit() for observations stored column-major (obs[d * n + i]).
  void fit_columns(const std::vector<ParzenDim>& dims, const double* observations, std::size_t n,
                   const double* weights, const ParzenOptions& options, const std::size_t* order = nullptr);

  /// The fit() of the last fit's observations edited in place: the observations at kernel positions `erase`
  /// (ascending) removed, then rows added at positions `insert_at` of the new order (ascending; `rows`: one
  /// row-major row of n_dims() values each), `weights` the new observations' weights in the new order (null: all
  /// ones); the dimensions and options are the last fit's. The kernels are those of that fit, bit for bit: only
  /// the edited kernels and their neighbours in each dimension's order get new widths and constants, the rest
  /// costs a pass over the weights. Returns false, changing nothing, where an edit in place would not give the
  /// fit (can_refit); the caller fits anew. TPE's l(x) and g(x) from one ask to the next. Throws
  /// InvalidArgument on bad positions, rows or weights, StateError before fit().
  bool refit(const std::vector<std::size_t>& erase, const std::vector<std::size_t>& insert_at, const double* rows,
             const double* weights);
  /// Whether refit() edits in place to n_new observations with n_edits erasures and insertions: neighbour widths,
  /// few edits, room in the tables, and the magic clip's bound range / min(100, 1 + kernels) unchanged.
  bool can_refit(std::size_t n_new, std::size_t n_edits) const noexcept;

  std::size_t n_dims() const noexcept { return dims_.size(); }
  /// Observations + the prior kernel.
  std::size_t n_kernels() const noexcept { return k_; }
  const std::vector<ParzenDim>& dims() const noexcept { return dims_; }
  /// Normalised mixture weights (input order, prior last).
  const std::vector<double>& weights() const noexcept { return w_; }
  /// Kernel centres / widths of dimension `d` (n_kernels() values each, input order, prior last;
  /// categorical: the observed index, -1 for the prior, width 0).
  const double* mus(std::size_t d) const noexcept { return mu_.data() + d * pitch_; }
  const double* sigmas(std::size_t d) const noexcept { return sigma_.data() + d * pitch_; }

  /// Draw m points (row-major m x n_dims()) from the mixture; `kernels` (optional, m entries) receives the
  /// kernel each point was drawn from.
  void sample(Rng& rng, std::size_t m, double* out, std::size_t* kernels = nullptr) const;
  /// Draw m points (row-major) around `centre`: each non-categorical dimension from a normal centred there
  /// with `scale` times kernel `kernel`'s width, truncated to the support (discrete ones snapped to the grid as
  /// in sample()); categorical dimensions keep the centre's choice. TPE's candidate refinement.
  void sample_near(Rng& rng, const double* centre, std::size_t kernel, double scale, std::size_t m,
                   double* out) const;
  /// Log density (Continuous dimensions) / log mass (Discrete, Categorical) of m row-major points. Points are
  /// split over up to n_threads threads when the work is large (<= 0: all hardware threads); results do not
  /// depend on the thread count.
  void log_pdf(const double* x, std::size_t m, double* out, int n_threads = 1) const;
  double log_pdf(const double* x) const;

 private:
  void check_dims(const std::vector<ParzenDim>& dims) const;
  void check_value(std::size_t d, std::size_t i, double v) const;
  static void check_weights(std::size_t n, const double* weights);
  void fit_weights(std::size_t n, const double* weights, double prior_weight);
  void fit_strided(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n, std::size_t row_step,
                   std::size_t dim_step, const double* weights, const ParzenOptions& opt, const std::size_t* order);
  void fit_centres(std::size_t d, const double* obs, std::size_t step, std::size_t n);
  void fit_widths(std::size_t d, std::size_t n, const std::size_t* order);
  void fit_categorical(std::size_t d, const double* obs, std::size_t step, std::size_t n);
  void categorical_constants(std::size_t d);
  bool is_stable_argsort(const double* v, std::size_t n, const std::size_t* order);
  void fit_constants(std::size_t d, std::size_t from, std::size_t to, bool use_prev);
  void fit_base();
  double min_width(std::size_t d, std::size_t n_kernels) const;
  double neighbour_width(std::size_t d, double vm, double v, double vp, std::size_t j, std::size_t n,
                         double minsig) const;
  // refit() in place (parzen_refit.cpp).
  void edit_erase(std::size_t p);
  void edit_insert(std::size_t p, const double* row);
  std::size_t sorted_index(std::size_t d, std::size_t p) const;
  void edit_widths(std::size_t d);
  static constexpr std::size_t kBlock = 8;  // points per vectorised pass (simd.hpp)
  struct DiscreteRows;  // parzen_eval.cpp
  void discrete_rows(const double* x, std::size_t m, DiscreteRows& out) const;
  bool grid_rows(std::size_t d, const std::vector<std::pair<double, std::size_t>>& values, std::size_t j,
                 DiscreteRows& dr, std::size_t& n_rows) const;
  void distinct_log_pdf(const double* x, std::size_t m, double* out, int n_threads) const;
  void points_log_pdf(const double* x, std::size_t m, const std::size_t* row_of, const DiscreteRows& dr,
                      double* terms, double* pts, double* weights, double* out) const;

  std::vector<ParzenDim> dims_;
  ParzenOptions opt_;
  std::size_t k_ = 0;       // kernels (observations + prior)
  std::size_t stride_ = 0;  // kernels scored: k_ rounded up for the SIMD loads
  std::size_t pitch_ = 0;   // row length of the per-dimension tables (>= stride_; room for refit() to grow)
  bool has_discrete_ = false;
  std::vector<double> w_;
  // Per dimension d, kernel k at d * pitch_ + k. Continuous / Discrete: centre, width, coef = 1 / (sqrt(2) sigma) and
  // term = - log sqrt(2 pi) - log sigma - log Z (discrete: - log Z, the bin's mass multiplied in when scoring);
  // Categorical: centre = the observed index (-1: prior), coef = log hit - log miss, term = the log mass of a
  // choice the kernel did not observe. Kernels from k_ on are padding (centre 0, width 1; base -inf).
  aligned_vector<double> mu_, sigma_, coef_, term_;
  // The previous fit's tables (fit_constants reuses the constants of kernels that did not move).
  struct Previous {
    bool valid = false;
    std::size_t pitch = 0, stride = 0;
    aligned_vector<double> mu, sigma, coef, term;
  } prev_;
  // Per kernel: log weight + every dimension's term (padding kernels -inf).
  aligned_vector<double> base_;
  std::vector<double> half_;  // per dimension: half a step (Discrete), 0 otherwise
  std::vector<char> kind_;    // per dimension: simd.hpp's kContinuous / kDiscrete / kCategorical
  // Per continuous / discrete dimension (neighbour widths): the observations' kernel positions in ascending order
  // of centre, ties by position (what refit() edits).
  std::vector<std::vector<std::uint32_t>> sorted_pos_;  // (32 bits: the edits' shifts run twice as wide)
  // refit() scratch: per dimension, the kernels whose width must be recomputed (positions after the edits so far).
  std::vector<std::vector<std::size_t>> moved_;
  // Fit scratch: centres and widths in sorted order; argsort.
  std::vector<double> sorted_, widths_;
  std::vector<std::pair<double, std::size_t>> pairs_;
};

/// The estimator's names for the shared normal maths (kubetune/core/normal.hpp).
inline double normal_cdf(double x) noexcept { return ::kubetune::normal::cdf(x); }
inline double log_normal_cdf(double x) noexcept { return ::kubetune::normal::log_cdf(x); }
/// log(Phi(b) - Phi(a)) for a < b, accurate in both tails.
inline double log_normal_cdf_diff(double a, double b) noexcept { return ::kubetune::normal::log_cdf_diff(a, b); }
inline double normal_quantile(double p) noexcept { return ::kubetune::normal::quantile(p); }
/// Draw from N(mu, sigma^2) truncated to [low, high] by inversion.
double sample_truncated_normal(Rng& rng, double mu, double sigma, double low, double high) noexcept;
/// A standard normal by the ziggurat method (Marsaglia & Tsang 2000; 128 layers): about one 64-bit draw each.
double standard_normal(Rng& rng) noexcept;
/// The same distribution, cheaper when mu lies in [low, high] (kernel centres, TPE's draws): normal draws
/// redrawn until inside (at most 32, then inversion). Its own random stream.
double sample_truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept;

}  // namespace kubetune::search
