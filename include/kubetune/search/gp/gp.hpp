// Gaussian-process regression: standardised outputs, constant mean, noise, jittered Cholesky with rank-1
// updates, batched posterior and type-II maximum-likelihood hyperparameters (multi-start L-BFGS-B).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "kubetune/core/rng.hpp"
#include "kubetune/search/gp/kernel.hpp"

namespace kubetune::search::gp {

/// Hyperparameter priors added to the log marginal likelihood (MAP estimate).
/// Optuna: the default prior of optuna._gp.prior (v4.x): on inverse squared length scales lambda,
/// -(0.1 / lambda + 0.1 lambda); kernel scale ~ Gamma(2, 1); noise variance ~ Gamma(1.1, 30).
enum class HyperPrior { None, Optuna };

std::string to_string(HyperPrior p);
HyperPrior hyper_prior_from_string(const std::string& s);

/// Options of the hyperparameter fit. Bounds are on the standardised-output scale with inputs in [0, 1].
struct FitOptions {
  HyperPrior prior = HyperPrior::Optuna;
  int n_restarts = 2;          ///< random restarts besides the default and warm starts
  int max_iterations = 60;     ///< L-BFGS-B iterations per start
  int warm_max_iterations = 0; ///< iterations of the warm start when > 0 (a refit continues from the previous
                               ///< optimum, so a few iterations track it; later refits continue further)
  double min_lengthscale = 1e-2, max_lengthscale = 50.0;
  double min_signal = 1e-2, max_signal = 50.0;
  double min_noise = 1e-6, max_noise = 1.0;  ///< a fixed noise: set min == max
  double mean_bound = 3.0;     ///< constant mean in [-bound, bound] (standardised units)
  bool use_warm_start = true;  ///< start one run from the current hyperparameters
  bool use_default_start = true;  ///< start one run from l = 1, s2 = 1, noise = 1e-2, mean = 0
  bool factorize_result = true;   ///< refactorise at the best parameters (false: the caller refits itself)
};

/// A factorisation built by GaussianProcess::refit_bordered, kept to extend it on a later call: the
/// hyperparameters, the prefix size m, the jitter, the inputs and the lower factor of their covariance.
struct BorderedFactor {
  Eigen::VectorXd theta;
  Eigen::Index m = -1;
  double jitter = 0.0;
  Eigen::MatrixXd X, L;
};

/// GP regression model y = m + f(x) + eps, f ~ GP(0, k), eps ~ N(0, noise) (Rasmussen & Williams 2006,
/// Algorithm 2.1). Outputs are standardised (y - mean_y) / std_y when data are set; the posterior is
/// reported on the original scale. Inputs are the columns of a D x n matrix.
///
/// `set_data` + `refit` = full recompute (standardisation, Cholesky, weights). `add_observation` is the
/// rank-1 (bordered) Cholesky update in O(n^2): it keeps the standardisation and hyperparameters, as used by
/// fantasised observations for batch proposals (limbo's GP does the same split between the two calls).
class GaussianProcess {
 public:
  GaussianProcess() = default;
  GaussianProcess(KernelType type, Eigen::Index dim);

  Eigen::Index dim() const noexcept { return kernel_.dim(); }
  Eigen::Index size() const noexcept { return X_.cols(); }
  const Kernel& kernel() const noexcept { return kernel_; }
  Kernel& kernel() noexcept { return kernel_; }
  double noise() const noexcept { return noise_; }             ///< standardised units
  double mean() const noexcept { return mean_; }               ///< constant mean, standardised units
  double y_mean() const noexcept { return y_shift_; }
  double y_std() const noexcept { return y_scale_; }
  double jitter() const noexcept { return jitter_; }           ///< jitter added to the diagonal in the last factorisation
  const Eigen::MatrixXd& X() const noexcept { return X_; }
  const Eigen::VectorXd& y_standardised() const noexcept { return y_; }

  /// Full parameter vector theta = [log l_1..log l_D, log s2, log noise, mean].
  Eigen::VectorXd params() const;
  void set_params(const Eigen::VectorXd& theta);
  Eigen::Index n_params() const noexcept { return kernel_.n_params() + 2; }
  void set_noise(double noise) noexcept { noise_ = noise; }
  void set_mean(double m) noexcept { mean_ = m; }

  /// Store data (standardising y) and refit the Cholesky factor (unless factor = false: then call refit()
  /// before predicting, e.g. after changing hyperparameters). X: D x n, y: n.
  void set_data(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, bool factor = true);
  /// Full recompute of the factorisation with the current hyperparameters (jitter escalation on failure).
  void refit();
  /// Full recompute of the factorisation in two parts: the blocked Cholesky of the first m points (jitter
  /// escalation as refit()), then one bordered row per later point (O(i^2) each, with the jitter of the
  /// first part). Each row depends only on the rows above it, so when `cache` holds a factor made by this
  /// function for the same hyperparameters, the same m and a prefix of the current inputs, its rows are
  /// copied and only the new ones computed: the result is bit-identical either way. The cache is then
  /// replaced by the new factor. 0 <= m <= size(); m = size() is the same factor as refit().
  void refit_bordered(Eigen::Index m, BorderedFactor* cache = nullptr);
  /// Rank-1 update: append one observation (original scale) in O(n^2). Standardisation and
  /// hyperparameters are kept; call set_data/refit for a full recompute.
  void add_observation(const Eigen::VectorXd& x, double y);

  /// Posterior mean and variance (of f, original scale) at the columns of Xs (D x m), O(n^2) per column.
  /// threads <= 0: all hardware threads.
  void predict(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var, int threads = 1) const;
  /// Cheap first stage of candidate scoring, O(n) per point: the exact posterior mean and an upper bound on
  /// the posterior variance (the variance given only the single most correlated training point, which can
  /// only shrink as points are added). No triangular solves.
  /// If `cross` is non-null it receives k(X, Xs) (n x m, column-major) for solve_cross_prefix().
  void predict_screen(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var_upper,
                      int threads = 1, double* cross = nullptr) const;
  /// Progressive exact variance of one point x from its cross covariances k = k(X, x) (size() entries,
  /// as predict_screen writes them), for branch and bound over candidates. The first `from` entries of k
  /// hold z = L_from^-1 k_from from earlier calls (from = 0: none); this call extends that to the first `to`
  /// entries (the leading block of the factor is the factor of the leading block: one panel product and
  /// one triangular solve, O(to^2 - from^2)) and returns the posterior variance of f(x) given the first
  /// `to` training points (original scale, floored). It can only shrink as `to` grows (conditioning on more
  /// points never increases the variance), and at to = size() it is the exact posterior variance. The
  /// arithmetic depends only on the sequence of (from, to) steps, so a fixed schedule gives fixed bits.
  double solve_cross_prefix(double* k, Eigen::Index from, Eigen::Index to) const;
  /// Posterior at one point, with gradients of mean and variance w.r.t. x (each length D) if non-null.
  void predict_one(const double* x, double& mean, double& var, double* dmean = nullptr,
                   double* dvar = nullptr) const;

  /// Log marginal likelihood of the standardised data at the current hyperparameters (plus the log prior
  /// when prior != None) and, if grad != nullptr, its gradient w.r.t. params().
  double log_marginal_likelihood(Eigen::VectorXd* grad = nullptr, HyperPrior prior = HyperPrior::None) const;

  /// Maximise the (penalised) log marginal likelihood by multi-start L-BFGS-B: the current parameters
  /// (warm start), a default start, and opt.n_restarts random starts drawn from rng. Leaves the best
  /// parameters set and (if opt.factorize_result) the model refitted. Returns the best objective.
  double fit_hyperparameters(const FitOptions& opt, Rng& rng);

 private:
  struct FitWorkspace;  // n x n buffers reused across the likelihood evaluations of one fit
  void factorize();
  // The factor L() of K + (noise + jitter) I (K's lower triangle read), escalating the jitter.
  void factor_jittered(const Eigen::MatrixXd& K);
  // v <- L_m^-1 v with the factor's leading m x m block, and v <- L^-T v (length size()): AVX2 substitutions
  // where the CPU has them, else Eigen's.
  void solve_lower(double* v, Eigen::Index m) const;
  void solve_lower_t(double* v) const;
  void update_alpha();  // alpha_ = K^-1 (y - mean) from the factor
  // Lbuf_ as capacity x capacity with its top-left keep x keep block kept and every other entry zero.
  void reserve_factor(Eigen::Index keep, Eigen::Index capacity);
  void add_log_prior(HyperPrior prior, double& lml, Eigen::VectorXd* grad) const;
  // factorize() + log_marginal_likelihood(&grad, prior) sharing one kernel pass, in ws's buffers.
  double fit_objective(FitWorkspace& ws, Eigen::VectorXd& grad, HyperPrior prior);

  Kernel kernel_;
  double noise_ = 1e-4;
  double mean_ = 0.0;
  double y_shift_ = 0.0, y_scale_ = 1.0;
  double jitter_ = 0.0;
  Eigen::MatrixXd X_;
  Eigen::VectorXd y_;      // standardised targets
  // Lower Cholesky factor of K + (noise + jitter) I: the top-left size() x size() block of Lbuf_, whose other
  // entries are zero (room for kSpare add_observation calls without copying the factor).
  static constexpr Eigen::Index kSpare = 16;
  Eigen::MatrixXd Lbuf_;
  Eigen::Block<const Eigen::MatrixXd> L() const { return Lbuf_.topLeftCorner(X_.cols(), X_.cols()); }
  Eigen::VectorXd alpha_;  // K^-1 (y - mean)
};

}  // namespace kubetune::search::gp
