// GP regression: standardisation, jittered Cholesky, rank-1 updates, batched posterior, ML-II fitting.
#include "eigen_single_thread.hpp"  // first: before any Eigen header
#include "kubetune/search/gp/gp.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <LBFGSB.h>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "simd_kernels.hpp"

namespace kubetune::search::gp {
namespace {
constexpr double kLog2Pi = 1.83787706640934548356;
constexpr Eigen::Index kRecursionBase = 48;

// In-place inverse of a lower-triangular matrix by recursive 2x2 blocking (LAPACK's trtri idea):
// [A 0; B C]^-1 = [A^-1 0; -C^-1 B A^-1  C^-1]; n^3/6 multiply-adds, almost all in GEMM-like kernels.
void invert_lower(Eigen::Ref<Eigen::MatrixXd> L) {
  const Eigen::Index n = L.rows();
  if (n <= kRecursionBase) {
    Eigen::MatrixXd I = Eigen::MatrixXd::Identity(n, n);
    L.triangularView<Eigen::Lower>().solveInPlace(I);
    L = I;
    return;
  }
  const Eigen::Index k = n / 2;
  auto A = L.topLeftCorner(k, k);
  auto B = L.bottomLeftCorner(n - k, k);
  auto C = L.bottomRightCorner(n - k, n - k);
  invert_lower(A);
  Eigen::MatrixXd T = B * A.triangularView<Eigen::Lower>();  // B A^-1
  C.triangularView<Eigen::Lower>().solveInPlace(T);          // C^-1 B A^-1 (C not yet inverted)
  B = -T;
  invert_lower(C);
}

// Lower triangle of S = M^T M for lower-triangular M (LAPACK's lauum idea), n^3/6 multiply-adds:
// [P 0; Q R]^T [P 0; Q R] = [P^T P + Q^T Q, Q^T R; R^T Q, R^T R].
void lower_gram(const Eigen::Ref<const Eigen::MatrixXd>& M, Eigen::Ref<Eigen::MatrixXd> S) {
  const Eigen::Index n = M.rows();
  if (n <= kRecursionBase) {
    S.noalias() = M.transpose() * M;
    return;
  }
  const Eigen::Index k = n / 2;
  lower_gram(M.topLeftCorner(k, k), S.topLeftCorner(k, k));
  Eigen::MatrixXd Qt = M.bottomLeftCorner(n - k, k).transpose();
  Eigen::MatrixXd TL = S.topLeftCorner(k, k);
  TL.selfadjointView<Eigen::Lower>().rankUpdate(Qt);
  S.topLeftCorner(k, k).triangularView<Eigen::Lower>() = TL;
  S.bottomLeftCorner(n - k, k).noalias() =
      M.bottomRightCorner(n - k, n - k).triangularView<Eigen::Lower>().transpose() * M.bottomLeftCorner(n - k, k);
  lower_gram(M.bottomRightCorner(n - k, n - k), S.bottomRightCorner(n - k, n - k));
}
constexpr double kMinVar = 1e-12;  // floor of the posterior variance (standardised units)

// In-place lower Cholesky factor of A (its lower triangle read; the strict upper triangle zeroed on success):
// the AVX2 blocked kernel where the CPU has it, else Eigen's LLT. A machine always takes the same path.
bool cholesky_in_place(Eigen::Ref<Eigen::MatrixXd> A) {
  bool ok = false;
  if (simd::available()) {
    ok = simd::potrf_lower(A.data(), static_cast<std::size_t>(A.outerStride()), static_cast<std::size_t>(A.rows()));
  } else {
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(A);
    ok = llt.info() == Eigen::Success;
  }
  if (!ok || !A.diagonal().allFinite() || !(A.diagonal().array() > 0).all()) return false;
  A.triangularView<Eigen::StrictlyUpper>().setZero();
  return true;
}
}  // namespace

std::string to_string(HyperPrior p) { return p == HyperPrior::Optuna ? "optuna" : "none"; }

HyperPrior hyper_prior_from_string(const std::string& s) {
  std::string t(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "optuna" || t == "default") return HyperPrior::Optuna;
  if (t == "none" || t == "") return HyperPrior::None;
  KT_THROW(InvalidArgument, "prior '", s, "' is not one of optuna, none");
}

GaussianProcess::GaussianProcess(KernelType type, Eigen::Index dim)
    : kernel_(type, Eigen::VectorXd::Ones(dim), 1.0) {
  KT_CHECK(dim >= 1, InvalidArgument, "GP dim = ", dim, " must be >= 1");
}

Eigen::VectorXd GaussianProcess::params() const {
  Eigen::VectorXd t(n_params());
  t.head(kernel_.n_params()) = kernel_.log_params();
  t[kernel_.n_params()] = std::log(noise_);
  t[kernel_.n_params() + 1] = mean_;
  return t;
}

void GaussianProcess::set_params(const Eigen::VectorXd& theta) {
  KT_CHECK(theta.size() == n_params(), InvalidArgument, "GP params has ", theta.size(), " entries, expected ",
           n_params());
  kernel_.set_log_params(theta.head(kernel_.n_params()));
  noise_ = std::exp(theta[kernel_.n_params()]);
  mean_ = theta[kernel_.n_params() + 1];
}

void GaussianProcess::set_data(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, bool factor) {
  KT_CHECK(X.rows() == dim(), InvalidArgument, "GP X has ", X.rows(), " rows, expected dim ", dim());
  KT_CHECK(X.cols() == y.size(), InvalidArgument, "GP X has ", X.cols(), " points but y has ", y.size());
  KT_CHECK(X.allFinite() && y.allFinite(), InvalidArgument, "GP data contain NaN or infinite values");
  X_ = X;
  const Eigen::Index n = y.size();
  y_shift_ = n > 0 ? y.mean() : 0.0;
  double var = n > 1 ? (y.array() - y_shift_).square().sum() / static_cast<double>(n) : 0.0;
  y_scale_ = var > 1e-300 ? std::sqrt(var) : 1.0;
  y_ = ((y.array() - y_shift_) / y_scale_).matrix();
  if (factor) refit();
}

void GaussianProcess::refit() { factorize(); }

void GaussianProcess::factorize() {
  const Eigen::Index n = X_.cols();
  if (n == 0) {
    Lbuf_.setZero(kSpare, kSpare);
    alpha_.resize(0);
    jitter_ = 0.0;
    return;
  }
  factor_jittered(kernel_.gram(X_));
  update_alpha();
}

void GaussianProcess::solve_lower(double* v, Eigen::Index m) const {
  if (simd::available()) {  // AVX2 substitutions, else Eigen's
    simd::trsv_lower(Lbuf_.data(), static_cast<std::size_t>(Lbuf_.outerStride()), v, static_cast<std::size_t>(m));
  } else {
    Eigen::Map<Eigen::VectorXd> x(v, m);
    Lbuf_.topLeftCorner(m, m).triangularView<Eigen::Lower>().solveInPlace(x);
  }
}

void GaussianProcess::solve_lower_t(double* v) const {
  const Eigen::Index n = X_.cols();
  if (simd::available()) {
    simd::trsv_lower_t(Lbuf_.data(), static_cast<std::size_t>(Lbuf_.outerStride()), v, static_cast<std::size_t>(n));
  } else {
    Eigen::Map<Eigen::VectorXd> x(v, n);
    L().transpose().triangularView<Eigen::Upper>().solveInPlace(x);
  }
}

void GaussianProcess::update_alpha() {
  alpha_ = y_.array() - mean_;
  solve_lower(alpha_.data(), X_.cols());
  solve_lower_t(alpha_.data());
}

void GaussianProcess::factor_jittered(const Eigen::MatrixXd& K) {
  // Jitter escalation: 0, then 1e-10 .. 1e-2 times the signal variance.
  double jitter = 0.0;
  const double scale = kernel_.signal_variance();
  const Eigen::Index n = K.rows();
  for (int attempt = 0; attempt < 10; ++attempt) {
    reserve_factor(0, n + kSpare);
    auto L = Lbuf_.topLeftCorner(n, n);
    L = K;
    L.diagonal().array() += noise_;
    if (jitter > 0) L.diagonal().array() += jitter;
    if (cholesky_in_place(L)) {
      jitter_ = jitter;
      return;
    }
    jitter = jitter == 0.0 ? 1e-10 * scale : jitter * 10.0;
  }
  KT_THROW(StateError, "GP Cholesky failed even with jitter ", jitter, " (noise ", noise_, ")");
}

void GaussianProcess::reserve_factor(Eigen::Index keep, Eigen::Index capacity) {
  if (Lbuf_.cols() == capacity) {  // zero all but the kept block, reusing the storage
    Lbuf_.rightCols(capacity - keep).setZero();
    Lbuf_.bottomLeftCorner(capacity - keep, keep).setZero();
    return;
  }
  Eigen::MatrixXd grown = Eigen::MatrixXd::Zero(capacity, capacity);
  grown.topLeftCorner(keep, keep) = Lbuf_.topLeftCorner(keep, keep);
  Lbuf_.swap(grown);
}

void GaussianProcess::refit_bordered(Eigen::Index m, BorderedFactor* cache) {
  const Eigen::Index n = X_.cols();
  KT_CHECK(m >= 0 && m <= n, InvalidArgument, "GP refit_bordered: m = ", m, " must be in [0, ", n, "]");
  const Eigen::VectorXd theta = params();
  Eigen::Index start = 0;
  if (cache && cache->m == m && cache->X.cols() >= m && cache->X.cols() <= n && cache->X.rows() == dim() &&
      cache->theta.size() == theta.size() && (cache->theta.array() == theta.array()).all() &&
      (X_.leftCols(cache->X.cols()).array() == cache->X.array()).all()) {
    start = cache->X.cols();
    reserve_factor(0, n + kSpare);
    Lbuf_.topLeftCorner(start, start) = cache->L;
    jitter_ = cache->jitter;
  } else {
    // The first m points: as factorize(), then the factor padded to n x n.
    const Eigen::MatrixXd Xall = std::move(X_);
    X_ = Xall.leftCols(m);
    const Eigen::VectorXd yall = y_;
    y_ = yall.head(m);
    factorize();
    X_ = Xall;
    y_ = yall;
    if (Lbuf_.cols() < n) reserve_factor(m, n + kSpare);  // rows and columns past m are zero
    if (m == 0) jitter_ = 0.0;
    start = m;
  }
  const double kxx = kernel_.signal_variance() + noise_ + jitter_;
  Eigen::VectorXd k(n);
  for (Eigen::Index i = start; i < n; ++i) {
    // Row i of the factor: l = L_{<i}^-1 k(X_{<i}, x_i), pivot sqrt(k(x_i, x_i) - |l|^2) (as add_observation).
    for (Eigen::Index j = 0; j < i; ++j) k[j] = kernel_(X_.col(j).data(), X_.col(i).data());
    auto l = k.head(i);
    solve_lower(l.data(), i);
    const double d2 = std::max(kxx - l.squaredNorm(), 1e-10 * kernel_.signal_variance());
    Lbuf_.row(i).head(i) = l.transpose();
    Lbuf_(i, i) = std::sqrt(d2);
  }
  update_alpha();
  if (cache) {
    cache->theta = theta;
    cache->m = m;
    cache->jitter = jitter_;
    cache->X = X_;
    cache->L = L();
  }
}

void GaussianProcess::add_observation(const Eigen::VectorXd& x, double y) {
  KT_CHECK(x.size() == dim(), InvalidArgument, "GP add_observation: x has ", x.size(), " entries, expected ",
           dim());
  KT_CHECK(x.allFinite() && std::isfinite(y), InvalidArgument, "GP add_observation: non-finite x or y = ", y);
  const Eigen::Index n = X_.cols();
  Eigen::VectorXd k(n);
  for (Eigen::Index i = 0; i < n; ++i) k[i] = kernel_(X_.col(i).data(), x.data());
  Eigen::VectorXd l = k;
  solve_lower(l.data(), n);
  double kxx = kernel_.signal_variance() + noise_ + jitter_;
  double d2 = kxx - l.squaredNorm();
  // A (near) duplicate input: keep the factor positive definite with the smallest admissible pivot.
  d2 = std::max(d2, 1e-10 * kernel_.signal_variance());
  if (Lbuf_.cols() <= n) reserve_factor(n, n + kSpare);  // the next row and column are zero
  Lbuf_.row(n).head(n) = l.transpose();
  Lbuf_(n, n) = std::sqrt(d2);
  X_.conservativeResize(Eigen::NoChange, n + 1);
  X_.col(n) = x;
  y_.conservativeResize(n + 1);
  y_[n] = (y - y_shift_) / y_scale_;
  update_alpha();
}

namespace {
// Runs body(first_column, n_columns) over blocks of 128 candidate columns, in parallel with up to `threads`,
// one thread per kGrain (candidate, training point) pairs: a share shorter than ~10 ms cannot absorb a
// scheduling delay on a shared machine, where the barrier then waits for a descheduled thread (measured on
// a 2-core box under load 2: a 1,000-point GP call 96 ms on 2 threads, 61 ms on 1). Results do not depend
// on the thread count.
constexpr Eigen::Index kGrain = Eigen::Index{1} << 20;
template <class Body>
void for_each_block(Eigen::Index m, Eigen::Index n, int threads, Body body) {
  constexpr Eigen::Index kBlock = 128;
  const Eigen::Index n_blocks = (m + kBlock - 1) / kBlock;
  const int nt = static_cast<int>(std::min<Eigen::Index>(
      {core::resolve_threads(threads), std::max<Eigen::Index>(n_blocks, 1), std::max<Eigen::Index>(m * n / kGrain, 1)}));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (Eigen::Index b = 0; b < n_blocks; ++b) {
    const Eigen::Index c0 = b * kBlock;
    body(c0, std::min(kBlock, m - c0));
  }
}

/// Checks the points `Xs` against the GP's dimension and sizes mean / var for them; with no observations (n == 0)
/// fills them with the prior and returns true (nothing left to compute).
bool start_posterior(const char* what, const Eigen::MatrixXd& Xs, Eigen::Index dim, Eigen::Index n,
                     double prior_mean, double prior_var, Eigen::VectorXd& mean, Eigen::VectorXd& var) {
  KT_CHECK(Xs.rows() == dim, InvalidArgument, what, ": points have ", Xs.rows(), " rows, expected ", dim);
  mean.resize(Xs.cols());
  var.resize(Xs.cols());
  if (n != 0) return false;
  mean.setConstant(prior_mean);
  var.setConstant(prior_var);
  return true;
}
}  // namespace

void GaussianProcess::predict(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var,
                              int threads) const {
  const double s2 = kernel_.signal_variance();
  if (start_posterior("GP predict", Xs, dim(), X_.cols(), mean_ * y_scale_ + y_shift_, s2 * y_scale_ * y_scale_,
                      mean, var))
    return;
  const Eigen::Index m = Xs.cols(), n = X_.cols();
  for_each_block(m, n, threads, [&](Eigen::Index c0, Eigen::Index nc) {
    Eigen::MatrixXd Ks = kernel_.cross(X_, Xs.middleCols(c0, nc));
    mean.segment(c0, nc) = (Ks.transpose() * alpha_).array() + mean_;
    if (simd::available()) {  // column by column: AVX2 substitutions beat Eigen's SSE2 blocked solve
      for (Eigen::Index j = 0; j < Ks.cols(); ++j) solve_lower(Ks.col(j).data(), n);
    } else {
      L().triangularView<Eigen::Lower>().solveInPlace(Ks);
    }
    var.segment(c0, nc) = (s2 - Ks.colwise().squaredNorm().array()).max(kMinVar * s2).matrix().transpose();
  });
  mean = (mean.array() * y_scale_ + y_shift_).matrix();
  var *= y_scale_ * y_scale_;
}

double GaussianProcess::solve_cross_prefix(double* k, Eigen::Index from, Eigen::Index to) const {
  const Eigen::Index n = X_.cols();
  KT_CHECK(from >= 0 && from <= to && to <= n, InvalidArgument, "GP solve_cross_prefix: steps [", from, ", ", to,
           ") must lie in [0, ", n, "]");
  Eigen::Map<Eigen::VectorXd> z(k, n);
  if (to > from) {  // rows [from, to): less the solved part's contribution, then the diagonal block's solve
    const std::size_t ld = static_cast<std::size_t>(L().outerStride()), rows = static_cast<std::size_t>(to - from);
    simd::gemv_sub(&Lbuf_(from, 0), ld, rows, static_cast<std::size_t>(from), k, k + from);
    simd::trsv_lower(&Lbuf_(from, from), ld, k + from, rows);
  }
  const double s2 = kernel_.signal_variance();
  return std::max(s2 - z.head(to).squaredNorm(), kMinVar * s2) * (y_scale_ * y_scale_);
}

void GaussianProcess::predict_screen(const Eigen::MatrixXd& Xs, Eigen::VectorXd& mean, Eigen::VectorXd& var_upper,
                                     int threads, double* cross) const {
  const double s2 = kernel_.signal_variance();
  if (start_posterior("GP predict_screen", Xs, dim(), X_.cols(), mean_ * y_scale_ + y_shift_,
                      s2 * y_scale_ * y_scale_, mean, var_upper))
    return;
  const Eigen::Index m = Xs.cols(), n = X_.cols();
  // Posterior variance given one training point i: s2 - k_i^2 / (K_ii + noise + jitter); conditioning on
  // more points never increases it (exact GP algebra), so the minimum over i bounds the full posterior.
  const double kii = s2 + noise_ + jitter_;
  for_each_block(m, n, threads, [&](Eigen::Index c0, Eigen::Index nc) {
    kernel_.cross_stats(X_, Xs.middleCols(c0, nc), alpha_, mean.data() + c0, var_upper.data() + c0,
                        cross ? cross + c0 * n : nullptr);
    mean.segment(c0, nc).array() += mean_;
    var_upper.segment(c0, nc) = (s2 - var_upper.segment(c0, nc).array() / kii).max(kMinVar * s2).matrix();
  });
  mean = (mean.array() * y_scale_ + y_shift_).matrix();
  var_upper *= y_scale_ * y_scale_;
}

void GaussianProcess::predict_one(const double* x, double& mean, double& var, double* dmean,
                                  double* dvar) const {
  const Eigen::Index n = X_.cols(), D = dim();
  const double s2 = kernel_.signal_variance();
  if (n == 0) {
    mean = mean_ * y_scale_ + y_shift_;
    var = s2 * y_scale_ * y_scale_;
    if (dmean) std::fill(dmean, dmean + D, 0.0);
    if (dvar) std::fill(dvar, dvar + D, 0.0);
    return;
  }
  Eigen::VectorXd k(n);
  Eigen::MatrixXd dK;  // column i: d k(x, X_i) / dx (only when a gradient is wanted)
  if (dmean || dvar) {
    dK.resize(D, n);
    kernel_.values_grads_x(x, X_, k.data(), dK.data());
  } else {
    for (Eigen::Index i = 0; i < n; ++i) k[i] = kernel_(X_.col(i).data(), x);
  }
  double mu = mean_ + k.dot(alpha_);
  Eigen::VectorXd v = k;
  solve_lower(v.data(), n);
  double vv = s2 - v.squaredNorm();
  const bool floored = vv < kMinVar * s2;
  vv = std::max(vv, kMinVar * s2);
  mean = mu * y_scale_ + y_shift_;
  var = vv * y_scale_ * y_scale_;
  if (dmean || dvar) {
    if (dmean) Eigen::Map<Eigen::VectorXd>(dmean, D) = (dK * alpha_) * y_scale_;
    if (dvar) {
      if (floored) {
        std::fill(dvar, dvar + D, 0.0);
      } else {
        solve_lower_t(v.data());  // v = K^-1 k
        Eigen::Map<Eigen::VectorXd>(dvar, D) = (-2.0 * y_scale_ * y_scale_) * (dK * v);
      }
    }
  }
}

double GaussianProcess::log_marginal_likelihood(Eigen::VectorXd* grad, HyperPrior prior) const {
  const Eigen::Index n = X_.cols(), nk = kernel_.n_params();
  double lml = 0.0;
  if (grad) grad->setZero(n_params());
  if (n > 0) {
    Eigen::VectorXd r = y_.array() - mean_;
    lml = -0.5 * r.dot(alpha_) - L().diagonal().array().log().sum() - 0.5 * static_cast<double>(n) * kLog2Pi;
    if (grad) {
      // d lml / d theta_j = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta_j)   (R&W eq. 5.9)
      // W = alpha alpha^T - K^-1 with K^-1 = L^-T L^-1 (lower triangle from a symmetric rank-k update).
      Eigen::MatrixXd Linv = L();
      invert_lower(Linv);
      Eigen::MatrixXd W(n, n);
      lower_gram(Linv, W);  // lower triangle of K^-1
      W.triangularView<Eigen::StrictlyUpper>() = W.transpose();
      W = alpha_ * alpha_.transpose() - W;
      grad->head(nk) = 0.5 * kernel_.contract_gradients(X_, W);
      (*grad)[nk] = 0.5 * noise_ * W.trace();
      (*grad)[nk + 1] = alpha_.sum();
    }
  }
  add_log_prior(prior, lml, grad);
  return lml;
}

void GaussianProcess::add_log_prior(HyperPrior prior, double& lml, Eigen::VectorXd* grad) const {
  const Eigen::Index D = dim(), nk = kernel_.n_params();
  if (prior == HyperPrior::Optuna) {
    // Optuna 4.x default prior (optuna/_gp/prior.py), written for theta in log space.
    const Eigen::VectorXd& ls = kernel_.lengthscales();
    for (Eigen::Index d = 0; d < D; ++d) {
      double l2 = ls[d] * ls[d];
      lml += -(0.1 * l2 + 0.1 / l2);  // lambda = 1 / l^2: -(0.1 / lambda + 0.1 lambda)
      if (grad) (*grad)[d] += -(0.2 * l2 - 0.2 / l2);
    }
    double s2 = kernel_.signal_variance();
    lml += std::log(s2) - s2;  // Gamma(2, 1) up to a constant
    lml += 0.1 * std::log(noise_) - 30.0 * noise_;  // Gamma(1.1, 30)
    if (grad) {
      (*grad)[D] += 1.0 - s2;
      (*grad)[nk] += 0.1 - 30.0 * noise_;
    }
  }
}

struct GaussianProcess::FitWorkspace {
  Eigen::MatrixXd R2, E, K, G, Linv, W;
};

double GaussianProcess::fit_objective(FitWorkspace& ws, Eigen::VectorXd& grad, HyperPrior prior) {
  const Eigen::Index n = X_.cols(), nk = kernel_.n_params();
  grad.setZero(n_params());
  double lml = 0.0;
  if (n > 0) {
    kernel_.gram_parts(X_, ws.R2, ws.E, ws.K, ws.G);
    factor_jittered(ws.K);  // reads the lower triangle, all that gram_parts writes
    update_alpha();
    const Eigen::VectorXd r = y_.array() - mean_;
    lml = -0.5 * r.dot(alpha_) - L().diagonal().array().log().sum() - 0.5 * static_cast<double>(n) * kLog2Pi;
    // Gradient as in log_marginal_likelihood(): W = alpha alpha^T - K^-1, contracted with dK/dtheta.
    ws.Linv = L();
    invert_lower(ws.Linv);
    ws.W.resize(n, n);
    lower_gram(ws.Linv, ws.W);
    for (Eigen::Index j = 0; j < n; ++j)  // lower triangle only: all that contract_gradients() reads
      for (Eigen::Index i = j; i < n; ++i) ws.W(i, j) = alpha_[i] * alpha_[j] - ws.W(i, j);
    grad.head(nk) = 0.5 * kernel_.contract_gradients(X_, ws.W, ws.K, ws.G, ws.E);
    grad[nk] = 0.5 * noise_ * ws.W.trace();
    grad[nk + 1] = alpha_.sum();
  }
  add_log_prior(prior, lml, &grad);
  return lml;
}

double GaussianProcess::fit_hyperparameters(const FitOptions& opt, Rng& rng) {
  KT_CHECK(opt.min_lengthscale > 0 && opt.min_lengthscale <= opt.max_lengthscale, InvalidArgument,
           "FitOptions lengthscale bounds [", opt.min_lengthscale, ", ", opt.max_lengthscale, "] invalid");
  KT_CHECK(opt.min_signal > 0 && opt.min_signal <= opt.max_signal, InvalidArgument,
           "FitOptions signal bounds [", opt.min_signal, ", ", opt.max_signal, "] invalid");
  KT_CHECK(opt.min_noise > 0 && opt.min_noise <= opt.max_noise, InvalidArgument, "FitOptions noise bounds [",
           opt.min_noise, ", ", opt.max_noise, "] invalid");
  const Eigen::Index D = dim(), np = n_params(), nk = kernel_.n_params();
  Eigen::VectorXd lb(np), ub(np);
  lb.head(D).setConstant(std::log(opt.min_lengthscale));
  ub.head(D).setConstant(std::log(opt.max_lengthscale));
  lb[D] = std::log(opt.min_signal);
  ub[D] = std::log(opt.max_signal);
  lb[nk] = std::log(opt.min_noise);
  ub[nk] = std::log(opt.max_noise);
  lb[nk + 1] = -opt.mean_bound;
  ub[nk + 1] = opt.mean_bound;

  std::vector<Eigen::VectorXd> starts;
  if (opt.use_warm_start) starts.push_back(params().cwiseMax(lb).cwiseMin(ub));
  if (opt.use_default_start || starts.empty()) {
    Eigen::VectorXd t(np);
    t.head(D).setZero();  // l = 1, where the Optuna prior on lengthscales peaks
    t[D] = 0.0;
    t[nk] = std::log(1e-2);
    t[nk + 1] = 0.0;
    starts.push_back(t.cwiseMax(lb).cwiseMin(ub));
  }
  for (int r = 0; r < opt.n_restarts; ++r) {
    Eigen::VectorXd t(np);
    for (Eigen::Index d = 0; d < D; ++d) t[d] = rng.uniform(std::log(0.05), std::log(5.0));
    t[D] = rng.uniform(std::log(0.2), std::log(5.0));
    t[nk] = rng.uniform(lb[nk], std::max(lb[nk], std::min(ub[nk], std::log(0.1))));
    t[nk + 1] = 0.0;
    starts.push_back(t.cwiseMax(lb).cwiseMin(ub));
  }

  double best_f = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_theta = starts.front();
  FitWorkspace ws;
  Eigen::VectorXd gl;
  auto objective = [&](const Eigen::VectorXd& theta, Eigen::VectorXd& g) -> double {
    set_params(theta);
    double f = 0.0;
    try {
      f = -fit_objective(ws, gl, opt.prior);
    } catch (const StateError&) {
      g.setZero(np);
      return 1e300;
    }
    if (!std::isfinite(f) || !gl.allFinite()) {
      g.setZero(np);
      return 1e300;
    }
    g = -gl;
    if (f < best_f) {
      best_f = f;
      best_theta = theta;
    }
    return f;
  };

  LBFGSpp::LBFGSBParam<double> param;
  param.m = 6;
  param.max_iterations = opt.max_iterations;
  param.epsilon = 1e-5;
  param.epsilon_rel = 1e-6;
  // Also stop when the objective improves by less than 1e-4 relative over one iteration: differences
  // that small in the log likelihood do not change the posterior in any way that matters for proposals.
  param.past = 1;
  param.delta = 1e-4;
  param.max_linesearch = 30;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    Eigen::VectorXd x = starts[s];
    param.max_iterations = s == 0 && opt.use_warm_start && opt.warm_max_iterations > 0 ? opt.warm_max_iterations
                                                                                        : opt.max_iterations;
    LBFGSpp::LBFGSBSolver<double> solver(param);
    double fx = 0.0;
    try {
      solver.minimize(objective, x, fx, lb, ub);
    } catch (const std::exception&) {
      // Line-search failures end this start; the best point seen so far is kept.
    }
  }
  set_params(best_theta);
  if (opt.factorize_result) factorize();
  return -best_f;
}

}  // namespace kubetune::search::gp
